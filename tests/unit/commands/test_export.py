"""Export (CSV per kind, long CSV, JSON lines), info and import through the real CLI, against what went in."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tests.conftest import fixture_files, fixture_ids
from tests.unit.store_data import POOL, T0, records, samples_of
from zfsmon.cli import main
from zfsmon.model import Kind, ParseError, Sample
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.store import Recorder, Recording
from zfsmon.views.csv_export import iso, neutralise, num


@pytest.fixture
def recording(tmp_path):
    path = str(tmp_path / "r.zfsmon")
    with Recorder(path, {"host": "h1", "interval": 1}) as rec:
        for b in records(15):
            rec.write(b)
    return path


def _csv(path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_per_kind_csv_holds_every_value(recording, tmp_path):
    out = tmp_path / "out"
    assert main(["export", recording, "--csv", str(out)]) == 0
    assert sorted(os.listdir(out)) == [".zfsmon-export", "arc.csv", "events.csv", "meta.csv", "pool.csv", "vdev.csv",
                                    "workload.csv"]
    given = samples_of(records(15))
    for fname, kinds in (("pool.csv", {Kind.POOL}), ("vdev.csv", {Kind.VDEV, Kind.LEAF}), ("arc.csv", {Kind.ARC}),
                         ("workload.csv", {Kind.WORKLOAD})):
        rows = _csv(out / fname)
        want = [s for s in given if s.entity.kind in kinds]
        assert len(rows) == len(want)
        by_key = {(float(r["epoch"]), r["kind"], r["name"]): r for r in rows}
        for s in want:
            r = by_key[(s.ts, s.entity.kind.value, s.entity.name)]
            assert r["time"] == iso(s.ts) and r["pool"] == s.entity.pool
            assert r["role"] == (s.entity.role.value if s.entity.role else "") and r["parent"] == s.entity.parent
            assert r["since_boot"] == ("1" if s.since_boot else "0") and r["source"] == s.source
            for m, v in s.metrics.items():
                assert float(r[m]) == pytest.approx(v, rel=1e-15), (fname, m)
                assert r[m] == num(v)


def test_counters_get_deltas_and_rates_and_resets_are_blank(recording, tmp_path):
    out = tmp_path / "out"
    main(["export", recording, "--csv", str(out)])
    arc = _csv(out / "arc.csv")
    assert [r["hits_delta"] for r in arc[:3]] == ["", "250", "250"]
    assert arc[1]["hits_per_s"] == "250"
    assert arc[12]["hits"] == "19" and arc[12]["hits_per_s"] == "" and arc[13]["hits_per_s"] == "1"
    assert "size_per_s" not in arc[0]  # gauges have no rate
    assert arc[0]["misses"] == str(2 ** 63)
    vdev = _csv(out / "vdev.csv")
    sde = [r for r in vdev if r["name"] == "sde"]
    assert [r["role"] for r in sde[9:11]] == ["log", "data"]


def test_events_csv_neutralises_formulas(recording, tmp_path):
    out = tmp_path / "out"
    main(["export", recording, "--csv", str(out)])
    ev = _csv(out / "events.csv")
    kinds = [e["kind"] for e in ev]
    assert kinds.count("topology") == 3 and kinds.count("mark") == 1 and kinds.count("error") == 1
    err = next(e for e in ev if e["kind"] == "error")
    assert err["text"] == "'=cmd|' /C calc'!A0" and err["epoch"] == num(T0 + 3)
    assert next(e for e in ev if e["kind"] == "mark")["data"] == '{"who": "test"}'


@pytest.mark.parametrize("text,safe", [("=1+2", "'=1+2"), ("+x", "'+x"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
                                       ("\tx", "'\\tx"), ("sda", "sda"), ("", ""), ("\x1b[2Jx", "\\x1b[2Jx")])
def test_neutralise(text, safe):
    assert neutralise(text) == safe


def test_negative_numbers_stay_numbers(recording, tmp_path):
    out = tmp_path / "out"
    main(["export", recording, "--csv", str(out)])
    assert {r["lag_ms"] for r in _csv(out / "workload.csv")} == {"-0.25"}


def test_long_csv_one_line_per_value(recording, tmp_path, capsys):
    assert main(["export", recording, "--csv", "-", "--long"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert len(rows) == sum(len(s.metrics) for s in samples_of(records(15)))
    hit = [r for r in rows if r["kind"] == "arc" and r["metric"] == "hits"]
    assert [(r["value"], r["delta"], r["per_s"], r["counter"]) for r in hit[1:2]] == [("10250", "250", "250", "1")]


def test_downsampled_export(recording, tmp_path):
    out = tmp_path / "out"
    assert main(["export", recording, "--csv", str(out), "--every", "5s"]) == 0
    arc = _csv(out / "arc.csv")
    assert [(r["epoch"], r["samples"], r["hits"], r["hits_delta"]) for r in arc] == [
        (num(T0), "5", "11000", "1000"), (num(T0 + 5), "5", "12250", "1250"), (num(T0 + 10), "5", "21", "502")]
    assert (arc[1]["size"], arc[1]["size_min"], arc[1]["size_max"]) == tuple(
        str(64 * 2 ** 20 - k) for k in (7, 9, 5))
    pool = _csv(out / "pool.csv")
    # the since-boot report (i=0) is left out of the first bucket's average
    assert pool[0]["samples"] == "4" and pool[0]["read_ops"] == num((144 + 145 + 146 + 147) / 4)


def test_json_lines(recording, tmp_path):
    out = tmp_path / "r.jsonl"
    assert main(["export", recording, "--json", str(out)]) == 0
    lines = [json.loads(x) for x in open(out)]
    samples = [x for x in lines if x["type"] == "sample"]
    events = [x for x in lines if x["type"] == "event"]
    assert len(samples) == len(samples_of(records(15)))
    assert {e["kind"] for e in events} >= {"topology", "mark", "error", "info"}
    arc = [x for x in samples if x["kind"] == "arc"]
    assert arc[1]["values"]["hits"] == 10250 and arc[1]["per_s"]["hits"] == 250
    assert [x["epoch"] for x in lines] == sorted(x["epoch"] for x in lines if x["epoch"] <= T0 + 14) + [
        x["epoch"] for x in lines if x["epoch"] > T0 + 14]


def test_entity_and_time_filters(recording, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", recording, "--csv", str(out), "--entities", "leaf:*", "--from", "+2s", "--to",
                 num(T0 + 4)]) == 0
    vdev = _csv(out / "vdev.csv")
    assert {r["kind"] for r in vdev} == {"leaf"} and len(vdev) == 4 * 3
    assert not (out / "arc.csv").exists()
    assert main(["export", recording, "--csv", str(out), "--entities", "nothing-like-this"]) == 2
    assert "no entity matches" in capsys.readouterr().err


def test_info(recording, capsys):
    assert main(["info", recording]) == 0
    text = capsys.readouterr().out
    assert f"pool:       {POOL}: vdevs 1 cache, 3 data; 4 leaves" in text
    assert "topology:   3 changes" in text and "interval:   1 s" in text
    assert f"time:       {iso(T0)} .. {iso(T0 + 14)} (00:00:14)" in text
    assert main(["info", recording, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["samples"] == len(samples_of(records(15))) and info["bytes_per_value"] > 0


@pytest.mark.parametrize("content", [b"", b"hello\n", b"SQLite format 3\x00" + b"\x00" * 200])
@pytest.mark.parametrize("cmd", ["info", "export"])
def test_bad_files_give_one_line_errors(tmp_path, capsys, content, cmd):
    p = tmp_path / "bad.zfsmon"
    p.write_bytes(content)
    before = (p.read_bytes(), os.stat(p).st_mtime_ns)
    argv = [cmd, str(p)] + (["--csv", str(tmp_path / "o")] if cmd == "export" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("zfsmon: ") and err.count("\n") == 1 and "Traceback" not in err
    assert (p.read_bytes(), os.stat(p).st_mtime_ns) == before


# --- import ----------------------------------------------------------------------------------------------------

GELI = "freebsd-openzfs2.x__zpool_iostat_-v_15_geli_cache-section.txt"


def test_import_zpool_iostat_log_matches_its_numbers(fixtures, tmp_path):
    log = fixtures / "zpool_iostat" / GELI
    rec = tmp_path / "geli.zfsmon"
    assert main(["import", str(log), "--into", str(rec), "--interval", "15"]) == 0
    out = tmp_path / "out"
    assert main(["export", str(rec), "--csv", str(out)]) == 0
    pool = _csv(out / "pool.csv")
    # `august  242G  670G  4  7  179K  77.3K` then `...  0  10  12.3K  134K`
    assert [(r["alloc"], r["free"], r["read_ops"], r["write_ops"], r["read_bw"], r["write_bw"], r["since_boot"])
            for r in pool] == [(num(242 * 2 ** 30), num(670 * 2 ** 30), "4", "7", num(179 * 1024),
                                num(77.3 * 1024), "1"),
                               (num(242 * 2 ** 30), num(670 * 2 ** 30), "0", "10", num(12.3 * 1024),
                                num(134 * 1024), "0")]
    # no printed times: the last report lands on the log's modification time, the first 15 s before
    assert float(pool[1]["epoch"]) == pytest.approx(os.path.getmtime(log)) and pool[1]["interval"] == "15"
    assert float(pool[1]["epoch"]) - float(pool[0]["epoch"]) == 15
    vdev = _csv(out / "vdev.csv")
    assert {(r["name"], r["role"]) for r in vdev} == {("ada0p3.eli", "data"), ("gpt/cache-august", "cache"),
                                                      ("gpt/duracell", "cache")}
    assert [r["alloc"] for r in vdev if r["name"] == "gpt/duracell"] == [num(14.7 * 2 ** 30)] * 2


@pytest.mark.parametrize("log", fixture_files("zpool_iostat"), ids=fixture_ids(fixture_files("zpool_iostat")))
def test_import_equals_parse_for_every_capture(log: Path, tmp_path, capsys):
    """Whatever the parser reads, the recording returns; what it cannot read is a one-line error."""
    text = log.read_text()
    try:
        parsed = [r for r in zpool_iostat.parse_text(text, log.name, interval=10.0) if isinstance(r, Sample)]
    except ParseError:
        parsed = None
    rec = tmp_path / "x.zfsmon"
    rc = main(["import", str(log), "--into", str(rec), "--interval", "10", "--kind", "zpool-iostat"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if not parsed:
        assert rc == 2 and err.startswith("zfsmon: ")
        return
    assert rc == 0, err
    with Recording.open(str(rec)) as r:
        got = list(r.samples())
    assert len(got) == len(parsed)
    shift = got[0].ts - parsed[0].ts
    want = sorted((round(s.ts + shift, 6), s.entity.key, m, v) for s in parsed for m, v in s.metrics.items())
    have = sorted((round(s.ts, 6), s.entity.key, m, v) for s in got for m, v in s.metrics.items())
    assert have == want


def test_import_refuses_unknown_text(tmp_path, capsys):
    log = tmp_path / "x.log"
    log.write_text("hello world\n")
    assert main(["import", str(log), "--into", str(tmp_path / "x.zfsmon")]) == 2
    assert "not a format zfsmon can import" in capsys.readouterr().err
    assert not (tmp_path / "x.zfsmon").exists()


def test_import_arcstats_dumps(fixtures, tmp_path):
    """Two concatenated Linux dumps: placed by their kstat snaptime."""
    one = (fixtures / "arcstats" / "linux-zol-0.6.5__proc_spl_kstat_zfs_arcstats.txt").read_text()
    header = one.splitlines()[0].split()
    later = " ".join(header[:6] + [str(int(header[6]) + 5_000_000_000)])
    two = one.rstrip("\n") + "\n" + later + "\n" + "\n".join(one.splitlines()[1:]) + "\n"
    log = tmp_path / "arcstats.log"
    log.write_text(two)
    rec = tmp_path / "a.zfsmon"
    assert main(["import", str(log), "--into", str(rec)]) == 0
    with Recording.open(str(rec)) as r:
        hits = r.series("arc:arc", "hits")
    assert [v for _, v in hits] == [8772612, 8772612] and hits[1][0] - hits[0][0] == 5.0


def test_parse_command_prints_csv(fixtures, capsys):
    log = fixtures / "zpool_iostat" / GELI
    assert main(["parse", str(log)]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    first = [(r["name"], r["metric"], r["value"]) for r in rows[:6]]
    assert ("august", "read_bw", num(179 * 1024)) in first
    assert main(["parse", "zpool-iostat", str(log)]) == 0
    assert len(list(csv.DictReader(capsys.readouterr().out.splitlines()))) == len(rows)
    assert main(["parse", "nosuchkind", str(log)]) == 2
    assert "unknown kind" in capsys.readouterr().err


def test_export_neither_removes_nor_replaces_a_file_it_did_not_write(recording, tmp_path, capsys):
    """A file of an export's name the user made (``device.csv``: the recording has no device, so it used to be
    removed as an earlier export's; ``events.csv``: it used to be replaced) makes the export refuse, before it
    writes anything."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "device.csv").write_text("my own notes\n")
    (out / "events.csv").write_text("mine too\n")
    assert main(["export", recording, "--csv", str(out)]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not written by an earlier zfsmon export" in err
    assert (out / "device.csv").read_text() == "my own notes\n" and (out / "events.csv").read_text() == "mine too\n"
    assert sorted(os.listdir(out)) == ["device.csv", "events.csv"]


def test_export_removes_an_earlier_exports_file_only_as_it_wrote_it(recording, tmp_path, capsys):
    """The manifest (``.zfsmon-export``) vouches for each file as written: one the user changed since is the
    user's, and a later export that would remove it refuses; untouched ones are replaced or removed."""
    out = tmp_path / "out"
    assert main(["export", recording, "--csv", str(out)]) == 0
    with open(out / "pool.csv", "a") as fh:
        fh.write("a line of my own\n")
    mine = (out / "pool.csv").read_text()
    assert main(["export", recording, "--csv", str(out), "--entities", "arc"]) != 0
    assert (out / "pool.csv").read_text() == mine and (out / "vdev.csv").exists()
    os.rename(out / "pool.csv", tmp_path / "kept.csv")
    capsys.readouterr()
    assert main(["export", recording, "--csv", str(out), "--entities", "arc"]) == 0
    assert "removed an earlier export's vdev.csv, workload.csv" in capsys.readouterr().err
    assert sorted(os.listdir(out)) == [".zfsmon-export", "arc.csv", "events.csv", "meta.csv"]
