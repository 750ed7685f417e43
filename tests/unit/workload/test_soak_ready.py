"""A soak's first minutes on the lab: the database is loaded at full speed, then the data vdevs are throttled
again, then the caches are emptied (the demo showed nothing but ``pgbench -i`` for 6 min 20 s when the load ran
on disks already throttled to 100 IOPS). The steps' order is what is checked: the lab itself is faked, pgbench
is a real child (a script that notes it ran)."""

from __future__ import annotations

import contextlib
import stat
from pathlib import Path
from typing import List, Optional

import pytest

from zfsmon import lab as labmod
from zfsmon.errors import UserError
from zfsmon.lab import system
from zfsmon.lab.config import LabState
from zfsmon.workload import target


class FakeCluster:
    def __init__(self, steps: Path) -> None:
        self.steps = steps

    def stop(self) -> None:
        _note(self.steps, "postgres stop")

    def start(self) -> None:
        _note(self.steps, "postgres start")


def _note(steps: Path, what: str) -> None:
    with steps.open("a") as f:
        f.write(what + "\n")


@pytest.fixture
def steps(tmp_path, monkeypatch) -> Path:
    out = tmp_path / "steps"
    out.write_text("")
    monkeypatch.setattr(system, "machine_lock", contextlib.nullcontext)
    monkeypatch.setattr(system, "unthrottle", lambda rules: _note(out, "unthrottle " + " ".join(rules)))
    monkeypatch.setattr(system, "throttle", lambda rules, iops, pid: _note(out, f"throttle {iops} {pid} "
                                                                           + " ".join(rules)))
    monkeypatch.setattr(labmod, "zfs_fuse_pid", lambda: 4242)
    monkeypatch.setattr(labmod, "cold_cache", lambda pool, log=print: _note(out, f"cold {pool}"))
    return out


def _lab(monkeypatch, iops: Optional[int]) -> None:
    state = LabState(pool="ztps", config={"slow_data_iops": iops}, cgroup_rules=["7:1", "7:2"] if iops else [],
                     complete=True)
    monkeypatch.setattr(LabState, "load", classmethod(lambda cls, pool: state if pool == "ztps" else None))


def _pgbench(tmp_path: Path, steps: Path, rc: int = 0) -> str:
    fake = tmp_path / "pgbench"
    fake.write_text(f'#!/bin/sh\necho "pgbench $*" >> {steps}\necho "done in 1.00 s"\nexit {rc}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return str(fake)


def _target(tmp_path: Path, steps: Path, rc: int = 0) -> target.Target:
    return target.Target({"PATH": "/usr/bin:/bin"}, "pgbench", "", pgbench=_pgbench(tmp_path, steps, rc),
                         cluster=FakeCluster(steps), lab_pool="ztps", dbarg="pgbench")  # type: ignore[arg-type]


def _steps(steps: Path) -> List[str]:
    return steps.read_text().splitlines()


def test_the_database_loads_before_the_data_vdevs_are_throttled_then_the_cache_goes_cold(tmp_path, monkeypatch,
                                                                                         steps):
    _lab(monkeypatch, 100)
    said: List[str] = []
    target.ready(_target(tmp_path, steps), 40, str(tmp_path / "soak.log"), True, True, say=said.append)
    assert _steps(steps) == ["unthrottle 7:1 7:2", "pgbench -i -s 40 -q pgbench", "throttle 100 4242 7:1 7:2",
                             "postgres stop", "cold ztps", "postgres start"]
    assert any("unthrottled while the database loads" in m for m in said)
    assert any("throttled again to 100 IOPS" in m for m in said)


def test_a_failed_load_leaves_the_disks_throttled_again(tmp_path, monkeypatch, steps):
    _lab(monkeypatch, 100)
    with pytest.raises(UserError, match="pgbench -i failed"):
        target.ready(_target(tmp_path, steps, rc=3), 2, str(tmp_path / "soak.log"), True, True, say=lambda m: None)
    assert _steps(steps) == ["unthrottle 7:1 7:2", "pgbench -i -s 2 -q pgbench", "throttle 100 4242 7:1 7:2"]


def test_an_unthrottled_lab_loads_as_it_is(tmp_path, monkeypatch, steps):
    _lab(monkeypatch, None)
    target.ready(_target(tmp_path, steps), 2, str(tmp_path / "soak.log"), True, False, say=lambda m: None)
    assert _steps(steps) == ["pgbench -i -s 2 -q pgbench"]

