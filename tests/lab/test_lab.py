"""The lab, built and removed for real on zfs-fuse (root; runs in CI)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.conftest import need, revive_lab, wait_until
from tests.lab.helpers import drop_host_caches, interval_leaf_ops, random_reads, write_file
from zfsmon import lab as labmod
from zfsmon.host import zfs_fuse_pid
from zfsmon.lab import system
from zfsmon.lab.config import LabConfig, LabState

pytestmark = [pytest.mark.lab]


@pytest.fixture
def capable() -> None:
    try:
        system.check_can_build()
    except system.LabError as exc:
        need(False, f"zfs-fuse lab unavailable: {exc}")


def _cfg(tmp_path, name: str, **kw) -> LabConfig:
    return LabConfig(pool=f"{name}{os.getpid()}", directory=str(tmp_path / name), data_mb=192, log_mb=64,
                     cache_mb=128, **kw)


def _zpool_status(pool: str) -> str:
    return subprocess.run(["zpool", "status", pool], capture_output=True, text=True).stdout


ZPOOL_CACHE = "/var/lib/zfs/zpool.cache"  # zfs-fuse's (Debian) cache file


def _assert_not_in_cache_file(pool: str) -> None:
    """A lab pool stays out of the daemon's cache file, so a daemon restarted after a crash does not
    import it again (FAULTED, its backing files cleaned up) and keep running for it."""
    got = subprocess.run(["zpool", "get", "cachefile", pool], capture_output=True, text=True).stdout.split()
    assert got[-2:] == ["none", "local"], got
    if os.path.exists(ZPOOL_CACHE):
        with open(ZPOOL_CACHE, "rb") as f:
            assert pool.encode() not in f.read()


def test_round_trip_topology_workload_and_cleanup(capable, tmp_path):
    pools_before = subprocess.run(["zpool", "list", "-H", "-o", "name"], capture_output=True, text=True).stdout.split() \
        if zfs_fuse_pid() else []
    daemon_before = zfs_fuse_pid()
    cfg = _cfg(tmp_path, "rt")
    info = labmod.up(cfg, log=lambda *_: None)
    try:
        status = _zpool_status(cfg.pool)
        lines = [ln.strip() for ln in status.splitlines()]
        assert "logs" in lines and "cache" in lines
        assert lines.count("mirror-0  ONLINE       0     0     0") == 1
        assert any(ln.startswith("mirror-1") for ln in lines)
        assert len(info.devices["data"]) == 4 and len(info.devices["log"]) == 1 and len(info.devices["cache"]) == 1
        mounted = subprocess.run(["zfs", "get", "-H", "-o", "value", "mounted,mountpoint", info.dataset],
                                 capture_output=True, text=True).stdout.split()
        assert mounted == ["yes", info.mountpoint] and os.path.ismount(info.mountpoint), (mounted, info)
        _assert_not_in_cache_file(cfg.pool)
        # a second up reuses the lab (documented behaviour)
        again = labmod.up(cfg, log=lambda *_: None)
        assert again == info

        data = info.devices["data"]
        path = os.path.join(info.mountpoint, "w.bin")

        def workload() -> None:
            write_file(path, 24)
            drop_host_caches()
            random_reads(path, 50)

        ops = interval_leaf_ops(cfg.pool, data, workload)
        assert set(ops) == {os.path.basename(d) for d in data}
        assert all(v > 0 for v in ops.values()), ops
    finally:
        assert labmod.down(cfg.pool, log=lambda *_: None)
    assert subprocess.run(["zpool", "list", cfg.pool], capture_output=True).returncode != 0
    backing = {ln.split(":")[0]: ln for ln in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()}
    for dev_list in info.devices.values():
        for dev in dev_list:
            assert cfg.pool not in backing.get(dev, ""), f"{dev} still attached"
    assert not os.path.exists(cfg.backing_dir())
    assert LabState.load(cfg.pool) is None
    if daemon_before is None and not pools_before:
        assert zfs_fuse_pid() is None, "down left the daemon it started"
    assert not labmod.down(cfg.pool, log=lambda *_: None)  # idempotent


def test_slow_data_is_measurably_slower(capable, tmp_path):
    def timed_reads(cfg: LabConfig) -> float:
        info = labmod.up(cfg, log=lambda *_: None)
        try:
            ds = f"{info.dataset}/nocache"
            subprocess.run(["zfs", "create", "-o", "primarycache=metadata", "-o", "secondarycache=none", ds], check=True)
            path = f"/{ds}/r.bin"
            write_file(path, 16)
            drop_host_caches()
            return random_reads(path, 150)
        finally:
            labmod.down(cfg.pool, log=lambda *_: None)

    fast = timed_reads(_cfg(tmp_path, "fast"))
    slow = timed_reads(_cfg(tmp_path, "slow", slow_data_iops=40))
    # 150 reads over 4 disks at 40 IOPS take >= ~0.9 s; unthrottled loop devices are far faster
    assert slow > 2 * fast and slow > 0.5, (fast, slow)


def test_crash_half_way_is_cleaned_by_next_up(capable, tmp_path):
    cfg = _cfg(tmp_path, "cr")
    labmod.up(cfg, log=lambda *_: None)
    st = LabState.load(cfg.pool)
    st.complete = False  # as if `up` had been killed before its last step
    st.save()
    try:
        msgs = []
        labmod.up(cfg, log=msgs.append)
        assert any("interrupted" in m for m in msgs)
        assert LabState.load(cfg.pool).complete
    finally:
        labmod.down(cfg.pool, log=lambda *_: None)
    assert LabState.load(cfg.pool) is None


def test_cold_cache_empties_the_l2arc_and_keeps_the_pool(capable, tmp_path):
    cfg = _cfg(tmp_path, "cold")
    info = labmod.up(cfg, log=lambda *_: None)
    try:
        path = os.path.join(info.mountpoint, "c.bin")
        write_file(path, 96)  # larger than the 64 MB ARC: evicted buffers feed the L2ARC
        cache = os.path.basename(info.devices["cache"][0])

        def cache_alloc() -> float:
            out = subprocess.run(["zpool", "iostat", "-v", cfg.pool], capture_output=True, text=True).stdout
            text = next(ln.split()[1] for ln in out.splitlines() if ln.split()[:1] == [cache])
            mult = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}
            return float(text[:-1]) * mult[text[-1]] if text[-1] in mult else float(text)

        def filled() -> float:
            """The cache device's allocation once it holds 8 MiB; else reads the file again (0)."""
            alloc = cache_alloc()
            if alloc >= 8 * 2 ** 20:
                return alloc
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
            return 0

        wait_until(filled, 120, "the L2ARC feed to put 8 MiB on the cache device", step=0.5)
        before = cache_alloc()
        assert before >= 8 * 2 ** 20, before
        with open(path, "rb") as f:
            data = f.read()
        msgs = []
        labmod.cold_cache(cfg.pool, log=msgs.append)
        assert msgs and "emptied" in msgs[0]
        # the re-added cache device starts empty; the feed may already have written a few buffers back
        after = cache_alloc()
        assert after < 2 * 2 ** 20 and after < before / 4, (before, after)
        lines = [ln.strip() for ln in _zpool_status(cfg.pool).splitlines()]
        assert "logs" in lines and "cache" in lines and any(ln.startswith(cache) for ln in lines)
        assert sum(ln.startswith("loop") for ln in lines) == 6  # /dev/loopN names kept by the import
        with open(path, "rb") as f:
            assert f.read() == data
        _assert_not_in_cache_file(cfg.pool)  # the import kept cachefile=none
    finally:
        labmod.down(cfg.pool, log=lambda *_: None)


