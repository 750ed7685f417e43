"""Per-vdev I/O of ZFS pools with each vdev's role: `zpool iostat -v`, but always grouped by role.

Shows every pool (or the POOLs named) as a tree: the pool, its data vdevs and their disks, then the
`logs` (SLOG), `cache` (L2ARC), `special`, `dedup` and `spares` sections. Roles come from `zpool status`,
so they are right even where `zpool iostat` omits a heading (zfs-fuse prints its SLOG as a data row).
Capacity and bandwidth are in bytes (1024-based K, M, G, T), operations per second, and, where the
local zpool can report them (OpenZFS 0.7+), average waits (-l) and queue depths (-q) as well: the richest
set of columns this zpool accepts is chosen automatically.

Without INTERVAL one report is printed: the averages since each pool was imported. With INTERVAL a
report is printed every INTERVAL seconds, COUNT times (the first is again since import; -y skips it).
A pool that disappears, or a zpool that stops answering, is reported on stderr and watching goes on;
a device removed or added (e.g. a cache device) is reported as a topology change.
"""

from __future__ import annotations

import argparse

NAME = "iostat"
HELP = "per-vdev I/O with roles (data/log/cache/special/dedup/spare), like zpool iostat -v"
EPILOG = """\
examples:
  zfsmon iostat                     one report: averages since import, every pool
  zfsmon iostat zlab 5              pool zlab every 5 s until interrupted
  zfsmon iostat -y tank 1 10        ten 1-second reports, without the since-import one
  zfsmon iostat -p --csv tank 10    exact numbers as CSV (time,pool,kind,name,role,parent,...)
  zfsmon iostat -H tank 5           tab-separated, no headers, for scripts
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = "zfsmon iostat [-H] [-p] [--csv] [-y] [--zpool PATH] [POOL...] [INTERVAL [COUNT]]"
    p.add_argument("operands", nargs="*", metavar="POOL | INTERVAL | COUNT",
                   help="pools to show (default: all), seconds between reports, number of reports")
    p.add_argument("-H", dest="scripted", action="store_true", help="scripted: no headers, tab-separated fields")
    p.add_argument("-p", dest="parsable", action="store_true", help="exact numbers instead of 1.2K, 3.4M")
    p.add_argument("--csv", action="store_true", help="comma-separated, one line per pool/vdev/leaf per report")
    p.add_argument("-y", dest="skip_first", action="store_true",
                   help="omit the first report (averages since import); needs INTERVAL")
    p.add_argument("--no-device", action="store_true",
                   help="leave out the device column (block-device ops/s from /proc/diskstats or illumos iostat, "
                        "with `goose` where the device says 0 while ZFS moves data)")
    p.add_argument("--zpool", default="zpool", metavar="PATH", help="the zpool command (default %(default)s)")
