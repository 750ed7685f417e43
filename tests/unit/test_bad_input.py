"""Issue 16, "Bad input": each case found, reproduced with the issue's own inputs, answered in one line.

Numbers in the names are the issue's items. The standing rule (every reading command fed every kind of bad
input) is tests/unit/test_bad_input_rule.py; the mutation loop is tests/unit/test_bad_input_mutation.py.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import TEST_DATA, need
from tests.unit.bad_input import (
    answer,
    can_mount,
    in_mount,
    make_recording,
    one_line,
    refused_in_one_line,
    sha,
)
from zfsmon.errors import printable
from zfsmon.store import Recording

CAP = TEST_DATA / "openzfs-2.3"
ARCSTATS = CAP / "arcstats.before"
IOSTAT_P = CAP / "zpool-iostat-vp.txt"
IOSTAT_T = CAP / "zpool-iostat-vTu.txt"
PGBENCH_LOOP = TEST_DATA / "pgbench" / "pg15.18-local__loop_3x_pgbench_-T2_sleep1_tee.txt"


def _replace_value(text: str, stat: str, value: str) -> str:
    """``text`` with the value of statistic ``stat`` replaced, in whichever arcstats shape it is."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == stat:  # Linux: name type data
            line = f"{parts[0]} {parts[1]} {value}"
        elif line.startswith(f"kstat.zfs.misc.arcstats.{stat}:"):  # FreeBSD sysctl
            line = f"kstat.zfs.misc.arcstats.{stat}: {value}"
        elif re.match(rf"^zfs:0:arcstats:{stat}\t", line):  # illumos kstat -p
            line = f"zfs:0:arcstats:{stat}\t{value}"
        out.append(line)
    return "\n".join(out) + "\n"


def _arcstats_formats(fixtures: Path):
    return {"linux": (ARCSTATS.read_text(), "hits"),
            "freebsd": ((fixtures / "arcstats" / "freebsd-14.0-RC2__sysctl_kstat.zfs.misc.arcstats.txt").read_text(),
                        "arc_raw_size"),
            "illumos": ((fixtures / "arcstats" / "illumos-2015__kstat_-p_zfs_TRUNCATED-first27lines.txt").read_text(),
                        "anon_size")}


# ---------------------------------------------------------------------------------------------------------- 1
@pytest.mark.parametrize("shape", ["linux", "freebsd", "illumos"])
def test_1_a_4301_digit_integer_in_any_arcstats_format(shape, fixtures, tmp_path):
    text, stat = _arcstats_formats(fixtures)[shape]
    f = tmp_path / f"{shape}.txt"
    f.write_text(_replace_value(text, stat, "9" * 4301))
    before = sha(f)
    line = one_line(answer(["parse", str(f)]), contains="out of range")
    assert len(line) < 300 + len(str(f)) and sha(f) == before


def test_1_a_4400_digit_zpool_iostat_value_is_refused_not_inf(tmp_path):
    lines = IOSTAT_P.read_text().splitlines()
    lines[3] = lines[3].replace("394524", "9" * 4400)
    f = tmp_path / "iostat.txt"
    f.write_text("\n".join(lines) + "\n")
    line = one_line(answer(["parse", str(f)]))
    assert ":4:" in line and len(line) < 400 + len(str(f))
    assert not (tmp_path / "x.zfsmon").exists()
    one_line(answer(["import", str(f), "--into", str(tmp_path / "x.zfsmon")]))
    assert not (tmp_path / "x.zfsmon").exists()


# ---------------------------------------------------------------------------------------------------------- 2
def test_2_a_pgbench_duration_of_300000000000_s_is_not_imported(tmp_path):
    f = tmp_path / "pgbench.log"
    f.write_text(PGBENCH_LOOP.read_text().replace("duration: 2 s\n", "duration: 300000000000 s\n", 1))
    into = tmp_path / "pg.zfsmon"
    one_line(answer(["import", str(f), "--into", str(into)]), contains="impossible time")
    assert not into.exists() and not Path(str(into) + "-wal").exists()


