"""The per-pool ``iostats`` kstat source, on the guest's OpenZFS 2.1/2.3 captures and the shared ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from tests.unit.mangle import variants
from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.detect import detect
from zfsmon.sources.kstat import pool_iostats, txgs

G23 = TEST_DATA / "openzfs-2.3" / "kstat" / "zguest.iostats"
G21 = TEST_DATA / "openzfs-2.1" / "kstat" / "zguest.iostats"
SHARED = [p for p in fixture_files("kstat_misc") if p.name.endswith("_iostats.txt")]


def test_openzfs_23_has_arc_and_direct_io_counts():
    s = pool_iostats.parse_iostats(G23.read_text(), 5.0, "zguest", str(G23))
    assert s.entity.key == "pool:zguest/zguest" and s.ts == 5.0 and s.source == "iostats"
    assert len(s.metrics) == 26
    assert s.metrics["arc_read_count"] == 8649 and s.metrics["arc_read_bytes"] == 71256576
    assert s.metrics["arc_write_count"] == 21852 and s.metrics["arc_write_bytes"] == 172088984
    assert s.metrics["direct_read_count"] == 0 and s.metrics["trim_bytes_written"] == 0
    assert all(metrics.is_counter(Kind.POOL, k) for k in s.metrics)


def test_openzfs_21_has_only_trim_counts():
    s = pool_iostats.parse_iostats(G21.read_text(), 5.0, "zguest")
    assert len(s.metrics) == 18 and "arc_read_count" not in s.metrics
    assert set(s.metrics) < {spec.name for spec in metrics.specs_for(Kind.POOL)}


@pytest.mark.parametrize("path", SHARED, ids=fixture_ids(SHARED))
def test_shared_captures(path, fixtures):
    s = pool_iostats.parse_iostats(path.read_text(), 1.0, "p", path.name)
    assert len(s.metrics) == 26 and all(metrics.is_counter(Kind.POOL, k) for k in s.metrics)


def test_counters_become_rates():
    a = pool_iostats.parse_iostats(G23.read_text(), 10.0, "zguest")
    text = G23.read_text().replace("arc_read_count                  4    8649",
                                   "arc_read_count                  4    9649")
    b = pool_iostats.parse_iostats(text, 15.0, "zguest")
    d = RateDeriver()
    d.update(a)
    got, events = d.update(b)
    assert events == [] and got is not None
    assert got.rates["arc_read_count"] == pytest.approx(200.0) and got.rates["arc_write_bytes"] == 0.0


def test_two_sources_on_one_pool_each_get_their_own_rates():
    """A Linux OpenZFS pool carries the iostats and the txgs kstats' counters, read in turn every interval; each
    source's rate follows its own previous reading (keyed by entity only, neither ever got a delta)."""
    text = G23.read_text()
    txg_rows = [s for s in txgs.parse_text((G23.parent / "zguest.txgs").read_text(), "zguest.txgs")
                if isinstance(s, Sample)]
    a = pool_iostats.parse_iostats(text, txg_rows[0].ts, "zguest")
    b = pool_iostats.parse_iostats(text.replace("arc_read_count                  4    8649",
                                                "arc_read_count                  4    9649"), txg_rows[1].ts, "zguest")
    assert a.entity.key == txg_rows[0].entity.key  # one entity, two sources
    d = RateDeriver()
    got = [d.update(s)[0] for s in (a, txg_rows[0], b, txg_rows[1])]
    assert got[0] is None and got[1] is None
    elapsed = txg_rows[1].ts - txg_rows[0].ts
    assert got[2] is not None and got[2].elapsed == pytest.approx(elapsed)
    assert got[2].deltas["arc_read_count"] == 1000.0 and set(got[2].deltas) == set(a.metrics)
    assert got[3] is not None and got[3].deltas["txgs_synced"] == 1.0
    assert got[3].deltas["txg_sync_time_ns"] == 1269500.0
    assert "arc_read_count" not in got[3].deltas


def test_not_an_iostats_kstat_and_truncated():
    with pytest.raises(ParseError, match="not an iostats"):
        pool_iostats.parse_iostats((TEST_DATA / "openzfs-2.3" / "kstat" / "zil").read_text(), 1.0, "p")
    lines = G23.read_text().splitlines()
    with pytest.raises(ParseError, match="announces 26"):
        pool_iostats.parse_iostats("\n".join(lines[:10]), 1.0, "p")


def test_collector_and_saved_text(tmp_path):
    root = tmp_path / "zfs"
    (root / "zguest").mkdir(parents=True)
    (root / "zguest" / "iostats").write_text(G23.read_text())
    (root / "old").mkdir()
    (root / "old" / "iostats").write_text("garbage\n")
    recs = pool_iostats.collector(str(root)).poll()
    assert [r.entity.name for r in recs if isinstance(r, Sample)] == ["zguest"]
    [err] = [r for r in recs if isinstance(r, Event)]
    assert err.kind == EventKind.ERROR and "old/iostats" in err.text
    assert detect(G23.read_text()).name == "iostats-kstat"
    [s] = pool_iostats.parse_text(G21.read_text(), "/tmp/zguest.iostats")
    assert s.entity.name == "zguest" and s.ts == 0.0


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([G23, G21]), st.data())
def test_mangled_input_only_raises_parse_error(path, data):
    for variant in variants(path.read_text(), data):
        try:
            pool_iostats.parse_iostats(variant, 1.0, "p")
        except ParseError:
            pass
