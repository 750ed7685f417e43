"""The global ZIL kstat (``zil``): commits and intent-log transactions, as one ``zil`` sample.

Where it lives on Linux, illumos and FreeBSD (zfs-fuse has none) is its
row of the kstat table (:data:`zfsmon.metrics.kstats.ZIL`); the readers are
:class:`zfsmon.sources.kstat.reader.KstatReader`'s. Statistic names lose
their ``zil_`` prefix on the ``zil`` entity. ZoL 0.7 has 13 statistics,
OpenZFS 2.3 has 20, 2.4 has 21; all read the same way. Per-dataset ZIL counters
(``objset-*`` kstats, 2.x) belong to the dataset reader, not here.
"""

from __future__ import annotations

from zfsmon.metrics.kstats import ZIL as ZIL_KSTAT
from zfsmon.model import Kind
from zfsmon.sources.kstat.reader import KstatReader
from zfsmon.sources.spec import Source

READER = KstatReader(ZIL_KSTAT)
ZIL = READER.entity
LINUX_PATH = READER.linux

parse_linux = READER.parse_linux
parse_freebsd = READER.parse_freebsd
parse_illumos = READER.parse_illumos
parse_dumps = READER.parse_dumps
looks_like = READER.looks_like
check_host = READER.check_host
collector_for_host = READER.collector_for_host
LinuxZilCollector = READER.linux_collector
FreeBSDZilCollector = READER.freebsd_collector
IllumosZilCollector = READER.illumos_collector

SOURCE = Source(name="zil", help="ZIL commit and itx statistics", order=40, check=check_host,
                collector=READER.make_collector,
                kinds=(READER.text_kind("zil-kstat", "zil kstat dumps", "zil.log"),),
                family="zil", feeds=(Kind.ZIL,))
