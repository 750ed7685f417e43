"""Say what a recording shows about a soak, in plain words with numbers.

Aligns the workload (pgbench TPS, latency, pg_stat_database) and the ZFS
series (ARC and L2ARC hit rates, L2ARC size, per-disk reads by vdev role) on
one time grid and reports: the warm-up (time until TPS reached 90% of its
plateau, how fast the L2ARC filled, when data-disk reads fell by half), how
TPS correlates with each cache measure (Pearson and Spearman, the best lag,
and whether it is significant once the series' autocorrelation is accounted
for), decay (TPS falling more than --decay-threshold from its early level),
the read path (shares of reads answered by PostgreSQL's buffers, the ARC, the
L2ARC and the disks) and goose eggs (devices reading zero while ZFS moves data).
"""

from __future__ import annotations

import argparse
import json
import sys

from zfsmon.analysis import whatchanged
from zfsmon.analysis.findings import KINDS, MAX_CELLS, Finding, analyze, fold_step, reads_metric
from zfsmon.commands._timearg import When, number, seconds, whole
from zfsmon.errors import UserError, printable
from zfsmon.store import Recording
from zfsmon.views.window import read_window

#: the largest --max-lag: correlations are tried at every lag up to it (a day of 10 s cells is 8,640)
MAX_LAG = 10_000

NAME = "analyze"
HELP = "findings of a soak recording: warm-up, cache fill, TPS correlations, decay, read path"
BATCH = True  # reads a long window whole: zfsmon.gcpolicy
EPILOG = """\
examples:
  zfsmon analyze soak.zfsmon
  zfsmon analyze soak.zfsmon --start +30m --end -10m     leave out the first 30 and the last 10 minutes
  zfsmon analyze soak.zfsmon --json | jq '.findings[] | select(.topic == "correlation")'
  zfsmon analyze soak.zfsmon --changed --start +40m --end +50m
                                  what moved in those 10 minutes against the 10 minutes before them
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a recording (zfsmon soak / attach / record)")
    p.add_argument("--json", action="store_true", help="machine-readable findings")
    p.add_argument("--start", type=When, metavar="T", help="window start: ISO time, epoch, +D from the start")
    p.add_argument("--end", type=When, metavar="T", help="window end: ISO time, epoch, -D before the end")
    p.add_argument("--step", type=seconds, metavar="S", help="grid step (default: the coarsest reporting interval, coarser when the window "
                   f"would need more than {MAX_CELLS:,} cells: one minute for a week of one-second readings); on a "
                   "grid coarser than the readings, they are folded to its step as they are read, and the vdevs' "
                   "busiest interval and goose eggs are judged per step")
    p.add_argument("--decay-threshold", type=number(0.0, 100.0), default=20.0, metavar="PCT",
                   help="report decay when TPS falls more than PCT%% below its early level (default 20)")
    p.add_argument("--changed", action="store_true", help="also say what changed: the window (--start/--end; "
                   "default the recording's second half) against the window of the same length before it: which "
                   "vdevs' rates and latencies, which hit ratios and workload figures moved most")
    p.add_argument("--max-lag", type=whole(0, MAX_LAG), metavar="CELLS", help="largest lag tried, in grid steps "
                   f"(0 to {MAX_LAG}; default: up to 10)")


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
        report = analyze(window, events, step=args.step or every, start=start, end=end,
                         decay_threshold=args.decay_threshold / 100.0, max_lag=args.max_lag)
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
