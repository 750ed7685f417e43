"""`zfsmon analyze` at work; its manual and options are :mod:`zfsmon.commands.options.analyze`."""

from __future__ import annotations

import argparse
import json
import sys

from zfsmon.analysis import whatchanged
from zfsmon.analysis.findings import KINDS, Finding, analyze, fold_step, reads_metric
from zfsmon.errors import UserError, printable
from zfsmon.store import Recording
from zfsmon.views.window import read_health, read_window


def run(args: argparse.Namespace) -> int:
    if not 0 < args.decay_threshold < 100:
        raise UserError("--decay-threshold is a percentage between 0 and 100")
    with Recording.open(args.file) as rec:
        span = rec.time_range()
        start = args.start.resolve(span) if args.start else None
        end = args.end.resolve(span) if args.end else None
        if start is not None and end is not None and not start < end:
            raise UserError(f"the window is empty: --start ({args.start.text}) is not before --end ({args.end.text})")
        events = rec.events(start=start, end=end)
        lo, hi = span if span is not None else (0.0, 0.0)
        interval = rec.nominal_interval()
        every = fold_step(interval, (hi if end is None else end) - (lo if start is None else start), args.step)
        # only what findings read: the kinds they use, and of a zpool iostat row the few metrics they use; on a
        # grid coarser than the readings, folded to its step as they are read (a week must fit in memory)
        window = read_window(rec, start, end, every, KINDS, reads_metric)
        health = read_health(rec, start, end)
        report = analyze(window, events, step=args.step or every, start=start, end=end,
                         decay_threshold=args.decay_threshold / 100.0, max_lag=args.max_lag, health=health)
        report.folded = every
        del window
        changed = None  # read after the window's samples are let go: one window in memory at a time
        if args.changed:
            if span is None:
                raise UserError(f"{args.file} holds no samples: nothing to compare")
            lo, hi = span
            c_start = start if start is not None else (lo + (hi if end is None else end)) / 2
            c_end = end if end is not None else hi
            if c_start - (c_end - c_start) < lo - 1e-6:
                print(f"zfsmon: note: the recording starts {c_start - lo:.0f} s before the window: the window before "
                      "it is that much shorter", file=sys.stderr)
            c_lo = c_start - (c_end - c_start)
            c_every = fold_step(interval, c_end - c_lo)  # means per window: folding keeps them
            both = read_window(rec, c_lo, c_end, c_every)
            changed = whatchanged.compare(both, c_start, c_end)
    if changed is not None:
        report.findings.append(Finding("what_changed", changed.text(), changed.as_dict()))
    if args.json:
        print(json.dumps({"file": args.file, **report.as_dict()}, indent=2, default=str))
    else:
        print(printable(f"{args.file}:"))
        print("".join(printable(line) + "\n" for line in report.render().splitlines()), end="")
    return 0
