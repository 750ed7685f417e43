"""The dashboard's findings view (``f``, issue 40 item 3) on the real 100-minute lab soak: every finding whole,
wrapped, scrollable, with its numbers, and a jump to the moment it speaks of; and the moments the analysis gives."""

from __future__ import annotations

import asyncio
import os
import re

import pytest

from tests.conftest import wait_until_async
from zfsmon.analysis import findings, goose, goose_window
from zfsmon.analysis.findings import Finding, Report
from zfsmon.model import Kind, Role
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.findings_view import FindingsScreen, Moment, capped, number_lines
from zfsmon.views.top.replay import ReplayCursor
from zfsmon.views.top.state import TopState

SIZES = [(80, 24), (160, 50)]
#: the goose-egg finding's closing advice (zfsmon.analysis.goose_window.WindowVerdicts.text)
ADVICE = "Trust ZFS's numbers for these devices."


def screen_text(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


def flowed(app) -> str:
    """The screen's lines joined as the reader reads wrapped text: a sentence wrapped over two lines is whole
    again (the scrollbar's blocks and the margins dropped)."""
    lines = [re.sub(r"[\s▁▂▃▄▅▆▇█▔]+$", "", line).strip() for line in screen_text(app).split("\n")]
    return " ".join(line for line in lines if line)


def replay_app(path: str, window: float = 300.0) -> TopApp:
    cur = ReplayCursor(Recording.open(path), window)
    info = panels.HeaderInfo("lab", "Linux zfs-fuse", "lab soak", path, "replay")
    return TopApp(cur.state, info, cur.interval, replay=cur, export_dir=os.path.dirname(path))


async def _until(pilot, predicate, what: str, timeout: float = 60.0):
    return await wait_until_async(predicate, timeout, what, pilot.pause)


async def _open(pilot, app, wait_report: bool = True) -> FindingsScreen:
    """``f`` on the dashboard (once the window's findings are there): the findings view."""
    if wait_report:
        await _until(pilot, lambda: app.report is not None, "the findings of the window at the cursor")
    await pilot.press("f")
    return await _until(pilot, lambda: isinstance(app.screen, FindingsScreen) and app.screen, "the findings view")


async def _scroll_until(pilot, body, predicate, what: str) -> None:
    """Scroll the view down a line at a time (the down key, as a reader does) until ``predicate`` holds."""
    while not predicate():
        before = body.scroll_y
        assert before < body.max_scroll_y, f"scrolled to the end without seeing {what}"
        await pilot.press("down")
        await _until(pilot, lambda b=before: body.scroll_y > b, "a line's scroll")


def _moment_shown(app, widget) -> bool:
    """``widget`` lies wholly inside the findings view's scrolled body."""
    body = app.screen.query_one("#findings-body")
    return body.region.contains_region(widget.region)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_findings_view_shows_each_finding_whole_scrolls_and_jumps_to_its_moment(lab_soak_file, size):
    async def go():
        app = replay_app(lab_soak_file)
        async with app.run_test(size=size) as pilot:
            await _until(pilot, lambda: app.report is not None, "the findings of the window at the cursor")
            egg = app.report.topic("goose_eggs")
            assert egg and egg[0].text.endswith(ADVICE), app.report.findings  # the soak's last 5 min have eggs
            await _open(pilot, app, wait_report=False)
            await pilot.pause()
            body = app.screen.query_one("#findings-body")
            assert body.max_scroll_y > 0  # more than a screen: it scrolls
            # every finding is there, whole, wrapped: scroll down until the goose-egg one's last sentence shows
            first_lines = flowed(app)
            assert app.report.findings[0].text[:40] in first_lines
            await _scroll_until(pilot, body, lambda: ADVICE in flowed(app), "the goose-egg advice")
            assert " ".join(egg[0].text.split()[-12:]) in flowed(app)
            # the numbers behind it: its per-leaf tallies, by leaf name
            leaf = sorted(egg[0].numbers["per_leaf"])[0]
            tally = egg[0].numbers["per_leaf"][leaf]
            await _scroll_until(pilot, body, lambda: f"{leaf}:" in screen_text(app), "the per-leaf numbers")
            await _scroll_until(pilot, body, lambda: f"{goose.GOOSE_EGG}: {tally[goose.GOOSE_EGG]}" in screen_text(app),
                                "the leaf's goose-egg count")
            # n focuses the moments in turn, each scrolled into view; enter jumps the cursor there
            cursor = app.replay.cursor
            wanted = [(w, ts) for f in app.report.findings for w, ts in f.moments.items()]
            assert len(wanted) >= 3
            await pilot.press("home")
            await pilot.press("n", "n")
            await _until(pilot, lambda: isinstance(app.screen.focused, Moment), "a moment focused")
            focused = app.screen.focused
            assert (focused.words, focused.ts) == wanted[1]
            await _until(pilot, lambda: _moment_shown(app, focused), "the focused moment scrolled into view")
            await pilot.press("N")
            await _until(pilot, lambda: app.screen.focused is not focused, "the previous moment")
            assert (app.screen.focused.words, app.screen.focused.ts) == wanted[0]
            await pilot.press("n", "enter")
            await _until(pilot, lambda: not isinstance(app.screen, FindingsScreen), "the dashboard again")
            await _until(pilot, lambda: app.replay.cursor != cursor, "the jump")
            words, ts = wanted[1]
            assert app.replay.cursor == ts
            stamp = ts - app.replay.start
            hms = f"{int(stamp) // 3600:02d}:{int(stamp) % 3600 // 60:02d}:{int(stamp) % 60:02d}"
            await _until(pilot, lambda: hms in screen_text(app), "the header at the moment's time")
    asyncio.run(go())


def test_findings_view_closes_with_escape_q_and_f_and_quits_nothing(lab_soak_file):
    async def go():
        app = replay_app(lab_soak_file)
        async with app.run_test(size=(100, 30)) as pilot:
            await _until(pilot, lambda: app.report is not None, "the findings")
            for key in ("escape", "q", "f"):
                await _open(pilot, app, wait_report=False)
                cursor, window = app.replay.cursor, app.state.window_s
                await pilot.press("left", "minus", "r")  # the dashboard's keys do nothing under the view
                await pilot.press(key)
                await _until(pilot, lambda: not isinstance(app.screen, FindingsScreen), f"{key} to close it")
                assert app.is_running and app.replay.cursor == cursor and app.state.window_s == window
                assert not app.opts.totals
            await pilot.click("#findings")  # the panel opens it too
            await _until(pilot, lambda: isinstance(app.screen, FindingsScreen), "the view, by a click")
    asyncio.run(go())


def test_findings_view_shows_names_from_the_input_as_text(lab_soak_file):
    """A leaf's name is the input's: markup in it is shown as written, a terminal escape as its escape."""
    evil = "[bold red]loop9[/] \x1b[2J"

    async def go():
        app = replay_app(lab_soak_file)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: app.report is not None, "the findings")
            t = app.replay.start + 60.0
            app.report = Report(app.replay.start, app.replay.end, 1.0, {}, [
                Finding("goose_eggs", f"Goose eggs: {evil} in 3 of 4 busy intervals. {ADVICE}",
                        {"per_leaf": {evil: {goose.GOOSE_EGG: 3}}}, {f"goose egg on {evil}": t})])
            await _open(pilot, app, wait_report=False)
            await pilot.pause()
            text = screen_text(app)
            assert "[bold red]loop9[/] \\x1b[2J in 3 of 4" in text  # the text: markup as written
            assert "[bold red]loop9[/] \\x1b[2J:" in text  # the numbers' key
            assert "goose egg on [bold red]loop9[/] \\x1b[2J" in text  # the moment
            assert "\x1b" not in text
            await pilot.press("n", "enter")
            await _until(pilot, lambda: app.replay.cursor == t, "the jump")
    asyncio.run(go())


