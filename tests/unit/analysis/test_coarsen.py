"""Readings folded to a coarse grid's step as they are read (zfsmon.analysis.coarsen): what each metric becomes,
and that analyze says the same of the real 100-minute lab soak folded or whole."""

from __future__ import annotations

import functools
import json
from typing import Dict, List, Tuple

import numpy as np
import pytest

from zfsmon.analysis import coarsen as cz
from zfsmon.analysis import findings
from zfsmon.cli import main
from zfsmon.model import Entity, Kind, Role, Sample, SampleBlock

LEAF = Entity(Kind.LEAF, "sda", "tank", Role.DATA, "mirror-0")
MIRROR = Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank")  # top-level: it has alloc and free
ARC = Entity(Kind.ARC, "arc")
PGB = Entity(Kind.WORKLOAD, "pgbench")
RUN = Entity(Kind.WORKLOAD, "pgbench-run")
T0 = 1_800_000_000.0  # a multiple of 60


def _leaf(i: int, **extra: float) -> Sample:
    m = {"read_ops": float(i % 7), "write_ops": 2.0, "alloc": 1000.0 + i, "total_wait_read": 1e6 * (1 + i % 3),
         "lat_total_wait_read_1ms": float(i % 2), "syncq_read_pend": float(i % 4)}
    m.update(extra)
    return Sample(T0 + i, MIRROR, m, interval=1.0, source="zpool iostat")


@pytest.mark.parametrize("as_arrays", [("read_ops", "total_wait_read", "alloc", "syncq_read_pend",
                                          "lat_total_wait_read_1ms", "write_ops"), ("read_ops", "alloc"), ()])
def test_interval_rows_with_array_columns_fold_as_their_samples_do(as_arrays) -> None:
    """Blocks of interval rows whose columns are numpy arrays (all: the arrays' fold; some, as when a chunk holds a
    packed column: the slices' fold over arrays and lists) give what folding the samples one by one gives."""
    rows = [_leaf(i) for i in range(1, 301)]
    names = tuple(rows[0].metrics)
    blocks = []
    for k in range(0, 300, 128):  # blocks of 128 readings, cut across steps
        part = rows[k:k + 128]
        cols = [[s.metrics[n] for s in part] for n in names]
        cols = [np.asarray(c) if n in as_arrays else c for n, c in zip(names, cols)]
        blocks.append([SampleBlock([s.ts for s in part], [(part[0].ts, MIRROR)], names, cols, "zpool iostat",
                                   False, [1.0] * len(part))])
    for every in (60.0, 7.0):
        got = cz.coarsen_blocks(blocks, every)
        _same(got, cz.coarsen(rows, every))
        assert all(type(v) is float for s in got for v in s.metrics.values())


def test_rules_follow_the_metrics_table() -> None:
    assert cz.rule(Kind.LEAF, "read_ops") == cz.MEAN and cz.rule(Kind.LEAF, "write_bw") == cz.MEAN
    assert cz.rule(Kind.VDEV, "alloc") == cz.LAST and cz.rule(Kind.POOL, "free") == cz.LAST
    assert cz.rule(Kind.LEAF, "lat_total_wait_read_1ms") == cz.SUM and cz.rule(Kind.LEAF, "rq_sync_ind_512") == cz.SUM
    assert cz.rule(Kind.LEAF, "total_wait_read") == cz.BY_READS
    assert cz.rule(Kind.LEAF, "disk_wait_write") == cz.BY_WRITES
    assert cz.rule(Kind.LEAF, "syncq_read_pend") == cz.MEAN  # a queue's length is a level, not a count to add
    assert cz.rule(Kind.LEAF, "no_such_metric") == cz.MEAN


def test_interval_rows_fold_to_one_row_per_step() -> None:
    rows = [_leaf(i) for i in range(1, 121)]  # (T0, T0 + 120]: readings at T0+1 ... T0+120
    out = cz.coarsen(rows, 60.0)
    assert [s.ts for s in out] == [T0 + 59, T0 + 119, T0 + 120]  # steps [T0, T0+60), [T0+60, T0+120), [T0+120, ...)
    assert [s.interval for s in out] == [59.0, 60.0, 1.0]
    first, second = out[0], out[1]
    part = rows[59:119]
    # operations add up exactly: the folded rate times its interval is the readings' sum of rate x interval
    assert second.metrics["read_ops"] * second.interval == pytest.approx(sum(s.metrics["read_ops"] for s in part))
    assert first.metrics["read_ops"] * 59 == pytest.approx(sum(s.metrics["read_ops"] for s in rows[:59]))
    assert second.metrics["alloc"] == part[-1].metrics["alloc"]  # a size: the last
    assert second.metrics["lat_total_wait_read_1ms"] == sum(s.metrics["lat_total_wait_read_1ms"] for s in part)
    reads = [s.metrics["read_ops"] for s in part]
    want = sum(s.metrics["total_wait_read"] * r for s, r in zip(part, reads)) / sum(reads)  # per read, not per s
    assert second.metrics["total_wait_read"] == pytest.approx(want)
    assert second.metrics["syncq_read_pend"] == pytest.approx(sum(s.metrics["syncq_read_pend"] for s in part) / 60)
    assert second.entity == MIRROR and second.source == "zpool iostat" and not second.since_boot


