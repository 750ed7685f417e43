"""The zio pipeline's global counters (``zio_stats``, OpenZFS 2.3.1+): block allocations and gang writes.

Where the kstat lives is its row of the kstat table
(:data:`zfsmon.metrics.kstats.ZIO_STATS`), and the readers are
:class:`zfsmon.sources.kstat.reader.KstatReader`'s: one ``zio`` sample per
reading, the statistics under their kernel names, over all pools.
"""

from __future__ import annotations

from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.model import Kind
from zfsmon.sources.kstat.reader import KstatReader
from zfsmon.sources.spec import Source

READER = KstatReader(ZIO_STATS)

SOURCE = Source(name="zio_stats", help="block allocations, allocation-class fallbacks and gang writes (zio_stats "
                "kstat, OpenZFS 2.3.1+)", order=45, check=READER.check_host, collector=READER.make_collector,
                kinds=(READER.text_kind("zio-kstat", "zio_stats kstat dumps", "zio.log"),),
                family="zio", feeds=(Kind.ZIO,))
