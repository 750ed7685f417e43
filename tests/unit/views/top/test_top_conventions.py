"""What users of htop, btop, k9s and glances expect of the dashboard: a command palette with its actions, NO_COLOR,
no meaning in colour alone (marks, a colour-blind theme), a "too small" message, every action on a key, the counts
behind each ratio, and the ARC's size against its own target."""

from __future__ import annotations

import re

import pytest

from tests.conftest import TEST_DATA, gunzip
from tests.unit.views.top.test_top_app import HEADINGS, _settle, _until, replay_app, run, screen_text
from zfsmon import units
from zfsmon.errors import UserError
from zfsmon.model import Kind, Sample
from zfsmon.store import Recording
from zfsmon.views import thresholds
from zfsmon.views.top import fmt, panels
from zfsmon.views.top.app import KEYS, MIN_SIZE, TopApp, help_text, palette_commands
from zfsmon.views.top.replay import ReplayCursor

GUEST = TEST_DATA / "openzfs-2.3" / "recording" / "rec.zfsmon.gz"


@pytest.fixture
def guest(tmp_path) -> str:
    """The 2.3.2 guest's recording: ARC counters read every 5 s, the L2ARC, a read path without PostgreSQL."""
    return gunzip(GUEST, tmp_path)


def _segments(app):
    update = app.screen._compositor.render_update(full=True)
    return [seg for line in update.strips for strip in line for seg in strip]


def _arc_texts(app):
    return app.query_one(f"#{panels.panel('arc').widget_id}").texts


def test_the_palette_lists_zfsmons_actions_by_name_and_runs_one(guest):
    titles = [c.title for c in palette_commands("replay", lambda action: None)]
    for k in KEYS:
        if k.title and "replay" in k.modes:
            assert k.title in titles
    assert "Mark" not in titles and "Mark" in [c.title for c in palette_commands("live", lambda action: None)]
    assert "Screenshot" not in titles  # Textual's own writes a file into the current directory

    async def go():
        app = replay_app(guest)
        async with app.run_test(size=(160, 50)) as pilot:
            await _settle(pilot)
            await pilot.press("ctrl+p")
            await _until(pilot, lambda: type(app.screen).__name__ == "CommandPalette", "the palette")
            await pilot.press(*"rates")
            await _until(pilot, lambda: "Rates / totals" in screen_text(app), "the matching entry")
            await pilot.press("enter")
            await _until(pilot, lambda: app.opts.totals, "the action run")
            await _until(pilot, lambda: " totals" in screen_text(app), "the tree in totals")
            await pilot.press("ctrl+p")
            await _until(pilot, lambda: type(app.screen).__name__ == "CommandPalette", "the palette again")
            await pilot.press(*"next event", "enter")
            await _until(pilot, lambda: type(app.screen).__name__ != "CommandPalette", "the palette closed")
    run(go())


def test_every_action_has_a_key_and_the_help_names_the_palette():
    """Mouse optional: each of the dashboard's actions is bound to a key (and listed in ``?``)."""
    actions = {name[len("action_"):] for name in vars(TopApp) if name.startswith("action_")}
    bound = {k.action.split("(")[0] for k in KEYS}
    assert {"pause", "theme", "jump", "filter"} <= actions and actions <= bound, actions - bound
    for mode in ("live", "replay"):
        assert "ctrl+p" in help_text(mode).plain and "t " in help_text(mode).plain


@pytest.mark.parametrize("name", sorted(thresholds.THRESHOLDS))
def test_a_warn_or_crit_value_carries_a_mark_beside_its_colour(name):
    t = thresholds.THRESHOLDS[name]
    ok = t.warn - abs(t.warn) * 0.5 if t.higher_is_worse else t.warn * 1.5 + 1
    bad = t.crit * 2 + 1 if t.higher_is_worse else t.crit / 2
    between = (t.warn + t.crit) / 2
    unit = "%" if t.unit == "%" else "ns" if t.unit == "ns" else "x"
    for theme in thresholds.THEMES:
        assert not fmt.colored(ok, unit, name, theme=theme).plain.endswith("!")
        assert fmt.colored(between, unit, name, theme=theme).plain.endswith("!")
        assert not fmt.colored(between, unit, name, theme=theme).plain.endswith("!!")
        assert fmt.colored(bad, unit, name, theme=theme).plain.endswith("!!")
        assert fmt.colored(None, unit, name, theme=theme).plain == units.MISSING
    assert "green" not in str(thresholds.THEMES["colorblind"]) and "red" not in str(thresholds.THEMES["colorblind"])


def test_no_color_gives_no_colour_and_the_marks_stay(guest, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def go():
        app = replay_app(guest)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: "data reads" in screen_text(app), "the timeline read")
            segs = _segments(app)
            assert segs
            coloured = [(s.text, s.style) for s in segs if s.style is not None and (
                (s.style.color is not None and not s.style.color.is_default)
                or (s.style.bgcolor is not None and not s.style.bgcolor.is_default))]
            assert not coloured, coloured[:5]
            assert "11.0%!" in screen_text(app)  # the read path's disks share: warn, without a colour
    run(go())


