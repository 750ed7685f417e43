"""Linux ``/proc/diskstats``: what the block layer saw, per device, as cumulative counters.

This is the "device view" to set beside ZFS's own per-leaf numbers: on
virtual or SAN disks (or zfs-fuse reading through the page cache) the block
layer may report far fewer operations than ZFS issued. Line layout
(Documentation/admin-guide/iostats.rst): ``MAJOR MINOR NAME`` then 11 fields,
15 since kernel 4.18 (discards), 17 since 5.5 (flushes). Sectors are always
512 bytes here, times are milliseconds; both are converted (bytes, ns).

Also here, because it is the Linux block-device I/O the goose-egg check needs:
:func:`resolve_kernel_name` turns a ``zpool status`` leaf path into the kernel
device name ``/proc/diskstats`` uses (``/dev/disk/by-id/wwn-...`` -> ``sdb``).
The live collector uses it to say which zpool leaf each device is: the device
entity's ``parent`` is that leaf's name (``vdb`` -> ``virtio-data0``), which the
exporter serves as the ``leaf`` label so PromQL can join the two layers.
"""

from __future__ import annotations

import os
import re
import time
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from zfsmon.host import Check, Host
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.names import candidate_paths, is_grouping_vdev
from zfsmon.sources.base import Clock, Collector, PolledCollector
from zfsmon.sources.spec import Source, TextKind
from zfsmon.sources.zpool.status import Topology, read_topology
from zfsmon.units import MAX_DIGITS, plain_ints

PATH = "/proc/diskstats"
#: the ``source`` of the records
RECORD_SOURCE = "diskstats"
SECTOR = 512
MS_NS = 1_000_000

#: (metric, scale) for fields 4.. in order; None = the in-flight gauge, kept as is
_FIELDS = (
    ("reads", 1), ("reads_merged", 1), ("read_bytes", SECTOR), ("read_time_ns", MS_NS),
    ("writes", 1), ("writes_merged", 1), ("write_bytes", SECTOR), ("write_time_ns", MS_NS),
    ("in_flight", 1), ("busy_ns", MS_NS), ("weighted_ns", MS_NS),
    ("discards", 1), ("discards_merged", 1), ("discard_bytes", SECTOR), ("discard_time_ns", MS_NS),
    ("flushes", 1), ("flush_time_ns", MS_NS),
)
#: the field counts kernels print after MAJOR MINOR NAME
_WIDTHS = (11, 15, 17)


def _uint(tok: str) -> bool:
    return tok.isascii() and tok.isdigit()


def device_entity(name: str, leaf: str = "") -> Entity:
    """A block device; ``leaf``: the zpool leaf (or single-disk vdev) it is, by ``zpool status``'s name."""
    return Entity(Kind.DEVICE, name, parent=leaf)


def parse_diskstats(text: str, ts: float, where: str = PATH, source: str = RECORD_SOURCE,
                    keep: Optional[Callable[[str], bool]] = None,
                    leaves: Optional[Mapping[str, str]] = None) -> List[Sample]:
    """Every line -> one device sample. ``keep(name)`` filters devices (None keeps all, idle ones too:
    a device reporting zeros is exactly what the goose-egg check must see). ``leaves``: kernel name -> the
    zpool leaf it is (:func:`leaf_of_device`), kept as the device entity's parent."""
    out: List[Sample] = []
    seen = set()
    for no, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        nvals = len(parts) - 3
        if nvals not in _WIDTHS:
            raise ParseError(where, no, f"expected MAJOR MINOR NAME and 11, 15 or 17 fields, got {len(parts)}",
                             line)
        if not (_uint(parts[0]) and _uint(parts[1])):
            raise ParseError(where, no, "major/minor are not numbers", line)
        name = parts[2]
        if name in seen:
            raise ParseError(where, no, f"device {name} appears twice", line)
        seen.add(name)
        if keep is not None and not keep(name):
            continue
        vals = parts[3:]
        if plain_ints(vals):  # a whole line at once
            out.append(Sample(ts, device_entity(name, leaves.get(name, "") if leaves else ""),
                              {metric: float(int(raw) * scale) for (metric, scale), raw in zip(_FIELDS, vals)},
                              source=source))
            continue
        metrics: Dict[str, float] = {}
        for (metric, scale), raw in zip(_FIELDS, vals):
            if not _uint(raw) or len(raw) > MAX_DIGITS:
                raise ParseError(where, no, f"{metric} is not a number", line)
            metrics[metric] = float(int(raw) * scale)
        out.append(Sample(ts, device_entity(name, leaves.get(name, "") if leaves else ""), metrics, source=source))
    if not out and keep is None:
        raise ParseError(where, None, "no devices")
    return out


