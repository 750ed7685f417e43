"""tail -F behaviour of the follower: partial lines, truncation, in-place rewrite, rotation, late files."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import TEST_DATA
from zfsmon.sources.follow import Follower

LOOP_LOG = TEST_DATA / "pgbench" / "pg15.18-local__loop_3x_pgbench_-T2_sleep1_tee.txt"


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def test_new_lines_only_and_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    p.write_text("old line\n")
    f = Follower(str(p))
    assert f.poll().lines == []  # like tail -f: what was there is not re-read
    _append(p, "progress: 1.0 s, 10.0 tps, lat 1.0")
    assert f.poll().lines == []  # no newline yet
    _append(p, "00 ms stddev 0.1\nsecond\n")
    assert f.poll().lines == ["progress: 1.0 s, 10.0 tps, lat 1.000 ms stddev 0.1", "second"]


def test_from_start_and_offset(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    text = LOOP_LOG.read_text()
    p.write_text(text)
    assert Follower(str(p), from_start=True).poll().lines == text.splitlines()
    half = len(text.encode()) // 2
    cut = text.encode()[:half].rfind(b"\n") + 1
    assert Follower(str(p), start_offset=cut).poll().lines == text.encode()[cut:].decode().splitlines()


def test_waits_for_file_then_reads_it_from_start(tmp_path: Path) -> None:
    p = tmp_path / "later.log"
    f = Follower(str(p))
    c = f.poll()
    assert c.lines == [] and "does not exist" in c.notes[0]
    assert f.poll().notes == []  # said once
    p.write_text("a\nb\n")
    c = f.poll()
    assert c.lines == ["a", "b"] and any("appeared" in n for n in c.notes)


def test_truncation(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    p.write_text("")
    f = Follower(str(p))
    _append(p, "one\ntwo\nthree\n")
    assert f.poll().lines == ["one", "two", "three"]
    with open(p, "w") as fh:
        fh.write("x\n")
    c = f.poll()
    assert c.lines == ["x"] and "truncated" in c.notes[0]


def test_rewrite_larger_than_before_is_noticed(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    p.write_text("")
    f = Follower(str(p))
    _append(p, "pgbench run one\n")
    assert f.poll().lines == ["pgbench run one"]
    ino = os.stat(p).st_ino
    with open(p, "w") as fh:  # `pgbench > soak.log` again: same inode, O_TRUNC, then more than before
        fh.write("second run starts\nwith more lines\n")
    assert os.stat(p).st_ino == ino
    c = f.poll()
    assert c.lines == ["second run starts", "with more lines"] and "rewritten" in c.notes[0]


def test_rotation_drains_old_then_follows_new(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    p.write_text("")
    f = Follower(str(p))
    _append(p, "a\n")
    assert f.poll().lines == ["a"]
    _append(p, "b\nunterminated")
    os.rename(p, tmp_path / "soak.log.1")
    c = f.poll()  # moved away, not recreated yet: keep reading the old file
    assert c.lines == ["b"]
    p.write_text("new 1\n")
    c = f.poll()
    assert c.lines == ["unterminated", "new 1"] and any("rotated" in n for n in c.notes)
    _append(p, "new 2\n")
    assert f.poll().lines == ["new 2"]
    f.close()
    assert f.poll().lines == []  # closed: never starts over


def test_deleted_and_recreated(tmp_path: Path) -> None:
    p = tmp_path / "soak.log"
    p.write_text("")
    f = Follower(str(p))
    _append(p, "a\n")
    assert f.poll().lines == ["a"]
    p.unlink()
    assert f.poll().lines == []
    p.write_text("b\n")
    assert f.poll().lines == ["b"]


def test_attach_imports_history_then_follows(tmp_path: Path) -> None:
    from tests.conftest import fixture_files
    from zfsmon.model import Event, EventKind, Sample
    from zfsmon.workload.attach import AttachCollector

    p = tmp_path / "soak.log"
    p.write_text(LOOP_LOG.read_text())
    os.utime(p, (1_700_000_000.0, 1_700_000_000.0))
    col = AttachCollector([str(p)], from_start=True, pause=1.0, clock=lambda: 1_700_000_100.0)
    col.start()
    recs = col.poll()
    runs = [r for r in recs if isinstance(r, Sample) and r.entity.name == "pgbench-run"]
    assert [r.ts for r in runs] == [1_700_000_000.0 - 6, 1_700_000_000.0 - 3, 1_700_000_000.0]
    assert [r.metrics["tps"] for r in runs] == [5947.915604, 5514.898393, 5443.421333]
    assert any(isinstance(r, Event) and "estimated" in r.text for r in recs)
    more = next(f for f in fixture_files("pgbench") if f.name.startswith("pg15.2-ubuntu")).read_text()
    _append(p, more)
    recs = col.poll()
    prog = [r for r in recs if isinstance(r, Sample) and r.entity.name == "pgbench"]
    assert len(prog) == 10 and prog[0].metrics["tps"] == 665.5
    assert [e.kind for e in recs if isinstance(e, Event)] == [EventKind.RUN_START, EventKind.RUN_END]
    col.stop()
