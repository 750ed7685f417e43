"""Textual pilot tests of the dashboard on a recording built from genuine captures (tests/unit/top_data.py)."""

from __future__ import annotations

import asyncio
import bisect
import csv
import gc
import gzip
import itertools
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest
from rich.text import Text

from tests.conftest import wait_until_async
from tests.unit import top_data, vdevprops_data
from zfsmon import gcpolicy
from zfsmon.model import EventKind, Kind, Role
from zfsmon.store import Recorder, Recording
from zfsmon.views import csv_export
from zfsmon.views.top import panels
from zfsmon.views.top.app import KEYS, LiveFeed, TopApp, help_text
from zfsmon.views.top.lines import Lines
from zfsmon.views.top.replay import ReplayCursor
from zfsmon.views.top.state import TopState

HEADINGS = ["Vdevs", "ARC / L2ARC", "ZIL / SLOG", "Workload", "Read path", "Findings"]


def screen_text(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


def _showing(app, *words: str) -> str:
    """The screen's text once it shows every one of ``words``, else "" (a condition to wait for)."""
    text = screen_text(app)
    return text if all(w in text for w in words) else ""


@pytest.fixture
def recording(tmp_path, fixtures) -> str:
    return top_data.write_recording(str(tmp_path / "fx.zfsmon"))


def replay_app(path: str, window: float = 300.0) -> TopApp:
    rec = Recording.open(path)
    cur = ReplayCursor(rec, window)
    info = panels.HeaderInfo("fixture-host", "Linux fixtures", "captures", path, "replay")
    return TopApp(cur.state, info, cur.interval, replay=cur, export_dir=os.path.dirname(path))


def run(coro):
    return asyncio.run(coro)


async def _settle(pilot):
    await pilot.pause()
    await pilot.pause()


async def _until(pilot, predicate, what: str, timeout: float = 30.0):
    """Wait, in small pilot pauses, for what the app does on its timers or in threads (never a fixed time)."""
    return await wait_until_async(predicate, timeout, what, pilot.pause)


def test_80x24_has_every_heading_whole(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(80, 24)) as pilot:
            await _settle(pilot)
            text = screen_text(app)
            lines = text.splitlines()
            assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
            for h in HEADINGS:
                assert f" {h} " in text, h
            assert "REPLAY" in lines[0] and "fixture-host" in lines[0]
            assert "pools" in lines[1] and "ziocap" in lines[1]
    run(go())


def test_80x24_cuts_the_header_and_the_key_bar_visibly_and_keeps_help_on_it(recording, tmp_path):
    """At 80 columns the header's second line and the key bar are longer than the screen: each is cut with an
    ellipsis on its own line (not wrapped onto a line its height hides, which lost the window and the recording
    without a sign), and the key bar starts with what finds the others (? help, the palette)."""
    async def check(app, header_cut: bool):
        async with app.run_test(size=(80, 24)) as pilot:
            await _settle(pilot)
            lines = screen_text(app).splitlines()
            assert lines[1].rstrip().endswith("…") == header_cut, lines[1]
            assert header_cut or "every 1s  window 5m  rec " in lines[1], lines[1]
            assert lines[-1].startswith("? help  ^p cmds  q quit") and lines[-1].rstrip().endswith("…"), lines[-1]
    run(check(replay_app(recording), True))  # replay's cursor takes the room: the line is cut
    run(check(_live_app(tmp_path)[0], False))  # live's fits, the recording's path shortened from its start


def test_tree_shows_roles_and_tab_switches_pool(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            await _settle(pilot)
            assert app.opts.pool == "testpool"
            assert "raidz1-0" in screen_text(app)
            await pilot.press("tab")
            await _settle(pilot)
            text = screen_text(app)
            assert app.opts.pool == "ziocap" and "[ziocap]" in text
            for name in ("data", "logs", "cache", "mirror-0", "loop1", "loop5", "loop6"):
                assert name in text, name
            lines = text.splitlines()
            at = {n: next(i for i, line in enumerate(lines) if f" {n} " in f" {line} ") for n in
                  ("logs", "loop5", "cache", "loop6")}
            assert at["logs"] < at["loop5"] < at["cache"] < at["loop6"]
    run(go())


def test_help_lists_every_key_and_keys_do_it(recording):
    text = help_text("replay").plain
    for k in KEYS:
        if "replay" in k.modes:
            assert k.shown in text and k.help in text

    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            # the timeline (below the tree, in its scroll box) is read in a worker: the box's height is final after
            await _until(pilot, lambda: "TPS" in app.query_one("#timeline").render().plain, "the timeline read")
            await pilot.press("question_mark")
            await _settle(pilot)
            assert "zfsmon top: keys" in screen_text(app)
            await pilot.press("escape")
            await _settle(pilot)
            await pilot.press("tab")
            await pilot.press("r")
            await _settle(pilot)
            assert app.opts.totals and "totals" in screen_text(app)
            await pilot.press("s")
            await _settle(pilot)
            assert app.opts.sort == "ops" and "sort:ops" in screen_text(app)
            await pilot.press("c")
            await _settle(pilot)
            assert "loop1" not in screen_text(app) and "mirror-0" in screen_text(app)
            await pilot.press("c")
            await pilot.press("plus")
            await _settle(pilot)
            assert app.state.window_s == 900 and "window 15m" in screen_text(app)
            await pilot.press("minus")
            await pilot.press("minus")
            await _settle(pilot)
            assert app.state.window_s == 60
            await pilot.press("x")
            await _settle(pilot)
            assert app.opts.raw
            await pilot.press("down")
            await _settle(pilot)
            box = app.query_one("#treebox")
            assert box.scroll_y == min(1, box.max_scroll_y)  # scrolls if the tree is taller than its box
            await pilot.press("slash")
            await _settle(pilot)
            await pilot.press(*"loop5", "enter")
            await _settle(pilot)
            text = screen_text(app)
            assert app.opts.filter == "loop5" and "loop5" in text and "mirror-0" not in text
    run(go())


def test_arrow_and_page_keys_scroll_a_tall_tree(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(80, 24)) as pilot:
            # the timeline (below the tree, in the same box) is read in a worker: the box's height is final after
            await _until(pilot, lambda: "TPS" in app.query_one("#timeline").render().plain, "the timeline read")
            await pilot.press("tab")  # ziocap: data, logs and cache, taller than the tree's box at 80x24
            await _settle(pilot)
            box = app.query_one("#treebox")
            bottom = box.max_scroll_y
            assert bottom >= 12 and box.scroll_y == 0  # the tree and the timeline's 8 lines
            await pilot.press("down")
            await _settle(pilot)
            assert box.scroll_y == 1
            await pilot.press("pagedown", "pagedown")
            await _settle(pilot)
            assert box.scroll_y == bottom
            await pilot.press("up")
            await _settle(pilot)
            assert box.scroll_y == bottom - 1
            await pilot.press("pageup", "pageup")
            await _settle(pilot)
            assert box.scroll_y == 0
    run(go())


def test_a_tall_tree_builds_the_rows_on_screen_and_scrolling_draws_the_others(recording):
    """Only the tree's rows on screen (and a line either side) are made; the tree keeps its height, and a row a
    scroll brings on screen is drawn at once, as a tree made whole would show it."""
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: "TPS" in app.query_one("#timeline").render().plain, "the timeline read")
            await pilot.press("tab")  # ziocap: taller than the tree's box at 80x24
            await _settle(pilot)
            tree, box = app.query_one("#tree", Lines), app.query_one("#treebox")
            whole = [t.plain for t in panels.tree_lines(app.state, app.opts, app._tree_w)]
            assert len(tree.texts) == len(whole)  # the box's scroll range is the whole tree's
            h = box.scrollable_content_region.height
            assert len(whole) > h + 2
            made = [y for y, t in enumerate(tree.texts) if t.plain]
            assert made and max(made) <= h  # the rows below the screen are not made
            for y in (0, h - 1):
                assert tree.texts[y].plain == whole[y]
            await pilot.press("pagedown", "pagedown")
            await _settle(pilot)
            top = int(box.scroll_y)
            assert top > 1
            shown = [tree.texts[y].plain for y in range(top, min(len(whole), top + h))]
            assert shown == whole[top:top + len(shown)]  # what scrolled on screen is drawn
            first_row = next(y for y, t in enumerate(whole) if t.startswith("vdev")) + 1  # below the column heads
            assert first_row < top - 1 and not tree.texts[first_row].plain  # what scrolled off is not kept drawn
            last = whole[-1].split()[0] if whole[-1].strip() else whole[-2].split()[0]
            assert last in screen_text(app)
    run(go())


def test_replay_cursor_keys(recording):
    async def go():
        app = replay_app(recording)
        cur = app.replay
        async with app.run_test(size=(100, 30)) as pilot:
            await _settle(pilot)
            end = cur.cursor
            await pilot.press("left")
            await _settle(pilot)
            assert cur.cursor == end - cur.interval
            await pilot.press("right")
            await _settle(pilot)
            assert cur.cursor == end
            await pilot.press("left_square_bracket")  # back to the fixture's mark
            await _settle(pilot)
            assert cur.cursor == top_data.T_END - 2.0
            assert any(e.text == top_data.MARK_TEXT for e in app.state.window_events((EventKind.MARK,)))
            await pilot.press("home")
            await _settle(pilot)
            assert cur.cursor == cur.start
            await pilot.press("end")
            await pilot.press("greater_than_sign")
            await _settle(pilot)
            assert cur.cursor == cur.end and cur.speed == 2.0
            await pilot.press("left", "left")  # back to the fsync report: writes on the data leaves
            await pilot.press("tab")
            await _settle(pilot)
            text = screen_text(app)
            assert "384" in text and "11.4M" in text  # loop1's write ops and bandwidth in that report
    run(go())


def _live_app(tmp_path, on_mark=None):
    feed = LiveFeed()
    info = panels.HeaderInfo("fixture-host", "Linux", "captures", str(tmp_path / "live.zfsmon"), "live")
    app = TopApp(TopState(300), info, 1.0, feed=feed, on_mark=on_mark, export_dir=str(tmp_path),
                 clock=lambda: top_data.T_END)
    return app, feed


def test_replay_works_out_the_findings_once_per_cursor_time(recording, monkeypatch):
    """A resting cursor's window does not change: its findings are not worked out again every 30 s (0.5-1 s of CPU
    each at 64 leaves), however long the user looks; a step makes new ones."""
    started = []

    async def go():
        app = replay_app(recording)
        start = app._start_findings
        def counted(now):  # a job starts unless one is running
            if not app._findings_busy:
                started.append(app.state.now)
            start(now)

        monkeypatch.setattr(app, "_start_findings", counted)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: app.report is not None and not app._findings_busy, "the first findings")
            assert started == [app.state.now]
            later = time.time() + 3600.0
            app.clock = lambda: later  # an hour at the same cursor
            for _ in range(3):
                app.redraw()
                await _settle(pilot)
            assert len(started) == 1
            at = app.state.now
            await pilot.press("left")
            await _until(pilot, lambda: app._report_key is not None and app._report_key[0] < at
                         and not app._findings_busy, "the findings of the cursor's new time")
            assert len(started) == 2 and started[1] == app.state.now < at
            window = app.state.window_s
            await pilot.press("minus")  # a shorter window at the same cursor: another window, other findings
            await _until(pilot, lambda: app._report_key == (app.state.now, app.state.window_s) and app.report
                         and not app._findings_busy, "the findings of the shorter window")
            assert app.state.window_s < window and len(started) == 3
    run(go())