#: how often (s) the live collector asks ``zpool status`` again which device is which leaf (also when the set of
#: block devices changes: a disk added or replaced)
LEAF_REFRESH_S = 300.0


class DiskstatsCollector(PolledCollector):
    """Reads ``/proc/diskstats`` each poll; optionally only the named devices.

    With ``topology`` (a callable giving the pools' ``zpool status``, e.g. :func:`read_topology`), each device
    that is a zpool leaf carries that leaf's name (:func:`leaf_of_device`), refreshed every
    :data:`LEAF_REFRESH_S` and whenever the set of devices changes; a failing ``zpool status`` keeps the names
    known before (none at start; the zpool source reports that failure).
    """

    name = RECORD_SOURCE

    def __init__(self, devices: Optional[Iterable[str]] = None, path: str = PATH, clock: Clock = time.time,
                 topology: Optional[Callable[[], Topology]] = None,
                 resolve: Optional[Callable[[Sequence[str]], Dict[str, List[str]]]] = None) -> None:
        super().__init__(clock)
        self.path = path
        self.devices = set(devices) if devices else None
        self.topology = topology
        self.resolve = resolve or resolve_leaves
        self.leaves: Dict[str, str] = {}
        self._leaves_at: Optional[float] = None
        self._names: frozenset = frozenset()

    def read_text(self) -> str:
        with open(self.path, encoding="ascii", errors="replace") as fh:
            text = fh.read()
        if self.topology is not None:
            names = frozenset(ln.split()[2] for ln in text.splitlines() if len(ln.split()) > 2)
            now = self.clock()
            if self._leaves_at is None or names != self._names or now - self._leaves_at >= LEAF_REFRESH_S:
                self._names, self._leaves_at = names, now
                try:
                    self.leaves = leaf_of_device(self.topology(), self.resolve)
                except (OSError, ParseError):
                    pass  # keep the names it had (none at start): a passing failure must not rename devices
        return text

    def parse(self, text: str, ts: float) -> List[Record]:
        keep = None if self.devices is None else self.devices.__contains__
        samples = parse_diskstats(text, ts, self.path, self.name, keep, self.leaves)
        if self.devices is not None:
            missing = self.devices - {s.entity.name for s in samples}
            if missing:
                return [*samples, self._error(f"{self.name}: no such device in {self.path}: "
                                                   f"{', '.join(sorted(missing))}")]
        return list(samples)


# --- leaf path -> kernel device name (I/O; the matching rules are in zfsmon.analysis.goose) -------------------

SYS_BLOCK = "/sys/class/block"


def block_devices(sys_block: str = SYS_BLOCK) -> Tuple[str, ...]:
    """The block devices the kernel has now (disks and partitions), sorted: one directory read, which changes
    the moment a disk is pulled out of the machine or put back. Raises OSError when sysfs cannot be listed."""
    return tuple(sorted(os.listdir(sys_block)))


def resolve_kernel_name(path: str, sys_block: str = SYS_BLOCK) -> Optional[str]:
    """``/dev/disk/by-id/wwn-0x5000...-part1`` -> ``sdb1``: follow symlinks, then check sysfs knows the name.

    Returns None when the path does not exist or is not a block device (a file
    vdev, a path from another machine's capture).
    """
    real = os.path.realpath(path)
    name = os.path.basename(real)
    if not real.startswith("/dev/") or not os.path.exists(os.path.join(sys_block, name)):
        return None
    return name


def parent_disk(name: str, sys_block: str = SYS_BLOCK) -> Optional[str]:
    """The whole disk a partition belongs to (``sdb1`` -> ``sdb``); None for a whole disk or unknown name."""
    entry = os.path.join(sys_block, name)
    if not os.path.exists(os.path.join(entry, "partition")):
        return None
    parent = os.path.basename(os.path.dirname(os.path.realpath(entry)))
    return parent if os.path.exists(os.path.join(sys_block, parent)) else None


def disk_partitions(name: str, sys_block: str = SYS_BLOCK) -> List[str]:
    """A whole disk's partitions as the kernel names them (``vdb`` -> ``vdb1``, ``vdb9``); empty for a partition,
    an unknown name, or a disk without partitions."""
    entry = os.path.join(sys_block, name)
    try:
        children = os.listdir(entry)
    except OSError:
        return []
    return sorted(c for c in children if os.path.exists(os.path.join(entry, c, "partition")))


