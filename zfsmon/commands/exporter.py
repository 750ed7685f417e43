"""`zfsmon exporter` at work; its manual and options are :mod:`zfsmon.commands.options.exporter`."""

from __future__ import annotations

import argparse
import sys
from typing import List

from zfsmon.commands._serve import (
    HAVE_PROMETHEUS,
    INSTALL_HINT,
    exposure_note,
    live_values,
    parse_listen,
    recording_values,
    serve,
    url,
)
from zfsmon.engine import Session, pick_collectors
from zfsmon.errors import UserError
from zfsmon.host import probe
from zfsmon.sources.base import Collector
from zfsmon.store import Recording
from zfsmon.workload.attach import AttachCollector


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


def run(args: argparse.Namespace) -> int:
    if not HAVE_PROMETHEUS:
        raise UserError(INSTALL_HINT)
    host, port = parse_listen(args.listen)
    collectors: List[Collector] = []
    if args.from_recording:  # no sampling: the values are those of the recording's end
        if args.sources or args.trace or args.pgbench_log:
            raise UserError("SOURCES, --trace or --pgbench-log and --from-recording do not go together")
        with Recording.open(args.from_recording) as rec:
            latest = recording_values(rec, args.leaf_histograms, args.histograms)
        what = f"the last values of {args.from_recording}"
    else:
        collectors = _live(args)
        latest = live_values(args.interval, args.leaf_histograms, args.histograms)
        what = f"{', '.join(c.name for c in collectors)} every {args.interval:g} s"
    server, bound = serve(latest, host, port)
    with Session(args.interval, collectors, sinks=[latest.add]) as session:
        session.add_cleanup(server.server_close)
        session.add_cleanup(server.shutdown)
        exposed = exposure_note(host)
        if exposed is not None:
            print(f"zfsmon: note: {exposed}", file=sys.stderr)
        print(f"zfsmon: serving {what} on {url(host, bound)}", file=sys.stderr, flush=True)
        session.run(duration=args.duration)
    return 0
