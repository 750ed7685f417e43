"""Live ``top`` writing on into a recording (the soak resumed after a reboot, issue 38): the timeline holds the
earlier run(s) the file already had, read in a worker thread and merged into the live one, with the reboot's ``R``
on its axis; a file that cannot be read says so once and the live timeline goes on."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import List, Tuple

from tests.conftest import TEST_DATA, gunzip, wait_until_async
from tests.unit.views.top.test_top_app import _until, run, screen_text
from tests.unit.views.top.test_top_listen import HOST, captures, top_args
from zfsmon import names
from zfsmon.analysis.restart import is_resumed
from zfsmon.commands import top
from zfsmon.model import Record, Sample
from zfsmon.store import Recorder, Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.panels.whole_run import TIMELINE_LABEL
from zfsmon.views.top.state import TopState
from zfsmon.views.top.timeline import read_timeline

RESTARTS = TEST_DATA / "openzfs-2.3" / "warmup" / "soak-restarts.zfsmon.gz"
#: the heading's words for a timeline that holds the recording's earlier run(s)
EARLIER = "incl. earlier run(s)"


def _app(path: str, before: float, now: float) -> Tuple[TopApp, LiveFeed]:
    feed = LiveFeed()
    info = panels.HeaderInfo("zguest", "Linux", "openzfs 2.3", path, "live")
    app = TopApp(TopState(300, interval=2.0), info, 2.0, feed=feed, clock=lambda: now, earlier=(path, before))
    return app, feed


def _axis(text: str) -> str:
    """The timeline's axis line on the screen (the row of ``─`` with its marks)."""
    return next(ln for ln in text.splitlines() if ln[TIMELINE_LABEL:].lstrip().startswith(("─", "━", "|", "R")))


def test_live_top_writing_on_into_the_resumed_soak_shows_its_earlier_runs_and_the_reboot(tmp_path) -> None:
    """The real soak of three boots (PROVENANCE.md there), and a fourth boot's ``top`` writing on into it: the
    last boot's readings again, ten minutes after the file's last one, recorded and fed live as the session does.
    The timeline then starts at the soak's first reading, has an ``R`` for each resume (the two in the file, and
    this process's), and holds every reading once: bucket by bucket what replay reads from the whole file."""
    path = gunzip(RESTARTS, tmp_path)
    with Recording.open(path) as rec:
        lo, hi = rec.time_range() or (0.0, 0.0)
        last_boot = max(e.ts for e in rec.events() if is_resumed(e))
        again = [s for s in rec.samples(start=last_boot)]
    opened_at = hi + 600.0
    shift = opened_at + 1.0 - min(s.ts for s in again)
    live: List[Record] = [dataclasses.replace(s, ts=s.ts + shift) for s in again]
    batches = [list(g) for _ts, g in itertools.groupby(sorted(live, key=lambda r: r.ts), key=lambda r: r.ts)]
    rec = Recorder(path, {"argv": "zfsmon top --soak --lab zguest --interval 2"}, clock=lambda: opened_at)
    assert is_resumed(rec.opened) and rec.opened.ts == opened_at

    async def go():
        app, feed = _app(path, rec.opened.ts, max(r.ts for r in live))
        async with app.run_test(size=(160, 50)) as pilot:
            feed.sink([rec.opened])  # as top's dashboard() does
            for batch in batches:  # the recorder first, then the screen (the session's order)
                rec.write(batch)
                feed.sink(batch)
            await _until(pilot, lambda: app.timeline is not None and app.timeline.earlier, "the earlier runs merged")
            await _until(pilot, lambda: app.state.fed >= len(live) + 1, "every live record fed")
            app.redraw()
            text = await _until(pilot, lambda: EARLIER in screen_text(app) and screen_text(app),
                                "the heading to say so")
            return app.timeline, _axis(text)
    try:
        tl, axis = run(go())
    finally:
        rec.close()
    assert tl is not None
    whole = read_timeline(path)  # replay of the file now: the earlier runs and what this process wrote
    # the soak's first readings drawn (the recording began at lo; a second later its first interval reports)
    assert tl.first == whole.first and lo <= tl.first < lo + 5 and min(tl.buckets) * tl.every <= tl.first
    assert [e.ts for e in tl.events if is_resumed(e)][-1] == opened_at
    assert axis[TIMELINE_LABEL:].count("R") == 3, axis
    while tl.every < whole.every:
        tl._halve()
    while whole.every < tl.every:
        whole._halve()
    assert tl.buckets.keys() == whole.buckets.keys()
    for i, b in whole.buckets.items():
        assert b.keys() == tl.buckets[i].keys(), i
        for part, (t, n) in b.items():
            got = tl.buckets[i][part]
            assert abs(got[0] - t) <= 1e-6 * max(1.0, abs(t)) and abs(got[1] - n) <= 1e-9 * max(1.0, n), (i, part)


