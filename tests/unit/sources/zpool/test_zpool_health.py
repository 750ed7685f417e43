"""The ``status`` source: pool/vdev health from ``zpool status -j`` (2.3) and the text (2.1, 2.3, zfs-fuse)."""

from __future__ import annotations

import json
import stat
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, wait_until
from tests.unit.mangle import variants
from zfsmon import metrics
from zfsmon.host import Host
from zfsmon.model import Event, EventKind, Kind, ParseError, Role, Sample
from zfsmon.sources.detect import detect
from zfsmon.sources.kstat import pool as pool_kstat
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool.health import parse_any
from zfsmon.sources.zpool.status import parse_health, parse_scan
from zfsmon.sources.zpool.status_json import parse_health_json

G23 = TEST_DATA / "openzfs-2.3"
G21 = TEST_DATA / "openzfs-2.1"
FUSE = TEST_DATA / "zfsfuse"
FLAT = (G23 / "zpool-status-j-flat-int.json").read_text()
NESTED = (G23 / "zpool-status-j.json").read_text()

GUEST_TREE = {
    ("pool", "zguest", None, ""),
    ("vdev", "mirror-0", Role.DATA, "zguest"), ("leaf", "virtio-data0", Role.DATA, "mirror-0"),
    ("leaf", "virtio-data1", Role.DATA, "mirror-0"), ("vdev", "mirror-1", Role.DATA, "zguest"),
    ("leaf", "virtio-data2", Role.DATA, "mirror-1"), ("leaf", "virtio-data3", Role.DATA, "mirror-1"),
    ("vdev", "virtio-log0", Role.LOG, "zguest"), ("vdev", "virtio-cache0", Role.CACHE, "zguest"),
}


def _tree(pool):
    return {(v.entity.kind.value, v.entity.name, v.entity.role, v.entity.parent) for v in pool.vdevs}


@pytest.mark.parametrize("text,parse", [(FLAT, parse_health_json), (NESTED, parse_health_json),
                                        ((G23 / "zpool-status.txt").read_text(), parse_health),
                                        ((G23 / "zpool-status-v.txt").read_text(), parse_health),
                                        ((G21 / "zpool-status.txt").read_text(), parse_health),
                                        ((G21 / "zpool-status-v.txt").read_text(), parse_health)],
                         ids=["2.3-j-flat-int", "2.3-j", "2.3-text", "2.3-text-v", "2.1-text", "2.1-text-v"])
def test_every_guest_output_gives_the_same_tree_and_health(text, parse):
    [p] = parse(text, "capture")
    assert p.pool == "zguest" and p.state == "ONLINE" and p.data_errors == 0
    assert _tree(p) == GUEST_TREE
    assert p.vdevs[0].entity.kind == Kind.POOL
    assert all(v.state == "ONLINE" for v in p.vdevs)
    assert all(v.counts["read_errors"] == v.counts["write_errors"] == v.counts["checksum_errors"] == 0
               for v in p.vdevs)
    assert p.scan.function == "NONE" and p.scan.state == "NONE"


def test_json_has_slow_ios_on_single_device_vdevs_and_leaves_only():
    [p] = parse_health_json(FLAT)
    slow = {v.entity.name for v in p.vdevs if "slow_ios" in v.counts}
    assert slow == {"virtio-data0", "virtio-data1", "virtio-data2", "virtio-data3", "virtio-log0", "virtio-cache0"}


def test_full_paths_of_status_P_are_the_leaf_names():
    [p] = parse_health((G23 / "zpool-status-P.txt").read_text())
    leaves = sorted(v.entity.name for v in p.vdevs if v.entity.kind == Kind.LEAF)
    assert leaves == [f"/dev/disk/by-id/virtio-data{i}-part1" for i in range(4)]


