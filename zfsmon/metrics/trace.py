"""Trace metrics: what the D/bpftrace scripts measure, per interval, on ``trace`` entities.

Every value describes one script interval (``Sample.interval`` seconds), so all
are gauges. A latency op (``read``, ``write``, ``commit``, ``sync``, ...) has a
count, a rate, bytes and percentiles computed from the script's explicit
histogram buckets; the buckets themselves are stored as ``<op>_hist_<lo>``
(count of ops with ``lo <= latency < next bucket``, ns), so replays can redraw
the histogram. Event counts (ARC hits by kind, commits, fsstat-like ops) keep
the names the scripts give them. See docs/tracing.md.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import GAUGE, MetricSpec
from zfsmon.model import Kind

_T = (Kind.TRACE,)

#: latency ops and the scripts that measure them
OPS = {
    "read": "blklat/fusevdevlat/vdevlat.d (device), zfsslower (filesystem)",
    "write": "blklat/fusevdevlat/vdevlat.d (device), zfsslower (filesystem)",
    "flush": "blklat (cache flush requests), fusevdevlat (fsync/fdatasync)",
    "discard": "blklat (discard/TRIM requests)",
    "other": "blklat (requests that are neither read, write, flush nor discard)",
    "commit": "zil (zil_commit)",
    "slog_write": "zil.d (writes to log devices)",
    "sync": "txg (spa_sync)",
}

_PLATFORMS = {"linux": "bpftrace/*.bt", "zfs-fuse": "bpftrace/fusevdevlat.bt, blklat.bt",
              "illumos": "dtrace/*.d", "freebsd": "dtrace/*.d (where probes allow)"}


def _lat(op: str, where: str) -> List[MetricSpec]:
    src = dict(_PLATFORMS)
    return [
        MetricSpec(f"{op}_ops", "count", GAUGE, f"{op} operations completed in the interval ({where})", _T, src),
        MetricSpec(f"{op}_ops_s", "ops/s", GAUGE, f"{op} operations per second over the interval", _T, src),
        MetricSpec(f"{op}_bytes", "B", GAUGE, f"bytes moved by {op} operations in the interval", _T, src),
        MetricSpec(f"{op}_lat_mean_ns", "ns", GAUGE, f"mean {op} latency (exact: sum / count)", _T, src),
        MetricSpec(f"{op}_lat_p50_ns", "ns", GAUGE, f"median {op} latency (from histogram buckets)", _T, src),
        MetricSpec(f"{op}_lat_p95_ns", "ns", GAUGE, f"95th percentile {op} latency (from buckets)", _T, src),
        MetricSpec(f"{op}_lat_p99_ns", "ns", GAUGE, f"99th percentile {op} latency (from buckets)", _T, src),
        MetricSpec(f"{op}_lat_max_ns", "ns", GAUGE, f"longest {op} in the interval (exact)", _T, src),
    ]


def _count(name: str, help: str, src: str) -> MetricSpec:
    return MetricSpec(name, "count", GAUGE, help + " in the interval", _T, {"any": src})


_ARC = [
    _count(f"{how}_{what}_{res}", f"ARC {res} of {how} {what} reads", "arc.d sdt:zfs::arc-hit/miss; "
           "arc.bt zfs:zfs_arc__hit/miss")
    for how in ("demand", "prefetch") for what in ("data", "metadata") for res in ("hits", "misses")
]

SPECS: List[MetricSpec] = [spec for op, where in OPS.items() for spec in _lat(op, where)] + _ARC + [
    _count("hits", "L2ARC hits (entity l2arc)", "l2arc-hit / zfs_l2arc__hit"),
    _count("misses", "L2ARC misses (entity l2arc)", "l2arc-miss / zfs_l2arc__miss"),
    _count("feed_writes", "L2ARC feed writes (entity l2arc)", "l2arc-write / zfs_l2arc__write"),
    MetricSpec("feed_bytes", "B", GAUGE, "bytes the L2ARC feed wrote in the interval (entity l2arc)", _T,
               {"any": "l2arc-write zio size"}),
    _count("commits", "zil_commit() calls (ZIL commits)", "zil.d / zil.bt"),
    _count("txgs", "transaction groups synced (spa_sync)", "txg.d / txg.bt"),
    _count("errors", "failed vdev syscalls of zfs-fuse", "fusevdevlat.bt"),
] + [
    _count(f"op_{op}", f"ZFS {op} operations on the filesystem (fsstat-like)", "zfsslower.d fsinfo; zfsslower.bt")
    for op in ("read", "write", "open", "close", "fsync", "readdir", "lookup", "getattr", "setattr", "create",
               "remove")
]
