"""Screen tests of the dashboard: each screen, exported as Textual's SVG screenshot, is the committed one exactly.

A layout that breaks (a panel pushed off the screen, a heading cut, the 80x24 grid overlapping, a key bar gone)
changes the SVG, and the test fails with the screen's text and the SVG it got. The screens: ``zfsmon replay`` of
the OpenZFS 2.3 guest's recording and of the 100-minute lab soak at 160x50 and 80x24, the soak's findings view
(``f``) and the help (``?``) at 160x50, live ``zfsmon top`` fed from genuine captures (tests/unit/top_data.py)
at 160x50 and 80x24, and the "terminal too small" message at 70x20.

Every screen is made deterministic, not normalised: replay shows the recording's own times (the cursor at its
end), live reads an injected clock (the header's "up", every "N s ago", the findings' schedule), the header names
the recording by a fixed path (the files are unpacked in a temporary directory), and a screenshot is taken only
once what the app works out in threads (the whole-run timeline, the window's findings) is on screen. Nothing in
the SVG is then volatile: the ``terminal-NNN`` prefix of its CSS classes is rich's ``zlib.adler32`` of the
segments and the title, the same for the same screen on every run, so it is compared as it is.

The SVGs are under tests/data/snapshots/ (docs/contributing.md, "Screen snapshots"). After a change to the screen,
regenerate them and review the diff (and the images) before committing::

    ZFSMON_UPDATE_SNAPSHOTS=1 python3 -m pytest tests/unit/views/top/test_top_snapshots.py
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

from tests.conftest import GUEST_RECORDING, TEST_DATA, gunzip, wait_until_async
from tests.unit import top_data
from zfsmon import outfile
from zfsmon.commands import replay as replay_cmd
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import MIN_SIZE, HelpScreen, LiveFeed, TopApp
from zfsmon.views.top.findings_view import FindingsScreen
from zfsmon.views.top.replay import ReplayCursor
from zfsmon.views.top.state import TopState

SNAPSHOTS = TEST_DATA / "snapshots"
#: set to 1 to write the screens as the committed snapshots instead of comparing them
UPDATE = os.environ.get("ZFSMON_UPDATE_SNAPSHOTS", "") == "1"
#: what the header shows as the recording's path (the committed file is unpacked in a temporary directory)
SHOWN_PATH = "/var/lib/zfsmon/{name}.zfsmon"
#: live: the clock the app reads once the captures are fed (a second after their last sample), when it started
#: (an hour and a half before), and where it stood at start (before the data, so the findings are due once fed)
LIVE_NOW = top_data.T_END + 1.0
LIVE_STARTED = top_data.T_END - 5400.0
LIVE_BEFORE = top_data.T_END - 3600.0
WAIT_S = 120.0


@pytest.fixture(scope="module")
def guest_file(tmp_path_factory) -> str:
    return gunzip(GUEST_RECORDING, Path(tmp_path_factory.mktemp("guest")))


def _replay(path: str, name: str) -> TopApp:
    """The app ``zfsmon replay`` runs (its header from the recording's metadata), the path shown fixed."""
    cursor = ReplayCursor(Recording.open(path), 300.0)
    info = replay_cmd.header_info(cursor.rec, SHOWN_PATH.format(name=name))
    return TopApp(cursor.state, info, cursor.interval, replay=cursor, export_dir=os.path.dirname(path))


def _live() -> Tuple[TopApp, LiveFeed, List[float]]:
    """Live ``zfsmon top`` as its dashboard() builds it, with a clock the test sets (returned, one element)."""
    feed = LiveFeed()
    clock = [LIVE_BEFORE]
    info = panels.HeaderInfo(host="fixture-host", platform="Linux 6.1", zfs="zfs-fuse 0.7.0",
                             recording=SHOWN_PATH.format(name="live"), mode="live", started=LIVE_STARTED)
    app = TopApp(TopState(300.0, interval=1.0), info, 1.0, feed=feed, on_mark=lambda _note: None,
                 clock=lambda: clock[0])
    return app, feed, clock


def screen_text(app: TopApp) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


async def _until(pilot, predicate: Callable[[], object], what: str) -> object:
    return await wait_until_async(predicate, WAIT_S, lambda: f"{what}; the screen:\n{screen_text(pilot.app)}",
                                  pilot.pause)


def _worked_out(app: TopApp) -> bool:
    """What the app works out in threads is done and on screen: the whole-run timeline read (replay) and the
    findings of the window shown."""
    return (app.timeline is not None and not app._findings_busy and app.report is not None
            and app._report_key == app._window_key())


async def _settled(pilot) -> None:
    app = pilot.app
    await _until(pilot, lambda: _worked_out(app), "the timeline and the window's findings")
    app.redraw()
    await pilot.pause()
    await pilot.pause()


async def _feed_live(pilot, feed: LiveFeed, clock: List[float]) -> None:
    """The captures as the sampler hands them over (a batch a tick), then the clock a second past the last."""
    app = pilot.app
    await _until(pilot, lambda: app.report is not None and not app._findings_busy, "the findings at start")
    batches = top_data.batches()
    for _ts, batch in batches:
        feed.sink(batch)
    total = sum(len(b) for _ts, b in batches)
    await _until(pilot, lambda: app.state.fed == total, "every record fed")
    clock[0] = LIVE_NOW
    app.redraw()


async def _press(pilot, key: str, screen: type) -> None:
    await pilot.press(key)
    await _until(pilot, lambda: isinstance(pilot.app.screen, screen), f"{screen.__name__} after {key!r}")
    await pilot.pause()
    await pilot.pause()


def _svg_text(svg: str) -> List[str]:
    """The lines of text an SVG screenshot shows (for a failure's diff), its character entities decoded."""
    rows: Dict[str, str] = {}
    for m in re.finditer(r'<text class="[^"]*" x="[^"]*" y="([^"]*)"[^>]*>([^<]*)</text>', svg):
        rows[m.group(1)] = rows.get(m.group(1), "") + m.group(2)
    entities = {"&#160;": " ", "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'"}
    return [re.sub("|".join(map(re.escape, entities)), lambda e: entities[e.group(0)], rows[y])
            for y in sorted(rows, key=float)]


def check(app: TopApp, name: str, tmp_path: Path) -> None:
    """The screen as an SVG is the committed ``tests/data/snapshots/NAME.svg`` (or becomes it, ``UPDATE``)."""
    got = app.export_screenshot(title=f"zfsmon {name}")
    path = SNAPSHOTS / f"{name}.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        with outfile.atomic(str(path)) as fh:
            fh.write(got)
        return
    assert path.is_file(), f"no snapshot {path}: make it with ZFSMON_UPDATE_SNAPSHOTS=1 and review it"
    want = path.read_text(encoding="utf-8")
    if got == want:
        return
    (tmp_path / f"{name}.svg").write_text(got, encoding="utf-8")
    diff = "\n".join(difflib.unified_diff(_svg_text(want), _svg_text(got), "committed", "now", lineterm=""))
    pytest.fail(f"{name}: the screen differs from {path} (the new one: {tmp_path / f'{name}.svg'}):\n"
                f"{diff or '(the same text: colours or styles differ)'}\n"
                "if the change is meant: ZFSMON_UPDATE_SNAPSHOTS=1 python3 -m pytest tests/unit/views/top/test_top_snapshots.py")


REPLAYS = [("guest", (160, 50)), ("guest", (80, 24)), ("soak", (160, 50)), ("soak", (80, 24))]


def _recording(which: str, guest_file: str, lab_soak_file: str) -> str:
    return guest_file if which == "guest" else lab_soak_file


@pytest.mark.parametrize("which,size", REPLAYS, ids=[f"{w}-{s[0]}x{s[1]}" for w, s in REPLAYS])
def test_replay_screen(which, size, guest_file, lab_soak_file, tmp_path):
    name = f"replay-{which}-{size[0]}x{size[1]}"

    async def go():
        app = _replay(_recording(which, guest_file, lab_soak_file), which)
        async with app.run_test(size=size) as pilot:
            await _settled(pilot)
            check(app, name, tmp_path)
    asyncio.run(go())


@pytest.mark.parametrize("key,screen,name", [("f", FindingsScreen, "findings"), ("question_mark", HelpScreen, "help")])
def test_replay_soak_overlay_screen(key, screen, name, lab_soak_file, tmp_path):
    async def go():
        app = _replay(lab_soak_file, "soak")
        async with app.run_test(size=(160, 50)) as pilot:
            await _settled(pilot)
            await _press(pilot, key, screen)
            check(app, f"replay-soak-{name}-160x50", tmp_path)
    asyncio.run(go())


LIVES = [((160, 50), "ziocap"), ((80, 24), "testpool")]


@pytest.mark.parametrize("size,pool", LIVES, ids=[f"{s[0]}x{s[1]}-{p}" for s, p in LIVES])
def test_live_screen(size, pool, fixtures, tmp_path):
    """ziocap has data, log and cache vdevs (the tree's roles), testpool a raidz with latencies (their marks)."""
    async def go():
        app, feed, clock = _live()
        async with app.run_test(size=size) as pilot:
            await _feed_live(pilot, feed, clock)
            while app.opts.pool != pool:
                await pilot.press("tab")
            await _settled(pilot)
            check(app, f"live-{size[0]}x{size[1]}", tmp_path)
    asyncio.run(go())


def test_too_small_screen(guest_file, tmp_path):
    size = (70, 20)
    assert size[0] < MIN_SIZE[0] and size[1] < MIN_SIZE[1]

    async def go():
        app = _replay(guest_file, "guest")
        async with app.run_test(size=size) as pilot:
            # below the minimum the app works out no findings (nothing shows them): only the timeline is read
            await _until(pilot, lambda: app.timeline is not None, "the timeline")
            await pilot.pause()
            assert "terminal too small: 70x20" in screen_text(app)
            check(app, "too-small-70x20", tmp_path)
    asyncio.run(go())

