"""Vdev properties (``zpool get -p all POOL all-vdevs``, OpenZFS 2.2+): space, error counters zpool status does
not show, the fault daemon's thresholds and the on/off settings, RAIDZ/dRAID slow-disk sit-outs.

Read by the ``vdevprops`` source (:mod:`zfsmon.sources.zpool.vdev_props`). Each metric is the vdev property of
its name, on the entity kinds listed here only (the source emits nothing else): ``root-0`` is the pool, a
vdev whose parent is the pool a top-level vdev, anything below a leaf, as ``zpool status`` has them.

What the listing also holds is left to the source that already owns it, so that one value has one name:
``read_errors``, ``write_errors``, ``checksum_errors`` and ``slow_ios`` are the ``status`` source's
(metrics/health.py: every 10 s, on every platform, the same kernel counters); ``allocated`` and ``free`` are
``zpool iostat``'s ``alloc`` and ``free`` (metrics/vdev.py: every interval); the ``*_ops`` and ``*_bytes``
totals are what ``zpool iostat`` turns into rates; ``state`` is a ``vdev_state_t`` number, not health.py's
code. ``fragmentation`` is not read at all: 2.4.4 reports a per-vdev figure that is never filled in
(``vdev_prop_get`` reads ``vdev_stat.vs_fragmentation``, which only the copies ``vdev_get_stats`` makes carry;
module/zfs/vdev.c), so every vdev of the 2.4 guest says ``0%`` while ``zpool get fragmentation`` gives 10 for
the pool.

On/off properties are 1/0 gauges; a ``-`` (not set, not applicable there) is no value. A threshold that is
not set prints ``-`` (the fault daemon's default: 10 errors in 600 s on Linux) and has no value.
"""

from __future__ import annotations

from typing import Dict, List

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_CMD = "zpool get -p all POOL all-vdevs"
_TREE = (Kind.POOL, Kind.VDEV, Kind.LEAF)
_TOPS = (Kind.POOL, Kind.VDEV)
_DEVICES = (Kind.VDEV, Kind.LEAF)  # a single-disk top-level vdev is a leaf to ZFS


def _src(since: str) -> Dict[str, str]:
    return {"linux": f"{_CMD} (OpenZFS >= {since})", "freebsd": f"{_CMD} (OpenZFS >= {since})"}


def _threshold(name: str, unit: str, what: str) -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, f"the fault daemon's {what}, as set on this vdev (ZED also takes its "
                      "top-level vdev's; absent: not set, the default)", _TREE,
                      _src("2.3" if name.startswith("slow_io") else "2.2"))


SPECS: List[MetricSpec] = [
    MetricSpec("size", "B", GAUGE, "space for data (deflated: a raidz's parity left out); the pool's is its "
               "data, special and dedup vdevs', no log", _TOPS, _src("2.2")),
    MetricSpec("capacity", "%", GAUGE, "space allocated (raw) as a share of `size`", _TOPS, _src("2.2")),
    MetricSpec("trim_errors", "count", COUNTER, "TRIM I/O errors (counted on leaves; since import or `zpool "
               "clear`)", _DEVICES, _src("2.3")),
    MetricSpec("initialize_errors", "count", COUNTER, "errors writing `zpool initialize`'s pattern (counted on "
               "leaves; since import or `zpool clear`)", _DEVICES, _src("2.2")),
    _threshold("checksum_n", "count", "checksum errors that fault the vdev within `checksum_t`"),
    _threshold("checksum_t", "s", "window for `checksum_n`"),
    _threshold("io_n", "count", "I/O errors that fault the vdev within `io_t`"),
    _threshold("io_t", "s", "window for `io_n`"),
    _threshold("slow_io_n", "count", "slow I/Os that degrade the vdev within `slow_io_t`"),
    _threshold("slow_io_t", "s", "window for `slow_io_n`"),
    MetricSpec("slow_io_events", "count", GAUGE, "1 while slow I/Os post events (for ZED), 0 when turned off "
               "(they are still counted in `slow_ios`)", _TREE, _src("2.4")),
    MetricSpec("failfast", "count", GAUGE, "1 while block-device errors are passed to ZFS at once (failfast), 0 "
               "when turned off", _TREE, _src("2.2")),
    MetricSpec("allocating", "count", GAUGE, "1 while the top-level vdev takes new allocations, 0 when turned "
               "off (before a `zpool remove`)", (Kind.VDEV,), _src("2.2")),
    MetricSpec("trim_support", "count", GAUGE, "1 when the device supports TRIM, else 0", _DEVICES, _src("2.3")),
    MetricSpec("sit_out", "count", GAUGE, "1 while a RAIDZ/dRAID leaf sits out reads (a slow outlier, or set by "
               "hand): its data is rebuilt from parity", (Kind.LEAF,), _src("2.4")),
    MetricSpec("autosit", "count", GAUGE, "1 when the RAIDZ/dRAID vdev makes slow outlier leaves sit out by "
               "itself, else 0", (Kind.VDEV,), _src("2.4")),
]
