"""The ``zpool-influxdb`` source: one persistent ``zpool_influxdb --execd [POOL]`` child, read as the zpool source.

``--execd`` makes zpool_influxdb print one pass over the pools each time a
newline arrives on its stdin (EOF ends it), flushing its stdout after the
pass; the collector writes one newline per interval. The lines of one pool
end with its root queue line (:data:`~zfsmon.sources.zpool.influxdb.END_WITH_HISTOGRAMS`),
which is what this source takes as that pool's sample being complete: no
time-out and no wait for the next pass. Each pool's samples are the
difference to its previous pass (:func:`~zfsmon.sources.zpool.influxdb.derive`):
the same entities, metric names and units as the ``zpool`` source, and every
:func:`~zfsmon.sources.zpool.latency.histogram_interval` seconds the latency
histograms' deltas in the form of the ``latency`` source. Roles, parents and
names come from ``zpool status``, read at start, every
:data:`TOPOLOGY_EVERY_S` seconds and when a pool's vdevs change.

It is started only when named (``zfsmon record zpool-influxdb``): it has no
cache (L2ARC) or spare devices, and queues only for the pool as a whole, so
on a pool with an L2ARC the ``zpool`` source stays the default
(docs/sources.md).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Callable, Dict, List, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Kind, ParseError, Record
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector, StreamParser
from zfsmon.sources.spec import Source
from zfsmon.sources.zpool.influxdb import (
    InfluxParser,
    PoolSnapshot,
    derive,
    entities,
    histogram_delta,
    latency_sample,
)
from zfsmon.sources.zpool.iostat_collector import topology_or_error
from zfsmon.sources.zpool.latency import histogram_interval
from zfsmon.sources.zpool.status import Topology

__all__ = ["InfluxdbCollector", "InfluxStreamParser", "find_binary", "influx_argv", "NAME", "SOURCE"]

NAME = "zpool-influxdb"
#: where Debian's zfsutils-linux installs it (not on PATH); then PATH
PATHS = ("/usr/lib/zfs-linux/zpool_influxdb",)
#: seconds between two reads of ``zpool status`` for the vdevs' roles (also read when a pool's vdevs change)
TOPOLOGY_EVERY_S = 60.0


def find_binary() -> Optional[str]:
    """The zpool_influxdb program: Debian's place, else on PATH; None if neither."""
    for path in PATHS:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("zpool_influxdb")


def influx_argv(binary: str, pools: Sequence[str] = ()) -> List[str]:
    """``zpool_influxdb --execd [POOL]``: it takes one pool name or none (every pool; several pools are picked
    from every pool's lines by the parser)."""
    return [binary, "--execd", *(pools if len(pools) == 1 else ())]


class InfluxStreamParser(StreamParser):
    """Lines of the execd child -> samples, per pool the difference to that pool's previous pass."""

    def __init__(self, source: str = NAME, histogram_every: float = 10.0,
                 topology: Optional[Callable[[str], Optional[Topology]]] = None, pools: Sequence[str] = ()) -> None:
        self.source = source
        self.pools = set(pools)
        self.lines = InfluxParser(source, sizes=False)
        self.histogram_every = histogram_every
        self.topology_of = topology
        self._topologies: Dict[str, Optional[Topology]] = {}
        self._prev: Dict[str, PoolSnapshot] = {}
        self._hist_base: Dict[str, PoolSnapshot] = {}

    def forget_topology(self) -> None:
        """Read ``zpool status`` again at the next pass of each pool."""
        self._topologies.clear()

    def _topology(self, snap: PoolSnapshot, changed: bool) -> Optional[Topology]:
        if self.topology_of is None:
            return None
        if changed or snap.pool not in self._topologies:
            self._topologies[snap.pool] = self.topology_of(snap.pool)
        return self._topologies[snap.pool]

    def feed(self, line: str, ts: float) -> List[Record]:
        snap = self.lines.feed(line)
        if snap is None:
            return []
        return self.samples(snap)

    def samples(self, snap: PoolSnapshot) -> List[Record]:
        """A pool's complete pass: its interval samples, and its histogram samples when they are due."""
        if self.pools and snap.pool not in self.pools:
            return []
        prev = self._prev.get(snap.pool)
        self._prev[snap.pool] = snap
        changed = prev is not None and list(prev.vdevs) != list(snap.vdevs)
        topo = self._topology(snap, changed)
        if prev is None:
            self._hist_base[snap.pool] = snap
            return []
        out: List[Record] = list(derive(snap, prev, topo, self.source))
        base = self._hist_base.get(snap.pool, prev)
        if changed:
            self._hist_base[snap.pool] = snap  # a vdev added or removed: its histograms start over
        elif (snap.ts_ns - base.ts_ns) / 1e9 >= self.histogram_every - 0.5:
            self._hist_base[snap.pool] = snap
            ents = entities(snap, topo)
            dt = (snap.ts_ns - base.ts_ns) / 1e9
            for tag, v in snap.vdevs.items():
                old = base.vdevs.get(tag)
                if old is not None:
                    s = latency_sample(ents[tag], snap.ts, dt, histogram_delta(v, old, dense=True), self.source)
                    if s is not None:
                        out.append(s)
        return out

    def flush(self, ts: float) -> List[Record]:
        unfinished = self.lines.flush()
        if unfinished is not None:
            raise ParseError(self.source, self.lines.line_no, f"pool {unfinished}: the child ended in its lines")
        return []