def test_a_record_path_that_is_no_recording_says_so_once_and_the_live_timeline_goes_on(tmp_path) -> None:
    path = tmp_path / "soak.zfsmon"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # damaged: not a database a reader can open
    t0 = 1_796_178_000.0
    (tmp_path / "real").mkdir()
    samples = [Sample(t0 + i, s.entity, s.metrics, interval=1.0) for i, s in enumerate(_pgbench(12, tmp_path / "real"))]

    async def go():
        app, feed = _app(str(path), t0, t0 + 11)
        async with app.run_test(size=(160, 50)) as pilot:
            for s in samples:
                feed.sink([s])
            await _until(pilot, lambda: any("earlier runs of the recording not shown" in str(n.message)
                                            for n in app._notifications), "the one line")
            await _until(pilot, lambda: app.state.fed >= len(samples), "every live record fed")
            app.redraw()
            await _until(pilot, lambda: "whole run" in screen_text(app), "the live timeline")
            notes = [n for n in app._notifications if "earlier runs" in str(n.message)]
            return app.timeline, notes, screen_text(app)
    tl, notes, text = run(go())
    assert len(notes) == 1 and "\n" not in str(notes[0].message)
    assert tl is not None and not tl.earlier and EARLIER not in text
    assert tl.first == t0 and [i for i, _v in tl.series("tps")] == [int(t0) + i for i in range(12)]
    assert path.read_bytes()[:16] == b"SQLite format 3\x00" and len(path.read_bytes()) == 216  # never written


def _pgbench(n: int, scratch: Path) -> List[Sample]:
    """pgbench's first ``n`` TPS readings of the real soak."""
    with Recording.open(gunzip(RESTARTS, scratch)) as rec:
        return [s for s in rec.samples() if s.entity.name == names.PGBENCH and "tps" in s.metrics][:n]


def _top(monkeypatch, fixtures, record: str):
    """``zfsmon top -i 0.2 --record RECORD`` as :func:`top.dashboard` sets it up, reading a genuine arcstats
    capture (read at the sampler's own times: the zpool iostat capture carries its own, days old)."""
    monkeypatch.setattr(top, "probe", lambda: HOST)
    monkeypatch.setattr(top, "pick_collectors",
                        lambda *_a, **_k: ([c for c in captures(fixtures) if c.name == "arcstats"], []))
    return top.dashboard(top_args("--record", record))


def test_top_recording_into_the_resumed_soak_reads_its_earlier_runs(monkeypatch, fixtures, tmp_path) -> None:
    """The real set-up: ``--record`` names the soak's file, so the recorder resumes it; the dashboard is told
    where the earlier runs end (the moment it opened the file), feeds that resume to the screen, and the timeline
    holds the earlier runs' readings and resumes besides its own."""
    path = gunzip(RESTARTS, tmp_path)
    earlier = read_timeline(path)

    async def go():
        with _top(monkeypatch, fixtures, path) as live:
            opened = live.session.recorder.opened if live.session.recorder else None
            assert opened is not None and is_resumed(opened) and live.app.earlier == (path, opened.ts)
            live.session.start(on_end=live.app.exit)
            async with live.app.run_test(size=(160, 50)) as pilot:
                app = live.app
                await wait_until_async(lambda: app.timeline is not None and app.timeline.earlier
                                       and app.timeline.last is not None and app.timeline.last > opened.ts, 60,
                                       "the earlier runs merged and a live reading", pilot.pause)
                app.redraw()
                await wait_until_async(lambda: EARLIER in screen_text(app), 60, "the heading to say so", pilot.pause)
                return app.timeline, opened.ts
    tl, opened_ts = run(go())
    resumes = [e.ts for e in tl.events if is_resumed(e)]
    assert tl.first == earlier.first and resumes == [e.ts for e in earlier.events if is_resumed(e)] + [opened_ts]


def test_top_recording_into_a_new_file_reads_nothing_back(monkeypatch, fixtures, tmp_path) -> None:
    with _top(monkeypatch, fixtures, str(tmp_path / "new.zfsmon")) as live:
        assert live.app.earlier is None
        assert live.app.timeline is not None and live.app.timeline.floor is None
