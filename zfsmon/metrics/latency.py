"""Per-vdev latency histograms from ``zpool iostat -w``, as interval deltas, and how to read them as histograms.

``zpool iostat -w`` prints, per pool and vdev, one row per latency bucket and
one column per (queue, operation): ``total_wait``, ``disk_wait``, ``syncq_wait``
and ``asyncq_wait`` for reads and writes, then ``scrub``, ``trim`` (0.8+) and
``rebuild`` (2.0+), whose I/O is one kind. Bucket ``j`` counts I/Os whose
latency was in [2^j, 2^(j+1)) ns; zpool labels it with its inclusive upper
end 2^(j+1)-1 ns (``1ns``, ``3ns``, ... ``1us`` = 1023 ns, ... ``137s``); the
kernel clamps longer latencies into the last bucket, so its upper end is +Inf.

The ``latency`` source (:mod:`zfsmon.sources.zpool.latency`) stores each
bucket as ``lat_<queue>[_<op>]_<label>`` = the I/Os that completed in that
bucket *during the interval* (a delta, not a rate and not since boot), so a
report can show the interval's distribution and an exporter can add the
deltas up into cumulative Prometheus buckets. :func:`histogram` turns one
(queue, op)'s bucket counts into cumulative ``le`` buckets, a count and an
ESTIMATED sum: ZFS keeps no sum of latencies, so each I/O is taken at the
midpoint of its bucket (the true sum lies between the bucket bounds' sums,
within a factor of about 1.5 either way).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Tuple

from zfsmon.metrics.spec import GAUGE, MetricSpec
from zfsmon.model import Kind

#: the bucket labels as ``zpool iostat -w`` prints them (and as zfsmon stores them), bucket 0 first
LAT_BUCKETS: Tuple[str, ...] = (
    "1ns", "3ns", "7ns", "15ns", "31ns", "63ns", "127ns", "255ns", "511ns", "1us", "2us", "4us", "8us", "16us",
    "32us", "65us", "131us", "262us", "524us", "1ms", "2ms", "4ms", "8ms", "16ms", "33ms", "67ms", "134ms",
    "268ms", "536ms", "1s", "2s", "4s", "8s", "17s", "34s", "68s", "137s",
)
_INDEX = {label: j for j, label in enumerate(LAT_BUCKETS)}
#: (metric prefix, queue, op) of each ``-w`` column; scrub/trim/rebuild I/O is one kind: op ``any``
COLUMNS: Tuple[Tuple[str, str, str], ...] = tuple(
    [(f"lat_{q}_{op}", q, op) for q in ("total_wait", "disk_wait", "syncq_wait", "asyncq_wait")
     for op in ("read", "write")]
    + [(f"lat_{q}", q, "any") for q in ("scrub", "trim", "rebuild")]
)
_PREFIXES = {p: (q, op) for p, q, op in COLUMNS}
_QUEUE_HELP = {"total_wait": "total (queued + disk)", "disk_wait": "disk", "syncq_wait": "sync-queue wait",
               "asyncq_wait": "async-queue wait", "scrub": "scrub I/O total", "trim": "trim I/O total (0.8+)",
               "rebuild": "rebuild I/O total (2.0+)"}


def upper_ns(j: int) -> int:
    """Inclusive upper end of bucket ``j`` in ns (the label's value)."""
    return (1 << (j + 1)) - 1


def lower_ns(j: int) -> int:
    return 0 if j == 0 else 1 << j


@lru_cache(maxsize=8192)
def split_metric(name: str) -> Optional[Tuple[str, str, int]]:
    """``lat_disk_wait_read_4ms`` -> (``disk_wait``, ``read``, bucket index); None for any other metric.

    Cached: a recording repeats a few hundred names, and analyze asks about every metric of every sample."""
    if not name.startswith("lat_"):
        return None
    prefix, _, label = name.rpartition("_")
    qo = _PREFIXES.get(prefix)
    j = _INDEX.get(label)
    if qo is None or j is None:
        return None
    return qo[0], qo[1], j


@dataclass(frozen=True)
class Histogram:
    """One (queue, op)'s distribution in Prometheus form: cumulative buckets by ``le`` (seconds), count, sum."""

    queue: str
    op: str
    buckets: Tuple[Tuple[float, float], ...]  # (le in seconds, cumulative count); the last le is +Inf
    count: float
    sum_seconds: float  # ESTIMATED from bucket midpoints


def histogram(queue: str, op: str, counts: Mapping[int, float]) -> Histogram:
    """Bucket index -> count (one interval's, or deltas added up) as a :class:`Histogram`.

    Buckets 0..35 are listed by their upper end (a missing one counts 0); the last bucket (2^36 ns and
    everything longer: the kernel clamps) only reaches ``+Inf``.
    """
    cum = 0.0
    total_ns = 0.0
    out: List[Tuple[float, float]] = []
    for j in range(len(LAT_BUCKETS)):
        n = float(counts.get(j, 0.0))
        cum += n
        total_ns += n * (lower_ns(j) + upper_ns(j)) / 2.0
        if j < len(LAT_BUCKETS) - 1:
            out.append((upper_ns(j) * 1e-9, cum))
    out.append((float("inf"), cum))
    return Histogram(queue, op, tuple(out), cum, total_ns * 1e-9)


def histograms(values: Mapping[str, float]) -> List[Histogram]:
    """Every (queue, op) histogram among an entity's metrics (other metrics are ignored)."""
    by: Dict[Tuple[str, str], Dict[int, float]] = {}
    for name, v in values.items():
        hit = split_metric(name)
        if hit is not None:
            by.setdefault((hit[0], hit[1]), {})[hit[2]] = v
    return [histogram(q, op, counts) for (q, op), counts in sorted(by.items())]


_SRC = {"linux": "zpool iostat -vwp INTERVAL (ZoL >= 0.7)", "freebsd": "zpool iostat -vwp INTERVAL (OpenZFS)"}

SPECS: List[MetricSpec] = [
    MetricSpec(f"{prefix}_{label}", "count", GAUGE,
               f"{_QUEUE_HELP[q]} latency{'' if op == 'any' else ' of ' + op + 's'}: I/Os completed in the "
               f"interval with latency in [{lower_ns(j)}, {upper_ns(j)}] ns"
               + (" or longer" if j == len(LAT_BUCKETS) - 1 else ""),
               (Kind.POOL, Kind.VDEV, Kind.LEAF), _SRC)
    for prefix, q, op in COLUMNS for j, label in enumerate(LAT_BUCKETS)
]
