"""RateDeriver: counter readings to deltas and per-second rates, a counter going backwards starting a new baseline.

Held to the rules written out plainly (:func:`_by_the_rules`) on any sequence of readings: layouts that change,
counters that go back, times that stand still or go back, gauges beside the counters. The deriver had no test of its
own; every rate the views and analyses show comes through it.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Kind, Sample

_NAMES = ("reads", "writes", "read_bytes", "in_flight", "busy_ns")  # in_flight: a gauge


def _by_the_rules(readings: List[Sample]) -> List[Tuple[Optional[tuple], List[str]]]:
    """Per reading: (elapsed, deltas, rates) or None, and the reset event's text if any."""
    prev: Dict[Tuple[str, str], Tuple[float, Dict[str, float]]] = {}
    out = []
    for s in readings:
        key = (s.entity.key, s.source)
        counters = {k: float(v) for k, v in s.metrics.items() if metrics.is_counter(s.entity.kind, k)}
        before, prev[key] = prev.get(key), (s.ts, counters)
        if before is None or s.ts - before[0] <= 0:
            out.append((None, []))
            continue
        elapsed, pvals = s.ts - before[0], before[1]
        common = [n for n in counters if n in pvals]
        back = [n for n in common if counters[n] < pvals[n]]
        if back:
            out.append((None, [f"{s.entity.key}: counter went backwards"]))
            continue
        deltas = {n: counters[n] - pvals[n] for n in common}
        out.append(((elapsed, deltas, {n: d / elapsed for n, d in deltas.items()}), []))
    return out


def _derived(readings: List[Sample]) -> List[Tuple[Optional[tuple], List[str]]]:
    rd = RateDeriver()
    out = []
    for s in readings:
        d, events = rd.update(s)
        out.append(((d.elapsed, d.deltas, d.rates) if d is not None else None,
                    [e.text.split(" (")[0] for e in events]))
    return out


_reading = st.tuples(
    st.sampled_from(["sda", "sdb"]), st.sampled_from(["diskstats", "other"]),
    st.integers(-2, 5),  # the step in time (zero and back included)
    st.sampled_from([_NAMES] * 6 + [_NAMES[:2], _NAMES[::-1], ("in_flight",), ()]),  # the layout: mostly one
    st.lists(st.integers(-3, 9), min_size=5, max_size=5))  # each metric's step (back included)


@settings(max_examples=400, deadline=None)
@given(st.lists(_reading, max_size=40))
def test_deltas_rates_and_resets_follow_the_rules(steps):
    ts = 1000.0
    level = {n: 1000 for n in _NAMES}
    readings = []
    for dev, src, dt, names, moves in steps:
        ts += dt
        for n, mv in zip(_NAMES, moves):
            level[n] += mv
        readings.append(Sample(ts, Entity(Kind.DEVICE, dev), {n: level[n] for n in names}, 1.0, source=src))
    assert _derived(readings) == _by_the_rules(readings)


def test_a_reset_names_the_counters_and_the_next_reading_derives_from_the_new_baseline():
    rd = RateDeriver()
    dev = Entity(Kind.DEVICE, "sda")
    assert rd.update(Sample(10.0, dev, {"reads": 500, "writes": 70, "in_flight": 3}, 1.0)) == (None, [])
    d, ev = rd.update(Sample(12.0, dev, {"reads": 520, "writes": 75, "in_flight": 9}, 1.0))
    assert (d.elapsed, d.deltas, d.rates) == (2.0, {"reads": 20.0, "writes": 5.0}, {"reads": 10.0, "writes": 2.5})
    assert ev == []
    d, ev = rd.update(Sample(13.0, dev, {"reads": 4, "writes": 1, "in_flight": 0}, 1.0))
    assert d is None and len(ev) == 1
    assert ev[0].text == "device:sda: counter went backwards (reads 520 -> 4, writes 75 -> 1); new baseline"
    d, _ = rd.update(Sample(14.0, dev, {"reads": 10, "writes": 1, "in_flight": 0}, 1.0))
    assert d.deltas == {"reads": 6.0, "writes": 0.0}


def test_follow_and_copy_carry_the_previous_reading():
    rd = RateDeriver()
    dev = Entity(Kind.DEVICE, "sda")
    rd.follow(dev.key, "diskstats", 100.0, {"reads": 50.0, "writes": 5.0})
    twin = rd.copy()
    d, _ = rd.update(Sample(104.0, dev, {"reads": 70, "writes": 5}, 1.0, source="diskstats"))
    assert d.rates == {"reads": 5.0, "writes": 0.0}
    rd.update(Sample(105.0, dev, {"reads": 90, "writes": 5}, 1.0, source="diskstats"))
    d, _ = twin.update(Sample(102.0, dev, {"reads": 60, "writes": 9}, 1.0, source="diskstats"))  # not moved
    assert d.deltas == {"reads": 10.0, "writes": 4.0}
