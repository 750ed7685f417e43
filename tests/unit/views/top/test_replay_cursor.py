"""Replay's cursor: a state reached by stepping back, forth and back again (kept states, see
zfsmon.views.top.replay) shows what a window built afresh at that time shows. On the OpenZFS 2.3 guest's real
recording (nine sources, a vdev's figures in two samples per interval) and a schema-2 file (topology changes, a
counter reset, a mark, an error)."""

from __future__ import annotations

import math
from typing import Dict

import pytest

from zfsmon.store import Recording
from zfsmon.views.top.panels.base import DECLARED
from zfsmon.views.top.replay import BACK_STRIDE, KEEP_STATES, KEEP_WINDOW_S, ReplayCursor
from zfsmon.views.top.state import TopState

WINDOW = 60.0



def _plain(v: object) -> object:
    """Comparable whatever the order things were first seen in (a mapping's order follows feeding) and with nan."""
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, dict):
        return sorted(((repr(k), _plain(x)) for k, x in v.items()), key=lambda kv: kv[0])
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "__dataclass_fields__"):
        return [type(v).__name__, *(_plain(getattr(v, f)) for f in v.__dataclass_fields__)]
    return v


def view(state: TopState) -> Dict[str, object]:
    """Everything the panels ask the state."""
    keys = sorted(state.entities)
    return {
        "window": state.window(),
        "samples": [(s.ts, s.entity.key, s.source) for s in state.window_samples()],
        "events": [(e.ts, e.kind, e.text) for e in state.window_events()],
        "trees": {p: [state.tree(p, sort) for sort in ("name", "ops", "latency")] for p in state.pools()},
        "values": {k: state.values(k) for k in keys},
        "totals": {k: state.totals(k) for k in keys},
        "arc": state.arc(), "zil": state.zil(), "workload": state.workload(), "fio": state.fio(),
        "read_path": state.read_path(), "goose": state.goose_eggs(), "cache": state.has_cache_device(),
        "sparks": {k: state.spark(*k) for k in sorted(state.series)},
        "stale": {a: state.staleness(p.dated_by or p.kinds, p.sources) for a, p in DECLARED.items()},
    }


def fresh(rec: Recording, ts: float, interval: float) -> TopState:
    """The window at ``ts`` built from nothing, as opening the recording there does."""
    state = TopState(WINDOW, keep_s=WINDOW, interval=interval)
    lo = ts - WINDOW - interval * 1.5
    state.feed([*rec.samples(start=lo, end=ts), *rec.events(lo, ts)])
    state.now = ts
    return state


@pytest.mark.parametrize("name", ["guest", "v2"])
def test_stepping_back_and_forth_shows_what_a_fresh_window_shows(real_recordings, name):
    with Recording.open(real_recordings[name]) as rec:
        cur = ReplayCursor(rec, WINDOW)
        assert cur.end - cur.start > (BACK_STRIDE + 10) * cur.interval, "the recording must outlast a stride"
        path = [-1] * (BACK_STRIDE + 5) + [1] * 7 + [-1] * 10  # past a stride's kept states, forth, back again
        seen = 0
        for n in path:
            state = cur.step(n)
            assert state.now == cur.cursor
            expect = fresh(rec, cur.cursor, cur.interval)
            assert _plain(view(state)) == _plain(view(expect)), f"at {cur.cursor - cur.start:.0f} s"
            seen += bool(state.window_samples())
            assert len(cur._kept) <= KEEP_STATES
        assert seen == len(path)


def test_a_kept_state_is_not_changed_by_feeding_its_copy(real_recordings):
    with Recording.open(real_recordings["guest"]) as rec:
        cur = ReplayCursor(rec, WINDOW)
        cur.move_to(cur.start + 2 * WINDOW)
        before = _plain(view(cur.state))
        copy = cur.state.copy()
        copy.feed(list(rec.samples(start=cur.cursor + 1e-6, end=cur.cursor + WINDOW / 2)))
        copy.now = cur.cursor + WINDOW / 2
        assert _plain(view(copy)) != before
        assert _plain(view(cur.state)) == before


def test_no_state_is_kept_for_a_long_window(real_recordings):
    """A state's copy grows with its window: for windows past KEEP_WINDOW_S a step back rebuilds, as before."""
    with Recording.open(real_recordings["guest"]) as rec:
        cur = ReplayCursor(rec, KEEP_WINDOW_S * 2)
        for _ in range(3):
            state = cur.step(-1)
        assert not cur._kept
        assert state.now == cur.cursor and state.window_samples()


@pytest.mark.parametrize("name", ["guest", "v2"])
def test_states_prepared_while_the_cursor_rests_are_the_fresh_windows(real_recordings, name):
    """prepare_back (the dashboard calls it while the cursor rests) keeps the states a step back needs; stepping
    back then takes them, and each shows what a window built afresh there shows."""
    with Recording.open(real_recordings[name]) as rec:
        cur = ReplayCursor(rec, WINDOW)
        at = cur.cursor
        assert cur.prepare_back() and not cur.prepare_back()  # the second call finds them kept
        assert cur.cursor == at and _plain(view(cur.state)) == _plain(view(fresh(rec, at, cur.interval)))
        kept = len(cur._kept)
        assert kept == BACK_STRIDE + 1 <= KEEP_STATES
        for _ in range(BACK_STRIDE):
            ready = cur._kept.get(round((cur.cursor - cur.interval) * 1e6))
            state = cur.step(-1)
            assert state is ready  # taken, not built
            assert _plain(view(state)) == _plain(view(fresh(rec, cur.cursor, cur.interval)))
        cur.move_to(cur.start)
        assert not cur.prepare_back()  # nothing before the start
    with Recording.open(real_recordings[name]) as rec:
        assert not ReplayCursor(rec, KEEP_WINDOW_S * 2).prepare_back()  # no states kept for a long window
