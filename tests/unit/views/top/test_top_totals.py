"""The vdev tree's totals mode (`r`): running sums per row give the numbers the window's scan gave, and a redraw
no longer scans the window for each row."""

from __future__ import annotations

import math
from collections import deque
from typing import Dict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit import top_data
from zfsmon.model import Entity, Event, EventKind, Kind, Role, Sample
from zfsmon.views.top import state as state_mod
from zfsmon.views.top.state import TopState

KEYS = ("leaf:p/a", "leaf:p/b", "vdev:p/m0", "pool:p")
ENTITIES = {"leaf:p/a": Entity(Kind.LEAF, "a", "p", Role.DATA, "m0"),
            "leaf:p/b": Entity(Kind.LEAF, "b", "p", Role.DATA, "m0"),
            "vdev:p/m0": Entity(Kind.VDEV, "m0", "p", Role.DATA, "p"),
            "pool:p": Entity(Kind.POOL, "p", "p", None, "p")}


def scan_totals(self: TopState, key: str) -> Dict[str, float]:
    """The oracle: TopState.totals as it was before the running sums, verbatim (a scan of the window per row)."""
    lo, hi = self.window()
    out: Dict[str, float] = {}
    for s in self.samples:
        if s.entity.key != key or not lo <= s.ts <= hi or not s.interval:
            continue
        for m in ("read_ops", "write_ops", "read_bw", "write_bw"):
            if m in s.metrics:
                out[m] = out.get(m, 0.0) + s.metrics[m] * s.interval
    return out


def _same(got: Dict[str, float], want: Dict[str, float], exact: bool) -> bool:
    if got.keys() != want.keys():
        return False
    for m, w in want.items():
        g = got[m]
        if math.isnan(w) or math.isnan(g):
            if not (math.isnan(w) and math.isnan(g)):
                return False
        elif exact or math.isinf(w) or math.isinf(g):
            if g != w:
                return False
        elif not math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-300):
            return False
    return True


def _steps(values, intervals):
    """A run of the dashboard: batches (time steps that may go back: a slow source's batch after a faster one's),
    since-import reports and health samples beside the interval ones, counter resets, +/- window changes and
    copies (replay keeps states around its cursor and steps on from one)."""
    metric_sets = st.sets(st.sampled_from(("read_ops", "write_ops", "read_bw", "write_bw", "alloc")), min_size=0)
    sample = st.tuples(st.sampled_from(KEYS), st.floats(-4.0, 3.0, allow_nan=False), intervals, metric_sets,
                       st.lists(values, min_size=5, max_size=5), st.sampled_from(("iv", "iv", "iv", "boot", "health")))
    batch = st.tuples(st.just("feed"), st.floats(0.0, 4.0, allow_nan=False), st.lists(sample, max_size=6),
                      st.booleans())
    window = st.tuples(st.just("window"), st.sampled_from((2.0, 5.0, 8.0, 60.0, 300.0)))
    return st.lists(st.one_of(batch, batch, batch, window, st.just(("copy",))), min_size=1, max_size=60)


def _run(steps, exact: bool) -> None:
    stt = TopState(5.0)
    t = 1_800_000_000.0
    for step in steps:
        if step[0] == "feed":
            _, dt, samples, reset = step
            t += dt
            recs = []
            for key, off, interval, mset, vals, what in samples:
                m = dict(zip(sorted(mset), vals))
                if what == "health":
                    m.update(state=0.0, online=1.0)
                    m.pop("read_ops", None)
                recs.append(Sample(t + off, ENTITIES[key], m, interval=interval, since_boot=what == "boot",
                                   source="zpool iostat"))
            if reset:
                recs.append(Event(t, EventKind.RESET, "a counter went backwards", source="zpool iostat"))
            stt.feed(recs)
        elif step[0] == "window":
            stt.window_s = step[1]  # as +/- does live
        else:
            stt = stt.copy()
        for key in KEYS:
            got, want = stt.totals(key), scan_totals(stt, key)
            assert _same(got, want, exact), (key, got, want)