class InfluxdbCollector(StreamCollector):
    """One ``zpool_influxdb --execd [POOL]`` child asked for a pass every ``interval`` seconds.

    ``binary``: the program (default: :func:`find_binary`). A restarted child
    starts its pools over (its first pass is a baseline, no samples).
    """

    stdin_pipe = True

    def __init__(self, pools: Sequence[str] = (), interval: float = 5.0, binary: Optional[str] = None,
                 zpool: str = "zpool", clock: Clock = time.time, roles_from_status: bool = True) -> None:
        self.pools = list(pools)
        self.interval = float(interval)
        self.zpool = zpool
        self.binary = binary or find_binary() or "zpool_influxdb"
        self.roles_from_status = roles_from_status
        self._topology_at = float("-inf")
        self._next_request = 0.0
        super().__init__(influx_argv(self.binary, self.pools), self._parser(), NAME, clock=clock)
        # one pass per request: silence for several intervals means a hung child (replaced, see StreamCollector)
        self.hang_after = max(5 * self.interval, 10.0)

    def _parser(self) -> InfluxStreamParser:
        return InfluxStreamParser(NAME, histogram_interval(self.interval),
                                  self._status if self.roles_from_status else None, self.pools)

    def _status(self, pool: str) -> Optional[Topology]:
        return topology_or_error(self, pool, self.zpool)

    def _spawn(self) -> None:
        """A (re)started child: a fresh parser (the new child's first pass is a baseline), a pass asked at once."""
        self.parser = self._parser()
        self._topology_at = time.monotonic()
        super()._spawn()
        self._next_request = 0.0
        self._request()

    def _request(self) -> None:
        """One newline to the child when a pass is due (a child that went away is the reader's to report)."""
        now = time.monotonic()
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None or now < self._next_request:
            return
        self._next_request = (now if self._next_request == 0.0 else self._next_request) + self.interval
        if self._next_request < now:  # polls came late: the next one an interval from now, no burst
            self._next_request = now + self.interval
        try:
            proc.stdin.write("\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def poll(self) -> List[Record]:
        if time.monotonic() - self._topology_at >= TOPOLOGY_EVERY_S:
            self._topology_at = time.monotonic()
            parser = self.parser
            if isinstance(parser, InfluxStreamParser):
                parser.forget_topology()
        self._request()
        return super().poll()

    def stop(self) -> None:
        """EOF on its stdin ends an execd child by itself; the process group is stopped all the same."""
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        super().stop()


# --- the source -------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: where zpool_influxdb is, and what it does not give."""
    binary = find_binary()
    if binary is None:
        return Check(NAME, False, "no zpool_influxdb (OpenZFS 2.1+ ships it; Debian: zfsutils-linux)")
    return Check(NAME, True, f"{binary} --execd (only when named: no cache/spare devices, pool-level queues)")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return InfluxdbCollector(pools=pools, interval=interval)


SOURCE = Source(
    name=NAME, help="the zpool source's samples and the latency histograms from one zpool_influxdb --execd "
    "child (no cache/spare devices; only when named)", order=10, check=check_host, collector=_collector,
    family="vdev", feeds=(Kind.POOL, Kind.VDEV, Kind.LEAF), default=False,
)
