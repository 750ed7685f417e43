"""Where zfsmon records when no file is named: the state directory, never the directory it was started in.

``XDG_STATE_HOME`` points at a temporary directory (and, for root, ``outfile.ROOT_STATE_DIR`` too): no test
writes into the real ~/.local/state or /var/lib.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import stat
import subprocess
import sys

import pytest

from tests.conftest import REPO, wait_until_async
from tests.unit.views.top.test_top_listen import HOST, captures, top_args
from zfsmon import outfile
from zfsmon.cli import main
from zfsmon.commands import record, top
from zfsmon.errors import UserError
from zfsmon.store import Recording
from zfsmon.workload import fio as fiowl

NOW = 1767225600.0  # 2026-01-01T00:00:00Z


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A state home and a root state directory under tmp, and a current directory that must stay empty."""
    state, cwd = tmp_path / "state", tmp_path / "cwd"
    state.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setattr(outfile, "ROOT_STATE_DIR", str(tmp_path / "varlib" / "zfsmon"), raising=False)
    monkeypatch.chdir(cwd)
    return state, tmp_path / "varlib" / "zfsmon", cwd


def test_a_user_records_into_xdg_state_home_created_0700(places):
    state, _root, _cwd = places
    path = record.default_out(NOW, root=False)
    assert os.path.dirname(path) == str(state / "zfsmon")
    assert re.fullmatch(r"zfsmon-[A-Za-z0-9._-]+-20260101T000000Z\.zfsmon", os.path.basename(path))
    assert stat.S_IMODE(os.lstat(state / "zfsmon").st_mode) == 0o700
    assert not os.path.lexists(path)  # a name only: the recorder creates it


