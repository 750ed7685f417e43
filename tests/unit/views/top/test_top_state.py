"""The dashboard's model on records parsed from genuine captures: roles, values, ARC ratios, workload, pause/window."""

from __future__ import annotations

import dataclasses
import gzip
import os
import shutil

import pytest

from tests.unit import top_data, vdevprops_data
from zfsmon.analysis import goose
from zfsmon.model import Entity, Event, EventKind, Kind, Role, Sample
from zfsmon.sources.devices import diskstats
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool.iostat import read_capture
from zfsmon.store import Recording
from zfsmon.views import thresholds
from zfsmon.views.top import panels, timeline
from zfsmon.views.top.state import TopState, source_name


@pytest.fixture
def state(fixtures) -> TopState:
    st = TopState(window_s=300)
    st.feed(top_data.records())
    return st


def _at(ts: float) -> TopState:
    st = TopState(window_s=300)
    st.feed([r for r in top_data.records() if r.ts <= ts])
    return st


def test_pools_and_role_groups(state):
    assert state.pools() == ["testpool", "ziocap"]
    rows = state.tree("ziocap")
    headings = [r.name for r in rows if r.kind == "role"]
    assert headings == ["data", "logs", "cache"]  # zpool status order, from `zpool status ziocap`
    by_name = {r.name: r for r in rows}
    assert by_name["loop5"].role == Role.LOG and by_name["loop5"].kind == "vdev"
    assert by_name["loop6"].role == Role.CACHE
    assert [r.name for r in rows if r.kind == "leaf"] == ["loop1", "loop2", "loop3", "loop4"]
    # leaves sit under their mirror, in that order
    names = [r.name for r in rows]
    assert names.index("mirror-0") < names.index("loop1") < names.index("mirror-1") < names.index("loop3")


def test_interval_values_come_from_the_capture(fixtures):
    st = _at(1795332272.0)  # the report written while 20 MiB were fsync'ed
    loop1 = next(r for r in st.tree("ziocap") if r.name == "loop1")
    assert loop1.metrics["write_ops"] == 384 and loop1.metrics["write_bw"] == pytest.approx(11.4 * 1024 ** 2)
    assert not loop1.since_boot
    first = _at(1795332271.0)
    assert next(r for r in first.tree("ziocap") if r.name == "loop1").since_boot  # only the since-import report


def test_sort_collapse_filter(fixtures):
    st = _at(1795332272.0)
    data = [r.name for r in st.tree("ziocap", sort="ops") if r.kind == "leaf"]
    assert data == ["loop1", "loop2", "loop3", "loop4"]  # 384, 374 | 322, 321 write ops: busiest first per vdev
    assert not [r for r in st.tree("ziocap", collapsed=True) if r.kind == "leaf"]
    only = [r.name for r in st.tree("ziocap", filter_text="loop3") if r.kind in ("vdev", "leaf")]
    assert only == ["mirror-1", "loop3"]


def test_totals_sum_rates_over_the_window(fixtures):
    st = _at(1795332274.0)
    tot = st.totals("leaf:ziocap/loop1")
    # interval reports 2..4 of the capture: 384 + 0 + 0 write ops in 1-second intervals
    assert tot["write_ops"] == pytest.approx(384.0)


def test_arc_since_boot_ratio_is_the_files(state, fixtures):
    raw = {s.entity.kind: s.metrics for s in arcstats.parse_linux(top_data.ARC23.read_text(), 0.0)}
    a = state.arc()
    arc = raw[Kind.ARC]
    assert a["since_boot"] == 1.0
    # OpenZFS 2.3 counts iohits apart: an access is hits + iohits + misses (zfsmon.analysis.arc, as arcstat does)
    assert a["hit_pct"] == pytest.approx(100 * arc["hits"] / (arc["hits"] + arc["iohits"] + arc["misses"]))
    assert a["size"] == arc["size"] and a["c_max"] == arc["c_max"]
    assert a["l2_size"] == raw[Kind.L2ARC].get("asize", raw[Kind.L2ARC].get("size"))


def test_workload_and_run_boundaries(state):
    w = state.workload()
    assert w["tps"] == 310.5 and w["latency_avg_ms"] == 25.832  # the last -P 6 progress line of the capture
    assert w["run_tps"] == pytest.approx(578.90841)
    assert w["runs"] == 1.0


