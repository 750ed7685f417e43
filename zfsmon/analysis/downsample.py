"""Fewer, wider points: per-entity buckets of ``every`` seconds.

Counters are summed as deltas (the bucket's delta is the sum of the deltas of
the readings that end in it, over their real elapsed time, so a counter reset
inside a bucket costs one interval, never a negative or huge number), and the
last raw value is kept. Gauges (levels, per-interval averages a platform
already computed) are averaged, with min and max kept. ``since_boot`` readings
(the first ``zpool iostat`` report) average a different span and are left out.

Buckets are aligned to multiples of ``every`` in epoch time, so two exports of
the same recording line up. Memory holds one open bucket per entity. A recording
is read column-wise, a block of readings at a time (:func:`downsample_blocks`):
a week of one-second readings must not become a Python object per value.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, SupportsIndex, Tuple, Union

import numpy as np

from zfsmon import metrics
from zfsmon.analysis.rates import Deriver
from zfsmon.model import Column, Entity, Sample, SampleBlock


@dataclass
class Counter:
    last: float
    delta: float = 0  # an int while every delta added is one: exact beyond 2**53
    elapsed: float = 0.0
    has_delta: bool = False

    @property
    def per_s(self) -> Optional[float]:
        return self.delta / self.elapsed if self.has_delta and self.elapsed > 0 else None


@dataclass
class Gauge:
    total: float
    n: int
    min: float
    max: float

    @property
    def mean(self) -> float:
        return self.total / self.n


@dataclass
class Bucket:
    """One entity's readings in [ts, ts + every)."""

    ts: float
    every: float
    entity: Entity
    source: str
    n: int = 0
    counters: Dict[str, Counter] = field(default_factory=dict)
    gauges: Dict[str, Gauge] = field(default_factory=dict)

    def add(self, s: Sample, deltas: Optional[Dict[str, float]], elapsed: float, counters: FrozenSet[str]) -> None:
        self.n += 1
        self.entity = s.entity  # the latest role/parent
        for name, v in s.metrics.items():
            if name in counters:
                c = self.counters.get(name)
                if c is None:
                    c = self.counters[name] = Counter(v)
                c.last = v
                if deltas is not None and name in deltas:
                    c.delta += deltas[name]
                    c.elapsed += elapsed
                    c.has_delta = True
            else:
                g = self.gauges.get(name)
                if g is None:
                    self.gauges[name] = Gauge(v, 1, v, v)
                else:
                    g.total += v
                    g.n += 1
                    g.min = min(g.min, v)
                    g.max = max(g.max, v)