def test_moment_keys_faster_than_focus_each_go_one_further(lab_soak_file):
    """A held ``n`` sends keys faster than focus moves (it moves after the key's handler): each goes one on."""
    async def go():
        app = replay_app(lab_soak_file)
        async with app.run_test(size=(160, 50)) as pilot:
            await _open(pilot, app)
            view, cursor = app.screen, app.replay.cursor
            for _ in range(3):  # three keys handled before the loop runs again
                view.action_moment(1)
            view.action_choose()
            third = [ts for f in view.report.findings for ts in f.moments.values()][2]
            await _until(pilot, lambda: not isinstance(app.screen, FindingsScreen), "the dashboard again")
            await _until(pilot, lambda: app.replay.cursor != cursor, "the jump")
            assert app.replay.cursor == third
    asyncio.run(go())


def test_live_findings_view_says_when_a_moment_was(tmp_path):
    now = 1_800_000_000.0

    async def go():
        info = panels.HeaderInfo("h", "Linux", "captures", "", "live")
        app = TopApp(TopState(300.0), info, 1.0, feed=LiveFeed(), clock=lambda: now)
        async with app.run_test(size=(120, 30)) as pilot:
            await _until(pilot, lambda: app.report is not None, "the (empty) window's findings")
            app.report = Report(now - 300, now, 1.0, {}, [
                Finding("warmup", "TPS warmed up.", {"time_to_90pct_s": 181.0},
                        {"TPS reached 90% of the plateau": now - 125.0})])
            await _open(pilot, app, wait_report=False)
            await pilot.press("n", "enter")
            await _until(pilot, lambda: any("2m ago" in str(n.message) and "TPS reached 90%" in str(n.message)
                                            for n in app._notifications), "when it was")
            assert isinstance(app.screen, FindingsScreen)  # live has no cursor: the view stays
            assert "3 min 1 s (181)" in screen_text(app)  # a duration's number in words beside the figure
    asyncio.run(go())