def test_a_lab_whose_daemon_died_is_built_again(lab):
    """zfs-fuse killed under the session lab (as it died once in the fault tests): the next test's lab is built
    again with the same pool, dataset and mountpoint, its roles, and it takes writes (tests/conftest.py)."""
    pid = zfs_fuse_pid()
    assert pid is not None and not revive_lab(lab)  # alive: nothing to do
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: zfs_fuse_pid() is None, 30, "zfs-fuse to exit after SIGKILL")
    assert revive_lab(lab)
    assert zfs_fuse_pid() not in (None, pid)
    lines = [ln.strip() for ln in _zpool_status(lab.pool).splitlines()]
    assert f"pool: {lab.pool}" in lines and "state: ONLINE" in lines
    assert "logs" in lines and "cache" in lines and "mirror-1  ONLINE       0     0     0" in lines
    assert {role: len(paths) for role, paths in lab.devices.items()} == {"data": 4, "log": 1, "cache": 1}
    for paths in lab.devices.values():
        assert all(os.path.exists(p) and os.path.basename(p) in _zpool_status(lab.pool) for p in paths)
    write_file(os.path.join(lab.mountpoint, "after-revival"), 8)
    assert os.path.getsize(os.path.join(lab.mountpoint, "after-revival")) == 8 << 20
    assert not revive_lab(lab)