def test_without_xdg_state_home_or_with_a_relative_one_it_is_under_home(places, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for env in ({}, {"XDG_STATE_HOME": "relative/state"}):
        path = record.default_out(NOW, environ=env, root=False)
        assert os.path.dirname(path) == str(tmp_path / "home" / ".local" / "state" / "zfsmon")
    assert stat.S_IMODE(os.lstat(tmp_path / "home" / ".local" / "state").st_mode) == 0o700
    assert not os.path.exists("relative")


def test_a_service_records_into_its_state_directory_a_link_included(places, tmp_path):
    """systemd's StateDirectory= with DynamicUser=: STATE_DIRECTORY=/var/lib/zfsmon, a link to private/zfsmon."""
    private = tmp_path / "lib" / "private" / "zfsmon"
    private.mkdir(parents=True, mode=0o750)
    os.symlink("private/zfsmon", tmp_path / "lib" / "zfsmon")
    env = {"STATE_DIRECTORY": str(tmp_path / "lib" / "zfsmon"), "XDG_STATE_HOME": str(places[0])}
    for root in (True, False):
        assert os.path.dirname(record.default_out(NOW, environ=env, root=root)) == str(tmp_path / "lib" / "zfsmon")
    os.chmod(private, 0o770)  # one the service's group could plant names in
    with pytest.raises(UserError, match="writable by group or others"):
        record.default_out(NOW, environ=env)


def test_root_records_into_var_lib_zfsmon(places):
    _state, root, _cwd = places
    path = record.default_out(NOW, root=True)
    assert os.path.dirname(path) == str(root) and stat.S_IMODE(os.lstat(root).st_mode) == 0o700


@pytest.mark.parametrize("target", ["elsewhere", "missing"])
def test_a_symlink_planted_as_the_state_directory_is_refused(places, tmp_path, target):
    state, _root, _cwd = places
    elsewhere = tmp_path / "elsewhere"
    if target == "elsewhere":
        elsewhere.mkdir()
    os.symlink(elsewhere, state / "zfsmon")
    with pytest.raises(UserError, match="is a symbolic link"):
        record.default_out(NOW, root=False)
    assert os.path.islink(state / "zfsmon")  # left as it was
    assert (sorted(os.listdir(elsewhere)) == []) if target == "elsewhere" else not os.path.lexists(elsewhere)


def test_a_state_directory_others_can_plant_names_in_is_refused(places):
    state, _root, _cwd = places
    (state / "zfsmon").mkdir()
    os.chmod(state / "zfsmon", 0o777)
    with pytest.raises(UserError, match="writable by group or others"):
        record.default_out(NOW, root=False)
    os.chmod(state / "zfsmon", 0o700)
    if os.geteuid() == 0:
        os.chown(state / "zfsmon", 65534, 65534)
        with pytest.raises(UserError, match="owned by uid 65534"):
            record.default_out(NOW, root=False)
    (state / "zfsmon").rmdir()
    (state / "zfsmon").write_text("")
    with pytest.raises(UserError, match="not a directory"):
        record.default_out(NOW, root=False)


def test_a_taken_name_gets_a_suffix_and_a_hostile_host_name_stays_in_the_directory(places, monkeypatch):
    state, _root, _cwd = places
    monkeypatch.setattr(socket, "gethostname", lambda: "../../etc/\x1b[31mevil host")
    first = record.default_out(NOW, root=False)
    assert os.path.dirname(first) == str(state / "zfsmon") and "\x1b" not in first and " " not in first
    with open(first, "w"):
        pass
    second = record.default_out(NOW, root=False)
    assert second != first and second.endswith("-1.zfsmon") and os.path.dirname(second) == str(state / "zfsmon")


def test_zfsmon_record_without_out_records_into_the_state_directory_and_says_where(places, monkeypatch, capsys,
                                                                                  fixtures):
    state, root, cwd = places
    monkeypatch.setattr(record, "probe", lambda: HOST)
    monkeypatch.setattr(record, "pick_collectors", lambda *a, **k: (captures(fixtures), []))
    assert main(["record", "--interval", "0.2", "--duration", "1"]) == 0
    err = capsys.readouterr().err
    made = os.listdir(root if os.geteuid() == 0 else state / "zfsmon")
    assert len(made) == 1 and made[0].endswith(".zfsmon") and made[0] in err
    assert os.listdir(cwd) == []  # nothing in the directory it was started in
    with Recording.open(os.path.join(root if os.geteuid() == 0 else state / "zfsmon", made[0])) as rec:
        assert rec.time_range() is not None


def test_zfsmon_soak_without_out_records_into_the_state_directory(places, tmp_path):
    """A real fio soak (2 s, --no-zfs) named no file: the recording and fio's output go to the state directory,
    nothing to the directory it was started in."""
    state, root, cwd = places
    work = tmp_path / "work"
    work.mkdir()
    job = tmp_path / "tiny.fio"
    job.write_text(fiowl.preset_jobfile("randread", fiowl.PresetPlan(directory=str(work), size="4M", runtime_s=2,
                                                                     depth=1)))
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    env.pop("STATE_DIRECTORY", None)
    code = ("import sys; from zfsmon import outfile, cli; outfile.ROOT_STATE_DIR = sys.argv[1]; "
            "sys.exit(cli.main(sys.argv[2:]))")
    res = subprocess.run([sys.executable, "-c", code, str(root), "soak", "--fio", str(job), "--no-zfs",
                          "--interval", "0.5"], cwd=str(cwd), env={**env, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    where = root if os.geteuid() == 0 else state / "zfsmon"
    made = sorted(os.listdir(where))
    recordings = [m for m in made if m.endswith(".zfsmon")]
    assert len(recordings) == 1 and recordings[0].startswith("soak-") and recordings[0] in res.stderr
    assert os.listdir(cwd) == []
    with Recording.open(os.path.join(where, recordings[0])) as rec:
        assert rec.time_range() is not None


def test_top_without_record_records_into_the_state_directory_and_shows_the_path(places, monkeypatch, fixtures):
    state, root, cwd = places
    monkeypatch.setattr(top, "probe", lambda: HOST)
    monkeypatch.setattr(top, "pick_collectors", lambda *a, **k: (captures(fixtures), []))
    shown = []

    async def go() -> None:
        with top.dashboard(top_args()) as live:
            live.session.start(on_end=live.app.exit)
            async with live.app.run_test(size=(200, 50)) as pilot:
                await wait_until_async(lambda: "loop5" in _screen(live.app), 60, "the captures", pilot.pause)
                shown.append((live.path, _screen(live.app)))

    asyncio.run(go())
    path, screen = shown[0]
    where = str(root if os.geteuid() == 0 else state / "zfsmon")
    assert path is not None and os.path.dirname(path) == where and os.path.isfile(path)
    assert f"rec {path}" in screen.splitlines()[1]
    assert os.listdir(cwd) == []


def test_top_prints_the_recordings_path_on_exit(places, monkeypatch, fixtures, capsys):
    """`top`'s own run, its screen closed at once (a user's q): the recording's path is told on stderr."""
    monkeypatch.setattr(top, "probe", lambda: HOST)
    monkeypatch.setattr(top, "pick_collectors", lambda *a, **k: (captures(fixtures), []))
    monkeypatch.setattr(top, "need_terminal", lambda what: None)
    monkeypatch.setattr(top.TopApp, "run", lambda self: None)
    assert main(["top", "-i", "0.2"]) == 0
    err = capsys.readouterr().err
    where = places[1] if os.geteuid() == 0 else places[0] / "zfsmon"
    made = os.listdir(where)
    assert len(made) == 1 and f"zfsmon: {where / made[0]}: " in err and "replay: zfsmon replay" in err


def _screen(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)

