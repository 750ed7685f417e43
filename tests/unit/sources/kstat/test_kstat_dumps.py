"""Saved Linux kstat dumps as `zfsmon parse`/`import` kinds (issue 12 items 9, 10): arcstats, zil and objset-*
dumps from the OpenZFS 2.1 / 2.3 guest (tests/data/openzfs-*/PROVENANCE.md), timed by the kstats' own clock."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA
from zfsmon.model import Event, Kind, ParseError, Sample
from zfsmon.sources import detect
from zfsmon.sources.kstat import text as kstat_text

#: header line of each capture: (crtime ns, snaptime ns)
HEADERS = {
    ("2.3", "arcstats.before"): (46573626290, 187728881310), ("2.3", "arcstats.after"): (46573626290, 244024354020),
    ("2.3", "zil.before"): (46595960660, 187790613110), ("2.3", "zil.after"): (46595960660, 244066377870),
    ("2.1", "arcstats.before"): (54145925580, 238041899540), ("2.1", "arcstats.after"): (54145925580, 292698687370),
}


def _text(version: str, name: str) -> str:
    return (TEST_DATA / f"openzfs-{version}" / name).read_text()


def _samples(records):
    return [r for r in records if isinstance(r, Sample)]


@pytest.mark.parametrize("version,name", sorted(HEADERS))
def test_dump_is_timed_by_snaptime_and_marked(version, name):
    text = _text(version, name)
    kind = "arcstats" if name.startswith("arcstats") else "zil-kstat"
    assert detect.detect(text).name == kind
    recs = detect.get(kind).parse(text, name, None)
    crtime, snap = HEADERS[(version, name)]
    [ev] = [r for r in recs if isinstance(r, Event)]
    assert ev.data[kstat_text.BOOT_CLOCK] == [crtime] and "note" not in ev.data  # a marker, not said to the user
    samples = _samples(recs)
    assert {s.ts for s in samples} == {snap / 1e9} and ev.ts == snap / 1e9
    assert kstat_text.boot_clock(recs) == {crtime}
    if kind == "zil-kstat":
        [s] = samples
        assert (s.entity.kind, s.entity.name) == (Kind.ZIL, "zil") and len(s.metrics) == (20 if version == "2.3" else 13)
    else:
        assert [(s.entity.kind, s.entity.name) for s in samples] == [(Kind.ARC, "arc"), (Kind.L2ARC, "l2arc")]


def test_zil_values_before_and_after_2_3():
    recs = detect.get("zil-kstat").parse(_text("2.3", "zil.before") + _text("2.3", "zil.after"), "zil.log", None)
    before, after = _samples(recs)
    assert (before.ts, after.ts) == (187.79061311, 244.06637787)
    assert (before.metrics["commit_count"], after.metrics["commit_count"]) == (5, 3871)
    assert after.metrics["itx_metaslab_slog_count"] == 2294 and after.metrics["commit_writer_count"] == 3871
    # a fixed interval given: dumps are numbered instead
    recs = detect.get("zil-kstat").parse(_text("2.3", "zil.before") + _text("2.3", "zil.after"), "zil.log", 10.0)
    assert [r.ts for r in recs] == [0.0, 10.0] and not any(isinstance(r, Event) for r in recs)


def test_separate_files_keep_their_gap():
    """Two dumps of one boot (same crtime) imported together: one shift, so the 56.3 s between them stay."""
    before = detect.get("arcstats").parse(_text("2.3", "arcstats.before"), "arcstats.before", None)
    after = detect.get("arcstats").parse(_text("2.3", "arcstats.after"), "arcstats.after", None)
    zil_after = detect.get("zil-kstat").parse(_text("2.3", "zil.after"), "zil.after", None)
    old = detect.get("arcstats").parse(_text("2.1", "arcstats.after"), "old", None)  # another boot
    mtime = 1_795_000_000.0  # both files checked out at the same moment: mtimes say nothing of the gap
    files = [("arcstats.before", before, mtime), ("arcstats.after", after, mtime), ("zil.after", zil_after, mtime),
             ("old", old, mtime - 5)]
    shifts, notes = kstat_text.boot_shifts(files)
    assert shifts["arcstats.before"] == shifts["arcstats.after"] == mtime - 244.02435402
    assert shifts["zil.after"] == mtime - 244.06637787  # other kstat, no shared crtime: placed by its own file
    assert shifts["old"] == mtime - 5 - 292.69868737
    placed = [s.ts + shifts[n] for n, recs, _m in files[:2] for s in _samples(recs)]
    assert placed[0] == pytest.approx(mtime - 56.29547271) and placed[-1] == pytest.approx(mtime)
    assert notes == [
        "arcstats.before, arcstats.after: time of day guessed: the last kstat dump is placed at arcstats.after's "
        "modification time (give --start to say when the first was taken)",
        "arcstats.before, arcstats.after: placed relative to each other by their kstat snaptime (one boot)",
        "zil.after: time of day guessed: the last kstat dump is placed at zil.after's modification time (give "
        "--start to say when the first was taken)",
        "old: time of day guessed: the last kstat dump is placed at old's modification time (give --start to say "
        "when the first was taken)"]
    shifts, notes = kstat_text.boot_shifts(files[:2], start=1_700_000_000.0)
    assert shifts["arcstats.before"] == shifts["arcstats.after"] == 1_700_000_000.0 - 187.72888131
    assert notes == ["arcstats.before, arcstats.after: placed relative to each other by their kstat snaptime "
                     "(one boot)"]


def test_objset_dumps_2_3():
    text = _text("2.3", "kstat/zguest.objset-0x36") + _text("2.3", "kstat/zguest.objset-0x98")
    assert detect.detect(text).name == "objset-kstat"
    recs = detect.get("objset-kstat").parse(text, "objset.log", None)
    root, db = _samples(recs)
    assert [(s.entity.kind, s.entity.pool, s.entity.name) for s in (root, db)] == [
        (Kind.DATASET, "zguest", "zguest"), (Kind.DATASET, "zguest", "zguest/db")]
    assert (root.ts, db.ts) == (404.15652369, 404.35845279)
    assert len(db.metrics) == 26 and db.metrics["writes"] == 20999
    assert kstat_text.boot_clock(recs) == {154899831880, 154939529470}


def test_forced_kind_that_does_not_fit_is_refused():
    objset = _text("2.3", "kstat/zguest.objset-0x36")
    with pytest.raises(ParseError, match=r"a dataset's objset kstat \(zguest\), not the zil kstat"):
        detect.get("zil-kstat").parse(objset, "o", None)
    with pytest.raises(ParseError, match="neither c nor c_max"):
        detect.get("arcstats").parse(_text("2.3", "zil.after"), "z", None)
    with pytest.raises(ParseError, match="no dataset_name"):
        detect.get("objset-kstat").parse(_text("2.3", "zil.after"), "z", None)


def test_import_keeps_the_gap_between_two_dump_files(tmp_path, capsys, monkeypatch):
    """`zfsmon import arcstats.before arcstats.after`: both files have one mtime here (a checkout), yet the
    recording keeps the 56.3 s between the dumps, and says what it guessed."""
    import os

    from zfsmon.cli import main
    from zfsmon.store import Recording

    files = []
    for name in ("arcstats.before", "arcstats.after", "zil.after"):
        p = tmp_path / name
        p.write_text(_text("2.3", name))
        os.utime(p, (1_795_000_000, 1_795_000_000))
        files.append(name)
    monkeypatch.chdir(tmp_path)
    rec = tmp_path / "a.zfsmon"
    assert main(["import", *files, "--into", str(rec)]) == 0
    err = capsys.readouterr().err
    assert ("note: arcstats.before, arcstats.after: placed relative to each other by their kstat snaptime "
            "(one boot)") in err
    assert "note: zil.after: time of day guessed: the last kstat dump is placed at zil.after's modification" in err
    with Recording.open(str(rec)) as r:
        arc = [s for s in r.samples() if s.entity.name == "arc"]
        assert [s.ts for s in arc] == [pytest.approx(1_795_000_000 - 56.29547271), 1_795_000_000]
        assert arc[1].metrics["hits"] - arc[0].metrics["hits"] > 0
        [z] = [s for s in r.samples() if s.entity.kind == Kind.ZIL]
        assert z.ts == 1_795_000_000
        assert not [e for e in r.events() if kstat_text.BOOT_CLOCK in e.data]  # the marker is not recorded
        assert "one boot" in r.meta["notes"]
    # --start: the first dump of the boot lands on it, the gap kept
    rec2 = tmp_path / "b.zfsmon"
    assert main(["import", *files[:2], "--into", str(rec2), "--start", "2026-11-23T18:00:00Z"]) == 0
    with Recording.open(str(rec2)) as r:
        arc = [s for s in r.samples() if s.entity.name == "arc"]
        assert [s.ts for s in arc] == [1795456800.0, pytest.approx(1795456800.0 + 56.29547271)]