def test_zfs_fuse_text_with_scrub_lines():
    [none] = parse_health((FUSE / "zpool_status_ziocap.txt").read_text())
    assert none.scan.function == "NONE" and none.scan.state == "NONE"
    assert {(k, n, r) for k, n, r, _ in _tree(none)} >= {("vdev", "loop5", Role.LOG), ("vdev", "loop6", Role.CACHE)}
    [done] = parse_health((FUSE / "zpool_status_zhealth11_scrub-completed.txt").read_text())
    assert done.scan.function == "SCRUB" and done.scan.state == "FINISHED"
    assert done.scan.values["scan_errors"] == 0
    assert done.scan.values["scan_end_time"] == time.mktime(time.strptime("Mon Nov 23 19:22:59 2026",
                                                                          "%a %b %d %H:%M:%S %Y"))


def test_scan_lines_of_each_generation():
    """The wordings of cmd/zpool/zpool_main.c (print_scan_scrub_resilver_status) across versions, as printed in
    public reports (openzfs/zfs issues 840, 7537; zfs-fuse's own above)."""
    s = parse_scan("resilver in progress since Sat May 12 19:45:12 2018\n6.18T scanned at 644M/s, 4.26T issued "
                   "at 444M/s, 6.42T total\n123G resilvered, 66.46% done, 0 days 01:24:38 to go")
    assert (s.function, s.state) == ("RESILVER", "SCANNING")
    assert s.values["scan_progress_pct"] == 66.46 and s.values["scan_examined_bytes"] == 6.18 * 2**40
    assert s.values["scan_issued_bytes"] == 4.26 * 2**40 and s.values["scan_to_examine_bytes"] == 6.42 * 2**40
    assert s.values["scan_processed_bytes"] == 123 * 2**30
    old = parse_scan("resilver in progress since Sun Jun 19 22:54:38 2016\n14.1T scanned out of 99.2T at 408M/s, "
                     "60h43m to go\n314G resilvered, 14.17% done")
    assert old.values["scan_to_examine_bytes"] == 99.2 * 2**40 and old.values["scan_progress_pct"] == 14.17
    assert "scan_issued_bytes" not in old.values


def _degraded_json():
    doc = json.loads(FLAT)
    vd = doc["pools"]["zguest"]["vdevs"]
    doc["pools"]["zguest"]["state"] = "DEGRADED"
    vd["zguest"]["state"] = vd["mirror-0"]["state"] = "DEGRADED"
    vd["virtio-data1"]["state"] = "OFFLINE"
    vd["virtio-data0"]["checksum_errors"] = 3
    vd["virtio-data0"]["slow_ios"] = 2
    return json.dumps(doc)


def test_samples_and_state_change_events():
    tracker = zpool_health.HealthTracker()
    first = tracker.to_records(parse_health_json(FLAT), 100.0)
    assert not [r for r in first if isinstance(r, Event)]
    samples = {r.entity.key: r for r in first if isinstance(r, Sample)}
    pool = samples["pool:zguest/zguest"]
    assert pool.metrics["state"] == 0 and pool.metrics["online"] == 1 and pool.metrics["scrubbing"] == 0
    assert pool.metrics["data_errors"] == 0 and pool.source == "status"
    assert samples["leaf:zguest/virtio-data0"].entity.parent == "mirror-0"
    for s in samples.values():
        for name in s.metrics:
            assert metrics.lookup(s.entity.kind, name) is not None, (s.entity.kind, name)
    later = tracker.to_records(parse_health_json(_degraded_json()), 110.0)
    texts = sorted(e.text for e in later if isinstance(e, Event))
    assert texts == ["pool zguest DEGRADED (was ONLINE)", "pool zguest: mirror-0 DEGRADED (was ONLINE)",
                     "pool zguest: virtio-data0 has 3 checksum errors (was 0)",
                     "pool zguest: virtio-data1 OFFLINE (was ONLINE)"]
    (errs,) = [e for e in later if isinstance(e, Event) and "errors" in e.data]
    assert errs.entity == "leaf:zguest/virtio-data0" and errs.data["errors"] == {"read_errors": 0, "write_errors": 0,
                                                                                 "checksum_errors": 3}
    again = tracker.to_records(parse_health_json(_degraded_json()), 115.0)  # the same counts: no new event
    assert not [e for e in again if isinstance(e, Event)]
    s2 = {r.entity.key: r for r in later if isinstance(r, Sample)}
    assert s2["leaf:zguest/virtio-data1"].metrics["state"] == 3 and s2["leaf:zguest/virtio-data1"].metrics["online"] == 0
    assert s2["leaf:zguest/virtio-data0"].metrics["checksum_errors"] == 3
    assert s2["leaf:zguest/virtio-data0"].metrics["slow_ios"] == 2
    assert metrics.is_counter(Kind.LEAF, "slow_ios") and metrics.is_counter(Kind.VDEV, "checksum_errors")
    back = tracker.to_records(parse_health_json(FLAT), 120.0)
    assert sorted(e.text for e in back if isinstance(e, Event)) == [
        "pool zguest ONLINE (was DEGRADED)",
        "pool zguest: mirror-0 ONLINE (was DEGRADED)", "pool zguest: virtio-data0 errors cleared (had 3 checksum)",
        "pool zguest: virtio-data1 ONLINE (was OFFLINE)"]


