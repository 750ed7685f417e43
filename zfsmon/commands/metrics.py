"""List the metrics zfsmon collects: name, unit, kind (counter or gauge), meaning, and what provides it
on each platform. `--markdown` prints docs/metrics.md (which is generated from this table)."""

from __future__ import annotations

import argparse

from zfsmon import metrics
from zfsmon.errors import UserError
from zfsmon.model import Kind

NAME = "metrics"
HELP = "the metrics table: names, units, kinds and their sources"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print docs/metrics.md")
    p.add_argument("--entity", choices=[k.value for k in Kind], help="only metrics of this entity kind")


def run(args: argparse.Namespace) -> int:
    specs = metrics.specs_for(Kind(args.entity)) if args.entity else list(metrics.TABLE.values())
    if args.entity and not specs:
        raise UserError(f"no metrics are defined for {args.entity} yet")
    if args.markdown:
        print(metrics.render_markdown(specs), end="")
        return 0
    for s in sorted(set(specs), key=lambda s: (s.kinds[0].value, s.name)):
        kinds = ",".join(k.value for k in s.kinds)
        print(f"{kinds:14s} {s.name:28s} {s.unit:8s} {s.kind:8s} {s.help}")
    return 0