def test_the_colour_blind_theme_by_option_and_by_key(guest):
    with pytest.raises(UserError):
        TopApp(None, panels.HeaderInfo(), 1.0, theme="nope")

    def crit_style(app) -> str:
        for t in app.query_one(f"#{panels.panel('readpath').widget_id}").texts:
            for sp in t.spans:
                if t.plain[sp.start:sp.end].endswith("%!"):
                    return str(sp.style)
        return ""

    async def go():
        app = replay_app(guest)
        async with app.run_test(size=(160, 50)) as pilot:
            await _settle(pilot)
            assert crit_style(app) == thresholds.THEMES["default"]["warn"] == "yellow"
            await pilot.press("t")
            await _until(pilot, lambda: crit_style(app) == thresholds.THEMES["colorblind"]["warn"], "the new theme")
            assert app.opts.theme == "colorblind"
            await pilot.press("t")
            await _until(pilot, lambda: crit_style(app) == "yellow", "the default theme back")
    run(go())

    rec = Recording.open(guest)
    try:
        cur = ReplayCursor(rec, 300.0)
        app = TopApp(cur.state, panels.HeaderInfo(mode="replay"), cur.interval, replay=cur, theme="colorblind")
        assert app.opts.theme == "colorblind"
    finally:
        rec.close()


def test_below_80x24_the_screen_says_so_and_comes_back_when_resized(guest):
    async def go():
        app = replay_app(guest)
        async with app.run_test(size=(70, 20)) as pilot:
            await _settle(pilot)
            text = screen_text(app)
            assert f"terminal too small: 70x20, needs {MIN_SIZE[0]}x{MIN_SIZE[1]}" in text
            assert not any(f" {h} " in text for h in HEADINGS) and "REPLAY" not in text
            row = next(i for i, line in enumerate(text.splitlines()) if "too small" in line)
            assert 5 <= row <= 14  # centred, not on the first line
            await pilot.resize_terminal(100, 30)
            await _until(pilot, lambda: all(f" {h} " in screen_text(app) for h in HEADINGS), "the layout back")
            assert "too small" not in screen_text(app) and "REPLAY" in screen_text(app)
            await pilot.resize_terminal(79, 24)
            await _until(pilot, lambda: "too small: 79x24" in screen_text(app), "the message again")
            await pilot.resize_terminal(80, 24)
            await _until(pilot, lambda: all(f" {h} " in screen_text(app) for h in HEADINGS), "80x24 laid out")
    run(go())


def _arc_reads(guest: str, before: float) -> float:
    """The ARC's accesses in the last interval before ``before``, from the recording's counters themselves."""
    with Recording.open(guest) as rec:
        arc = sorted((s for s in rec.samples() if isinstance(s, Sample) and s.entity.kind == Kind.ARC
                      and not s.since_boot and s.ts <= before), key=lambda s: s.ts)
    a, b = arc[-2].metrics, arc[-1].metrics
    return sum(b[k] - a[k] for k in ("hits", "misses", "iohits") if k in b)


def test_every_ratio_shows_what_it_is_of_and_the_arc_is_not_used_memory(guest):
    async def go():
        app = replay_app(guest)
        async with app.run_test(size=(160, 50)) as pilot:
            await _settle(pilot)
            arc = [t.plain for t in _arc_texts(app)]
            reads = _arc_reads(guest, app.replay.cursor)
            hit = next(line for line in arc if line.startswith("hit "))
            assert re.search(rf"\d+\.\d%!{{0,2}} of {re.escape(units.human_count(reads))}\b", hit), hit
            for lab in ("dd", "dm", "pf"):
                assert re.search(r"(\d+\.\d%!{0,2}|-) of \S+", next(x for x in arc if x.startswith(lab))), arc
            assert any(re.match(r"L2 hit (\S+) of \S+ size", line) for line in arc), arc
            size = next(line for line in arc if line.startswith("size "))
            assert re.fullmatch(r"size \S+ / c \S+ / max \S+", size.strip()), size
            assert not any(w in " ".join(arc).lower() for w in ("used", "free", "ram", "mem"))
            path = [t.plain for t in app.query_one(f"#{panels.panel('readpath').widget_id}").texts]
            now, win = app.state.read_path()
            assert any(re.fullmatch(rf"reads\s+{re.escape(units.human_count(now.reads))}\s+"
                                    rf"{re.escape(units.human_count(win.reads))}", line.strip()) for line in path), path
        app = replay_app(guest)
        async with app.run_test(size=(80, 24)) as pilot:  # compact: the counts still beside the ratios
            await _settle(pilot)
            arc = [t.plain for t in _arc_texts(app)]
            assert re.search(r"hit \d+\.\d%!{0,2} of \S+", arc[1]), arc
            assert re.search(r"dd (\d+\.\d%!{0,2}|-)/\S+", arc[2]), arc
            assert re.fullmatch(r"ARC [\d.]+[KMGT]? c [\d.]+[KMGT]? max [\d.]+[KMGT]?", arc[3].strip()), arc  # whole
            path = app.query_one(f"#{panels.panel('readpath').widget_id}").texts
            now, win = app.state.read_path()
            assert path[0].plain.strip().endswith(f"of {units.human_count(now.reads)} / "
                                                  f"{units.human_count(win.reads)}"), path[0].plain
    run(go())