def test_slog_panel_reads_the_log_vdev(fixtures):
    z = _at(1795332271.0).zil()  # since-import report: loop5 wrote 1 op/s, 109K/s
    assert z["slog_write_ops"] == 1.0 and z["slog_write_bw"] == pytest.approx(109 * 1024)


def test_latency_from_zpool_iostat_l(state):
    rows = {r.name: r for r in state.tree("testpool")}
    # last report of the -vl capture: sda1 total_wait read 25ms write 7ms ("25ms", "7ms" columns)
    assert rows["sda1"].metrics["total_wait_read"] == 25e6
    assert thresholds.level("latency", rows["sda1"].metrics["total_wait_read"]) == "warn"


def test_window_bounds_samples(state):
    state.window_s = 60
    lo, hi = state.window()
    assert hi == top_data.T_END and all(lo <= s.ts <= hi for s in state.window_samples())


def test_a_source_goes_by_its_records_name():
    """Errors route by the source's one name: the names other recordings carry for it are that name."""
    assert source_name("zpool_iostat") == source_name("zpool iostat") == source_name("zpool") == "zpool"
    assert source_name("zpool iostat -w") == source_name("latency") == "latency"
    assert source_name("arcstats") == "arcstats" and source_name("record") == "record"


def test_threshold_table_is_documented():
    from tests.conftest import REPO

    doc = (REPO / "docs" / "dashboard.md").read_text()
    assert thresholds.render_markdown() in doc


def test_findings_panel_shows_a_correlation_lag_in_whole_seconds():
    """The lag is a count of measured steps (~1.001 s), so it shows as -3s, not -3.003s."""
    from zfsmon.analysis.findings import Finding, Report

    rep = Report(0.0, 60.0, 1.001, {}, [Finding("correlation", "", {"spearman": 0.87, "best_lag_s": -3.003,
                                                                   "with": "l2_hit_pct"}),
                                        Finding("correlation", "", {"spearman": 0.5, "best_lag_s": 120.12,
                                                                   "with": "arc_hit_pct"})])
    text = panels.findings(rep, _at(0.0), panels.ViewOptions(), 100, False).plain
    assert "r +0.87 lag -3s" in text and "r +0.50 lag +2m" in text, text


def test_findings_panel_shows_the_warm_up_correlations_on_one_line():
    from zfsmon.analysis.findings import DATA_READS, L2_HIT, Finding, Report

    rep = Report(0.0, 6000.0, 1.0, {}, [Finding("warmup_correlation", "During the warm-up ...", {
        "phase_s": 363.0, "cells": 363, "with": {L2_HIT: {"spearman": 0.85}, DATA_READS: {"spearman": -0.86}}})])
    text = panels.findings(rep, _at(0.0), panels.ViewOptions(), 100, False).plain
    assert "warm-up: TPS~data-disk reads/s per disk -0.86, L2ARC hit % +0.85" in text, text


def test_a_removed_device_leaves_the_tree_and_its_last_figures_go_with_it():
    from zfsmon.model import Entity, Event, EventKind, Kind, Role, Sample
    from zfsmon.views.top.state import TopState

    st = TopState()
    pool = Entity(Kind.POOL, "tank", "tank")
    cache = Entity(Kind.VDEV, "sdc", "tank", Role.CACHE, "tank")
    st.feed([Sample(1.0, pool, {"read_ops": 1.0}, 1.0), Sample(1.0, cache, {"read_ops": 7.0}, 1.0)])
    assert "sdc" in [r.name for r in st.tree("tank")]
    st.feed([Event(2.0, EventKind.TOPOLOGY, "pool tank: removed sdc", data={"pool": "tank", "removed": ["sdc"],
                                                                           "added": [], "changed": []})])
    assert "sdc" not in [r.name for r in st.tree("tank")]
    st.feed([Sample(3.0, cache, {"read_ops": 2.0}, 1.0)])  # added back: shown again, with new figures
    assert [r.metrics for r in st.tree("tank") if r.name == "sdc"] == [{"read_ops": 2.0}]


