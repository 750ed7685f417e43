"""`zfsmon top --listen`: the exporter served from the dashboard's own collectors, scraped over real HTTP.

The collectors read genuine captures (the zfs-fuse lab's ``zpool iostat -v``, OpenZFS 2.3 arcstats) through
zfsmon's parsers and count their reads; the dashboard is the real `top` set-up (:func:`top.dashboard`) run
under Textual's pilot, and ``zfsmon exporter`` the real command.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Dict, List, Set, Tuple
from urllib.parse import urlsplit

import pytest

from tests.conftest import free_loopback_port, wait_until, wait_until_async
from tests.unit import top_data
from tests.unit.views.test_exporter import Scrape, scrape, value
from zfsmon.cli import build_parser, main
from zfsmon.commands import exporter as exporter_cmd
from zfsmon.commands import top
from zfsmon.engine import Session
from zfsmon.errors import UserError
from zfsmon.host import Host
from zfsmon.model import Entity, Kind, Sample
from zfsmon.sources.base import PolledCollector
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.views.top import panels
from zfsmon.views.top.state import TopState

INTERVAL = "0.2"
#: families whose values differ between two runs by nature (the time of a sample, the build)
TIMED = {"zfsmon_last_sample_timestamp_seconds"}


class Capture(PolledCollector):
    """A polled source whose "file" is a genuine capture; counts its reads."""

    def __init__(self, name: str, text: str, parse) -> None:
        super().__init__()
        self.name, self.text, self.parse_fn, self.reads = name, text, parse, 0

    def read_text(self) -> str:
        self.reads += 1
        return self.text

    def parse(self, text: str, ts: float):
        return self.parse_fn(text, ts)


def captures(fixtures) -> List[Capture]:
    topo = parse_status(top_data.ZIOCAP_STATUS.read_text())
    iostat = top_data.ZIOCAP_IOSTAT.read_text()
    return [Capture("zpool_iostat", iostat, lambda t, ts: zpool_iostat.parse_text(t, interval=1.0, topology=topo)),
            Capture("arcstats", top_data.ARC23.read_text(), arcstats.parse_linux)]


HOST = Host("Linux", "6.1-test", "fixture-host", "zfs-fuse", "0.7.0")


@pytest.fixture
def built(monkeypatch, fixtures):
    """`top`'s collectors are the captures; every set of them built is kept (the test counts them)."""
    sets: List[List[Capture]] = []

    def pick(*_a, **_k) -> Tuple[List[Capture], List[str]]:
        sets.append(captures(fixtures))
        return sets[-1], []

    monkeypatch.setattr(top, "probe", lambda: HOST)
    monkeypatch.setattr(top, "pick_collectors", pick)
    monkeypatch.setattr(exporter_cmd, "probe", lambda: HOST)
    monkeypatch.setattr(exporter_cmd, "pick_collectors", pick)
    return sets


def top_args(*argv: str):
    return build_parser().parse_args(["top", "-i", INTERVAL, *argv])


