"""Per-role vdev figures (operations, IOPS per GB, what the cache adds, latency distributions) on real recordings.

The three recordings are the acceptance run of issue 14 on the zfs-fuse lab (tests/data/fio/PROVENANCE.md):
a random-read sweep on throttled mirrors, the same sweep served by the L2ARC, and random writes with fsync.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import TEST_DATA
from zfsmon.analysis import findings, qdsweep, vdevperf
from zfsmon.model import Kind, Role, Sample
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool import latency as zpool_latency
from zfsmon.sources.zpool.iostat import read_capture
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recording
from zfsmon.trace.histogram import bucket_upper

LAB = TEST_DATA / "fio" / "lab-acceptance"
_CACHE: Dict[str, List[Sample]] = {}


def recording(name: str, tmp_path_factory: pytest.TempPathFactory) -> List[Sample]:
    if name not in _CACHE:
        path = Path(tmp_path_factory.mktemp("rec")) / f"{name}.zfsmon"
        with gzip.open(LAB / f"{name}.zfsmon.gz") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        with Recording.open(str(path)) as rec:
            _CACHE[name] = list(rec.samples())
    return _CACHE[name]


def test_ceiling_run_roles_capacity_and_iops_per_gb(tmp_path_factory):
    vp = vdevperf.vdev_perf(recording("ceiling", tmp_path_factory))
    assert vp is not None and set(vp.roles) == {"data", "log", "cache"}
    data = vp.roles["data"]
    # two mirrors of two throttled disks (100 IOPS each): every fio read went to a disk
    assert (data.devices, data.top_level) == (4, 2)
    assert data.read_ops == 10559 and data.write_ops == 2235
    assert data.busiest_read_per_device_s == 101.75 and data.busiest_write_per_device_s == 103
    assert data.capacity_b == pytest.approx(2131335577.6)  # alloc + free of mirror-0 and mirror-1
    assert data.peak_iops == 429 and data.iops_per_gb == pytest.approx(429 / 2.1313355776)
    assert vp.roles["cache"].read_ops == 2 and vp.roles["log"].write_ops == 0
    d = vp.as_dict()
    assert d["fio_peak_iops"] == pytest.approx(415.4467, abs=1e-3)
    assert d["fio_iops_per_data_gb"] == pytest.approx(415.4467 / 2.1313355776, abs=1e-3)
    assert [s["depth"] for s in d["fio_steps"]] == [1, 2, 4, 8, 16, 32, 64]
    # the L2ARC hits are arcstats' (every pool of the daemon): the text says so
    assert vp.l2_hits == 20543 and "arcstats, every pool" in vp.text()
    assert "4 disks, 1.98 GiB; busiest interval 429 disk IOPS = 201.3 IOPS per GB" in vp.text()


def test_latency_per_role_from_the_trace_histograms(tmp_path_factory):
    vp = vdevperf.vdev_perf(recording("ceiling", tmp_path_factory))
    read = vp.lat("data", "read")
    assert read is not None and read.source == "trace:fusevdevlat"
    assert read.count == 10735  # every traced read of the four data disks (fio read 10,723 blocks)
    assert sum(b[2] for b in read.buckets) == read.count
    assert read.p50_ms == pytest.approx(0.11439, abs=1e-4) and read.p99_ms == pytest.approx(108.109, abs=1e-2)
    assert read.mean_ms == pytest.approx(20.7186, abs=1e-3)  # exact: the script's sums, not bucket midpoints
    # the throttle: 1 % of the reads waited ~100 ms (blk-throttle's slice) while half passed at once
    assert read.p50_ms < 1 < 90 < read.p99_ms < 130
    assert [(d.role, d.op) for d in vp.latency] == [("data", "read"), ("data", "write"), ("data", "flush"),
                                                    ("log", "flush"), ("cache", "read"), ("cache", "write")]
    # mirror rows (parents) are not counted twice: the leaves alone
    traced = [s for s in recording("ceiling", tmp_path_factory) if s.entity.kind == Kind.TRACE
              and s.entity.role == Role.DATA and s.entity.name.startswith("loop")]
    assert read.count == sum(s.metrics.get("read_ops", 0) for s in traced)


def test_l2arc_run_the_cache_device_served_the_reads(tmp_path_factory):
    vp = vdevperf.vdev_perf(recording("l2arc", tmp_path_factory))
    cache, data = vp.roles["cache"], vp.roles["data"]
    assert cache.read_ops == pytest.approx(264498.84) and data.read_ops == 2
    assert cache.busiest_read_per_device_s == pytest.approx(15564.8)
    assert vp.fio_peak_iops == pytest.approx(14283.486, abs=1e-2)
    assert vp.fio_reads == pytest.approx(276688)
    assert vp.l2_hits == 285535
    lat = vp.lat("cache", "read")
    assert lat.count == 267070 and lat.p50_ms < 0.1 and lat.p99_ms < 2  # microseconds, not the disks' 100 ms
    assert "Cache devices: 1, 251 MiB" in vp.text()


def test_slog_run_the_log_device_carried_the_synchronous_writes(tmp_path_factory):
    samples = recording("slog", tmp_path_factory)
    vp = vdevperf.vdev_perf(samples)
    log, data = vp.roles["log"], vp.roles["data"]
    assert log.write_ops == 5770 and data.write_ops == 963 and log.busiest_write_per_device_s == 988
    steps = qdsweep.steps_from_samples(samples)
    assert len(steps) == 1 and steps[0].depth == 4 and steps[0].by_ios == {"write": 7130}
    assert vp.lat("log", "write").count == 5729 and vp.lat("log", "write").p99_ms < 1
    assert vp.lat("data", "write").p50_ms > 50  # the data disks' writes wait on the throttle: the SLOG's don't


def test_sweep_finding_sets_device_latency_beside_fios(tmp_path_factory):
    samples = recording("ceiling", tmp_path_factory)
    rep = findings.analyze(samples)
    (sw,) = rep.topic("qd_sweep")
    rows = sw.numbers["per_step_vdevs"]
    assert [r["depth"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    for r in rows:
        assert r["data_read_p99_ms"] > 50 and 50 < r["data_reads_per_device_s"] < 130
    # where the time went: at depth 64 fio's median is ~100 ms, the disks' under 10 ms: the queue is above them
    deep = rows[-1]
    assert deep["fio_p50_ms"] > 10 * deep["data_read_p50_ms"]
    assert "Device latency beside fio's" in sw.text and "depth 64: fio 102.2 ms/400.6 ms, data read" in sw.text
    (vp,) = rep.topic("vdev_perf")
    assert vp.numbers["roles"]["data"]["read_ops"] == 10559


def _w(path: str):
    d = TEST_DATA / "openzfs-2.3"
    topo = parse_status((d / "zpool-status.txt").read_text())
    return zpool_latency.histogram_records((d / path).read_text(), ["zguest"], topo, 2.0)


def test_wait_histograms_of_zpool_iostat_w_when_there_is_no_trace():
    recs = _w("run2/zpool-iostat-wpyvTu.txt")  # the guest's 2 s interval: fio's writes
    dists = {(x.role, x.op): x for x in vdevperf.role_latency(recs)}
    assert set(dists) == {("data", "write"), ("log", "write"), ("cache", "write")}
    got = dists[("data", "write")]
    # the four leaves' total_wait write buckets of the interval report (44 + 45 + 50 + 49 a second, printed per
    # second: times the 2 s interval), mirrors not added
    assert got.source == "zpool iostat -w" and got.count == 2 * 188
    assert (dists[("log", "write")].count, dists[("cache", "write")].count) == (2, 6)
    assert got.buckets[0][0] <= got.p50_ms * 1e6 <= got.p99_ms * 1e6 <= got.buckets[-1][1]
    assert got.p50_ms == pytest.approx(0.48593, abs=1e-4) and got.p99_ms == pytest.approx(7.5125, abs=1e-3)


def test_the_since_import_table_only_when_it_is_all_there_is():
    recs = _w("zpool-iostat-vw.txt")
    only = [s for s in recs if s.since_boot]
    leaves = [s for s in only if s.entity.kind == Kind.LEAF and s.entity.role == Role.DATA]
    want = sum(v for s in leaves for n, v in s.metrics.items() if n.startswith("lat_total_wait_read_"))
    dists = {(x.role, x.op): x for x in vdevperf.role_latency(only)}
    assert dists[("data", "read")].count == pytest.approx(want) and want > 8000
    # with the interval report beside it, the interval's deltas alone: no data reads in those 2 s
    assert ("data", "read") not in {(x.role, x.op) for x in vdevperf.role_latency(recs)}


def test_trace_bucket_bounds_match_the_scripts():
    for lo in [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 1024, 1280, 98304, 83886080]:
        assert vdevperf.trace_bucket_upper(lo) == bucket_upper(lo)


def test_percentile_interpolates_inside_a_bucket():
    assert vdevperf.percentile([(0, 10, 1), (10, 20, 3)], 0.5) == pytest.approx(10 + 10 * 1 / 3)
    assert vdevperf.percentile([], 0.5) is None and vdevperf.percentile([(0, 1, 0)], 0.9) is None


def test_no_iostat_no_finding():
    assert vdevperf.vdev_perf([]) is None


def test_ops_weighted_means_of_zpool_iostat_l_when_there_are_no_histograms(fixtures):
    """Linux OpenZFS 2.1's `zpool iostat -vl 30 5` (averages only): a role's mean wait is each leaf's total_wait
    weighted by its operations in each interval report; the since-import first report is left out, and so is an
    operation no leaf did (every read here shows 0 ops and a '-' wait)."""
    path = fixtures / "zpool_iostat" / "linux-ubuntu-openzfs2.1__zpool_iostat_-vl_30_5_repeated-headers_ns-values.txt"
    recs = [r for r in read_capture(path.read_text(), path.name, 30.0, ParseOptions(host_text=lambda argv: None))
            if isinstance(r, Sample)]
    leaves = [s for s in recs if s.entity.kind == Kind.LEAF]
    assert {s.entity.name for s in leaves} == {"sda1", "sdb1", "sdc1", "sdd1", "sde1"}
    assert {(s.entity.pool, s.entity.parent, s.entity.role) for s in leaves} == {("testpool", "raidz1-0", Role.DATA)}
    assert sum(s.since_boot for s in leaves) == 5
    [got] = vdevperf.role_latency(recs)
    assert (got.role, got.op, got.source, got.p50_ms, got.buckets) == ("data", "write", "zpool iostat -l", None, [])
    # the 20 leaf rows of reports 2-5 (write ops/s, total_wait write ms), written out from the capture
    rows = [(174, 4), (163, 4), (158, 6), (150, 6), (166, 4), (144, 5), (139, 6), (117, 10), (117, 9), (128, 6),
            (115, 9), (116, 9), (110, 9), (102, 11), (122, 7), (122, 7), (116, 8), (109, 9), (102, 10), (122, 7)]
    assert got.count == sum(n for n, _ms in rows) * 30 == 77760
    assert got.mean_ms == pytest.approx(sum(n * ms for n, ms in rows) / sum(n for n, _ms in rows))
    assert "data write mean 7.0 ms (77,760 ops, zpool iostat -l)" == got.text()
