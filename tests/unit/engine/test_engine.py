"""The sampler: polls collectors, hands records to sinks, survives failing sources and sinks."""

from __future__ import annotations

import threading
from typing import List

from zfsmon.engine import Sampler
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources.base import Collector

ARC = Entity(Kind.ARC, "arc")


class Counting(Collector):
    """A collector over a fixed list of `hits` readings (a real ARC reset looks like 30 -> 5)."""

    name = "counting"

    def __init__(self, readings: List[int]) -> None:
        super().__init__()
        self.readings = list(readings)
        self.t = 1000.0
        self.stopped = False

    def poll(self) -> List[Record]:
        if not self.readings:
            return []
        self.t += 1.0
        return [Sample(self.t, ARC, {"hits": self.readings.pop(0), "size": 7.0}, source=self.name)]

    def stop(self) -> None:
        self.stopped = True


class Broken(Collector):
    name = "broken"

    def poll(self) -> List[Record]:
        raise RuntimeError("kstat vanished")


def test_ticks_deliver_samples_and_reset_events_to_every_sink():
    got_a: List[Record] = []
    got_b: List[Record] = []
    s = Sampler([Counting([10, 20, 30, 5, 15])], 1.0, sinks=[got_a.extend, got_b.extend])
    for _ in range(6):
        s.tick()
    assert got_a == got_b
    samples = [r for r in got_a if isinstance(r, Sample)]
    assert [r.metrics["hits"] for r in samples] == [10, 20, 30, 5, 15]
    resets = [r for r in got_a if isinstance(r, Event) and r.kind == EventKind.RESET]
    assert len(resets) == 1 and resets[0].ts == samples[3].ts and "hits" in resets[0].text


def test_a_broken_source_becomes_an_error_event_and_others_go_on():
    got: List[Record] = []
    s = Sampler([Broken(), Counting([1, 2])], 1.0, sinks=[got.extend])
    s.tick()
    s.tick()
    errors = [r for r in got if isinstance(r, Event) and r.kind == EventKind.ERROR]
    assert len(errors) == 2 and "kstat vanished" in errors[0].text
    assert [r.metrics["hits"] for r in got if isinstance(r, Sample)] == [1, 2]


def test_a_failing_sink_is_reported_once_to_the_others():
    good: List[Record] = []

    def bad(_: List[Record]) -> None:
        raise OSError(28, "No space left on device")

    s = Sampler([Counting([1, 2, 3])], 1.0, sinks=[bad, good.extend])
    for _ in range(3):
        s.tick()
    errs = [r for r in good if isinstance(r, Event) and r.kind == EventKind.ERROR]
    assert len(errs) == 1 and "No space left" in errs[0].text
    assert len([r for r in good if isinstance(r, Sample)]) == 3


def test_run_stops_on_request_and_stops_collectors():
    c = Counting(list(range(1000)))
    got: List[Record] = []
    stop = threading.Event()
    s = Sampler([c], 0.05, sinks=[got.extend])
    t = threading.Thread(target=s.run, kwargs={"stop_event": stop})
    t.start()
    while len(got) < 3:
        threading.Event().wait(0.01)
    stop.set()
    t.join(timeout=5)
    assert not t.is_alive() and c.stopped


def test_run_with_duration_ends_by_itself():
    got: List[Record] = []
    s = Sampler([Counting(list(range(100)))], 0.05, sinks=[got.extend])
    s.run(duration=0.3)
    n = len([r for r in got if isinstance(r, Sample)])
    assert 5 <= n <= 8, n


def test_a_stepped_clock_is_an_event_and_rates_start_afresh():
    now = [1_000_000.0]
    got: list = []
    s = Sampler([], 1.0, sinks=[got.extend], clock=lambda: now[0])
    s.tick()
    now[0] += 0.5  # ordinary: the wall clock went on as time did
    s.tick()
    assert got == []
    now[0] -= 3600
    s.tick()
    now[0] += 7200
    s.tick()
    texts = [e.text for e in got]
    assert len(texts) == 2 and texts[0].startswith("the clock stepped back by 36") \
        and texts[1].startswith("the clock stepped forward by 72"), texts
    assert all(e.kind == EventKind.INFO and e.source == "clock" for e in got)
