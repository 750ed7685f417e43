"""Follow a pgbench soak someone else started, and record its TPS and latency alongside the ZFS sources.

LOG is what the soak writes: its tee'd output (`pgbench ... | tee soak.log`,
progress lines and run summaries of any pgbench version) or pgbench's own
`--log` files (per-transaction or `--aggregate-interval`; give every thread's
file, they are merged). Files are followed like `tail -F`: a file that does not
exist yet is waited for, truncation and rotation are noticed and followed.
With --from-start, what a file already holds is imported too (printed output
without timestamps is laid out run after run, ending at the file's
modification time; an event in the recording says so).

With --conn (or --pgstat and libpq's environment), pg_stat_database is sampled
as well. Stops on Ctrl-C or after --duration.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from typing import Optional

from zfsmon.commands._timearg import MAX_SECONDS, number, seconds
from zfsmon.engine import Session, check_output_path, tty_progress, zfs_collectors_or_warn
from zfsmon.errors import UserError
from zfsmon.outfile import os_message
from zfsmon.redact import command_line
from zfsmon.sources.fio_json import looks_like as looks_like_fio
from zfsmon.sources.pgbench import looks_like
from zfsmon.sources.pgstat import PgStatCollector
from zfsmon.workload.attach import FIO_JSON, LOG, TEXT, AttachCollector

NAME = "attach"
HELP = "follow a running pgbench soak's log or fio's JSON output (tail -F) and record it with the ZFS sources"
EPILOG = """\
examples:
  zfsmon attach soak.log                         follow the tee'd output of a running soak
  zfsmon attach --from-start soak.log --conn postgresql://bench@localhost/bench
  zfsmon attach pgbench_log.4711 pgbench_log.4711.1 --aggregate-interval 10
  fio job.fio --output-format=json+ --status-interval=5 --output=fio.json &  zfsmon attach fio.json
                                                 follow a running fio's status documents
  zfsmon analyze attach-*.zfsmon
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", metavar="LOG", help="tee'd pgbench output, pgbench --log file(s), or fio's "
                   "--output of --output-format=json[+] --status-interval=N")
    p.add_argument("--from-start", action="store_true", help="also import what the file(s) already hold")
    p.add_argument("--format", choices=("auto", TEXT, LOG, FIO_JSON), default="auto",
                   help="text: pgbench's printed output; log: --log files; fio: fio's JSON output (default: "
                   "recognised from the first line)")
    p.add_argument("--aggregate-interval", type=number(), metavar="S",
                   help="the soak's --aggregate-interval (default: taken from the log; per-transaction logs: 1 s)")
    p.add_argument("--retries-column", action="store_true",
                   help="per-transaction logs: the 7th column is retries (--max-tries without --rate), not lag")
    p.add_argument("--pause", type=number(0.0, MAX_SECONDS, lo_open=False), default=2.0, metavar="S",
                   help="--from-start: the pause between runs of the soak, for estimating times (default 2)")
    p.add_argument("--conn", metavar="CONNINFO", help="sample pg_stat_database of this database too")
    p.add_argument("--pgstat", action="store_true", help="sample pg_stat_database using libpq's environment")
    p.add_argument("--no-zfs", action="store_true", help="record only the workload")
    p.add_argument("--interval", "-i", type=seconds, default=5.0, metavar="S",
                   help="seconds between readings (default 5)")
    p.add_argument("--duration", "-d", type=seconds, metavar="D", help="stop after D; default: until Ctrl-C")
    p.add_argument("--out", "-o", metavar="FILE", help="recording file (default attach-TIME.zfsmon)")


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
