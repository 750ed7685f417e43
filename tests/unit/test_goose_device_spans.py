"""The goose-egg pass's device rates taken column-wise give what reading them one by one gives.

``goose.device_spans`` takes a device whose readings are all counters of one stream and layout (the live
diskstats collector's) column-wise, through ``goose.column_deltas``. The oracle here is the reading-by-reading
loop it replaced, kept verbatim: the same spans, the same floats, the devices in the same order, whatever the
readings (counter resets, times that stand still or go back, layouts and sources that change, interval rows).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Dict, List, Optional

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zfsmon.analysis import goose
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Kind, Sample

COUNTERS = ("reads", "writes", "read_bytes", "write_bytes", "read_time_ns", "write_time_ns")


def reference_spans(samples) -> Dict[str, List[goose.Span]]:
    """``device_spans`` as it was before the column-wise path (2026-11-28): every reading in time order."""
    rows: Dict[str, List[goose.Span]] = {}
    counted: Dict[str, List[goose.Span]] = {}
    rates = RateDeriver()
    last: Dict[str, float] = {}
    for s in sorted((s for s in samples if s.entity.kind == Kind.DEVICE and not s.since_boot), key=lambda s: s.ts):
        name = s.entity.name
        prev, last[name] = last.get(name), s.ts
        if "read_ops" in s.metrics or "write_ops" in s.metrics:
            span = s.interval or (s.ts - prev if prev is not None else 0.0)
            if span > 0:
                rows.setdefault(name, []).append(goose.Span(s.ts - span, s.ts, goose.device_ops_per_s(s.metrics) or 0.0))
            continue
        d, _events = rates.update(s)
        ops = goose.device_ops_per_s(d.rates) if d is not None else None
        if d is not None and ops is not None:
            counted.setdefault(name, []).append(goose.Span(s.ts - d.elapsed, s.ts, ops))
    return {**counted, **rows}


@st.composite
def device_readings(draw) -> List[Sample]:
    """Readings of a few devices, interleaved: mostly one steady diskstats stream each, now and then a reset, a
    time that stands still or steps back, another layout or source, an interval row, a since-boot reading."""
    out: List[Sample] = []
    names = draw(st.lists(st.sampled_from(["vda", "vdb", "vdb1", "sda", "c0t1d0"]), min_size=1, max_size=4,
                          unique=True))
    for name in names:
        odd = draw(st.booleans())  # a device whose readings are not one steady stream
        layout = draw(st.sampled_from([COUNTERS, COUNTERS[:2], ("reads",), ("writes", "reads"), ("read_bytes",)]))
        values = [0] * len(COUNTERS)
        ts = draw(st.integers(0, 20)) + draw(st.sampled_from([0.0, 0.25, 0.001]))
        parent = draw(st.sampled_from(["", "leaf-" + name]))
        for _ in range(draw(st.integers(0, 12))):
            ts += draw(st.sampled_from([1.0, 1.0, 1.0, 0.999, 2.5])) if not odd else draw(
                st.sampled_from([1.0, 0.0, -1.0, 0.5, 3.0]))
            for j in range(len(values)):
                values[j] += draw(st.integers(0, 500))
            if odd and draw(st.integers(0, 5)) == 0:
                values[draw(st.integers(0, len(values) - 1))] = 0  # a counter that went back
            mine = layout
            if odd and draw(st.integers(0, 4)) == 0:
                mine = draw(st.sampled_from([COUNTERS, ("reads", "writes"), ("read_ops", "write_ops")]))
            metrics = {n: (values[COUNTERS.index(n)] if n in COUNTERS else draw(st.floats(0, 1e4)))
                       for n in mine}
            interval: Optional[float] = draw(st.sampled_from([None, 1.0])) if "read_ops" in metrics else None
            source = "diskstats" if not odd or draw(st.integers(0, 5)) else "iostat"
            out.append(Sample(ts, Entity(Kind.DEVICE, name, parent=parent), metrics, interval=interval,
                              source=source, since_boot=odd and draw(st.integers(0, 9)) == 0))
    return draw(st.permutations(out))


@settings(max_examples=300, deadline=None)
@given(device_readings())
def test_device_spans_are_the_reading_by_reading_ones(samples):
    got, want = goose.device_spans(samples), reference_spans(samples)
    assert list(got) == list(want)  # the devices in the same order: the leaves' candidates follow it
    assert got == want


def test_a_steady_stream_takes_the_column_wise_path_and_a_reset_costs_one_interval():
    readings = [Sample(100.0 + i, Entity(Kind.DEVICE, "vdb", parent="data0"),
                       {"reads": r, "writes": 2 * i, "read_bytes": 512 * r}, source="diskstats")
                for i, r in enumerate([10, 20, 40, 5, 15])]  # reads fall back at the fourth reading
    assert goose._counter_spans(readings) is not None
    assert goose.device_spans(readings) == {"vdb": [goose.Span(100.0, 101.0, 12.0), goose.Span(101.0, 102.0, 22.0),
                                                    goose.Span(103.0, 104.0, 12.0)]}
    assert goose.device_spans(readings) == reference_spans(readings)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1.0, 1.0, 0.5, 0.0, -2.0, 1e-3]),
                          st.lists(st.integers(-50, 1000), min_size=3, max_size=3)), min_size=1, max_size=15))
def test_column_deltas_say_what_update_says(steps):
    """Each reading after the first: the elapsed seconds and deltas update() gives, and whether it gives any."""
    ts, rows, t, vals = [], [], 50.0, [0, 0, 0]
    for dt, inc in steps:
        t += dt
        vals = [v + d for v, d in zip(vals, inc)]
        ts.append(t)
        rows.append(list(vals))
    elapsed, deltas, ok = goose.column_deltas(np.array(ts), np.array(rows, dtype=np.float64))
    rates = RateDeriver()
    for i, (t, row) in enumerate(zip(ts, rows)):
        d, _events = rates.update(Sample(t, Entity(Kind.DEVICE, "vda"), dict(zip(COUNTERS[:3], row))))
        if i == 0:
            assert d is None
            continue
        assert bool(ok[i - 1]) == (d is not None)
        if d is not None:
            assert d.elapsed == elapsed[i - 1]
            assert d.deltas == dict(zip(COUNTERS[:3], deltas[i - 1].tolist()))


def test_the_recorder_does_not_import_numpy():
    """docs/install.md and architecture.md promise it: ``zfsmon record`` (its sampler derives counter resets through
    :mod:`zfsmon.analysis.rates`) starts without numpy's import."""
    probe = "import sys, zfsmon.commands.record, zfsmon.engine.sampler; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False"]
