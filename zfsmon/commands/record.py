"""`zfsmon record` at work; its manual and options are :mod:`zfsmon.commands.options.record`."""

from __future__ import annotations

import argparse
import os
import platform
import re
import socket
import sys
import time
from typing import Mapping, Optional

from zfsmon import __version__, outfile
from zfsmon.engine import Session, check_output_path, pick_collectors, tty_progress
from zfsmon.errors import UserError
from zfsmon.host import detect_flavour, probe
from zfsmon.redact import command_line
from zfsmon.store.schema import SUFFIX

#: what of a host name may go into a file name (a name set with sethostname may hold "/" or escapes)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_out(now: float, environ: Optional[Mapping[str, str]] = None, root: Optional[bool] = None,
                kind: str = "zfsmon") -> str:
    """Where a recording goes when no file is named: ``KIND-HOST-TIME.zfsmon`` in the state directory
    (:func:`zfsmon.outfile.state_directory`), with a ``-N`` suffix if that name is taken (never appended to
    another run's recording)."""
    directory = outfile.state_directory(environ, root)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    stem = os.path.join(directory, f"{kind}-{_NAME_UNSAFE.sub('_', socket.gethostname())[:64]}-{stamp}")
    for n in range(100):
        path = f"{stem}{'-' + str(n) if n else ''}{SUFFIX}"
        if not os.path.lexists(path):
            return path
    raise UserError(f"{stem}{SUFFIX}: that name and 99 others are taken; name a file to record into")


def host_meta(interval: float) -> dict:
    system = platform.system()
    flavour, version, _why = detect_flavour(system)
    return {"host": socket.gethostname(), "platform": f"{system} {platform.release()} {platform.machine()}",
            "zfs_flavour": flavour, "zfs_version": version, "zfsmon_version": __version__,
            "argv": command_line(["zfsmon", *sys.argv[1:]]), "interval": f"{interval:g}"}


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