def bucket_start(ts: float, every: float) -> float:
    return (ts // every) * every


def downsample(samples: Iterable[Sample], every: float) -> Iterator[Bucket]:
    """Buckets in time order (as far as the input is), one per entity and source per ``every`` seconds."""
    return downsample_blocks(([SampleBlock.of(s)] for s in samples), every)


#: how far (seconds) a reading may come after later readings of other sources: ``zpool iostat -T u`` stamps
#: whole seconds and its report is read after the kstats of the same moment (seen: 1-3 s); a bucket is handed on
#: once the newest reading is this far past its end, so a late reading still lands in its bucket
LATE = 30.0


def _order(b: Bucket) -> tuple:
    return b.ts, b.entity.kind.value, b.entity.key, b.source


def downsample_blocks(blocks: Iterable[Sequence[SampleBlock]], every: float) -> Iterator[Bucket]:
    """:func:`downsample` of a recording read block by block (:meth:`zfsmon.store.Recording.blocks`).

    A run of readings of one stream whose counters never go backwards and whose times only grow is taken
    column-wise: a bucket's counter delta is its last value minus the one before it (the readings' deltas
    telescope), a gauge's total, minimum and maximum are those of the column's slice, and no Sample is built.
    Any other run (a counter reset, a clock step, several layouts of one entity and source interleaved) is
    taken reading by reading. Buckets come out in (time, kind, key, source) order once the newest reading is
    :data:`LATE` seconds past them; a reading later than that starts a bucket of its own (nothing is dropped).
    """
    if every <= 0:
        raise ValueError("every must be positive")
    rates = Deriver()  # the sampler's derivation, run over the recorded readings
    open_: Dict[Tuple[str, str], Bucket] = {}
    plans: Dict[tuple, Tuple[bool, ...]] = {}  # the counters among a kind's metric names, looked up once
    ready: List[tuple] = []  # a heap of finished buckets: (order, sequence, bucket)
    seq = 0
    newest = float("-inf")
    for group in blocks:
        finished: List[Bucket] = []
        runs: Dict[Tuple[str, str], List[SampleBlock]] = {}
        for sb in group:
            if sb.since_boot or not sb.ts:
                continue
            runs.setdefault((sb.entity.key, sb.source), []).append(sb)
            newest = max(newest, sb.ts[-1])
        for key, sbs in runs.items():
            flags = [_plan(plans, sb) for sb in sbs]
            if len(sbs) == 1 and _steady(sbs[0], flags[0]):
                _add_columns(sbs[0], flags[0], every, key, open_, finished, rates)
            else:
                _add_readings(sbs, flags, every, key, open_, finished, rates)
        if newest == float("-inf"):
            continue
        safe = bucket_start(newest - LATE, every)
        for b in [b for b in open_.values() if b.ts < safe]:
            del open_[(b.entity.key, b.source)]
            finished.append(b)
        for b in finished:
            heapq.heappush(ready, (_order(b), seq, b))
            seq += 1
        while ready and ready[0][0][0] < safe:
            yield heapq.heappop(ready)[2]
    rest = [b for _o, _s, b in ready] + list(open_.values())
    yield from sorted(rest, key=_order)


def _plan(plans: Dict[tuple, Tuple[bool, ...]], sb: SampleBlock) -> Tuple[bool, ...]:
    kind = sb.entity.kind
    pk = (kind, sb.names)
    flags = plans.get(pk)
    if flags is None:
        flags = plans[pk] = tuple(metrics.is_counter(kind, n) for n in sb.names)
    return flags


def _steady(sb: SampleBlock, flags: Tuple[bool, ...]) -> bool:
    """Times only grow and no counter goes backwards: the readings' deltas telescope."""
    ts = sb.ts
    if not all(map(operator.lt, ts, ts[1:])):
        return False
    return all(bool((col[1:] >= col[:-1]).all()) if isinstance(col, np.ndarray) else all(map(operator.le, col, col[1:]))
               for col, c in zip(sb.cols, flags) if c)


def _bucket(key: Tuple[str, str], b0: float, every: float, sb: SampleBlock, open_: Dict[Tuple[str, str], Bucket],
            finished: List[Bucket]) -> Bucket:
    b = open_.get(key)
    if b is not None and b.ts != b0:  # a late reading for an already-closed bucket, or a jump
        finished.append(b)
        b = None
    if b is None:
        b = open_[key] = Bucket(b0, every, sb.entity, sb.source)
    return b


def _add_readings(sbs: Sequence[SampleBlock], flags: Sequence[Tuple[bool, ...]], every: float,
                  key: Tuple[str, str], open_: Dict[Tuple[str, str], Bucket], finished: List[Bucket],
                  rates: Deriver) -> None:
    """One reading at a time, in time order (stable: the block's stream order breaks ties)."""
    order = sorted(((t, j, i) for j, sb in enumerate(sbs) for i, t in enumerate(sb.ts)), key=lambda x: (x[0], x[1]))
    named = [frozenset(n for n, c in zip(sb.names, f) if c) for sb, f in zip(sbs, flags)]
    for t, j, i in order:
        sb = sbs[j]
        s = sb.sample(i)
        counters = named[j]
        d = rates.update(s)[0] if counters else None
        b = _bucket(key, bucket_start(t, every), every, sb, open_, finished)
        b.add(s, d.deltas if d is not None else None, d.elapsed if d is not None else 0.0, counters)


def _spans(ts: Sequence[float], every: float) -> List[Tuple[float, int, int]]:
    """A steady run's buckets: (bucket start, first reading, one past its last) for each bucket its times touch."""
    n = len(ts)
    out = []
    i = 0
    while i < n:
        b0 = bucket_start(ts[i], every)
        j = bisect_left(ts, b0 + every, i)
        while j > i + 1 and bucket_start(ts[j - 1], every) != b0:  # float rounding at the bucket's edge
            j -= 1
        while j < n and bucket_start(ts[j], every) == b0:
            j += 1
        out.append((b0, i, j))
        i = j
    return out


def _reduced_gauges(names: Sequence[str], cols: Sequence[Column], flags: Tuple[bool, ...],
                    starts: List[int]) -> Dict[str, Tuple[list, list, list]]:
    """The array columns' gauges (:mod:`zfsmon.store.arrays`): per name, each bucket's sum, minimum and maximum
    (the buckets start at ``starts``) as Python numbers, from one ``numpy.*.reduceat`` per dtype over them all.
    Columns of thousandths are summed as the integers they were stored as: the exact sum, rounded once."""
    groups: Dict[str, List[Tuple[str, np.ndarray]]] = {}
    for name, col, is_counter in zip(names, cols, flags):
        if not is_counter and isinstance(col, np.ndarray):
            groups.setdefault(col.dtype.kind, []).append((name, col))
    out: Dict[str, Tuple[list, list, list]] = {}
    for kind, group in groups.items():
        m = np.vstack([c for _n, c in group])
        if kind == "f":
            sums = np.add.reduceat(np.rint(m * 1000).astype(np.int64), starts, axis=1) / 1000
        else:
            sums = np.add.reduceat(m, starts, axis=1)
        lows, highs = np.minimum.reduceat(m, starts, axis=1), np.maximum.reduceat(m, starts, axis=1)
        for (name, _c), t, lo, hi in zip(group, sums.tolist(), lows.tolist(), highs.tolist()):
            out[name] = (t, lo, hi)
    return out


def _add_columns(sb: SampleBlock, flags: Tuple[bool, ...], every: float, key: Tuple[str, str],
                 open_: Dict[Tuple[str, str], Bucket], finished: List[Bucket], rates: Deriver) -> None:
    """A steady run (:func:`_steady`): its buckets found once, then a column at a time over them. A counter takes
    its value at each bucket's edge; a gauge's sum, minimum and maximum per bucket come from its slices, or, for
    the array columns of :mod:`zfsmon.store.arrays`, from ``numpy.*.reduceat`` over all of them at once (integers
    sum exactly, as Python's ``sum`` does; thousandths too, where ``sum`` of their floats may differ in the last
    digits)."""
    ts = sb.ts
    n = len(ts)
    has_counters = any(flags)
    cols = [c.tolist() if f and isinstance(c, np.ndarray) else c for c, f in zip(sb.cols, flags)]
    first = rates.update(sb.sample(0))[0] if has_counters else None  # the step from the previous block's reading
    spans = []
    for b0, i, j in _spans(ts, every):
        b = _bucket(key, b0, every, sb, open_, finished)
        b.n += j - i
        b.entity = sb.entity_at(ts[j - 1])
        spans.append((b, i, j))
    starts = [i for _b, i, _j in spans]
    reduced = _reduced_gauges(sb.names, cols, flags, starts)
    for name, col, is_counter in zip(sb.names, cols, flags):
        if is_counter:
            for b, i, j in spans:
                c = b.counters.get(name)
                if c is None:
                    c = b.counters[name] = Counter(col[i])
                c.last = col[j - 1]
                if i == 0:
                    if first is not None and name in first.deltas:
                        c.delta += first.deltas[name]
                        c.elapsed += first.elapsed
                        c.has_delta = True
                    if j > 1:
                        c.delta += _increase(col[j - 1], col[0])
                        c.elapsed += ts[j - 1] - ts[0]
                        c.has_delta = True
                else:
                    c.delta += _increase(col[j - 1], col[i - 1])
                    c.elapsed += ts[j - 1] - ts[i - 1]
                    c.has_delta = True
        elif name in reduced:
            for (b, i, j), t, lo, hi in zip(spans, *reduced[name]):
                _gauge(b, name, t, j - i, lo, hi)
        else:
            for b, i, j in spans:
                part = col[i:j]
                _gauge(b, name, sum(part), j - i, min(part), max(part))
    if has_counters and n > 1:
        rates.follow(key[0], key[1], ts[-1], {name: _plain(col[-1]) for name, col, c in zip(sb.names, cols, flags)
                                              if c})


def _plain(v: Union[float, SupportsIndex]) -> float:
    """A column's value as a Python number: an int for an integer (numpy's of an array column too), so that
    counters beyond 2**53 are never rounded through a float; else a float."""
    if hasattr(v, "__index__"):
        return operator.index(v)
    return float(v)


def _increase(new: float, old: float) -> float:
    """``new - old`` of a counter's column, exact for integers."""
    return _plain(new) - _plain(old)


def _gauge(b: Bucket, name: str, total: float, n: int, lo: float, hi: float) -> None:
    """Add a slice's sum, count and extremes to the bucket's gauge ``name``."""
    g = b.gauges.get(name)
    if g is None:
        b.gauges[name] = Gauge(total, n, lo, hi)
    else:
        g.total += total
        g.n += n
        g.min = min(g.min, lo)
        g.max = max(g.max, hi)