def test_the_recorders_own_removal_event_takes_the_device_out_of_the_tree(tmp_path):
    """The recorder notes a device gone from the pool's members as ``{"removed": True}`` on the device's entity
    (not the zpool iostat source's list of names): replay fed it and crashed (TypeError) until both shapes were
    read. store_data's cache device sdf is gone at reading 5 and back at 8."""
    from tests.unit.store_data import records
    from zfsmon.store import Recorder, Recording

    path = tmp_path / "r.zfsmon"
    with Recorder(str(path), {"interval": "1"}) as rec:
        for batch in records(10):
            rec.write(batch)
    with Recording.open(str(path)) as r:
        recs = sorted([*r.samples(), *r.events()], key=lambda x: x.ts)
    gone = [e for e in recs if isinstance(e, Event) and e.kind == EventKind.TOPOLOGY and e.data.get("removed")]
    assert [(e.data["removed"], e.entity.endswith("sdf")) for e in gone] == [(True, True)], gone
    st = TopState()
    st.feed([x for x in recs if x.ts <= gone[0].ts])
    assert "sdf" not in [row.name for row in st.tree("tank")]
    st.feed([x for x in recs if x.ts > gone[0].ts])  # back at reading 8
    assert "sdf" in [row.name for row in st.tree("tank")]


def test_health_shows_beside_the_io_and_never_replaces_it():
    """The status source reports the same pool, vdevs and leaves as zpool iostat, every few seconds: its sample
    must not become the row's latest (I/O columns blank, goose eggs judged on zero ops), and a leaf offline must
    show on its row. Real guest captures: `zpool iostat -vp` and `zpool status` with virtio-data1 offline
    (tests/data/openzfs-2.3, run2/)."""
    g23 = top_data.TEST_DATA / "openzfs-2.3"
    io = [r for r in read_capture((g23 / "zpool-iostat-vp.txt").read_text(), "vp", 2.0, ParseOptions())
          if not getattr(r, "since_boot", False)]
    last = max(r.ts for r in io)
    io = [r for r in io if r.ts == last]
    health = zpool_health.samples(zpool_health.parse_any((g23 / "run2" / "zpool-status-degraded.txt").read_text(),
                                                         "status"), last + 1.0)
    st = TopState()
    st.feed(io)
    before = {r.name: dict(r.metrics) for r in st.tree("zguest")}
    st.feed(health)
    rows = {r.name: r for r in st.tree("zguest")}
    assert {n: dict(r.metrics) for n, r in rows.items()} == before  # the I/O figures stay
    assert (rows["virtio-data1"].state, rows["mirror-0"].state, rows["zguest"].state) == (
        "OFFLINE", "DEGRADED", "DEGRADED")
    assert rows["virtio-data0"].state == "ONLINE"
    text = panels.tree(st, panels.ViewOptions(pool="zguest"), 140).plain
    assert "virtio-data1 OFFLINE" in text and "mirror-0 DEGRADED" in text and "virtio-data0 ONLINE" not in text


