"""`zfsmon exporter` at work; its manual and options are :mod:`zfsmon.commands.options.exporter`."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import List, Optional, Tuple

from zfsmon.engine import Session, pick_collectors
from zfsmon.errors import UserError
from zfsmon.host import probe, recording_meta
from zfsmon.sources.base import Collector
from zfsmon.store import Recording
from zfsmon.workload.attach import AttachCollector

try:  # the `exporter` extra; without it the other commands work and this one says what to install
    from prometheus_client import CollectorRegistry

    from zfsmon.views.prometheus import DEFAULT_QUEUES, LatestValues, ZfsmonCollector, latest_from_recording
    from zfsmon.views.prometheus_http import start_server
except ImportError as _missing:
    if not (_missing.name or "").startswith("prometheus_client"):
        raise
    HAVE_PROMETHEUS = False
else:
    HAVE_PROMETHEUS = True

#: what `zfsmon exporter` says when prometheus_client is not installed
INSTALL_HINT = "the exporter needs prometheus_client (pip install 'zfsmon[exporter]')"


def parse_listen(text: str) -> Tuple[str, int]:
    """``127.0.0.1:9134``, ``[::1]:9134``, ``:9134`` (loopback), ``localhost:0``."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UserError(f"--listen {text!r}: expected ADDRESS:PORT (like 127.0.0.1:9134)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _note(text: str) -> None:
    print(f"zfsmon: note: {text}", file=sys.stderr, flush=True)


def serve(latest: LatestValues, host: str, port: int):
    """Start the HTTP server (bounded threads, timeouts: views/prometheus_http.py); returns (server, bound port)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ZfsmonCollector(latest, note=_note))
    try:
        # a rendering is reused until the sampler adds values (or 5 s pass: stale entities still go)
        server = start_server(host, port, registry, version=latest.version)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return server, server.server_port


def _skipped_text(skipped: object) -> str:
    """The registry's skipped sources (a mapping name -> why, or a list) as one line."""
    if isinstance(skipped, dict):
        return "; ".join(f"{k}: {v}" for k, v in skipped.items())
    if isinstance(skipped, (list, tuple)):
        return "; ".join(" ".join(map(str, x)) if isinstance(x, (list, tuple)) else str(x) for x in skipped)
    return ""


def _live(args: argparse.Namespace) -> List[Collector]:
    """The collectors to sample: every available source, or the SOURCES named."""
    collectors, skipped = pick_collectors(probe(), args.interval, args.pool, args.sources, args.trace)
    if args.pgbench_log:
        collectors.append(AttachCollector(args.pgbench_log))
    if not collectors:
        why = _skipped_text(skipped)
        raise UserError("no source is available on this host" + (f" ({why})" if why else "") +
                        " (see `zfsmon doctor`)")
    return collectors


def _queues(choice: str) -> Optional[Tuple[str, ...]]:
    """--histograms: the queues whose latency histograms are exposed (None: all)."""
    return {"wait": DEFAULT_QUEUES, "all": None, "none": ()}[choice]


def run(args: argparse.Namespace) -> int:
    if not HAVE_PROMETHEUS:
        raise UserError(INSTALL_HINT)
    host, port = parse_listen(args.listen)
    collectors: List[Collector] = []
    if args.from_recording:  # no sampling: the values are those of the recording's end
        if args.sources or args.trace or args.pgbench_log:
            raise UserError("SOURCES, --trace or --pgbench-log and --from-recording do not go together")
        with Recording.open(args.from_recording) as rec:
            latest = latest_from_recording(rec, leaf_histograms=args.leaf_histograms,
                                           histogram_queues=_queues(args.histograms))
        what = f"the last values of {args.from_recording}"
    else:
        collectors = _live(args)
        # stale entities go after three missed intervals
        latest = LatestValues(stale_after=3 * args.interval + 5, leaf_histograms=args.leaf_histograms,
                              host=recording_meta())
        what = f"{', '.join(c.name for c in collectors)} every {args.interval:g} s"
    server, bound = serve(latest, host, port)
    with Session(args.interval, collectors, sinks=[latest.add]) as session:
        session.add_cleanup(server.server_close)
        session.add_cleanup(server.shutdown)
        if not is_loopback(host):
            print(f"zfsmon: note: listening on {host}, not loopback: anyone who can reach it can read the metrics",
                  file=sys.stderr)
        shown = f"[{host}]" if ":" in host else host
        print(f"zfsmon: serving {what} on http://{shown}:{bound}/metrics", file=sys.stderr, flush=True)
        session.run(duration=args.duration)
    return 0
