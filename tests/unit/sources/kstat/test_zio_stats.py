"""The zio_stats kstat (OpenZFS 2.3.1+): block allocations and gang writes, a source made from its kstat table row.

Real captures: the OpenZFS 2.3 guest's (tests/data/openzfs-2.3) and the OpenZFS 2.4.4 guest's under an 8k random
fio load (tests/data/openzfs-2.4, PROVENANCE.md there).
"""

from __future__ import annotations

import argparse
import csv
import os
from typing import List

import pytest

from tests.conftest import TEST_DATA
from zfsmon import host as hostmod
from zfsmon import metrics
from zfsmon.cli import main
from zfsmon.commands import doctor
from zfsmon.host import Host
from zfsmon.metrics import COUNTER
from zfsmon.metrics.kstats import ZIO_STATS
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources import detect, registry
from zfsmon.sources.kstat import reader as kstat_reader
from zfsmon.sources.kstat import zio_stats
from zfsmon.sources.kstat.text import BOOT_CLOCK
from zfsmon.store import Recorder
from zfsmon.views.csv_export import KIND_FILE

CAPTURE_23 = TEST_DATA / "openzfs-2.3" / "kstat" / "zio_stats"
CAPTURE_24 = TEST_DATA / "openzfs-2.4" / "kstat" / "zio_stats"
READER = zio_stats.READER
T0 = 1_795_000_000.0


def _host(system: str) -> Host:
    return Host(system=system, release="test", hostname="test", flavour="none", zfs_version="")


def test_the_2_3_capture_is_one_zio_sample_of_four_counters():
    [s] = READER.parse_linux(CAPTURE_23.read_text(), 5.0)
    assert s.entity.kind == Kind.ZIO and s.entity.key == "zio:zio" and s.source == "zio_stats" and s.ts == 5.0
    assert s.metrics == {"total_allocations": 35793, "alloc_class_fallbacks": 0, "gang_writes": 0,
                         "gang_multilevel": 0}
    specs = {m.name: m for m in ZIO_STATS.specs()}
    assert {m.name: m for m in metrics.specs_for(Kind.ZIO)} == specs  # the metrics table's zio rows are the row's
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


def test_it_is_a_source_of_its_own_kind_and_text_kind():
    """``zfsmon record zio_stats`` names it, ``zfsmon parse`` reads its dumps, and it feeds the zio entity."""
    rec = registry.record("zio_stats")
    assert rec is zio_stats.SOURCE and rec.name == ZIO_STATS.name and rec.feeds == (Kind.ZIO,) and rec.family == "zio"
    assert "zio_stats" in registry.NAMES
    assert [k.name for k in rec.kinds] == ["zio-kstat"]
    assert detect.detect(CAPTURE_24.read_text()).name == "zio-kstat"


def test_saved_dumps_are_timed_by_the_kstat_snaptime():
    text = CAPTURE_23.read_text()
    snaptime_s = int(text.split()[6]) / 1e9
    info, *samples = detect.get("zio-kstat").parse(text + text, "zio.log", None)
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


def test_doctors_line_on_linux_says_where_it_is_or_why_not(tmp_path, monkeypatch, capsys):
    """Present: its path; absent: the release that has it, or on a zfs-fuse host that zfs-fuse has none."""
    kstat = tmp_path / "zio_stats"
    monkeypatch.setattr(READER, "linux", str(kstat))
    monkeypatch.setattr(kstat_reader, "FUSE_ROOT", str(tmp_path / "zfs-kstat"))
    monkeypatch.setattr(hostmod, "probe", lambda: _host("Linux"))
    assert (READER.check_host(_host("Linux")).ok, READER.check_host(_host("Linux")).detail) == (
        False, f"no {kstat} (OpenZFS 2.3.1+ has it)")
    (tmp_path / "zfs-kstat").mkdir()
    assert READER.check_host(_host("Linux")).detail == "zfs-fuse (pool v23) has no zio_stats kstat"
    kstat.write_text(CAPTURE_24.read_text())
    doctor.run(argparse.Namespace(json=False))
    [line] = [ln for ln in capsys.readouterr().out.splitlines() if " zio_stats " in ln]
    assert line.split() == ["ok", "source", "zio_stats", str(kstat)]


def _two_readings() -> List[Sample]:
    """The 2.4.4 guest's reading, then the 2.3 guest's (923 more allocations) as the next one, 10 s later."""
    first = READER.parse_linux(CAPTURE_24.read_text(), T0)
    second = READER.parse_linux(CAPTURE_23.read_text(), T0 + 10.0)
    return [*first, *second]


def test_export_csv_of_a_recording_with_zio_samples_writes_zio_csv(tmp_path):
    """Every entity kind has its CSV file; zio.csv holds each reading with its counters' deltas and rates."""
    assert set(KIND_FILE) == set(Kind)
    path = str(tmp_path / "r.zfsmon")
    with Recorder(path, {"host": "guest", "interval": 10}) as rec:
        for s in _two_readings():
            rec.write([s])
    out = tmp_path / "out"
    assert main(["export", path, "--csv", str(out)]) == 0
    assert "zio.csv" in os.listdir(out)
    with open(out / "zio.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["kind"], r["name"], r["source"], r["total_allocations"]) for r in rows] == [
        ("zio", "zio", "zio_stats", "34870"), ("zio", "zio", "zio_stats", "35793")]
    assert rows[0]["total_allocations_delta"] == "" and rows[1]["total_allocations_delta"] == "923"
    assert float(rows[1]["total_allocations_per_s"]) == pytest.approx(92.3)
    assert rows[1]["gang_writes"] == rows[1]["gang_writes_delta"] == rows[1]["gang_writes_per_s"] == "0"
    assert {c for c in rows[0] if c.startswith("alloc_class")} == {
        "alloc_class_fallbacks", "alloc_class_fallbacks_delta", "alloc_class_fallbacks_per_s"}
