"""The whole run at a glance: a few series in coarse buckets, for the dashboard's timeline panel.

TPS (pgbench; fio's IOPS when there is no pgbench), L2ARC hit % and size, and
the reads of the pools' data vdevs, each summed into buckets of ``every``
seconds (aligned to multiples of ``every`` in epoch time, as
:mod:`zfsmon.analysis.downsample` aligns its buckets); when a run outgrows
:data:`MAX_BUCKETS`, ``every`` doubles and neighbouring buckets merge, so
memory and drawing stay the same for a minute as for a day. Run boundaries
and marks are kept beside them.

Two ways in, one shape: live, :meth:`Timeline.feed` takes the records as the
dashboard receives them (a few additions per record, no file read, so it works
with ``--no-record`` too); replay, :func:`read_timeline` reads the recording's
few streams that matter through the store's reader and
:func:`zfsmon.analysis.downsample.downsample` once, in a worker thread.
:attr:`Timeline.version` changes only when a bucket closes, the buckets merge
or an event arrives: the panel is redrawn only then (or when the cursor moves).
"""

from __future__ import annotations

import bisect
import math
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis.downsample import Bucket, downsample
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Role, Sample
from zfsmon.store import Recording

#: buckets held at most (the panel is at most ~200 cells wide: enough to draw every cell from its own bucket)
MAX_BUCKETS = 256
#: events shown on the timeline's axis
EVENT_KINDS = (EventKind.RUN_START, EventKind.RUN_END, EventKind.MARK)
#: series: (name, label, unit for fmt.num, fixed scale or None)
ROWS: Tuple[Tuple[str, str, str, Optional[Tuple[float, float]]], ...] = (
    ("tps", "TPS", "x", None), ("iops", "fio IOPS", "x", None), ("l2_hit", "L2 hit %", "%", (0.0, 100.0)),
    ("l2_size", "L2 size", "B", None), ("reads", "data reads", "ops", None))
MAX_EVENTS = 2000


def is_data_vdev(e: Entity) -> bool:
    return e.kind == Kind.VDEV and e.role == Role.DATA