@pytest.fixture
def few_samples(monkeypatch):
    """A small MAX_SAMPLES, so the state also lets samples go for their number, not only their age."""
    monkeypatch.setattr(state_mod, "MAX_SAMPLES", 12)


# counts and bytes as zpool iostat -p reports them, over intervals of whole or halved seconds: every float sum of
# these is exact, so the running sums must give the scan's numbers to the last bit
_COUNTS = st.integers(0, 2 ** 40).map(float)
_DYADIC = st.sampled_from((None, 0.0, 1.0, 1.0, 0.5, 2.0, 0.25, 30.0))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps(_COUNTS, _DYADIC))
def test_totals_are_the_scans_numbers_exactly(steps, few_samples) -> None:
    _run(steps, exact=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps(_COUNTS, _DYADIC))
def test_totals_are_the_scans_numbers_with_the_real_bound(steps) -> None:
    _run(steps, exact=True)


# any floats, a damaged recording's nan and infinities too, over measured intervals (1.0023 s): the scan's float
# sum rounds at each step, the running sum once, so they agree to rounding; non-finite amounts give the same
_FLOATS = st.one_of(st.floats(0.0, 1e12), st.floats(0.0, 1e300), st.sampled_from((float("nan"), float("inf"),
                                                                                      float("-inf"), -5.0, 1e308)))
_MEASURED = st.one_of(_DYADIC, st.floats(0.001, 100.0), st.just(float("nan")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps(_FLOATS, _MEASURED))
def test_totals_agree_with_the_scan_on_any_floats(steps, few_samples) -> None:
    _run(steps, exact=False)


def test_a_spike_that_leaves_the_window_leaves_nothing_behind() -> None:
    """A float running sum that added 1e300 and took it away again would say 0 for the ops around it; the sums
    are exact, so the two ops after the spike are two."""
    stt = TopState(5.0)
    t = 1_800_000_000.0
    stt.feed([Sample(t, ENTITIES["leaf:p/a"], {"read_ops": 1e300}, interval=1.0)])
    stt.feed([Sample(t + 1, ENTITIES["leaf:p/a"], {"read_ops": 1.0}, interval=1.0)])
    stt.feed([Sample(t + 6, ENTITIES["leaf:p/a"], {"read_ops": 1.0}, interval=1.0)])
    assert stt.totals("leaf:p/a") == {"read_ops": 2.0} == scan_totals(stt, "leaf:p/a")


class _NoScan(deque):
    """The state's samples, refusing to be walked: a totals redraw must read its sums, not scan the window."""

    def __iter__(self):
        raise AssertionError("the window's samples were scanned")


def test_totals_mode_reads_sums_and_does_not_scan_the_window(fixtures) -> None:
    """On the genuine captures' recording: the tree in totals mode gives the scan's numbers for every row,
    without walking the held samples (a scan per row was 0.33 s of CPU a redraw at 64 leaves)."""
    stt = TopState(300.0)
    for _ts, batch in top_data.batches():
        stt.feed(batch)
    keys = {(e.pool, e.name): k for k, e in stt.entities.items() if e.kind in (Kind.POOL, Kind.VDEV, Kind.LEAF)}
    want = {k: scan_totals(stt, k) for k in keys.values()}
    assert any(want.values()), "the captures gave no interval figures to total"
    stt.samples = _NoScan(stt.samples)
    for pool in stt.pools():
        for r in stt.tree(pool, totals=True):
            if r.kind in ("pool", "vdev", "leaf"):
                tot = want[keys[(pool, r.name)]]
                assert {m: r.metrics[m] for m in tot} == tot
    # 384 + 0 + 0 write ops in the capture's 1-second intervals 2..4 (test_top_state's figure, by the sums now)
    assert stt.totals("leaf:ziocap/loop1")["write_ops"] == 384.0

