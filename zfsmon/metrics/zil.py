"""ZIL (ZFS intent log) metrics: the global ``zil`` kstat and what zfsmon derives from it.

The kstat's statistics are named ``zil_*``; on the ``zil`` entity the prefix
is dropped (``zil_commit_count`` -> ``commit_count``), as ``l2_`` is for the
L2ARC. ZoL 0.7 had 13 statistics; OpenZFS 2.3 has 20 (``commit_error``/
``stall``/``suspend`` counts and the ``metaslab_*_write``/``_alloc`` bytes); 2.4 has 21 (``commit_crash``).
Every statistic of this kstat is a cumulative counter. zfs-fuse (pool v23)
has no ZIL kstat at all.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.kstats import ZIL as ZIL_KSTAT
from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_ZIL = (Kind.ZIL,)


def _raw(name: str, unit: str, help: str) -> MetricSpec:
    k = f"zil_{name}"
    return MetricSpec(name, unit, COUNTER, help, _ZIL, ZIL_KSTAT.where(k))


def _derived(name: str, unit: str, help: str) -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, help, _ZIL)


RAW: List[MetricSpec] = [
    _raw("commit_count", "ops", "zil_commit() calls (fsync, O_SYNC writes, sync=always)"),
    _raw("commit_writer_count", "ops", "commits that wrote log blocks themselves (the rest waited on one)"),
    _raw("commit_error_count", "ops", "commits that fell back to txg sync after a ZIL error (2.3+)"),
    _raw("commit_stall_count", "ops", "commits that stalled waiting for a txg (2.3+)"),
    _raw("commit_suspend_count", "ops", "commits while the ZIL was suspended (2.3+)"),
    _raw("commit_crash_count", "ops", "commits that bypassed a crashed ZIL and waited for a txg sync (2.4+)"),
    _raw("itx_count", "ops", "intent-log transactions created"),
    _raw("itx_indirect_count", "ops", "write itxs logged by reference (data written in place)"),
    _raw("itx_indirect_bytes", "B", "bytes of indirect write itxs"),
    _raw("itx_copied_count", "ops", "write itxs whose data was copied into the itx"),
    _raw("itx_copied_bytes", "B", "bytes of copied write itxs"),
    _raw("itx_needcopy_count", "ops", "write itxs whose data is copied at commit time"),
    _raw("itx_needcopy_bytes", "B", "bytes of needcopy write itxs"),
    _raw("itx_metaslab_normal_count", "ops", "log blocks written to the main pool (no SLOG used)"),
    _raw("itx_metaslab_normal_bytes", "B", "log bytes written to the main pool"),
    _raw("itx_metaslab_normal_write", "B", "bytes of log blocks written to the main pool (2.3+)"),
    _raw("itx_metaslab_normal_alloc", "B", "bytes allocated for log blocks in the main pool (2.3+)"),
    _raw("itx_metaslab_slog_count", "ops", "log blocks written to a SLOG device"),
    _raw("itx_metaslab_slog_bytes", "B", "log bytes written to a SLOG device"),
    _raw("itx_metaslab_slog_write", "B", "bytes of log blocks written to a SLOG (2.3+)"),
    _raw("itx_metaslab_slog_alloc", "B", "bytes allocated for log blocks on a SLOG (2.3+)"),
]

DERIVED: List[MetricSpec] = [
    _derived("commits_per_s", "ops/s", "ZIL commits per second"),
    _derived("commit_writers_per_s", "ops/s", "ZIL commits that wrote log blocks, per second"),
    _derived("commit_errors_per_s", "ops/s", "ZIL commit errors per second (2.3+)"),
    _derived("commit_stalls_per_s", "ops/s", "ZIL commit stalls per second (2.3+)"),
    _derived("itx_per_s", "ops/s", "intent-log transactions per second"),
    _derived("itx_bytes_per_s", "B/s", "write-itx bytes per second (indirect + copied + needcopy)"),
    _derived("slog_itx_per_s", "ops/s", "log blocks written to a SLOG per second"),
    _derived("slog_bytes_per_s", "B/s", "log bytes written to a SLOG per second"),
    _derived("normal_itx_per_s", "ops/s", "log blocks written to the main pool per second"),
    _derived("normal_bytes_per_s", "B/s", "log bytes written to the main pool per second"),
    _derived("slog_pct", "%", "share of log blocks that went to a SLOG"),
]

SPECS: List[MetricSpec] = RAW + DERIVED