def _count_findings_starts(app, started: list, what) -> list:
    """Each findings job the app really starts (one is not started while another runs) appends ``what(now)`` to
    ``started``; the app's clock becomes the one-element list returned, which the test moves."""
    start = app._start_findings

    def counted(now):
        if not app._findings_busy:
            started.append(what(now))
        start(now)

    app._start_findings = counted
    clock = [top_data.T_END]
    app.clock = lambda: clock[0]
    return clock


def test_live_findings_costing_more_than_their_share_of_a_core_come_less_often(tmp_path, fixtures, monkeypatch):
    """A findings run is timed in its thread; live, the next one comes FINDINGS_CPU_SHARE of a core later at the
    most: a run that took 0.9 s of CPU is followed 90 s later, not 30 s (a large pool's window costs more to
    analyse, and the goose-egg line is judged every interval anyway). New records came in both cases."""
    batches = top_data.batches()
    half = len(batches) // 2
    first = [r for _ts, b in batches[:half] for r in b]
    later = [r for _ts, b in batches[half:] for r in b]
    started = []
    ticks = iter(range(10_000))
    monkeypatch.setattr(time, "thread_time", lambda: 0.9 * next(ticks))  # each run: 0.9 s between its two reads

    async def go():
        app, feed = _live_app(tmp_path)
        clock = _count_findings_starts(app, started, lambda now: now)
        async with app.run_test(size=(160, 50)) as pilot:
            feed.sink(first)
            await _until(pilot, lambda: app.state.fed > 0, "the first records to be fed")
            app.redraw()
            await _until(pilot, lambda: started and not app._findings_busy, "a findings run")
            assert app.findings_every() == pytest.approx(90.0)  # 0.9 s of CPU at 1 % of a core
            runs = len(started)
            feed.sink(later)
            await _until(pilot, lambda: app.state.fed == len(first) + len(later), "the later records to be fed")
            clock[0] += 31.0  # FINDINGS_EVERY_S has passed, but not 90 s
            for _ in range(3):
                app.redraw()
                await _settle(pilot)
            assert len(started) == runs
            clock[0] += 60.0
            app.redraw()
            await _until(pilot, lambda: len(started) == runs + 1 and not app._findings_busy, "the next run")
            assert started[-1] - started[-2] >= 90.0
    run(go())


