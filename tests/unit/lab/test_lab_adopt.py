"""An existing (kernel OpenZFS) pool adopted as a lab: its disks by role from `zpool status`, `cold` on them, `down`
forgetting it. The layout comes from the guest's real captures (tests/data/openzfs-2.3)."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest

from zfsmon import lab
from zfsmon.commands.lab import devices_of
from zfsmon.lab import config, system
from zfsmon.lab.config import LabState
from zfsmon.sources.zpool.status import parse_status

DATA = Path(__file__).resolve().parents[2] / "data" / "openzfs-2.3"
BY_ID = "/dev/disk/by-id/virtio-"


def _devices():
    paths = parse_status((DATA / "zpool-status-P.txt").read_text())
    names = parse_status((DATA / "zpool-status.txt").read_text())
    return devices_of(paths, names, "zguest")


def test_devices_by_role_name_whole_disks_not_their_partitions() -> None:
    got = [(d.role, d.loop, d.parent, d.file) for d in _devices()]
    assert got == [("data", BY_ID + "data0", "mirror-0", ""), ("data", BY_ID + "data1", "mirror-0", ""),
                   ("data", BY_ID + "data2", "mirror-1", ""), ("data", BY_ID + "data3", "mirror-1", ""),
                   ("log", BY_ID + "log0", "", ""), ("cache", BY_ID + "cache0", "", "")]


@pytest.fixture
def adopted(tmp_path, monkeypatch):
    """zguest adopted into a state directory of the test's own; zpool commands recorded, not run."""
    monkeypatch.setattr(config, "RUN_DIR", tmp_path)
    monkeypatch.setattr(system, "machine_lock", contextlib.nullcontext)
    monkeypatch.setattr(system, "pool_exists", lambda pool: pool == "zguest")
    monkeypatch.setattr(lab.os, "geteuid", lambda: 0)
    calls = []
    monkeypatch.setattr(lab, "run", lambda argv, **kw: calls.append(argv) or subprocess.CompletedProcess(argv, 0))
    info = lab.adopt("zguest", "db", "/zguest/db", _devices(), log=lambda m: None)
    return info, calls


def test_adopt_records_the_pool_as_a_lab(adopted) -> None:
    info, calls = adopted
    assert calls == []  # nothing is created
    assert (info.pool, info.dataset, info.mountpoint) == ("zguest", "zguest/db", "/zguest/db")
    assert info.devices == {"data": [BY_ID + f"data{i}" for i in range(4)], "log": [BY_ID + "log0"],
                            "cache": [BY_ID + "cache0"]}
    assert info.kstat_dir == "/proc/spl/kstat/zfs"
    assert lab.info("zguest") == info
    assert any("adopted pool (4 data, 1 log, 1 cache)" in line for line in lab.status_lines())


def test_cold_removes_and_adds_back_the_cache_disk_importing_by_id(adopted) -> None:
    _, calls = adopted
    lab.cold_cache("zguest", log=lambda m: None)
    assert calls == [["zpool", "remove", "zguest", BY_ID + "cache0"], ["zpool", "export", "zguest"],
                     ["zpool", "import", "-o", "cachefile=none", "-d", "/dev/disk/by-id", "zguest"],
                     ["zpool", "add", "-f", "zguest", "cache", BY_ID + "cache0"]]


def test_down_forgets_and_destroys_nothing(adopted) -> None:
    _, calls = adopted
    assert lab.down("zguest", log=lambda m: None) is True
    assert calls == [] and LabState.load("zguest") is None


def test_up_refuses_an_adopted_pool(adopted, monkeypatch) -> None:
    monkeypatch.setattr(system, "check_can_build", lambda: None)
    with pytest.raises(system.LabError, match="adopted pool"):
        lab.up(lab.LabConfig(pool="zguest"), log=lambda m: None)


def test_adopting_a_pool_that_is_not_there_is_one_line(adopted) -> None:
    with pytest.raises(system.LabError, match="no pool named other is imported"):
        lab.adopt("other", "db", "/other/db", [], log=lambda m: None)
