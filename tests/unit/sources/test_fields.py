"""Statistics a collector has no metrics row for, or that come or go while it runs: recorded, and said once.

On the guests' captures (tests/data/openzfs-2.4 is 2.4.4, openzfs-2.3 is 2.3.2, openzfs-2.1 is 2.1): an OpenZFS
2.4 host says nothing (every statistic of its kstats has a row), a module upgraded from 2.3 to 2.4 under a
running collector says the statistics 2.4 added (``l2_ndev``, ``zil_commit_crash_count``), one downgraded says
the ones that went, and a statistic without a row (the 2.4 kstat against the table without its rows) is said,
each once however many polls follow, while every poll still gives its samples.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Sequence

import pytest

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from zfsmon import metrics
from zfsmon.commands.parse import notes, parse_log_text
from zfsmon.metrics import COUNTER, GAUGE
from zfsmon.model import Event, EventKind, Kind, Record, Sample
from zfsmon.sources import arcstat_tool
from zfsmon.sources.fields import SHOWN, FieldWatch
from zfsmon.sources.kstat import arcstats, objset, pool_iostats, zil, zio_stats
from zfsmon.sources.spec import ParseOptions

V24, V23, V21 = (TEST_DATA / f"openzfs-{v}" / "kstat" for v in ("2.4", "2.3", "2.1"))
WHY = "(the module reloaded? another version?)"
POLLS = 20


def _said(records: Sequence[Record]) -> List[str]:
    return [r.text for r in records if isinstance(r, Event) and r.kind == EventKind.INFO]


def _samples(records: Sequence[Record]) -> List[Sample]:
    return [r for r in records if isinstance(r, Sample)]


def _kstat_tree(tmp_path: Path, version: Path) -> Path:
    """A /proc/spl/kstat/zfs-shaped tree of one guest's captures: the global kstats and pool zguest's."""
    root = tmp_path / "zfs"
    (root / "zguest").mkdir(parents=True)
    for name in ("arcstats", "zil", "zio_stats"):
        if (version / name).exists():
            shutil.copy(version / name, root / name)
    for cap in version.glob("zguest.*"):
        if cap.name.startswith(("zguest.objset-", "zguest.iostats")):
            shutil.copy(cap, root / "zguest" / cap.name.split(".", 1)[1])
    return root


def _collectors(root: Path) -> list:
    """The live collectors of the kstat families, on the tree: as `record` and `top` run them on Linux."""
    return [arcstats.READER.linux_collector(str(root / "arcstats"), clock=lambda: 1.0),
            zil.READER.linux_collector(str(root / "zil"), clock=lambda: 1.0),
            zio_stats.READER.linux_collector(str(root / "zio_stats"), clock=lambda: 1.0),
            pool_iostats.collector(str(root)), objset.ObjsetCollector(str(root), clock=lambda: 1.0)]


# --- the table knows OpenZFS 2.4 -----------------------------------------------------------------------------

def test_every_statistic_of_the_2_4_kstats_has_a_row():
    """The audit: each statistic of every kstat family's 2.4.4 capture has a metrics row (so a 2.4 host says
    nothing new); 2.4's two new ones with what OpenZFS's source makes them (arc.c sets l2_ndev to l2arc_ndev,
    the devices attached; zil.c bumps zil_commit_crash_count on each commit of a crashed ZIL)."""
    read = [*arcstats.parse_linux((V24 / "arcstats").read_text(), 0.0), *zil.parse_linux((V24 / "zil").read_text(), 0.0),
            *zio_stats.READER.parse_linux((V24 / "zio_stats").read_text(), 0.0),
            pool_iostats.parse_iostats((V24 / "zguest.iostats").read_text(), 0.0, "zguest"),
            *(objset.parse_objset(p.read_text(), 0.0, p.name) for p in sorted(V24.glob("zguest.objset-*")))]
    assert [len(s.metrics) for s in read] == [106, 42, 21, 4, 26, 27, 27]
    missing = [f"{s.entity.kind}.{m}" for s in read for m in s.metrics if metrics.lookup(s.entity.kind, m) is None]
    assert missing == []
    ndev = metrics.lookup(Kind.L2ARC, "ndev")
    assert ndev is not None and (ndev.unit, ndev.kind) == ("count", GAUGE) and "2.4" in ndev.help
    assert ndev.sources["linux"] == "/proc/spl/kstat/zfs/arcstats l2_ndev"
    for kind, name in ((Kind.ZIL, "commit_crash_count"), (Kind.DATASET, "zil_commit_crash_count")):
        spec = metrics.lookup(kind, name)
        assert spec is not None and spec.kind == COUNTER


def test_a_2_4_host_says_nothing_across_many_polls(tmp_path):
    root = _kstat_tree(tmp_path, V24)
    for c in _collectors(root):
        for _ in range(POLLS):
            recs = c.poll()
            assert _samples(recs) and not [r for r in recs if isinstance(r, Event)], (c.name, recs)


def test_the_2_4_captures_parse_without_notes():
    for name in ("arcstats", "zil", "zio_stats", "zguest.iostats", "zguest.objset-0x5b"):
        path = V24 / name
        records, _kind = parse_log_text(path.read_text(), str(path), None, 2.0, ParseOptions())
        assert _samples(records) and notes(records) == [], name


SHARED = [*fixture_files("arcstats"), *(p for p in fixture_files("kstat_misc")
                                      if p.name.endswith(("_zil.txt", "_iostats.txt")) or "_objset-" in p.name)]


@pytest.mark.parametrize("path", SHARED, ids=fixture_ids(SHARED))
def test_the_shared_kstat_captures_parse_without_notes(path):
    """ZoL 0.6.4 to OpenZFS 2.3, FreeBSD 14, illumos: the table has a row for each of their statistics too."""
    records, _kind = parse_log_text(path.read_text(), str(path), None, 2.0, ParseOptions())
    assert _samples(records) and notes(records) == []


# --- a module upgraded, downgraded, a statistic without a row -------------------------------------------------

def test_an_upgrade_from_2_3_to_2_4_says_the_new_statistics_once(tmp_path):
    root = _kstat_tree(tmp_path, V23)
    arc, zilc = _collectors(root)[:2]
    assert _said(arc.poll()) == [] and _said(zilc.poll()) == []
    for name in ("arcstats", "zil"):  # the module reloaded in 2.4 (the kernel's files are the 2.4.4 guest's)
        shutil.copy(V24 / name, root / name)
    said: List[str] = []
    for _ in range(POLLS):
        a, z = arc.poll(), zilc.poll()
        assert len(_samples(a)) == 2 and len(_samples(z)) == 1  # every poll reads on
        said += _said(a) + _said(z)
    assert said == [f"arcstats: 1 statistic an earlier reading did not have, read from now on {WHY}: l2arc ndev",
                    f"zil: 1 statistic an earlier reading did not have, read from now on {WHY}: "
                    "zil commit_crash_count"]
    assert _samples(arc.poll())[1].metrics["ndev"] == 1 and _samples(zilc.poll())[0].metrics["commit_crash_count"] == 0


def test_a_downgrade_says_the_statistics_gone_once_and_reads_on(tmp_path):
    """2.4 -> 2.3: l2_ndev gone; 2.4 -> 2.1: 28 ARC statistics gone (listed in part, all in the event's data),
    and 2.1's four that 2.4 lacks come back. A statistic is gone when two readings in a row lack it."""
    root = _kstat_tree(tmp_path, V24)
    arc = _collectors(root)[0]
    assert _said(arc.poll()) == []
    shutil.copy(V23 / "arcstats", root / "arcstats")
    assert _said(arc.poll()) == []  # one reading without it: a torn read, or gone
    events = [r for r in arc.poll() if isinstance(r, Event)]
    assert [e.text for e in events] == [f"arcstats: 1 statistic an earlier reading had is gone {WHY}; the others "
                                        "are read on: l2arc ndev"]
    assert events[0].source == "arcstats" and events[0].data["fields"] == ["l2arc.ndev"]
    assert all(_said(arc.poll()) == [] for _ in range(POLLS))
    shutil.copy(V21 / "arcstats", root / "arcstats")
    came = _said(arc.poll())
    assert came == [f"arcstats: 4 statistics an earlier reading did not have, read from now on {WHY}: "
                    "arc arc_meta_limit, arc_meta_max, arc_meta_min, p"]
    gone = [r for r in arc.poll() if isinstance(r, Event)]
    assert len(gone) == 1 and gone[0].data["change"] == "gone" and len(gone[0].data["fields"]) == 28
    assert gone[0].text == (f"arcstats: 28 statistics an earlier reading had are gone {WHY}; the others are read "
                            "on: arc anon_data, anon_metadata, demand_data_iohits, demand_iohit_predictive_prefetch, "
                            "demand_iohit_prescient_prefetch, demand_metadata_iohits, iohits, meta, mfu_data, "
                            f"mfu_ghost_data, mfu_ghost_metadata, mfu_metadata and {28 - SHOWN} more")
    assert all(_samples(arc.poll())[0].metrics["hits"] > 0 and not _said(arc.poll()) for _ in range(POLLS))


def test_a_statistic_without_a_row_is_recorded_and_said_once(tmp_path, monkeypatch):
    """The 2.4.4 kstats against the table as it was before their rows: recorded as gauges, said at the first
    poll, never again; the objset collector says it once for both datasets."""
    for key in ((Kind.L2ARC, "ndev"), (Kind.ZIL, "commit_crash_count"), (Kind.DATASET, "zil_commit_crash_count")):
        monkeypatch.delitem(metrics.TABLE, key)
    root = _kstat_tree(tmp_path, V24)
    arc, zilc, _zio, _io, obj = _collectors(root)
    first = {c.name: _said(c.poll()) for c in (arc, zilc, obj)}
    assert first == {
        "arcstats": ["arcstats: 1 statistic zfsmon has no row for, recorded as a gauge: l2arc ndev"],
        "zil": ["zil: 1 statistic zfsmon has no row for, recorded as a gauge: zil commit_crash_count"],
        "objset": ["objset: 1 statistic zfsmon has no row for, recorded as a gauge: dataset zil_commit_crash_count"]}
    for _ in range(POLLS):
        recs = arc.poll() + zilc.poll() + obj.poll()
        assert _said(recs) == []
        assert [s.metrics.get("ndev") for s in _samples(recs) if s.entity.kind == Kind.L2ARC] == [1]


def test_a_capture_across_an_upgrade_gives_its_notes():
    """`zfsmon parse` of a dump loop that spans a module reload (the 2.3.2 guest's arcstats, then the 2.4.4
    guest's): the new statistic is a note, at the first 2.4 dump."""
    text = (V23 / "arcstats").read_text() + (V24 / "arcstats").read_text()
    records, kind = parse_log_text(text, "arc.log", None, 10.0, ParseOptions())
    assert kind == "arcstats" and len(_samples(records)) == 4
    assert notes(records) == [f"arc.log: 1 statistic an earlier reading did not have, read from now on {WHY}: "
                              "l2arc ndev"]
    [ev] = [r for r in records if isinstance(r, Event) and r.data.get("change") == "new"]
    assert ev.ts == 10.0 and ev.source == "arcstats"


def test_the_arcstat_tools_columns_without_a_row_are_said_the_same_way(monkeypatch):
    """One wording: 2.4's `zarcstat -a` header read as if `abdsz` were a column the table does not have."""
    monkeypatch.setattr(arcstat_tool, "_ARCSTAT_KNOWN", arcstat_tool._ARCSTAT_KNOWN - {"abdsz"})
    path = TEST_DATA / "openzfs-2.4" / "arcstat-a.txt"
    records, _kind = parse_log_text(path.read_text(), str(path), None, 1.0, ParseOptions())
    assert notes(records) == ["arcstat-a.txt: 1 arcstat column zfsmon has no row for, recorded as a gauge: abdsz"]
    arc = [s for s in _samples(records) if s.entity.kind == Kind.ARC]
    assert arc and all("abdsz" in s.metrics for s in arc)


def test_the_watch_is_pure_and_keeps_one_set_for_many_datasets():
    """Thousands of datasets of one version share one set of names; a reading equal to the last says nothing."""
    watch = FieldWatch("objset")
    text = (V24 / "zguest.objset-0x5b").read_text()
    many = [objset.parse_objset(text.replace("zguest/db", f"zguest/db{i}"), 1.0) for i in range(500)]
    assert watch.check(many) == [] and watch.check(many) == []
    assert len({id(s) for s in watch._last.values()}) == 1 and len(watch._last) == 500


def test_freebsd_and_illumos_collectors_say_it_once_too(fixtures, monkeypatch):
    """The other shapes' collectors, on their captures (FreeBSD 14's sysctl, printed by `cat` in sysctl's place;
    illumos's `kstat -p` block fed to the collector's stream parser again and again), against the table without
    some of their rows (FreeBSD's OpenZFS 2.2 has no arc_meta_min, the illumos excerpt no uncached_hits)."""
    for key in ((Kind.ARC, "arc_meta_min"), (Kind.ARC, "uncached_hits"), (Kind.L2ARC, "feeds")):
        monkeypatch.delitem(metrics.TABLE, key)
    freebsd = arcstats.FreeBSDArcstatsCollector(clock=lambda: 1.0)
    freebsd.argv = ["cat", str(fixtures / "arcstats" / "freebsd-14.0-RC2__sysctl_kstat.zfs.misc.arcstats.txt")]
    said = [_said(freebsd.poll()) for _ in range(POLLS)]
    assert said[0] == ["arcstats: 2 statistics zfsmon has no row for, recorded as gauges: arc uncached_hits; "
                       "l2arc feeds"] and not any(said[1:])
    lines = (fixtures / "arcstats" / "illumos-2015__kstat_-p_zfs_TRUNCATED-first27lines.txt").read_text().splitlines()
    parser = arcstats.IllumosArcstatsCollector(5).parser
    out: List[Record] = []
    for i in range(POLLS):
        for ln in lines:
            out += parser.feed(ln, 1000.0 + 5 * i)
    assert len(_samples(out)) == POLLS - 1  # each block closes when the next begins
    assert _said(out) == ["arcstats: 1 statistic zfsmon has no row for, recorded as a gauge: arc arc_meta_min"]
