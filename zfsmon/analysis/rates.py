"""Counter deltas to per-second rates, with honest handling of counter resets.

Kstats are cumulative counters. A rate is the delta over the *real* elapsed
time between two readings (not the nominal interval). A counter that goes
backwards (pool re-imported, zfs-fuse restarted, kstat recreated) starts a new
baseline: that interval yields no rate for it and a ``reset`` event instead, so
views never show a negative or a 2**64 spike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from zfsmon import metrics
from zfsmon.model import Event, EventKind, Sample


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
        m = sample.metrics
        counters = {k: m[k] for k in metrics.counter_names(sample.entity.kind, tuple(m))}
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

    def resets(self, sample: Sample) -> List[Event]:
        """What :meth:`update` says about ``sample`` without its deltas and rates: the sampler needs only the
        reset events (rates are the views' business), once per sample of every source."""
        prev, counters = self._advance(sample)
        if prev is None or sample.ts - prev[0] <= 0:
            return []
        pvals = prev[1]
        reset = [n for n, v in counters.items() if n in pvals and v < pvals[n]]
        return [_reset_event(sample, pvals, counters, reset)] if reset else []

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