@pytest.mark.parametrize("start", ["9999-12-31T23:59:30Z", "1e15", "inf", "nan"])
def test_2_impossible_start_times_are_refused_and_leave_no_recording(start, tmp_path):
    into = tmp_path / "s.zfsmon"
    # reports a minute apart: from 23:59:30 on, the second one falls in year 10000
    a = answer(["import", str(IOSTAT_P), "--interval", "60", "--start", start, "--into", str(into)])
    one_line(a, contains="impossible time" if start[0] == "9" else "not a possible time")
    assert not into.exists()


def test_2_later_reads_of_an_imported_capture_work(tmp_path):
    """What the issue saw break later (info/export after import) holds for a possible --start."""
    into = tmp_path / "ok.zfsmon"
    assert answer(["import", str(IOSTAT_P), "--interval", "5", "--start", "9999-12-31T23:00:00Z",
                   "--into", str(into)]).code == 0
    assert answer(["info", str(into)]).code == 0
    assert answer(["export", str(into), "--json", str(tmp_path / "o.jsonl")]).code == 0


# ---------------------------------------------------------------------------------------------------------- 3
@pytest.mark.parametrize("argv", [["import", str(IOSTAT_T), "--into", "{d}"], ["record", "--out", "{d}"],
                                  ["soak", "--out", "{d}"], ["attach", str(PGBENCH_LOOP), "--out", "{d}"]])
def test_3_an_output_naming_a_directory(argv, tmp_path):
    a = answer([x.format(d=tmp_path) for x in argv])
    one_line(a, contains="is a directory")


# ---------------------------------------------------------------------------------------------------------- 4
def _no_leftovers(d: Path) -> None:
    assert not [p.name for p in d.rglob("*") if p.is_file() and p.name != "filler"], list(d.rglob("*"))


