"""`zfsmon arcstat` at work; its manual and options are :mod:`zfsmon.commands.options.arcstat`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Dict, List, Mapping, Optional

from zfsmon.analysis.rates import ArcAnalyzer
from zfsmon.engine.reads import DeadlinePolls, StuckRead, deadline_for
from zfsmon.errors import UserError
from zfsmon.model import Event, EventKind, Kind, Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.kstat import arcstats, zil
from zfsmon.views import arcstat_text as view


def _collectors(interval: float, kstat_dir: str) -> List[Collector]:
    arc = arcstats.collector_for_host(interval, fuse_dir=kstat_dir)
    if arc is None:
        raise UserError(f"no ARC statistics here (looked for {arcstats.LINUX_PATH} and {kstat_dir}); "
                        "is ZFS loaded and a pool imported?")
    out = [arc]
    z = zil.collector_for_host(interval)
    if z is not None:
        out.append(z)
    return out


class _State:
    """Latest raw levels and derived metrics per entity kind."""

    def __init__(self) -> None:
        self.analyzer = ArcAnalyzer()
        self.levels: Dict[Kind, Mapping[str, float]] = {}
        self.derived: Dict[Kind, Mapping[str, float]] = {}
        self.fresh_arc: Optional[float] = None  # ts of a new ARC interval not yet printed

    def take(self, records: List, err: List[str]) -> None:
        for rec in records:
            if isinstance(rec, Event):
                if rec.kind in (EventKind.ERROR, EventKind.RESET) and not rec.data.get("repeat"):
                    err.append(rec.text)
                continue
            if not isinstance(rec, Sample):
                continue
            self.levels[rec.entity.kind] = rec.metrics
            derived, events = self.analyzer.update(rec)
            err.extend(e.text for e in events)
            if derived is not None:
                self.derived[rec.entity.kind] = derived.metrics
                if rec.entity.kind == Kind.ARC:
                    self.fresh_arc = rec.ts


def run(args: argparse.Namespace) -> int:
    if args.list_fields:
        print(view.fields_text())
        return 0
    if args.fields:
        try:
            view.select_columns(args.fields)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    interval = args.interval or 1.0
    count = args.count if args.interval else 1
    collectors = _collectors(interval, args.kstat_dir)
    reads = DeadlinePolls(collectors, deadline_for(interval), required=collectors[:1])  # the ARC's
    state = _State()
    cols = None
    printed = 0
    try:
        for c in collectors:
            c.start()
        deadline = time.monotonic()
        while printed < count:
            errors: List[str] = []
            try:
                polled = reads.poll(errors)
            except StuckRead as exc:
                raise UserError(str(exc)) from None
            for records in polled:
                state.take(records, errors)
            for e in errors:
                print(f"zfsmon arcstat: {e}", file=sys.stderr)
            if state.fresh_arc is not None:
                if cols is None:
                    cols = view.select_columns(args.fields, l2=view.has_l2(state.levels),
                                               zil=Kind.ZIL in state.levels)
                    print(view.csv_header(cols) if args.csv else view.header_line(cols))
                values = view.merge(state.levels, state.derived)
                ts = state.fresh_arc
                print(view.csv_row(cols, ts, values) if args.csv else view.row_line(cols, ts, values), flush=True)
                state.fresh_arc = None
                printed += 1
                if printed >= count:
                    break
            deadline += interval
            time.sleep(max(0.0, deadline - time.monotonic()))
    finally:
        reads.close()
        for c in collectors:
            c.stop()
    return 0

