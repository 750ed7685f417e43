"""Build and boot a Debian guest with a real OpenZFS kernel module (QEMU, no KVM needed), run commands in it.

`build` makes the guest image from Debian packages only: debootstrap minbase, the Debian kernel with its
headers, OpenZFS by DKMS (2.1 from bookworm contrib, 2.3 from bookworm-backports, 2.4 from
trixie-backports on a trixie root file system), python3, fio, PostgreSQL, bpftrace, bcc, and zfsmon's
Python dependencies as pinned wheels installed without an index.
It takes about 20 minutes (the DKMS build of the module is most of it) and is cached under
/var/cache/zfsmon/guest/KEY, the key a hash of every input, so a second build is instant.

`run` boots it under QEMU with a pool `zguest` (two 2-way mirrors, a SLOG and an L2ARC on virtio disks
named by serial: /dev/disk/by-id/virtio-data0 ... -log0, -cache0; dataset zguest/db, recordsize 8k;
zfs_arc_max 256 MiB), the project tree shared read-only at /mnt/zfsmon (`zfsmon` runs from it), the
output directory writable at /mnt/out (the command's working directory), no network. The command runs
with bash; its output streams here and its exit code is zfsmon's. `shell` (or `run --keep`) leaves the
guest up on this terminal's serial console instead of powering off. Needs root and qemu-system-x86.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import positive_int, seconds
from zfsmon.defaults import GUEST_DEFAULT_ZFS, GUEST_RUN_ROOT, GUEST_ZFS_SUITES, SOURCE_TREE

NAME = "guest"
HELP = "build or boot a QEMU guest with kernel OpenZFS (2.1, 2.3, 2.4) and run a command in it (needs root)"
EPILOG = """\
examples:
  zfsmon guest build                                  OpenZFS 2.3 image (about 20 min the first time)
  zfsmon guest build --zfs 2.1
  zfsmon guest run --zfs 2.4 -- zfs version
  zfsmon guest run -- zpool status                    boot, create the pool, run, power off
  zfsmon guest run --out res -- 'zfsmon doctor --json > doctor.json'
  zfsmon guest shell                                  log in and look around (poweroff to leave)
  zfsmon guest run --memory 1536 --arc-mb 64 --slow-data 15 --disks d -- CMD
                                                      the warm-up lab: hard-disk-like data disks, small ARC,
                                                      the pool kept in d for the next boot
  zfsmon guest status; zfsmon guest clean
"""


def _param(text: str) -> str:
    name, eq, value = text.partition("=")
    if not eq or not name or not all(c.isalnum() or c == "_" for c in name) or not value or \
            not all(c.isalnum() or c in "_.-" for c in value):
        raise argparse.ArgumentTypeError(f"not NAME=VALUE of a module parameter: {text!r}")
    return text


def _zfs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--zfs", choices=sorted(GUEST_ZFS_SUITES), default=GUEST_DEFAULT_ZFS,
                   help="OpenZFS version (default %(default)s)")


def _boot_options(p: argparse.ArgumentParser) -> None:
    _zfs(p)
    p.add_argument("--out", metavar="DIR", help="output directory shared writable at /mnt/out "
                   f"(default: a new one under {GUEST_RUN_ROOT})")
    p.add_argument("--no-pool", action="store_true", help="no pool disks, no pool")
    p.add_argument("--src", metavar="DIR", default=str(SOURCE_TREE), help="the tree shared read-only at "
                   "/mnt/zfsmon, whose zfsmon the guest runs (default: the tree this zfsmon runs from)")
    p.add_argument("--memory", type=positive_int, default=4096, metavar="MIB", help="guest memory (default 4096)")
    p.add_argument("--cpus", type=positive_int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--disks", metavar="DIR", help="keep the pool's disk files in DIR: created on the first boot, the "
                   "pool imported from them on the next (a reboot; persistent L2ARC); default fresh disks, removed")
    p.add_argument("--slow-data", type=positive_int, metavar="IOPS", help="limit each data disk to IOPS reads per "
                   "second (QEMU throttling), like a hard disk; log and cache stay fast")
    p.add_argument("--arc-mb", type=positive_int, metavar="MIB", help="zfs_arc_max for this boot (default 256; it "
                   "must exceed ZFS's minimum, 1/32 of --memory and at least 64)")
    p.add_argument("--zfs-param", action="append", type=_param, default=[], metavar="NAME=VALUE",
                   help="a zfs module parameter for this boot (repeatable), e.g. l2arc_rebuild_enabled=0")
    p.add_argument("--with-dtrace", metavar="PREFIX", help="carry the DTrace installed under PREFIX (Oracle's "
                   "DTrace for Linux, e.g. /opt/dtrace) into the guest, on its PATH, with the zfs module's BTF "
                   "loaded for it (zfsmon ships no DTrace)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    b = sub.add_parser("build", help="build the image, or say that it is cached")
    _zfs(b)
    b.add_argument("--force", action="store_true", help="build again even if cached")
    r = sub.add_parser("run", help="boot, run COMMAND (bash) in the guest, power off; exit with its code")
    _boot_options(r)
    r.add_argument("--timeout", type=seconds, default=1800.0, metavar="D", help="stop the guest after D "
                   "(default 30m)")
    r.add_argument("--keep", action="store_true", help="stay up after the command, on the serial console")
    r.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="what to run in the guest")
    s = sub.add_parser("shell", help="boot and log in on the serial console (the pool is created first)")
    _boot_options(s)
    s.add_argument("--timeout", type=seconds, default=4 * 3600.0, metavar="D", help="stop the guest after D "
                   "(default 4h)")
    sub.add_parser("status", help="the cached images and what they hold")
    sub.add_parser("clean", help="remove cached images of older inputs")
