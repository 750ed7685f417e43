"""Captured arcstat / arcstat.py / arcstat.pl column output and arc_summary reports."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from zfsmon.model import Event, Kind, ParseError, Sample
from zfsmon.sources import arcstat_tool, detect

TOOL_FILES = fixture_files("arcstat_tools")
G, M = 1024.0 ** 3, 1024.0 ** 2


def _file(part: str):
    [p] = [p for p in TOOL_FILES if part in p.name]
    return p


def _rows(samples, kind=Kind.ARC):
    return [s for s in samples if isinstance(s, Sample) and s.entity.kind == kind]


def _guest(version: str, name: str) -> str:
    return (TEST_DATA / f"openzfs-{version}" / name).read_text()


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
    assert r.metrics["reads_per_s"] == 0 and r.metrics["demand_misses_per_s"] == 0
    # no reads in the interval: no miss % at all, in any class (arcstat printed 0s)
    assert not [k for k in r.metrics if k.endswith("_pct")]


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


# --- OpenZFS 2.1 / 2.3 captures from the guest (tests/data/openzfs-*/PROVENANCE.md) -------------------------

K = 1024.0


def _summary(version: str):
    reading = arcstat_tool.read_arc_summary(_guest(version, "arc_summary.txt"), 0.0, where="arc_summary.txt")
    return reading, {s.entity: s for s in reading.samples}


def test_arc_summary_2_3_whole_report():
    reading, by = _summary("2.3")
    assert [(e.kind, e.name) for e in by] == [(Kind.ARC, "arc"), (Kind.L2ARC, "l2arc"), (Kind.ZIL, "zil")]
    assert all(s.since_boot and s.ts == 0.0 for s in reading.samples)
    arc, l2, zil = (s.metrics for s in reading.samples)
    assert (len(arc), len(l2), len(zil)) == (74, 21, 7) and reading.values == 102
    assert reading.unread == [] and reading.notice("x") is None
    # ARC status / structural breakdown
    assert arc["memory_all_bytes"] == pytest.approx(3.8 * G) and arc["c_min"] == pytest.approx(122.3 * M)
    assert arc["c_max"] == 256 * M and arc["c"] == pytest.approx(182.5 * M) and arc["size"] == pytest.approx(109.1 * M)
    assert arc["memory_available_bytes"] == pytest.approx(3.3 * G)
    assert arc["compressed_size"] == pytest.approx(96.8 * M) and arc["bonus_size"] == pytest.approx(14.7 * K)
    assert arc["abd_chunk_waste_size"] == 11 * K and arc["hdr_size"] == pytest.approx(2.9 * M)
    assert arc["mfu_evictable_data"] == pytest.approx(60.8 * M) and arc["mru_ghost_metadata"] == 0
    assert "mfu_data_target" not in arc  # a target arc_summary computes, not a statistic
    # accesses: totals, I/O hits (2.2+), the demand/prefetch classes, prefetch predictions, states
    assert (arc["hits"], arc["iohits"], arc["misses"]) == (146.5e3, 1, 8.7e3)
    assert (arc["demand_data_hits"], arc["demand_data_iohits"], arc["demand_data_misses"]) == (35.7e3, 0, 8.6e3)
    assert (arc["demand_metadata_hits"], arc["demand_metadata_iohits"], arc["demand_metadata_misses"]) == \
        (110.8e3, 1, 80)
    assert (arc["prefetch_data_hits"], arc["prefetch_data_misses"]) == (0, 0)  # "n/a 0"
    assert (arc["prefetch_metadata_hits"], arc["prefetch_metadata_misses"]) == (6, 3)
    assert (arc["predictive_prefetch"], arc["demand_hit_predictive_prefetch"],
            arc["demand_iohit_predictive_prefetch"]) == (4, 2, 1)
    assert (arc["prescient_prefetch"], arc["demand_hit_prescient_prefetch"]) == (5, 5)
    assert (arc["mfu_hits"], arc["mru_hits"], arc["uncached_hits"]) == (124.3e3, 22.2e3, 0)
    assert arc["evict_l2_eligible_mru"] == pytest.approx(40.5 * M) and arc["hash_collisions"] == 901
    # L2ARC: status, size, breakdown (hit/miss), I/O
    assert l2["size"] == pytest.approx(95.6 * M) and l2["asize"] == pytest.approx(93.7 * M)
    assert l2["hdr_size"] == 0 and l2["mfu_asize"] == pytest.approx(63.8 * M)
    assert l2["bufc_metadata_asize"] == 112 * K and l2["free_on_write"] == 23
    assert (l2["hits"], l2["misses"]) == (0, 8.6e3)
    assert (l2["read_bytes"], l2["write_bytes"], l2["writes_sent"]) == (0, pytest.approx(263.8 * M), 156)
    assert zil == {"itx_count": 20.7e3, "commit_count": 4.3e3, "commit_writer_count": 4.3e3,
                   "itx_metaslab_slog_bytes": pytest.approx(165.5 * M), "itx_metaslab_slog_count": 2.6e3,
                   "itx_metaslab_normal_bytes": 123 * K, "itx_metaslab_normal_count": 1}


def test_arc_summary_2_1_wording_with_less_than_percentages():
    reading, by = _summary("2.1")
    arc, l2, zil = (s.metrics for s in reading.samples)
    assert [(e.kind, e.name) for e in by] == [(Kind.ARC, "arc"), (Kind.L2ARC, "l2arc"), (Kind.ZIL, "zil")]
    assert (len(arc), len(l2), len(zil)) == (39, 19, 7) and reading.unread == []
    # "Prefetch data:  < 0.1 %  7" (hits) and "Prefetch data:  0.1 %  5" (misses): the section tells them apart
    assert (arc["prefetch_data_hits"], arc["prefetch_data_misses"]) == (7, 5)
    assert (arc["prefetch_metadata_hits"], arc["prefetch_metadata_misses"]) == (1, 17)
    assert (arc["demand_data_hits"], arc["demand_data_misses"]) == (26.4e3, 8.6e3)
    assert (arc["hits"], arc["misses"]) == (122.0e3, 8.7e3)
    assert arc["size"] == pytest.approx(110.5 * M) and arc["c_max"] == 256 * M  # "Max size (high water): 2:1"
    assert arc["arc_meta_limit"] == 192 * M and arc["dnode_size"] == pytest.approx(162.8 * K)
    assert (arc["hash_elements_max"], arc["hash_elements"]) == (12.4e3, 12.4e3)
    assert (l2["hits"], l2["misses"], l2["feeds"], l2["writes_sent"]) == (0, 8.7e3, 438, 224)
    assert zil["itx_metaslab_slog_bytes"] == 128 * M and zil["itx_metaslab_normal_count"] == 0


def test_arc_summary_stray_lines_lose_nothing_silently():
    text = _guest("2.3", "arc_summary.txt")
    lines = text.splitlines()
    _, clean = _summary("2.3")
    # a shell's complaint between sections, and a stray indented line inside one
    at = lines.index("ARC hash breakdown:")
    mangled = lines[:at] + ["bash: warning: setlocale: LC_ALL: cannot change locale", "        junk: 12"] + lines[at:]
    at = lines.index("L2ARC I/O:") + 2
    mangled = mangled[:at + 2] + ["error: 1"] + mangled[at + 2:]
    reading = arcstat_tool.read_arc_summary("\n".join(mangled), 0.0)
    got = {s.entity: s.metrics for s in reading.samples}
    for ent, s in clean.items():
        # labels meaning one statistic anywhere are read even under the stray heading
        assert got[ent] == s.metrics
    assert [lab for _no, lab in reading.unread] == ["bash", "junk", "error"]
    note = reading.notice("arc_summary.txt")
    assert note.startswith("arc_summary.txt: arc_summary: 3 line(s) not read: 'bash' (line ")
    # through `zfsmon parse`: the notice is an event of the kind's parse, not a sample
    recs = detect.get("arcstat").parse("\n".join(mangled), "a.txt", None)
    [ev] = [r for r in recs if isinstance(r, Event)]
    assert ev.data["note"] == ev.text and "3 line(s) not read" in ev.text


def test_arc_summary_cut_short_says_so():
    text = _guest("2.3", "arc_summary.txt")
    cut = text[:text.index("ARC states breakdown")]
    reading = arcstat_tool.read_arc_summary(cut, 0.0)
    assert reading.values == 17  # 7 status + 9 structural (one of them the L2 header size) + 1 type
    assert "only 17 values found" in reading.notice("a")


def test_arcstat_interval_without_reads_has_no_hit_ratio():
    """arcstat prints 0 for the hit % of an interval without reads; zfsmon leaves it out (analysis/arc.py's rule)."""
    rows = _rows(arcstat_tool.parse_arcstat(_guest("2.3", "arcstat.txt"), 0.0))
    assert len(rows) == 3
    for r in rows:
        assert r.metrics["prefetch_reads_per_s"] == 0 and "prefetch_hit_pct" not in r.metrics  # "pread 0  ph% 0"
        assert r.metrics["demand_data_hit_pct"] == 100 and r.metrics["demand_metadata_hit_pct"] == 100
    assert [r.metrics["reads_per_s"] for r in rows] == [8, 227, 151]
    for version in ("2.1", "2.3"):
        s = arcstat_tool.parse_arcstat(_guest(version, "arcstat-a.txt"), 0.0)
        arc, l2 = _rows(s), _rows(s, Kind.L2ARC)
        assert len(arc) == len(l2) == 2
        for r in l2:  # l2read 0: "l2hit% 0  l2miss% 0" are not ratios
            assert r.metrics["reads_per_s"] == 0 and "hit_pct" not in r.metrics and "miss_pct" not in r.metrics
        for r in arc:  # prefetch: no accesses (phit + pmis = 0, or pread = 0); demand: 100 %
            assert not any(k.startswith("prefetch") and k.endswith("_pct") for k in r.metrics)
            assert r.metrics["hit_pct"] == 100 and r.metrics["miss_pct"] == 0 and r.metrics["demand_hit_pct"] == 100
    # the 2.1 default columns have no read count for dm%/pm%: a lone 0 % cannot be told from a 0 % of reads
    [first, *_] = _rows(arcstat_tool.parse_arcstat(_guest("2.1", "arcstat.txt"), 0.0))
    assert first.metrics["miss_pct"] == 0 and first.metrics["demand_miss_pct"] == 0


def test_forced_kind_must_fit_the_header():
    zilstat = _guest("2.3", "zilstat.txt")
    with pytest.raises(ParseError, match=r"not a header of arcstat: unknown column\(s\) cc/s, ic/s"):
        arcstat_tool.parse_arcstat(zilstat, 0.0)
    with pytest.raises(ParseError, match="not a header of zilstat"):
        arcstat_tool.parse_zilstat(_guest("2.3", "arcstat.txt"), 0.0)
    with pytest.raises(ParseError):
        detect.get("arcstat").parse(zilstat, "zilstat.txt", None)
    assert detect.detect(zilstat).name == "zilstat"
    assert detect.detect(_guest("2.3", "arcstat.txt")).name == "arcstat"


def test_zilstat_2_3():
    rows = arcstat_tool.parse_zilstat(_guest("2.3", "zilstat.txt"), 0.0)
    assert [(s.entity.kind, s.entity.name, s.ts, s.interval, s.since_boot) for s in rows] == [
        (Kind.ZIL, "zil", 18 * 3600 + 41 * 60 + 13, None, False), (Kind.ZIL, "zil", 18 * 3600 + 41 * 60 + 14, 1.0, False)]
    assert rows[0].metrics == {
        "commits_per_s": 5, "itx_per_s": 16, "itx_direct_per_s": 16, "itx_direct_bytes_per_s": 128 * K,
        "itx_indirect_per_s": 0, "itx_indirect_bytes_per_s": 0, "normal_itx_per_s": 0,
        "normal_write_bytes_per_s": 0, "slog_itx_per_s": 2, "slog_write_bytes_per_s": 136 * K}
    assert rows[1].metrics["commits_per_s"] == 3 and rows[1].metrics["slog_write_bytes_per_s"] == 104 * K
