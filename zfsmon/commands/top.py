"""`zfsmon top` at work; its manual and options are :mod:`zfsmon.commands.options.top`."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from zfsmon import outfile
from zfsmon.analysis.restart import is_resumed
from zfsmon.commands import _serve
from zfsmon.commands.record import default_out, host_meta
from zfsmon.engine import Session, check_output_path, pick_collectors
from zfsmon.errors import UserError
from zfsmon.host import probe
from zfsmon.model import Event, EventKind
from zfsmon.sources.base import Collector
from zfsmon.sources.pgbench.pgstat import PgStatCollector
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.state import TopState
from zfsmon.workload import target
from zfsmon.workload.attach import AttachCollector
from zfsmon.workload.soak import LOOP, SoakCollector, SoakPlan, tee_log_for


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
    collectors, skipped = pick_collectors(host, args.interval, args.pool, names, args.trace, args.backend)
    if args.attach:
        collectors += _attach(args)
    feed = LiveFeed()
    with Session(args.interval, collectors, sinks=[feed.sink]) as session:
        if not (session.collectors or args.soak):
            raise UserError("no source is available on this host: " + "; ".join(skipped) +
                            " (see `zfsmon doctor`)")
        served = _listen(args.listen, session, feed, args.interval) if args.listen else None  # before a soak starts
        extra_meta = _soak(args, path, session) if args.soak else {}
        earlier = None
        if path is not None:
            opened = session.record_into(path, {**host_meta(args.interval), **extra_meta}).opened
            if is_resumed(opened):  # writing on into a recording (after a reboot): the timeline shows it all
                feed.sink([opened])  # its R on the timeline's axis, its line among the events
                earlier = (path, opened.ts)
        info = panels.HeaderInfo(host=host.hostname, platform=f"{host.system} {host.release}",
                                 zfs=f"{host.flavour} {host.zfs_version}".strip(),
                                 recording=os.path.abspath(path) if path else "", mode="live", started=time.time(),
                                 serving=_serve.address(*served) if served else "")
        state = TopState(args.window, interval=args.interval)
        if skipped:
            state.feed([Event(time.time(), EventKind.INFO, f"skipped {s}", source="top") for s in skipped])
        app = TopApp(state, info, args.interval, feed=feed, on_mark=session.mark if path is not None else None,
                     export_dir=os.path.dirname(os.path.abspath(path)) if path else os.getcwd(), theme=args.theme,
                     earlier=earlier)
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
