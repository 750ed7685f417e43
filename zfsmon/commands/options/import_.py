"""Build a recording from text logs people already have: captured `zpool iostat -v INTERVAL` output (with or
without -T), arcstats dumps (Linux /proc/spl/kstat/zfs/arcstats, FreeBSD sysctl, illumos kstat -p; one or
many concatenated), arcstat/arc_summary output and pgbench logs. The format of each LOG is detected
(`zfsmon parse --list` shows the kinds) unless --kind names it.

A `zpool status` capture given among the LOGs (or with --topology) gives the roles and parents that
`zpool iostat -H` rows and -r/-w histograms do not print; without one they come from this host's pool of
that name, or are guessed from the text. --iostat-flags says what the capture's text cannot (`l`/`q`
columns of -H rows, `y`: the first report is an interval). Every guess is a `note:` line on standard error
and an info event in the recording (and in its `notes` metadata).

Logs that printed no times (no -T) are placed on the clock so that their last reading falls on the log
file's modification time, or from --start on. The recording then exports, replays and describes like one
made by `zfsmon record`.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import When
from zfsmon.commands.options.parse import add_options

NAME = "import"
HELP = "build a recording from captured text logs (zpool iostat, arcstats, arcstat, pgbench)"
EPILOG = """\
examples:
  zfsmon import iostat-v-5.log --into old.zfsmon
  zfsmon import iostat.log arcstats.log --into night.zfsmon --start 2024-05-01T22:00:00Z
  zfsmon import --kind zpool-iostat --interval 10 capture.txt --into c.zfsmon
  zfsmon import iostat-vHp.log zpool-status.txt --into c.zfsmon     roles of the -H rows from zpool status
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", metavar="LOG", help="captured text files")
    p.add_argument("--into", required=True, metavar="FILE", help="recording to create (or append to)")
    add_options(p)
    p.add_argument("--start", type=When, metavar="T", help="time of the first reading of logs without printed "
                   "times (default: so the last falls on the file's modification time)")