def test_scan_events():
    tracker = zpool_health.HealthTracker()
    text = (FUSE / "zpool_status_ziocap.txt").read_text()
    tracker.to_records(parse_health(text), 1.0)
    done = (FUSE / "zpool_status_zhealth11_scrub-completed.txt").read_text().replace("zhealth11", "ziocap")
    recs = tracker.to_records(parse_health(done), 2.0)
    assert [e.text for e in recs if isinstance(e, Event)] == ["pool ziocap: scrub finished with 0 errors"]
    [pool] = [r for r in recs if isinstance(r, Sample) and r.entity.kind == Kind.POOL]
    assert pool.metrics["scan_function"] == 1 and pool.metrics["scan_state"] == 2


def test_zfs_fuse_offline_then_resilvered():
    """Real zfs-fuse text: a leaf taken offline (DEGRADED), then online again and resilvered."""
    offline = (FUSE / "zpool_status_zst11_offline-degraded.txt").read_text()
    back = (FUSE / "zpool_status_zst11_resilver-completed.txt").read_text()
    [p] = parse_health(offline)
    assert p.state == "DEGRADED" and p.scan.function == "NONE"
    assert {v.entity.name: v.state for v in p.vdevs if v.state != "ONLINE"} == \
        {"zst11": "DEGRADED", "mirror-0": "DEGRADED", "loop13": "OFFLINE"}
    [q] = parse_health(back)
    assert (q.scan.function, q.scan.state, q.scan.values["scan_errors"]) == ("RESILVER", "FINISHED", 0)
    assert next(v for v in q.vdevs if v.entity.name == "loop13").note == "72K resilvered"
    tracker = zpool_health.HealthTracker()
    first = [e.text for e in tracker.to_records([p], 1.0) if isinstance(e, Event)]
    assert first == ["pool zst11 DEGRADED when first seen", "pool zst11: mirror-0 DEGRADED when first seen",
                     "pool zst11: loop13 OFFLINE when first seen"]
    recs = tracker.to_records([q], 2.0)
    assert [e.text for e in recs if isinstance(e, Event)] == [
        "pool zst11 ONLINE (was DEGRADED)", "pool zst11: mirror-0 ONLINE (was DEGRADED)",
        "pool zst11: loop13 ONLINE (was OFFLINE)", "pool zst11: resilver finished with 0 errors"]
    [pool] = [r for r in recs if isinstance(r, Sample) and r.entity.kind == Kind.POOL]
    assert pool.metrics["scan_function"] == 2 and pool.metrics["resilvering"] == 0 and pool.metrics["online"] == 1
    # the same scan read again says nothing; a later one (another end time) does
    assert not [e for e in tracker.to_records([q], 3.0) if isinstance(e, Event)]
    again = parse_health(back.replace("19:33:24", "19:40:00"))
    assert [e.text for e in tracker.to_records(again, 4.0) if isinstance(e, Event)] == \
        ["pool zst11: resilver finished with 0 errors"]


