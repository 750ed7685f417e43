"""Describe a recording: where and how it was made, its time range and interval, pools with their vdev
roles, fio's results (its final reports), topology changes, events and size. Reads only (the file may still be
recording).
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import whole

NAME = "info"
HELP = "describe a recording: time range, interval, host, pools, fio's results, topology changes, events, size"
EPILOG = """\
examples:
  zfsmon info run.zfsmon
  zfsmon info run.zfsmon --json | jq .pools
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the recording")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--events", type=whole(0), default=10, metavar="N", help="show the last N marks/errors/topology "
                   "changes (default 10)")
