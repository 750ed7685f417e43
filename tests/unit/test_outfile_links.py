"""Every file zfsmon writes goes through zfsmon/outfile.py or the Recorder: a symbolic link planted at the name
(dangling or not) is never followed, and a run removes only what it wrote."""

from __future__ import annotations

import os

import pytest

from zfsmon import outfile
from zfsmon.errors import UserError


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