def test_live_findings_wait_for_new_records(tmp_path, fixtures):
    """Live, the findings run every 30 s as the window slides; when no record came since the last run (a source
    with a long interval, a stalled one) the window is the same, and so would be the answer: no run."""
    batches = top_data.batches()
    first = [r for ts, b in batches if ts <= 1795332271.0 for r in b]
    later = [r for ts, b in batches if ts > 1795332271.0 for r in b]
    started = []

    async def go():
        app, feed = _live_app(tmp_path)
        clock = _count_findings_starts(app, started, lambda now: app.state.fed)
        async with app.run_test(size=(160, 50)) as pilot:
            feed.sink(first)
            await _until(pilot, lambda: app.state.fed > 0, "the first records to be fed")
            n = app.state.fed
            for _ in range(2):  # the run at start (an empty window) may still be running: then one more, 30 s on
                app.redraw()
                await _until(pilot, lambda: not app._findings_busy, "a findings run")
                if started[-1] == n:
                    break
                clock[0] += 31.0
            assert started[-1] == n and app.report is not None
            runs = len(started)
            clock[0] += 31.0  # due by the clock, but nothing new came
            for _ in range(3):
                app.redraw()
                await _settle(pilot)
            assert len(started) == runs
            feed.sink(later)
            await _until(pilot, lambda: app.state.fed > n, "the later records to be fed")
            app.redraw()
            await _until(pilot, lambda: len(started) == runs + 1 and not app._findings_busy,
                         "the findings of the new window")
            assert started[-1] == app.state.fed > n
    run(go())


