"""Per-pool / per-vdev / per-leaf metrics, as ``zpool iostat`` reports them.

Every value is what one ``zpool iostat`` row says: an average over the
interval that ZFS itself computed (ops/s, B/s, average waits) or a level
(alloc, free, queue depths), so all are GAUGE.  A ``-`` in the output means
"no value" and the metric is simply absent from the sample, never 0.

Histograms (``-r`` request sizes, ``-w`` latencies) are flattened into one
metric per (class, bucket): ``rq_<class>_<ind|agg>_<bucket>`` (bucket = the
lower-case size label, ``512`` .. ``16m``) and ``lat_<column>_<read|write>_<bucket>``
(bucket = the time label, ``1ns`` .. ``137s``), carried in the same Sample
stream as the entity's other metrics.  We chose flat names over a separate
histogram record because recordings, CSV export and Prometheus all handle
plain name -> number maps already, and a bucket is a stable name (ZFS's
buckets are fixed powers of two).  Bucket values are I/O counts in the
interval (since import for the first report), not rates.  The request-size
buckets are listed in the table below; latency buckets are not (no ``-w``
capture is among the shared fixtures to pin their labels down), so they read
as unlisted gauges.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import GAUGE, MetricSpec
from zfsmon.model import Kind

_ALL = (Kind.POOL, Kind.VDEV, Kind.LEAF)
_IOSTAT = "zpool iostat -v"
_ANY = {"any": _IOSTAT}
_LAT = {"illumos": "-", "freebsd": "zpool iostat -l (OpenZFS >= 0.7)", "linux": "zpool iostat -l (ZoL >= 0.7)"}
_QUEUE = {"illumos": "-", "freebsd": "zpool iostat -q (OpenZFS >= 0.7)", "linux": "zpool iostat -q (ZoL >= 0.7)"}
_HISTO = {"illumos": "-", "freebsd": "zpool iostat -r", "linux": "zpool iostat -r (ZoL >= 0.7)"}

SPECS: List[MetricSpec] = [
    MetricSpec("alloc", "B", GAUGE, "space allocated (top-level vdevs and pools only; `used` in old ZFS)",
               (Kind.POOL, Kind.VDEV), _ANY),
    MetricSpec("free", "B", GAUGE, "space free (top-level vdevs and pools only; `avail` in old ZFS)",
               (Kind.POOL, Kind.VDEV), _ANY),
    MetricSpec("read_ops", "ops/s", GAUGE, "read operations per second issued to this vdev", _ALL, _ANY),
    MetricSpec("write_ops", "ops/s", GAUGE, "write operations per second issued to this vdev", _ALL, _ANY),
    MetricSpec("read_bw", "B/s", GAUGE, "bytes read per second", _ALL, _ANY),
    MetricSpec("write_bw", "B/s", GAUGE, "bytes written per second", _ALL, _ANY),
]

_WAITS = (
    ("total_wait", "average total I/O time (queued + disk)"),
    ("disk_wait", "average disk I/O time (time reading/writing the disk)"),
    ("syncq_wait", "average time in the sync priority queue (not yet issued)"),
    ("asyncq_wait", "average time in the async priority queue (not yet issued)"),
)
for _name, _help in _WAITS:
    for _dir in ("read", "write"):
        SPECS.append(MetricSpec(f"{_name}_{_dir}", "ns", GAUGE, f"{_help}, {_dir}s", _ALL, _LAT))
for _name, _what in (("scrub", "scrub"), ("trim", "trim (OpenZFS >= 0.8)"), ("rebuild", "rebuild (OpenZFS >= 2.0)")):
    SPECS.append(MetricSpec(f"{_name}_wait", "ns", GAUGE, f"average wait of {_what} I/O (queued + disk)", _ALL, _LAT))

_QUEUES = ("syncq_read", "syncq_write", "asyncq_read", "asyncq_write", "scrubq_read", "trimq_write",
           "rebuildq_write")
for _q in _QUEUES:
    SPECS.append(MetricSpec(f"{_q}_pend", "count", GAUGE, f"I/Os waiting in the {_q} queue", _ALL, _QUEUE))
    SPECS.append(MetricSpec(f"{_q}_activ", "count", GAUGE, f"I/Os of the {_q} queue being serviced by the disk",
                            _ALL, _QUEUE))

#: request-size classes of ``zpool iostat -r`` (trim >= 0.8, rebuild >= 2.0)
RQ_CLASSES = ("sync_read", "sync_write", "async_read", "async_write", "scrub", "trim", "rebuild")
#: its buckets: 512 B .. 16 MiB, labelled as zfs_nicenum prints them, lower-cased
RQ_BUCKETS = tuple(["512"] + [f"{1 << (i % 10)}{'kmg'[i // 10]}" for i in range(0, 25 - 10)])

for _cls in RQ_CLASSES:
    for _agg, _meaning in (("ind", "individual"), ("agg", "aggregated")):
        for _b in RQ_BUCKETS:
            SPECS.append(MetricSpec(f"rq_{_cls}_{_agg}_{_b}", "count", GAUGE,
                                    f"{_meaning} {_cls} I/Os of size bucket {_b} in the interval",
                                    _ALL, _HISTO))
