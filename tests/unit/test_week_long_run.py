"""A week-long run, recorded: the dashboard's whole-run timeline and analyze's findings stay right at that length.

The recording is sparse (a reading every 5 minutes, 2,016 in the week) so that the test stays quick; what it
holds is what a week-long pgbench soak shows: TPS warming up over the first day while the L2ARC fills and
the data disks' reads fall, a run per day, a mark.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest

from zfsmon.analysis import findings
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Role, Sample
from zfsmon.store import Recorder, Recording
from zfsmon.views.top import timeline

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
STEP = 300.0
DAY = 86400.0
N = int(7 * DAY / STEP)
PGBENCH = Entity(Kind.WORKLOAD, "pgbench")
L2 = Entity(Kind.L2ARC, "l2arc")
POOL = Entity(Kind.POOL, "tank", "tank")
MIRROR = Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank")


def _warm(i: int) -> float:
    """0 -> 1 over the first day, then 1."""
    return min(1.0, i * STEP / DAY)


def _records() -> Tuple[List[Record], Dict[str, List[Tuple[float, float]]]]:
    out: List[Record] = []
    want: Dict[str, List[Tuple[float, float]]] = {"tps": [], "l2_size": [], "reads": [], "hits": [], "misses": []}
    hits = misses = 0.0
    for i in range(N):
        ts = T0 + (i + 1) * STEP
        w = _warm(i)
        tps = 300.0 + 600.0 * w + (i % 7)  # a little wobble that is not noise (the test recomputes it)
        size = 1.5e9 * w
        reads = 400.0 * (1.0 - w) + 5.0
        hits += 1000.0 * w * STEP
        misses += (1000.0 * (1.0 - w) + 10.0) * STEP
        out += [Sample(ts, PGBENCH, {"tps": tps, "latency_avg_ms": 8000.0 / tps}, interval=STEP, source="pgbench"),
                Sample(ts, L2, {"size": size, "hits": hits, "misses": misses}, source="arcstats"),
                Sample(ts, POOL, {"read_ops": reads, "write_ops": 50.0}, interval=STEP, source="zpool iostat"),
                Sample(ts, MIRROR, {"read_ops": reads, "write_ops": 50.0}, interval=STEP, source="zpool iostat")]
        for k, v in (("tps", tps), ("l2_size", size), ("reads", reads), ("hits", hits), ("misses", misses)):
            want[k].append((ts, v))
        if i % int(DAY / STEP) == 0:
            run = i // int(DAY / STEP) + 1
            out.append(Event(ts - STEP / 2, EventKind.RUN_START, f"pgbench run {run} started", "pgbench",
                             data={"run": run}))
            out.append(Event(ts - STEP / 2 + DAY - 60.0, EventKind.RUN_END, f"pgbench run {run} ended", "pgbench",
                             data={"run": run}))
    out.append(Event(T0 + 3.5 * DAY, EventKind.MARK, "midweek", "user"))
    out.sort(key=lambda r: r.ts)
    return out, want


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    records, want = _records()
    path = str(tmp_path_factory.mktemp("week") / "week.zfsmon")
    with Recorder(path, {"host": "test", "interval": str(STEP)}) as rec:
        for k in range(0, len(records), 500):
            rec.write(records[k:k + 500])
    return path, records, want


def _bucket_means(points: List[Tuple[float, float]], every: float) -> Dict[int, float]:
    acc: Dict[int, List[float]] = {}
    for ts, v in points:
        acc.setdefault(int(ts // every), []).append(v)
    return {i: sum(vs) / len(vs) for i, vs in acc.items()}


def test_the_timeline_of_a_week_holds_every_reading_in_its_bucket(week):
    path, _records_, want = week
    tl = timeline.read_timeline(path)
    assert tl.every == timeline.every_for(7 * DAY) == 4096.0
    assert len(tl.buckets) <= timeline.MAX_BUCKETS
    lo, hi = tl.span()
    assert lo <= T0 + STEP and hi >= T0 + 7 * DAY
    for name in ("tps", "l2_size", "reads"):
        got = dict(tl.series(name))
        exp = _bucket_means(want[name], tl.every)
        assert sorted(got) == sorted(exp), name
        for i, v in exp.items():
            assert got[i] == pytest.approx(v, rel=1e-9), (name, i)
    # L2 hit %: each bucket's hits over its lookups, from the counters' increases (the first reading has none)
    inc: Dict[int, List[float]] = {}
    for (t, h1), (_t, m1), (_p, h0), (_q, m0) in zip(want["hits"][1:], want["misses"][1:], want["hits"],
                                                    want["misses"]):
        acc = inc.setdefault(int(t // tl.every), [0.0, 0.0])
        acc[0] += h1 - h0
        acc[1] += m1 - m0
    got = dict(tl.series("l2_hit"))
    assert sorted(got) == sorted(inc)
    for i, (h, m) in inc.items():
        assert got[i] == pytest.approx(100.0 * h / (h + m), rel=1e-9)
    # the shape a reader looks for: TPS up and disk reads down over the first day, flat after it
    tps = [v for _, v in tl.series("tps")]
    reads = [v for _, v in tl.series("reads")]
    day = int(DAY // tl.every)
    assert tps[day + 2] > 2.5 * tps[0] and reads[day + 2] < reads[0] / 10
    assert max(tps[day + 2:]) - min(tps[day + 2:]) < 10
    # every run boundary and the mark, in time order
    kinds = [e.kind for e in tl.events]
    assert kinds.count(EventKind.RUN_START) == kinds.count(EventKind.RUN_END) == 7
    assert [e.text for e in tl.events if e.kind == EventKind.MARK] == ["midweek"]
    assert [e.ts for e in tl.events] == sorted(e.ts for e in tl.events)


def test_the_live_timeline_of_a_week_is_the_replayed_one(week):
    path, records, _want = week
    read = timeline.read_timeline(path)
    live = timeline.Timeline()
    for k in range(0, len(records), 4):  # as the dashboard gets them: a tick's records at a time
        live.feed(records[k:k + 4])
    assert live.every == read.every and live.span() == read.span()
    for name in ("tps", "l2_hit", "l2_size", "reads"):
        a, b = read.series(name), live.series(name)
        assert [i for i, _ in a] == [i for i, _ in b], name
        assert all(x == pytest.approx(y, rel=1e-9) for (_, x), (_, y) in zip(a, b)), name
    cells = read.cells("tps", *read.span(), width=73)
    assert len(cells) == 73 and cells[0] is not None and cells[-1] is not None


def test_analyze_of_a_week_finds_the_first_days_warm_up(week):
    path, _records_, _want = week
    with Recording.open(path) as rec:
        rep = findings.analyze(list(rec.samples(kinds=findings.KINDS)), rec.events())
    assert rep.step == STEP  # 2,016 cells: the reporting interval is kept
    assert rep.runs == 7
    w = rep.topic("warmup")[0].numbers
    # the start level: the first 3 readings (15 minutes; EARLY_SECONDS is less than one cell), the cold level,
    # not the median of the first tenth (0.7 days), which would be half way up that part of the ramp
    assert w["tps_start"] == pytest.approx(300 + 3, abs=2)
    assert w["tps_plateau"] == pytest.approx(903, abs=4)
    # 90 % of ~903 is ~813: reached when 300 + 600 w + wobble >= 813, at w ~0.85: 0.85 days in
    assert w["time_to_90pct_s"] == pytest.approx(0.85 * DAY, abs=3 * STEP)
    fill = rep.topic("l2arc_fill")[0].numbers
    assert fill["size_max_b"] == pytest.approx(1.5e9, rel=1e-6)
    assert fill["time_to_90pct_s"] == pytest.approx(0.9 * DAY, abs=2 * STEP)
    text = rep.render()
    assert "Window: 7 h" not in text and "on a 5 min grid" in text
