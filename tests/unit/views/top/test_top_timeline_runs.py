"""The timeline's TPS and fio IOPS from run summaries where there are no interval samples: a loop soak
(``pgbench -T 58 ...`` over and over, no ``-P``) records one ``pgbench-run`` summary per run and nothing per
second, a fio run without ``--status-interval`` only its final report. Each run's rate is spread over the seconds
it covered, the row says it is per run, and per-second TPS wins where there is some."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import List, Tuple

import numpy as np
import pytest
from rich.console import Console

from tests.conftest import TEST_DATA, wait_until_async
from zfsmon import names
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources.fio import json_output as fio_json
from zfsmon.sources.pgbench.text import PgbenchTextParser
from zfsmon.store import Recording
from zfsmon.views.top import panels, timeline
from zfsmon.views.top.app import TopApp
from zfsmon.views.top.replay import ReplayCursor

PG = TEST_DATA / "pgbench"
#: 22 runs of pgbench -T 20 -S -c 8 -j 2 on the lab, no -P, tee'd (a banner per run, then its summary)
LOOP = PG / "pg15.18-lab__soak_loop_22x_pgbench_-T20_-c8_-j2_-S_cold-l2arc_tee.txt"
#: pgbench -P 1 --progress-timestamp: four progress lines, then the summary
PROGRESS = PG / "pg15.18-local__pgbench_-c4_-j2_-T4_-P1_--progress-timestamp_-N.txt"
RUN = Entity(Kind.WORKLOAD, names.PGBENCH_RUN)
T0 = 1_795_000_000.0


def _loop_live(run_s: float = 20.0, pause: float = 2.0) -> List[Tuple[float, List[Record]]]:
    """The loop capture as a live soak sees it: a run's banner when it starts, its summary ``run_s`` later
    (pgbench's stdout through a pipe comes at the end), the next run ``pause`` after; (ts, records) per line."""
    parser = PgbenchTextParser()
    out: List[Tuple[float, List[Record]]] = []
    start = T0 - run_s - pause
    for line in LOOP.read_text().splitlines():
        if line.startswith("pgbench ("):
            start += run_s + pause
            ts = start
        elif line.startswith("starting vacuum"):
            ts = start
        else:
            ts = start + run_s
        out.append((ts, parser.feed(line, ts)))
    return out


def _summaries(batches) -> List[Sample]:
    return [r for _ts, recs in batches for r in recs if isinstance(r, Sample) and r.entity == RUN]


def _rows(tl: timeline.Timeline, width: int = 100, closed_only: bool = False):
    start, end = tl.span()
    return {label: vals for _n, label, _u, _f, vals in timeline.rows(tl, start, end, width, closed_only)}


def test_a_loop_soak_without_progress_draws_each_runs_tps_over_its_span():
    batches = _loop_live()
    runs = _summaries(batches)
    assert len(runs) == 22 and all(s.interval == 20.0 for s in runs)
    tl = timeline.Timeline(max_buckets=1024)  # 1 s buckets all along (22 runs of 22 s)
    for _ts, recs in batches:
        tl.feed(recs)
    got = _rows(tl)
    assert "TPS per run" in got and "TPS per s" not in got  # the row says what it is
    # every second of a run holds that run's TPS; the 2 s pauses between runs hold none
    for s in runs:
        for sec in range(int(s.ts - 20), int(s.ts)):
            part = tl.buckets[sec]["tps_run"]
            assert part[1] == pytest.approx(1.0) and part[0] == pytest.approx(s.metrics["tps"]), (s, sec)
        assert "tps_run" not in tl.buckets.get(int(s.ts) + 1, {})
    series = tl.series("tps_run")
    assert [v for _i, v in series][:20] == pytest.approx([runs[0].metrics["tps"]] * 20)
    # the cold start: the first run's 195 TPS against the plateau's thousands
    assert runs[0].metrics["tps"] == pytest.approx(195.078) and max(v for _i, v in series) > 10 * 195
    # run boundaries: each run's start and end are on the axis
    assert sum(e.kind == EventKind.RUN_END for e in tl.events) == 22
    assert sum(e.kind == EventKind.RUN_START for e in tl.events) == 22


def test_a_summary_fills_buckets_that_had_closed_and_the_panel_redraws():
    batches = _loop_live()
    tl = timeline.Timeline()
    ticks = [T0 + k for k in range(0, 21)]  # a ZFS reading every second, so buckets close as live
    pool = Entity(Kind.POOL, "tank", "tank")
    for ts in ticks:
        tl.feed([Sample(ts, pool, {"read_ops": 5.0}, interval=1.0)])
    before = tl.version
    assert not tl.series("tps_run", closed_only=True)
    first_summary = next(recs for _ts, recs in batches if any(isinstance(r, Sample) for r in recs))
    tl.feed(first_summary)
    assert tl.version != before
    assert len(tl.series("tps_run", closed_only=True)) == 20  # the run's seconds before the open one


def test_per_second_tps_wins_over_the_run_summaries():
    parser = PgbenchTextParser()
    recs: List[Record] = []
    for k, line in enumerate(PROGRESS.read_text().splitlines()):
        recs += parser.feed(line, 1795331722.6 + min(k, 6))
    recs += parser.flush(1795331727.0)
    assert any(isinstance(r, Sample) and r.entity == RUN for r in recs)
    tl = timeline.Timeline()
    tl.feed(recs)
    got = _rows(tl)
    assert "TPS per s" in got and "TPS per run" not in got


def _fio_results(path) -> List[Sample]:
    return fio_json.run_results(json.loads(path.read_text()))


def test_fio_iops_from_its_final_report_without_status_reports():
    res = _fio_results(TEST_DATA / "fio" / "randread-json.json")  # one job, 3 s, no --status-interval
    assert len(res) == 1 and res[0].interval == pytest.approx(3.001)
    tl = timeline.Timeline()
    tl.feed([Sample(res[0].ts - 10 + k, Entity(Kind.POOL, "tank", "tank"), {"read_ops": 1.0}) for k in range(12)])
    tl.feed(res)
    got = _rows(tl, width=12)
    assert "IOPS per run" in got and "IOPS per s" not in got and "TPS per run" not in got
    iops = res[0].metrics["iops"]
    inside = [v for i, v in tl.series("iops_run") if (i + 1) <= res[0].ts and i >= res[0].ts - res[0].interval]
    assert len(inside) == 2 and inside == pytest.approx([iops, iops])
    # a bucket's IOPS: the run's I/Os in it over the bucket's seconds, so the I/Os add up to fio's
    total = sum(v * tl.every for _i, v in tl.series("iops_run"))
    assert total == pytest.approx(iops * res[0].interval) and total == pytest.approx(res[0].metrics["ios"], rel=1e-3)


def _naive(tl_every: float, runs) -> dict:
    """Each run cut bucket by bucket, one at a time: what :meth:`Timeline.runs` must equal."""
    out: dict = {}
    for end, span, rate in runs:
        start = end - span
        if span <= 0:
            acc = out.setdefault(int(end // tl_every), [0.0, 0.0])
            acc[0] += rate
            acc[1] += 1.0
            continue
        t = start
        while t < end:
            i = int(t // tl_every)
            b = min(end, (i + 1) * tl_every)
            acc = out.setdefault(i, [0.0, 0.0])
            acc[0] += rate * (b - t)
            acc[1] += b - t
            t = b
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("every", [1.0, 8.0])
def test_many_overlapping_runs_sum_as_one_by_one(seed, every):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    ends = T0 + np.round(rng.uniform(0, 200, n), 3)
    spans = np.where(rng.random(n) < 0.1, 0.0, np.round(rng.uniform(0, 50, n), 3))
    rates = np.round(rng.uniform(0, 5000, n), 3)
    tl = timeline.Timeline(every)
    tl.floor = T0 - 1000.0
    half = n // 2  # two calls (two store blocks) add up as one
    tl.runs("tps_run", ends[:half], spans[:half], rates[:half])
    tl.runs("tps_run", ends[half:], spans[half:], rates[half:])
    want = _naive(every, zip(ends.tolist(), spans.tolist(), rates.tolist()))
    got = {i: b["tps_run"] for i, b in tl.buckets.items() if "tps_run" in b}
    assert sorted(got) == sorted(i for i, acc in want.items() if acc[1] > 0)
    for i, (total, secs) in got.items():
        assert secs == pytest.approx(want[i][1], abs=1e-6) and total == pytest.approx(want[i][0], rel=1e-9, abs=1e-4)


def test_block_and_one_by_one_agree():
    runs = _summaries(_loop_live())
    one, cols = timeline.Timeline(), timeline.Timeline()
    for s in runs:
        one.sample(s.ts, s.entity, s.metrics, s.interval)
    names_ = sorted(runs[0].metrics)
    cols.sample_block([s.ts for s in runs], RUN, {k: np.asarray([s.metrics[k] for s in runs]) for k in names_},
                      [s.interval for s in runs])
    assert cols.every == one.every and sorted(cols.buckets) == sorted(one.buckets)
    for i, b in one.buckets.items():
        assert cols.buckets[i]["tps_run"] == pytest.approx(b["tps_run"])


@pytest.mark.parametrize("interval", [1e300, float("inf"), float("nan"), -5.0, None])
def test_a_hostile_run_span_stays_bounded(interval):
    tl = timeline.Timeline()
    tl.feed([Sample(T0, RUN, {"tps": 100.0}, interval=interval),
             Sample(T0 + 1, RUN, {"tps": float("inf")}, interval=1.0)])
    assert len(tl.buckets) <= tl.max_buckets
    start, end = tl.span()
    assert end - start <= timeline.MAX_RUN_S * 2 + tl.every
    time.gmtime(start)  # the panel prints it
    tl2 = timeline.Timeline()
    tl2.floor = T0 - 60
    tl2.feed([Sample(T0, RUN, {"tps": 100.0}, interval=interval)])
    assert tl2.span()[0] >= T0 - 60 - tl2.every


def test_replay_of_the_real_loop_soak_draws_tps_per_run(lab_soak_file):
    """The real 100-minute lab soak (loop mode, no -P): the replay's timeline has its TPS row, per run, from the
    recording's pgbench-run summaries, and a step of the cursor stays a redraw of a cached row."""
    with Recording.open(lab_soak_file) as rec:
        rng = rec.time_range()
        runs = [s for s in rec.samples(kinds=[Kind.WORKLOAD]) if s.entity.name == names.PGBENCH_RUN]
        assert len(runs) == 100 and not any(s.entity.name == names.PGBENCH for s in rec.samples(kinds=[Kind.WORKLOAD]))
    tl = timeline.read_timeline(lab_soak_file)
    assert tl.floor == rng[0]
    got = _rows(tl, width=120)
    assert "TPS per run" in got and "TPS per s" not in got
    assert max(v for _i, v in tl.series("tps_run")) == pytest.approx(max(s.metrics["tps"] for s in runs), rel=0.05)

    async def go():
        rec = Recording.open(lab_soak_file)
        cur = ReplayCursor(rec, 300.0)
        info = panels.HeaderInfo("lab", "Linux", "zfs-fuse", lab_soak_file, "replay")
        app = TopApp(cur.state, info, cur.interval, replay=cur, export_dir=os.path.dirname(lab_soak_file))
        async with app.run_test(size=(160, 50)) as pilot:
            def drawn() -> str:
                w = app.query_one("#timeline")
                text = w.render().plain
                return text if "TPS per run" in text else ""
            text = await wait_until_async(drawn, 60.0, "the recording's TPS per run on the timeline", pilot.pause)
            row = next(line for line in text.splitlines() if line.startswith("TPS per run"))
            cells = row[panels.TIMELINE_LABEL:].split(" max ")[0].rstrip()
            # a cold start: the first cells low, the plateau high
            assert cells[0] in "▁▂▃" and cells.count("█") + cells.count("▇") > len(cells) // 3, cells
    asyncio.run(go())


def test_a_run_end_event_without_summary_is_a_boundary_only():
    tl = timeline.Timeline()
    tl.feed([Event(T0, EventKind.RUN_END, "pgbench run 1 ended (no summary: killed or aborted)", source="pgbench")])
    assert tl.span() is None and len(tl.events) == 1


def test_a_loop_soaks_run_boundaries_leave_the_rows_their_colour_and_the_window_on_the_axis(lab_soak_file):
    """The real lab soak: 100 runs of 58 s in 100 minutes put a run boundary in nearly every cell of the panel.
    They are drawn on the axis (``|``), dim as it is; the rows keep their colour (only a user's mark colours its
    column, magenta, as on the axis), and the window the other panels show stays visible: its line heavy (``━``),
    and so the boundaries in it (``┃``)."""
    tl = timeline.read_timeline(lab_soak_file)
    with Recording.open(lab_soak_file) as rec:
        start, end = rec.time_range()
    width = 95  # the timeline's width at 160 columns
    text = panels.timeline(tl, end, panels.ViewOptions(interval=1.0), width, False, (start, end), 300.0)
    lines = text.split("\n")
    w = width - panels.TIMELINE_LABEL - panels.TIMELINE_RIGHT - 1
    axis = lines[-2].plain[panels.TIMELINE_LABEL:panels.TIMELINE_LABEL + w]
    assert axis.count("|") > w // 2  # the boundaries are there, nearly a cell each
    window = axis.rstrip("▲")[-3:]  # the window's cells before the cursor at the end: boundaries heavy there
    assert window and set(window) <= {"━", "┃"} and "┃" in window, axis
    console = Console()
    for line in lines[1:-2]:
        styles = [str(line.get_style_at_offset(console, panels.TIMELINE_LABEL + i)) for i in range(w)]
        assert not any("magenta" in s for s in styles), line.plain  # the soak has no user mark
        assert styles.count("cyan") >= w - 1, line.plain  # all but the cursor's column
    # a user's mark still colours its column in the rows and on the axis
    tl.feed([Event(start + (end - start) / 2, EventKind.MARK, "a note", source="user")])
    marked = panels.timeline(tl, end, panels.ViewOptions(interval=1.0), width, False, (start, end), 300.0)
    for line in marked.split("\n")[1:-1]:
        assert any("magenta" in str(line.get_style_at_offset(console, panels.TIMELINE_LABEL + i)) for i in range(w))
