"""The metrics table: every metric's name, unit, kind and provenance, as data.

One table, assembled from one module per entity family (``vdev``, ``arc``, ...)
so the rows sit beside the reader that fills them. ``docs/metrics.md`` is
rendered from it (``zfsmon metrics --markdown``); a test keeps the two equal.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

__all__ = ["COUNTER", "GAUGE", "MetricSpec", "TABLE", "lookup", "is_counter", "specs_for", "render_markdown"]


def _load() -> Dict[Tuple[Kind, str], MetricSpec]:
    from zfsmon.metrics import families

    table: Dict[Tuple[Kind, str], MetricSpec] = {}
    for spec in families.all_specs():
        for kind in spec.kinds:
            k = (kind, spec.name)
            if k in table:
                raise RuntimeError(f"metric {kind.value}.{spec.name} is defined twice")
            table[k] = spec
    return table


TABLE: Dict[Tuple[Kind, str], MetricSpec] = _load()


def lookup(kind: Kind, name: str) -> Optional[MetricSpec]:
    return TABLE.get((kind, name))


def is_counter(kind: Kind, name: str) -> bool:
    """Unknown metrics (a kstat field we have no row for) count as gauges: never differentiated."""
    spec = TABLE.get((kind, name))
    return spec is not None and spec.kind == COUNTER


def specs_for(kind: Kind) -> List[MetricSpec]:
    return [s for (k, _), s in TABLE.items() if k == kind]


def render_markdown(specs: Optional[Iterable[MetricSpec]] = None) -> str:
    """docs/metrics.md, generated: edit the table, not the document."""
    rows = sorted(set(specs if specs is not None else TABLE.values()), key=lambda s: (s.kinds[0].value, s.name))
    out = [
        "# Metrics",
        "",
        "Generated from `zfsmon/metrics/` by `zfsmon metrics --markdown > docs/metrics.md`; do not edit by hand.",
        "",
        "Kind: `counter` values only grow (rates are derived from their deltas over the real elapsed time; a",
        "counter that goes backwards starts a new baseline and is reported as a reset event), `gauge` values are",
        "read as they are (levels, or per-interval averages that the platform already computed).",
        "",
        "| entity | metric | unit | kind | meaning | provided by |",
        "|---|---|---|---|---|---|",
    ]
    for s in rows:
        prov = "; ".join(f"{p}: {src}" for p, src in s.sources.items()) or "derived"
        kinds = ", ".join(k.value for k in s.kinds)
        out.append(f"| {kinds} | `{s.name}` | {s.unit} | {s.kind} | {s.help} | {prov} |")
    return "\n".join(out) + "\n"
