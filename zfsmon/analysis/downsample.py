"""Fewer, wider points: per-entity buckets of ``every`` seconds.

Counters are summed as deltas (the bucket's delta is the sum of the deltas of
the readings that end in it, over their real elapsed time, so a counter reset
inside a bucket costs one interval, never a negative or huge number), and the
last raw value is kept. Gauges (levels, per-interval averages a platform
already computed) are averaged, with min and max kept. ``since_boot`` readings
(the first ``zpool iostat`` report) average a different span and are left out.

Buckets are aligned to multiples of ``every`` in epoch time, so two exports of
the same recording line up. Memory holds one open bucket per entity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Sample


@dataclass
class Counter:
    last: float
    delta: float = 0.0
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

    def add(self, s: Sample, deltas: Optional[Dict[str, float]], elapsed: float,
            counters: Optional[FrozenSet[str]] = None) -> None:
        self.n += 1
        self.entity = s.entity  # the latest role/parent
        if counters is None:
            counters = frozenset(n for n in s.metrics if metrics.is_counter(s.entity.kind, n))
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
    if every <= 0:
        raise ValueError("every must be positive")
    rates = RateDeriver()
    open_: Dict[Tuple[str, str], Bucket] = {}
    horizon = float("-inf")  # every bucket starting before this is complete
    plans: Dict[tuple, FrozenSet[str]] = {}  # the counters among a kind's metric names, looked up once
    for s in samples:
        if s.since_boot:
            continue
        pk = (s.entity.kind, tuple(s.metrics))
        counters = plans.get(pk)
        if counters is None:
            counters = plans[pk] = frozenset(n for n in s.metrics if metrics.is_counter(s.entity.kind, n))
        d = rates.update(s)[0] if counters else None
        b0 = bucket_start(s.ts, every)
        if b0 > horizon:
            done = [b for b in open_.values() if b.ts < b0]
            if done:
                done.sort(key=lambda b: (b.ts, b.entity.kind.value, b.entity.key))
                for b in done:
                    del open_[(b.entity.key, b.source)]
                yield from done
            horizon = b0
        key = (s.entity.key, s.source)
        b = open_.get(key)
        if b is not None and b.ts != b0:  # a late reading for an already-closed bucket, or a jump
            yield b
            b = None
        if b is None:
            b = open_[key] = Bucket(b0, every, s.entity, s.source)
        b.add(s, d.deltas if d is not None else None, d.elapsed if d is not None else 0.0, counters)
    rest: List[Bucket] = sorted(open_.values(), key=lambda b: (b.ts, b.entity.kind.value, b.entity.key))
    yield from rest