def test_a_pool_unhealthy_at_first_sight_is_said():
    recs = zpool_health.HealthTracker().to_records(parse_health_json(_degraded_json()), 1.0)
    assert "pool zguest: virtio-data1 OFFLINE when first seen" in [e.text for e in recs if isinstance(e, Event)]


def _host(flavour, version, tools=""):
    return Host("Linux", "6.1", "h", flavour, version, zfs_userland=tools)


def test_choice_by_version():
    assert zpool_health.choose(_host("openzfs-kmod", "2.3.2-2~bpo12+2", "zfs-2.3.2-2~bpo12+2"))[0] == \
        ["-j", "--json-flat-vdevs", "--json-int"]
    opts, why = zpool_health.choose(_host("openzfs-kmod", "2.1.11-1", "zfs-2.1.11-1"))
    assert opts == ["-p", "-s"] and "2.1.11" in why and "no -j" in why
    assert zpool_health.choose(_host("openzfs-kmod", "2.3.2", "zfs-2.2.4-1"))[0] == ["-p", "-s"]  # tools decide
    opts, why = zpool_health.choose(_host("zfs-fuse", "0.7.0-25+b1 (pool v23)"))
    assert opts == [] and "zfs-fuse" in why
    assert zpool_health.choose(Host("SunOS", "5.11", "h", "illumos", "omnios-r151046"))[0] == []


def _fake_zpool(tmp_path, text, rc=0, stderr=""):
    script = tmp_path / "zpool"
    out = tmp_path / "out.txt"
    out.write_text(text)
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/calls\ncat {out}\necho '{stderr}' >&2\nexit {rc}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_collector_runs_in_its_thread_and_never_raises(tmp_path):
    zpool = _fake_zpool(tmp_path, FLAT)
    c = zpool_health.StatusCollector(["zguest"], ["-j", "--json-flat-vdevs", "--json-int"], every=0.05, zpool=zpool)
    with c:
        got = wait_until(lambda: [r for r in c.poll() if isinstance(r, Sample)], 30, "a status reading")
    assert {s.entity.name for s in got} >= {"zguest", "mirror-0", "virtio-log0"}
    assert (tmp_path / "calls").read_text().splitlines()[0] == "status -j --json-flat-vdevs --json-int zguest"
    assert c.runs >= 1 and c.last_run_s is not None
    bad = zpool_health.StatusCollector([], [], zpool=_fake_zpool(tmp_path, "", 1, "cannot open 'x': no such pool"))
    [err] = bad.read_once()
    assert err.kind == EventKind.ERROR and "no such pool" in err.text
    old = zpool_health.StatusCollector([], ["-j", "--json-flat-vdevs", "--json-int"],
                                       zpool=_fake_zpool(tmp_path, "", 2, "invalid option 'j'"))
    [ev] = old.read_once()
    assert ev.kind == EventKind.INFO and "text" in ev.text and old.options == []
    junk = zpool_health.StatusCollector([], [], zpool=_fake_zpool(tmp_path, "no pools available\n"))
    assert junk.read_once()[0].kind == EventKind.ERROR


class _Watch:
    """A stand-in for the pools' state files: counts its readings, says what it is told."""

    def __init__(self, value="ONLINE"):
        self.value, self.reads = value, 0

    def __call__(self):
        self.reads += 1
        return self.value


def test_calm_pools_run_zpool_status_only_when_their_state_files_change(tmp_path):
    watch = _Watch()
    c = zpool_health.StatusCollector(["zguest"], ["-j"], every=0.02, zpool=_fake_zpool(tmp_path, FLAT),
                                     watch=watch, calm_every=3600)
    with c:
        wait_until(lambda: watch.reads >= 20, 30, "the state files read again and again")
        assert c.calm and c.runs == 1  # healthy, not scanning, nothing changed: zpool status not run again
        watch.value = "DEGRADED"
        wait_until(lambda: c.runs >= 2, 30, "a run once the state file changed")
    samples = [r for r in c.poll() if isinstance(r, Sample)]
    assert len({s.ts for s in samples}) >= 2 and {s.entity.name for s in samples} >= {"zguest", "virtio-data0"}


