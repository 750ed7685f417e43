"""ARC / L2ARC interval analysis: hit ratios from counter deltas, iohits, resets, and the metric table's coverage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files
from zfsmon import metrics
from zfsmon.analysis.arc import derive_arc, derive_l2arc
from zfsmon.analysis.rates import ArcAnalyzer
from zfsmon.metrics.arc import ARCSTAT_COLUMNS, DEFAULT_COLUMNS, L2_COLUMNS, ZIL_COLUMNS, Column
from zfsmon.model import EventKind, Kind, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.views import arcstat_text


def _capture(part: str):
    [p] = [p for p in fixture_files("arcstats") if part in p.name]
    text = p.read_text()
    parse = arcstats.parse_freebsd if p.name.startswith("freebsd") else arcstats.parse_linux
    return {s.entity.kind: s for s in parse(text, 1000.0)}


def test_since_boot_ratios_of_a_2_3_capture(fixtures):
    """Treating the cumulative counters as one long interval gives the since-boot ratios, with iohits."""
    m = _capture("openzfs-2.3")[Kind.ARC].metrics
    d = derive_arc(m, 1.0, m)
    reads = 33266704081 + 1992434 + 30882817
    assert d["reads_per_s"] == reads
    assert d["hit_pct"] == pytest.approx(100.0 * 33266704081 / reads)
    assert d["iohit_pct"] == pytest.approx(100.0 * 1992434 / reads)
    assert d["hit_pct"] + d["iohit_pct"] + d["miss_pct"] == pytest.approx(100.0)
    dd = 5821681723 + 129861 + 3518537
    assert d["demand_data_hit_pct"] == pytest.approx(100.0 * 5821681723 / dd)
    pf_hits = 1263505 + 31472127
    pf = pf_hits + 18697 + 1491414 + 7231097 + 15173492
    assert d["prefetch_hit_pct"] == pytest.approx(100.0 * pf_hits / pf)
    assert d["mfu_ghost_hits_per_s"] == 2111782
    assert d["size_pct_of_c"] == pytest.approx(100.0 * m["size"] / m["c"])


def test_ratios_without_iohits_on_old_zfs(fixtures):
    m = _capture("zol-0.6.5")[Kind.ARC].metrics
    d = derive_arc(m, 10.0, m)
    assert "iohit_pct" not in d and "iohits_per_s" not in d
    assert d["hit_pct"] == pytest.approx(100.0 * 8772612 / (8772612 + 604635))
    assert d["reads_per_s"] == pytest.approx((8772612 + 604635) / 10.0)
    assert d["metadata_hit_pct"] == pytest.approx(100.0 * (1464353 + 83612) / (1464353 + 83612 + 498170 + 16071))


def test_interval_rates_from_two_readings(fixtures):
    k = _capture("freebsd-14.0")
    arc, l2 = k[Kind.ARC], k[Kind.L2ARC]
    later = dict(arc.metrics, hits=arc.metrics["hits"] + 900, misses=arc.metrics["misses"] + 50,
                 iohits=arc.metrics["iohits"] + 50, memory_throttle_count=3)
    l2later = dict(l2.metrics, hits=30, misses=10, read_bytes=4 << 20, write_bytes=8 << 20)
    an = ArcAnalyzer()
    assert an.update(arc) == (None, []) and an.update(l2) == (None, [])
    d, ev = an.update(Sample(1002.0, arc.entity, later, source=arc.source))
    assert ev == [] and d.interval == 2.0
    assert d.metrics["hit_pct"] == 90.0 and d.metrics["iohit_pct"] == 5.0 and d.metrics["reads_per_s"] == 500.0
    assert d.metrics["memory_throttle_per_s"] == 1.5
    assert "demand_data_hit_pct" not in d.metrics  # no demand data access in the interval: no ratio, not 0
    assert d.metrics["demand_data_reads_per_s"] == 0.0
    d2, _ = an.update(Sample(1002.0, l2.entity, l2later, source=l2.source))
    assert d2.metrics["hit_pct"] == 75.0 and d2.metrics["reads_per_s"] == 20.0
    assert d2.metrics["read_bytes_per_s"] == 2 << 20 and d2.metrics["write_bytes_per_s"] == 4 << 20


def test_l2arc_without_lookups_has_no_hit_ratio():
    d = derive_l2arc({"hits": 0.0, "misses": 0.0}, 1.0, {})
    assert "hit_pct" not in d and d["reads_per_s"] == 0.0


def test_every_derived_metric_and_column_is_in_the_table(fixtures):
    for part in ("openzfs-2.3", "zol-0.6.4", "freebsd-14.0"):
        k = _capture(part)
        an = ArcAnalyzer()
        for s in k.values():
            an.update(s)
        for s in k.values():
            bumped = {n: v + 1 for n, v in s.metrics.items()}
            d, _ = an.update(Sample(s.ts + 1, s.entity, bumped, source=s.source))
            for name in d.metrics:
                spec = metrics.lookup(s.entity.kind, name)
                assert spec is not None and spec.kind == metrics.GAUGE, (s.entity.kind, name)
    for col in ARCSTAT_COLUMNS.values():
        if col.metric:
            assert metrics.lookup(col.kind, col.metric) is not None, col.name
    for n in DEFAULT_COLUMNS + L2_COLUMNS + ZIL_COLUMNS:
        assert n in ARCSTAT_COLUMNS


def test_view_formats_a_row(fixtures):
    cols = arcstat_text.select_columns("hit%,ddh%,size,l2hit%,l2size,zcmt")
    values = {Kind.ARC: {"hit_pct": 93.6, "size": 62 * 1024.0 ** 3}, Kind.L2ARC: {"size": 1536.0 * 1024 ** 2}}
    line = arcstat_text.row_line(cols, 0.0, values)
    assert line.split() == ["94", "-", "62G", "-", "1.50G", "-"]
    assert arcstat_text.csv_row(cols, 0.0, values) == "93.60,,66571993088,,1610612736,"
    with pytest.raises(ValueError, match="unknown field nope"):
        arcstat_text.select_columns("hit%,nope")
    assert isinstance(cols[0], Column)


_counter = st.integers(0, 2 ** 40)


@settings(max_examples=300)
@given(seq=st.lists(st.tuples(_counter, _counter, _counter, _counter, st.floats(0.001, 100.0)), min_size=2,
                    max_size=8))
def test_resets_never_give_negative_rates_and_ratios_stay_in_range(seq):
    an = ArcAnalyzer()
    ts = 0.0
    for hits, misses, l2h, l2m, dt in seq:
        ts += dt
        for ent, m in ((arcstats.ARC, {"hits": hits, "misses": misses, "size": 5.0, "c": 10.0}),
                       (arcstats.L2ARC, {"hits": l2h, "misses": l2m})):
            d, events = an.update(Sample(ts, ent, m))
            assert all(e.kind == EventKind.RESET for e in events)
            if d is None:
                continue
            for name, v in d.metrics.items():
                assert v >= 0, name
                if name.endswith("_pct") and name != "size_pct_of_c":
                    assert v <= 100.0 + 1e-9, name
