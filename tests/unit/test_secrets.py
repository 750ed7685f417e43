"""A password in `--conn` (or `--password X`, `PGPASSWORD=X`) is never kept in a recording, never shown by `info`,
the report or `meta.csv` (not even from a recording made before it was hidden), and never put on a child's
command line; a database name is only a name in a conninfo."""

from __future__ import annotations

import csv
import hashlib
import os
import random
import shlex
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from tests.unit.store_data import tick
from zfsmon.cli import main
from zfsmon.errors import UserError
from zfsmon.redact import HIDDEN, command_line, redact, shell_words, split_password, with_dbname
from zfsmon.store import Recorder, Recording
from zfsmon.views import report_pdf
from zfsmon.workload import target
from zfsmon.workload.soak import SoakPlan, run_argv

SECRET = "s3cr3t-Hunter2"
conninfo_to_dict = pytest.importorskip("psycopg.conninfo").conninfo_to_dict  # libpq's own parser
ProgrammingError = pytest.importorskip("psycopg").ProgrammingError

#: command lines a user may type, each holding SECRET (or its percent-encoded form) somewhere
ARGVS = [
    ["zfsmon", "soak", "--conn", f"host=db1 user=bench password={SECRET} dbname=bench", "--", "-c", "4"],
    ["zfsmon", "soak", f"--conn=host=db1 password='{SECRET} with \\'quotes\\''"],
    ["zfsmon", "soak", "--conn", f"password = {SECRET}"],
    ["zfsmon", "soak", "--conn", f"postgresql://bench:{SECRET}@db1:5432/bench?sslmode=require"],
    ["zfsmon", "soak", "--conn", f"postgres://bench@db1/bench?sslmode=require&password={SECRET}"],
    ["zfsmon", "attach", "soak.log", "--conn", f"sslmode=require sslpassword={SECRET}"],
    ["zfsmon", "soak", "--", "--password", SECRET, "-c", "2"],
    ["zfsmon", "soak", "--", f"--password={SECRET}"],
    ["env", f"PGPASSWORD={SECRET}", "zfsmon", "record"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=range(len(ARGVS)))
def test_the_command_line_kept_hides_the_secret_and_keeps_every_other_argument(argv):
    kept = command_line(argv)
    assert SECRET not in kept and HIDDEN in kept
    words = shlex.split(kept)
    assert len(words) == len(argv)
    for was, now in zip(argv, words):
        assert now == was or (SECRET in was and HIDDEN in now) or (was == SECRET and now == HIDDEN)
    assert redact(shlex.join(argv)) == kept  # the shown text, from a recording that kept it whole


@pytest.mark.parametrize("text", [
    "zfsmon soak --conn 'host=db1 password=" + SECRET,  # not a shell line: taken as it is
    f"pgstat: cannot connect: invalid dsn: host=x password={SECRET}",
    f"postgresql://u:{SECRET}@h/db",
    f"it's --password {SECRET} here",
])
def test_text_the_shell_cannot_split_is_redacted_as_it_is(text):
    assert SECRET not in redact(text) and HIDDEN in redact(text)


@pytest.mark.parametrize("text", ["a" * 2_000_000 + f" password={SECRET}", "x " * 300_000 + f"--password {SECRET}",
                                  "'password=" * 200_000 + SECRET, f"postgres://u:{SECRET}@h/" * 100_000])
def test_megabytes_of_hostile_text_are_redacted_in_linear_time(text):
    """An event or meta value of a hostile recording; shlex.split takes minutes over a 2 MB word."""
    t0 = time.monotonic()
    assert SECRET not in redact(text)
    assert time.monotonic() - t0 < 20  # linear: well under a second here; quadratic: minutes


def test_shell_words_splits_as_shlex_does():
    rng = random.Random(41)
    alphabet = "ab '\"\\$\t\n=-*?&#"
    for _ in range(5000):
        argv = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(0, 5))]
        assert shell_words(shlex.join(argv)) == argv
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        try:
            want = shlex.split(text)
        except ValueError:
            want = None
        assert shell_words(text) == want, text


def test_text_without_a_secret_is_left_as_it_is():
    for text in ("zfsmon record --pool tank -i 1", "it's a pool", "--no-password -c 4", "passfile=/root/.pgpass"):
        assert redact(text) == text


def _recording(path: Path, argv: str) -> None:
    with Recorder(str(path), {"host": "db1", "interval": 1, "argv": argv, "pgbench_args": argv}) as rec:
        for i in range(3):
            rec.write(tick(i))


