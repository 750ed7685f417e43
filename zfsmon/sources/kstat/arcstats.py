"""ARC and L2ARC statistics (``arcstats``) on every platform, as ``arc`` and ``l2arc`` samples.

Where the kstat lives on Linux, FreeBSD, illumos and zfs-fuse is its row of
the kstat table (:data:`zfsmon.metrics.kstats.ARCSTATS`); the readers are
:class:`zfsmon.sources.kstat.reader.KstatReader`'s. Statistics are mapped by
presence, never by version: whatever the kernel has is exposed (``l2_*`` on
the ``l2arc`` entity without the prefix), and the metrics table says which
are counters. Samples carry cumulative values; rates and hit ratios are
:mod:`zfsmon.analysis.arc`'s job.
"""

from __future__ import annotations

from zfsmon.metrics.kstats import ARCSTATS
from zfsmon.model import Kind
from zfsmon.sources.kstat.reader import KstatReader
from zfsmon.sources.spec import Source

READER = KstatReader(ARCSTATS)
ARC, L2ARC = READER.entity, READER.split_entity
LINUX_PATH = READER.linux

parse_linux = READER.parse_linux
parse_freebsd = READER.parse_freebsd
parse_illumos = READER.parse_illumos
parse_stat_files = READER.parse_stat_files
parse_dumps = READER.parse_dumps
looks_like = READER.looks_like
check_host = READER.check_host
collector_for_host = READER.collector_for_host
LinuxArcstatsCollector = READER.linux_collector
FreeBSDArcstatsCollector = READER.freebsd_collector
IllumosArcstatsCollector = READER.illumos_collector
FuseArcstatsCollector = READER.fuse_class

SOURCE = Source(
    name="arcstats", help="ARC and L2ARC statistics", order=20, check=check_host, collector=READER.make_collector,
    kinds=(READER.text_kind("arcstats", "arcstats dumps", "arc.log"),),
    family="arc",
    feeds=(Kind.ARC, Kind.L2ARC),
)
