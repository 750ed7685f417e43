"""The one derived-values step: what a reading means against the one before it, computed once per sample.

For each sample, :class:`Deriver` gives its counters' deltas and per-second
rates over the real elapsed time (:class:`~zfsmon.analysis.rates.RateDeriver`:
a counter that went backwards gives a reset event and no figures), and the
figures its kind is read by: ARC / L2ARC / ZIL hit ratios and rates
(:data:`zfsmon.analysis.arc.DERIVERS`), a block device's ops/s and latency
(:func:`device_rates`). A kind with neither has its deltas and rates only.

The engine's sampler runs one :class:`Deriver` live and hands each tick's
:class:`Derived` values to its sinks with the raw records (a :class:`Tick`);
what reads a recording (replay, ``analyze``, ``report``, ``export``) runs the
same class over the recorded samples, so live and offline figures come from
one place. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from zfsmon.analysis import arc, goose
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, Kind, Record, Sample


@dataclass(frozen=True)
class Derived:
    """What one reading adds to the previous one of its entity and source.

    ``metrics``: the figures its kind is read by (ARC/L2ARC/ZIL: :mod:`zfsmon.analysis.arc`'s; a block device:
    :func:`device_rates`; others: none)."""

    sample: Sample
    elapsed: float
    deltas: Dict[str, float]
    rates: Dict[str, float]
    metrics: Dict[str, float] = field(default_factory=dict)

    def interval_sample(self) -> Sample:
        """The derived figures as an interval sample of the reading's entity and source (gauges only)."""
        s = self.sample
        return Sample(s.ts, s.entity, self.metrics, interval=self.elapsed, source=s.source)


class Tick(List[Record]):
    """One tick's records as the sampler hands them to its sinks, with each sample's :class:`Derived` values.

    A list of the raw records (what a sink that records or serves them takes, unchanged), plus ``derived``."""

    def __init__(self, records: Iterable[Record] = (), derived: Sequence[Derived] = ()) -> None:
        super().__init__(records)
        self.derived: List[Derived] = list(derived)


def derived_of(records: Iterable[Record]) -> Optional[List[Derived]]:
    """The derived values a batch of records came with (a :class:`Tick`'s), or None for plain records (a
    recording's, a test's): those are derived by whoever reads them, with a :class:`Deriver`."""
    return records.derived if isinstance(records, Tick) else None


class Deriver:
    """Feed samples in time order (per entity and source); get each one's :class:`Derived` values and resets.

    An ARC/L2ARC/ZIL reading without counters (a tool's percentages, a since-import average) is not a reading of
    the counters: it gives nothing and is not a baseline. The sampler does not derive since-import reports (their
    figures describe no interval); a recording's reader may (``export``'s rows: a cumulative total reported since
    import is a baseline for the next)."""

    def __init__(self) -> None:
        self._rates = RateDeriver()

    def copy(self) -> Deriver:
        """An independent deriver at the same point (replay keeps states around its cursor)."""
        new = Deriver()
        new._rates = self._rates.copy()
        return new

    def update(self, sample: Sample) -> Tuple[Optional[Derived], List[Event]]:
        """``sample``'s derived values (None for a first reading, after a reset, or for no counter reading) and
        the reset events it makes."""
        kind = sample.entity.kind
        by_kind = arc.DERIVERS.get(kind)
        if by_kind is not None and not arc.has_counters(sample):
            return None, []
        d, events = self._rates.update(sample)
        if d is None:
            return None, events
        if by_kind is not None:
            figures = by_kind(d.deltas, d.elapsed, sample.metrics)
        elif kind == Kind.DEVICE:
            figures = device_rates(d.rates, d.deltas)
        else:
            figures = {}
        return Derived(sample, d.elapsed, d.deltas, d.rates, figures), events

    def follow(self, key: str, source: str, ts: float, counters: Dict[str, float]) -> None:
        """:meth:`zfsmon.analysis.rates.RateDeriver.follow`: a caller that derived a run of readings itself."""
        self._rates.follow(key, source, ts, counters)


def device_rates(rates: Dict[str, float], deltas: Dict[str, float]) -> Dict[str, float]:
    """Ops/s, bytes/s and average latency of a block device from its counter rates."""
    out = {k: v for k, v in rates.items() if k in ("reads", "writes", "read_bytes", "write_bytes")}
    ops = goose.device_ops_per_s(rates)
    if ops is not None:
        out["ops_per_s"] = ops
    n = deltas.get("reads", 0.0) + deltas.get("writes", 0.0)
    t = deltas.get("read_time_ns", 0.0) + deltas.get("write_time_ns", 0.0)
    if n > 0 and t > 0:
        out["lat_ns"] = t / n
    return out


class ArcAnalyzer:
    """:class:`Deriver` for ARC / L2ARC / ZIL readings, each interval as a derived sample: what ``zfsmon
    arcstat`` prints. The derived sample has the reading's entity and source, ``interval`` = the real elapsed
    seconds, and only gauges (rates, %)."""

    def __init__(self) -> None:
        self._deriver = Deriver()

    def copy(self) -> ArcAnalyzer:
        new = ArcAnalyzer()
        new._deriver = self._deriver.copy()
        return new

    def update(self, sample: Sample) -> Tuple[Optional[Sample], List[Event]]:
        if sample.entity.kind not in arc.DERIVERS:
            return None, []
        d, events = self._deriver.update(sample)
        return (d.interval_sample() if d is not None else None), events


def derive_samples(samples: Iterable[Sample]) -> Dict[Kind, List[Sample]]:
    """Every ARC/L2ARC/ZIL interval of ``samples``, derived in time order: kind -> derived samples.

    What a window's hit ratios and rates are, for every view that summarises a window (findings, the report);
    the sampler derives the same, one reading at a time, with the same :class:`Deriver`.
    """
    deriver = Deriver()
    out: Dict[Kind, List[Sample]] = {kind: [] for kind in arc.DERIVERS}
    for s in sorted((s for s in samples if s.entity.kind in arc.DERIVERS), key=lambda s: s.ts):
        d, _events = deriver.update(s)
        if d is not None:
            out[s.entity.kind].append(d.interval_sample())
    return out


def joined(batches: Iterable[Sequence[Record]]) -> List[Record]:
    """Several batches as one: a :class:`Tick` with all their derived values when any came from the sampler
    (the others then hold events only: a recording's failure, a mark), else a plain list."""
    batches = list(batches)
    records = [r for b in batches for r in b]
    ticks = [b for b in batches if isinstance(b, Tick)]
    return Tick(records, [d for t in ticks for d in t.derived]) if ticks else records