def test_snapshots_keep_the_first_reading_and_each_steps_last() -> None:
    snaps = [Sample(T0 + i, ARC, {"hits": 10.0 * i, "size": 5.0 + i}, source="arcstats") for i in range(1, 150)]
    out = cz.coarsen(snaps, 60.0)
    assert [s.ts for s in out] == [T0 + 1, T0 + 59, T0 + 119, T0 + 149]
    assert all(s.metrics == snaps[int(s.ts - T0) - 1].metrics for s in out)  # readings as they were
    # a counter's increase over the window is the same folded or whole
    assert out[-1].metrics["hits"] - out[0].metrics["hits"] == snaps[-1].metrics["hits"] - snaps[0].metrics["hits"]


def test_what_is_handed_on_unfolded() -> None:
    first = Sample(T0, LEAF, {"read_ops": 50.0}, interval=3600.0, source="zpool iostat", since_boot=True)
    run = Sample(T0 + 58, RUN, {"tps": 900.0}, interval=58.0, source="pgbench")  # another entity than progress
    long = Sample(T0 + 120, LEAF, {"read_ops": 3.0}, interval=120.0, source="zpool iostat")
    trace = Sample(T0 + 1, Entity(Kind.TRACE, "sda", "tank", Role.DATA), {"read_hist_10": 4.0}, interval=1.0,
                   source="bpftrace")
    out = cz.coarsen([first, trace, run, long], 60.0)
    assert out == [first, trace, run, long]


def test_a_new_layout_starts_a_new_row() -> None:
    rows = [_leaf(i) for i in range(1, 11)] + [_leaf(i, read_bw=4096.0) for i in range(11, 21)]
    out = cz.coarsen(rows, 60.0)
    assert [s.ts for s in out] == [T0 + 10, T0 + 20] and "read_bw" in out[1].metrics
    assert [s.interval for s in out] == [10.0, 10.0]


def test_a_block_of_mixed_readings_or_a_clock_step_folds_as_its_samples_do() -> None:
    """The reading-by-reading path of a column block: intervals that differ in mode, times that go back."""
    from zfsmon.model import SampleBlock

    ts = [T0 + t for t in (1, 2, 3, 50, 61, 62, 40, 41, 121, 122)]  # a clock step back after T0+62
    ivs = [1.0, 1.0, None, 1.0, 1.0, 90.0, 1.0, 1.0, None, 1.0]
    col = [float(k) for k in range(10)]
    sb = SampleBlock(ts, [(ts[0], MIRROR)], ("read_ops",), [col], "zpool iostat", False, ivs)
    samples = [sb.sample(i) for i in range(10)]
    assert [s.interval for s in samples] == ivs
    _same(cz.coarsen_blocks([[sb]], 60.0), cz.coarsen(samples, 60.0))
    got = cz.coarsen_blocks([[sb]], 60.0)
    assert sum(s.metrics["read_ops"] * (s.interval or 0) for s in got if s.interval) == pytest.approx(
        sum(v * (iv or 0) for v, iv in zip(col, ivs) if iv))


def test_progress_rows_fold_but_their_mean_is_per_second() -> None:
    rows = [Sample(T0 + i, PGB, {"tps": 100.0 * i}, interval=1.0, source="pgbench") for i in range(1, 60)]
    (got,) = cz.coarsen(rows, 60.0)
    assert got.metrics["tps"] == pytest.approx(sum(100.0 * i for i in range(1, 60)) / 59)


def test_fold_step_only_when_the_grid_is_coarser_than_the_readings() -> None:
    assert findings.fold_step(1.0, 3600.0) is None  # 3,600 cells: kept as read
    assert findings.fold_step(1.0, 7 * 86400.0) == 60.0  # a week of one-second readings
    assert findings.fold_step(1.0, 3600.0, step=60.0) == 60.0  # a coarse --step
    assert findings.fold_step(10.0, 3600.0, step=10.0) is None
    assert findings.fold_step(None, 7 * 86400.0) is None


