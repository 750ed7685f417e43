"""The whole run at a glance: a few series in coarse buckets, for the dashboard's timeline panel.

TPS (pgbench; fio's IOPS when there is no pgbench), L2ARC hit % and size, and
the reads of the pools' data vdevs (the pool's own line where the pool has no
special or dedup vdevs: the same reads, plus a log device's, which is read
only on import, in one stream instead of one per vdev), each summed into
buckets of ``every`` seconds (aligned to multiples of ``every`` in epoch time,
as :mod:`zfsmon.analysis.downsample` aligns its buckets); when a run outgrows
:data:`MAX_BUCKETS`, ``every`` doubles and neighbouring buckets merge, so
memory and drawing stay the same for a minute as for a day. Run boundaries
and marks are kept beside them.

TPS and fio IOPS come from the workload's interval samples (pgbench ``-P``,
fio's status reports) where there are any; where there are none (a loop soak
``pgbench -T 58 ...`` without ``-P``, a fio run without
``--status-interval``), from its run summaries (``pgbench-run``,
``fio-run:JOB:DIR``): each run's TPS or IOPS spread over the seconds it
covered (:meth:`Timeline.runs`), and the row's label says which it is
(:func:`rows`).

Two ways in, one arithmetic: live, :meth:`Timeline.feed` takes the records
as the dashboard receives them (:meth:`Timeline.sample`: a few additions per
record, no file read, so it works with ``--no-record`` too); replay,
:func:`read_timeline` reads the recording's few streams that matter, and of
them only the metrics it draws, once, in a worker thread, a store block at a
time with its compacted columns as numpy arrays (:func:`zfsmon.store.arrays.blocks`;
:meth:`Timeline.sample_block` sums each bucket's part of a column with numpy,
so a week of one-second readings is read in seconds, not a Python object per
reading: docs/performance.md, "Long soaks"). Both at once when live ``top`` writes on into a recording that
holds readings (a soak resumed after a reboot): the earlier part, read with ``before`` (the moment this process
opened the file), is added to the live buckets (:meth:`Timeline.merge`).
:attr:`Timeline.version` changes only when a bucket closes, the
buckets merge or an event arrives: the panel is redrawn only then (or when the
cursor moves).
"""

from __future__ import annotations

import bisect
import math
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from zfsmon import names
from zfsmon.analysis.restart import is_resumed
from zfsmon.model import Column, Entity, Event, EventKind, Kind, Record, Role, Sample, column_item
from zfsmon.store import Recording, arrays

#: buckets held at most (the panel is at most ~200 cells wide: enough to draw every cell from its own bucket)
MAX_BUCKETS = 256
#: events shown on the timeline's axis (of INFO, only a recording resumed: another process, often after a reboot,
#: writing on into the same recording)
EVENT_KINDS = (EventKind.RUN_START, EventKind.RUN_END, EventKind.MARK, EventKind.INFO)

#: series: (name, label, unit for fmt.num, fixed scale or None)
ROWS: Tuple[Tuple[str, str, str, Optional[Tuple[float, float]]], ...] = (
    ("tps", "TPS per s", "x", None), ("tps_run", "TPS per run", "x", None), ("iops", "IOPS per s", "x", None),
    ("iops_run", "IOPS per run", "x", None), ("l2_hit", "L2 hit %", "%", (0.0, 100.0)),
    ("l2_size", "L2 size", "B", None), ("reads", "data reads", "ops", None))
#: a series drawn only when none of the series it stands in for has a value: the per-run rows stand in for the
#: per-interval ones; fio's IOPS stand in for pgbench's TPS (a fio run beside a soak is the soak's load)
INSTEAD_OF: Dict[str, Tuple[str, ...]] = {"tps_run": ("tps",), "iops": ("tps", "tps_run"),
                                          "iops_run": ("tps", "tps_run", "iops")}
#: the count behind a ratio series: the series of its denominator, summed over a cell (a 100 % hit rate over 3
#: reads is not one over 3 million)
COUNT_OF: Dict[str, str] = {"l2_hit": "l2_lookups"}
MAX_EVENTS = 2000
#: the metrics the timeline reads, per kind (replay reads no others)
WANTED: Dict[Kind, Tuple[str, ...]] = {Kind.WORKLOAD: ("tps", "ios", "iops"), Kind.L2ARC: ("asize", "size", "hits", "misses"),
                                       Kind.VDEV: ("read_ops",), Kind.POOL: ("read_ops",)}
