"""Which device, vdev and role a script's raw entity token names.

The scripts report what the kernel hands them: a ``dev_t`` number (block
tracepoints), a file descriptor (zfs-fuse's syscalls), or a name (illumos
device, pool, mountpoint). Turning those into "mirror-0's leaf loop3, role
data" needs the machine's state: ``/sys/class/block``, ``/proc/PID/fd`` and
``zpool status``. Those readers live here; :class:`Names` is the pure lookup
the protocol parser calls, built from plain dicts so tests can hand it data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from zfsmon.model import Entity, Kind
from zfsmon.sources.devices.diskstats import disk_partitions, resolve_leaves
from zfsmon.sources.zpool.status import Topology
from zfsmon.trace.protocol import devt_name


def block_device_names(sys_block: str = "/sys/class/block") -> Dict[str, str]:
    """``MAJ:MIN`` -> kernel device name (``7:3`` -> ``loop3``)."""
    out: Dict[str, str] = {}
    try:
        names = os.listdir(sys_block)
    except OSError:
        return out
    for name in names:
        try:
            out[Path(sys_block, name, "dev").read_text().strip()] = name
        except OSError:
            continue
    return out


def fd_paths(pid: int, proc: str = "/proc") -> Dict[str, str]:
    """fd number -> what it points to (a vdev file or ``/dev/loopN``) for a running process."""
    out: Dict[str, str] = {}
    base = Path(proc, str(pid), "fd")
    try:
        fds = os.listdir(base)
    except OSError:
        return out
    for fd in fds:
        try:
            out[fd] = os.readlink(base / fd)
        except OSError:
            continue
    return out


def mounted_filesystems(mountinfo: str = "/proc/self/mountinfo") -> Dict[str, Tuple[str, str, str]]:
    """``MAJ:MIN`` of each mount's superblock -> (mountpoint, fstype, source): names zfsslower's s_dev."""
    out: Dict[str, Tuple[str, str, str]] = {}
    try:
        text = Path(mountinfo).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if sep and len(f) >= 5 and len(r) >= 2:
            out.setdefault(f[2], (f[4].replace("\\040", " "), r[0], r[1]))
    return out


def dsk_links(dsk: str = "/dev/dsk") -> Dict[str, str]:
    """illumos: physical path (``/devices/...:a``, what the io provider names) -> ``c1t1d0`` as zpool shows it."""
    out: Dict[str, str] = {}
    try:
        names = os.listdir(dsk)
    except OSError:
        return out
    for name in names:
        try:
            target = os.path.realpath(os.path.join(dsk, name))
        except OSError:
            continue
        out.setdefault(target, name[:-2] if len(name) > 2 and name[-2] == "s" and name[-1].isdigit() else name)
    return out


def kernel_links(topology: Topology,
                 resolve: Callable[[List[str]], Dict[str, List[str]]] = resolve_leaves,
                 partitions: Callable[[str], List[str]] = disk_partitions) -> Dict[str, str]:
    """Linux: kernel device name -> leaf name as ``zpool status`` prints it (``vdb`` -> ``virtio-data0``).

    Pools made from ``/dev/disk/by-id`` names list their leaves by those names,
    while block tracepoints name the kernel's device (``vdb``): the symlinks
    join them. A partition leaf also claims its whole disk, where I/O may be
    accounted, and a whole-disk leaf its partitions (ZFS puts its data in the
    first one, and D's io provider names a bio's partition: ``vdb1``), unless
    another leaf has that name.
    """
    # single-disk top-level vdevs (a log or cache device, a stripe) are disks too
    leaves = sorted({e.name for e in topology.entities.values() if e.kind in (Kind.LEAF, Kind.VDEV)})
    out: Dict[str, str] = {}
    claimed: Dict[str, str] = {}
    for leaf, names in resolve(leaves).items():
        for i, name in enumerate(names):
            if name != leaf and (i == 0 or name not in out):
                out[name] = leaf
        for part in partitions(names[0]) if names else ():
            claimed.setdefault(part, leaf)
    return {**claimed, **out}


#: illumos whole-disk vdevs are opened as slice 0 (``/dev/dsk/c2t0d0s0``) but listed as ``c2t0d0``
_SLICE = re.compile(r"(?<=d\d)s\d+$")
#: Linux whole-disk vdevs are opened as their first partition (``/dev/disk/by-id/virtio-log0-part1``, the path
#: ZFS keeps as vdev_path) but listed as ``virtio-log0``
_PART = re.compile(r"-part\d+$")


def _as_trace(ent: Entity) -> Entity:
    """A topology entity (leaf/vdev) re-homed as a trace entity: same name, pool, role and parent."""
    return Entity(Kind.TRACE, ent.name, ent.pool, ent.role, ent.parent)


@dataclass
class Names:
    """The parser's resolver: raw token -> Entity, from tables gathered once (and refreshed on a miss)."""

    topology: Topology = field(default_factory=Topology)
    devices: Dict[str, str] = field(default_factory=dict)  # MAJ:MIN -> loop3
    fds: Dict[str, str] = field(default_factory=dict)  # "7" -> /dev/loop3
    mounts: Dict[str, Tuple[str, str, str]] = field(default_factory=dict)  # 0:52 -> (/zlab, zfs, zlab)
    links: Dict[str, str] = field(default_factory=dict)  # /devices/...:a -> c1t1d0 (illumos); vdb -> virtio-data0
    refresh: Optional[Callable[[Names], None]] = None  # re-reads devices/fds when a token is unknown
    _refreshed: set = field(default_factory=set)

    def vdev(self, name: str) -> Optional[Entity]:
        """The topology entity of a device name or path, in whichever pool has it."""
        for (_, n), ent in self.topology.entities.items():  # exact names first, in any pool
            if n == name:
                return ent
        for pool in self.topology.pools or sorted({p for p, _ in self.topology.entities}):
            hit = self.topology.lookup(pool, name)
            if hit is not None:
                return hit
        return None

    def __call__(self, kind: str, token: str) -> Optional[Entity]:
        ent = self._lookup(kind, token)
        if not ent.pool and self.refresh is not None and (kind, token) not in self._refreshed:
            self._refreshed.add((kind, token))  # one re-read per unknown token, not one per interval
            self.refresh(self)
            ent = self._lookup(kind, token)
        return ent

    def _lookup(self, kind: str, token: str) -> Entity:
        if kind == "devt":
            majmin = devt_name(token)
            dev = self.devices.get(majmin)
            if dev is None and majmin in self.mounts:
                mountpoint, fstype, source = self.mounts[majmin]
                is_zfs = fstype in ("zfs", "fuse.zfs")
                return Entity(Kind.TRACE, source if is_zfs else mountpoint, source.split("/", 1)[0] if is_zfs else "")
            if dev is None:
                return Entity(Kind.TRACE, majmin)
            hit = self.vdev(self.links[dev]) if dev in self.links else None
            hit = hit or self.vdev(dev)
            return _as_trace(hit) if hit else Entity(Kind.TRACE, dev)
        if kind == "fd":
            path = self.fds.get(token)
            if path is None:
                return Entity(Kind.TRACE, f"fd{token}")
            hit = self.vdev(path)
            if hit is None and path.startswith("/dev/"):
                hit = self.vdev(os.path.basename(path))
            return _as_trace(hit) if hit else Entity(Kind.TRACE, path)
        name = self.links.get(token, token)
        hit = self.vdev(name) or (self.vdev(_SLICE.sub("", name)) if _SLICE.search(name) else None) or (
            self.vdev(_PART.sub("", name)) if _PART.search(name) else None)
        if hit is not None:
            return _as_trace(hit)
        if token in self.topology.pools:
            return Entity(Kind.TRACE, token, token)
        return Entity(Kind.TRACE, token)

