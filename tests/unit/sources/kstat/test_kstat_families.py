"""The kstat table (zfsmon/metrics/kstats.py): each row is a source, and its readers and provenance follow the row."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA
from zfsmon import metrics
from zfsmon.host import Host
from zfsmon.metrics.kstats import FREEBSD, FUSE, ILLUMOS, KSTATS, LINUX
from zfsmon.model import Kind
from zfsmon.sources import detect, registry
from zfsmon.sources.kstat import arcstats, zil, zio_stats
from zfsmon.sources.kstat.reader import KstatReader

#: the rows a source reads, with its reader
READERS = {"arcstats": arcstats.READER, "zil": zil.READER, "zio_stats": zio_stats.READER}
#: one real Linux capture of each (OpenZFS 2.3 guest) and the text kind that reads it
CAPTURES = {"arcstats": ("arcstats.after", "arcstats"), "zil": ("zil.after", "zil-kstat"),
            "zio_stats": ("kstat/zio_stats", "zio-kstat")}


def _host(system: str) -> Host:
    return Host(system=system, release="test", hostname="test", flavour="none", zfs_version="")


def test_every_row_is_a_source_of_its_name_family_and_entity():
    sources = {s.name: s for s in registry.SOURCES}
    assert set(KSTATS) == set(READERS) and set(KSTATS) <= set(sources)
    for name in READERS:
        fam = KSTATS[name]
        src = sources[name]
        assert src.family == fam.metrics and fam.kind in src.feeds
        assert fam.metrics in metrics.FAMILIES
        assert READERS[name].family is fam


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_real_capture_is_read_by_its_row(name):
    """Detection, the Linux parser and the metrics table agree on each family's own capture."""
    fam, reader = KSTATS[name], READERS[name]
    path, kind = CAPTURES[name]
    text = (TEST_DATA / "openzfs-2.3" / path).read_text()
    assert detect.detect(text).name == kind
    samples = reader.parse_linux(text, 1.0)
    assert samples[0].entity.kind == fam.kind and samples[0].entity.name == fam.entity
    assert all(s.source == name for s in samples)
    rows = {(s.entity.kind, m) for s in samples for m in s.metrics}
    described = {r for r in rows if metrics.lookup(*r) is not None}
    assert described, f"no statistic of {name} has a metrics row"
    for kind, metric in described:
        provenance = metrics.lookup(kind, metric).sources
        assert provenance[LINUX].startswith(fam.place(LINUX) + " ")


def test_each_platform_reader_exists_where_the_row_places_it():
    for fam in KSTATS.values():
        reader = KstatReader(fam)
        bsd = reader.collector_for_host(platform="freebsd14")
        sun = reader.collector_for_host(interval=3, platform="sunos5")
        assert (bsd is not None) == (FREEBSD in fam.places)
        assert (sun is not None) == (ILLUMOS in fam.places)
        if bsd is not None:
            assert bsd.argv == ["sysctl", "-q", fam.place(FREEBSD)]
        if sun is not None:
            assert sun.argv == ["kstat", "-p", fam.place(ILLUMOS), "3"]
        assert (reader.fuse_collector().directory if FUSE in fam.places else None) == (fam.place(FUSE) or None)
        plan9 = reader.check_host(_host("Plan9"))
        assert not plan9.ok and plan9.detail == f"no known {fam.label} kstats on Plan9"


def test_the_zil_row_drops_its_prefix_and_the_arc_row_splits_l2():
    zil_text = (TEST_DATA / "openzfs-2.3" / "zil.after").read_text()
    [z] = zil.READER.parse_linux(zil_text, 0.0)
    assert "commit_count" in z.metrics and not any(k.startswith("zil_") for k in z.metrics)
    arc, l2 = arcstats.READER.parse_linux((TEST_DATA / "openzfs-2.3" / "arcstats.after").read_text(), 0.0)
    assert arc.entity.kind == Kind.ARC and l2.entity.kind == Kind.L2ARC
    assert "hits" in l2.metrics and not any(k.startswith("l2_") for k in arc.metrics)