def test_the_dashboard_runs_with_fewer_collections_and_puts_the_threshold_back(tmp_path):
    """A refresh makes thousands of short-lived objects: while the app runs, the cyclic collector's young threshold
    is raised (zfsmon.gcpolicy; ~5 ms of each 1 Hz refresh at 64 leaves went to the collector), and its exit puts
    the interpreter's own back."""
    before = gc.get_threshold()
    assert before[0] != gcpolicy.YOUNG_THRESHOLD

    async def go():
        app, _feed = _live_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(pilot)
            assert gc.get_threshold() == (gcpolicy.YOUNG_THRESHOLD, *before[1:])
        assert gc.get_threshold() == before
    run(go())


def test_pause_stops_updates(tmp_path, fixtures):
    batches = top_data.batches()
    first = [r for ts, b in batches if ts <= 1795332271.0 for r in b]
    later = [r for ts, b in batches if ts > 1795332271.0 for r in b]

    async def go():
        app, feed = _live_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            feed.sink(first)
            await _until(pilot, lambda: app.state.fed > 0, "the first records to be fed")
            app.redraw()
            await _settle(pilot)
            await pilot.press("p")
            await _settle(pilot)
            before = screen_text(app)
            assert "PAUSED" in before
            n = app.state.fed
            feed.sink(later)
            await _until(pilot, lambda: app.held, "the later records to be taken (and held) while paused")
            app.redraw()
            await _settle(pilot)
            assert app.state.fed == n and screen_text(app) == before
            await pilot.press("p")
            await _settle(pilot)
            assert app.state.fed > n and "LIVE" in screen_text(app) and screen_text(app) != before
    run(go())


def test_mark_lands_in_the_recording(tmp_path, fixtures):
    path = str(tmp_path / "live.zfsmon")
    rec = Recorder(path, {"host": "fixture-host"})
    written = []

    def on_mark(text: str) -> None:
        rec.mark(text)
        written.append(text)

    async def go():
        app, feed = _live_app(tmp_path, on_mark=on_mark)
        async with app.run_test(size=(100, 30)) as pilot:
            feed.sink(top_data.records())
            await _until(pilot, lambda: app.state.fed > 0, "the records to be fed")
            await pilot.press("m")
            await _settle(pilot)
            await pilot.press(*"checkpoint", "space", *"now", "enter")
            await _until(pilot, lambda: written, "the mark to be written (from a worker thread)")
            await pilot.press("space")
            await _settle(pilot)
            await pilot.press("escape")  # cancelled: nothing written
            await _settle(pilot)
        assert app.marks == ["checkpoint now"]
    run(go())
    rec.close()
    with Recording.open(path) as r:
        marks = r.events(kinds=[EventKind.MARK])
    assert [m.text for m in marks] == ["checkpoint now"] and marks[0].source == "user"


