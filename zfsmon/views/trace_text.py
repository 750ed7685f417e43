"""Text and CSV for ``zfsmon trace``: latency tables per vdev with roles, and histograms.

Pure formatting of samples the collector produced; nothing here runs a tracer.
Histograms are drawn with power-of-two rows (the scripts' quarter buckets
folded together) so a terminal line per row stays readable. Names come from
the trace's output (``--from`` reads a file someone handed over): on the
terminal they are :func:`~zfsmon.errors.printable`, in CSV cells
:func:`~zfsmon.errors.neutralise`.
"""

from __future__ import annotations

import csv
import io
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

from zfsmon.errors import neutralise, printable
from zfsmon.model import Entity, Sample
from zfsmon.trace.histogram import Histogram
from zfsmon.trace.protocol import hist_from_metrics
from zfsmon.units import human_ns, human_size

CSV_FIELDS = ("ts", "script", "entity", "pool", "role", "parent", "op", "ops", "ops_s", "bytes",
              "p50_ns", "p95_ns", "p99_ns", "max_ns", "mean_ns")
_LAT_SUFFIX = "_ops"


def ops_of(metrics: Mapping[str, float]) -> List[str]:
    """The latency ops a sample carries (``read``, ``write``, ``commit``, ...), in a stable order."""
    ops = [k[: -len(_LAT_SUFFIX)] for k in metrics if k.endswith(_LAT_SUFFIX) and f"{k[:-4]}_ops_s" in metrics]
    order = {"read": 0, "write": 1}
    return sorted(ops, key=lambda o: (order.get(o, 2), o))


_ROLE_ORDER = {"data": 0, "special": 1, "dedup": 2, "log": 3, "cache": 4, "spare": 5}


def _sort_key(e: Entity) -> Tuple[str, int, str, str]:
    """Pool; data vdevs, then log, cache...; each vdev followed by its leaves; devices ZFS does not know last."""
    group = e.parent if e.parent and e.parent != e.pool else e.name
    role = _ROLE_ORDER.get(e.role.value, 9) if e.role else 9
    return (e.pool or "~", role, group, "" if not e.parent or e.parent == e.pool else e.name)


def table(samples: Sequence[Sample]) -> List[str]:
    """One interval: a row per entity and op with rate, bandwidth and percentiles; counts below."""
    rows = [f"{'DEVICE':<22} {'ROLE':<6} {'OP':<10} {'OPS/s':>8} {'BW/s':>7} {'p50':>6} {'p95':>6} "
            f"{'p99':>6} {'max':>6}"]
    counts: List[str] = []
    for s in sorted(samples, key=lambda s: _sort_key(s.entity)):
        e, m = s.entity, s.metrics
        indent = "  " if e.parent and e.parent != e.pool else ""
        # a dataset's name already starts with its pool (zguest/db): prefix only names that do not
        prefix = e.pool and not indent and e.name != e.pool and not e.name.startswith(f"{e.pool}/")
        name = printable(indent + (f"{e.pool}/" if prefix else "") + e.name)[:22]
        role = e.role.value if e.role else "-"
        for op in ops_of(m):
            shown = printable(op)
            secs = s.interval or 1.0
            bw = m.get(f"{op}_bytes")
            rows.append(f"{name:<22} {role:<6} {shown:<10} {m[f'{op}_ops_s']:>8.1f} "
                        f"{human_size(bw / secs) if bw is not None else '-':>7} "
                        f"{human_ns(m.get(f'{op}_lat_p50_ns')):>6} {human_ns(m.get(f'{op}_lat_p95_ns')):>6} "
                        f"{human_ns(m.get(f'{op}_lat_p99_ns')):>6} {human_ns(m.get(f'{op}_lat_max_ns')):>6}")
        lat_ops = set(ops_of(m))
        other = {k: v for k, v in m.items() if not any(k.startswith(f"{op}_") for op in lat_ops)}
        if other:
            counts.append(printable(f"{e.label()}: " + "  ".join(f"{k}={v:g}" for k, v in sorted(other.items()))))
    return rows + counts


def csv_rows(samples: Iterable[Sample], header: bool = False) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    if header:
        w.writerow(CSV_FIELDS)
    for s in samples:
        e, m = s.entity, s.metrics
        for op in ops_of(m):
            w.writerow([f"{s.ts:.6f}", neutralise(s.source.split(":", 1)[-1]), neutralise(e.name), neutralise(e.pool),
                        e.role.value if e.role else "", neutralise(e.parent), neutralise(op), int(m[f"{op}_ops"]),
                        f"{m[f'{op}_ops_s']:.3f}",
                        int(m[f"{op}_bytes"]) if f"{op}_bytes" in m else ""]
                       + [f"{m[k]:.0f}" if k in m else "" for k in
                          (f"{op}_lat_p50_ns", f"{op}_lat_p95_ns", f"{op}_lat_p99_ns", f"{op}_lat_max_ns",
                           f"{op}_lat_mean_ns")])
    return out.getvalue()


class Totals:
    """Histograms accumulated over a whole run, for the closing summary."""

    def __init__(self) -> None:
        self.hists: Dict[Tuple[Entity, str], Histogram] = {}

    def add(self, sample: Sample) -> None:
        for op in ops_of(sample.metrics):
            self.hists.setdefault((sample.entity, op), Histogram()).merge(hist_from_metrics(dict(sample.metrics), op))

    def render(self, width: int = 40) -> List[str]:
        out: List[str] = []
        for (e, op), h in sorted(self.hists.items(), key=lambda kv: (_sort_key(kv[0][0]), kv[0][1])):
            if not h.count:
                continue
            out.append(printable(f"{e.pool + '/' if e.pool and e.pool != e.name else ''}{e.label()} {op}: ")
                       + f"{h.count} ops  "
                       f"p50 {human_ns(h.percentile(0.5))}  p95 {human_ns(h.percentile(0.95))}  "
                       f"p99 {human_ns(h.percentile(0.99))}  max {human_ns(h.top())}")
            out.extend(histogram_lines(h, width))
            out.append("")
        return out


def histogram_lines(h: Histogram, width: int = 40) -> List[str]:
    """Power-of-two rows ``[lo, 2lo)`` with a bar, like bpftrace's hist() but from explicit buckets."""
    rows: Dict[int, int] = {}
    for lo, n in h.sorted():
        p = 1 << (lo.bit_length() - 1) if lo > 0 else 0
        rows[p] = rows.get(p, 0) + n
    if not rows:
        return []
    top = max(rows.values())
    lines = []
    for p in sorted(rows):
        n = rows[p]
        bar = "@" * max(1, round(width * n / top)) if n else ""
        lo_text = human_ns(p) if p else "0"
        lines.append(f"  [{lo_text:>5}, {human_ns(max(2 * p, 1)):>5}) {n:>9} |{bar:<{width}}|")
    return lines
