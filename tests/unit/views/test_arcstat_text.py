"""`zfsmon arcstat`'s default L2ARC columns, decided as OpenZFS 2.4's zarcstat decides (cmd/zarcstat.in at zfs-2.4.4:
``if cur.get("l2_ndev") or cur.get("l2_size")``), on the guests' and the shared arcstats captures."""

from __future__ import annotations

from tests.conftest import TEST_DATA, fixture_files
from zfsmon.metrics.arc import L2_COLUMNS
from zfsmon.sources.kstat import arcstats
from zfsmon.views import arcstat_text


def _levels(text: str) -> dict:
    return {s.entity.kind: s.metrics for s in arcstats.parse_linux(text, 0.0)}


def _names(levels: dict) -> list:
    return [c.name for c in arcstat_text.select_columns(None, l2=arcstat_text.has_l2(levels))]


def test_2_4_counts_its_cache_device_and_2_3_has_l2arc_bytes():
    for version in ("2.4", "2.3"):
        levels = _levels((TEST_DATA / f"openzfs-{version}" / "kstat" / "arcstats").read_text())
        assert arcstat_text.has_l2(levels) and _names(levels)[-len(L2_COLUMNS):] == list(L2_COLUMNS), version


def test_no_l2arc_no_l2arc_columns(fixtures):
    """ZoL 0.6.5's host had no cache device: l2_size 0 and no l2_ndev."""
    [path] = [p for p in fixture_files("arcstats") if "zol-0.6.5" in p.name]
    levels = _levels(path.read_text())
    assert "ndev" not in levels[arcstats.L2ARC.kind] and levels[arcstats.L2ARC.kind]["size"] == 0
    assert not arcstat_text.has_l2(levels) and not set(_names(levels)) & set(L2_COLUMNS)
    assert not arcstat_text.has_l2({})
