"""A live pause holds what arrives as whole sampler batches, bounded by batches and records: a pause of a few
minutes on a 64-leaf pool keeps every one (MAX_HELD counted records: ~70 s of such a pool)."""

from __future__ import annotations

import asyncio
from typing import List

from tests.conftest import wait_until_async
from zfsmon.model import Entity, Kind, Record, Role, Sample
from zfsmon.views.top import app as app_mod
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.state import TopState

T0 = 1_800_000_000.0
POOL = "tank"


def _pool_64() -> List[Entity]:
    """A pool of 8 raidz2 vdevs of 8 leaves (bench_top's shape), and a block device under each leaf."""
    ents = [Entity(Kind.POOL, POOL, POOL)]
    for v in range(8):
        ents.append(Entity(Kind.VDEV, f"raidz2-{v}", POOL, Role.DATA, POOL))
        ents += [Entity(Kind.LEAF, f"sd{chr(97 + v)}{d}", POOL, Role.DATA, f"raidz2-{v}") for d in range(8)]
    ents += [Entity(Kind.DEVICE, e.name, parent=e.name) for e in ents if e.kind == Kind.LEAF]
    return ents


def _tick(ents: List[Entity], i: int) -> List[Record]:
    """One sampler tick: each row's interval figures (leaf n does n+1 write ops a second), each device's counters."""
    out: List[Record] = []
    for n, e in enumerate(ents):
        if e.kind == Kind.DEVICE:
            out.append(Sample(T0 + i, e, {"reads": 10.0 * i, "writes": 20.0 * i}, source="diskstats"))
        else:
            out.append(Sample(T0 + i, e, {"read_ops": 1.0, "write_ops": float(n + 1), "read_bw": 4096.0,
                                          "write_bw": 8192.0}, interval=1.0, source="zpool iostat"))
    return out


def _app(clock: List[float]) -> tuple:
    feed = LiveFeed()
    info = panels.HeaderInfo("h", "Linux", "test", "", "live", started=T0)
    return TopApp(TopState(300), info, 1.0, feed=feed, clock=lambda: clock[0]), feed


def _leaf_write_ops(state: TopState) -> float:
    return sum(state.totals(k).get("write_ops", 0.0) for k, e in state.entities.items() if e.kind == Kind.LEAF)


def test_a_pause_of_90_seconds_at_64_leaves_keeps_every_batch() -> None:
    ents = _pool_64()
    ticks = [_tick(ents, i) for i in range(100)]
    leaves = [n for n, e in enumerate(ents) if e.kind == Kind.LEAF]
    clock = [T0]

    async def go() -> None:
        app, feed = _app(clock)
        async with app.run_test(size=(160, 50)) as pilot:
            for b in ticks[:10]:
                feed.sink(b)
            await wait_until_async(lambda: app.state.fed == 10 * len(ticks[0]), 30, "the first ten ticks fed",
                                   pilot.pause)
            await pilot.press("p")
            assert app.paused
            for i, b in enumerate(ticks[10:], 10):  # 90 one-second ticks while paused
                clock[0] = T0 + i
                feed.sink(b)
            await wait_until_async(lambda: feed.q.empty(), 30, "the paused ticks taken (and held)", pilot.pause)
            assert app.state.fed == 10 * len(ticks[0]), "the model was fed while paused"
            await pilot.press("p")
            assert not app.paused
            st = app.state
            assert st.fed == sum(len(b) for b in ticks), "records held while paused were dropped"
            # every leaf's every second is in the window's totals: leaf n wrote n+1 ops a second for 100 s
            assert _leaf_write_ops(st) == 100 * sum(n + 1 for n in leaves)
            assert st.window()[0] <= T0 and st.now == T0 + 99

    asyncio.run(go())


def test_a_long_pause_lets_the_oldest_whole_batches_go(monkeypatch) -> None:
    """Beyond the bounds (here 5 batches, or 3 batches' records) the oldest batches go whole, the newest stay, and
    the view says so; the memory a pause holds is bounded by MAX_HELD_RECORDS whatever the pool's size."""
    ents = _pool_64()
    per = len(_tick(ents, 0))
    clock = [T0]

    async def go(max_batches: int, max_records: int, kept: int) -> None:
        monkeypatch.setattr(app_mod, "MAX_HELD", max_batches)
        monkeypatch.setattr(app_mod, "MAX_HELD_RECORDS", max_records)
        app, feed = _app(clock)
        said: List[str] = []
        monkeypatch.setattr(app, "say", lambda msg, severity="information": said.append(msg))
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.press("p")
            for i in range(12):
                feed.sink(_tick(ents, i))
            await wait_until_async(lambda: feed.q.empty(), 30, "the paused ticks taken", pilot.pause)
            assert len(app.held) == kept and all(len(b) == per for b in app.held)
            assert [b[0].ts for b in app.held] == [T0 + i for i in range(12 - kept, 12)]
            assert len(said) == 1 and "recording keeps them" in said[0]
            await pilot.press("p")
            assert app.state.fed == kept * per and not app.held

    asyncio.run(go(5, 10 ** 9, 5))
    asyncio.run(go(10 ** 9, 3 * per, 3))
