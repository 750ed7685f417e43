"""Bounded scrapes: a slow source never holds a scrape, its last values stay served and marked stale.

The exporter is push-fed: the engine's sampler collects on its own schedule, each read on its own worker with a
deadline (zfsmon/engine/reads.py), and a scrape only renders what the sampler left. These tests pin that on the
real exporter (the HTTP server on 127.0.0.1, an ephemeral port) fed by the real sampler, whose arcstats source
reads the OpenZFS 2.3 guest's real arcstats capture through the real collector and parser; its read is held
(a ``threading.Event``) to stand in for a kstat read stuck in the kernel.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Dict, Iterator, List, Sequence, Tuple
from urllib.parse import urlencode

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_DATA, need, wait_until
from zfsmon.commands._serve import serve
from zfsmon.engine import Sampler
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources.kstat.arcstats import LinuxArcstatsCollector
from zfsmon.views.prometheus import LatestValues

ARCSTATS = TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats"
#: the capture's figures (its `hits` and `size` lines)
HITS, SIZE = 147513.0, 114471904.0
DEADLINE_S = 0.5


def _get(port: int, names: Sequence[str] = ()) -> str:
    """A scrape; with ``names``, of those families only, rendered for it (a plain one may be the cached one)."""
    query = "?" + urlencode([("name[]", n) for n in names]) if names else ""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics{query}", timeout=30) as resp:
        assert resp.status == 200
        return resp.read().decode()


def _samples(text: str) -> Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _src(name: str) -> Tuple[Tuple[str, str], ...]:
    return (("source", name),)


class Gate:
    """Holds the collector's reads while shut: ``entered`` is set when a held read began."""

    def __init__(self) -> None:
        self.shut = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self.reads = 0


@dataclass
class Rig:
    """The exporter under test: its sampler (ticked by the test), sink, port, the gate on arcstats' read, and the
    clocks the test moves: the sampler's wall clock and the sink's monotonic one."""

    sampler: Sampler
    latest: LatestValues
    port: int
    gate: Gate
    wall: List[float]
    mono: List[float]

    def tick(self) -> List[Record]:
        """One tick on a thread of its own (one held by the read fails the test instead of stalling it)."""
        self.wall[0] += 1
        got: List[List[Record]] = []
        t = threading.Thread(target=lambda: got.append(self.sampler.tick()), name="test-tick", daemon=True)
        t.start()
        t.join(60)
        assert got, "the tick did not return: a held read held the sampler"
        return got[0]

    def scrape(self, *names: str) -> Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]:
        return _samples(_get(self.port, names))


@pytest.fixture
def rig(tmp_path) -> Iterator[Rig]:
    path = tmp_path / "arcstats"
    shutil.copyfile(ARCSTATS, path)
    wall = [1_800_000_000.0]
    gate = Gate()
    arc = LinuxArcstatsCollector(str(path), clock=lambda: wall[0])
    real_read = arc.read_text

    def read_text() -> str:
        gate.reads += 1
        if gate.shut:
            gate.entered.set()
            gate.release.wait(60)
        return real_read()

    arc.read_text = read_text  # type: ignore[method-assign]
    mono = [1000.0]
    latest = LatestValues(stale_after=5.0, clock=lambda: mono[0])
    sampler = Sampler([arc], 1.0, sinks=[latest.add], clock=lambda: wall[0], read_deadline=DEADLINE_S)
    server, port = serve(latest, "127.0.0.1", 0, note=lambda _t: None)
    try:
        yield Rig(sampler, latest, port, gate, wall, mono)
    finally:
        gate.release.set()
        sampler.stop()
        server.shutdown()
        server.server_close()


def _readers() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "zfsmon-read-arcstats" and t.is_alive())


def test_a_held_read_leaves_scrapes_prompt_with_the_last_values_marked_stale(rig):
    rig.tick()
    fresh = rig.scrape()
    assert fresh[("zfsmon_arc_hits_total", ())] == HITS and fresh[("zfsmon_arc_size_bytes", ())] == SIZE
    assert fresh[("zfsmon_source_up", _src("arcstats"))] == 1
    assert fresh[("zfsmon_source_errors_total", _src("arcstats"))] == 0  # served from the first sample on
    first_ts = fresh[("zfsmon_last_sample_timestamp_seconds", _src("arcstats"))]

    rig.gate.shut = True
    recs = rig.tick()  # the read is held: the tick gives up on it at the deadline
    assert rig.gate.entered.is_set()
    [ev] = [r for r in recs if isinstance(r, Event)]
    assert ev.kind == EventKind.ERROR and ev.data == {"stale": True}

    t0 = time.monotonic()
    stale = rig.scrape()  # answered while the read is still held: a scrape never waits on a read
    took = time.monotonic() - t0
    assert rig.gate.reads == 2 and not rig.gate.release.is_set()
    assert stale[("zfsmon_arc_hits_total", ())] == HITS and stale[("zfsmon_arc_size_bytes", ())] == SIZE
    assert stale[("zfsmon_source_up", _src("arcstats"))] == 0
    assert stale[("zfsmon_source_errors_total", _src("arcstats"))] == 1  # the deadline missed
    assert stale[("zfsmon_last_sample_timestamp_seconds", _src("arcstats"))] == first_ts  # the values' age
    print(f"SCRAPE while a read is held: {took * 1000:.0f} ms")

    rig.mono[0] += 100  # far past stale_after: a source that is only slow is not taken for a gone one
    for _ in range(3):  # no second collection of the held source, and no second deadline miss counted
        assert not [r for r in rig.tick() if isinstance(r, (Sample, Event))]
    assert rig.gate.reads == 2 and _readers() == 1
    held = rig.scrape("zfsmon_arc_hits", "zfsmon_source_up", "zfsmon_source_errors_total")  # rendered now
    assert held[("zfsmon_arc_hits_total", ())] == HITS and held[("zfsmon_source_up", _src("arcstats"))] == 0
    assert held[("zfsmon_source_errors_total", _src("arcstats"))] == 1

    rig.gate.shut = False
    rig.gate.release.set()  # the read returns: the sampler says so, leaves its figures out, and polls afresh
    wait_until(lambda: any(isinstance(r, Event) and r.kind == EventKind.INFO for r in rig.tick()), 30,
               "the held read's return reported")
    rig.mono[0] += 1
    rig.tick()
    back = rig.scrape()
    assert back[("zfsmon_source_up", _src("arcstats"))] == 1 and back[("zfsmon_arc_hits_total", ())] == HITS
    assert back[("zfsmon_last_sample_timestamp_seconds", _src("arcstats"))] == rig.wall[0]
    assert back[("zfsmon_source_errors_total", _src("arcstats"))] == 1


