"""The zio_stats kstat (OpenZFS 2.3.1+): block allocations and gang writes, read from its kstat table row alone.

Real captures: the OpenZFS 2.3 guest's (tests/data/openzfs-2.3) and the OpenZFS 2.4.4 guest's under an 8k random
fio load (tests/data/openzfs-2.4, PROVENANCE.md there).
"""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA
from zfsmon.host import Host
from zfsmon.metrics import COUNTER
from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.kstat_reader import KstatReader
from zfsmon.sources.kstat_text import BOOT_CLOCK

CAPTURE_23 = TEST_DATA / "openzfs-2.3" / "kstat" / "zio_stats"
CAPTURE_24 = TEST_DATA / "openzfs-2.4" / "kstat" / "zio_stats"
READER = KstatReader(ZIO_STATS)


def _host(system: str) -> Host:
    return Host(system=system, release="test", hostname="test", flavour="none", zfs_version="")


def test_the_2_3_capture_is_one_zio_sample_of_four_counters():
    [s] = READER.parse_linux(CAPTURE_23.read_text(), 5.0)
    assert s.entity.kind == Kind.ZIO and s.entity.key == "zio:zio" and s.source == "zio_stats" and s.ts == 5.0
    assert s.metrics == {"total_allocations": 35793, "alloc_class_fallbacks": 0, "gang_writes": 0,
                         "gang_multilevel": 0}
    specs = {m.name: m for m in ZIO_STATS.specs()}
    assert set(specs) == set(s.metrics) and all(m.kind == COUNTER and m.kinds == (Kind.ZIO,) for m in specs.values())
    assert specs["gang_writes"].sources == {"linux": "/proc/spl/kstat/zfs/zio_stats gang_writes",
                                            "freebsd": "sysctl kstat.zfs.misc.zio_stats.gang_writes"}


def test_the_2_4_4_capture_under_load():
    """The same four statistics in 2.4 (the row needs no change); no allocation fell back or ganged."""
    text = CAPTURE_24.read_text()
    [s] = READER.parse_linux(text, 0.0)
    assert s.metrics == {"total_allocations": 34870, "alloc_class_fallbacks": 0, "gang_writes": 0,
                         "gang_multilevel": 0}
    assert READER.looks_like(text)
    info, sample = READER.parse_dumps(text, "zio_stats")
    assert isinstance(info, Event) and sample.ts == 132721377806 / 1e9  # the header's snaptime, in seconds


def test_a_zio_stats_dump_is_recognised_and_other_kstats_are_not_it():
    assert READER.looks_like(CAPTURE_23.read_text())
    for other in ("arcstats.after", "zil.after", "kstat/zguest.objset-0x36", "kstat/metaslab_stats"):
        assert not READER.looks_like((TEST_DATA / "openzfs-2.3" / other).read_text()), other
    with pytest.raises(ParseError, match=r"no zio statistics \(no total_allocations\)"):
        READER.parse_linux((TEST_DATA / "openzfs-2.3" / "zil.after").read_text(), 0.0)


def test_saved_dumps_are_timed_by_the_kstat_snaptime():
    text = CAPTURE_23.read_text()
    snaptime_s = int(text.split()[6]) / 1e9
    info, *samples = READER.parse_dumps(text + text, "zio.log")
    assert isinstance(info, Event) and info.kind == EventKind.INFO and BOOT_CLOCK in info.data
    assert [s.ts for s in samples] == [snaptime_s, snaptime_s]
    assert all(isinstance(s, Sample) and s.metrics["total_allocations"] == 35793 for s in samples)


def test_the_collector_reads_the_file_and_a_missing_one_is_an_error_event(tmp_path):
    f = tmp_path / "zio_stats"
    f.write_text(CAPTURE_23.read_text())
    [s] = READER.linux_collector(str(f), clock=lambda: 3.0).poll()
    assert s.ts == 3.0 and s.metrics["total_allocations"] == 35793
    [e] = READER.linux_collector(str(tmp_path / "gone")).poll()
    assert e.kind == EventKind.ERROR and "gone" in e.text


def test_where_the_row_says_it_lives():
    """Linux and FreeBSD have it, illumos and zfs-fuse do not: the collectors and doctor's line agree."""
    assert READER.collector_for_host(platform="sunos5") is None
    assert READER.freebsd_collector().argv == ["sysctl", "-q", "kstat.zfs.misc.zio_stats"]
    assert READER.check_host(_host("SunOS")).detail == "illumos ZFS has no zio_stats kstat (OpenZFS 2.3.1+ has it)"
    assert set(ZIO_STATS.places) == {"linux", "freebsd"}
    linux = READER.check_host(_host("Linux"))
    if not linux.ok:  # a host without OpenZFS 2.3.1+
        assert linux.detail == "no /proc/spl/kstat/zfs/zio_stats (OpenZFS 2.3.1+ has it)"
