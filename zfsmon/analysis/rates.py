"""Counter deltas to per-second rates, with honest handling of counter resets.

Kstats are cumulative counters. A rate is the delta over the *real* elapsed
time between two readings (not the nominal interval). A counter that goes
backwards (pool re-imported, zfs-fuse restarted, kstat recreated) starts a new
baseline: that interval yields no rate for it and a ``reset`` event instead, so
views never show a negative or a 2**64 spike.

The one derived-values step is here too: for each sample, :class:`Deriver` gives
those deltas and rates and the figures its kind is read by: ARC / L2ARC / ZIL
hit ratios and rates (:data:`zfsmon.analysis.arc.DERIVERS`), a block device's
ops/s and latency (:func:`device_rates`). The engine's sampler runs one
:class:`Deriver` live and hands each tick's :class:`~zfsmon.model.Derived` values to its sinks
with the raw records (a :class:`~zfsmon.model.Tick`); what reads a recording (replay,
``analyze``, ``report``, ``export``) runs the same class over the recorded
samples, so live and offline figures come from one place. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from zfsmon import metrics
from zfsmon.analysis import arc, goose
from zfsmon.model import Derived, Event, EventKind, Kind, Sample


@dataclass
class Deltas:
    """What one reading adds to the previous: per-counter deltas and the elapsed seconds."""

    sample: Sample
    elapsed: float
    deltas: Dict[str, float]
    rates: Dict[str, float]


class RateDeriver:
    """Keeps the previous reading per entity and source; turns counter samples into deltas and rates.

    Per source, not per entity: one entity can have counters from several sources (a Linux OpenZFS pool has
    the ``iostats``, ``txgs`` and ``status`` sources' counters), and each source's readings follow only its own.
    """

    def __init__(self) -> None:
        self._prev: Dict[Tuple[str, str], Tuple[float, Dict[str, float]]] = {}

    def _advance(self, sample: Sample) -> Tuple[Optional[Tuple[float, Dict[str, float]]], Dict[str, float]]:
        """Take ``sample``'s counters as its entity and source's latest reading: (the reading before, if any;
        the counters)."""
        key = (sample.entity.key, sample.source)
        kind_counters = metrics.COUNTERS.get(sample.entity.kind, metrics.NO_COUNTERS)
        counters = {k: v for k, v in sample.metrics.items() if k in kind_counters}
        prev = self._prev.get(key)
        self._prev[key] = (sample.ts, counters)
        return prev, counters

    def update(self, sample: Sample) -> Tuple[Optional[Deltas], List[Event]]:
        prev, counters = self._advance(sample)
        if prev is None:
            return None, []
        pts, pvals = prev
        elapsed = sample.ts - pts
        if elapsed <= 0:
            return None, []
        deltas: Dict[str, float] = {}
        reset: List[str] = []
        for name, val in counters.items():
            if name not in pvals:
                continue
            d = val - pvals[name]
            if d < 0:
                reset.append(name)
            else:
                deltas[name] = d
        if reset:
            # One reset usually resets every counter of the entity; treat the whole reading as a new baseline.
            return None, [_reset_event(sample, pvals, counters, reset)]
        rates = {name: d / elapsed for name, d in deltas.items()}
        return Deltas(sample, elapsed, deltas, rates), []

    def copy(self) -> RateDeriver:
        """An independent deriver at the same point (the previous readings are replaced, never changed in place,
        so copying the mapping is enough): replay keeps states around its cursor."""
        new = RateDeriver()
        new._prev = dict(self._prev)
        return new

    def follow(self, key: str, source: str, ts: float, counters: Dict[str, float]) -> None:
        """Take ``counters`` at ``ts`` as the previous reading without deriving from it: for a caller that
        derived the readings in between itself (column-wise downsampling of a run of readings checked free of
        resets)."""
        self._prev[(key, source)] = (ts, counters)


def _reset_event(sample: Sample, pvals: Dict[str, float], counters: Dict[str, float], reset: List[str]) -> Event:
    return Event(sample.ts, EventKind.RESET, f"{sample.entity.key}: counter went backwards ("
                 + ", ".join(f"{n} {pvals[n]:.0f} -> {counters[n]:.0f}" for n in sorted(reset)[:4])
                 + f"{'...' if len(reset) > 4 else ''}); new baseline", source=sample.source,
                 entity=sample.entity.key)


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

    def __init__(self, deriver: Optional[Deriver] = None) -> None:
        self._deriver = deriver if deriver is not None else Deriver()

    def copy(self) -> ArcAnalyzer:
        return ArcAnalyzer(self._deriver.copy())

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
