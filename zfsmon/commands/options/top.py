"""The live dashboard: everything the sources (and a workload) collect, on one screen, recorded as it runs.

Panels: a header (host, platform, ZFS version, pools, elapsed time, interval,
recording, live/paused), the vdev tree of the selected pool grouped by role
(data, special, dedup, logs, cache, spares) with ops, bandwidth, latency and
queues next to the block-device view (GOOSE marks a device that says ~0 while
ZFS moves data), ARC/L2ARC hit ratios and sizes, ZIL/SLOG activity, the
workload's TPS and latency, where reads are answered (PostgreSQL buffers, ARC,
L2ARC, disks), and the findings (warming up / warm / decaying, correlations).

Everything shown is also written to a recording (default
zfsmon-HOST-TIME.zfsmon in $XDG_STATE_HOME/zfsmon, ~/.local/state/zfsmon, or
/var/lib/zfsmon as root, shown in the header and on exit; --record FILE, or
--no-record); `zfsmon replay FILE` shows it again. With --listen ADDR:PORT the
same readings are served to Prometheus on /metrics, as `zfsmon exporter` serves
them: one set of sources, read once, for the screen and the scrapes. A source
that hangs shows as stale with its age; a source that fails shows its error in
its panel.
Press ? for the keys. This is also what `zfsmon` runs with no subcommand on a
terminal.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import MAX_SECONDS, number, seconds, whole
from zfsmon.commands.options._screen import add_theme
from zfsmon.defaults import LINUX_BACKENDS

NAME = "top"
HELP = "live dashboard of all sources (vdevs by role, ARC/L2ARC, ZIL, workload), recorded as it runs"
EPILOG = """\
examples:
  zfsmon top                                  every source, 1 s, recording into ~/.local/state/zfsmon/
  zfsmon top --listen 127.0.0.1:9134          and serve the same readings to Prometheus on /metrics
  zfsmon top --pool tank -i 5 --no-record     one pool, every 5 s, nothing written
  zfsmon top --soak --lab -- -c 4 -j 2 -N     run a pgbench soak on the lab and watch the caches warm up
  zfsmon top --attach soak.log                follow a soak someone else runs (its tee'd pgbench output)
  zfsmon replay zfsmon-db1-20260101T000000Z.zfsmon
keys: q quit, p pause, space/m mark, tab next pool, +/- window, r rates/totals, x raw values,
      s sort, c collapse, f findings whole (n/N their moments), e export CSV, / filter, t theme, ? help,
      ctrl+p command palette
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interval", "-i", type=seconds, default=1.0, metavar="S", help="seconds between readings "
                   "(default 1)")
    p.add_argument("--pool", action="append", default=[], metavar="POOL", help="only this pool (repeatable)")
    p.add_argument("--sources", metavar="A,B", help="only these sources (names as `zfsmon doctor` shows them)")
    rec = p.add_mutually_exclusive_group()
    rec.add_argument("--record", metavar="FILE", help="recording file (default zfsmon-HOST-TIME.zfsmon in "
                     "$XDG_STATE_HOME/zfsmon, ~/.local/state/zfsmon, or /var/lib/zfsmon as root)")
    rec.add_argument("--no-record", action="store_true", help="do not record")
    p.add_argument("--window", "-w", type=seconds, default=300.0, metavar="D",
                   help="time window of sparklines, totals and findings (default 5m; +/- change it)")
    add_theme(p)
    p.add_argument("--listen", "-l", metavar="ADDR:PORT",
                   help="also serve the readings to Prometheus on http://ADDR:PORT/metrics, with the names and labels "
                        "of `zfsmon exporter` (which see; 127.0.0.1:9134 is its default, port 0 a free one)")
    p.add_argument("--attach", action="append", default=[], metavar="LOG",
                   help="follow a running soak's pgbench output or --log files (repeatable)")
    p.add_argument("--soak", action="store_true", help="run a pgbench soak (loop mode) in this process")
    p.add_argument("--lab", nargs="?", const="zlab", metavar="POOL",
                   help="--soak: on a PostgreSQL cluster of zfsmon's own on the lab pool (default zlab)")
    p.add_argument("--trace", action="append", default=[], metavar="NAME",
                   help="also run a tracing script as a source (repeatable), e.g. vdevlat: latency distributions "
                        "per vdev (see `zfsmon trace --help`)")
    p.add_argument("--backend", choices=LINUX_BACKENDS, help="Linux tracing backend for --trace: bpftrace (default), "
                   "bcc (every --trace in one program) or dtrace (the D scripts, under a DTrace you have)")
    p.add_argument("--cold", action="store_true", help="--soak --lab: empty the ARC and L2ARC after loading the "
                   "database, so the warm-up is seen from cold")
    p.add_argument("--conn", metavar="CONNINFO", help="--soak/--attach: PostgreSQL conninfo (also for "
                   "pg_stat_database); default: libpq environment")
    p.add_argument("--dbname", metavar="DB", help="--soak: database name")
    p.add_argument("--run-seconds", "-T", type=whole(1, int(MAX_SECONDS)), default=58, metavar="N", help="--soak: -T of each run "
                   "(default 58)")
    p.add_argument("--pause", type=number(0.0, MAX_SECONDS, lo_open=False), default=2.0, metavar="S", help="--soak: seconds between runs (default 2)")
    p.add_argument("--progress", "-P", type=whole(1, int(MAX_SECONDS)), metavar="N", help="--soak: pgbench -P N (TPS every N s; default 1)")
    p.add_argument("--init-scale", type=whole(1, 1_000_000), metavar="S", help="--soak: first run pgbench -i -s S")
    p.add_argument("pgbench_args", nargs=argparse.REMAINDER, metavar="-- PGBENCH_OPTIONS",
                   help="--soak: options passed to pgbench (after --)")
