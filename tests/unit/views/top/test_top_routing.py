"""A source's errors show on the panel of the entities its SOURCE record feeds, with their age, routed by its one
name (the record's, which its samples and events carry), never by a substring of it."""

from __future__ import annotations

import asyncio
import json
from typing import List

import pytest

from tests.conftest import wait_until_async
from zfsmon.host import Host
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources import registry
from zfsmon.sources.fio.json_output import FioJsonStreamParser
from zfsmon.sources.pgbench.text import PgbenchTextParser
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.lines import Lines
from zfsmon.views.top.state import TopState
from zfsmon.workload.attach import AttachCollector

T0 = 1_795_000_000.0
HOST = Host("Linux", "6.1", "lab", "openzfs-kmod", "2.2.2", zfs_userland="zfs-2.2.2-1")
#: the panels each source's errors belong on (by the kinds its record feeds)
HOME = {"zpool": ("vdevs",), "latency": ("vdevs",), "status": ("vdevs",), "iostats": ("vdevs",),
        "txgs": ("vdevs",), "objset": ("vdevs", "findings"), "diskstats": ("vdevs",), "iostat": ("vdevs",),
        "arcstats": ("arc",), "zil": ("zil",), "zio_stats": ("zil",), "fsstat": ("findings",)}
#: the panels that show errors
ERROR_PANELS = ("vdevs", "arc", "zil", "workload", "findings")


def _collector_error(name: str) -> Event:
    """The error a source's real collector emits (its ``_error``: the event the sampler records)."""
    rec = registry.named(name)
    assert rec is not None and rec.collector is not None
    col = rec.collector(HOST, 1.0, ("tank",))
    col.clock = lambda: T0
    return col._error(f"{col.name}: cannot read: Permission denied")


def _fio_error() -> Event:
    """fio's JSON stream with a document that does not decode, as the fio parser reports it."""
    p = FioJsonStreamParser()
    out = [r for line in ("{", '  "jobs": [', "}") for r in p.feed(line, T0)]
    return next(r for r in out if isinstance(r, Event) and r.kind == EventKind.ERROR)


def _pgbench_error() -> Event:
    p = PgbenchTextParser()
    out = p.feed("pgbench: error: connection to server on socket failed: No such file or directory", T0)
    return next(r for r in out if isinstance(r, Event) and r.kind == EventKind.ERROR)


def _fresh_samples() -> List[Record]:
    """A tree, the ARC and a workload reporting after the error (from sources other than the failing one only)."""
    pool = Entity(Kind.POOL, "tank", "tank")
    return [Sample(T0 + 2, pool, {"read_ops": 5.0, "write_ops": 1.0}, interval=1.0, source="zpool"),
            Sample(T0 + 2, Entity(Kind.ARC, "arc"), {"size": 1e9, "hits": 10.0, "misses": 1.0}, source="arcstats")]


def _panel_text(app: TopApp, panel_id: str) -> str:
    w = app.query_one(f"#{panels.panel(panel_id).widget_id}")
    return w.plain if isinstance(w, Lines) else w.render().plain


def _shows_on(ev: Event, panel_id: str, samples: List[Record]) -> str:
    """Run the dashboard on a state holding ``ev`` (and ``samples``) 7 s after it; the panel's text once it says
    the error with its age."""
    st = TopState(300)
    st.feed([ev, *samples])
    info = panels.HeaderInfo("lab", "Linux", "captures", "", "live")
    app = TopApp(st, info, 1.0, feed=LiveFeed(), clock=lambda: T0 + 7)

    async def go() -> str:
        async with app.run_test(size=(160, 50)) as pilot:
            want = f"error 7s ago: {ev.text}"[:40]
            return await wait_until_async(lambda: (_panel_text(app, panel_id) if want in _panel_text(app, panel_id)
                                                   else ""), 30.0, f"{ev.source}'s error on {panel_id}", pilot.pause)
    return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(HOME))
def test_a_failing_collectors_error_shows_on_its_panel_with_its_age(name):
    """Every collector's error (as its ``_error`` makes it) on the panel of what it feeds, though other sources
    of that panel go on reporting after it (a failing zpool status under a fresh zpool iostat)."""
    ev = _collector_error(name)
    samples = [s for s in _fresh_samples() if s.source != registry.named(name).name]
    text = _shows_on(ev, HOME[name][0], samples)
    assert f"error 7s ago: {ev.source}: cannot read" in text
    st = TopState(300)
    st.feed([ev])
    on = [p for p in ERROR_PANELS if any(ev.text in x.plain for x in panels.status_lines(st, p, panels.ViewOptions()))]
    assert on == list(HOME[name])


@pytest.mark.parametrize("make,panel_id", [(_fio_error, "workload"), (_pgbench_error, "workload")])
def test_a_workloads_error_shows_on_the_workload_panel_with_its_age(make, panel_id):
    ev = make()
    text = _shows_on(ev, panel_id, _fresh_samples())
    assert "error 7s ago: " in text and ev.text[:30] in text


def test_an_error_no_source_declares_shows_in_the_header():
    """The recorder's own failure (engine/session.py's event) belongs to no source: the header says it."""
    ev = Event(T0, EventKind.ERROR, "recording stopped: [Errno 28] No space left on device", source="record")
    text = _shows_on(ev, "header", _fresh_samples())
    assert "error 7s ago: recording stopped: [Errno 28]" in text


def test_an_error_stands_until_its_own_source_reports_again():
    st = TopState(300)
    ev = _collector_error("status")
    st.feed([ev, *_fresh_samples()])  # zpool iostat goes on: status is still failing
    assert [e.source for e in st.failing(panels.panel("vdevs").sources)] == ["status"]
    health = Sample(T0 + 3, Entity(Kind.POOL, "tank", "tank"), {"state": 0.0, "online": 1.0}, source="status")
    st.feed([health])
    assert st.failing(panels.panel("vdevs").sources) == []


def test_every_source_records_kinds_are_on_some_panel():
    shown = {k for p in panels.PANELS for k in p.kinds}
    for s in registry.SOURCES:
        assert s.feeds, f"source {s.name} does not say which entity kinds it feeds"
        assert set(s.feeds) <= shown, f"source {s.name}: no panel shows {set(s.feeds) - shown}"
        assert any(s.name in p.sources for p in panels.PANELS if p.place != "timeline")


def test_one_name_per_source_in_its_records(tmp_path):
    """zpool iostat's and its -w histograms' samples carry their record's name, as their collectors' errors do."""
    from zfsmon.sources.zpool import iostat as zpool_iostat
    from zfsmon.sources.zpool import latency as zpool_latency

    for rec_name, mod_source in (("zpool", zpool_iostat.RECORD_SOURCE), ("latency", zpool_latency.NAME)):
        assert mod_source == rec_name
        assert _collector_error(rec_name).source == rec_name


def test_following_fio_is_fio_not_pgbench(tmp_path):
    """AttachCollector following fio's JSON output names itself and its notes ``fio``."""
    path = tmp_path / "fio.json"
    path.write_text(json.dumps({"fio version": "fio-3.33", "jobs": []}, indent=1) + "\n")
    col = AttachCollector([str(path)], clock=lambda: T0)
    col.start()
    try:
        assert col.name == "fio"
        path.write_text("")  # truncated: the follower's note, as the source it follows
        notes = [r for _ in range(3) for r in col.poll() if isinstance(r, Event)]
        assert notes and {e.source for e in notes} == {"fio"}, notes
    finally:
        col.stop()
