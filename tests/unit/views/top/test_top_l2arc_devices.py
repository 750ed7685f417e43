"""The ARC / L2ARC panel shows the L2ARC's device count where the kernel reports it (OpenZFS 2.4's ``l2_ndev``).

From the guests' arcstats captures: 2.4.4 counts one cache device (virtio-cache0), 2.3.2 does not count them, so
its panel is as before. A count of 0 is the kernel saying there is no cache device left (arc.c decrements
``l2arc_ndev`` as each is removed): the panel says so even without a vdev tree to ask.
"""

from __future__ import annotations

import asyncio

from tests.conftest import TEST_DATA
from tests.unit import top_data
from tests.unit.views.top.test_top_app import _live_app, _until, screen_text
from zfsmon.sources.kstat import arcstats
from zfsmon.views.top import panels
from zfsmon.views.top.folds.arc_l2arc import ArcFold
from zfsmon.views.top.state import TopState

ARC24 = (TEST_DATA / "openzfs-2.4" / "kstat" / "arcstats").read_text()
ARC23 = (TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats").read_text()
NDEV_LINE = "l2_ndev                         4    1"


def _state(text: str) -> TopState:
    st = TopState()
    st.feed(arcstats.parse_linux(text, 100.0))
    st.feed(arcstats.parse_linux(text, 110.0))  # the same counters 10 s later: nothing fed, nothing read
    return st


def _lines(st: TopState, width: int = 60, compact: bool = False) -> list:
    return panels.arc(st, panels.ViewOptions(), width, compact).plain.splitlines()


def test_2_4_shows_its_one_cache_device_beside_the_feed():
    st = _state(ARC24)
    assert st.fold(ArcFold).values(st)["l2_ndev"] == 1
    lines = _lines(st)
    assert "L2 feed 0/s read 0/s  1 device" in lines and any(ln.startswith("L2 hit") for ln in lines)


def test_2_3_does_not_count_them_and_shows_no_count():
    st = _state(ARC23)
    assert st.fold(ArcFold).values(st)["l2_ndev"] is None
    lines = _lines(st)
    assert [ln for ln in lines if ln.startswith("L2 feed")] == ["L2 feed 0/s read 0/s"]
    assert not any("device" in ln for ln in lines)


def test_a_count_of_none_left_is_no_cache_device_without_a_tree():
    assert NDEV_LINE in ARC24
    st = _state(ARC24.replace(NDEV_LINE, NDEV_LINE[:-1] + "0"))  # the last cache device removed
    assert st.has_cache_device() is None  # no zpool tree: only the kernel's count says it
    lines = _lines(st)
    assert "L2ARC: no cache device" in lines and not any(ln.startswith("L2 ") for ln in lines)


def test_a_narrow_cell_keeps_the_rates_whole_and_leaves_the_count_out():
    lines = _lines(_state(ARC24), width=26, compact=True)
    assert [ln.rstrip() for ln in lines if ln.startswith("L2 feed")] == ["L2 feed 0/s read 0/s"]


def test_the_count_is_on_the_live_screen_where_it_fits(tmp_path):
    async def go(size):
        app, feed = _live_app(tmp_path)
        async with app.run_test(size=size) as pilot:
            feed.sink(arcstats.parse_linux(ARC24, top_data.T_END))  # read now, by the app's clock
            await _until(pilot, lambda: app.state.fed > 0, "the arcstats reading to be fed")
            app.redraw()
            await _until(pilot, lambda: "L2 feed" in screen_text(app), "the L2ARC lines on screen")
            return screen_text(app)
    wide = asyncio.run(go((160, 50)))
    assert "L2 feed -/s read -/s  1 device" in wide
    narrow = asyncio.run(go((80, 24)))
    assert "L2 feed" in narrow and "device" not in narrow