def resolve_leaves(leaves: Sequence[str], sys_block: str = SYS_BLOCK) -> Dict[str, List[str]]:
    """Leaf name (as ``zpool status`` prints it) -> kernel names to look for, most specific first.

    Candidate paths come from :func:`zfsmon.names.candidate_paths`; the
    first that resolves wins; a partition also lists its whole disk, because
    some kernels account I/O only on the disk.
    """
    out: Dict[str, List[str]] = {}
    for leaf in leaves:
        for cand in candidate_paths(leaf):
            name = resolve_kernel_name(cand, sys_block)
            if name is None:
                continue
            names = [name]
            disk = parent_disk(name, sys_block)
            if disk:
                names.append(disk)
            out[leaf] = names
            break
    return out


def leaf_of_device(topology: Topology,
                   resolve: Callable[[Sequence[str]], Dict[str, List[str]]] = resolve_leaves) -> Dict[str, str]:
    """Kernel device name -> the zpool leaf it is, by ``zpool status``'s name (``vdb`` -> ``virtio-data0``).

    Leaves and single-disk top-level vdevs (a log or cache device) are resolved by :func:`resolve_leaves`;
    only the most specific name is kept (``virtio-data0-part1`` -> ``vdb1``, not also ``vdb``), so one device
    stands for one leaf and a PromQL join on it has no duplicates.
    """
    leaves = sorted({e.name for e in topology.entities.values()
                     if e.kind == Kind.LEAF or (e.kind == Kind.VDEV and not is_grouping_vdev(e.name))})
    out: Dict[str, str] = {}
    for leaf, names in resolve(leaves).items():
        if names:
            out.setdefault(names[0], leaf)
    return out


# --- the source ------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: the block layer's counters, Linux only."""
    if host.system != "Linux":
        return Check("diskstats", False, f"{PATH} is Linux only")
    ok = os.path.exists(PATH)
    return Check("diskstats", ok, PATH if ok else f"no {PATH}")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return DiskstatsCollector(topology=lambda: read_topology(pools))


# --- saved logs (`zfsmon parse` / `zfsmon import`) -------------------------------------------------------------

_EPOCH_LINE = re.compile(r"^\s*(\d{9,11})(?:\.\d+)?\s*$")  # `date +%s` between the dumps


def _is_row(line: str) -> bool:
    parts = line.split()
    return len(parts) - 3 in _WIDTHS and _uint(parts[0]) and _uint(parts[1]) and all(_uint(p) for p in parts[3:])


def looks_like(text: str) -> bool:
    """``/proc/diskstats`` rows (MAJOR MINOR NAME and 11, 15 or 17 counters), optionally after a ``date +%s`` line."""
    head = [ln for ln in text.splitlines()[:4] if ln.strip()]
    if head and _EPOCH_LINE.match(head[0]):
        head = head[1:]
    return len(head) >= 1 and all(_is_row(ln) for ln in head)


def parse_log(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """``cat /proc/diskstats`` once or in a loop, with or without a ``date +%s`` line before each dump.

    A dump ends where a device comes round again or at a time line. A dump
    after a time line is at that time; otherwise dump *i* is at
    ``i * interval`` (all at 0 without an interval: ``zfsmon import`` then
    asks for one).
    """
    out: List[Record] = []
    block: List[Tuple[int, str]] = []
    names: set = set()
    stamp: Optional[float] = None
    count = 0

    def close() -> None:
        nonlocal block, names, stamp, count
        if block:
            ts = stamp if stamp is not None else count * (interval or 0.0)
            first = block[0][0]
            body = "\n".join(ln for _n, ln in block)
            try:
                out.extend(parse_diskstats(body, ts, f"{source} (dump {count + 1})", RECORD_SOURCE))
            except ParseError as exc:  # line numbers of the whole file, not of the dump
                no = None if exc.line_no is None else exc.line_no + first - 1
                raise ParseError(source, no, exc.message, exc.line) from None
            count += 1
        block, names, stamp = [], set(), None if block else stamp

    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _EPOCH_LINE.match(line)
        if m:
            close()
            stamp = float(m.group(1))
            continue
        name = line.split()[2] if len(line.split()) > 2 else ""
        if name in names:
            close()
        names.add(name)
        block.append((no, line))
    close()
    if not out:
        raise ParseError(source, None, "no /proc/diskstats rows")
    return out


SOURCE = Source(name=RECORD_SOURCE, help="block-device view (/proc/diskstats), for goose eggs", order=60,
                kinds=(TextKind("diskstats", "/proc/diskstats dumps, one or a loop (with `date +%s` lines: timed)",
                                looks_like, parse_log,
                                "while sleep 10; do date +%s; cat /proc/diskstats; done > diskstats.log"),),
                check=check_host, collector=_collector, family="device", feeds=(Kind.DEVICE,))