def _topic(rep: findings.Report, name: str) -> Dict[str, object]:
    (f,) = rep.topic(name)
    return f.numbers


def test_the_lab_soak_folded_says_what_it_says_whole(lab_soak) -> None:
    samples, events = lab_soak
    folded = cz.coarsen(samples, 60.0)
    assert len(folded) < len(samples) / 30  # ~60 readings of each stream become one
    whole = findings.analyze(samples, events, step=60.0)
    fold = findings.analyze(folded, events, step=60.0)
    assert fold.runs == whole.runs == 100
    # totals over the window are exact: operations per role, the L2ARC's and ARC's counters
    vw, vf = _topic(whole, "vdev_perf"), _topic(fold, "vdev_perf")
    for role in ("data", "cache", "log"):
        for k in ("read_ops", "write_ops", "devices", "capacity_b"):
            assert vf["roles"][role][k] == pytest.approx(vw["roles"][role][k], rel=1e-9), (role, k)
    assert vf["l2_hits"] == vw["l2_hits"] and vf["l2_misses"] == vw["l2_misses"]
    assert _topic(fold, "cache_advice") == _topic(whole, "cache_advice")
    # the levels on the one-minute grid: the same within a few per cent (fold steps are epoch minutes, the
    # grid's cells start at the window's first reading)
    for topic, keys in (("warmup", ("tps_plateau",)), ("l2arc_fill", ("size_max_b",)),
                        ("disk_reads", ("early_per_disk",))):
        for k in keys:
            assert _topic(fold, topic)[k] == pytest.approx(_topic(whole, topic)[k], rel=0.05), (topic, k)


def _same(a: List[Sample], b: List[Sample]) -> None:
    def order(s: Sample) -> tuple:
        return s.ts, s.entity.key, s.source, s.since_boot

    a, b = sorted(a, key=order), sorted(b, key=order)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.ts, x.entity, x.source, x.since_boot) == (y.ts, y.entity, y.source, y.since_boot)
        assert x.interval == (None if y.interval is None else pytest.approx(y.interval, rel=1e-12))
        assert x.metrics.keys() == y.metrics.keys(), x.entity
        for k, v in x.metrics.items():
            assert v == pytest.approx(y.metrics[k], rel=1e-9, abs=1e-9), (x.entity.key, k)


@pytest.mark.parametrize("how", ["lists", "arrays"])
@pytest.mark.parametrize("every", [60.0, 7.0])
def test_column_blocks_fold_as_samples_do(lab_soak_file, every, how) -> None:
    """What analyze reads (the store's column blocks, no Sample per reading; its chunks' columns as numpy arrays,
    as analyze reads them, or as lists) is what folding the samples gives."""
    from zfsmon.store import Recording, arrays

    with Recording.open(lab_soak_file) as rec:
        read = rec.blocks if how == "lists" else functools.partial(arrays.blocks, rec)
        by_blocks = cz.coarsen_blocks(read(rec.select_streams(kinds=findings.KINDS), metrics=findings.reads_metric),
                                      every)
        by_samples = cz.coarsen(rec.samples(kinds=findings.KINDS, metrics=findings.reads_metric), every)
        whole = cz.coarsen_blocks(read(), every)  # every kind and metric, as report reads
        assert {s.entity.kind for s in whole} > {s.entity.kind for s in by_blocks}
        _same(whole, cz.coarsen(rec.samples(), every))
    _same(by_blocks, by_samples)
    assert all(type(v) in (int, float) for s in whole for v in s.metrics.values())  # no numpy scalar leaks out


@pytest.mark.parametrize("every", [60.0, 7.0])
def test_array_blocks_fold_the_guests_latencies_as_samples_do(real_recordings, every, monkeypatch) -> None:
    """The OpenZFS 2.3 guest's rows hold ``zpool iostat -l`` means, folded weighted by the writes of each
    interval: the arrays' fold weighs them as the lists' does. (Against the samples' fold, this recording's
    column blocks give a few more steps: a pool's ``txgs`` rows come in two layouts and a cache vdev's in three.)"""
    from zfsmon.store import Recording, arrays

    weighted = []
    fold_arrays = cz._Fold._array_rows

    def spy(self, sb, key, plan, steps, ivs):
        weighted.extend(n for n, how in zip(sb.names, plan[0]) if how is cz.BY_WRITES)
        return fold_arrays(self, sb, key, plan, steps, ivs)

    monkeypatch.setattr(cz._Fold, "_array_rows", spy)
    with Recording.open(real_recordings["guest"]) as rec:
        got = cz.coarsen_blocks(arrays.blocks(rec), every)
        _same(got, cz.coarsen_blocks(rec.blocks(), every))
    assert "total_wait_write" in weighted  # the weighted means went through the arrays' fold
    assert any(s.metrics.get("total_wait_write", 0) > 0 for s in got if s.source == "zpool iostat")
    assert all(type(v) in (int, float) for s in got for v in s.metrics.values())


