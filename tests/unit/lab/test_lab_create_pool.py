"""`system.create_pool` tries again only on zfs-fuse's transient "I/O error" and only while no pool came to be."""

import subprocess

import pytest

from zfsmon.lab import system


def _script(monkeypatch, answers):
    """Feed `system.run` the given (argv prefix -> CompletedProcess) answers in order; record the calls."""
    calls = []

    def fake_run(argv, check=True, timeout=120):
        calls.append(argv)
        return answers.pop(0)

    monkeypatch.setattr(system, "run", fake_run)
    monkeypatch.setattr(system.time, "sleep", lambda s: None)
    return calls


def _cp(rc, err=""):
    return subprocess.CompletedProcess([], rc, "", err)


def test_an_io_error_with_no_pool_is_tried_again_until_the_create_succeeds(monkeypatch):
    calls = _script(monkeypatch, [_cp(1, "cannot create 'p': I/O error"), _cp(1), _cp(0)])
    system.create_pool("p", ["mirror", "/dev/loop1", "/dev/loop2"])
    creates = [c for c in calls if c[1] == "create"]
    assert len(creates) == 2 and creates[0][-3:] == ["mirror", "/dev/loop1", "/dev/loop2"]
    assert ["zpool", "list", "-H", "-o", "name", "p"] in calls


def test_another_error_is_raised_at_once(monkeypatch):
    calls = _script(monkeypatch, [_cp(1, "cannot create 'p': pool already exists"), _cp(1)])
    with pytest.raises(system.LabError, match="already exists"):
        system.create_pool("p", ["/dev/loop1"])
    assert sum(c[1] == "create" for c in calls) == 1


def test_an_io_error_is_not_tried_again_when_the_pool_exists(monkeypatch):
    calls = _script(monkeypatch, [_cp(1, "cannot create 'p': I/O error"), _cp(0)])
    with pytest.raises(system.LabError, match="I/O error"):
        system.create_pool("p", ["/dev/loop1"])
    assert sum(c[1] == "create" for c in calls) == 1


def test_the_attempts_are_bounded(monkeypatch):
    calls = _script(monkeypatch, [_cp(1, "I/O error"), _cp(1)] * 3)
    with pytest.raises(system.LabError, match="I/O error"):
        system.create_pool("p", ["/dev/loop1"], attempts=3)
    assert sum(c[1] == "create" for c in calls) == 3