def test_a_failing_read_is_down_and_counted_until_it_reads_again(rig, tmp_path):
    rig.tick()
    (tmp_path / "arcstats").unlink()  # the kstat is gone: each read fails (an error event), the sampler goes on
    rig.tick()
    rig.tick()
    failing = rig.scrape()
    assert failing[("zfsmon_source_up", _src("arcstats"))] == 0
    assert failing[("zfsmon_source_errors_total", _src("arcstats"))] == 2  # each failed read
    assert failing[("zfsmon_arc_hits_total", ())] == HITS  # its last values, within stale_after
    shutil.copyfile(ARCSTATS, tmp_path / "arcstats")
    rig.tick()
    again = rig.scrape()
    assert again[("zfsmon_source_up", _src("arcstats"))] == 1
    assert again[("zfsmon_source_errors_total", _src("arcstats"))] == 2


def test_the_scrape_duration_is_the_previous_renderings(rig):
    rig.tick()
    t0 = time.perf_counter()
    first = rig.scrape()
    first_took = time.perf_counter() - t0
    assert not [k for k in first if k[0] == "zfsmon_scrape_duration_seconds"]  # no rendering before the first
    rig.tick()  # new values: the next scrape renders, and serves the first rendering's time
    took = rig.scrape()[("zfsmon_scrape_duration_seconds", ())]
    assert 0 < took <= first_took


def test_only_a_stuck_sources_entities_are_kept_past_stale_after():
    """The sampler's events as it makes them: the stuck source's entity stays with its values, another source's
    silent entity goes, and once the stuck source answers its entities age from then on."""
    mono = [0.0]
    lv = LatestValues(stale_after=5.0, clock=lambda: mono[0])
    arc, disk = Entity(Kind.ARC, "arc"), Entity(Kind.DEVICE, "vda")
    lv.add([Sample(1.0, arc, {"hits": HITS}, source="arcstats"),
            Sample(1.0, disk, {"reads": 4037}, source="diskstats")])
    lv.add([Event(2.0, EventKind.ERROR, "arcstats: read did not return within 10 s (stuck kernel read?); its last "
                  "figures are 1 s old", source="arcstats", data={"stale": True})])
    mono[0] = 100.0
    assert [(e.name, v) for e, v in lv.snapshot()[0]] == [("arc", {"hits": HITS})]
    assert lv.sources() == {"arcstats": False, "diskstats": True}
    lv.add([Event(3.0, EventKind.INFO, "arcstats: the read returned after 90 s; its figures are left out (when "
                  "they were taken is not known), sampling resumes", source="arcstats")])
    mono[0] = 104.0
    assert [e.name for e, _ in lv.snapshot()[0]] == ["arc"]  # answered at 100: within stale_after of that
    assert lv.sources() == {"arcstats": False, "diskstats": True}  # up again only with a sample
    mono[0] = 106.0
    assert lv.snapshot()[0] == []


def test_a_sample_older_than_the_newest_error_leaves_the_source_down_unless_the_clock_stepped():
    lv = LatestValues()
    arc = Entity(Kind.ARC, "arc")
    lv.add([Event(10.0, EventKind.ERROR, "arcstats: boom", source="arcstats")])
    lv.add([Sample(9.0, arc, {"hits": 1.0}, source="arcstats")])  # a recording's tail, older than its error
    assert lv.sources() == {"arcstats": False}
    lv.add([Event(11.0, EventKind.INFO, "the clock stepped back by 3600 s; times across this point are not "
                  "comparable, rates start afresh", source="clock", data={"step_s": -3600.0})])
    lv.add([Sample(9.5, arc, {"hits": 2.0}, source="arcstats")])
    assert lv.sources() == {"arcstats": True}


def test_promtool_finds_a_stale_scrape_clean(rig):
    need(shutil.which("promtool") is not None, "promtool")
    rig.tick()
    rig.gate.shut = True
    rig.tick()
    text = _get(rig.port)
    assert 'zfsmon_source_up{source="arcstats"} 0.0' in text
    out = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out.stdout + out.stderr