def test_slow_ios_and_a_sit_out_follow_the_name_in_words():
    """A leaf with slow I/Os (status source) or sitting out reads (vdevprops) says so after its name, in words;
    the two sources' samples neither move a vdev in the tree (same entities as zpool iostat's) nor touch its I/O
    figures, and the vdev properties, read once a minute, stay beside the rows while newer I/O comes. The
    OpenZFS 2.4 guest's slow-leaf captures (tests/unit/vdevprops_data.py): vdev.9 delayed by zinject, its reads
    at 3 s, 49 slow I/Os, sitting out; four other leaves with TCG's few slow I/Os. (Error counts: the jc
    capture below.)"""
    t0 = 1795332000.0
    recs = vdevprops_data.records(t0)
    io = [r for r in recs if r.source not in ("status", "vdevprops")]
    st = TopState()
    st.feed(io)
    pool = vdevprops_data.POOL
    entities, before = dict(st.entities), {r.name: dict(r.metrics) for r in st.tree(pool)}
    st.feed([r for r in recs if r.source in ("status", "vdevprops")])
    assert st.entities == entities
    rows = {r.name: r for r in st.tree(pool)}
    assert {n: dict(r.metrics) for n, r in rows.items()} == before
    bad, good = rows[vdevprops_data.BAD], rows[vdevprops_data.GOOD]
    assert (bad.errors, bad.slow_ios, bad.sit_out) == ((0.0, 0.0, 0.0), 49.0, True)
    assert (good.slow_ios, good.sit_out) == (0.0, False)
    assert rows[pool].slow_ios is None  # pools: no SLOW
    wide = panels.tree(st, panels.ViewOptions(pool=pool), 140).plain.splitlines()
    assert any(ln.startswith("    /var/tmp/zslow/vdev.9 49 slow SIT-OUT ") for ln in wide)
    assert any(ln.startswith("    /var/tmp/zslow/vdev.6 3 slow ") for ln in wide)
    marked = [ln.split()[0] for ln in wide if " slow" in ln or "SIT-OUT" in ln]
    assert marked == [f"/var/tmp/zslow/vdev.{i}" for i in (2, 3, 6, 8, 9)]
    assert not any(" err " in ln for ln in wide)  # no error counted: no err mark
    narrow = panels.tree(st, panels.ViewOptions(pool=pool), 80).plain.splitlines()
    [row] = [ln for ln in narrow if "SIT-OUT" in ln]
    assert row.startswith("    /var/tmp/zs… 49 slow SIT-OUT ")  # the name is cut, not what is wrong with it
    assert {len(ln) for ln in narrow[1:]} == {80}  # the columns stay where the header has them
    later = [dataclasses.replace(s, ts=s.ts + 400.0) for s in io if isinstance(s, Sample) and not s.since_boot]
    st.feed(later)  # 400 s on: the window holds none of the status and vdevprops samples
    text = panels.tree(st, panels.ViewOptions(pool=pool), 140).plain
    assert "/var/tmp/zslow/vdev.9 49 slow SIT-OUT" in text
    blind = panels.tree(st, panels.ViewOptions(pool=pool, theme="colorblind"), 140)
    warn = thresholds.THEMES["colorblind"]["warn"]
    assert {blind.plain[sp.start:sp.end] for sp in blind.spans if str(sp.style) == warn} >= {" 49 slow", " SIT-OUT"}


def test_a_real_capture_with_errors_shows_them_on_the_leaf(fixtures):
    """jc's Solaris-era `zpool status -v` fixture: c1t1d0 UNAVAIL with 4 read and 1 write error; the pool's row
    (0 0 0) shows its state only."""
    text = (fixtures / "peers" / "jc" / "zpool-status-v3.out").read_text()
    st = TopState()
    st.feed(zpool_health.samples(zpool_health.parse_any(text, "v3"), 100.0))
    lines = panels.tree(st, panels.ViewOptions(pool="tank"), 80).plain.splitlines()
    assert any(ln.startswith("  c1t1d0 UNAVAIL err 4/1/0 ") for ln in lines)
    assert any(ln.startswith("tank UNAVAIL ") for ln in lines) and sum(" err " in ln for ln in lines) == 1


def test_l2arc_panel_says_no_cache_device_once_the_last_one_is_removed():
    """Fault matrix (issue 16): a cache device removed -> the L2ARC figures go to "no data", not stale values.
    The L2ARC counters are global and outlive the device, so the panel follows the tree: real guest captures
    (`zpool iostat -vp` with virtio-cache0, two arcstats dumps), then zpool iostat's TOPOLOGY event."""
    g23 = top_data.TEST_DATA / "openzfs-2.3"
    io = [r for r in read_capture((g23 / "zpool-iostat-vp.txt").read_text(), "vp", 2.0, ParseOptions())
          if not getattr(r, "since_boot", False)]
    t0 = max(r.ts for r in io)
    arcs = [r for i, name in enumerate(("arcstats.before", "arcstats.after"))  # two readings a minute apart
            for r in arcstats.parse_linux((g23 / name).read_text(), t0 + 1 + 60 * i)]
    st = TopState()
    st.feed(io)
    st.feed(arcs)
    assert st.has_cache_device() is True
    assert "L2 hit" in panels.arc(st, panels.ViewOptions(pool="zguest"), 60, False).plain
    st.feed([Event(t0 + 200, EventKind.TOPOLOGY, "zguest: removed virtio-cache0", source="zpool iostat",
                   data={"pool": "zguest", "added": [], "removed": ["virtio-cache0"], "changed": []})])
    assert st.has_cache_device() is False
    text = panels.arc(st, panels.ViewOptions(pool="zguest"), 60, False).plain
    assert "L2ARC: no cache device" in text and "L2 hit" not in text
    assert TopState().has_cache_device() is None  # no tree known (an arcstats-only replay): figures as before


# ------------------------------------------------------------------------------------------------ timeline
LAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "fio", "lab-acceptance")


