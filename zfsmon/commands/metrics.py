"""`zfsmon metrics` at work; its manual and options are :mod:`zfsmon.commands.options.metrics`."""

from __future__ import annotations

import argparse
from typing import Sequence

from zfsmon import metrics
from zfsmon.errors import UserError
from zfsmon.model import Kind
from zfsmon.sources import registry
from zfsmon.sources.spec import Source


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def sources_markdown(sources: Sequence[Source]) -> str:
    """The sources table of docs/metrics.md, one row per source record."""
    out = [
        "## Sources",
        "",
        "Sources with a host collector are what `zfsmon record SOURCES`, `top` and `exporter` run where",
        "`zfsmon doctor` finds them; the text kinds are what `zfsmon parse KIND` and `zfsmon import --kind` read",
        "(tried in this order when the kind is not named); the metric family is the module",
        "`zfsmon/metrics/FAMILY.py` whose rows below describe the source's values. How to add a source:",
        "[contributing.md](contributing.md).",
        "",
        "| source | what | host collector | parse / import kinds | metric family |",
        "|---|---|---|---|---|",
    ]
    for s in sources:
        kinds = "<br>".join(f"`{k.name}`: {k.help}" + (f" (e.g. `{k.example}`)" if k.example else "")
                            for k in s.kinds) or "-"
        family = f"`{s.family}`" if s.family else "-"
        collector = "yes" if s.collector is not None else "no"
        out.append(f"| `{s.name}` | {_cell(s.help)} | {collector} | {_cell(kinds)} | {family} |")
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    specs = metrics.specs_for(Kind(args.entity)) if args.entity else list(metrics.TABLE.values())
    if args.entity and not specs:
        raise UserError(f"no metrics are defined for {args.entity} yet")
    if args.markdown:
        print(metrics.render_markdown(specs, [sources_markdown(registry.SOURCES)]), end="")
        return 0
    for s in sorted(set(specs), key=lambda s: (s.kinds[0].value, s.name)):
        kinds = ",".join(k.value for k in s.kinds)
        print(f"{kinds:14s} {s.name:28s} {s.unit:8s} {s.kind:8s} {s.help}")
    return 0
