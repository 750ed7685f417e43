"""Every file zfsmon writes goes through zfsmon/outfile.py or the Recorder: a symbolic link planted at the name
(dangling or not) is never followed, and a run removes only what it wrote."""

from __future__ import annotations

import os
import sqlite3

import pytest

from tests.unit.store_data import records
from zfsmon import outfile
from zfsmon.cli import main
from zfsmon.errors import UserError
from zfsmon.store import Recorder, RecordingError


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim"
    v.write_text("root's file\n")
    return v


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
def test_atomic_refuses_a_link_at_the_target(dangling, victim, tmp_path):
    link = tmp_path / "out.csv"
    target = tmp_path / "made-by-root" if dangling else victim
    link.symlink_to(target)
    with pytest.raises(UserError, match="symbolic link"):
        with outfile.atomic(str(link)) as fh:
            fh.write("x")
    assert os.readlink(link) == str(target)  # the link is left as it is, not replaced by a file
    assert victim.read_text() == "root's file\n" and not (tmp_path / "made-by-root").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.csv", "victim"])  # no temporary file left


def test_atomic_without_replace_takes_only_a_free_name(tmp_path):
    (tmp_path / "a").write_text("earlier\n")
    os.symlink(str(tmp_path / "nowhere"), str(tmp_path / "b"))
    for name in ("a", "b"):
        with pytest.raises(outfile.Taken):
            with outfile.atomic(str(tmp_path / name), replace=False) as fh:
                fh.write("new\n")
    assert (tmp_path / "a").read_text() == "earlier\n" and os.path.islink(tmp_path / "b")
    with outfile.atomic(str(tmp_path / "c"), replace=False) as fh:
        fh.write("new\n")
    assert (tmp_path / "c").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


def test_open_append_refuses_a_link_and_a_fifo(victim, tmp_path):
    (tmp_path / "log").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    for name in ("log", "fifo"):  # a FIFO would block the open, or the writes, for ever
        with pytest.raises(UserError):
            outfile.open_append(str(tmp_path / name)).close()
    assert victim.read_text() == "root's file\n"
    with outfile.open_append(str(tmp_path / "new.log")) as fh:
        fh.write("one\n")
    with outfile.open_append(str(tmp_path / "new.log")) as fh:
        fh.write("two\n")
    assert (tmp_path / "new.log").read_text() == "one\ntwo\n"


def test_written_vouches_only_for_files_as_zfsmon_left_them(tmp_path):
    for name in ("a.csv", "b.csv"):
        with outfile.atomic(str(tmp_path / name)) as fh:
            fh.write("1,2\n")
    outfile.Written(str(tmp_path)).record(["a.csv", "b.csv"])
    (tmp_path / "user.csv").write_text("mine\n")
    with open(tmp_path / "b.csv", "a") as fh:  # the user changed it since
        fh.write("3,4\n")
    w = outfile.Written(str(tmp_path))
    assert (w.vouches("a.csv"), w.vouches("b.csv"), w.vouches("user.csv")) == (True, False, False)
    with pytest.raises(UserError, match="not written by zfsmon"):
        w.remove("b.csv")
    w.remove("a.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == [outfile.Written.NAME, "b.csv", "user.csv"]


def test_a_foreign_manifest_vouches_for_nothing(tmp_path):
    (tmp_path / "a.csv").write_text("1\n")
    st = os.lstat(tmp_path / "a.csv")
    (tmp_path / outfile.Written.NAME).write_text(f"not the marker\n{st.st_ino} {st.st_size} {st.st_mtime_ns} a.csv\n")
    assert not outfile.Written(str(tmp_path)).vouches("a.csv")


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
def test_a_recording_is_not_written_through_a_link(dangling, victim, tmp_path):
    link = tmp_path / "r.zfsmon"
    link.symlink_to(tmp_path / "made-by-root" if dangling else victim)
    with pytest.raises(RecordingError, match="symbolic link"):
        Recorder(str(link), {"host": "h"})
    assert victim.read_text() == "root's file\n" and not (tmp_path / "made-by-root").exists()
    assert os.path.islink(link)


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_link_or_stray_file_beside_a_new_recording_is_refused(suffix, victim, tmp_path):
    path = tmp_path / "r.zfsmon"
    (tmp_path / f"r.zfsmon{suffix}").symlink_to(victim)
    with pytest.raises(RecordingError, match="symbolic link"):
        Recorder(str(path), {"host": "h"})
    os.unlink(tmp_path / f"r.zfsmon{suffix}")
    (tmp_path / f"r.zfsmon{suffix}").write_text("someone's\n")
    with pytest.raises(RecordingError, match="exists without its recording"):
        Recorder(str(path), {"host": "h"})
    assert (tmp_path / f"r.zfsmon{suffix}").read_text() == "someone's\n"
    assert victim.read_text() == "root's file\n" and not path.exists()


def test_a_recording_resumed_after_a_crash_keeps_working(tmp_path):
    """The checks do not refuse what zfsmon itself leaves: a recording with its -wal after a kill."""
    path = str(tmp_path / "r.zfsmon")
    rec = Recorder(path, {"host": "h"})
    rec.write(records(2)[0])
    assert os.path.exists(path + "-wal")
    rec._db.close()  # as a SIGKILL leaves it: no checkpoint, the -wal stays
    rec._lock.close()
    with Recorder(path, {"host": "h"}) as again:
        again.write(records(3)[2])
    assert sqlite3.connect(path).execute("SELECT count(*) FROM meta").fetchone()[0] > 0


def test_an_import_beside_a_stray_wal_is_refused_and_leaves_it(fixtures, tmp_path, capsys):
    """A file of the new recording's -wal name that was there before: refused in one line, and the import's
    clean-up after the failure leaves it (it removes only names it made)."""
    log = fixtures / "zpool_iostat" / "freebsd-openzfs2.x__zpool_iostat_-v_15_geli_cache-section.txt"
    (tmp_path / "r.zfsmon-wal").write_text("someone's\n")
    assert main(["import", str(log), "--into", str(tmp_path / "r.zfsmon"), "--interval", "15"]) != 0
    assert "r.zfsmon-wal exists without its recording" in capsys.readouterr().err
    assert (tmp_path / "r.zfsmon-wal").read_text() == "someone's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zfsmon-wal"]