class Timeline:
    """Buckets of sums: ``{index: {part: [sum, n]}}``, ``index = ts // every``."""

    def __init__(self, every: float = 1.0, max_buckets: int = MAX_BUCKETS) -> None:
        self.every = float(every)
        self.max_buckets = max_buckets
        self.buckets: Dict[int, Dict[str, List[float]]] = {}
        self.events: List[Event] = []
        self.first: Optional[float] = None
        self.last: Optional[float] = None
        self.version = 0
        self._open: Optional[int] = None  # the newest bucket (live: still filling, not drawn)
        self._l2: Optional[Tuple[float, float]] = None  # the previous L2ARC (hits, misses) counters

    # ------------------------------------------------------------------------------------------ filling
    def add(self, ts: float, part: str, total: float, n: float = 1.0) -> None:
        i = int(ts // self.every)
        b = self.buckets.get(i)
        if b is None:
            b = self.buckets[i] = {}
            if self._open is None or i > self._open:
                self._open = i
                self.version += 1  # the bucket before it is complete
            if len(self.buckets) > 1 and max(self.buckets) - min(self.buckets) >= self.max_buckets:
                self._coarsen()
                i = int(ts // self.every)
                b = self.buckets.setdefault(i, {})
        acc = b.get(part)
        if acc is None:
            b[part] = [total, n]
        else:
            acc[0] += total
            acc[1] += n
        self.first = ts if self.first is None else min(self.first, ts)
        self.last = ts if self.last is None else max(self.last, ts)

    def _coarsen(self) -> None:
        while self.buckets and max(self.buckets) - min(self.buckets) >= self.max_buckets:
            self.every *= 2
            merged: Dict[int, Dict[str, List[float]]] = {}
            for i, b in self.buckets.items():
                m = merged.setdefault(i // 2, {})
                for part, (t, n) in b.items():
                    acc = m.get(part)
                    if acc is None:
                        m[part] = [t, n]
                    else:
                        acc[0] += t
                        acc[1] += n
            self.buckets = merged
            self._open = max(merged) if merged else None
        self.version += 1

    def event(self, ev: Event) -> None:
        if ev.kind in EVENT_KINDS:
            self.events.append(ev)
            del self.events[:-MAX_EVENTS]
            self.version += 1

    def feed(self, records: Iterable[Record]) -> None:
        """Live: the records as the dashboard receives them (the same the recorder writes)."""
        for r in records:
            if isinstance(r, Event):
                self.event(r)
                continue
            if r.since_boot:
                continue
            e, m = r.entity, r.metrics
            if e.kind == Kind.WORKLOAD:
                if e.name == names.PGBENCH and "tps" in m:
                    self.add(r.ts, "tps", m["tps"])
                elif names.fio_job_direction(e.name) is not None and "ios" in m:
                    self.add(r.ts, "fio_ios", m["ios"])
            elif e.kind == Kind.L2ARC:
                self._l2_sample(r)
            elif is_data_vdev(e) and "read_ops" in m:
                self.add(r.ts, f"reads:{e.key}", m["read_ops"])

    def _l2_sample(self, s: Sample) -> None:
        m = s.metrics
        size = m.get("asize", m.get("size"))
        if size is not None:
            self.add(s.ts, "l2_size", size)
        if "hits" in m and "misses" in m:
            now = (m["hits"], m["misses"])
            prev, self._l2 = self._l2, now
            if prev is not None and now[0] >= prev[0] and now[1] >= prev[1]:  # a reset costs one interval
                self.add(s.ts, "l2_hits", now[0] - prev[0], 0.0)
                self.add(s.ts, "l2_misses", now[1] - prev[1], 0.0)

    def add_bucket(self, b: Bucket) -> None:
        """Replay: one entity's downsampled bucket (at this timeline's ``every``)."""
        e, ts = b.entity, b.ts
        if e.kind == Kind.WORKLOAD:
            g = b.gauges.get("tps") if e.name == names.PGBENCH else None
            if g is not None:
                self.add(ts, "tps", g.total, g.n)
            g = b.gauges.get("ios") if names.fio_job_direction(e.name) is not None else None
            if g is not None:
                self.add(ts, "fio_ios", g.total, g.n)
        elif e.kind == Kind.L2ARC:
            g = b.gauges.get("asize", b.gauges.get("size"))
            if g is not None:
                self.add(ts, "l2_size", g.total, g.n)
            h, mi = b.counters.get("hits"), b.counters.get("misses")
            if h is not None and mi is not None and h.has_delta and mi.has_delta:
                self.add(ts, "l2_hits", h.delta, 0.0)
                self.add(ts, "l2_misses", mi.delta, 0.0)
        elif is_data_vdev(e):
            g = b.gauges.get("read_ops")
            if g is not None:
                self.add(ts, f"reads:{e.key}", g.total, g.n)

    # ------------------------------------------------------------------------------------------ reading
    def span(self) -> Optional[Tuple[float, float]]:
        """[start, end) of the buckets there are (live: the filling one left out)."""
        if not self.buckets:
            return None
        hi = max(self.buckets) + 1
        return min(self.buckets) * self.every, hi * self.every

    def series(self, name: str, closed_only: bool = False) -> List[Tuple[int, float]]:
        """(bucket index, value) of one of :data:`ROWS`' series."""
        out: List[Tuple[int, float]] = []
        for i in sorted(self.buckets):
            if closed_only and i == self._open:
                continue
            v = value(self.buckets[i], name, self.every)
            if v is not None:
                out.append((i, v))
        return out


def value(b: Dict[str, List[float]], name: str, every: float) -> Optional[float]:
    """A bucket's value of a series: TPS and L2 size averaged, fio IOPS as its I/Os over the bucket's seconds,
    L2 hit % of the bucket's hits and misses, data reads the sum over data vdevs of each one's average ops/s."""
    if name in ("tps", "l2_size"):
        acc = b.get(name)
        return acc[0] / acc[1] if acc and acc[1] else None
    if name == "iops":
        acc = b.get("fio_ios")
        return acc[0] / every if acc else None
    if name == "l2_hit":
        h, m = b.get("l2_hits"), b.get("l2_misses")
        if h is None or m is None or h[0] + m[0] <= 0:
            return None
        return 100.0 * h[0] / (h[0] + m[0])
    if name == "reads":
        parts = [acc[0] / acc[1] for part, acc in b.items() if part.startswith("reads:") and acc[1]]
        return sum(parts) if parts else None
    raise KeyError(name)


def every_for(span_s: float, max_buckets: int = MAX_BUCKETS) -> float:
    """The bucket width a run of ``span_s`` seconds gets: a power of two seconds (as live doubling makes)."""
    need = max(span_s, 1.0) / (max_buckets - 1)
    return float(2 ** max(0, math.ceil(math.log2(need))))


def read_timeline(path: str, max_buckets: int = MAX_BUCKETS) -> Timeline:
    """Replay: the whole recording's timeline from a downsampled read of only the streams it draws.

    Opens its own :class:`Recording` (the caller runs this in a worker thread: a connection is not shared)."""
    with Recording.open(path) as rec:
        rng = rec.time_range()
        tl = Timeline(every_for(rng[1] - rng[0] if rng else 1.0, max_buckets), max_buckets)
        if rng is None:
            return tl
        keys = [e.key for e in rec.entities() if is_data_vdev(e) or e.kind == Kind.L2ARC or (
            e.kind == Kind.WORKLOAD and (e.name == names.PGBENCH or names.fio_job_direction(e.name) is not None))]
        if keys:
            for b in downsample(rec.samples(entity_keys=keys), tl.every):
                tl.add_bucket(b)
        for ev in rec.events(kinds=EVENT_KINDS):
            tl.event(ev)
        tl._open = None  # a recording's buckets are all complete
    return tl


#: a gap between two values no longer than this is bridged with the earlier value (pgbench -P 10 reports every
#: 10 s: with 1 s buckets its TPS would be a comb); longer gaps (a source that stopped) stay empty
BRIDGE_S = 60.0


def cells(points: Sequence[Tuple[int, float]], every: float, start: float, end: float, width: int,
          bridge_s: float = BRIDGE_S) -> List[Optional[float]]:
    """Bucket values over [start, end) in ``width`` cells: a cell is the mean of the buckets it overlaps (a bucket
    wider than a cell fills several: no gaps on a short run); see :data:`BRIDGE_S` for the cells between."""
    span = max(end - start, 1e-9)
    idx = [i for i, _ in points]
    out: List[Optional[float]] = []
    for c in range(width):
        a, b = start + c * span / width, start + (c + 1) * span / width
        lo = bisect.bisect_right(idx, math.floor(a / every) - 1)
        hi = bisect.bisect_left(idx, math.ceil(b / every))
        vals = [v for i, v in points[lo:hi] if i * every < b and (i + 1) * every > a]
        out.append(sum(vals) / len(vals) if vals else None)
    last = None
    for c, v in enumerate(out):
        if v is not None:
            if last is not None and c - last > 1 and (c - last - 1) * span / width <= bridge_s:
                out[last + 1:c] = [out[last]] * (c - last - 1)
            last = c
    return out
