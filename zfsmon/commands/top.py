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
import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from zfsmon import outfile
from zfsmon.commands import _serve
from zfsmon.commands._timearg import MAX_SECONDS, number, seconds, whole
from zfsmon.commands.record import default_out, host_meta
from zfsmon.engine import Session, check_output_path, pick_collectors
from zfsmon.errors import UserError
from zfsmon.host import probe
from zfsmon.model import Event, EventKind
from zfsmon.sources.base import Collector
from zfsmon.sources.pgstat import PgStatCollector
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.state import TopState
from zfsmon.workload import target
from zfsmon.workload.attach import AttachCollector
from zfsmon.workload.soak import LOOP, SoakCollector, SoakPlan, tee_log_for

NAME = "top"
HELP = "live dashboard of all sources (vdevs by role, ARC/L2ARC, ZIL, workload), recorded as it runs"
EPILOG = """\
examples:
  zfsmon top                                  every source, 1 s, recording into ~/.local/state/zfsmon/
  zfsmon top --pool tank -i 5 --no-record     one pool, every 5 s, nothing written
  zfsmon top --listen 127.0.0.1:9134          and serve the same readings to Prometheus on /metrics
  zfsmon top --soak --lab -- -c 4 -j 2 -N     run a pgbench soak on the lab and watch the caches warm up
  zfsmon top --attach soak.log                follow a soak someone else runs (its tee'd pgbench output)
  zfsmon replay zfsmon-db1-20260101T000000Z.zfsmon
keys: q quit, p pause, space/m mark, tab next pool, +/- window, r rates/totals, x raw values,
      s sort, c collapse, e export CSV, / filter, ? help
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


def need_terminal(what: str) -> None:
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise UserError(f"{what} needs a terminal (for a headless recording use `zfsmon record`; "
                        "`zfsmon export`/`zfsmon info` read recordings without one)")


def _soak(args: argparse.Namespace, record: Optional[str], session: Session) -> dict:
    """Add the soak runner and pg_stat_database to ``session`` (and the lab cluster's stop to its cleanups);
    the recording's extra meta.

    pgbench's output is tee'd beside the recording (as `zfsmon soak` does), else into the state directory.
    """
    pgb_args = target.check_pgbench_args(args.pgbench_args or [])
    tgt = target.prepare(args.lab, dbname=args.dbname, conn=args.conn)
    session.add_cleanup(tgt.stop)
    log = os.path.abspath(tee_log_for(record) if record else os.path.join(
        outfile.state_directory(), f"top-soak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.pgbench.log"))
    target.ready(tgt, args.init_scale, log, False, args.cold)
    plan = SoakPlan(mode=LOOP, run_seconds=args.run_seconds, pause=args.pause, progress=args.progress,
                    pgbench_args=pgb_args, dbname=tgt.dbarg, tee=log, pgbench=tgt.pgbench, env=tgt.env)
    session.collectors += [SoakCollector(plan), PgStatCollector(tgt.conninfo)]
    return {"kind": "soak", "pgbench_log": log, **tgt.meta}


def _attach(args: argparse.Namespace) -> List[Collector]:
    for path in args.attach:
        if not os.path.exists(path):
            raise UserError(f"{path}: no such file to attach to")
    out: List[Collector] = [AttachCollector(args.attach)]
    if args.conn:
        out.append(PgStatCollector(args.conn))
    return out


@dataclass
class Dashboard:
    """A dashboard ready to run: the session (its collectors, recording, sinks), the screen, where it records
    (None: --no-record) and the /metrics address it serves (None: no --listen)."""

    session: Session
    app: TopApp
    path: Optional[str]
    metrics_url: Optional[str] = None


def _listen(text: str, session: Session, feed: LiveFeed, interval: float) -> Tuple[str, int]:
    """--listen: the exporter's server on ADDR:PORT, fed by the session's sampler beside the screen (one set of
    collectors, read once per interval for both); the address and port it is bound to."""
    if not _serve.HAVE_PROMETHEUS:
        raise UserError(_serve.INSTALL_HINT)
    host, port = _serve.parse_listen(text)
    latest = _serve.live_values(interval)
    session.sinks.append(latest.add)

    def note(line: str) -> None:  # the screen owns the terminal: what the exporter would print is an event
        feed.sink([Event(time.time(), EventKind.INFO, line, source="exporter")])

    server, bound = _serve.serve(latest, host, port, note=note)
    session.add_cleanup(server.server_close)
    session.add_cleanup(server.shutdown)
    exposed = _serve.exposure_note(host)
    if exposed is not None:
        note(exposed)
    return host, bound


@contextlib.contextmanager
def dashboard(args: argparse.Namespace) -> Iterator[Dashboard]:
    """Everything `top` runs, set up (the soak's database, the recording, the --listen server) and torn down
    after (the session closed, its cleanups run), whichever way the block ends."""
    if args.soak and args.attach:
        raise UserError("--soak and --attach are two ways to get a workload: choose one")
    path = None if args.no_record else (args.record or default_out(time.time()))
    if path is not None:
        check_output_path(path)  # before a soak starts a database
    host = probe()
    names = [n.strip() for n in args.sources.split(",") if n.strip()] if args.sources else None
    collectors, skipped = pick_collectors(host, args.interval, args.pool, names, args.trace)
    if args.attach:
        collectors += _attach(args)
    feed = LiveFeed()
    with Session(args.interval, collectors, sinks=[feed.sink]) as session:
        if not (session.collectors or args.soak):
            raise UserError("no source is available on this host: " + "; ".join(skipped) +
                            " (see `zfsmon doctor`)")
        served = _listen(args.listen, session, feed, args.interval) if args.listen else None  # before a soak starts
        extra_meta = _soak(args, path, session) if args.soak else {}
        if path is not None:
            session.record_into(path, {**host_meta(args.interval), **extra_meta})
        info = panels.HeaderInfo(host=host.hostname, platform=f"{host.system} {host.release}",
                                 zfs=f"{host.flavour} {host.zfs_version}".strip(),
                                 recording=os.path.abspath(path) if path else "", mode="live", started=time.time(),
                                 serving=_serve.address(*served) if served else "")
        state = TopState(args.window, interval=args.interval)
        if skipped:
            state.feed([Event(time.time(), EventKind.INFO, f"skipped {s}", source="top") for s in skipped])
        app = TopApp(state, info, args.interval, feed=feed, on_mark=session.mark if path is not None else None,
                     export_dir=os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
        yield Dashboard(session, app, path, _serve.url(*served) if served else None)


def run(args: argparse.Namespace) -> int:
    need_terminal("zfsmon top")
    with dashboard(args) as live:
        live.session.start(on_end=live.app.exit)  # the sampler in a thread: the screen keeps the main thread
        live.app.run()
    outcome = live.session.close()
    if live.path is not None:
        print(f"zfsmon: {live.path}: {outcome.samples} samples, {outcome.events} events "
              f"(replay: zfsmon replay {live.path})", file=sys.stderr)
    if outcome.failure:
        raise UserError(outcome.failure, exit_code=1)
    return 0
