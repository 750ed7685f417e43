"""Record every available source (or the SOURCES named) into one recording file, headless.

Each interval's readings are committed before the next is taken, so a crash, a SIGKILL or a power loss
loses at most the last interval, and the file opens without repair. SIGTERM and SIGINT (Ctrl-C) stop
cleanly (exit status 0), also while a source's read is stuck in the kernel (a wedged zfs-fuse): that
source is recorded as stale meanwhile, and a warning line names it at the end. Memory does not grow with
time. If the disk fills up, recording stops with a clear message and everything written before is kept. The file can be read (`zfsmon info`, `zfsmon export`, replay) while
it is being written.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import seconds
from zfsmon.defaults import LINUX_BACKENDS

NAME = "record"
HELP = "record all available sources into a recording file (SQLite)"
EPILOG = """\
examples:
  zfsmon record                                   every source, 1 s, until Ctrl-C, into ~/.local/state/zfsmon
  zfsmon record --interval 5 --duration 4h --out soak.zfsmon
  zfsmon record zpool arcstats                    only these sources (names as `zfsmon doctor` shows them)
  zfsmon record --trace zil --trace arc --backend bcc   both traces in one bcc program, beside every source
  zfsmon info soak.zfsmon; zfsmon export soak.zfsmon --csv out/ --every 1m
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="*", metavar="SOURCES", help="sources to record, named as `zfsmon doctor` shows them "
                   "(default: every one this host has)")
    p.add_argument("--pool", action="append", default=[], metavar="POOL", help="only this pool (repeatable)")
    p.add_argument("--trace", action="append", default=[], metavar="NAME",
                   help="also record a tracing script's distributions (repeatable), e.g. vdevlat")
    p.add_argument("--backend", choices=LINUX_BACKENDS, help="Linux tracing backend for --trace: bpftrace "
                   "(default: one script per trace), bcc (every --trace in ONE compiled program) or dtrace (the D "
                   "scripts, under a DTrace you have)")
    p.add_argument("--interval", "-i", type=seconds, default=1.0, metavar="S", help="seconds between readings "
                   "(default 1)")
    p.add_argument("--out", "-o", metavar="FILE", help="recording file (default zfsmon-HOST-TIME.zfsmon in "
                   "$XDG_STATE_HOME/zfsmon, ~/.local/state/zfsmon, or /var/lib/zfsmon as root); an existing "
                   "recording is appended to")
    p.add_argument("--duration", "-d", type=seconds, metavar="D", help="stop after D (10m, 4h, 2d); default: "
                   "until SIGINT/SIGTERM")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line on standard error")
