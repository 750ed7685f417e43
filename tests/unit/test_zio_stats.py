"""The zio_stats kstat (OpenZFS 2.3.1+): block allocations and gang writes, read from its kstat table row."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA
from zfsmon import metrics
from zfsmon.host import Host
from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources import detect, zio_stats
from zfsmon.sources.kstat_text import BOOT_CLOCK
from zfsmon.views.prometheus import prom_name

CAPTURE_23 = TEST_DATA / "openzfs-2.3" / "kstat" / "zio_stats"
STATS = ("total_allocations", "alloc_class_fallbacks", "gang_writes", "gang_multilevel")


def _host(system: str) -> Host:
    return Host(system=system, release="test", hostname="test", flavour="none", zfs_version="")


def test_the_2_3_capture_is_one_zio_sample_of_four_counters():
    [s] = zio_stats.READER.parse_linux(CAPTURE_23.read_text(), 5.0)
    assert s.entity.kind == Kind.ZIO and s.entity.key == "zio:zio" and s.source == "zio_stats" and s.ts == 5.0
    assert s.metrics == {"total_allocations": 35793, "alloc_class_fallbacks": 0, "gang_writes": 0,
                         "gang_multilevel": 0}
    assert all(metrics.is_counter(Kind.ZIO, k) for k in s.metrics)
    assert prom_name(Kind.ZIO, "gang_writes").name == "zfsmon_zio_gang_writes_total"


def test_a_zio_stats_dump_is_detected_and_other_kstats_are_not_it():
    assert detect.detect(CAPTURE_23.read_text()).name == "zio-kstat"
    for other in ("arcstats.after", "zil.after", "kstat/zguest.objset-0x36", "kstat/metaslab_stats"):
        text = (TEST_DATA / "openzfs-2.3" / other).read_text()
        assert not zio_stats.READER.looks_like(text), other
    with pytest.raises(ParseError, match=r"no zio statistics \(no total_allocations\)"):
        zio_stats.READER.parse_linux((TEST_DATA / "openzfs-2.3" / "zil.after").read_text(), 0.0)


def test_saved_dumps_are_timed_by_the_kstat_snaptime():
    text = CAPTURE_23.read_text()
    snaptime_s = int(text.split()[6]) / 1e9
    records = detect.get("zio-kstat").parse(text + text, "zio.log", None)
    info, *samples = records
    assert isinstance(info, Event) and info.kind == EventKind.INFO and BOOT_CLOCK in info.data
    assert [s.ts for s in samples] == [snaptime_s, snaptime_s]
    assert all(isinstance(s, Sample) and s.metrics["total_allocations"] == 35793 for s in samples)


def test_the_collector_reads_the_file_and_a_missing_one_is_an_error_event(tmp_path):
    f = tmp_path / "zio_stats"
    f.write_text(CAPTURE_23.read_text())
    [s] = zio_stats.READER.linux_collector(str(f), clock=lambda: 3.0).poll()
    assert s.ts == 3.0 and s.metrics["total_allocations"] == 35793
    [e] = zio_stats.READER.linux_collector(str(tmp_path / "gone")).poll()
    assert e.kind == EventKind.ERROR and "gone" in e.text


def test_where_the_table_says_it_lives():
    """Linux and FreeBSD have it, illumos and zfs-fuse do not: the collector, doctor and the metrics table agree."""
    reader = zio_stats.READER
    assert reader.collector_for_host(platform="sunos5") is None
    assert reader.freebsd_collector().argv == ["sysctl", "-q", "kstat.zfs.misc.zio_stats"]
    assert reader.check_host(_host("SunOS")).detail == "illumos ZFS has no zio_stats kstat (OpenZFS 2.3.1+ has it)"
    assert metrics.lookup(Kind.ZIO, "gang_writes").sources == {
        "linux": "/proc/spl/kstat/zfs/zio_stats gang_writes", "freebsd": "sysctl kstat.zfs.misc.zio_stats.gang_writes"}
    assert {s.name for s in metrics.specs_for(Kind.ZIO)} == set(STATS)
    assert set(ZIO_STATS.places) == {"linux", "freebsd"}
    linux = reader.check_host(_host("Linux"))
    if not linux.ok:  # a host without OpenZFS 2.3.1+
        assert linux.detail == "no /proc/spl/kstat/zfs/zio_stats (OpenZFS 2.3.1+ has it)"
