"""Captured arcstat / arcstat.py / arcstat.pl column output and arc_summary reports."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from zfsmon.model import Kind, ParseError
from zfsmon.sources import arcstat_tool

TOOL_FILES = fixture_files("arcstat_tools")
G, M = 1024.0 ** 3, 1024.0 ** 2


def _file(part: str):
    [p] = [p for p in TOOL_FILES if part in p.name]
    return p


def _rows(samples, kind=Kind.ARC):
    return [s for s in samples if s.entity.kind == kind]


@pytest.mark.parametrize("path", TOOL_FILES, ids=fixture_ids(TOOL_FILES))
def test_every_capture_parses(path, fixtures):
    samples = arcstat_tool.parse(path.read_text(), 0.0, where=path.name)
    arc = _rows(samples)
    assert arc
    if "arc_summary" in path.name:
        assert len(arc) == 1 and arc[0].since_boot
        m = arc[0].metrics
        assert m["c_min"] <= m["c"] <= m["c_max"] and m["hits"] > m["misses"] > 0
    else:
        data_lines = [ln for ln in path.read_text().splitlines() if ln.strip()][1:]
        assert len(arc) == len(data_lines)
        assert all(len(s.metrics) >= 1 for s in arc)
        assert [s.ts for s in arc] == sorted(s.ts for s in arc)


def test_esos_arcstat_pl_with_l2arc(fixtures):
    s = arcstat_tool.parse_arcstat(_file("esos").read_text(), 0.0)
    arc, l2 = _rows(s), _rows(s, Kind.L2ARC)
    assert len(arc) == len(l2) == 5
    assert arc[0].metrics == {"size": 15 * G, "hit_pct": 94.0}
    assert l2[0].metrics == {"size": 215 * G, "hit_pct": 40.0}
    assert [r.metrics["hit_pct"] for r in l2] == [40, 49, 34, 36, 38]
    assert arc[0].interval is None  # no time column: the interval is not known


def test_openzfs_2_0dev_negative_avail_and_decimal_counts(fixtures):
    arc = _rows(arcstat_tool.parse_arcstat(_file("2.0dev").read_text(), 0.0))
    assert len(arc) == 11
    assert arc[0].ts == 15 * 3600 + 3 * 60 + 2
    assert arc[1].interval == 1.0
    assert arc[0].metrics["misses_per_s"] == 39000
    assert arc[0].metrics["memory_available_bytes"] == 407 * M
    assert arc[2].metrics["memory_available_bytes"] == -177 * M
    assert arc[9].metrics["misses_per_s"] == pytest.approx(7200)
    assert arc[9].metrics["memory_free_bytes"] == pytest.approx(5.1 * G)
    assert arc[3].metrics["size"] == 113 * G and arc[3].metrics["c"] == 112 * G
    assert arc[0].metrics["can_grow"] == 0 and arc[0].metrics["arc_need_free"] == 0


def test_openzfs_2_2_default_columns(fixtures):
    arc = _rows(arcstat_tool.parse_arcstat(_file("2.2__arcstat_1").read_text(), 86400.0 * 3))
    assert len(arc) == 5
    r = arc[2].metrics
    assert arc[2].ts == 86400.0 * 3 + 9 * 3600 + 28 * 60 + 36
    assert r["reads_per_s"] == 777 and r["demand_data_reads_per_s"] == 612 and r["demand_data_hit_pct"] == 93
    assert r["demand_metadata_reads_per_s"] == 164 and r["demand_metadata_hit_pct"] == 100
    assert r["prefetch_reads_per_s"] == 1 and r["prefetch_hit_pct"] == 100
    assert r["size"] == 62 * G and r["memory_available_bytes"] == pytest.approx(1.8 * G)


def test_zol_0_6_5_arcstat_py(fixtures):
    [r] = _rows(arcstat_tool.parse_arcstat(_file("arcstat.py").read_text(), 0.0))
    assert r.metrics["size"] == 10 * G and r.metrics["c"] == 10 * G
    assert r.metrics["miss_pct"] == 0 and r.metrics["demand_misses_per_s"] == 0
    assert r.metrics["metadata_miss_pct"] == 0 and r.metrics["prefetch_miss_pct"] == 0


def test_linux_arc_summary(fixtures):
    s = {x.entity.kind: x.metrics for x in arcstat_tool.parse_arc_summary(_file("arc_summary_full").read_text())}
    arc, zil = s[Kind.ARC], s[Kind.ZIL]
    assert Kind.L2ARC not in s  # "L2ARC not detected, skipping section"
    assert arc["size"] == pytest.approx(62.0 * G) and arc["c"] == pytest.approx(62.9 * G)
    assert arc["c_min"] == pytest.approx(3.9 * G) and arc["c_max"] == pytest.approx(62.9 * G)
    assert arc["hits"] == pytest.approx(106.5e6) and arc["misses"] == pytest.approx(2.1e6)
    assert arc["mutex_miss"] == 122 and arc["evict_skip"] == 294 and arc["memory_throttle_count"] == 0
    assert arc["demand_data_hits"] == pytest.approx(12.0e6)
    assert arc["prefetch_data_misses"] == pytest.approx(1.8e6)
    assert arc["mfu_ghost_hits"] == pytest.approx(253.9e3)
    assert zil["commit_count"] == pytest.approx(594.7e3) and zil["itx_count"] == pytest.approx(3.8e6)
    assert zil["itx_metaslab_normal_bytes"] == pytest.approx(8.3 * G)
    assert zil["itx_metaslab_slog_count"] == 0


def test_freebsd_arc_summary_pl(fixtures):
    s = {x.entity.kind: x.metrics for x in arcstat_tool.parse_arc_summary(_file("arc_summary.pl").read_text())}
    arc, l2 = s[Kind.ARC], s[Kind.L2ARC]
    assert arc["hits"] == 1323915 and arc["misses"] == 186926
    assert arc["hits"] + arc["misses"] == 1510841  # "ARC Efficiency" total in the same report
    assert arc["demand_data_hits"] == 572538 and arc["prefetch_metadata_misses"] == 37730
    assert arc["mru_hits"] == 116301 and arc["mfu_ghost_hits"] == 94942
    assert arc["recycle_miss"] == 38344 and arc["deleted"] == 45407
    assert arc["size"] == pytest.approx(257.38 * M) and arc["c_max"] == 496 * M
    assert l2["hits"] == 72146 and l2["misses"] == 114764 and l2["feeds"] == 2850
    assert l2["size"] == pytest.approx(581.98 * M) and l2["abort_lowmem"] == 5
    assert "c" in arc and "c_min" in arc


def test_repeated_header_is_skipped(fixtures):
    text = _file("2.0dev").read_text()
    lines = text.splitlines()
    again = "\n".join(lines[:4] + lines[:1] + lines[4:])  # arcstat reprints its header on a terminal
    assert len(_rows(arcstat_tool.parse_arcstat(again, 0.0))) == 11


def test_bad_input_is_a_parse_error(fixtures):
    with pytest.raises(ParseError):
        arcstat_tool.parse_arcstat("hello world\n1 2\n", 0.0)
    text = _file("esos").read_text()
    with pytest.raises(ParseError) as ei:
        arcstat_tool.parse_arcstat(text + "  15G  215G  40\n", 0.0, where="esos")
    assert ei.value.line_no == 7
    with pytest.raises(ParseError):
        arcstat_tool.parse_arcstat(text.replace("94", "9x4", 1), 0.0)
    with pytest.raises(ParseError):
        arcstat_tool.parse_arc_summary("ZFS Subsystem Report\nnothing here\n")


@settings(max_examples=300)
@given(data=st.data())
def test_truncated_or_corrupted_tool_output_raises_only_parse_error(fixtures, data):
    path = data.draw(st.sampled_from(TOOL_FILES))
    text = path.read_text()
    cut = data.draw(st.integers(0, len(text)))
    pos = data.draw(st.integers(0, max(0, cut - 1)))
    junk = data.draw(st.text(max_size=6))
    for t in (text[:cut], text[:pos] + junk + text[pos + 1:cut]):
        try:
            arcstat_tool.parse(t, 0.0)
        except ParseError:
            pass