@pytest.fixture
def lab_recording(tmp_path) -> str:
    path = str(tmp_path / "l2arc.zfsmon")  # the L2ARC-served fio sweep: L2 hits, size, data reads, fio IOPS
    with gzip.open(os.path.join(LAB, "l2arc.zfsmon.gz")) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def test_timeline_live_and_replay_agree(lab_recording):
    """The live path (records as they arrive) and the replay path (downsampled read of the file) give one timeline."""
    read = timeline.read_timeline(lab_recording)
    with Recording.open(lab_recording) as r:
        records = sorted([*r.samples(), *r.events()], key=lambda x: x.ts)
    live = timeline.Timeline(read.every)
    live.feed(records)
    assert read.every == 1.0 and read.span() == live.span()
    for name in ("iops", "l2_hit", "l2_size", "reads"):
        a, b = read.series(name), live.series(name)
        assert len(a) > 20 and [i for i, _ in a] == [i for i, _ in b], name
        assert all(abs(x - y) <= 1e-9 * max(1.0, abs(x)) for (_, x), (_, y) in zip(a, b)), name
    # fio IOPS: the I/Os fio counted, over the bucket's seconds
    ios = sum(s.metrics.get("ios", 0.0) for s in records if isinstance(s, Sample) and s.entity.name.startswith("fio:"))
    assert sum(v for _, v in read.series("iops")) * read.every == pytest.approx(ios)


def test_timeline_coarsens_by_merging_neighbours():
    tl = timeline.Timeline(every=1.0, max_buckets=8)
    for t in range(100):
        tl.add(1000.0 + t, "tps", float(t))
    # 100 s in at most 8 buckets: 16 s each, aligned to multiples of 16 s in epoch time, sums kept exactly
    assert tl.every == 16.0 and len(tl.buckets) <= 8
    pts = dict(tl.series("tps"))
    assert sorted(pts) == list(range(62, 69))  # 992 .. 1088 s / 16
    assert pts[63] == pytest.approx(sum(range(8, 24)) / 16)  # 1008..1023 s: values 8..23
    assert [i for i, _ in tl.series("tps", closed_only=True)] == list(range(62, 68))  # the newest still fills
    assert timeline.every_for(24 * 3600.0) == 512.0  # a day in at most 256 buckets (169)


def test_timeline_reads_data_vdevs_where_the_pool_line_holds_special_reads():
    pool = Entity(Kind.POOL, "tank", "tank")
    data = Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank")
    special = Entity(Kind.VDEV, "mirror-1", "tank", Role.SPECIAL, "tank")
    plain = Entity(Kind.POOL, "plain", "plain")
    tl = timeline.Timeline()
    for t in range(3):
        tl.feed([Sample(100.0 + t, pool, {"read_ops": 50.0}), Sample(100.0 + t, data, {"read_ops": 20.0}),
                 Sample(100.0 + t, special, {"read_ops": 30.0}), Sample(100.0 + t, plain, {"read_ops": 7.0})])
    # tank: its data vdev's 20/s, not the pool line's 50 (30 of them metadata on the special vdev); plain: its line
    assert [v for _, v in tl.series("reads")] == [27.0, 27.0, 27.0]


def test_an_error_over_old_figures_says_how_old_they_are(state):
    """The ZFS daemon gone (issue 16's daemon row): the zpool iostat child ends and the tree keeps its last
    figures under the error; once they are older than the stale threshold, the line says their age first (an
    error line is cut at the panel's width: the age must not be what is cut)."""
    err = Event(top_data.T_END + 0.5, EventKind.ERROR,
                "zpool_iostat: `zpool iostat -T u -v ziocap 1` ended: status 1: connect: Connection refused",
                source="zpool_iostat")
    state.feed([err])
    fresh = panels.tree(state, panels.ViewOptions(pool="ziocap", now=top_data.T_END + 1.0), 130).plain.splitlines()
    assert fresh[1] == f"error 0s ago: {err.text}"[:130]  # the error's age, then its text
    # the vdevs' longest interval is testpool's 30 s: stale after 3.5 of them
    old = panels.tree(state, panels.ViewOptions(pool="ziocap", now=top_data.T_END + 120.0), 130).plain.splitlines()
    assert old[1].startswith("stale: last data 2m ago; error 119s ago: zpool_iostat: `zpool iostat")
    assert any(line.split()[:1] == ["ziocap"] for line in old)  # the figures are still there, now with their age
    later = Sample(top_data.T_END + 121.0, Entity(Kind.POOL, "ziocap", "ziocap"), {"write_ops": 1.0}, 1.0)
    state.feed([later])  # the source reports again: no status line
    back = panels.tree(state, panels.ViewOptions(pool="ziocap", now=top_data.T_END + 121.5), 130).plain.splitlines()
    assert back[1].split()[:2] == ["vdev", "r/s"]


