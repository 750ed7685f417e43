"""Per-vdev latency histograms, live: one persistent ``zpool iostat -vwpy -T u [POOL...] INTERVAL``.

``-w`` prints, for the pool and every vdev and leaf, the number of I/Os per
latency bucket (1 ns .. 137 s, powers of two) for each queue and operation
(:mod:`zfsmon.metrics.latency`). With an interval zpool prints what happened
*in* each interval, per second (each bucket's count over the interval's
seconds, cut to a whole number), ``-y`` drops the since-import report and
``-p`` prints whole numbers (without it a busy bucket reads ``5.50K``); the
parser multiplies the interval back (:func:`~zfsmon.sources.zpool.iostat.histogram_counts`),
so every stored bucket is the interval's count, within the interval of I/Os
the cut loses: the recording can show the interval's distribution, the
exporter can add the counts up into cumulative Prometheus buckets (the
``zpool-influxdb`` source gives exact counts). The tables are read by :mod:`zfsmon.sources.zpool.iostat`
(:mod:`zfsmon.sources.zpool.iostat_histogram`); the vdevs' roles and parents
come from ``zpool status``, read when the child starts and every
:data:`TOPOLOGY_EVERY_S` seconds.

The histograms come every :data:`HISTOGRAM_EVERY_S` seconds, or at the
sampling interval if that is longer. They are what the analyses add up over
a window (a role's latency distribution, the exporter's cumulative buckets),
not a per-second figure (the ``zpool_iostat`` source's ``-l`` means are, every
interval), and they are most of the cost: 37 buckets x 11 columns per vdev
and interval, zeros included, so 79 % of every value a small OpenZFS 2.3 pool's
recording held at a 5 s interval, and at 1 s their child and its parsing were
the largest part of collecting every source on kernel OpenZFS
(docs/performance-journal.md, "Collection").

``-w`` came with ZoL 0.7 (OpenZFS on Linux and FreeBSD); illumos, FreeBSD's
legacy ZFS and zfs-fuse do not have it (there, the trace scripts give
latency distributions).
"""

from __future__ import annotations

import shutil
import time
from typing import List, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Kind, ParseError, Record
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.spec import Source
from zfsmon.sources.zpool.iostat import ZpoolIostatParser
from zfsmon.sources.zpool.iostat_collector import iostat_argv
from zfsmon.sources.zpool.status import read_topology

NAME = "latency"
FLAGS = ("-T", "u", "-w", "-p", "-y")
#: seconds between two reads of ``zpool status`` for the vdevs' roles
TOPOLOGY_EVERY_S = 60.0
#: ``zpool iostat -w`` exists since ZoL 0.7
SINCE = (0, 7)
#: seconds between two histogram reports at the shortest (a longer sampling interval is used as it is)
HISTOGRAM_EVERY_S = 10.0


class LatencyCollector(StreamCollector):
    """The ``-w`` child, its histograms as interval samples with roles from ``zpool status``."""

    def __init__(self, pools: Sequence[str] = (), interval: float = 5.0, zpool: str = "zpool",
                 clock: Clock = time.time, flags: Sequence[str] = FLAGS) -> None:
        self.pools = list(pools)
        self.interval = float(interval)
        self.zpool = zpool
        self.flags = list(flags)
        self._topology_at = float("-inf")
        parser = self._parser()
        super().__init__(iostat_argv(self.pools, self.interval, self.flags, zpool), parser, NAME, clock=clock)

    def _parser(self) -> ZpoolIostatParser:
        return ZpoolIostatParser(NAME, self.interval, first_since_boot="-y" not in self.flags,
                                 flags="wp", pools=self.pools)

    def _spawn(self) -> None:
        """A restarted child prints its tables from the start: a fresh parser, and the tree read again."""
        self.parser = self._parser()
        self._topology_at = float("-inf")
        self._refresh_topology()
        super()._spawn()

    def _refresh_topology(self) -> List[Record]:
        now = time.monotonic()
        if now - self._topology_at < TOPOLOGY_EVERY_S:
            return []
        self._topology_at = now
        try:
            topo = read_topology(self.pools, self.zpool)
        except (OSError, ParseError) as exc:
            return [self._error(f"{self.name}: roles from zpool status unavailable: {exc}")]
        parser = self.parser
        if isinstance(parser, ZpoolIostatParser):
            parser.topology = topo  # one reference swapped: the reader thread sees the old or the new tree
            if not self.pools:
                parser.pools = list(topo.pools)
        return []

    def poll(self) -> List[Record]:
        return self._refresh_topology() + super().poll()


def check_host(host: Host) -> Check:
    if shutil.which("zpool") is None:
        return Check(NAME, False, "no zpool command")
    v = host.openzfs_version()
    if not v or v[:2] < SINCE:
        return Check(NAME, False, f"{host.flavour} {host.zfs_version}: zpool iostat has no -w (OpenZFS/ZoL 0.7+); "
                     "`zfsmon trace vdevlat` gives latency distributions there".replace("  ", " "))
    return Check(NAME, True, f"zpool iostat {' '.join(FLAGS)} -v INTERVAL: interval deltas per vdev and queue, "
                 f"every {HISTOGRAM_EVERY_S:g} s or the interval if longer")


def histogram_interval(interval: float) -> float:
    """The seconds between histogram reports for a sampling ``interval``."""
    return max(float(interval), HISTOGRAM_EVERY_S)


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return LatencyCollector(pools, histogram_interval(interval))


def histogram_records(text: str, pools: Sequence[str] = (), topology=None, interval: Optional[float] = None,
                      since_boot_first: bool = True) -> List[Record]:
    """A saved ``zpool iostat -w`` text read as this source stores it (for tests and ``zfsmon parse``)."""
    parser = ZpoolIostatParser(NAME, interval, first_since_boot=since_boot_first, pools=pools,
                               topology=topology)
    out: List[Record] = []
    for line in text.splitlines():
        out.extend(parser.feed(line, 0.0))
    out.extend(parser.flush(0.0))
    return out


SOURCE = Source(name=NAME, help=f"per-vdev latency histograms per queue and op, interval deltas (zpool iostat -w), "
                f"every {HISTOGRAM_EVERY_S:g} s or the interval if longer",
                order=11, check=check_host, collector=_collector, family="latency",
                feeds=(Kind.POOL, Kind.VDEV, Kind.LEAF), aliases=("zpool iostat -w",))
