"""The zio pipeline's global counters: the ``zio_stats`` kstat (OpenZFS 2.3.1+), on the ``zio`` entity.

The row (:data:`zfsmon.metrics.kstats.ZIO_STATS`) declares the statistics, so
their units, kinds and meanings live there once. Gang writes are allocations
that found no contiguous free space of the block's size: a full or
fragmented pool shows them first.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.metrics.spec import MetricSpec

SPECS: List[MetricSpec] = ZIO_STATS.specs()