def _stored(path: Path) -> str:
    """Everything the recording's tables hold, as text, read without zfsmon."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return repr(db.execute("SELECT * FROM meta").fetchall()) + repr(db.execute("SELECT * FROM event").fetchall())
    finally:
        db.close()


def test_the_recorder_keeps_no_password(tmp_path):
    path = tmp_path / "soak.zfsmon"
    _recording(path, shlex.join(ARGVS[0]))
    stored = _stored(path)
    assert SECRET not in stored and f"password={HIDDEN}" in stored
    assert "recording started: zfsmon soak --conn" in stored  # the event that quotes the command line


def _older_recording(path: Path) -> None:
    """A recording as zfsmon kept it before passwords were hidden: the command line whole, in meta and event."""
    _recording(path, "zfsmon record")
    line = shlex.join(ARGVS[3])
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key IN ('argv', 'pgbench_args')", (line,))
        db.execute("UPDATE event SET text = ? WHERE text LIKE 'recording started%'", (f"recording started: {line}",))
    db.close()
    assert SECRET in _stored(path)


def test_info_report_and_meta_csv_of_an_older_recording_hide_the_password(tmp_path, capsys):
    path = tmp_path / "old.zfsmon"
    _older_recording(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "command:" in out and f"bench:{HIDDEN}@db1" in out and SECRET not in out
    assert main(["info", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert HIDDEN in out and SECRET not in out
    with Recording.open(str(path)) as rec:
        data = report_pdf.build(rec)
    shown = "\n".join(data.summary_lines())
    assert f"recorded by zfsmon soak --conn 'postgresql://bench:{HIDDEN}@db1" in shown and SECRET not in shown
    out_dir = tmp_path / "csv"
    assert main(["export", str(path), "--csv", str(out_dir)]) == 0
    with open(out_dir / "meta.csv", newline="") as fh:
        meta = dict(csv.reader(fh))
    assert HIDDEN in meta["argv"] and HIDDEN in meta["pgbench_args"]
    events = (out_dir / "events.csv").read_text()
    assert f"recording started: zfsmon soak --conn 'postgresql://bench:{HIDDEN}@db1" in events
    assert SECRET not in (out_dir / "meta.csv").read_text() + events
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # the input file unchanged


@pytest.mark.parametrize("conn", [
    f"host=db1 port=5433 user=bench password={SECRET} dbname=bench",
    f"host='/run/my sock' password='{SECRET} \\'q\\' \\\\' application_name=x",
    f"password={SECRET}",
    f"postgresql://bench:{SECRET}@db1:5433/bench?sslmode=require",
    f"postgresql://bench:pa%40ss@db1/bench?password={SECRET}&connect_timeout=3",
    "host=db1 dbname=bench",
    "postgresql://bench@db1/bench",
])
def test_the_password_is_taken_out_of_the_conninfo_as_libpq_reads_it(conn):
    want = conninfo_to_dict(conn)
    without, password = split_password(conn)
    assert password == want.pop("password", None)
    assert conninfo_to_dict(without) == want


def test_a_soak_puts_the_password_in_pgbench_s_environment_not_on_its_command_line(tmp_path, monkeypatch):
    monkeypatch.delenv("PGPASSWORD", raising=False)
    tgt = target.prepare(conn=f"postgresql://bench:{SECRET}@db1/bench", dbname="bench")
    argv = run_argv(SoakPlan(pgbench_args=["-c", "2"], dbname=tgt.dbarg), 58)
    assert SECRET not in " ".join(argv) and tgt.env["PGPASSWORD"] == SECRET
    assert conninfo_to_dict(argv[-1])["host"] == "db1"
    assert SECRET not in str(tgt.dbname)
    # the real child: pgbench -i as a script that prints what it was given; the soak's log quotes the command
    fake = tmp_path / "pgbench"
    fake.write_text('#!/bin/sh\necho "argv: $*"\necho "env: $PGPASSWORD"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "soak.log"
    target.initialise(str(fake), 1, tgt.dbarg, tgt.env, str(log), quiet=True)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("# zfsmon soak: ") and SECRET not in lines[0]
    assert lines[1].startswith("argv: ") and SECRET not in lines[1] and "db1" in lines[1]
    assert lines[2] == f"env: {SECRET}"


HOSTILE = ['x"; DROP DATABASE postgres; --', "x' host=evil port=1", "a b\\ c'", "-f/etc/shadow"]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("conn", ["host=db1 user=bench", "postgresql://bench@db1:5433/other?sslmode=require"])
def test_a_database_name_is_only_a_name_in_the_conninfo(name, conn):
    parsed = conninfo_to_dict(with_dbname(conn, name))
    assert parsed["dbname"] == name and parsed["host"] == "db1" and parsed.get("port") in (None, "5433")
    tgt = target.prepare(conn=conn, dbname=name)
    assert conninfo_to_dict(tgt.conninfo)["dbname"] == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_database_name_without_conn_goes_in_pgdatabase_not_on_the_command_line(name):
    tgt = target.prepare(dbname=name)
    assert tgt.env["PGDATABASE"] == name and tgt.dbarg is None
    assert name not in run_argv(SoakPlan(dbname=tgt.dbarg), 58)
    assert conninfo_to_dict(tgt.conninfo) == {"dbname": name}


@pytest.mark.parametrize("name", ["", "x" * 64, "db\x1b[2Jname", "a\nb"])
def test_a_database_name_postgresql_would_not_keep_is_refused_in_one_line(name, tmp_path, capsys):
    with pytest.raises(UserError):
        target.prepare(dbname=name)
    out = tmp_path / "s.zfsmon"
    assert main(["soak", "--no-zfs", "--no-pgstat", "--dbname", name, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dbname" in err and "\x1b" not in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("conn", [f"host=db1 {SECRET}", f"host=db1 password='{SECRET}", "-x=1"])
def test_a_conninfo_libpq_would_not_read_is_one_line_that_does_not_quote_it(conn, tmp_path, capsys):
    with pytest.raises(ProgrammingError):
        conninfo_to_dict(conn)  # libpq refuses it too
    out = tmp_path / "s.zfsmon"
    assert main(["soak", "--no-zfs", "--no-pgstat", f"--conn={conn}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--conn" in err and SECRET not in err
    assert not os.path.exists(out)
