"""List the metrics zfsmon collects: name, unit, kind (counter or gauge), meaning, and what provides it
on each platform. `--markdown` prints docs/metrics.md (which is generated from this table and from the
sources' records: which sources exist, which saved texts they read, which metric family they fill)."""

from __future__ import annotations

import argparse

from zfsmon.model import Kind

NAME = "metrics"
HELP = "the metrics table: names, units, kinds and their sources"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print docs/metrics.md")
    p.add_argument("--entity", choices=[k.value for k in Kind], help="only metrics of this entity kind")