def test_after_a_watched_change_calm_pools_are_read_every_period_for_a_while(tmp_path):
    """A disk pulled out changes the block devices at once; ZED marks its vdev REMOVED seconds later, when the run
    the change caused has seen it ONLINE still (the OpenZFS 2.3 guest's cache device): the next runs come at the
    short period, not after the calm one."""
    watch = _Watch()
    c = zpool_health.StatusCollector(["zguest"], ["-j"], every=0.02, zpool=_fake_zpool(tmp_path, FLAT),
                                     watch=watch, calm_every=3600)
    with c:
        wait_until(lambda: watch.reads >= 5 and c.calm, 30, "calm, the watch read")
        assert c.runs == 1
        watch.value = "ONLINE, one disk fewer"
        wait_until(lambda: c.runs >= 6, 30, "runs at the short period after the change, though all stays healthy")
        # each run clears `calm` while it reads (at this period one is nearly always under way): wait for a
        # reading's verdict rather than catch one mid-run
        wait_until(lambda: c.calm, 30, "a run's reading saying the pools are calm")
        assert c.busy_until > 0


def test_calm_pools_are_still_read_every_calm_period(tmp_path):
    c = zpool_health.StatusCollector(["zguest"], ["-j"], every=0.02, zpool=_fake_zpool(tmp_path, FLAT),
                                     watch=_Watch(), calm_every=0.1)
    with c:
        wait_until(lambda: c.runs >= 3, 30, "runs every calm period")


@pytest.mark.parametrize("why", ["unhealthy", "no state files"])
def test_unhealthy_pools_or_no_state_files_keep_the_short_period(tmp_path, why):
    text = _degraded_json() if why == "unhealthy" else FLAT
    c = zpool_health.StatusCollector(["zguest"], ["-j"], every=0.02, zpool=_fake_zpool(tmp_path, text),
                                     watch=_Watch(None if why == "no state files" else "DEGRADED"), calm_every=3600)
    with c:
        wait_until(lambda: c.runs >= 3, 30, "runs every short period")
    assert c.calm is (why != "unhealthy")


def test_pool_state_files(tmp_path):
    for pool, state in (("tank", "ONLINE\n"), ("zguest", "DEGRADED\n")):
        (tmp_path / pool).mkdir()
        (tmp_path / pool / "state").write_text(state)
    (tmp_path / "notapool").mkdir()
    assert pool_kstat.pool_states(root=str(tmp_path)) == (("tank", "ONLINE"), ("zguest", "DEGRADED"))
    assert pool_kstat.pool_states(["zguest"], root=str(tmp_path)) == (("zguest", "DEGRADED"),)
    assert pool_kstat.pool_states(["gone"], root=str(tmp_path)) is None


def test_saved_texts_are_detected():
    assert detect(FLAT).name == "zpool-status-json" and detect(NESTED).name == "zpool-status-json"
    assert detect((G21 / "zpool-status.txt").read_text()).name == "zpool-status"
    assert detect((FUSE / "zpool_status_ziocap.txt").read_text()).name == "zpool-status"
    recs = zpool_health.parse_text((G21 / "zpool-status.txt").read_text(), "zpool-status.txt")
    assert len([r for r in recs if isinstance(r, Sample)]) == 9


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([FLAT, NESTED, (G23 / "zpool-status.txt").read_text(),
                        (FUSE / "zpool_status_zhealth11_scrub-completed.txt").read_text(),
                        (FUSE / "zpool_status_zst11_offline-degraded.txt").read_text()]), st.data())
def test_mangled_input_only_raises_parse_error(text, data):
    for variant in variants(text, data):
        try:
            zpool_health.parse_any(variant, "x")
        except ParseError:
            pass