def test_4_export_json_into_a_missing_directory(tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    one_line(answer(["export", str(rec), "--json", str(tmp_path / "nope" / "o.jsonl")]), contains="does not exist")


WRITE_FAILURES = [("ro", "read-only", argv) for argv in (
    ["export", "{rec}", "--json", "{d}/o.jsonl"], ["export", "{rec}", "--csv", "{d}"],
    ["export", "{rec}", "--csv", "{d}", "--long"])] + [("full", "full", argv) for argv in (
    ["export", "{rec}", "--json", "{d}/o.jsonl"], ["export", "{rec}", "--csv", "{d}/c"],
    ["export", "{rec}", "--csv", "{d}/c", "--long"], ["report", "{rec}", "--out", "{d}/r.pdf"],
    ["report", "{rec}", "--out", "{d}/r.png"], ["report", "{rec}", "--out", "{d}/r.html"])]


@pytest.mark.parametrize("how,says,argv", WRITE_FAILURES, ids=[f"{h} {' '.join(a[::2])}" for h, _, a in WRITE_FAILURES])
def test_4_export_and_report_into_a_read_only_or_full_file_system(how, says, argv, tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    d = tmp_path / how
    d.mkdir()
    p = in_mount(d, how, [a.format(rec=rec, d=d) for a in argv], cwd=tmp_path)
    refused_in_one_line(p, contains=says)
    _no_leftovers(d)  # for a full disk, the namespace's tmpfs is gone: nothing may have reached the directory


@pytest.mark.parametrize("argv", [["export", "{rec}", "--csv", "-", "--long"], ["info", "{rec}"],
                                  ["parse", str(IOSTAT_T)], ["info", "{rec}", "--json"]])
def test_4_standard_output_on_a_full_disk(argv, tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    d = tmp_path / "full"
    d.mkdir()
    p = in_mount(d, "full", [a.format(rec=rec) for a in argv], cwd=tmp_path, stdout=str(d / "out"))
    refused_in_one_line(p, contains="standard output: cannot write: the file system is full")


def test_4_a_failed_export_keeps_the_earlier_file_whole(tmp_path, monkeypatch):
    """A write that fails half-way (here: the recording is found damaged mid-export) leaves the earlier export
    as it was and no temporary file."""
    rec = make_recording(tmp_path / "r.zfsmon")
    out = tmp_path / "o.jsonl"
    out.write_text("earlier\n")
    from zfsmon.views import csv_export

    def boom(*a, **kw):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(csv_export, "row_json", boom)
    one_line(answer(["export", str(rec), "--json", str(out)]), contains="the file system is full")
    assert out.read_text() == "earlier\n" and sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl", "r.zfsmon"]


# ---------------------------------------------------------------------------------------------------------- 5
def test_5_formula_in_a_metric_name_is_neutralised_in_the_csv_header(tmp_path):
    f = tmp_path / "arc.txt"
    text = ARCSTATS.read_text()
    f.write_text(text.replace("\nhits ", '\n=HYPERLINK("x") 4 7\nhits ', 1))
    rec = tmp_path / "a.zfsmon"
    assert answer(["import", str(f), "--into", str(rec)]).code == 0
    assert answer(["export", str(rec), "--csv", str(tmp_path / "out")]).code == 0
    with open(tmp_path / "out" / "arc.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert "'=HYPERLINK(\"x\")" in header and '=HYPERLINK("x")' not in header
    assert all(not h.startswith(("=", "+", "-", "@")) for h in header)


# ---------------------------------------------------------------------------------------------------------- 6
ESC = "\x1b]0;pwned\x07\x1b[2J"


def test_6_escape_sequences_in_an_error_message(tmp_path):
    f = tmp_path / "arc.txt"
    f.write_text(re.sub(r"(?m)^(hits +4 +)", lambda m: m.group(1) + ESC, ARCSTATS.read_text(), count=1))
    line = one_line(answer(["parse", str(f)]))
    assert "\\x1b" in line


def test_6_escape_sequences_in_csv_names(tmp_path):
    f = tmp_path / "arc.txt"
    f.write_text(ARCSTATS.read_text().replace("\nhits ", f"\nbad{ESC}name 4 7\nhits ", 1))
    a = answer(["parse", str(f)])
    assert a.code == 0 and "\x1b" not in a.out and "\x07" not in a.out
    assert printable(f"bad{ESC}name") in a.out
    rec = tmp_path / "a.zfsmon"
    assert answer(["import", str(f), "--into", str(rec)]).code == 0
    assert answer(["export", str(rec), "--csv", str(tmp_path / "o")]).code == 0
    assert "\x1b" not in (tmp_path / "o" / "arc.csv").read_text()


# ---------------------------------------------------------------------------------------------------------- 8
def test_8_trace_from_a_binary_file(tmp_path):
    f = tmp_path / "bin.out"
    f.write_bytes(bytes(range(256)) * 40)
    before = sha(f)
    one_line(answer(["trace", "vdevlat", "--from", str(f)]), contains="binary")
    assert sha(f) == before


def test_8_trace_from_text_that_is_not_trace_output(tmp_path):
    f = tmp_path / "x.out"
    f.write_text("hello\nworld\n")
    one_line(answer(["trace", "--from", str(f)]), contains="no trace output")


# --------------------------------------------------------------------------------------------------------- 10
@pytest.mark.parametrize("args,says", [(["--max-lag", "1000000000"], "10,000"), (["--max-lag", "-1"], "from 0"),
                                       (["--start", "+3m", "--end", "+1m"], "window is empty")])
def test_10_analyze_arguments(args, says, tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon", 300)
    t = time.monotonic()
    one_line(answer(["analyze", str(rec), *args]), contains=says)
    assert time.monotonic() - t < 10


def test_10_the_largest_max_lag_is_fast(tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon", 60)
    t = time.monotonic()
    assert answer(["analyze", str(rec), "--max-lag", "10000"]).code == 0
    assert time.monotonic() - t < 20


def _edit(path: Path, sql: str) -> None:
    db = sqlite3.connect(str(path))
    db.execute(sql)
    db.commit()
    db.close()


@pytest.mark.parametrize("cmd", [["info"], ["analyze"], ["export", "--json", "-"], ["report", "--out", "{d}/r.pdf"]])
def test_10_a_tick_at_1e300_is_damage_not_a_hang(cmd, tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon", 20)
    _edit(rec, "UPDATE tick SET ts = 1e300 WHERE id = 7")
    before = sha(rec)
    t = time.monotonic()
    one_line(answer([cmd[0], str(rec)] + [c.format(d=tmp_path) for c in cmd[1:]]), contains="damaged")
    assert time.monotonic() - t < 10 and sha(rec) == before


# --------------------------------------------------------------------------------------------------------- 11
@pytest.mark.parametrize("argv", [
    ["trace", "vdevlat", "0"], ["trace", "vdevlat", "-1"], ["trace", "vdevlat", "--count", "0"],
    ["trace", "vdevlat", "--count", "-3"], ["trace", "vdevlat", "--slow", "-5"],
    *[["attach", "x.log", "--pause", v] for v in ("-5", "nan", "inf")],
    *[["attach", "x.log", "--aggregate-interval", v] for v in ("0", "-5", "nan", "inf")],
    ["info", "r.zfsmon", "--events", "-5"],
    *[[cmd, opt, "-1"] for cmd in ("soak", "top") for opt in ("--pause", "--progress", "--init-scale")],
    ["soak", "--port", "-1"], ["soak", "--hours", "-1"], ["soak", "--pause", "inf"], ["top", "--pause", "inf"],
    ["record", "--duration", "99999999999999999999"], ["record", "--interval", "nan"],
    ["export", "r.zfsmon", "--csv", "o", "--every", "0"],
], ids=lambda a: " ".join(a))
def test_11_unchecked_numbers(argv):
    one_line(answer(argv))


# --------------------------------------------------------------------------------------------------------- 13
EDITS = {
    "stream pointing at a missing entity": "UPDATE stream SET entity = 9999 WHERE id = 1",
    "text in a numeric column": "UPDATE tick SET ts = 'yesterday' WHERE id = 3",
    "text in a value blob": "UPDATE sample SET vals = 'abc' WHERE tick = 2",
    "an unknown role": "UPDATE topology SET role = 'turbo' WHERE role = 'data'",
    "an unknown entity kind": "UPDATE entity SET kind = 'gizmo' WHERE id = 1",
    "a stream with a missing layout": "UPDATE stream SET layout = 777 WHERE id = 2",
    "a layout naming a missing metric": "UPDATE layout SET metrics = '9999' WHERE id = 1",
    "an event at an impossible time": "UPDATE event SET ts = 1e300 WHERE id = 1",
    "event data that is not an object": "UPDATE event SET data = '[1' WHERE id = 1",
}


# info counts values without decoding them (but fio's results, of which this recording has none): a damaged value
# blob changes nothing it shows here (a fio result's: test_fio_workload.py)
CASES_13 = [(edit, cmd) for edit in EDITS for cmd in (["info"], ["export", "--json", "-"], ["analyze"])
            if not (edit == "text in a value blob" and cmd == ["info"])]


@pytest.mark.parametrize("edit,cmd", CASES_13, ids=[f"{e}-{c[0]}" for e, c in CASES_13])
def test_13_a_recording_edited_into_inconsistency_is_damaged(edit, cmd, tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon", 20)
    _edit(rec, EDITS[edit])
    before = sha(rec)
    one_line(answer([cmd[0], str(rec), *cmd[1:]]), contains="damaged")
    assert sha(rec) == before


# --------------------------------------------------------------------------------------------------------- 14
def test_14_parse_dev_zero_is_refused_at_once():
    t = time.monotonic()
    one_line(answer(["parse", "/dev/zero"]), contains="binary")
    assert time.monotonic() - t < 5


# (the 200 MB line under a memory limit: tests/unit/test_bad_input_rule.py::test_a_200_mb_line_in_bounded_memory)


# --------------------------------------------------------------------------------------------------------- 15
def _values(out: str):
    """(kind, pool, name, metric, value) of every parsed value: what a capture says, whatever its file name."""
    rows = list(csv.DictReader(out.splitlines()))
    return sorted((r["kind"], r["pool"], r["name"], r["metric"], r["value"]) for r in rows)


def test_15_a_stray_line_from_zpool_does_not_reject_the_capture(tmp_path):
    lines = IOSTAT_T.read_text().split("\n")
    f = tmp_path / "stray.txt"
    f.write_text("\n".join(lines[:12] + ["cannot open 'tank': no such pool"] + lines[12:]))
    a = answer(["parse", str(f)])
    assert a.code == 0 and _values(a.out) == _values(answer(["parse", str(IOSTAT_T)]).out)
    assert any("cannot open 'tank'" in e and e.startswith("note:") for e in a.err), a.err


def test_15_a_truncated_last_line(tmp_path):
    text = ARCSTATS.read_text()
    f = tmp_path / "cut.txt"
    f.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 8])  # the last line cut after 7 characters
    a = answer(["parse", str(f)])
    assert a.code == 0, a.err
    full = _values(answer(["parse", str(ARCSTATS)]).out)
    got = _values(a.out)
    assert set(got) < set(full) and len(full) - len(got) == 1
    assert any("cut off" in e for e in a.err)


@pytest.mark.parametrize("encode", ["bom", "crlf", "utf16"])
def test_15_bom_crlf_and_utf16_read_like_the_plain_capture(encode, tmp_path):
    text = IOSTAT_T.read_text()
    data = {"bom": b"\xef\xbb\xbf" + text.encode(), "crlf": text.replace("\n", "\r\n").encode(),
            "utf16": text.encode("utf-16")}[encode]
    f = tmp_path / "c.txt"
    f.write_bytes(data)
    a = answer(["parse", str(f)])
    assert a.code == 0, a.err
    assert _values(a.out) == _values(answer(["parse", str(IOSTAT_T)]).out)


@pytest.mark.parametrize("shape", ["freebsd", "illumos"])
@pytest.mark.parametrize("value", ["nan", "1e308", "12abc", "inf"])
def test_15_bsd_and_illumos_arcstats_refuse_non_numbers_as_linux_does(shape, value, fixtures, tmp_path):
    text, stat = _arcstats_formats(fixtures)[shape]
    f = tmp_path / "a.txt"
    f.write_text(_replace_value(text, stat, value))
    one_line(answer(["parse", str(f)]), contains="not a kstat number")
    linux = tmp_path / "l.txt"
    linux.write_text(_replace_value(ARCSTATS.read_text(), "hits", value))
    one_line(answer(["parse", str(linux)]))


def _killed_recorder(path: Path) -> None:
    """A recording whose recorder died: its data is still in the write-ahead log."""
    import subprocess
    import sys
    repo, target = str(Path(__file__).parents[2]), str(path)
    code = (f"import os, sys\nsys.path.insert(0, {repo!r})\nfrom tests.unit.store_data import records\n"
            f"from zfsmon.store import Recorder\nr = Recorder({target!r}, {{'interval': '1'}})\n"
            "[r.write(b) for b in records(10)]\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert Path(str(path) + "-wal").exists()


def test_15_a_wal_recording_on_read_only_media_is_read(tmp_path):
    d = tmp_path / "media"
    d.mkdir()
    rec = d / "k.zfsmon"
    _killed_recorder(rec)
    os.unlink(str(rec) + "-shm")  # as copied onto the media: no shared-memory file
    p = in_mount(d, "ro", ["info", str(rec), "--json"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert '"samples": ' in p.stdout and '"samples": 0' not in p.stdout


def test_15_a_wal_recording_whose_shm_another_user_owns_is_read(request):
    need(os.geteuid() == 0, "root, to read as another user")
    d = Path(tempfile.mkdtemp(prefix="zfsmon-shared."))  # pytest's own directories are private to root
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o755)
    rec = d / "k.zfsmon"
    _killed_recorder(rec)
    os.unlink(str(rec) + "-shm")
    pid = os.fork()
    if pid == 0:  # the child reads as nobody: it cannot create the -shm in root's directory
        try:
            os.setgid(65534)
            os.setuid(65534)
            a = answer(["info", str(rec)])
            os._exit(0 if a.code == 0 and "samples:" in a.out else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_15_readers_leave_no_wal_or_shm_files(tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    _killed_recorder(tmp_path / "k.zfsmon")
    os.unlink(tmp_path / "k.zfsmon-shm")
    os.unlink(tmp_path / "k.zfsmon-wal")  # the killed recorder's log lost: the file alone
    for path in (rec, tmp_path / "k.zfsmon"):
        for cmd in (["info"], ["export", "--json", "-"], ["analyze"]):
            answer([cmd[0], str(path), *cmd[1:]])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.zfsmon", "r.zfsmon"]


def test_15_a_missing_wal_is_said(tmp_path):
    _killed_recorder(tmp_path / "k.zfsmon")
    os.unlink(tmp_path / "k.zfsmon-wal")
    os.unlink(tmp_path / "k.zfsmon-shm")
    one_line(answer(["info", str(tmp_path / "k.zfsmon")]), contains="write-ahead log")


def test_15_exporting_over_an_earlier_export_does_not_mix_files(tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    out = tmp_path / "out"
    assert answer(["export", str(rec), "--csv", str(out)]).code == 0
    kinds = sorted(p.name for p in out.iterdir())
    assert "arc.csv" in kinds and "vdev.csv" in kinds
    a = answer(["export", str(rec), "--csv", str(out), "--entities", "arc"])
    assert a.code == 0 and "removed an earlier export's" in a.err[-1]
    assert sorted(p.name for p in out.iterdir()) == [".zfsmon-export", "arc.csv", "events.csv", "meta.csv"]
    assert answer(["export", str(rec), "--csv", str(out), "--long"]).code == 0
    assert sorted(p.name for p in out.iterdir()) == [".zfsmon-export", "events.csv", "meta.csv", "samples.csv"]


def test_recording_reader_closes_its_private_copy(tmp_path):
    """The copy made for a read-only WAL recording goes away with the reader."""
    d = tmp_path / "media"
    d.mkdir()
    rec = d / "k.zfsmon"
    _killed_recorder(rec)
    need(can_mount(), "root and unshare(1)")
    p = in_mount(d, "ro", ["export", str(rec), "--json", str(tmp_path / "o.jsonl")], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o.jsonl").read_text().count('"type":"sample"') > 0
    with Recording.open(str(rec)) as r:  # writable here: read in place
        assert r._copy_dir is None


def test_6_escape_sequences_from_a_recording_in_info_and_analyze(tmp_path):
    rec = make_recording(tmp_path / "r.zfsmon")
    _edit(rec, f"UPDATE event SET text = 'x{ESC}y', kind = 'mark' WHERE id = 1")
    for cmd in (["info"], ["analyze"]):
        a = answer([cmd[0], str(rec)])
        assert a.code == 0 and "\x1b" not in a.out and "\x07" not in a.out, (cmd, a.err)
    assert "x\\x1b]0;pwned\\x07" in answer(["info", str(rec)]).out


@pytest.mark.parametrize("how,says", [("ro", "read-only"), ("full", "full")])
def test_4_import_into_a_read_only_or_full_file_system(how, says, tmp_path):
    d = tmp_path / how
    d.mkdir()
    p = in_mount(d, how, ["import", str(IOSTAT_T), "--into", str(d / "x.zfsmon")], cwd=tmp_path)
    refused_in_one_line(p, contains=says)
    _no_leftovers(d)
