"""The zio pipeline's global counters: the ``zio_stats`` kstat (OpenZFS 2.3.1+), on the ``zio`` entity.

Every statistic is a cumulative counter over all pools since the module
loaded. Gang writes are allocations that found no contiguous free space of
the block's size: a pool that is full or fragmented shows them first.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.metrics.spec import COUNTER, MetricSpec
from zfsmon.model import Kind


def _raw(name: str, unit: str, help: str) -> MetricSpec:
    return MetricSpec(name, unit, COUNTER, help, (Kind.ZIO,), ZIO_STATS.where(name))


SPECS: List[MetricSpec] = [
    _raw("total_allocations", "ops", "block allocations (data, metadata and ZIL blocks)"),
    _raw("alloc_class_fallbacks", "ops", "allocations that fell back to another allocation class (a full special, "
         "dedup or log class)"),
    _raw("gang_writes", "ops", "allocations that found no contiguous space and wrote a gang block"),
    _raw("gang_multilevel", "ops", "gang writes made for a gang child: gang blocks within gang blocks"),
]
