"""Build, inspect and remove a throw-away ZFS pool on zfs-fuse (the "lab").

`up` starts the zfs-fuse daemon if none runs (and remembers that it did), creates sparse backing files
and loop devices, and a pool of two 2-way mirrors of data vdevs, one log device (SLOG) and one cache
device (L2ARC), plus a dataset for databases (recordsize 8k). `--slow-data IOPS` throttles the data
loop devices with the blkio cgroup so they behave like hard disks, while log and cache stay fast:
this is what makes L2ARC warm-up visible.

`cold` empties the ARC and the L2ARC of a lab pool (cache device removed, pool exported and imported, cache
device added back; stop anything using the pool first), so that a soak can start cold.

`adopt` makes an existing pool (kernel OpenZFS, e.g. the QEMU guest's or a scratch pool of yours) a lab
without building anything: `soak --lab POOL` and `top --soak --lab POOL` then run zfsmon's PostgreSQL cluster
on its dataset POOL/DATASET, and `cold` empties its caches as above (with persistent L2ARC, 2.0+, the
removal is what makes the L2ARC start empty). `down` of an adopted pool only forgets it.

`down` removes exactly what `up` created (pool, loop devices, files, cgroup rules, and the daemon only if
`up` started it and no pool remains). Both are idempotent and safe after a crash; a second `up` of a lab
that is up reuses it. A machine-wide lock (/run/zfsmon/lab.lock) serialises lab changes.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import positive_int
from zfsmon.defaults import LAB_POOL

NAME = "lab"
HELP = "build, inspect or remove a zfs-fuse ZFS lab pool (needs root)"
EPILOG = """\
examples:
  zfsmon lab up                              pool zlab with default sizes
  zfsmon lab up --slow-data 100 --arc-mb 32  hard-disk-like data vdevs, small ARC
  zfsmon lab cold                            empty ARC and L2ARC before a soak
  zfsmon lab status
  zfsmon lab down
  zfsmon lab adopt --pool tank --dataset db  soaks on an existing (kernel OpenZFS) pool's dataset
"""


def _pool_name(text: str) -> str:
    if not text or not text[0].isalpha() or not all(c.isalnum() or c in "_-.:" for c in text):
        raise argparse.ArgumentTypeError(f"not a valid pool name: {text!r}")
    if text in ("mirror", "raidz", "spare", "log", "cache") or text.startswith(("c0", "c1", "mirror", "raidz")):
        raise argparse.ArgumentTypeError(f"reserved pool name: {text!r}")
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    u = sub.add_parser("up", help="build the lab (or reuse it if up)")
    u.add_argument("--pool", type=_pool_name, default=LAB_POOL, help="pool name (default %(default)s)")
    u.add_argument("--dir", dest="directory", help="where the sparse backing files go "
                   "(default /var/tmp/zfsmon-lab/POOL)")
    u.add_argument("--data-mb", type=positive_int, default=512, help="size of each of the 4 data vdevs (default 512)")
    u.add_argument("--log-mb", type=positive_int, default=256, help="SLOG size (default 256)")
    u.add_argument("--cache-mb", type=positive_int, default=1536, help="L2ARC size (default 1536)")
    u.add_argument("--arc-mb", type=positive_int, default=64, help="ARC cap when the lab starts zfs-fuse (default 64)")
    u.add_argument("--slow-data", type=positive_int, metavar="IOPS", help="throttle each data vdev to IOPS reads and "
                   "writes per second (blkio cgroup)")
    d = sub.add_parser("down", help="remove what `up` created")
    d.add_argument("--pool", type=_pool_name, default=LAB_POOL, help="pool name (default %(default)s)")
    c = sub.add_parser("cold", help="empty the ARC and L2ARC (remove cache, export, import, add cache back)")
    c.add_argument("--pool", type=_pool_name, default=LAB_POOL, help="pool name (default %(default)s)")
    a = sub.add_parser("adopt", help="use an existing pool as a lab (builds nothing; down only forgets it)")
    a.add_argument("--pool", type=_pool_name, required=True, help="the pool")
    a.add_argument("--dataset", default="db", help="its dataset for the soak's PostgreSQL (default %(default)s; "
                   "recordsize 8k suits PostgreSQL)")
    sub.add_parser("status", help="the daemon, each lab's topology with roles, throttles")