def test_a_leaf_whose_figures_are_stale_is_not_judged_a_goose_egg_until_fresh_ones_come(fixtures):
    """The ZFS daemon gone (issue 16's daemon row): the leaves keep their last interval while the block devices
    go on reporting 0 ops; comparing the two made every busy leaf a goose egg. A leaf is judged only while its
    figures are fresh, by the rule the status line uses to call them stale, and again once fresh ones come."""
    # the lab host's /proc/diskstats (its loop devices), the first of its three readings (each after a stamp line)
    disk_text = (top_data.TEST_DATA / "linux-host" / "diskstats-loop.txt").read_text().split("\n1795461850\n")[0]
    disk_text = disk_text.split("\n", 1)[1]

    def still_disks(ts: float):  # the same counters each time: the devices count nothing (zfs-fuse's page cache)
        return diskstats.parse_diskstats(disk_text, ts)

    busy = top_data.T_END - 2.0  # ziocap's busy interval: 322-384 writes/s on loop1..loop4, loop5/loop6 idle
    st = TopState(window_s=300)
    st.feed([r for r in top_data.records() if r.ts <= busy] + still_disks(busy - 1.0) + still_disks(busy))
    judged = {leaf: (v.verdict, v.device, v.zfs_ops, v.device_ops) for (pool, leaf), v in st.verdicts.items()
              if pool == "ziocap"}
    assert judged == {"loop1": (goose.GOOSE_EGG, "loop1", 384.0, 0.0), "loop2": (goose.GOOSE_EGG, "loop2", 374.0, 0.0),
                      "loop3": (goose.GOOSE_EGG, "loop3", 322.0, 0.0), "loop4": (goose.GOOSE_EGG, "loop4", 321.0, 0.0),
                      "loop5": (goose.IDLE, "loop5", 0.0, 0.0), "loop6": (goose.IDLE, "loop6", 0.0, 0.0)}

    def marks(state: TopState):
        rows = {r.name: r.verdict for r in state.tree("ziocap") if r.kind in ("vdev", "leaf")}
        lines = panels.tree(state, panels.ViewOptions(pool="ziocap"), 130).plain.splitlines()
        return sorted(n for n, v in rows.items() if v == goose.GOOSE_EGG), [ln.split()[0] for ln in lines if "GOOSE" in ln]

    assert marks(st) == (["loop1", "loop2", "loop3", "loop4"], ["loop1", "loop2", "loop3", "loop4", "GOOSE:"])
    # the daemon killed: no zpool iostat figures, the devices sampled every 5 s as before; the vdevs' longest
    # interval is testpool's 30 s, so the figures are stale 3.5 of them (105 s) after their last report
    seen = []
    for t in range(5, 151, 5):
        st.feed(still_disks(busy + t))
        status = panels.status_line(st, "vdevs", panels.ViewOptions())
        stale = status is not None and status.plain.startswith("stale: last data")
        seen.append((t, stale, marks(st)[0], st.verdicts[("ziocap", "loop1")].verdict))
        assert [v.leaf for v in st.goose_eggs() if v.leaf.startswith("loop")] == (
            [] if stale else ["loop1", "loop2", "loop3", "loop4"])
    # judged while the figures are fresh, not once the status line calls them stale: the same moment
    assert [s[:2] for s in seen if s[0] in (100, 105)] == [(100, False), (105, True)]
    assert all(s[2:] == (["loop1", "loop2", "loop3", "loop4"], goose.GOOSE_EGG) for s in seen if s[0] < 105)
    assert all(s[2:] == ([], goose.UNKNOWN) for s in seen if s[0] >= 105)
    assert marks(st) == ([], [])
    v1 = st.verdicts[("ziocap", "loop1")]
    assert (v1.device, v1.zfs_ops, v1.why) == (
        None, 384.0, "ZFS's figures for loop1 are 150 s old (its source stopped reporting): not judged")
    assert st.verdicts[("ziocap", "loop5")].verdict == goose.UNKNOWN  # stale idle leaves are not judged either
    # the daemon back: ziocap's busy interval again (its figures, a new time), the devices still counting nothing
    back = busy + 151.0
    st.feed([dataclasses.replace(r, ts=back) for r in top_data.records()
             if r.ts == busy and isinstance(r, Sample) and r.entity.pool == "ziocap"] + still_disks(back))
    assert panels.status_line(st, "vdevs", panels.ViewOptions()) is None
    assert {leaf: v.verdict for (pool, leaf), v in st.verdicts.items() if pool == "ziocap"} == {
        leaf: verdict for leaf, (verdict, *_rest) in judged.items()}
    assert marks(st) == (["loop1", "loop2", "loop3", "loop4"], ["loop1", "loop2", "loop3", "loop4", "GOOSE:"])


