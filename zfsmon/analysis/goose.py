"""Goose eggs: the device layer reports (almost) nothing while ZFS says the leaf is busy.

On virtual disks, SAN LUNs behind a caching layer, or zfs-fuse reading
through the host page cache, ``iostat`` / ``/proc/diskstats`` can show zeros
for a disk that ZFS is hammering. Then the device view is not evidence of
anything and the ZFS numbers are the truth. This module decides, per
interval and per leaf, whether that is happening, and keeps the numbers it
decided on so a user can check the verdict.

Two questions, one set of rules (here). :func:`judge` answers for one interval (``zfsmon
iostat``, the dashboard's tree). :func:`zfsmon.analysis.goose_window.summarize_window` answers for a window of
recorded samples with the same rules (:func:`decide`); it is a module of its own because it takes the devices'
counters column-wise with numpy, and ``zfsmon iostat`` and ``zfsmon record``, which import this one, must start
without numpy (tests/unit/analysis/test_goose_device_spans.py checks that they do).

Pure: leaf names, device names and per-second rates in, verdicts out. Finding
which kernel device a leaf path is (symlinks, sysfs) is I/O and lives in
:mod:`zfsmon.sources.devices.diskstats`; the name rules that need no file system are in
:mod:`zfsmon.names`, so captures from other machines (illumos ``c0t1d0``) can be matched too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from zfsmon.model import Entity, Kind, Sample
from zfsmon.names import guess_devices, is_grouping_vdev, whole_disk

GOOSE_EGG = "goose egg"
NOT_GOOSE_EGG = "not goose egg"
IDLE = "idle"  # ZFS did too little in the interval to judge
UNKNOWN = "unknown"  # no device-level numbers for this leaf


def is_device_row(entity: Entity) -> bool:
    """A ``zpool iostat`` row that is one device: a leaf, or a top-level vdev that is a disk itself.

    A single-disk SLOG or data vdev and a cache device are shown as vdev rows;
    mirror-0, raidz1-0 and the pool are not devices.
    """
    return entity.kind == Kind.LEAF or (entity.kind == Kind.VDEV and not is_grouping_vdev(entity.name))


#: the (reads, writes) pairs :func:`device_ops_per_s` reads, in the order it tries them
OPS_PAIRS = (("read_ops", "write_ops"), ("reads", "writes"))


def device_ops_per_s(values: Mapping[str, float]) -> Optional[float]:
    """Operations per second from one device's numbers.

    Takes either an interval row's gauges (``read_ops``/``write_ops``: illumos
    ``iostat``, ``zpool iostat`` leaves) or the per-second rates
    :class:`~zfsmon.analysis.rates.RateDeriver` derived from counters
    (``reads``/``writes``: ``/proc/diskstats``). None if neither is there.
    """
    for r, w in OPS_PAIRS:
        if r in values or w in values:
            return float(values.get(r, 0.0)) + float(values.get(w, 0.0))
    return None


def leaf_ops(samples: Iterable[Sample]) -> Dict[str, float]:
    """Device name -> ops/s from ``zpool iostat`` samples; the since-import first report is skipped.

    Leaves, plus top-level vdevs that are a device themselves (a single-disk
    SLOG or data vdev, a cache device), which ``zpool iostat`` rows show as vdevs.
    """
    out: Dict[str, float] = {}
    for s in samples:
        if s.since_boot or not is_device_row(s.entity):
            continue
        ops = device_ops_per_s(s.metrics)
        if ops is not None:
            out[s.entity.name] = out.get(s.entity.name, 0.0) + ops
    return out


@dataclass(frozen=True)
class Verdict:
    """One leaf in one interval. ``zfs_ops`` sums every leaf on the same device (partitions of one disk)."""

    leaf: str
    verdict: str
    device: Optional[str]
    zfs_ops: float
    device_ops: Optional[float]
    why: str

    @property
    def ratio(self) -> Optional[float]:
        """device ops / ZFS ops; None when either side is missing or ZFS was idle."""
        if self.device_ops is None or self.zfs_ops <= 0:
            return None
        return self.device_ops / self.zfs_ops


def leaf_devices(leaves: Iterable[str], devices: Mapping[str, str]) -> Dict[str, List[str]]:
    """Leaf -> the block devices whose numbers stand for it, most specific first (``leaf_devices`` of :func:`judge`).

    ``devices``: each known block device -> the zpool leaf it says it is (its entity's ``parent``, set by the
    live diskstats collector: ``vdb`` -> ``virtio-data0``; "" when it does not say). A leaf a device names
    gets that device (the collector labels the most specific one: the partition ZFS opened, or the whole disk
    when the leaf is the disk, whose counters include its partitions), then, for a partition, its whole disk
    (some kernels count only there). A leaf no device names (recordings from before the label, imported
    captures, illumos/FreeBSD) is matched by name alone (:func:`zfsmon.names.guess_devices`), never to a device
    that says it is another leaf.
    """
    named: Dict[str, List[str]] = {}
    for dev, leaf in devices.items():
        if leaf:
            named.setdefault(leaf, []).append(dev)
    out: Dict[str, List[str]] = {}
    for leaf in leaves:
        mine = named.get(leaf)
        if mine:
            cands = sorted(mine, key=lambda d: (whole_disk(d) is None, d))  # partitions first
            cands += [d for d in dict.fromkeys(whole_disk(d) for d in cands)
                      if d and d in devices and d not in cands and devices[d] in ("", leaf)]
        else:
            cands = [d for d in guess_devices(leaf, devices) if devices[d] in ("", leaf)]
        out[leaf] = cands
    return out


def judge(zfs_ops: Mapping[str, float], device_ops: Mapping[str, float],
          leaf_devices: Mapping[str, Sequence[str]], min_ops: float = 1.0,
          far_below: float = 0.1) -> List[Verdict]:
    """A verdict per leaf of ``zfs_ops`` (leaf -> ops/s in one interval).

    ``device_ops``: device name -> ops/s in the same interval (a device absent
    from an ``iostat -z`` report should be passed as 0). ``leaf_devices``: leaf ->
    candidate device names, most specific first; the first one with numbers is
    used. Leaves that land on the same device are compared together, since the
    device sees their sum. A goose egg: ZFS did at least ``min_ops`` ops/s and
    the device saw no more than ``far_below`` times that (ZFS and the block
    layer both merge adjacent I/Os, so a fraction, not equality, is the test).
    """
    decided, on_device = decide(zfs_ops, device_ops, leaf_devices, min_ops, far_below)
    return [in_words(d, on_device, leaf_devices, min_ops, far_below) for d in decided]


#: one leaf's verdict before it is put in words: (leaf, verdict, device, ZFS ops/s, device ops/s)
Decided = Tuple[str, str, Optional[str], float, Optional[float]]


def decide(zfs_ops: Mapping[str, float], device_ops: Mapping[str, float],
           leaf_devices: Mapping[str, Sequence[str]], min_ops: float, far_below: float
           ) -> Tuple[List[Decided], Dict[str, List[str]]]:
    """:func:`judge`'s rules without the sentences (a window judges tens of thousands of leaf-intervals and
    words only a few): the decisions in leaf order, and the leaves each device serves."""
    chosen: Dict[str, Optional[str]] = {}
    for leaf in zfs_ops:
        chosen[leaf] = next((d for d in leaf_devices.get(leaf, ()) if d in device_ops), None)
    per_device: Dict[str, float] = {}
    on_device: Dict[str, List[str]] = {}  # the leaves each device serves (one pass: a pool has hundreds of leaves)
    for leaf, dev in chosen.items():
        if dev is not None:
            per_device[dev] = per_device.get(dev, 0.0) + max(0.0, zfs_ops[leaf])
            on_device.setdefault(dev, []).append(leaf)
    out: List[Decided] = []
    for leaf in sorted(zfs_ops):
        dev = chosen[leaf]
        if dev is None:
            out.append((leaf, UNKNOWN, None, zfs_ops[leaf], None))
            continue
        zops, dops = per_device[dev], device_ops[dev]
        v = IDLE if zops < min_ops else GOOSE_EGG if dops <= far_below * zops else NOT_GOOSE_EGG
        out.append((leaf, v, dev, zops, dops))
    return out, on_device


def in_words(decided: Decided, on_device: Mapping[str, List[str]], leaf_devices: Mapping[str, Sequence[str]],
             min_ops: float, far_below: float) -> Verdict:
    """A decision of :func:`decide` with the sentence that gives its numbers."""
    leaf, v, dev, zops, dops = decided
    if dev is None:
        cands = ", ".join(leaf_devices.get(leaf, ())) or "none found"
        return Verdict(leaf, UNKNOWN, None, zops, None, f"no device-level numbers for {leaf} (candidates: {cands})")
    shared = [other for other in on_device[dev] if other != leaf]
    on = f"{dev}" + (f" (shared with {', '.join(sorted(shared))})" if shared else "")
    if v == IDLE:
        why = f"ZFS issued {zops:.1f} ops/s to {on}: below {min_ops:g}, nothing to judge"
    elif v == GOOSE_EGG:
        why = (f"ZFS issued {zops:.1f} ops/s to {on} but the device saw {dops:.1f} ops/s "
               f"(<= {far_below:.0%}): the device view is blind here; trust ZFS")
    else:
        why = f"ZFS issued {zops:.1f} ops/s to {on}, the device saw {dops:.1f} ops/s"
    return Verdict(leaf, v, dev, zops, dops, why)


def summarize(verdicts: Sequence[Verdict]) -> Tuple[int, int, int, int]:
    """(goose eggs, not goose eggs, idle, unknown) counts, for a one-line status."""
    counts = {GOOSE_EGG: 0, NOT_GOOSE_EGG: 0, IDLE: 0, UNKNOWN: 0}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts[GOOSE_EGG], counts[NOT_GOOSE_EGG], counts[IDLE], counts[UNKNOWN]
