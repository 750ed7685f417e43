"""Say what a recording shows about a soak, in plain words with numbers.

Aligns the workload (pgbench TPS, latency, pg_stat_database) and the ZFS
series (ARC and L2ARC hit rates, L2ARC size, per-disk reads by vdev role) on
one time grid and reports: the warm-up (time until TPS reached 90% of its
plateau, how fast the L2ARC filled, when data-disk reads fell by half), how
TPS correlates with each cache measure (Pearson and Spearman, the best lag,
and whether it is significant once the series' autocorrelation is accounted
for), decay (TPS falling more than --decay-threshold from its early level),
the read path (shares of reads answered by PostgreSQL's buffers, the ARC, the
L2ARC and the disks), goose eggs (devices reading zero while ZFS moves data)
and each restart inside the recording (a reboot a soak resumed after: how
long ZFS was down, what the persistent L2ARC rebuilt and how fast, and when
TPS was back to 90% of its plateau from before the restart).
"""

from __future__ import annotations

import argparse

from zfsmon.analysis.limits import MAX_CELLS
from zfsmon.commands._timearg import When, number, seconds, whole

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
