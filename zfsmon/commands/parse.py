"""Turn a captured text log into samples printed as CSV (one line per value; columns as `zfsmon export
--long`, see docs/export.md). KIND is detected from the text when not given; `--list` shows the kinds.
Parsing is exactly what `zfsmon import` and the live collectors do, so this is also how to check that
zfsmon reads a given capture.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Tuple

from zfsmon.commands._timearg import seconds
from zfsmon.errors import UserError
from zfsmon.model import Event, ParseError, Record, Sample
from zfsmon.sources import detect
from zfsmon.views import csv_export as view

NAME = "parse"
HELP = "parse a captured text log (zpool iostat, arcstats, arcstat, pgbench) and print its samples as CSV"
EPILOG = """\
examples:
  zfsmon parse iostat.log                       detect the format
  zfsmon parse zpool-iostat iostat.log --interval 5
  zpool iostat -v 1 3 | zfsmon parse -
  zfsmon parse --list
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("args", nargs="*", metavar="[KIND] FILE", help="optional format name, then the file (`-` = stdin)")
    p.add_argument("--interval", type=seconds, metavar="S", help="the capture's interval, when the text omits it")
    p.add_argument("--every", type=seconds, metavar="D", help="downsample (counters summed, gauges averaged)")
    p.add_argument("--events", action="store_true", help="also print events (errors, resets) to standard error")
    p.add_argument("--list", action="store_true", help="list the formats and exit")


def read_log(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror or exc}") from None


def parse_log_text(text: str, path: str, kind: Optional[str], interval: Optional[float]) -> Tuple[List[Record], str]:
    """(records, kind name) or a UserError naming the file and line."""
    tk = detect.get(kind) if kind else detect.detect(text)
    if tk is None:
        raise UserError(f"{path}: not a format zfsmon can import (kinds: {', '.join(detect.KINDS)}; "
                        "name one with --kind)")
    try:
        records = tk.parse(text, os.path.basename(path) if path != "-" else "stdin", interval)
    except ParseError as exc:
        raise UserError(f"cannot read {path} as {tk.name}: {exc}") from None
    if not any(isinstance(r, Sample) for r in records):
        raise UserError(f"{path}: no readings found in it as {tk.name}")
    return records, tk.name


def run(args: argparse.Namespace) -> int:
    if args.list:
        for k in detect.KINDS.values():
            print(f"{k.name:<14} {k.help}")
        return 0
    if len(args.args) == 1:
        kind, path = None, args.args[0]
    elif len(args.args) == 2:
        kind, path = args.args
        if kind.lower().replace("_", "-") not in detect.KINDS:
            raise UserError(f"unknown kind {kind!r} (kinds: {', '.join(detect.KINDS)})")
    else:
        raise UserError("usage: zfsmon parse [KIND] FILE (see `zfsmon parse --help`)")
    records, _name = parse_log_text(read_log(path), path, kind, args.interval)
    samples = [r for r in records if isinstance(r, Sample)]
    view.write_long(sys.stdout, view.rows(samples, args.every))
    if args.events:
        for ev in records:
            if isinstance(ev, Event):
                print(f"{view.iso(ev.ts)} {ev.kind.value}: {ev.text}", file=sys.stderr)
    return 0