def test_latency_histograms_come_beside_the_io_and_never_replace_it(tmp_path):
    """OpenZFS: ``zpool iostat -w`` (the latency source) reports the same pool, vdevs and leaves as ``zpool
    iostat``, in its own samples, and either can come last in an interval. Before, the newer sample became the
    row's values, so the vdev tree's ops and bandwidth went blank whenever the histograms came last (the 2.3
    guest's recording ends so) and the goose-egg check judged no leaf. Now a row has both sources' newest."""
    path = top_data.TEST_DATA / "openzfs-2.3" / "recording" / "rec.zfsmon.gz"
    with gzip.open(path) as f, open(tmp_path / "rec.zfsmon", "wb") as out:
        shutil.copyfileobj(f, out)
    with Recording.open(str(tmp_path / "rec.zfsmon")) as rec:
        records = [*rec.samples(), *rec.events()]
    st = TopState(window_s=60)
    st.feed(records)
    newest = {}
    for s in sorted((r for r in records if isinstance(r, Sample) and r.entity.kind == Kind.LEAF), key=lambda s: s.ts):
        newest[s.entity.name] = s.source
    assert newest["virtio-data0"] == "zpool iostat -w"  # the case: the histograms came last
    rows = {r.name: r for r in st.tree("zguest")}
    assert {n for n, r in rows.items() if r.kind == "leaf"} == {f"virtio-data{i}" for i in range(4)}
    for name in ("virtio-data0", "virtio-data1", "virtio-data2", "virtio-data3"):
        m = rows[name].metrics
        assert {"read_ops", "write_ops", "read_bw", "write_bw"} <= set(m), name  # zpool iostat's
        assert any(k.startswith("lat_disk_wait_read_") for k in m), name  # zpool iostat -w's
        assert rows[name].verdict in (goose.IDLE, goose.NOT_GOOSE_EGG, goose.GOOSE_EGG), name
        assert rows[name].device == {"virtio-data0": "vdb", "virtio-data1": "vdc", "virtio-data2": "vdd",
                                     "virtio-data3": "vde"}[name]
    for name in ("zguest", "mirror-0", "mirror-1", "virtio-log0", "virtio-cache0"):
        assert "read_ops" in rows[name].metrics, name


def test_a_source_that_stopped_before_the_window_adds_nothing_to_a_row():
    """A trace script that ended long ago must not lend its last figures to the entity's row as if current; an
    entity whose only source stopped still shows its last figures (said to be stale elsewhere)."""
    e = Entity(Kind.POOL, "p", "p")
    st = TopState(window_s=60)
    st.feed([Sample(1000.0, e, {"slow_ios": 3.0}, interval=1.0, source="trace:zfsslower"),
             Sample(1000.0, Entity(Kind.ARC, "arc"), {"size": 5.0}, source="arcstats")])
    assert st.values(e.key) == ({"slow_ios": 3.0}, False)  # its only source: last figures
    st.feed([Sample(1100.0, e, {"txgs": 7.0}, interval=1.0, source="trace:txg")])
    assert st.values(e.key) == ({"txgs": 7.0}, False)
    st.feed([Sample(1101.0, e, {"slow_ios": 1.0}, interval=1.0, source="trace:zfsslower")])
    assert st.values(e.key) == ({"txgs": 7.0, "slow_ios": 1.0}, False)
