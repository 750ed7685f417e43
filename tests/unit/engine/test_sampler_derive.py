"""Values derived once: the sampler derives each sample (rates, ARC/L2ARC/ZIL ratios, resets) and hands the values to
every sink with the raw records; the recorder writes the raw records as read, the dashboard reads the sampler's
values and derives none of its own, and what reads a recording derives the same figures with the same class."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import pytest

from zfsmon.analysis.rates import Deriver, derive_samples
from zfsmon.engine.sampler import Sampler
from zfsmon.model import Derived, Entity, Event, EventKind, Kind, Record, Sample, Tick, joined
from zfsmon.sources.base import Collector
from zfsmon.store import Recorder, Recording
from zfsmon.views.top.app import LiveFeed
from zfsmon.views.top.state import TopState


class Replaying(Collector):
    """Gives one recorded tick's samples per poll (the guest recording's ARC, L2ARC and ZIL), at their own times."""

    name = "arcstats"

    def __init__(self, ticks: List[List[Sample]]) -> None:
        super().__init__()
        self.ticks = list(ticks)

    def poll(self) -> List[Record]:
        return list(self.ticks.pop(0)) if self.ticks else []


def _arc_ticks(path: str) -> List[List[Sample]]:
    """The recording's ARC/L2ARC/ZIL readings, grouped by time: what the kstat collectors gave each tick."""
    with Recording.open(path) as rec:
        samples = sorted((s for s in rec.samples() if s.entity.kind in (Kind.ARC, Kind.L2ARC, Kind.ZIL)),
                         key=lambda s: s.ts)
    by_ts: Dict[float, List[Sample]] = {}
    for s in samples:
        by_ts.setdefault(s.ts, []).append(s)
    return [by_ts[t] for t in sorted(by_ts)]


def _sampled(path: str) -> Tuple[List[List[Sample]], List[Tick]]:
    ticks = _arc_ticks(path)
    got: List[Tick] = []
    sampler = Sampler([Replaying(ticks)], 1.0, sinks=[got.append], clock=lambda: 0.0)
    for _ in ticks:
        sampler.tick()
    return ticks, got


@pytest.fixture(scope="module")
def guest_ticks(real_recordings):
    return _sampled(real_recordings["guest"])


def test_each_tick_reaches_the_sinks_with_its_samples_derived_values(guest_ticks):
    ticks, got = guest_ticks
    assert len(ticks) > 10 and len(got) == len(ticks)
    for raw, tick in zip(ticks, got):
        assert isinstance(tick, Tick)
        assert [r for r in tick if isinstance(r, Sample)] == raw  # the raw records, as read
        assert all(any(d.sample is s for s in raw) for d in tick.derived)
    # every reading after the first of its entity is derived, its ratios among the values
    derived = [d for t in got for d in t.derived]
    readings = [s for t in ticks for s in t]
    assert len(derived) == len(readings) - len({s.entity.key for s in readings})
    l2 = [d for d in derived if d.sample.entity.kind == Kind.L2ARC]
    assert l2 and all(d.elapsed > 0 and "reads_per_s" in d.metrics for d in l2)


def test_live_and_offline_figures_come_from_one_derivation(guest_ticks):
    """What `analyze` and `report` take from a recording is what the sampler handed the dashboard live."""
    ticks, got = guest_ticks
    offline = derive_samples(s for t in ticks for s in t)
    live: Dict[Kind, List[Sample]] = {k: [] for k in offline}
    for tick in got:
        for d in tick.derived:
            live[d.sample.entity.kind].append(d.interval_sample())
    assert {k: [(s.ts, s.metrics, s.interval) for s in v] for k, v in live.items()} == \
        {k: [(s.ts, s.metrics, s.interval) for s in v] for k, v in offline.items()}
    assert offline[Kind.L2ARC] and all("hit_pct" in s.metrics or s.metrics.get("reads_per_s") == 0
                                       for s in offline[Kind.L2ARC])


class _Refuses:
    """A deriver the dashboard must not call: live records come derived."""

    def update(self, sample: Sample):
        raise AssertionError(f"the dashboard derived {sample.entity.key} itself")

    def copy(self) -> _Refuses:
        return self


