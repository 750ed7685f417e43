"""The ZIL kstat: ZoL 0.7 (13 statistics) and OpenZFS 2.3 (20) captures, and the rates derived from it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from zfsmon import metrics
from zfsmon.analysis.rates import ArcAnalyzer
from zfsmon.model import EventKind, Kind, ParseError, Sample
from zfsmon.sources.kstat import zil

ZIL_FILES = [p for p in fixture_files("kstat_misc") if p.name.endswith("_zil.txt")]


def _read(part: str) -> Sample:
    [path] = [p for p in ZIL_FILES if part in p.name]
    [s] = zil.parse_linux(path.read_text(), 7.0, where=path.name)
    return s


@pytest.mark.parametrize("path", ZIL_FILES, ids=fixture_ids(ZIL_FILES))
def test_every_zil_capture(path, fixtures):
    [s] = zil.parse_linux(path.read_text(), 1.0)
    rows = len([ln for ln in path.read_text().splitlines() if ln.strip()]) - 2
    assert s.entity.key == "zil:zil"
    assert len(s.metrics) == rows
    assert not any(k.startswith("zil_") for k in s.metrics)
    for key in ("commit_count", "commit_writer_count", "itx_count", "itx_metaslab_slog_count"):
        assert key in s.metrics
    assert all(metrics.is_counter(Kind.ZIL, k) for k in s.metrics)


def test_zol_0_7_field_set(fixtures):
    s = _read("zol-0.7")
    assert len(s.metrics) == 13
    assert s.metrics["commit_count"] == 10
    assert s.metrics["itx_needcopy_bytes"] == 18446744073709537686  # a wrapped counter, exactly as the kernel had it
    assert type(s.metrics["itx_needcopy_bytes"]) is int
    assert "commit_error_count" not in s.metrics


def test_openzfs_2_3_field_set(fixtures):
    s = _read("openzfs-2.3")
    assert len(s.metrics) == 20
    assert s.metrics["commit_count"] == 52922839
    assert s.metrics["itx_metaslab_normal_alloc"] == 743618220032
    assert s.metrics["commit_stall_count"] == 0


def test_rates_from_two_readings(fixtures):
    a = _read("openzfs-2.3")
    later = dict(a.metrics)
    later.update(commit_count=a.metrics["commit_count"] + 500, itx_count=a.metrics["itx_count"] + 2000,
                 itx_metaslab_normal_count=a.metrics["itx_metaslab_normal_count"] + 100,
                 itx_indirect_bytes=a.metrics["itx_indirect_bytes"] + (1 << 20))
    an = ArcAnalyzer()
    assert an.update(a) == (None, [])
    d, ev = an.update(Sample(a.ts + 5.0, a.entity, later, source=a.source))
    assert ev == [] and d is not None and d.interval == 5.0
    assert d.metrics["commits_per_s"] == 100.0
    assert d.metrics["itx_per_s"] == 400.0
    assert d.metrics["normal_itx_per_s"] == 20.0
    assert d.metrics["slog_itx_per_s"] == 0.0
    assert d.metrics["slog_pct"] == 0.0
    assert d.metrics["itx_bytes_per_s"] == pytest.approx((1 << 20) / 5.0)
    for name in d.metrics:
        assert metrics.lookup(Kind.ZIL, name) is not None, name


def test_counter_reset_gives_event_not_negative_rate(fixtures):
    a = _read("openzfs-2.3")
    b = _read("zol-0.7")  # much smaller counters: as after a module reload
    an = ArcAnalyzer()
    an.update(a)
    d, ev = an.update(Sample(a.ts + 1, a.entity, b.metrics, source=a.source))
    assert d is None and len(ev) == 1 and ev[0].kind == EventKind.RESET


def test_illumos_capture_without_zil_is_a_clear_error(fixtures):
    [arc] = [p for p in fixture_files("arcstats") if p.name.startswith("illumos")]
    with pytest.raises(ParseError, match="no zfs:\\*:zil"):
        zil.parse_illumos(arc.read_text(), 0.0)


def test_arcstats_text_is_not_zil(fixtures):
    [arc] = [p for p in fixture_files("arcstats") if "0.6.5" in p.name]
    with pytest.raises(ParseError, match="no ZIL statistics"):
        zil.parse_linux(arc.read_text(), 0.0)


def test_collectors(tmp_path, fixtures):
    f = tmp_path / "zil"
    f.write_text(ZIL_FILES[0].read_text())
    [s] = zil.LinuxZilCollector(str(f), clock=lambda: 3.0).poll()
    assert s.ts == 3.0 and "commit_count" in s.metrics
    [e] = zil.LinuxZilCollector(str(tmp_path / "missing")).poll()
    assert e.kind == EventKind.ERROR
    assert zil.collector_for_host(linux_path="/nonexistent", platform="linux") is None  # zfs-fuse: no ZIL kstat
    assert zil.IllumosZilCollector(2).argv == ["kstat", "-p", "zfs:0:zil", "2"]


@settings(max_examples=200)
@given(data=st.data())
def test_corrupted_zil_raises_only_parse_error(data):
    path = data.draw(st.sampled_from(ZIL_FILES))
    text = path.read_text()
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(max_size=8))
    for t in (text[:cut], text[:cut] + junk + text[cut:]):
        for parse in (zil.parse_linux, zil.parse_freebsd, zil.parse_illumos):
            try:
                parse(t, 0.0)
            except ParseError:
                pass
