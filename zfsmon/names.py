"""Names every layer shares: the workload entities' names, and the device-name rules.

Workload entities are stored in recordings by name, so the readers that make
them, the analysis that groups them and the views that show them spell them
from here.

The device-name rules are pure string rules, no file system: a reader
resolving leaves on the live host (:mod:`zfsmon.sources.devices.diskstats`) and the
goose-egg analysis of a capture from another machine (illumos ``c0t1d0``) use
the same ones.
"""

from __future__ import annotations

import re
from typing import Collection, List, Optional, Tuple

#: the workload entity of pgbench's per-interval numbers (progress lines, per-transaction and aggregate logs)
PGBENCH = "pgbench"
#: the workload entity of a pgbench run's summary (numbers over the whole run)
PGBENCH_RUN = "pgbench-run"
#: workload entities of PostgreSQL's own statistics are named ``pgstat:<database>``
PGSTAT_PREFIX = "pgstat:"
#: fio: the records' source, and the prefix of its workload entities ``fio:<job>:<direction>``
FIO = "fio"
FIO_PREFIX = "fio:"
#: the prefix of fio's run results ``fio-run:<job>:<direction>``: its final report, the figures over the whole run
FIO_RUN_PREFIX = "fio-run:"
#: the text a recording's session begins with (an ``info`` event from source ``record``): a new recording, or a
#: process appending to one that exists (a soak resumed after a reboot)
RECORDING_STARTED = "recording started"
RECORDING_RESUMED = "recording resumed"


def fio_entity(job: str, direction: str) -> str:
    """The workload entity of one fio job's reads, writes or trims (direction: read, write, trim)."""
    return f"{FIO_PREFIX}{job}:{direction}"


def fio_job_direction(name: str, prefix: str = FIO_PREFIX) -> Optional[Tuple[str, str]]:
    """(job, direction) of a fio workload entity name (``prefix``: its intervals', or FIO_RUN_PREFIX: its run
    results'), or None for any other name."""
    if not name.startswith(prefix) or ":" not in name[len(prefix):]:
        return None
    job, direction = name[len(prefix):].rsplit(":", 1)
    return job, direction


def fio_run_entity(job: str, direction: str) -> str:
    """The workload entity of one fio job direction's result: fio's final report, kept apart from its intervals
    so that what sums intervals never counts the run's totals again."""
    return f"{FIO_RUN_PREFIX}{job}:{direction}"

#: directories a bare leaf name (``wwn-0x5000c500...``, ``sdb1``, ``gpt/data0``) may be relative to
DEV_DIRS = ("/dev", "/dev/disk/by-id", "/dev/disk/by-vdev", "/dev/disk/by-path", "/dev/disk/by-partuuid",
            "/dev/disk/by-partlabel", "/dev/disk/by-label", "/dev/mapper", "/dev/dsk")

# Linux partition names: sdb1 -> sdb, vda2 -> vda, nvme0n1p3 -> nvme0n1, mmcblk0p1 -> mmcblk0, loop3p1 -> loop3
_PART_PLAIN = re.compile(r"^((?:[shv]|xv)d[a-z]+)(\d+)$")
_PART_P = re.compile(r"^((?:nvme\d+n\d+)|(?:mmcblk\d+)|(?:loop\d+)|(?:nbd\d+))p(\d+)$")
# udev's persistent names of a partition: wwn-0x5000c500a1b2c3d4-part1, virtio-data0-part1 -> without -partN
_PART_BYID = re.compile(r"^(.+)-part(\d+)$")
# illumos: c0t1d0s0 / c0t1d0p1 -> c0t1d0 (iostat -xn names whole disks c0t1d0, -p adds slices)
_GROUPING = re.compile(r"^(mirror|raidz[123]?|draid[123]?(:[0-9a-z:]+)?|spare|replacing|root)(-\d+)?$")
_ILLUMOS_SLICE = re.compile(r"^(c\d+(?:t[0-9A-Fa-f]+)?d\d+)([sp]\d+)$")


def candidate_paths(leaf: str) -> List[str]:
    """Paths a leaf name may stand for, to be resolved on the host (absolute names are taken as they are)."""
    if leaf.startswith("/"):
        return [leaf]
    return [f"{d}/{leaf}" for d in DEV_DIRS]


def whole_disk(name: str) -> Optional[str]:
    """The disk a partition/slice name belongs to, by naming rule alone; None if ``name`` is not a partition."""
    for rx in (_PART_PLAIN, _PART_P, _PART_BYID, _ILLUMOS_SLICE):
        m = rx.match(name)
        if m:
            return m.group(1)
    return None


def guess_devices(leaf: str, known: Collection[str]) -> List[str]:
    """Device names (among ``known``) a leaf maps to without touching the host, most specific first.

    ``/dev/loop3`` -> ``loop3``; ``sdb1`` -> ``sdb1`` then ``sdb``; illumos
    ``c0t1d0`` -> ``c0t1d0`` (or its ``s0`` slice with ``iostat -p``). Names
    that need the host's symlinks (``wwn-...``, ``gpt/...``) give [] here.
    """
    base = leaf.rsplit("/", 1)[-1] if leaf.startswith("/dev/") else leaf
    names = [base]
    disk = whole_disk(base)
    if disk:
        names.append(disk)
    if re.match(r"^c\d+(?:t[0-9A-Fa-f]+)?d\d+$", base):
        names.append(base + "s0")  # ZFS puts a whole-disk vdev's data in slice 0
    return [n for n in names if n in known]


def is_grouping_vdev(name: str) -> bool:
    """mirror-0, raidz2-1, draid1:4d:8c:1s-0, spare-3, replacing-0: vdevs made of other vdevs, not devices."""
    return _GROUPING.match(name) is not None
