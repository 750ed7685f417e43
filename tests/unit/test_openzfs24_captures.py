"""What zfsmon reads from OpenZFS 2.4's own outputs (tests/data/openzfs-2.4, PROVENANCE.md gives each command).

Each capture goes through `zfsmon parse`'s path (detection, then its kind's parser) and the values asserted are
the capture's own numbers. The pool is the guest's (`zguest`: two mirrors of virtio-data0..3, SLOG virtio-log0,
L2ARC virtio-cache0), so every per-vdev format must give the whole tree with its roles and parents. 2.4 adds
the arcstat `l2_ndev` and the zil kstat's `zil_commit_crash_count`, and installs arcstat and arc_summary only as
zarcstat and zarcsummary.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from tests.conftest import TEST_DATA
from tests.unit.sources.zpool.test_zpool_iostat_captures import TREE, _tree
from zfsmon.commands.parse import parse_log_text
from zfsmon.model import Event, Kind, Record, Sample
from zfsmon.sources.kstat.text import parse_proc_table
from zfsmon.sources.spec import ParseOptions

V24 = TEST_DATA / "openzfs-2.4"
M = 1024.0 ** 2


def _parse(name: str, interval: float = 2.0, options: Optional[ParseOptions] = None) -> Tuple[List[Record], str]:
    path = V24 / name
    return parse_log_text(path.read_text(), str(path), None, interval, options or ParseOptions())


def _samples(records: Sequence[Record]) -> List[Sample]:
    return [r for r in records if isinstance(r, Sample)]


def _notes(records: Sequence[Record]) -> List[str]:
    return [r.text for r in records if isinstance(r, Event)]


def _reports(samples: Sequence[Sample]) -> List[Dict[str, Sample]]:
    """The samples of each report of a per-vdev capture, by entity name (one sample per entity per report)."""
    n = len(TREE)
    assert len(samples) % n == 0
    return [{s.entity.name: s for s in samples[i:i + n]} for i in range(0, len(samples), n)]


def test_the_captures_are_openzfs_2_4_on_the_trixie_kernel():
    assert (V24 / "zfs-version.txt").read_text().splitlines() == ["zfs-2.4.4-1~bpo13+1", "zfs-kmod-2.4.4-1~bpo13+1"]
    assert (V24 / "uname-r.txt").read_text().strip() == "6.12.117+deb13-amd64"


# --- zio_stats: the same boot's reads, idle and under the load, as a kstat table (2.3.2 has the same four) -----

def test_zio_stats_idle_then_counting_up_under_the_load():
    idle, load, after = (parse_proc_table((V24 / "kstat" / n).read_text(), n)
                         for n in ("zio_stats-idle", "zio_stats", "zio_stats-after"))
    assert idle.header is not None and idle.header.ndata == 4 == idle.rows and idle.strings == {}
    assert idle.values == {"total_allocations": 92, "alloc_class_fallbacks": 0, "gang_writes": 0,
                           "gang_multilevel": 0}
    assert set(load.values) == set(after.values) == set(idle.values)
    assert idle.values["total_allocations"] < load.values["total_allocations"] < after.values["total_allocations"]
    assert load.header and after.header and idle.header.snaptime_ns < load.header.snaptime_ns < after.header.snaptime_ns


# --- zpool iostat -v: the tree, roles and exact values --------------------------------------------------------

@pytest.mark.parametrize("name", ["zpool-iostat-v.txt", "zpool-iostat-vp.txt", "zpool-iostat-vl.txt",
                                  "zpool-iostat-vlp.txt", "zpool-iostat-vq.txt", "zpool-iostat-vqp.txt",
                                  "zpool-iostat-vlq.txt", "zpool-iostat-vy.txt", "zpool-iostat-vyp.txt",
                                  "zpool-iostat-vTu.txt", "zpool-iostat-vTd.txt", "zpool-iostat-vlpTu.txt",
                                  "zpool-iostat-vyTu.txt"])
def test_verbose_iostat_gives_the_whole_tree_in_each_report(name: str):
    interval_only = "y" in name.split("-")[-1]  # -y: no since-boot report, two intervals (the text cannot say so)
    records, kind = _parse(name, options=ParseOptions(flags="y" if interval_only else ""))
    reports = _reports(_samples(records))
    assert kind == "zpool-iostat"
    assert [r["zguest"].since_boot for r in reports] == [not interval_only, False]
    for r in reports:
        assert _tree(list(r.values())) == TREE


def test_iostat_vp_exact_values_since_boot_then_the_interval():
    first, second = _reports(_samples(_parse("zpool-iostat-vp.txt")[0]))
    assert first["zguest"].since_boot and not second["zguest"].since_boot
    assert first["zguest"].metrics == {"alloc": 128159744, "free": 1885106176, "read_ops": 134, "write_ops": 361,
                                       "read_bw": 1102631, "write_bw": 17457730}
    assert second["virtio-data2"].metrics == {"alloc": 0, "free": 0, "read_ops": 0, "write_ops": 0,
                                              "read_bw": 3926, "write_bw": 0}
    assert second["virtio-log0"].metrics["write_ops"] == 83 and second["virtio-log0"].metrics["write_bw"] == 5807377
    assert second["virtio-cache0"].metrics["alloc"] == 92123136 and second["virtio-cache0"].entity.role.value == "cache"


def test_iostat_vlp_latency_columns_and_dashes():
    first, second = _reports(_samples(_parse("zpool-iostat-vlp.txt")[0]))
    d1 = first["virtio-data1"].metrics
    assert (d1["total_wait_read"], d1["total_wait_write"], d1["disk_wait_read"], d1["disk_wait_write"]) == (
        868646, 4649342, 847082, 3821083)
    assert (d1["syncq_wait_read"], d1["syncq_wait_write"], d1["asyncq_wait_read"], d1["asyncq_wait_write"]) == (
        13743, 3702, 12288, 780345)
    # `-` (no I/O of that kind yet) is no value, not a zero
    assert "asyncq_wait_read" not in first["virtio-data0"].metrics
    assert "asyncq_wait_read" not in first["virtio-log0"].metrics and first["virtio-log0"].metrics[
        "syncq_wait_read"] == 544768
    assert "total_wait_read" not in second["virtio-log0"].metrics
    assert second["virtio-log0"].metrics["total_wait_write"] == 992994
    assert not any(k.startswith(("scrub", "trim", "rebuild")) for r in (first, second) for s in r.values()
                   for k in s.metrics)


def test_iostat_vqp_queue_columns():
    first, second = _reports(_samples(_parse("zpool-iostat-vqp.txt")[0]))
    assert len(first["zguest"].metrics) == 20
    assert first["zguest"].metrics["syncq_read_activ"] == 1 and first["virtio-data1"].metrics["read_ops"] == 29
    assert second["virtio-data0"].metrics["read_ops"] == 74 and second["virtio-data0"].metrics["read_bw"] == 607924


def test_iostat_vwp_histograms_with_the_status_beside():
    status = (V24 / "zpool-status.txt").read_text()
    records, _ = _parse("zpool-iostat-vwp.txt", options=ParseOptions(beside=(("zpool-status.txt", status),)))
    first, second = _reports(_samples(records))
    assert _tree(list(first.values())) == TREE and not any("guessed" in n for n in _notes(records))
    log = first["virtio-log0"].metrics
    assert len(log) == 407
    assert (log["lat_total_wait_write_262us"], log["lat_total_wait_write_524us"], log["lat_total_wait_write_1ms"],
            log["lat_disk_wait_write_524us"], log["lat_syncq_wait_write_16us"]) == (309, 1516, 766, 1514, 1659)
    assert not second["zguest"].since_boot


def test_iostat_vwp_alone_guesses_the_same_tree_and_says_so():
    records, _ = _parse("zpool-iostat-vwp.txt")
    first, _second = _reports(_samples(records))
    assert _tree(list(first.values())) == TREE
    assert any("vdev tree guessed" in n and "log, cache" in n for n in _notes(records))


# --- zpool status: text and -j ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zpool-status.txt", "zpool-status-p.txt", "zpool-status-v.txt", "zpool-status-j.json",
                                  "zpool-status-j-flat-int.json"])
def test_status_gives_the_tree_all_online(name: str):
    records, kind = _parse(name)
    samples = _samples(records)
    assert kind == ("zpool-status-json" if name.endswith(".json") else "zpool-status")
    assert _tree(samples) == TREE and len(samples) == len(TREE)
    assert all(s.metrics["online"] == 1 and s.metrics["read_errors"] == 0 for s in samples)


def test_status_full_paths_name_the_leaves_by_path():
    by = {s.entity.name: s.entity for s in _samples(_parse("zpool-status-P.txt")[0])}
    assert by["/dev/disk/by-id/virtio-data1-part1"].parent == "mirror-0"
    assert by["/dev/disk/by-id/virtio-log0-part1"].role.value == "log"
    assert by["/dev/disk/by-id/virtio-cache0-part1"].role.value == "cache" and len(by) == len(TREE)


@pytest.mark.parametrize("name", ["zpool-status-degraded.txt", "zpool-status-j-degraded.json"])
def test_status_with_a_leaf_offline(name: str):
    records, _ = _parse(name)
    by = {s.entity.name: s.metrics for s in _samples(records)}
    assert by["virtio-data1"]["online"] == 0 and by["mirror-0"]["online"] == 0 and by["zguest"]["online"] == 0
    assert by["virtio-data0"]["online"] == 1 and by["mirror-1"]["online"] == 1
    assert any("virtio-data1 OFFLINE" in n for n in _notes(records))


def test_status_json_has_each_leaf_slow_ios():
    by = {s.entity.name: s for s in _samples(_parse("zpool-status-j-flat-int.json")[0])}
    assert {n for n, s in by.items() if "slow_ios" in s.metrics} == {
        "virtio-data0", "virtio-data1", "virtio-data2", "virtio-data3", "virtio-log0", "virtio-cache0"}
    assert all(s.metrics.get("slow_ios", 0) == 0 for s in by.values())


# --- kstats --------------------------------------------------------------------------------------------------------

def test_arcstats_2_4_with_l2_ndev():
    records, kind = _parse("kstat/arcstats")
    arc, l2 = _samples(records)
    assert kind == "arcstats" and (arc.entity.kind, l2.entity.kind) == (Kind.ARC, Kind.L2ARC)
    assert (len(arc.metrics), len(l2.metrics)) == (106, 42)
    assert arc.metrics["hits"] == 67729 and arc.metrics["misses"] == 2626 and arc.metrics["c_max"] == 256 * M
    assert l2.metrics["ndev"] == 1 and l2.metrics["misses"] == 2626


def test_zil_kstat_2_4_with_commit_crash_count():
    records, kind = _parse("kstat/zil")
    [zil] = _samples(records)
    assert kind == "zil-kstat" and len(zil.metrics) == 21
    assert zil.metrics["commit_count"] == 1551 and zil.metrics["itx_count"] == 24800
    assert zil.metrics["commit_crash_count"] == 0


def test_pool_iostats_kstat():
    [s] = _samples(_parse("kstat/zguest.iostats")[0])
    assert s.entity.key == "pool:zguest/zguest" and len(s.metrics) == 26
    assert s.metrics["arc_read_count"] == 4710 and s.metrics["arc_write_bytes"] == 287146944
    assert s.metrics["direct_read_count"] == 0 and s.metrics["trim_bytes_written"] == 0


def test_objset_kstat_of_the_dataset():
    [s] = _samples(_parse("kstat/zguest.objset-0x5b")[0])
    assert (s.entity.kind, s.entity.name, len(s.metrics)) == (Kind.DATASET, "zguest/db", 27)
    assert s.metrics["writes"] == 24384 and s.metrics["write_bytes"] == 294125568
    assert s.metrics["reads"] == 55046 and s.metrics["zil_commit_count"] == 1477


def test_txgs_kstat_rows():
    samples = _samples(_parse("kstat/zguest.txgs")[0])
    assert len(samples) == 11 and {s.entity.name for s in samples} == {"zguest"}
    assert [s.metrics["txgs_synced"] for s in samples] == list(range(11))
    assert samples[1].ts == pytest.approx(93.576586038) and samples[1].metrics["txg_sync_time_ns"] == 1320958705


def test_pool_state_kstat():
    [s] = _samples(_parse("kstat/zguest.state")[0])
    assert s.entity.name == "zguest" and s.metrics == {"state": 0, "online": 1}


# --- zarcstat, zarcsummary ----------------------------------------------------------------------------------------

def test_zarcstat_rows_are_read_as_arcstat():
    records, kind = _parse("arcstat.txt")
    rows = _samples(records)
    assert kind == "arcstat" and [s.ts for s in rows] == [68400, 68401, 68402]
    assert [s.metrics["reads_per_s"] for s in rows] == [215, 2300, 6200]
    assert [s.metrics["demand_data_hit_pct"] for s in rows] == [100, 95.9, 89.4]
    assert rows[0].metrics["size"] == 126 * M and rows[0].metrics["c"] == 185 * M


def test_zarcstat_all_columns():
    rows = _samples(_parse("arcstat-a.txt")[0])
    assert [(s.ts, s.entity.kind, len(s.metrics)) for s in rows] == [
        (68404, Kind.ARC, 164), (68404, Kind.L2ARC, 12), (68406, Kind.ARC, 164), (68406, Kind.L2ARC, 14)]
    assert rows[0].metrics["hits_per_s"] == 366 and rows[0].metrics["abdsz"] == 10500
    assert rows[2].metrics["hits_per_s"] == 3900 and rows[2].metrics["misses_per_s"] == 12
    # an interval without L2ARC accesses has no L2ARC hit %: zarcstat's 0 is not read as one
    assert "hit_pct" not in rows[1].metrics and rows[3].metrics["miss_pct"] == 100


def test_zarcsummary_whole_report():
    arc, l2, zil = _samples(_parse("arc_summary.txt")[0])
    assert (arc.entity.kind, l2.entity.kind, zil.entity.kind) == (Kind.ARC, Kind.L2ARC, Kind.ZIL)
    assert all(s.since_boot for s in (arc, l2, zil))
    assert (len(arc.metrics), len(l2.metrics), len(zil.metrics)) == (75, 21, 7)
    assert arc.metrics["c_max"] == 256 * M and arc.metrics["size"] == 105381888
    assert zil.metrics["commit_count"] == 4300 and l2.metrics["free_on_write"] == 43


def test_zilstat_rows():
    records, kind = _parse("zilstat.txt")
    rows = _samples(records)
    assert kind == "zilstat" and len(rows) == 13 and {s.entity.kind for s in rows} == {Kind.ZIL}
    assert [s.ts for s in rows[:3]] == [68644, 68646, 68647]
    assert rows[0].metrics["commits_per_s"] == 67 and rows[0].metrics["itx_per_s"] == 1100
    assert rows[0].metrics["slog_write_bytes_per_s"] == 9 * M and rows[0].metrics["normal_itx_per_s"] == 0
    assert rows[1].interval == 2 and rows[1].metrics["itx_direct_bytes_per_s"] == 2 * M


# --- a slow leaf of a raidz pool: slow I/Os in zpool status -s / -j (tests/data/openzfs-2.4/slow) -----------------

SLOW = V24 / "slow"
#: the slow I/O counts of the leaves other than vdev.9 (delayed 200 ms by zinject; zio_slow_io_ms 100): TCG's
SLOW_S = {0: 0, 1: 0, 2: 1, 3: 1, 4: 0, 5: 0, 6: 3, 7: 0, 8: 1}


@pytest.mark.parametrize("name, vdev9", [("zpool-status-s-raidz.txt", 47), ("zpool-status-sp-raidz.txt", 49),
                                         ("zpool-status-s-raidz-cleared.txt", 53)])
def test_status_s_gives_each_raidz_leaf_its_slow_ios(name: str, vdev9: int):
    path = SLOW / name
    records, kind = parse_log_text(path.read_text(), str(path), None, 2.0, ParseOptions())
    by = {s.entity.name: s for s in _samples(records)}
    assert kind == "zpool-status" and len(by) == 12
    assert by["zslow"].entity.kind == Kind.POOL and by["raidz1-0"].entity.kind == Kind.VDEV
    leaves = {n: s for n, s in by.items() if s.entity.kind == Kind.LEAF}
    assert {s.entity.parent for s in leaves.values()} == {"raidz1-0"}
    assert {s.entity.role.value for s in leaves.values() if s.entity.role} == {"data"}
    slow = {n: s.metrics["slow_ios"] for n, s in leaves.items()}
    # the delayed leaf's count went on growing between the three reads; the others' stayed
    assert slow.pop("/var/tmp/zslow/vdev.9") == vdev9
    assert slow == {f"/var/tmp/zslow/vdev.{i}": float(v) for i, v in SLOW_S.items() if i != 9}
    # ZFS counts slow I/Os on leaves only: `-` on the pool and the raidz vdev, `0` with -p (the vdev's 0 kept)
    assert "slow_ios" not in by["zslow"].metrics
    assert by["raidz1-0"].metrics.get("slow_ios") == (0 if "-sp-" in name else None)


def test_status_json_slow_ios_while_the_leaf_sat_out():
    path = SLOW / "zpool-status-j-flat-int-raidz.json"
    records, kind = parse_log_text(path.read_text(), str(path), None, 2.0, ParseOptions())
    by = {s.entity.name: s for s in _samples(records)}
    assert kind == "zpool-status-json" and by["/var/tmp/zslow/vdev.9"].entity.parent == "raidz1-0"
    slow = {n: s.metrics["slow_ios"] for n, s in by.items() if "slow_ios" in s.metrics}
    assert slow["/var/tmp/zslow/vdev.9"] == 50 and len(slow) == 10  # read a moment after status -s's 47
    assert sum(slow.values()) - slow["/var/tmp/zslow/vdev.9"] <= 10