def test_analyze_command_folds_on_a_coarse_step(lab_soak_file, capsys) -> None:
    soak_file = lab_soak_file
    assert main(["analyze", soak_file, "--step", "60", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["folded_to_s"] == 60.0 and got["step_s"] == 60.0
    assert main(["analyze", soak_file, "--step", "60"]) == 0
    assert "on a 60 s grid (readings folded to 60 s steps as read)" in capsys.readouterr().out
    assert main(["analyze", soak_file, "--end", "+10m", "--json"]) == 0
    assert "folded_to_s" not in json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ a long one-second recording, end to end

HOURS = 6.0  # past MAX_CELLS one-second cells (5.5 h): analyze and report fold to 2 s steps
DATA_LEAVES = [Entity(Kind.LEAF, f"sd{c}", "tank", Role.DATA, "mirror-0") for c in "ab"]
CACHE = Entity(Kind.VDEV, "sdc", "tank", Role.CACHE, "tank")
L2 = Entity(Kind.L2ARC, "l2arc")


@pytest.fixture(scope="module")
def six_hours(tmp_path_factory) -> Tuple[str, float]:
    """Six hours of one-second readings of a small pool: returns the path and the data disks' reads in it."""
    from zfsmon.store import Recorder

    path = str(tmp_path_factory.mktemp("six") / "six.zfsmon")
    reads = 0.0
    n = int(HOURS * 3600)
    batch: List[Sample] = []
    with Recorder(path, {"host": "test", "interval": "1"}) as rec:
        for i in range(1, n + 1):
            ts = T0 + i
            w = min(1.0, i / 1800.0)
            r = 100.0 * (1 - w) + (i % 3)
            reads += 2 * r
            batch += [Sample(ts, leaf, {"read_ops": r, "write_ops": 1.0}, interval=1.0, source="zpool iostat")
                      for leaf in DATA_LEAVES]
            batch += [Sample(ts, CACHE, {"read_ops": 500.0 * w, "write_ops": 3.0}, interval=1.0,
                             source="zpool iostat"),
                      Sample(ts, L2, {"size": 1e9 * w, "hits": 400.0 * w * i, "misses": 50.0 * i},
                             source="arcstats"),
                      Sample(ts, PGB, {"tps": 300.0 + 900.0 * w}, interval=1.0, source="pgbench")]
            if len(batch) >= 5000:
                rec.write(batch)
                batch = []
        rec.write(batch)
    return path, reads


def test_analyze_folds_a_long_window_and_keeps_its_totals(six_hours, capsys) -> None:
    path, reads = six_hours
    assert main(["analyze", path, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["folded_to_s"] == 2.0 and got["step_s"] == 2.0
    by = {f["topic"]: f.get("numbers", {}) for f in got["findings"]}
    assert by["vdev_perf"]["roles"]["data"]["read_ops"] == pytest.approx(reads, rel=1e-9)
    assert by["warmup"]["tps_start"] < 400 and by["warmup"]["tps_plateau"] == pytest.approx(1200, abs=1)
    # 90 % of the 1,200 plateau: 300 + 900 w >= 1,080 at w = 0.867, 1,560 s in
    assert by["warmup"]["time_to_90pct_s"] == pytest.approx((1080 - 300) / 900 * 1800, abs=4)


def test_column_blocks_fold_six_hours_as_samples_do(six_hours) -> None:
    from zfsmon.store import Recording, arrays

    path, _reads = six_hours
    with Recording.open(path) as rec:
        by_samples = cz.coarsen(rec.samples(), 2.0)
        _same(cz.coarsen_blocks(rec.blocks(), 2.0), by_samples)
        _same(cz.coarsen_blocks(arrays.blocks(rec), 2.0), by_samples)


def test_report_folds_a_long_window_and_says_so(six_hours) -> None:
    from zfsmon.store import Recording
    from zfsmon.views import report_pdf

    path, _reads = six_hours
    with Recording.open(path) as rec:
        data = report_pdf.build(rec)
    assert data.findings[0].startswith("Readings folded to 2 s steps as they were read (a window of 6 h)")
    assert any(f.startswith("TPS warmed up from") for f in data.findings)
