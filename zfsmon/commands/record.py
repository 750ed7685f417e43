"""Record every available source (or the SOURCES named) into one recording file, headless.

Each interval's readings are committed before the next is taken, so a crash, a SIGKILL or a power loss
loses at most the last interval, and the file opens without repair. SIGTERM and SIGINT (Ctrl-C) stop
cleanly (exit status 0), also while a source's read is stuck in the kernel (a wedged zfs-fuse): that
source is recorded as stale meanwhile, and a warning line names it at the end. Memory does not grow with time. If the disk fills up, recording stops with a clear message and
everything written before is kept. The file can be read (`zfsmon info`, `zfsmon export`, replay) while
it is being written.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import socket
import sys
import time

from zfsmon import __version__
from zfsmon.commands._timearg import seconds
from zfsmon.engine import Session, check_output_path, pick_collectors, tty_progress
from zfsmon.errors import UserError
from zfsmon.host import detect_flavour, probe
from zfsmon.sources.registry import NAMES
from zfsmon.store.schema import SUFFIX

NAME = "record"
HELP = "record all available sources into a recording file (SQLite)"
EPILOG = """\
examples:
  zfsmon record                                   every source, 1 s, until Ctrl-C
  zfsmon record --interval 5 --duration 4h --out soak.zfsmon
  zfsmon record zpool arcstats                    only these sources (names as `zfsmon doctor` shows them)
  zfsmon record --trace zil --trace arc --backend bcc   both traces in one bcc program, beside every source
  zfsmon info soak.zfsmon; zfsmon export soak.zfsmon --csv out/ --every 1m
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="*", metavar="SOURCES", help="sources to record, of: " + ", ".join(NAMES) +
                   " (default: every one this host has; see `zfsmon doctor`)")
    p.add_argument("--pool", action="append", default=[], metavar="POOL", help="only this pool (repeatable)")
    p.add_argument("--trace", action="append", default=[], metavar="NAME",
                   help="also record a tracing script's distributions (repeatable), e.g. vdevlat")
    p.add_argument("--backend", choices=("bpftrace", "bcc"), help="Linux tracing backend for --trace: bpftrace "
                   "(default: one script per trace) or bcc (every --trace in ONE compiled program)")
    p.add_argument("--interval", "-i", type=seconds, default=1.0, metavar="S", help="seconds between readings "
                   "(default 1)")
    p.add_argument("--out", "-o", metavar="FILE", help="recording file (default zfsmon-HOST-TIME.zfsmon); an "
                   "existing recording is appended to")
    p.add_argument("--duration", "-d", type=seconds, metavar="D", help="stop after D (10m, 4h, 2d); default: "
                   "until SIGINT/SIGTERM")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line on standard error")


def default_out(now: float) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"zfsmon-{socket.gethostname()}-{stamp}{SUFFIX}"


def host_meta(interval: float) -> dict:
    system = platform.system()
    flavour, version, _why = detect_flavour(system)
    return {"host": socket.gethostname(), "platform": f"{system} {platform.release()} {platform.machine()}",
            "zfs_flavour": flavour, "zfs_version": version, "zfsmon_version": __version__,
            "argv": shlex.join(["zfsmon"] + sys.argv[1:]), "interval": f"{interval:g}"}


def run(args: argparse.Namespace) -> int:
    out = args.out or default_out(time.time())
    check_output_path(out)
    if args.backend and not args.trace:
        raise UserError("--backend goes with --trace")
    collectors, skipped = pick_collectors(probe(), args.interval, args.pool, args.sources, args.trace, args.backend)
    if not collectors:
        raise UserError("no source is available on this host: " + "; ".join(skipped))
    if not args.quiet:
        print(f"zfsmon: recording {', '.join(c.name for c in collectors)} every {args.interval:g} s into {out}",
              file=sys.stderr)
    with Session(args.interval, collectors, progress=None if args.quiet else tty_progress(out)) as session:
        session.record_into(out, host_meta(args.interval))
        outcome = session.run(duration=args.duration)
    if not args.quiet:
        print(f"\nzfsmon: {out}: {outcome.intervals} intervals, {outcome.samples} samples, "
              f"{outcome.events} events", file=sys.stderr)
    for line in outcome.stuck:  # the recording is whole; that source's figures stop where its read stuck
        print(f"zfsmon: warning: {line}; the recording is closed without it", file=sys.stderr)
    if outcome.failure:
        raise UserError(outcome.failure, exit_code=1)
    return 0