def test_the_dashboard_reads_the_samplers_values_and_derives_none(guest_ticks):
    ticks, got = guest_ticks
    feed = LiveFeed()
    for tick in got:
        feed.sink(tick)
    live = TopState(window_s=3600.0)
    live._deriver = _Refuses()  # type: ignore[assignment]
    live.feed(joined(feed.drain_batches()))  # as the app's timer drains the sampler's batches
    replayed = TopState(window_s=3600.0)  # a recording's records: derived by the state, with the same class
    replayed.feed([s for t in ticks for s in t])
    assert live.arc() == replayed.arc() and live.zil() == replayed.zil()
    assert live.arc()["l2_reads"] is not None and live.arc()["since_boot"] == 0.0
    assert live.spark("l2arc", "hit_pct") == replayed.spark("l2arc", "hit_pct") != []


def test_the_recorder_writes_the_raw_records_only(guest_ticks, tmp_path):
    ticks, got = guest_ticks
    path = str(tmp_path / "r.zfsmon")
    rec = Recorder(path, {"host": "t"})
    for tick in got:
        rec.write(tick)
    rec.close()
    with Recording.open(path) as back:
        written = sorted(((s.ts, s.entity.key, s.metrics) for s in back.samples()), key=lambda x: (x[0], x[1]))
    assert written == sorted(((s.ts, s.entity.key, s.metrics) for t in ticks for s in t), key=lambda x: (x[0], x[1]))
    assert not any("hit_pct" in m for _, _, m in written)  # no derived value among them


def _arc_run(readings: List[Dict[str, float]], steps: Optional[Dict[int, float]] = None) -> List[Tick]:
    """The sampler over ARC readings one second apart; ``steps``: before tick i, the wall clock jumps so far."""
    arc = Entity(Kind.ARC, "arc")
    now = [1000.0]
    col = Replaying([[Sample(1000.0 + i, arc, m, source="arcstats")] for i, m in enumerate(readings)])
    got: List[Tick] = []
    sampler = Sampler([col], 1.0, sinks=[got.append], clock=lambda: now[0])
    for i in range(len(readings)):
        now[0] += (steps or {}).get(i, 0.0)
        sampler.tick()
    return got


def _hit_pcts(got: List[Tick]) -> List[List[float]]:
    return [[d.metrics["hit_pct"] for d in t.derived] for t in got]


def test_a_counter_reset_is_one_event_and_no_figures():
    got = _arc_run([{"hits": 100.0, "misses": 10.0}, {"hits": 150.0, "misses": 20.0}, {"hits": 5.0, "misses": 1.0},
                    {"hits": 15.0, "misses": 1.0}])
    resets = [[e for e in t if isinstance(e, Event) and e.kind == EventKind.RESET] for t in got]
    assert _hit_pcts(got) == [[], [pytest.approx(100 * 50 / 60)], [], [100.0]]
    assert [len(r) for r in resets] == [0, 0, 1, 0] and resets[2][0].source == "arcstats"
    # the same readings offline: the same figures
    d = Deriver()
    assert [[x.metrics["hit_pct"]] if x else [] for x in (d.update(s)[0] for t in got for s in t
                                                             if isinstance(s, Sample))] == _hit_pcts(got)


def test_a_clock_step_restarts_the_rates_every_sink_sees():
    readings = [{"hits": 100.0 * i, "misses": 10.0 * i} for i in range(1, 5)]
    assert _hit_pcts(_arc_run(readings)) == [[], [pytest.approx(100 * 100 / 110)]] + [[pytest.approx(100 * 100 / 110)]] * 2
    stepped = _arc_run(readings, steps={2: 3600.0})
    assert any(isinstance(e, Event) and "clock stepped" in e.text for e in stepped[2])
    assert _hit_pcts(stepped) == [[], [pytest.approx(100 * 100 / 110)], [], [pytest.approx(100 * 100 / 110)]]


def test_derived_values_of_a_plain_batch_are_none_and_joined_batches_keep_theirs():
    s = Sample(1.0, Entity(Kind.ARC, "arc"), {"hits": 1.0, "misses": 1.0}, source="arcstats")
    d = Derived(s, 1.0, {}, {}, {})
    assert joined([[s]]) == [s] and not isinstance(joined([[s]]), Tick)
    both = joined([Tick([s], [d]), [Event(2.0, EventKind.MARK, "m", source="user")]])
    assert isinstance(both, Tick) and both.derived == [d] and len(both) == 2