#: the longest a run summary reaches back when nothing else bounds it (live, before the first reading)
MAX_RUN_S = 400 * 86400.0
#: vdev roles whose reads a pool's line holds besides its data vdevs' (then the data vdevs are read one by one)
OTHER_READERS = (Role.SPECIAL, Role.DEDUP)


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
        #: pools with special or dedup vdevs: their data reads are their data vdevs', not the pool line's
        self.split_pools: Set[str] = set()
        #: no run summary reaches back before this (replay: the recording's first reading; live: None, or the moment
        #: it opened a recording it writes on into; after :meth:`merge`, the earlier of the two)
        self.floor: Optional[float] = None
        #: readings of earlier runs are in the buckets (:meth:`merge`: live ``top`` writing on into a recording)
        self.earlier = False
        self._cache: Dict[tuple, List[Optional[float]]] = {}
        self._cache_version: Tuple[int, float] = (-1, 0.0)

    # ------------------------------------------------------------------------------------------ filling
    def add(self, ts: float, part: str, total: float, n: float = 1.0) -> None:
        i = int(ts // self.every)  # the bucket [i * every, (i + 1) * every), as downsample.bucket_start aligns
        b = self.buckets.get(i)
        if self._open is None or i > self._open:  # (a bucket merged in may be there already: the cut inside it)
            self._open = i
            self.version += 1  # the bucket before it is complete
        if b is None:
            b = self.buckets[i] = {}
            if len(self.buckets) > 1 and max(self.buckets) - min(self.buckets) >= self.max_buckets:
                self._coarsen()
                i = int(ts // self.every)
                b = self.buckets.setdefault(i, {})
        _accumulate(b, part, total, n)
        self.first = ts if self.first is None else min(self.first, ts)
        self.last = ts if self.last is None else max(self.last, ts)

    def _coarsen(self) -> None:
        while self.buckets and max(self.buckets) - min(self.buckets) >= self.max_buckets:
            self._halve()
        self.version += 1

    def _halve(self) -> None:
        """Twice as wide buckets: neighbours merged."""
        self.every *= 2
        merged: Dict[int, Dict[str, List[float]]] = {}
        for i, b in self.buckets.items():
            m = merged.setdefault(i // 2, {})
            for part, (t, n) in b.items():
                _accumulate(m, part, t, n)
        self.buckets = merged
        self._open = max(merged) if merged else None

    def merge(self, other: Timeline) -> None:
        """Add ``other``'s buckets, events and bounds to these (live: the earlier run(s) of the recording ``top``
        resumed, read by :func:`read_timeline` with ``before`` so no reading is in both). Widths are powers of two
        seconds (both start at one and double, or come from :func:`every_for`): the finer side is halved to the
        coarser width, each bucket's (sum, count) pairs are added, and the result widened again to
        :attr:`max_buckets`; the bucket still filling (live) stays the open one. ``other`` is left unchanged."""
        if not (self.every > 0 and other.every > 0 and math.log2(max(self.every, other.every)
                                                                  / min(self.every, other.every)).is_integer()):
            raise ValueError(f"bucket widths {self.every:g} s and {other.every:g} s are not a power of two apart")
        open_ts = None if self._open is None else self._open * self.every
        while self.every < other.every:
            self._halve()
        theirs: Dict[int, Dict[str, List[float]]] = other.buckets
        if other.every < self.every:
            k = round(math.log2(self.every / other.every))
            theirs = {}
            for i, b in other.buckets.items():
                m = theirs.setdefault(i // (1 << k), {})
                for part, (t, n) in b.items():
                    _accumulate(m, part, t, n)
        for i, b in theirs.items():
            mine = self.buckets.setdefault(i, {})
            for part, (t, n) in b.items():
                _accumulate(mine, part, t, n)
        self.events = sorted(other.events + self.events, key=lambda e: e.ts)[-MAX_EVENTS:]
        self.first = _bound(min, self.first, other.first)
        self.last = _bound(max, self.last, other.last)
        self.floor = _bound(min, self.floor, other.floor)
        self.split_pools |= other.split_pools
        self.earlier = self.earlier or bool(other.buckets)
        if self.buckets and max(self.buckets) - min(self.buckets) >= self.max_buckets:
            self._coarsen()
        self._open = None if open_ts is None else int(open_ts // self.every)
        self.version += 1

    def event(self, ev: Event) -> None:
        if ev.kind in EVENT_KINDS and (ev.kind != EventKind.INFO or is_resumed(ev)):
            self.events.append(ev)
            del self.events[:-MAX_EVENTS]
            self.version += 1

    def wants(self, e: Entity) -> bool:
        """Whether the timeline draws anything from this entity's samples."""
        if e.kind == Kind.WORKLOAD:
            return run_part(e) is not None or e.name == names.PGBENCH or names.fio_job_direction(e.name) is not None
        if e.kind == Kind.POOL:
            return e.pool not in self.split_pools
        return e.kind == Kind.L2ARC or (is_data_vdev(e) and e.pool in self.split_pools)

    def feed(self, records: Iterable[Record]) -> None:
        """Live: the records as the dashboard receives them (the same the recorder writes)."""
        records = list(records)
        for r in records:  # first: a batch's pool line comes before its vdevs, and which to read depends on them
            if isinstance(r, Sample) and r.entity.kind == Kind.VDEV and r.entity.role in OTHER_READERS:
                self.split_pools.add(r.entity.pool)
        for r in records:
            if isinstance(r, Event):
                self.event(r)
            elif not r.since_boot and self.wants(r.entity):
                self.sample(r.ts, r.entity, r.metrics, r.interval)

    def sample(self, ts: float, e: Entity, m: Mapping[str, float], interval: Optional[float] = None) -> None:
        """One reading of an entity the timeline :meth:`wants` (live and replay alike); ``interval``: the seconds
        a run summary covers, up to ``ts``."""
        run = run_part(e)
        if run is not None:
            part, name = run
            if name in m:
                self.runs(part, np.array([ts], dtype=np.float64), np.array([_span(interval)]),
                          np.array([m[name]], dtype=np.float64))
        elif e.kind == Kind.WORKLOAD:
            if e.name == names.PGBENCH:
                if "tps" in m:
                    self.add(ts, "tps", m["tps"])
            elif "ios" in m:
                self.add(ts, "fio_ios", m["ios"])
        elif e.kind == Kind.L2ARC:
            size = m.get("asize", m.get("size"))
            if size is not None:
                self.add(ts, "l2_size", size)
            if "hits" in m and "misses" in m:
                now = (m["hits"], m["misses"])
                prev, self._l2 = self._l2, now
                if prev is not None and now[0] >= prev[0] and now[1] >= prev[1]:  # a reset costs one interval
                    self.add(ts, "l2_hits", now[0] - prev[0], 0.0)
                    self.add(ts, "l2_misses", now[1] - prev[1], 0.0)
        elif "read_ops" in m:
            self.add(ts, f"reads:{e.key}", m["read_ops"])

    def sample_block(self, ts: Sequence[float], e: Entity, m: Dict[str, Column],
                     intervals: Optional[Sequence[Optional[float]]] = None) -> None:
        """:meth:`sample` of an entity's consecutive readings given column-wise (a store block: ``m`` maps a
        metric to its column, ``intervals`` each reading's): the same parts, each bucket's sum and count from one
        ``numpy.add.reduceat`` per part instead of an addition per reading (the sums agree to float rounding)."""
        if not len(ts):
            return
        t = np.asarray(ts, dtype=np.float64)
        ones = np.ones(len(t))
        run = run_part(e)
        if run is not None:
            part, name = run
            if name in m:
                spans = np.array([_span(iv) for iv in intervals] if intervals is not None else [_span(None)] * len(t))
                self.runs(part, t, spans, np.asarray(m[name], dtype=np.float64))
        elif e.kind == Kind.WORKLOAD:
            part, name = ("tps", "tps") if e.name == names.PGBENCH else ("fio_ios", "ios")
            if name in m:
                self._add_runs(t, part, np.asarray(m[name], dtype=np.float64), ones)
        elif e.kind == Kind.L2ARC:
            size = m.get("asize", m.get("size"))
            if size is not None:
                self._add_runs(t, "l2_size", np.asarray(size, dtype=np.float64), ones)
            if "hits" in m and "misses" in m:
                h, x = np.asarray(m["hits"], dtype=np.float64), np.asarray(m["misses"], dtype=np.float64)
                prev, self._l2 = self._l2, (column_item(m["hits"], -1), column_item(m["misses"], -1))
                ph = np.concatenate(([prev[0] if prev else np.nan], h[:-1]))
                px = np.concatenate(([prev[1] if prev else np.nan], x[:-1]))
                ok = (h >= ph) & (x >= px)  # a reset costs one interval; the first reading has nothing before it
                if ok.any():
                    zeros = np.zeros(int(ok.sum()))
                    self._add_runs(t[ok], "l2_hits", (h - ph)[ok], zeros)
                    self._add_runs(t[ok], "l2_misses", (x - px)[ok], zeros)
        elif "read_ops" in m:
            self._add_runs(t, f"reads:{e.key}", np.asarray(m["read_ops"], dtype=np.float64), ones)

    def _add_runs(self, t: np.ndarray, part: str, vals: np.ndarray, ns: np.ndarray) -> None:
        """:meth:`add` once per run of readings in one bucket: the run's sum and count."""
        idx = np.floor_divide(t, self.every)
        starts = np.concatenate(([0], np.flatnonzero(np.diff(idx)) + 1))
        for start, total, n in zip(t[starts].tolist(), np.add.reduceat(vals, starts).tolist(),
                                   np.add.reduceat(ns, starts).tolist()):
            self.add(start, part, total, n)
        lo, hi = float(t.min()), float(t.max())
        self.first = lo if self.first is None else min(self.first, lo)
        self.last = hi if self.last is None else max(self.last, hi)

    def runs(self, part: str, ends: np.ndarray, spans: np.ndarray, rates: np.ndarray) -> None:
        """Run summaries: the run ending at ``ends[k]`` after ``spans[k]`` seconds went at ``rates[k]`` (TPS, IOPS)
        all along. Each bucket gets, per run, the rate times the run's seconds inside it, and those seconds (so a
        bucket's mean is time-weighted, and its sum over the bucket's seconds an IOPS); a run of no length counts
        as one second at its end. A run reaches back no further than :attr:`floor` (replay: the recording's
        start), else the first reading, else :data:`MAX_RUN_S`. All runs at once: the integral of their rates up
        to each bucket edge, from sorted cumulative sums (O((runs + buckets) log runs), however many overlap)."""
        ok = np.isfinite(ends) & np.isfinite(rates) & np.isfinite(spans)
        ends, spans, rates = ends[ok], np.maximum(spans[ok], 0.0), rates[ok]
        if not len(ends):
            return
        floor = self.floor if self.floor is not None else self.first
        starts = ends - np.minimum(spans, MAX_RUN_S)
        if floor is not None:
            starts = np.maximum(starts, floor)
        starts = np.minimum(starts, ends)
        lo, hi = float(starts.min()), float(ends.max())
        self._fit(lo, hi)
        every = self.every
        i0, i1 = int(lo // every), int(hi // every)
        edges = np.arange(i0, i1 + 2, dtype=np.float64) * every
        amount, secs = np.diff(_integral(edges, starts, ends, rates)), np.diff(_integral(edges, starts, ends, None))
        for k in np.flatnonzero(secs > 0).tolist():
            _accumulate(self.buckets.setdefault(i0 + k, {}), part, float(amount[k]), float(secs[k]))
        if self._open is None or i1 > self._open:
            self._open = i1
        self.first = lo if self.first is None else min(self.first, lo)
        self.last = hi if self.last is None else max(self.last, hi)
        self.version += 1  # a summary fills buckets that had closed

    def _fit(self, lo: float, hi: float) -> None:
        """Widen the buckets until the ones there are and those [lo, hi] needs are fewer than max_buckets."""
        while True:
            idx = [int(lo // self.every), int(hi // self.every)]
            if self.buckets:
                idx += [min(self.buckets), max(self.buckets)]
            if max(idx) - min(idx) < self.max_buckets:
                return
            self._halve()
            self.version += 1

    # ------------------------------------------------------------------------------------------ reading
    def span(self) -> Optional[Tuple[float, float]]:
        """[start, end) of the buckets there are (live: the filling one left out)."""
        if not self.buckets:
            return None
        hi = max(self.buckets) + 1
        return min(self.buckets) * self.every, hi * self.every

    def cells(self, name: str, start: float, end: float, width: int, closed_only: bool = False
              ) -> List[Optional[float]]:
        """:func:`cells` of a series, kept until the buckets change (a cursor move redraws without recomputing)."""
        if self._cache_version != (self.version, self.every):
            self._cache, self._cache_version = {}, (self.version, self.every)
        key = (name, start, end, width, closed_only)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = cells(self.series(name, closed_only), self.every, start, end, width)
        return got

    def count_cells(self, name: str, start: float, end: float, width: int, closed_only: bool = False
                    ) -> Optional[List[Optional[float]]]:
        """The counts behind a ratio series' cells (:data:`COUNT_OF`): each cell's sum over its buckets; None for
        a series that is not a ratio."""
        of = COUNT_OF.get(name)
        if of is None:
            return None
        return cell_sums(self.series(of, closed_only), self.every, start, end, width)

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


def run_part(e: Entity) -> Optional[Tuple[str, str]]:
    """(the timeline's part, the metric it takes) of a run summary's entity, or None for any other entity."""
    if e.kind != Kind.WORKLOAD:
        return None
    if e.name == names.PGBENCH_RUN:
        return "tps_run", "tps"
    if names.fio_job_direction(e.name, names.FIO_RUN_PREFIX) is not None:
        return "fio_run", "iops"
    return None


def _span(interval: Optional[float]) -> float:
    """The seconds a run summary covers: its interval, or 0 without a finite one (then it counts as a point)."""
    return float(interval) if isinstance(interval, (int, float)) and math.isfinite(interval) else 0.0


def _integral(edges: np.ndarray, starts: np.ndarray, ends: np.ndarray, rates: Optional[np.ndarray]) -> np.ndarray:
    """At each edge x, the sum over runs of rate times the run's seconds before x (``rates`` None: 1), a run of
    no length counting one second once x is past its end. ``clamp(x, s, e) - s == min(x, e) - min(x, s)``, and
    the sum of ``r * min(x, c)`` over runs is the sum of ``r * c`` over the c below x plus x times the sum of r
    over the others: sorted once, then a search per edge."""
    r = np.ones(len(ends)) if rates is None else rates
    point = ends <= starts
    origin = edges[0]  # times from the first edge: epoch seconds times a rate would round away the fractions
    edges, starts, ends = edges - origin, starts - origin, ends - origin

    def below(c: np.ndarray, w: np.ndarray) -> np.ndarray:
        order = np.argsort(c, kind="stable")
        c, w = c[order], w[order]
        k = np.searchsorted(c, edges, side="left")  # how many c < x
        wc = np.concatenate(([0.0], np.cumsum(w * c)))
        ws = np.concatenate(([0.0], np.cumsum(w)))
        return wc[k] + edges * (ws[-1] - ws[k])

    w = np.where(point, 0.0, r)
    out = below(ends, w) - below(starts, w)
    pts = np.sort(ends[point])
    if len(pts):
        pr = r[point][np.argsort(ends[point], kind="stable")]
        out = out + np.concatenate(([0.0], np.cumsum(pr)))[np.searchsorted(pts, edges, side="left")]
    return out


def value(b: Dict[str, List[float]], name: str, every: float) -> Optional[float]:
    """A bucket's value of a series: TPS and L2 size averaged, fio IOPS as its I/Os over the bucket's seconds,
    L2 hit % of the bucket's hits and misses, data reads the sum over data vdevs of each one's average ops/s."""
    if name in ("tps", "l2_size", "tps_run"):
        acc = b.get(name)
        return acc[0] / acc[1] if acc and acc[1] else None
    if name in ("iops", "iops_run"):
        acc = b.get("fio_ios" if name == "iops" else "fio_run")
        return acc[0] / every if acc else None
    if name == "l2_hit":
        h, m = b.get("l2_hits"), b.get("l2_misses")
        if h is None or m is None or h[0] + m[0] <= 0:
            return None
        return 100.0 * h[0] / (h[0] + m[0])
    if name == "l2_lookups":
        h, m = b.get("l2_hits"), b.get("l2_misses")
        return None if h is None or m is None else h[0] + m[0]
    if name == "reads":
        parts = [acc[0] / acc[1] for part, acc in b.items() if part.startswith("reads:") and acc[1]]
        return sum(parts) if parts else None
    raise KeyError(name)


#: a drawn row: (series name, label, unit, fixed scale, cells)
Row = Tuple[str, str, str, Optional[Tuple[float, float]], List[Optional[float]]]


def rows(tl: Timeline, start: float, end: float, width: int, closed_only: bool = False) -> List[Row]:
    """The :data:`ROWS` to draw over [start, end): those with a value, less each one whose :data:`INSTEAD_OF`
    series is drawn (per-run TPS only without per-second TPS, ...)."""
    drawn: Set[str] = set()
    out: List[Row] = []
    for name, label, unit, fixed in ROWS:
        if drawn.intersection(INSTEAD_OF.get(name, ())):
            continue
        vals = tl.cells(name, start, end, width, closed_only)
        if any(v is not None for v in vals):
            drawn.add(name)
            out.append((name, label, unit, fixed, vals))
    return out


def every_for(span_s: float, max_buckets: int = MAX_BUCKETS) -> float:
    """The bucket width a run of ``span_s`` seconds gets: a power of two seconds (as live doubling makes)."""
    need = max(span_s, 1.0) / (max_buckets - 1)
    return float(2 ** max(0, math.ceil(math.log2(need))))


def read_timeline(path: str, max_buckets: int = MAX_BUCKETS, before: Optional[float] = None) -> Timeline:
    """Replay: the whole recording's timeline, from the rows of only the streams (and metrics) it draws.

    ``before``: only the readings and events earlier than that (live ``top`` writing on into a recording: what
    the earlier processes wrote, for :meth:`Timeline.merge`; a recorder may be writing meanwhile).
    Opens its own :class:`Recording` (the caller runs this in a worker thread: a connection is not shared)."""
    end = None if before is None else math.nextafter(before, -math.inf)  # the store's bounds are inclusive
    with Recording.open(path) as rec:
        rng = rec.time_range()
        if rng is not None and end is not None:
            rng = (rng[0], min(rng[1], end)) if rng[0] <= end else None
        tl = Timeline(every_for(rng[1] - rng[0] if rng else 1.0, max_buckets), max_buckets)
        if rng is None:
            return tl
        ents = {e.key: e for e in rec.entities()}
        tl.floor = rng[0]
        tl.split_pools = {e.pool for e in ents.values() if e.kind == Kind.VDEV and e.role in OTHER_READERS}
        plan: Dict[int, Tuple[Entity, List[Tuple[str, int]]]] = {}
        for sid in rec.select_streams([k for k, e in ents.items() if tl.wants(e)]):
            st = rec.streams[sid]
            have = [m.name for m in st.metrics]
            want = [(n, have.index(n)) for n in WANTED.get(ents[st.entity_key].kind, ()) if n in have]
            if want and not st.since_boot:
                plan[sid] = (ents[st.entity_key], want)
        if plan:
            kept = {(e.kind, n) for e, want in plan.values() for n, _i in want}
            for group in arrays.blocks(rec, list(plan), end=end, metrics=lambda kind, name: (kind, name) in kept):
                for sb in group:
                    tl.sample_block(sb.ts, ents[sb.entity.key], dict(zip(sb.names, sb.cols)), sb.intervals)
        for ev in rec.events(end=end, kinds=EVENT_KINDS):
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
    out: List[Optional[float]] = [sum(vals) / len(vals) if vals else None
                                  for vals in _cell_values(points, every, start, end, width)]
    last = None
    for c, v in enumerate(out):
        if v is not None:
            if last is not None and c - last > 1 and (c - last - 1) * span / width <= bridge_s:
                out[last + 1:c] = [out[last]] * (c - last - 1)
            last = c
    return out


def cell_sums(points: Sequence[Tuple[int, float]], every: float, start: float, end: float, width: int
              ) -> List[Optional[float]]:
    """Bucket values over [start, end) in ``width`` cells, each cell the sum of the buckets it overlaps (counts:
    nothing bridged, a cell with no bucket is None)."""
    return [sum(vals) if vals else None for vals in _cell_values(points, every, start, end, width)]


def _cell_values(points: Sequence[Tuple[int, float]], every: float, start: float, end: float, width: int
                 ) -> List[List[float]]:
    """The values of the buckets each of ``width`` cells over [start, end) overlaps."""
    span = max(end - start, 1e-9)
    idx = [i for i, _ in points]
    out: List[List[float]] = []
    for c in range(width):
        a, b = start + c * span / width, start + (c + 1) * span / width
        lo = bisect.bisect_right(idx, math.floor(a / every) - 1)
        hi = bisect.bisect_left(idx, math.ceil(b / every))
        out.append([v for i, v in points[lo:hi] if i * every < b and (i + 1) * every > a])
    return out


def _bound(pick: Callable[[float, float], float], a: Optional[float], b: Optional[float]) -> Optional[float]:
    """``pick`` (min or max) of the bounds that are known."""
    return b if a is None else a if b is None else pick(a, b)


def _accumulate(bucket: Dict[str, List[float]], part: str, total: float, n: float) -> None:
    """Add a (sum, count) pair to a bucket's part: one rule for new samples and for merging buckets."""
    acc = bucket.get(part)
    if acc is None:
        bucket[part] = [total, n]
    else:
        acc[0] += total
        acc[1] += n