def test_export_writes_the_window(recording, tmp_path):
    async def go():
        app = replay_app(recording, window=60)
        async with app.run_test(size=(100, 30)) as pilot:
            await _settle(pilot)
            await pilot.press("e")
            await _until(pilot, lambda: app.exports, "the export's notification")
        return app.exports
    paths = run(go())
    assert len(paths) == 1 and os.path.dirname(paths[0]) == os.path.dirname(recording)
    with open(paths[0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    lo = top_data.T_END - 60
    assert rows and all(lo <= float(r["epoch"]) <= top_data.T_END for r in rows)
    loop1 = [r for r in rows if r["name"] == "loop1" and r["metric"] == "write_ops"]
    assert [float(r["value"]) for r in loop1] == [384.0, 0.0, 0.0]  # the capture's three interval reports
    assert {r["role"] for r in rows if r["name"] == "loop5"} == {"log"}
    with open(paths[0][:-4] + ".events.csv") as fh:
        assert top_data.MARK_TEXT in fh.read()


def test_export_follows_no_planted_link_and_runs_off_the_ui_thread(recording, tmp_path, monkeypatch):
    """The export's names come from the clock: links planted at both (a dangling one at the CSV, one to a
    victim at the events file) are left as they are, the victim is not written, the export takes the next
    free name pair, and the files are written in a worker thread, not the app's."""
    now = top_data.T_END
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    d = os.path.dirname(recording)
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    os.symlink(str(tmp_path / "created-by-root"), os.path.join(d, f"zfsmon-top-{stamp}.csv"))
    os.symlink(str(victim), os.path.join(d, f"zfsmon-top-{stamp}-2.events.csv"))
    writers = []
    real = csv_export.write_long

    def write_long(out, rows):
        writers.append(threading.get_ident())
        return real(out, rows)
    monkeypatch.setattr(csv_export, "write_long", write_long)

    async def go():
        app = replay_app(recording, window=60)
        app.clock = lambda: now
        async with app.run_test(size=(100, 30)) as pilot:
            await _settle(pilot)
            await pilot.press("e")
            await _until(pilot, lambda: app.exports, "the export's notification")
            return app.exports, threading.get_ident()
    paths, ui_thread = run(go())
    assert paths == [os.path.join(d, f"zfsmon-top-{stamp}-3.csv")]
    assert victim.read_text() == "root's file\n" and not (tmp_path / "created-by-root").exists()
    assert os.path.islink(os.path.join(d, f"zfsmon-top-{stamp}.csv"))
    assert os.path.islink(os.path.join(d, f"zfsmon-top-{stamp}-2.events.csv"))
    assert not os.path.lexists(os.path.join(d, f"zfsmon-top-{stamp}-2.csv"))
    with open(paths[0], newline="") as fh:
        assert list(csv.DictReader(fh))
    assert top_data.MARK_TEXT in open(paths[0][:-4] + ".events.csv").read()
    assert writers and ui_thread not in writers


def test_terminal_too_small_says_so(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(40, 12)) as pilot:
            await _settle(pilot)
            text = screen_text(app)
            assert "too small" in text and "40x12" in text
    run(go())


def test_resize_relayouts(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(80, 24)) as pilot:
            await _settle(pilot)
            assert app.query_one("#body").has_class("narrow")
            await pilot.resize_terminal(160, 45)
            await _until(pilot, lambda: not app.query_one("#body").has_class("narrow"), "the wide layout")
            await _settle(pilot)
            assert not app.query_one("#body").has_class("narrow")
            text = screen_text(app)
            assert all(f" {h} " in text for h in HEADINGS)
    run(go())


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_replay_shows_errors_slow_ios_and_a_sit_out_in_both_layouts(tmp_path, size):
    """The OpenZFS 2.4 slow-leaf captures (tests/unit/vdevprops_data.py) recorded and replayed: the marks after
    the delayed leaf's name, every heading whole, no line past the screen."""
    path = str(tmp_path / "marks.zfsmon")
    with Recorder(path, {"host": "fixture-host", "interval": "2"}) as rec:
        rec.write(vdevprops_data.records(1795332000.0))
    # the sources' entities agree: the recorder saw no vdev change role or parent
    assert not [e for e in Recording.open(path).events() if e.kind == EventKind.TOPOLOGY]

    async def go():
        app = replay_app(path)
        async with app.run_test(size=size) as pilot:
            # at 80x24 the tree's box shows its first leaves (vdev.2's and vdev.3's marks, the names cut, not
            # the marks); at 160x50 all ten, vdev.9 last
            marks = ("49 slow SIT-OUT", " 3 slow") if size[1] >= 50 else ("/var/tmp/zslow/vdev… 1 slow",)
            text = await _until(pilot, lambda: _showing(app, *marks), "the marks")
            lines = text.splitlines()
            assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
            assert all(f" {h} " in text for h in HEADINGS)
    run(go())


def test_no_sources_each_panel_says_so(tmp_path):
    async def go():
        app, _feed = _live_app(tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await _settle(pilot)
            text = screen_text(app)
            assert text.count("no data from this source") == 3  # vdevs, ARC, workload
            assert "no ZIL kstat here" in text and "nothing to say yet" in text
            assert all(f" {h} " in text for h in HEADINGS)
    run(go())


def _cli(*argv: str):
    return subprocess.run([sys.executable, "-m", "zfsmon", *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("content", [b"", b"not a recording at all\n", b"SQLite format 3\x00" + b"\x00" * 200])
def test_replay_of_a_corrupt_file_is_one_line(tmp_path, content):
    bad = tmp_path / "bad.zfsmon"
    bad.write_bytes(content)
    res = _cli("replay", str(bad))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("zfsmon: ") and str(bad) in res.stderr and len(res.stderr.splitlines()) == 1


def test_replay_of_a_truncated_recording(recording, tmp_path):
    data = open(recording, "rb").read()
    cut = tmp_path / "cut.zfsmon"
    cut.write_bytes(data[: len(data) // 2])
    res = _cli("replay", str(cut))
    assert res.returncode == 2 and "Traceback" not in res.stderr and res.stderr.startswith("zfsmon: ")


def test_top_without_a_terminal_says_so():
    res = _cli("top", "--no-record")
    assert res.returncode == 2 and "needs a terminal" in res.stderr and "Traceback" not in res.stderr


def _sampler_app(tmp_path, collectors, interval=0.2):
    from zfsmon.engine import Sampler

    feed = LiveFeed()
    info = panels.HeaderInfo("fixture-host", "Linux", "captures", "", "live")
    app = TopApp(TopState(300), info, interval, feed=feed, export_dir=str(tmp_path))
    return app, Sampler(collectors, interval, sinks=[feed.sink])


def test_a_hung_source_shows_stale_and_the_screen_goes_on(tmp_path, fixtures):
    """A real child that printed a capture and then hangs: its panel turns stale; drawing never stops."""
    from zfsmon.sources.child import StreamCollector
    from zfsmon.sources.zpool.iostat import ZpoolIostatParser

    hung = StreamCollector(["sh", "-c", f"cat {top_data.ZIOCAP_IOSTAT}; exec sleep 60"],
                           ZpoolIostatParser(interval=1.0), "zpool_iostat")

    async def go():
        app, sampler = _sampler_app(tmp_path, [hung])
        sampler.run_in_thread()
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                text = await _until(pilot, lambda: _showing(app, "ziocap", "loop5", "stale: last data"),
                                    "the hung source's data, shown as stale")
                assert "ziocap" in text and "loop5" in text  # what it printed before hanging is shown
                assert "stale: last data" in text  # ... as stale, with its age
                n = app.redraws
                await _until(pilot, lambda: app.redraws > n, "a redraw after the source hung")  # never frozen
        finally:
            sampler.stop()
    run(go())


def test_a_failing_source_shows_its_error_and_the_others_go_on(tmp_path, fixtures):
    from zfsmon.sources.child import StreamCollector
    from zfsmon.sources.pgbench.text import PgbenchTextParser
    from zfsmon.sources.zpool.iostat import ZpoolIostatParser

    broken = StreamCollector([str(tmp_path / "no-such-zpool"), "iostat", "-v", "1"], ZpoolIostatParser(),
                             "zpool_iostat")
    pgb = StreamCollector(["sh", "-c", f"cat {top_data.PGBENCH}; exec sleep 60"], PgbenchTextParser(), "pgbench")

    async def go():
        app, sampler = _sampler_app(tmp_path, [broken, pgb])
        sampler.run_in_thread()
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                text = await _until(pilot, lambda: _showing(app, "ago: zpool_iostat: cannot run", "TPS", "310"),
                                    "the failing source's error and the other source's data")
                vdevs = text[text.index(" Vdevs "):]
                assert re.search(r"error \d+s ago: zpool_iostat: cannot run", vdevs.splitlines()[1])
                assert "TPS" in text and "310" in text  # pgbench's last progress line, read through a real child
        finally:
            sampler.stop()
    run(go())


def test_findings_panel_shows_the_analysis(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            await _until(pilot, lambda: app.report is not None, "the findings (computed in a worker thread)")
            shown = [f for f in app.report.findings if f.topic not in ("data", "correlation")]
            assert shown, app.report.findings
            await _until(pilot, lambda: shown[0].text[:30] in _panel(app, "findings"),
                         "the findings panel to show the first finding")
    run(go())


def test_findings_line_coming_and_going_does_not_relayout(recording):
    """The side column's last panel keeps its tallest height: a goose-egg line flickering every second must not
    re-lay the screen out (issue 15 target 5: a third of a 160x50 refresh went there); a resize forgets it."""
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            await _settle(pilot)
            seen = []
            widget = app.query_one("#findings", Lines)
            orig = widget.refresh

            def refresh(*regions, layout=False, **kw):
                seen.append(layout)
                return orig(*regions, layout=layout, **kw)

            widget.refresh = refresh
            app._findings_lines = 0  # as after a resize
            app._put("findings", Text("head\ngoose eggs: sdb\nnothing to say yet"))
            first = len(seen)
            app._put("findings", Text("head\nnothing to say yet"))
            assert widget.plain == "head\nnothing to say yet\n"  # kept at three lines
            app._put("findings", Text("head\ngoose eggs: sdc\nnothing to say yet"))
            assert widget.plain == "head\ngoose eggs: sdc\nnothing to say yet"
            assert len(seen) > first and not any(seen[first:])  # lines repainted, the screen not laid out again
            await pilot.resize_terminal(150, 45)
            await _until(pilot, lambda: "head" not in app._shown.get("findings", Text("head")).plain,
                         "the resize's new layout and findings")
            assert app._findings_lines == app._shown["findings"].plain.count("\n")
    run(go())


# ------------------------------------------------------------------------------------------------ fio (issue 14)
LAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "fio", "lab-acceptance")


def _lab_recording(tmp_path, name: str) -> str:
    """A real zfs-fuse lab recording of fio (tests/data/fio/lab-acceptance), unpacked (the store reads files)."""
    path = str(tmp_path / f"{name}.zfsmon")
    with gzip.open(os.path.join(LAB, f"{name}.zfsmon.gz")) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _io_median(pairs):
    """Half the I/Os were in intervals whose percentile is at most this (cumulative weights, bisected)."""
    pairs = sorted(pairs)
    cum = list(itertools.accumulate(w for _, w in pairs))
    return pairs[bisect.bisect_left(cum, cum[-1] / 2)][0]


def _fio_expected(path: str, job: str, lo: float, hi: float):
    """From the recording itself: the job's intervals with I/O in [lo, hi], their p50/p99 I/O-weighted medians."""
    with Recording.open(path) as r:
        got = [s for s in r.samples(kinds=[Kind.WORKLOAD], start=lo, end=hi)
               if s.entity.name == f"fio:{job}:read" and s.metrics.get("ios", 0) > 0]
    assert got, job
    return (_io_median([(s.metrics["clat_p50_ms"], s.metrics["ios"]) for s in got]),
            _io_median([(s.metrics["clat_p99_ms"], s.metrics["ios"]) for s in got]), len(got))


def _panel(app, name: str) -> str:
    """A panel's text: the side panels and the tree are line-by-line widgets (views/top/lines.py)."""
    w = app.query_one(f"#{name}")
    return w.plain if isinstance(w, Lines) else w.render().plain


def test_fio_jobs_show_iops_and_latency_band_at_the_cursor(tmp_path):
    path = _lab_recording(tmp_path, "ceiling")  # a queue-depth sweep, qd1 .. qd64, 4 s each

    def row(text: str, job: str):
        lines = text.splitlines()
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{job} read "))
        return lines[i], lines[i + 1]

    async def go():
        app = replay_app(path, window=60.0)
        cur = app.replay
        async with app.run_test(size=(160, 50)) as pilot:
            await _settle(pilot)
            text = _panel(app, "workload")
            assert "no workload" not in text and "fio IOPS" in text
            # at the end: the six newest jobs in the window, qd1 counted as older
            for job in ("qd2", "qd4", "qd8", "qd16", "qd32", "qd64"):
                head, band = row(text, job)
                p50, p99, n = _fio_expected(path, job, cur.cursor - 60.0, cur.cursor)
                assert f"p50 {panels.fmt.ms(p50)} p99 {panels.fmt.ms(p99)}" in band, (job, band)
            assert "qd1 read" not in text and "+1 older fio jobs" in text
            # qd32's band is its own: p50 ~96 ms (the sweep's knee), far from qd2's 313 µs
            assert row(text, "qd32")[1].index("█") > row(text, "qd2")[1].index("█")
            # a cursor inside qd32's run (3 s after the sweep's start + 30 s): only its first intervals count
            await pilot.press("home", *["right"] * 33)
            await _settle(pilot)
            assert cur.cursor == cur.start + 33
            text = _panel(app, "workload")
            head, band = row(text, "qd32")
            p50, p99, n = _fio_expected(path, "qd32", cur.cursor - 60.0, cur.cursor)
            assert n == 3  # the intervals ending 30.2, 31.2, 32.3 s in
            assert f"p50 {panels.fmt.ms(p50)} p99 {panels.fmt.ms(p99)}" in band, band
            assert f"{panels.fmt.num(433.0, 'x'):>6}" in head  # its newest interval's IOPS (32.3 s: 433)
            assert "qd64" not in text  # not started yet at the cursor
    run(go())


def test_no_fio_no_fio_rows(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            await _settle(pilot)
            assert "fio" not in _panel(app, "workload")
    run(go())


# ------------------------------------------------------------------------------------------------ timeline (issue 15)
def _timeline_parts(app):
    """(rows by label, the axis' cells, the footer) of the timeline panel as drawn."""
    lines = _panel(app, "timeline").splitlines()
    n = panels.TIMELINE_LABEL
    axis = next(line for line in lines if line.startswith(" " * n) and set(line[n:].strip()) <= set("─━▲M|┃"))
    w = len(axis.rstrip()) - n
    rows = {line[:n].strip(): line[n:n + w] for line in lines[1:] if line[:n].strip()}
    return rows, axis[n:n + w], lines[lines.index(axis) + 1]


def _data_reads_per_tick(path: str):
    """Each zpool iostat report's reads/s of the pool's line, straight from the recording (a pool without special
    or dedup vdevs: its data vdevs' reads, as their sum says, give or take zpool iostat's rounding)."""
    with Recording.open(path) as r:
        ents = r.entities()
        assert not any(e.role in (Role.SPECIAL, Role.DEDUP) for e in ents)
        data = {e.key for e in ents if e.kind == Kind.VDEV and e.role == Role.DATA}
        pool: dict = {}
        vdevs: dict = {}
        for s in r.samples(kinds=[Kind.VDEV, Kind.POOL]):
            if not s.since_boot and "read_ops" in s.metrics:
                if s.entity.kind == Kind.POOL:
                    pool[s.ts] = s.metrics["read_ops"]
                elif s.entity.key in data:
                    vdevs[s.ts] = vdevs.get(s.ts, 0.0) + s.metrics["read_ops"]
        assert set(pool) == set(vdevs) and all(abs(pool[t] - vdevs[t]) <= max(2.0, 0.01 * pool[t]) for t in pool)
        return pool, r.time_range()


def test_timeline_replay_is_the_whole_run_and_follows_the_cursor(tmp_path):
    path = _lab_recording(tmp_path, "ceiling")
    reads, (start, end) = _data_reads_per_tick(path)

    def cell(ts, w):
        return min(w - 1, int((ts - start) / (end - start) * w))

    async def go():
        app = replay_app(path)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: "data reads" in _panel(app, "timeline"), "the recording's timeline read")
            rows, axis, foot = _timeline_parts(app)
            w = len(axis)
            assert set(rows) == {"IOPS per s", "L2 hit %", "L2 size", "data reads"} and w > 40
            # the whole recording, not the 5-minute window's end: the cursor (at the end) is in the last cell
            assert axis.index("▲") == w - 1 and "cursor +00:00:39" in foot
            drawn = rows["data reads"]
            peak = max(reads, key=reads.get)
            assert "█" in drawn[max(0, cell(peak, w) - 1):cell(peak, w) + 2], (drawn, peak - start)
            quiet = [ts for ts, v in reads.items() if v < 0.02 * reads[peak]]  # before fio started: no reads
            assert len(quiet) >= 5
            for ts in quiet:
                c = cell(ts, w)
                if all(cell(t2, w) not in (c - 1, c, c + 1) or t2 in quiet for t2 in reads):
                    assert drawn[c] == "▁", (c, drawn)
            # the row's max is its highest cell: the peak reading, averaged with the bucket a cell also overlaps
            shown_max = next(line for line in _panel(app, "timeline").splitlines() if line.startswith("data reads"))
            top = float(shown_max.rsplit(" max ", 1)[1])
            assert 0.9 * reads[peak] <= top <= reads[peak], (top, reads[peak])
            # the cursor marker moves with the replay cursor; the data rows stay
            shown = app._shown["timeline"]
            app.redraw()
            assert app._shown["timeline"] is shown  # nothing changed: not redrawn
            await pilot.press("home")
            await _settle(pilot)
            rows2, axis, foot = _timeline_parts(app)
            assert axis.index("▲") == 0 and "cursor +00:00:00" in foot and rows2["data reads"] == drawn
            await pilot.press(*["right"] * 20)
            await _settle(pilot)
            rows2, axis, foot = _timeline_parts(app)
            assert axis.count("▲") == 1 and axis.index("▲") == cell(start + 20, w) and "cursor +00:00:20" in foot
            # the window the other panels show (5 minutes: all of the run before the cursor) is the axis' bold part
            assert set(axis[:cell(start + 20, w)]) == {"━"} and set(axis[cell(start + 20, w) + 1:]) == {"─"}
    run(go())


def test_replay_leaves_its_heap_out_of_the_collectors_passes_until_it_exits(tmp_path):
    """Once the whole-run timeline is read, replay's heap is frozen (a full collection walked all of it: 44-60 ms on
    a 7-day recording, inside a key press now and then); steps still work, and the app's exit puts it back."""
    path = _lab_recording(tmp_path, "ceiling")

    async def go():
        app = replay_app(path)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: "data reads" in _panel(app, "timeline"), "the recording's timeline read")
            assert app._frozen and gc.get_freeze_count() > 10_000
            await pilot.press("home")
            await _settle(pilot)
            assert "cursor +00:00:00" in _timeline_parts(app)[2]
        assert not app._frozen and gc.get_freeze_count() == 0
    run(go())


def test_timeline_shows_run_boundaries_and_marks(recording):
    async def go():
        app = replay_app(recording)
        async with app.run_test(size=(160, 45)) as pilot:
            await _until(pilot, lambda: "TPS" in _panel(app, "timeline"), "the recording's timeline read")
            rows, axis, _ = _timeline_parts(app)
            with Recording.open(recording) as r:
                (start, end), evs = r.time_range(), r.events(kinds=[EventKind.RUN_END, EventKind.MARK])
            mark = next(e for e in evs if e.kind == EventKind.MARK)
            run_end = next(e for e in evs if e.kind == EventKind.RUN_END)
            w = len(axis)
            assert axis[int((mark.ts - start) / (end + 1 - start) * w)] == "M"
            assert axis[int((run_end.ts - start) / (end + 1 - start) * w)] == "┃"  # a boundary in the window
            assert rows["TPS per s"].strip() and "max 752" in _panel(app, "timeline")  # pgbench -P 6's best 6 s
    run(go())


def test_timeline_live_grows_from_the_records(tmp_path, fixtures):
    batches = top_data.batches()

    async def go():
        app, feed = _live_app(tmp_path)
        async with app.run_test(size=(160, 45)) as pilot:
            assert "no data yet" in _panel(app, "timeline")
            for _ts, batch in batches:
                feed.sink(batch)
            await _until(pilot, lambda: app.state.fed >= sum(len(b) for _, b in batches), "every record fed")
            app.redraw()
            await _settle(pilot)
            rows, axis, foot = _timeline_parts(app)
            assert "TPS per s" in rows and "data reads" in rows and "M" in axis and "▲" not in axis and "now +" in foot
            assert app.timeline.span()[1] == top_data.T_END + 1  # every record, in 1 s buckets (2 min < 256)
            shown, version = app._shown["timeline"], app.timeline.version
            app.redraw()
            assert app._shown["timeline"] is shown and app.timeline.version == version
    run(go())


def test_fio_rows_on_a_narrow_screen_are_one_line_each(tmp_path):
    path = _lab_recording(tmp_path, "l2arc")  # the L2ARC-served sweep: sub-millisecond to a few ms

    async def go():
        app = replay_app(path)
        cur = app.replay
        async with app.run_test(size=(100, 30)) as pilot:  # below 120 columns: the side panels in a grid
            await _settle(pilot)
            lines = _panel(app, "workload").splitlines()
            jobs = [line.split()[0] for line in lines[1:] if line.startswith("qd")]
            assert jobs == ["qd8", "qd16", "qd32", "qd64"] and "+3 older fio jobs" in lines[-1]
            line = next(line for line in lines if line.startswith("qd32 r "))
            p50, p99, _ = _fio_expected(path, "qd32", cur.cursor - 300.0, cur.cursor)
            assert line.rstrip().endswith(f"{panels.fmt.ms(p50)}/{panels.fmt.ms(p99)}"), line
    run(go())
