"""analyze's default grid: the series' own reporting interval, coarsened only for windows too long for it."""

from __future__ import annotations

import random

import pytest

from zfsmon.analysis import findings
from zfsmon.analysis.findings import COARSE_STEPS, MAX_CELLS, TPS, choose_step
from zfsmon.model import Entity, Kind, Sample

T0 = 1_700_000_000.0


def _tps_every(step: float, n: int):
    return {TPS: [(T0 + i * step, 100.0) for i in range(n)]}


@pytest.mark.parametrize("span,step,want", [
    (3600.0, 1.0, 1.0),            # an hour of one-second readings keeps one-second cells
    (MAX_CELLS * 1.0, 1.0, 1.0),   # exactly the limit
    (MAX_CELLS + 1.0, 1.0, 2.0),   # just past it: the next coarser step
    (7 * 86400.0, 1.0, 60.0),      # a week: one-minute cells
    (7 * 86400.0, 10.0, 60.0),
    (86400.0, 10.0, 10.0),         # a day of ten-second readings fits
    (400 * 86400.0, 1.0, 1800.0),
    (5000 * 86400.0, 1.0, 21600.0),  # past the table: whole hours
])
def test_the_step_is_the_reporting_interval_until_the_window_needs_too_many_cells(span, step, want):
    got = choose_step(_tps_every(step, 50), span)
    assert got == want
    assert span / got <= MAX_CELLS
    assert got == step or got in COARSE_STEPS or got % 3600 == 0


def test_without_a_span_the_step_is_the_reporting_interval():
    assert choose_step(_tps_every(5.0, 50)) == 5.0
    assert choose_step({}) == 10.0


def _warmup_samples(hours: float, seed: int = 3):
    """pgbench's TPS every second: 300 rising to 900 over the first fifth, then flat, with noise."""
    rnd = random.Random(seed)
    n = int(hours * 3600)
    ramp = n / 5
    ent = Entity(Kind.WORKLOAD, "pgbench")
    return [Sample(T0 + i, ent, {"tps": 300.0 + 600.0 * min(1.0, i / ramp) + rnd.uniform(-20, 20),
                                 "latency_avg_ms": 8.0}, interval=1.0) for i in range(n)]


def test_a_long_window_is_analysed_on_a_coarser_grid_with_the_same_warm_up():
    samples = _warmup_samples(6.0)  # 21,600 one-second readings: past MAX_CELLS
    coarse = findings.analyze(samples)
    fine = findings.analyze(samples, step=1.0)
    assert coarse.step == 2.0 and fine.step == 1.0
    assert coarse.series[TPS] == fine.series[TPS] == len(samples)  # every reading is still read
    assert coarse.end - coarse.start == pytest.approx(6 * 3600, abs=2.0)
    w_coarse, w_fine = coarse.topic("warmup")[0].numbers, fine.topic("warmup")[0].numbers
    assert w_coarse["tps_plateau"] == pytest.approx(w_fine["tps_plateau"], rel=0.01)
    assert w_coarse["tps_start"] == pytest.approx(w_fine["tps_start"], rel=0.02)
    # 90 % of the plateau (810 of ~900) is reached at 0.85 of the ramp (4,320 s); the noise makes the first
    # crossing come a little earlier, and a 2 s cell averages two readings: both grids land near it
    for w in (w_coarse, w_fine):
        assert w["time_to_90pct_s"] == pytest.approx(0.85 * len(samples) / 5, rel=0.03)
    assert "on a 2 s grid" in coarse.render()


def test_a_short_window_keeps_its_one_second_grid():
    rep = findings.analyze(_warmup_samples(1.0))
    assert rep.step == 1.0