# ------------------------------------------------------------------------------------ the analysis' moments

@pytest.fixture(scope="module")
def last_5_min(lab_soak):
    samples, events = lab_soak
    end = max(s.ts for s in samples)
    window = [s for s in samples if s.ts >= end - 300]
    return window, findings.analyze(window, events, start=end - 300, end=end)


def test_the_warm_up_moment_is_the_time_its_numbers_say(last_5_min):
    _window, report = last_5_min
    (warm,) = report.topic("warmup")
    first = warm.moments["TPS first measured"]
    assert warm.moments["TPS reached 90% of the plateau"] == first + warm.numbers["time_to_90pct_s"]


def test_each_goose_egg_moment_is_that_leafs_busiest_egg(last_5_min):
    window, report = last_5_min
    (egg,) = report.topic("goose_eggs")
    summary = goose_window.summarize_window(window)
    leaves = sorted(leaf for leaf, n in summary.eggs().items() if n)
    assert leaves and len(egg.moments) == len(leaves)
    for leaf, (words, at) in zip(leaves, sorted(egg.moments.items())):
        assert leaf in words
        rows = [s for s in window if s.ts == at and s.entity.name == leaf and goose.is_device_row(s.entity)]
        assert rows, (leaf, at)  # a ZFS report of that leaf ends there
        ops = sum(goose.device_ops_per_s(s.metrics) or 0.0 for s in rows)
        assert ops == pytest.approx(summary.worst[leaf].zfs_ops)
        assert f"ZFS {ops:.0f} ops/s" in words


def test_the_busiest_interval_moment_has_the_peak_iops(last_5_min):
    window, report = last_5_min
    (vp,) = report.topic("vdev_perf")
    data = [(w, ts) for w, ts in vp.moments.items() if "data devices" in w]
    assert len(data) == 1
    peak = vp.numbers["roles"]["data"]["peak_iops"]
    per_ts: dict = {}
    for s in window:
        if s.entity.kind is Kind.LEAF and s.entity.role is Role.DATA and s.interval and not s.since_boot:
            per_ts[s.ts] = per_ts.get(s.ts, 0.0) + s.metrics.get("read_ops", 0.0) + s.metrics.get("write_ops", 0.0)
    assert per_ts[data[0][1]] == pytest.approx(peak) == pytest.approx(max(per_ts.values()))
    assert f"{peak:,.0f} IOPS" in data[0][0]


def test_moments_are_in_the_json_of_analyze(last_5_min):
    _window, report = last_5_min
    got = {f["topic"]: f.get("moments") for f in report.as_dict()["findings"]}
    assert got["warmup"] and got["goose_eggs"] and "moments" not in report.as_dict()["findings"][3]


def test_numbers_are_capped_and_sized():
    lines = capped(number_lines({"per_leaf": {f"loop{i}": {"goose_egg": i} for i in range(100)},
                                 "size_max_b": 325_900_000.0, "time_to_90pct_s": 181.0, "still_growing": False}))
    assert len(lines) == 41 and lines[-1].startswith("... ")
    assert int(lines[-1].split()[1]) == 1 + 200 + 3 - 40  # every line counted, not kept
    assert lines[:3] == ["per_leaf:", "  loop0:", "    goose_egg: 0"]
    shown = capped(number_lines({"size_max_b": 325_900_000.0, "time_to_90pct_s": 181.0, "still_growing": False}))
    assert shown == ["size_max_b: 311M (325,900,000)", "time_to_90pct_s: 3 min 1 s (181)", "still_growing: no"]
