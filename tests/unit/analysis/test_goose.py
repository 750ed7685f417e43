"""Goose-egg verdicts from real numbers: zpool iostat leaf rows beside iostat / diskstats device rows."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA, fixture_files
from zfsmon import names
from zfsmon.analysis import goose
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Kind, Sample
from zfsmon.sources.devices import diskstats, illumos_iostat
from zfsmon.sources.zpool import iostat as zpool_iostat

ILLUMOS = {p.name: p for p in fixture_files("illumos_fsstat_iostat")}
ZPOOL = {p.name: p for p in fixture_files("zpool_iostat")}


def _iostat(part):
    [name] = [n for n in ILLUMOS if part in n]
    return {s.entity.name: s for s in illumos_iostat.parse_iostat(ILLUMOS[name].read_text(), 1.0)}


def _leaf_row(fixture_part, leaf):
    """read+write ops of a leaf row in a captured `zpool iostat -v` (columns: name alloc free r w rbw wbw)."""
    [name] = [n for n in ZPOOL if fixture_part in n]
    for line in ZPOOL[name].read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == leaf:
            return float(parts[3]) + float(parts[4])
    raise AssertionError(f"{leaf} not in {name}")


def test_busy_leaf_on_a_silent_device_is_a_goose_egg(fixtures):
    # ZoL 0.6.3: "wwn-5000c5002e38e0eb      -      -     69    288   559K  32.0M"
    zops = _leaf_row("zol-0.6.3", "wwn-5000c5002e38e0eb")
    assert zops == 357
    # the device layer's row for that disk reads all zeros (illumos man page: c8t1d0 0.0 0.0 ...)
    dev = _iostat("-xn_sd1")["c8t1d0"]
    dops = goose.device_ops_per_s(dev.metrics)
    assert dops == 0.0
    [v] = goose.judge({"wwn-5000c5002e38e0eb": zops}, {"c8t1d0": dops}, {"wwn-5000c5002e38e0eb": ["c8t1d0"]})
    assert v.verdict == goose.GOOSE_EGG and v.device == "c8t1d0"
    assert (v.zfs_ops, v.device_ops, v.ratio) == (357, 0.0, 0.0)
    assert "357.0 ops/s" in v.why and "trust ZFS" in v.why


def test_device_that_sees_the_io_is_not_a_goose_egg(fixtures):
    # the same leaf's mirror partner (73 + 287) against a disk doing 1.5 + 33.9 ops/s: ~10% -> still a goose egg,
    # against the c12 controller's interval row (565.3 + 581.7 ops/s) clearly not
    zops = _leaf_row("zol-0.6.3", "wwn-5000c5002e3aa680")
    dev = _iostat("-xnze")
    small = goose.device_ops_per_s(dev["c0t1d0"].metrics)
    assert small == pytest.approx(35.4)
    [v] = goose.judge({"leaf": zops}, {"c0t1d0": small}, {"leaf": ["c0t1d0"]})
    assert v.verdict == goose.GOOSE_EGG and v.ratio == pytest.approx(35.4 / 360)
    [v] = goose.judge({"leaf": zops}, {"c0t1d0": small}, {"leaf": ["c0t1d0"]}, far_below=0.05)
    assert v.verdict == goose.NOT_GOOSE_EGG
    big = goose.device_ops_per_s(_iostat("-xcnCXTdz")["c12"].metrics)
    [v] = goose.judge({"leaf": zops}, {"c12": big}, {"leaf": ["c12"]})
    assert v.verdict == goose.NOT_GOOSE_EGG and v.device_ops == pytest.approx(1147.0)


def _lab_reports():
    """The lab's captured `zpool iostat -T u -v` through zfsmon's own parser: device -> ops/s, per report."""
    text = (TEST_DATA / "zfsfuse" / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt").read_text()
    by_ts = {}
    for r in zpool_iostat.parse_text(text, interval=1.0):
        if isinstance(r, Sample):
            by_ts.setdefault(r.ts, []).append(r)
    return [goose.leaf_ops(by_ts[ts]) for ts in sorted(by_ts)]


def test_lab_capture_leaves_against_diskstats_numbers():
    reports = _lab_reports()
    assert reports[0] == {}  # the since-import report is not an interval
    busy, idle = reports[1], reports[2]
    assert set(busy) == {"loop1", "loop2", "loop3", "loop4", "loop5", "loop6"}  # SLOG/cache are vdev rows
    assert (busy["loop1"], busy["loop2"], busy["loop3"], busy["loop4"]) == (384, 374, 322, 321)
    leaf_devs = {leaf: names.guess_devices(f"/dev/{leaf}", {"loop1", "loop2", "loop3", "loop4", "loop6"})
                 for leaf in busy}
    assert leaf_devs["loop1"] == ["loop1"] and leaf_devs["loop5"] == []
    # the captured /proc/diskstats counts for these devices, as rates over one second from zero
    caps = {s.entity.name: s for s in diskstats.parse_diskstats(
        (TEST_DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt").read_text(), 1.0)}
    rd = RateDeriver()
    dev_ops = {}
    for name in ("loop1", "loop2", "loop3", "loop4", "loop6"):
        zero = Sample(0.0, caps[name].entity, {k: 0.0 for k in caps[name].metrics}, source=caps[name].source)
        rd.update(zero)
        d, _ = rd.update(caps[name])
        dev_ops[name] = goose.device_ops_per_s(d.rates)
    assert dev_ops["loop3"] == 272 + 5538
    verdicts = {v.leaf: v for v in goose.judge(busy, dev_ops, leaf_devs)}
    assert verdicts["loop1"].verdict == goose.NOT_GOOSE_EGG and verdicts["loop1"].zfs_ops == 384
    assert verdicts["loop5"].verdict == goose.UNKNOWN  # no device numbers given for the SLOG
    assert verdicts["loop6"].verdict == goose.IDLE  # cache device, 0 ops in that interval
    quiet = {v.leaf: v.verdict for v in goose.judge(idle, dev_ops, leaf_devs)}
    assert [quiet[f"loop{i}"] for i in range(1, 5)] == [goose.IDLE] * 4  # the txg had been synced
    assert quiet["loop6"] == goose.NOT_GOOSE_EGG  # the L2ARC fed 169 writes/s that interval
    assert goose.summarize(list(verdicts.values())) == (0, 4, 1, 1)


def test_leaves_sharing_a_disk_are_judged_together():
    # two partitions of one disk, the device layer accounting only the whole disk
    zops = {"sdb1": 300.0, "sdb2": 100.0}
    devs = {leaf: names.guess_devices(leaf, {"sdb", "sdc"}) for leaf in zops}
    assert devs == {"sdb1": ["sdb"], "sdb2": ["sdb"]}
    vs = goose.judge(zops, {"sdb": 30.0}, devs)
    assert [v.verdict for v in vs] == [goose.GOOSE_EGG] * 2 and all(v.zfs_ops == 400.0 for v in vs)
    assert "shared with sdb2" in vs[0].why
    vs = goose.judge(zops, {"sdb": 41.0}, devs)
    assert [v.verdict for v in vs] == [goose.NOT_GOOSE_EGG] * 2


def test_name_rules():
    assert names.whole_disk("nvme0n1p3") == "nvme0n1" and names.whole_disk("loop3p1") == "loop3"
    assert names.whole_disk("c0t0d0s0") == "c0t0d0" and names.whole_disk("xvda2") == "xvda"
    assert names.is_grouping_vdev("mirror-0") and names.is_grouping_vdev("raidz2-1")
    assert names.is_grouping_vdev("draid1:4d:8c:1s-0") and not names.is_grouping_vdev("loop5")
    assert names.whole_disk("sdb") is None and names.whole_disk("loop3") is None
    known = set(_iostat("-xnp"))  # c0t0d0, c0t0d0s0, c0t0d0s1, an NFS mount
    assert names.guess_devices("c0t0d0", known) == ["c0t0d0", "c0t0d0s0"]
    assert names.guess_devices("/dev/dsk/c0t0d0s1", known) == ["c0t0d0s1", "c0t0d0"]
    assert names.guess_devices("wwn-5000c5002e38e0eb", known) == []
    assert names.candidate_paths("/dev/loop3") == ["/dev/loop3"]
    assert "/dev/disk/by-id/wwn-5000c5002e38e0eb" in names.candidate_paths("wwn-5000c5002e38e0eb")


def test_leaf_ops_skip_the_since_import_report():
    mk = lambda ops, first: Sample(1.0, Entity(Kind.LEAF, "loop1", "ziocap", parent="mirror-0"),  # noqa: E731
                                   {"read_ops": 0.0, "write_ops": ops}, since_boot=first)
    assert goose.leaf_ops([mk(10.0, True)]) == {}
    assert goose.leaf_ops([mk(10.0, True), mk(384.0, False)]) == {"loop1": 384.0}
    assert goose.device_ops_per_s({"busy_pct": 3.0}) is None