# --- the guest's own status captures around a scrub, a leaf offline and the resilver after it --------------
# (tests/data/openzfs-2.3/run2/PROVENANCE.md: `zpool status -j --json-flat-vdevs --json-int zguest` and plain
# `zpool status zguest`, taken by tests/guest/scenario.sh one after the other)

RUN2 = TEST_DATA / "openzfs-2.3" / "run2"


def _one(name: str):
    [pool] = parse_any((RUN2 / name).read_text(), name)
    return pool


@pytest.mark.parametrize("fmt", ["j-{}.json", "{}.txt"])
def test_guest_scrub_started_then_finished(fmt: str):
    started, done = _one("zpool-status-" + fmt.format("scrub-started")), _one("zpool-status-" + fmt.format("scrub-done"))
    assert (started.pool, started.state, started.scan.function, started.scan.state) == ("zguest", "ONLINE", "SCRUB",
                                                                                       "SCANNING")
    assert 0 < started.scan.values["scan_progress_pct"] < 100
    assert (done.scan.function, done.scan.state, done.scan.values["scan_errors"]) == ("SCRUB", "FINISHED", 0)
    if fmt.endswith(".json"):
        assert done.scan.values["scan_progress_pct"] == 100.0  # issued < to_examine (skipped blocks), yet done
        assert done.scan.values["scan_start_time"] == 1795466468 and done.scan.values["scan_end_time"] == 1795466474


@pytest.mark.parametrize("name", ["zpool-status-j-degraded.json", "zpool-status-degraded.txt"])
def test_guest_leaf_offline_degrades_its_mirror_and_the_pool(name: str):
    pool = _one(name)
    states = {v.entity.name: (v.entity.kind.value, v.entity.role.value if v.entity.role else None, v.entity.parent,
                              v.state) for v in pool.vdevs}
    assert pool.state == "DEGRADED"
    assert states["mirror-0"] == ("vdev", "data", "zguest", "DEGRADED")
    assert states["virtio-data1"] == ("leaf", "data", "mirror-0", "OFFLINE")
    assert states["virtio-data0"][3] == states["mirror-1"][3] == "ONLINE"
    assert states["virtio-log0"][1:] == ("log", "zguest", "ONLINE")
    assert states["virtio-cache0"][1:] == ("cache", "zguest", "ONLINE")


@pytest.mark.parametrize("name", ["zpool-status-j-resilvered.json", "zpool-status-resilvered.txt"])
def test_guest_resilvered_after_online(name: str):
    pool = _one(name)
    assert pool.state == "ONLINE" and all(v.state == "ONLINE" for v in pool.vdevs)
    assert (pool.scan.function, pool.scan.state, pool.scan.values["scan_errors"]) == ("RESILVER", "FINISHED", 0)


def test_the_watch_sees_a_disk_pulled_while_the_pool_stays_online(tmp_path):
    """A cache device pulled out (OpenZFS 2.4 guest: virtio-cache0 REMOVED, the pool ONLINE) changes the list of
    block devices, not the pool's state file: the calm collector runs `zpool status` at once all the same."""
    root, sys_block = tmp_path / "kstat", tmp_path / "block"
    (root / "zguest").mkdir(parents=True)
    (root / "zguest" / "state").write_text("ONLINE\n")
    for dev in ("vda", "vdb", "vdb1", "vdg", "vdg1"):
        (sys_block / dev).mkdir(parents=True)
    before = zpool_health.watch_reading(["zguest"], str(root), str(sys_block))
    assert before == ((("zguest", "ONLINE"),), ("vda", "vdb", "vdb1", "vdg", "vdg1"))
    for dev in ("vdg1", "vdg"):
        (sys_block / dev).rmdir()
    after = zpool_health.watch_reading(["zguest"], str(root), str(sys_block))
    assert after != before and after[0] == before[0]
    assert zpool_health.watch_reading(["gone"], str(root), str(sys_block)) is None  # no state file: not calm