def _screen(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


def _last_report() -> List[Sample]:
    topo = parse_status(top_data.ZIOCAP_STATUS.read_text())
    recs = zpool_iostat.parse_text(top_data.ZIOCAP_IOSTAT.read_text(), interval=1.0, topology=topo)
    return [r for r in recs if isinstance(r, Sample)][-9:]


def port_of(live: top.Dashboard) -> int:
    assert live.metrics_url is not None
    port = urlsplit(live.metrics_url).port
    assert port is not None
    return port


def run_top(args, during) -> Tuple[top.Dashboard, object]:
    """The dashboard of ``args`` under the pilot at 160x50; ``during(live, pilot)`` (a coroutine) runs once the
    screen shows the captures' pool; its result is returned with the closed dashboard."""
    out: List[object] = []

    async def go() -> None:
        with top.dashboard(args) as live:
            live.session.start(on_end=live.app.exit)
            async with live.app.run_test(size=(160, 50)) as pilot:
                await wait_until_async(lambda: "loop5" in _screen(live.app), 60, "the captures on the screen",
                                       pilot.pause)
                out.append(await during(live, pilot))
            out.insert(0, live)

    asyncio.run(go())
    return out[0], out[1]  # type: ignore[return-value]


def test_top_listen_serves_the_dashboards_values_from_its_one_set_of_collectors(built):
    scrapes: List[Scrape] = []

    async def during(live: top.Dashboard, pilot):
        port = port_of(live)
        sources = live.session.collectors
        # three ticks at least: the arcstats counters have a baseline and the vdevs their newest report
        await wait_until_async(lambda: min(c.reads for c in sources) >= 3, 60, "three readings", pilot.pause)
        for _ in range(5):  # scrapes in a row: each is answered from what the sampler last read, none reads again
            scrapes.append(await asyncio.to_thread(scrape, port))
        return _screen(live.app)

    live, screen = run_top(top_args("--no-record", "--listen", "127.0.0.1:0"), during)
    assert live.metrics_url is not None and live.metrics_url.startswith("http://127.0.0.1:")
    assert f"metrics 127.0.0.1:{port_of(live)}" in screen.splitlines()[0]

    # one set of collectors was built, and each was read once per interval: never by a scrape
    assert len(built) == 1 and built[0] == live.session.collectors
    ticks = live.session.sampler.ticks
    assert ticks >= 3 and all(c.reads == ticks for c in built[0]), ([c.reads for c in built[0]], ticks)

    # the values served are the dashboard's (its state, which the panels draw)
    state = live.app.state
    fams = scrapes[-1]
    for s in _last_report():
        if s.entity.kind != Kind.VDEV:
            continue
        shown, _boot = state.values(s.entity.key)
        for metric, fam in (("write_ops", "zfsmon_vdev_write_ops_per_second"),
                            ("write_bw", "zfsmon_vdev_write_bytes_per_second"), ("alloc", "zfsmon_vdev_alloc_bytes")):
            assert value(fams, fam, pool="ziocap", vdev=s.entity.name, role=s.entity.role.value) == \
                shown[metric] == s.metrics[metric], (s.entity.name, metric)
    arc, _boot = state.values(Entity(Kind.ARC, "arc").key)
    assert value(fams, "zfsmon_arc_hits") == arc["hits"] > 0
    assert value(fams, "zfsmon_arc_size_bytes") == arc["size"]
    # staleness as the exporter says it: each source's newest sample time
    assert value(fams, "zfsmon_last_sample_timestamp_seconds", source="arcstats") > 0


def _shape(fams: Scrape) -> Dict[str, Tuple[str, Set[Tuple[str, ...]]]]:
    """family -> (type, the label names of its series)."""
    return {name: (typ, {tuple(sorted(lab)) for _n, lab, _v in series}) for name, (typ, _h, series) in fams.items()}


def _values(fams: Scrape) -> Dict[Tuple[str, str, Tuple[Tuple[str, str], ...]], float]:
    return {(name, n, tuple(sorted(lab.items()))): v for name, (_t, _h, series) in fams.items() if name not in TIMED
            for n, lab, v in series}


def exporter_scrape(monkeypatch, argv: List[str], ready) -> Scrape:
    """Run the real `zfsmon exporter ARGV` (its collectors as the test's monkeypatching built them) on a free
    loopback port, scrape it once ``ready()``, stop it; the scrape."""
    sessions: List[Session] = []

    class Kept(Session):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            sessions.append(self)

    monkeypatch.setattr(exporter_cmd, "Session", Kept)
    port = free_loopback_port()
    rc: List[int] = []
    t = threading.Thread(target=lambda: rc.append(main(["exporter", "--listen", f"127.0.0.1:{port}", "--interval",
                                                        INTERVAL, *argv])))
    t.start()
    try:
        wait_until(ready, 60, "the exporter's readings")
        fams = scrape(port)
    finally:
        wait_until(lambda: sessions, 60, "the exporter's session")
        sessions[0].stop()
        t.join(60)
    assert rc == [0]
    return fams


def test_top_listen_and_zfsmon_exporter_serve_the_same_families_on_the_same_captures(built, monkeypatch):
    async def during(live: top.Dashboard, pilot):
        sources = live.session.collectors
        await wait_until_async(lambda: min(c.reads for c in sources) >= 3, 60, "three readings", pilot.pause)
        return await asyncio.to_thread(scrape, port_of(live))

    _live, from_top = run_top(top_args("--no-record", "--listen", "127.0.0.1:0"), during)

    from_exporter = exporter_scrape(monkeypatch, [], lambda: len(built) == 2 and min(c.reads for c in built[1]) >= 3)
    assert _shape(from_top) == _shape(from_exporter)
    assert _values(from_top) == _values(from_exporter)
    assert "zfsmon_vdev_write_ops_per_second" in from_top and "zfsmon_arc_hits" in from_top


def test_top_listen_a_bad_address_or_a_taken_port_is_one_line_and_nothing_keeps_running(built):
    with pytest.raises(UserError, match="expected ADDRESS:PORT"):
        with top.dashboard(top_args("--no-record", "--listen", "9134")):
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        with pytest.raises(UserError, match="cannot listen on 127.0.0.1"):
            with top.dashboard(top_args("--no-record", "--listen", f"127.0.0.1:{s.getsockname()[1]}")):
                pass


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_header_keeps_the_metrics_address_and_the_recording_on_their_two_lines(width):
    """At 80 columns the platform's text gives way: the address stays whole and the recording keeps its line."""
    info = panels.HeaderInfo("db1", "Linux 6.18.44-fc-v769", "zfs-fuse 0.7.0-25+b1 (pool v23)",
                             "/var/lib/zfsmon/zfsmon-db1-20260101T000000Z.zfsmon", "live", 1.0, "127.0.0.1:39999")
    state = TopState(300)
    lines = panels.header(state, info, panels.ViewOptions(interval=1.0, now=2.0), width, False).plain.split("\n")
    assert len(lines) == 2 and all(len(line) <= width for line in lines), lines
    assert lines[0].endswith("metrics 127.0.0.1:39999") and lines[1].endswith("T000000Z.zfsmon")
