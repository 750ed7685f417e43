"""The ZIL / SLOG panel: ZIL commits and sync writes, the SLOG's writes, and every pool's block allocations,
class fallbacks and gang writes (the zio_stats kstat), from genuine OpenZFS 2.3 and 2.4.4 guest captures.

The state is fed as the sampler feeds it: each tick's records with their derived values (a
:class:`~zfsmon.model.Tick` made by :class:`~zfsmon.analysis.rates.Deriver`, the sampler's own).
"""

from __future__ import annotations

import asyncio
from typing import List, Sequence

from tests.conftest import TEST_DATA, wait_until_async
from zfsmon.analysis.rates import Deriver
from zfsmon.model import Record, Sample, Tick
from zfsmon.sources.kstat import zil, zio_stats
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.lines import Lines
from zfsmon.views.top.state import TopState

T0 = 1_795_000_000.0
GUEST = TEST_DATA / "openzfs-2.3"
ZIO_24 = TEST_DATA / "openzfs-2.4" / "kstat" / "zio_stats"  # total_allocations 34870
ZIO_23 = GUEST / "kstat" / "zio_stats"  # total_allocations 35793


def _readings(zio_first=ZIO_24, zio_then=ZIO_23) -> List[List[Record]]:
    """Two ticks 10 s apart: the guest's ZIL kstat before and after its fio run, and a zio_stats reading each."""
    first: List[Record] = [*zil.READER.parse_linux((GUEST / "zil.before").read_text(), T0),
                           *zio_stats.READER.parse_linux(zio_first.read_text(), T0)]
    then: List[Record] = [*zil.READER.parse_linux((GUEST / "zil.after").read_text(), T0 + 10.0),
                          *zio_stats.READER.parse_linux(zio_then.read_text(), T0 + 10.0)]
    return [first, then]


def _fed(ticks: Sequence[List[Record]]) -> TopState:
    """A dashboard state fed the ticks with the sampler's derivation of each sample."""
    deriver = Deriver()
    st = TopState(300)
    for recs in ticks:
        derived = [d for d in (deriver.update(r)[0] for r in recs if isinstance(r, Sample)) if d is not None]
        st.feed(Tick(recs, derived))
    return st


def _lines(st: TopState, width: int = 60, compact: bool = False, raw: bool = False) -> List[str]:
    return panels.zil(st, panels.ViewOptions(raw=raw), width, compact).plain.splitlines()


def test_allocations_class_fallbacks_and_gang_writes_per_second_with_their_counts():
    """923 more allocations in 10 s: 92.3/s, beside the kstat's count; nothing fell back or ganged."""
    st = _fed(_readings())
    assert _lines(st, raw=True)[-3:] == ["allocs   92.300/s (35793)", "class fb      0/s (0)",
                                         "gang wr       0/s (0)"]
    assert _lines(st)[-3:] == ["allocs       92/s (35.0K)", "class fb      0/s (0)", "gang wr       0/s (0)"]
    assert _lines(st)[:3] == [" ZIL / SLOG ", "commits 387/s", "sync wr 1835/s"]  # the ZIL's rows as they were


def test_replay_of_a_recording_shows_the_same_rates():
    """A recording's records come without derived values; the state derives them with the sampler's Deriver."""
    st = TopState(300)
    for tick in _readings():
        st.feed(tick)
    assert _lines(st, raw=True)[-3] == "allocs   92.300/s (35793)"


def test_the_narrow_grid_has_one_line_of_it():
    """The narrow layout's cell (six lines) keeps the ZIL's and SLOG's rows and adds allocations and gang writes."""
    lines = _lines(_fed(_readings()), width=25, compact=True)
    assert lines == [" ZIL / SLOG ", "commits 387/s", "sync wr 1835/s", "no SLOG (log vdev)", "alloc 92/s gang 0/s"]


def test_a_first_reading_or_a_counter_going_back_shows_counts_without_rates():
    """One reading has no rate yet; a count lower than the one before (a module reloaded: here the 2.4.4 guest's
    after the 2.3 guest's) is a new baseline, not a negative rate."""
    assert _lines(_fed(_readings()[:1]), raw=True)[-3:] == ["allocs        -/s (34870)", "class fb      -/s (0)",
                                                            "gang wr       -/s (0)"]
    back = _fed(_readings(zio_first=ZIO_23, zio_then=ZIO_24))
    assert _lines(back, raw=True)[-3] == "allocs        -/s (34870)"


def test_a_host_without_zio_stats_shows_the_zil_panel_as_before():
    st = _fed([[r for r in tick if isinstance(r, Sample) and r.source == "zil"] for tick in _readings()])
    assert not any(ln.startswith(("allocs", "class fb", "gang wr")) for ln in _lines(st))
    assert "zio_stats" in panels.panel("zil").sources


def test_the_dashboard_shows_the_allocation_rows_on_screen():
    st = _fed(_readings())
    info = panels.HeaderInfo("guest", "Linux", "captures", "", "live")
    app = TopApp(st, info, 1.0, feed=LiveFeed(), clock=lambda: T0 + 11.0)

    def shown() -> str:
        text = app.query_one(f"#{panels.panel('zil').widget_id}", Lines).plain
        return text if "gang wr" in text else ""

    async def go() -> str:
        async with app.run_test(size=(160, 50)) as pilot:
            return await wait_until_async(shown, 30.0, "the ZIL panel's allocation rows", pilot.pause)

    text = asyncio.run(go())
    assert "allocs       92/s (35.0K)" in text and "class fb      0/s (0)" in text
