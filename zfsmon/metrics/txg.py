"""Transaction-group sync times from the per-pool ``txgs`` kstat, without tracing.

``/proc/spl/kstat/zfs/POOL/txgs`` is a ring of the last ``zfs_txg_history``
(100 by default) transaction groups with their times (open, quiesce, wait for
the previous sync, sync) and sizes. The ``txgs`` source
(:mod:`zfsmon.sources.kstat.txgs`) counts each committed txg once, by its number, so
a txg is never counted twice however often the ring is read and the counters
below only grow: their deltas over an interval are the txgs that completed in
it (``txgs_synced``), the time they spent syncing (``txg_sync_time_ns``; its
rate is the share of time the pool spent syncing, its delta divided by the
txgs' delta the mean sync time) and the data they carried. Counters start at 0
when zfsmon starts reading; txgs that left the ring between two reads
(more than ``zfs_txg_history`` per interval) are counted in ``txgs_unseen``.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_TXGS = "/proc/spl/kstat/zfs/POOL/txgs"
#: txgs kstat column -> counter, summed over each committed txg
COLUMN_COUNTERS = {
    "otime": "txg_open_time_ns", "qtime": "txg_quiesce_time_ns", "wtime": "txg_wait_time_ns",
    "stime": "txg_sync_time_ns", "ndirty": "txg_dirty_synced_bytes", "nread": "txg_read_synced_bytes",
    "nwritten": "txg_written_synced_bytes", "reads": "txg_reads_synced", "writes": "txg_writes_synced",
}


def _c(name: str, unit: str, help: str, column: str) -> MetricSpec:
    return MetricSpec(name, unit, COUNTER, help, (Kind.POOL,), {"linux": f"{_TXGS} {column}"})


SPECS: List[MetricSpec] = [
    _c("txgs_synced", "count", "transaction groups committed (each counted once, by txg number)", "state C"),
    _c("txgs_unseen", "count", "committed txgs that left the kstat's ring before zfsmon read them", "txg gaps"),
    _c("txg_sync_time_ns", "ns", "time spent syncing those txgs to disk (sum of stime)", "stime"),
    _c("txg_wait_time_ns", "ns", "time they waited for the previous txg's sync (sum of wtime)", "wtime"),
    _c("txg_quiesce_time_ns", "ns", "time spent quiescing them (sum of qtime)", "qtime"),
    _c("txg_open_time_ns", "ns", "time they were open for new changes (sum of otime)", "otime"),
    _c("txg_dirty_synced_bytes", "B", "dirty data they carried (sum of ndirty)", "ndirty"),
    _c("txg_written_synced_bytes", "B", "bytes written while syncing them (sum of nwritten)", "nwritten"),
    _c("txg_read_synced_bytes", "B", "bytes read while syncing them (sum of nread)", "nread"),
    _c("txg_writes_synced", "ops", "write I/Os issued while syncing them", "writes"),
    _c("txg_reads_synced", "ops", "read I/Os issued while syncing them", "reads"),
    MetricSpec("txg_committed", "count", GAUGE, "number of the newest committed transaction group", (Kind.POOL,),
               {"linux": f"{_TXGS} txg"}),
    MetricSpec("txg_sync_max_ns", "ns", GAUGE, "longest sync among the txgs committed in the interval (absent "
               "when none was)", (Kind.POOL,), {"linux": f"{_TXGS} max(stime)"}),
]
