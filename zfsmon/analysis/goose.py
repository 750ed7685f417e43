"""Goose eggs: the device layer reports (almost) nothing while ZFS says the leaf is busy.

On virtual disks, SAN LUNs behind a caching layer, or zfs-fuse reading
through the host page cache, ``iostat`` / ``/proc/diskstats`` can show zeros
for a disk that ZFS is hammering. Then the device view is not evidence of
anything and the ZFS numbers are the truth. This module decides, per
interval and per leaf, whether that is happening, and keeps the numbers it
decided on so a user can check the verdict.

Pure: leaf names, device names and per-second rates in, verdicts out. Finding
which kernel device a leaf path is (symlinks, sysfs) is I/O and lives in
:mod:`zfsmon.sources.diskstats`; the name rules that need no file system are in
:mod:`zfsmon.names`, so captures from other machines (illumos ``c0t1d0``) can be matched too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from zfsmon.model import Kind, Sample
from zfsmon.names import is_grouping_vdev

GOOSE_EGG = "goose egg"
NOT_GOOSE_EGG = "not goose egg"
IDLE = "idle"  # ZFS did too little in the interval to judge
UNKNOWN = "unknown"  # no device-level numbers for this leaf

def device_ops_per_s(values: Mapping[str, float]) -> Optional[float]:
    """Operations per second from one device's numbers.

    Takes either an interval row's gauges (``read_ops``/``write_ops``: illumos
    ``iostat``, ``zpool iostat`` leaves) or the per-second rates
    :class:`~zfsmon.analysis.rates.RateDeriver` derived from counters
    (``reads``/``writes``: ``/proc/diskstats``). None if neither is there.
    """
    for r, w in (("read_ops", "write_ops"), ("reads", "writes")):
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
        if s.since_boot or not (s.entity.kind == Kind.LEAF
                                or (s.entity.kind == Kind.VDEV and not is_grouping_vdev(s.entity.name))):
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
    chosen: Dict[str, Optional[str]] = {}
    for leaf in zfs_ops:
        chosen[leaf] = next((d for d in leaf_devices.get(leaf, ()) if d in device_ops), None)
    per_device: Dict[str, float] = {}
    for leaf, dev in chosen.items():
        if dev is not None:
            per_device[dev] = per_device.get(dev, 0.0) + max(0.0, zfs_ops[leaf])
    out: List[Verdict] = []
    for leaf in sorted(zfs_ops):
        dev = chosen[leaf]
        if dev is None:
            cands = ", ".join(leaf_devices.get(leaf, ())) or "none found"
            out.append(Verdict(leaf, UNKNOWN, None, zfs_ops[leaf], None,
                               f"no device-level numbers for {leaf} (candidates: {cands})"))
            continue
        zops, dops = per_device[dev], device_ops[dev]
        shared = [other for other, d in chosen.items() if d == dev and other != leaf]
        on = f"{dev}" + (f" (shared with {', '.join(sorted(shared))})" if shared else "")
        if zops < min_ops:
            v, why = IDLE, f"ZFS issued {zops:.1f} ops/s to {on}: below {min_ops:g}, nothing to judge"
        elif dops <= far_below * zops:
            v, why = GOOSE_EGG, (f"ZFS issued {zops:.1f} ops/s to {on} but the device saw {dops:.1f} ops/s "
                                 f"(<= {far_below:.0%}): the device view is blind here; trust ZFS")
        else:
            v, why = NOT_GOOSE_EGG, f"ZFS issued {zops:.1f} ops/s to {on}, the device saw {dops:.1f} ops/s"
        out.append(Verdict(leaf, v, dev, zops, dops, why))
    return out


def summarize(verdicts: Sequence[Verdict]) -> Tuple[int, int, int, int]:
    """(goose eggs, not goose eggs, idle, unknown) counts, for a one-line status."""
    counts = {GOOSE_EGG: 0, NOT_GOOSE_EGG: 0, IDLE: 0, UNKNOWN: 0}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts[GOOSE_EGG], counts[NOT_GOOSE_EGG], counts[IDLE], counts[UNKNOWN]
