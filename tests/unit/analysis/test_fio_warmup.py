"""A fio soak's warm-up (the classic L2ARC test: 8 KiB random reads at a fixed depth over more than the ARC):
fio's interval IOPS, every job and direction summed, stand where pgbench's TPS would."""

from __future__ import annotations

from typing import List

import pytest

from zfsmon import names
from zfsmon.analysis.findings import IOPS, analyze, series_from_samples
from zfsmon.model import Entity, Kind, Sample

T0 = 1_767_225_600.0
READ = Entity(Kind.WORKLOAD, names.FIO_PREFIX + "qd4:read")
WRITE = Entity(Kind.WORKLOAD, names.FIO_PREFIX + "qd4:write")


def _ramp(seconds: int = 600, lo: float = 50.0, hi: float = 400.0, up_s: float = 300.0) -> List[Sample]:
    out = []
    for i in range(0, seconds, 2):
        v = lo + (hi - lo) * min(1.0, i / up_s)
        out.append(Sample(T0 + i, READ, {"iops": v * 0.75}, interval=2.0, source=names.FIO))
        out.append(Sample(T0 + i, WRITE, {"iops": v * 0.25}, interval=2.0, source=names.FIO))
    return out


def test_fio_iops_summed_over_directions_per_interval() -> None:
    series = series_from_samples(_ramp())
    assert series[IOPS][0] == (T0, pytest.approx(50.0))
    assert series[IOPS][-1][1] == pytest.approx(400.0)
    assert len(series[IOPS]) == 300


def test_a_fio_soak_warms_up_by_its_iops() -> None:
    [warm] = analyze(_ramp()).topic("warmup")
    assert warm.text.startswith("IOPS warmed up from "), warm.text
    assert warm.numbers["of"] == "IOPS"
    assert warm.numbers["tps_plateau"] == pytest.approx(400.0, rel=0.02)
    assert 50.0 <= warm.numbers["tps_start"] < 100.0
    # 90 % of 400 = 360 at 300 * 310/350 = 266 s (a 3-point rolling median on the grid)
    assert warm.numbers["time_to_90pct_s"] == pytest.approx(266.0, abs=8.0)
    assert "IOPS reached 90% of the plateau" in warm.moments


def test_tps_wins_over_fio_iops_when_both_are_there() -> None:
    tps = [Sample(T0 + i, Entity(Kind.WORKLOAD, names.PGBENCH), {"tps": 100.0 + i}, interval=1.0,
                  source=names.PGBENCH) for i in range(600)]
    [warm] = analyze(_ramp() + tps).topic("warmup")
    assert warm.text.startswith("TPS warmed up") and "of" not in warm.numbers


def test_a_queue_depth_sweep_is_no_warm_up() -> None:
    """qd1, qd2, qd4 ... one after another: IOPS rise with the depth, by design, not as a cache warms."""
    out = []
    for n, depth in enumerate((1, 2, 4, 8)):
        job = Entity(Kind.WORKLOAD, names.FIO_PREFIX + f"qd{depth}:read")
        out += [Sample(T0 + 100 * n + i, job, {"iops": 100.0 * depth}, interval=2.0, source=names.FIO)
                for i in range(0, 100, 2)]
    assert IOPS not in series_from_samples(out)
    assert analyze(out).topic("warmup") == []
