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

from zfsmon.commands._timearg import MAX_SECONDS, number, seconds
from zfsmon.defaults import ATTACH_FIO_JSON, ATTACH_LOG, ATTACH_TEXT

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
    p.add_argument("--format", choices=("auto", ATTACH_TEXT, ATTACH_LOG, ATTACH_FIO_JSON), default="auto",
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
