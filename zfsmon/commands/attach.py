"""`zfsmon attach` at work; its manual and options are :mod:`zfsmon.commands.options.attach`."""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from typing import Optional

from zfsmon.engine import Session, check_output_path, tty_progress, zfs_collectors_or_warn
from zfsmon.errors import UserError
from zfsmon.outfile import os_message
from zfsmon.redact import command_line
from zfsmon.sources.fio.json_output import looks_like as looks_like_fio
from zfsmon.sources.pgbench.pgstat import PgStatCollector
from zfsmon.sources.pgbench.source import looks_like
from zfsmon.workload.attach import AttachCollector


def _check_log(path: str, fmt: Optional[str]) -> None:
    """A log to follow, before anything starts: a regular file that is readable text and, when it already holds
    something and --format does not say, pgbench's output or a --log file. One that does not exist yet is waited
    for. Raises UserError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot read")) from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path} is a directory; give the log file(s)")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: not a regular file (attach follows a log file as it grows; for a stream, "
                        "`zfsmon import` a capture of it)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot read")) from None
    if b"\x00" in head:
        raise UserError(f"{path}: a binary file, not pgbench's output or log")
    text = head.decode("utf-8", "replace")
    if text.strip() and fmt is None and not looks_like(text) and not looks_like_fio(text) and "pgbench" not in text:  # (-i's output names it)
        raise UserError(f"{path}: neither pgbench's printed output, a pgbench --log file nor fio's JSON (if it is, say which "
                        "with --format)")


def run(args: argparse.Namespace) -> int:
    out = args.out or f"attach-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.zfsmon"
    check_output_path(out)
    for path in args.logs:
        _check_log(path, None if args.format == "auto" else args.format)
    tx_extra = ("retries",) if args.retries_column else None
    follower = AttachCollector(args.logs, from_start=args.from_start,
                               fmt=None if args.format == "auto" else args.format, pause=args.pause,
                               aggregate_interval=args.aggregate_interval, tx_extra=tx_extra)
    with Session(args.interval, [follower], progress=tty_progress(out)) as session:
        if args.conn or args.pgstat:
            session.collectors.append(PgStatCollector(args.conn or ""))
        if not args.no_zfs:
            session.collectors += zfs_collectors_or_warn(args.interval)
        meta = {"argv": command_line(["zfsmon", *sys.argv[1:]]), "interval": f"{args.interval:g}", "kind": "attach",
                "pgbench_log": ", ".join(os.path.abspath(p) for p in args.logs)}
        print(f"zfsmon: following {', '.join(args.logs)}; recording into {out}", file=sys.stderr)
        session.record_into(out, meta)
        outcome = session.run(duration=args.duration)
    print(f"\nzfsmon: {out}: {outcome.intervals} intervals, {outcome.samples} samples, {outcome.events} events, "
          f"{follower.lines} log lines", file=sys.stderr)
    if outcome.failure:
        raise UserError(outcome.failure, exit_code=1)
    if not follower.lines:
        raise UserError(f"{', '.join(args.logs)}: no pgbench or fio output appeared while following (the recording has "
                        f"{'the ZFS sources only' if not args.no_zfs else 'nothing of the workload'})", exit_code=1)
    return 0
