"""Latency histograms from ``zpool iostat -w`` (the ``latency`` source), on the guest's 2.1 and 2.3 captures."""

from __future__ import annotations

import stat

import pytest

from tests.conftest import TEST_DATA, wait_until
from zfsmon import metrics
from zfsmon.host import Host
from zfsmon.metrics.latency import LAT_BUCKETS, histogram, histograms, lower_ns, split_metric, upper_ns
from zfsmon.model import Kind, Role, Sample
from zfsmon.sources.zpool import latency as zpool_latency
from zfsmon.sources.zpool.status import parse_status

ROLES = {("pool", "zguest", None, ""), ("vdev", "mirror-0", Role.DATA, "zguest"),
         ("leaf", "virtio-data0", Role.DATA, "mirror-0"), ("leaf", "virtio-data1", Role.DATA, "mirror-0"),
         ("vdev", "mirror-1", Role.DATA, "zguest"), ("leaf", "virtio-data2", Role.DATA, "mirror-1"),
         ("leaf", "virtio-data3", Role.DATA, "mirror-1"), ("vdev", "virtio-log0", Role.LOG, "zguest"),
         ("vdev", "virtio-cache0", Role.CACHE, "zguest")}


def _read(version):
    d = TEST_DATA / f"openzfs-{version}"
    topo = parse_status((d / "zpool-status.txt").read_text())
    return zpool_latency.histogram_records((d / "zpool-iostat-vw.txt").read_text(), ["zguest"], topo, 2.0)


@pytest.mark.parametrize("version,columns", [("2.3", 11), ("2.1", 10)])
def test_every_vdev_gets_its_histograms_with_role(version, columns):
    recs = _read(version)
    assert all(isinstance(r, Sample) for r in recs) and len(recs) == 18  # 9 tables, 2 reports
    first, second = recs[:9], recs[9:]
    for report in (first, second):
        assert {(s.entity.kind.value, s.entity.name, s.entity.role, s.entity.parent) for s in report} == ROLES
    assert all(s.since_boot and s.interval is None for s in first)
    assert all(not s.since_boot and s.interval == 2.0 for s in second)
    for s in recs:
        assert len(s.metrics) == columns * len(LAT_BUCKETS)
        for name in s.metrics:
            assert split_metric(name) is not None and metrics.lookup(s.entity.kind, name) is not None, name
    assert {(h.queue, h.op) for h in histograms(recs[0].metrics)} >= {("total_wait", "read"), ("disk_wait", "write"),
                                                                      ("scrub", "any"), ("trim", "any")}


def test_values_and_prometheus_form_2_3():
    recs = _read("2.3")
    pool = recs[0].metrics
    # the pool's since-import table, total_wait read column, as printed
    assert [pool[f"lat_total_wait_read_{b}"] for b in ("131us", "262us", "2ms", "4ms", "8ms", "16ms", "33ms", "67ms",
                                                        "134ms")] == [0, 503, 168, 97, 58, 8, 9, 1, 0]
    assert pool["lat_total_wait_read_524us"] == 5.5 * 1024  # `5.50K` without -p: why the collector uses -p
    assert split_metric("lat_total_wait_read_262us") == ("total_wait", "read", 17)
    assert split_metric("lat_scrub_8us") == ("scrub", "any", 12) and split_metric("read_ops") is None
    # the interval report: writes of 1-2 ms on the pool, printed as 1 a second over the 2 s interval
    interval = recs[9].metrics
    assert [n for n, v in interval.items() if v] == ["lat_total_wait_write_2ms", "lat_disk_wait_write_2ms"]
    h = histogram("total_wait", "write", {LAT_BUCKETS.index("2ms"): interval["lat_total_wait_write_2ms"]})
    assert h.count == 2 and h.buckets[-1] == (float("inf"), 2)
    assert [c for le, c in h.buckets if le < 0.002] == [0] * 20 and h.buckets[20] == (upper_ns(20) * 1e-9, 2)
    assert h.sum_seconds == pytest.approx(2 * (2**20 + 2**21 - 1) / 2 * 1e-9)  # the bucket's midpoint: an estimate


def test_histogram_buckets_are_cumulative_and_the_sum_lies_within_the_bounds():
    mirror = _read("2.3")[1].metrics
    for h in histograms(mirror):
        counts = [c for _, c in h.buckets]
        assert counts == sorted(counts) and counts[-1] == h.count
        assert len(h.buckets) == len(LAT_BUCKETS)  # 36 bounded buckets and +Inf (the last bucket is open)
        raw = {split_metric(n)[2]: v for n, v in mirror.items() if split_metric(n)[:2] == (h.queue, h.op)}
        assert h.count == sum(raw.values())
        lo = sum(v * lower_ns(j) for j, v in raw.items()) * 1e-9
        hi = sum(v * upper_ns(j) for j, v in raw.items()) * 1e-9
        assert lo <= h.sum_seconds <= hi


def _host(flavour, version, tools=""):
    return Host("Linux", "6.1", "h", flavour, version, zfs_userland=tools)


def test_check_by_version(monkeypatch):
    monkeypatch.setattr(zpool_latency.shutil, "which", lambda name: f"/sbin/{name}")
    ok = zpool_latency.check_host(_host("openzfs-kmod", "2.1.11-1"))
    assert ok.ok and "-w" in ok.detail
    fuse = zpool_latency.check_host(_host("zfs-fuse", "0.7.0-25+b1 (pool v23)"))
    assert not fuse.ok and "no -w" in fuse.detail and "zfs-fuse" in fuse.detail
    assert not zpool_latency.check_host(Host("SunOS", "5.11", "h", "illumos", "omnios")).ok


def test_collector_with_roles_from_status(tmp_path):
    d = TEST_DATA / "openzfs-2.3"
    script = tmp_path / "zpool"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/calls\n"
                      f"if [ \"$1\" = status ]; then cat {d / 'zpool-status.txt'}; exit 0; fi\n"
                      f"cat {d / 'zpool-iostat-vw.txt'}\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    c = zpool_latency.LatencyCollector(["zguest"], 2.0, zpool=str(script))
    got = []
    with c:
        wait_until(lambda: got.extend(r for r in c.poll() if isinstance(r, Sample)) or len(got) >= 9, 30,
                   "histograms of the 9 vdevs")
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "status zguest" in calls and "iostat -T u -w -p -y -v zguest 2" in calls
    leaf = next(s for s in got if s.entity.name == "virtio-log0")
    assert leaf.entity.role == Role.LOG and leaf.entity.kind == Kind.VDEV and leaf.source == "latency"  # the record's name


def test_the_histograms_come_every_ten_seconds_or_at_a_longer_interval():
    """The source's child reports every HISTOGRAM_EVERY_S at the shortest: the histograms are added up over
    windows, and at one second they were most of collection's CPU and of the recording's values; a longer
    sampling interval is used as it is, and the samples say the interval they cover."""
    assert zpool_latency.HISTOGRAM_EVERY_S == 10.0
    for interval, want in ((1.0, "10"), (5.0, "10"), (10.0, "10"), (30.0, "30")):
        c = zpool_latency.SOURCE.collector(None, interval, ["tank"])
        assert c.argv[-2:] == ["tank", want] and c.interval == float(want)
        assert c.parser.interval == float(want)
