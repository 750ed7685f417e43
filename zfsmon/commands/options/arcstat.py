"""Print ARC, L2ARC and ZIL statistics every INTERVAL seconds, one line per interval, on any platform.

Like OpenZFS's arcstat, but the same command on Linux (/proc/spl/kstat/zfs), zfs-fuse (/zfs-kstat),
FreeBSD (sysctl kstat.zfs.misc) and illumos (kstat -p), and with the L2ARC and ZIL columns shown by
default when the machine has them (an L2ARC: cache devices in l2_ndev, or bytes in l2_size where the
kernel does not count devices, as OpenZFS 2.4's zarcstat decides). Rates and percentages are computed from counter deltas over the
real elapsed time; a column whose statistic this ZFS version lacks shows `-`, and a percentage of an
interval without accesses shows `-` rather than 0. A counter that goes backwards (pool re-imported,
zfs-fuse restarted) starts a new baseline and is reported on stderr.

Without INTERVAL one line covering one second is printed. Sizes are 1024-based (K, M, G);
`--csv` prints exact numbers and epoch seconds instead.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import positive_int, seconds
from zfsmon.defaults import FUSE_ARCSTATS_DIR

NAME = "arcstat"
HELP = "ARC / L2ARC / ZIL hit rates and sizes per interval (cross-platform arcstat)"
EPILOG = """\
examples:
  zfsmon arcstat 5                       default columns every 5 s, until interrupted
  zfsmon arcstat -f time,read,hit%,l2hit%,l2bytes,l2size,zcmt 1 60
  zfsmon arcstat --csv 10 > arc.csv      exact numbers for a spreadsheet
  zfsmon arcstat -v                      every field, with its unit and meaning
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("interval", nargs="?", type=seconds, metavar="INTERVAL", help="time between lines (5, 5s, 1m)")
    p.add_argument("count", nargs="?", type=positive_int, metavar="COUNT", help="stop after COUNT lines")
    p.add_argument("-f", "--fields", metavar="FIELDS", help="comma-separated columns (see -v)")
    p.add_argument("-v", "--list-fields", action="store_true", help="list every field and exit")
    p.add_argument("--csv", action="store_true", help="comma-separated exact values")
    p.add_argument("--kstat-dir", default=FUSE_ARCSTATS_DIR, metavar="DIR",
                   help="zfs-fuse arcstats directory (default %(default)s)")
