"""The lab: a real (userspace, zfs-fuse) ZFS pool for people without one, and for our tests.

Layout: two 2-way mirrors of data vdevs, one ``log`` (SLOG) and one ``cache``
(L2ARC) device, all on loop devices over sparse files, plus a dataset for a
database. ``up`` and ``down`` are idempotent and safe after a crash; a second
``up`` of a lab that is already up reuses it (by design: scripts can call
``up`` unconditionally).

A scratch pool that already exists (kernel OpenZFS: the QEMU guest's, or one of
the user's) can be *adopted*: soaks then run their own PostgreSQL cluster on it
and ``cold`` empties its caches, while ``down`` only forgets it (zfsmon made none
of its devices, so it removes none).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from typing import Iterator, List, Optional

from zfsmon.host import zfs_fuse_pid
from zfsmon.lab import system
from zfsmon.lab.config import KSTAT_DIR, Device, LabConfig, LabInfo, LabState, all_states
from zfsmon.lab.system import LabError, run
from zfsmon.model import Role

__all__ = ["LabConfig", "LabInfo", "LabError", "up", "adopt", "down", "info", "status_lines", "cold_cache",
           "unthrottled"]

#: where kernel OpenZFS keeps its kstats (Linux)
KERNEL_KSTAT_DIR = "/proc/spl/kstat/zfs"


def _info(state: LabState) -> LabInfo:
    cfg = state.config
    return LabInfo(pool=state.pool, dataset=f"{state.pool}/{cfg['dataset']}",
                   mountpoint=str(cfg.get("mountpoint") or f"/{state.pool}/{cfg['dataset']}"),
                   devices=state.by_role(),
                   kstat_dir=KERNEL_KSTAT_DIR if state.adopted else str(KSTAT_DIR / "zfs"),
                   slow_data_iops=cfg.get("slow_data_iops"))


def info(pool: str) -> Optional[LabInfo]:
    st = LabState.load(pool)
    return _info(st) if st and st.complete else None


def up(cfg: LabConfig, log=print) -> LabInfo:
    system.check_can_build()
    with system.machine_lock():
        old = LabState.load(cfg.pool)
        if old is not None and old.adopted:
            raise LabError(f"pool {cfg.pool} is an adopted pool, not a zfs-fuse lab: `zfsmon lab down --pool "
                           f"{cfg.pool}` forgets it (and removes nothing)")
        if old is not None:
            if old.complete and system.pool_exists(cfg.pool) and zfs_fuse_pid():
                log(f"lab {cfg.pool} is already up: reusing it")
                return _info(old)
            log(f"lab {cfg.pool}: cleaning up what an interrupted run left behind")
            _teardown(old, log)
        elif system.pool_exists(cfg.pool):
            raise LabError(f"a pool named {cfg.pool} exists and is not a zfsmon lab: choose another --pool")
        return _build(cfg, log)


def adopt(pool: str, dataset: str, mountpoint: str, devices: List[Device], log=print) -> LabInfo:
    """Treat an existing pool as a lab: its dataset for the soak's cluster, its devices (by role, as ``zpool
    status -P`` names them) for ``cold``. Nothing is created; a second ``adopt`` replaces the first."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root: run it with sudo")
    with system.machine_lock():
        old = LabState.load(pool)
        if old is not None and not old.adopted:
            raise LabError(f"pool {pool} is a zfs-fuse lab that zfsmon built: it needs no adopting")
        if not system.pool_exists(pool):
            raise LabError(f"no pool named {pool} is imported")
        dirs = {os.path.dirname(d.loop) for d in devices if d.loop}
        state = LabState(pool=pool, config={"dataset": dataset, "mountpoint": mountpoint, "adopted": True,
                                            "import_dir": dirs.pop() if len(dirs) == 1 else "/dev"},
                         devices=list(devices), complete=True)
        state.save()
    log(f"pool {pool} adopted as a lab ({state.roles_text()}; dataset {pool}/{dataset} at {mountpoint}); "
        "`zfsmon lab down` forgets it and removes nothing")
    return _info(state)


def _build(cfg: LabConfig, log) -> LabInfo:
    t0 = time.monotonic()
    state = LabState(pool=cfg.pool, config=vars(cfg).copy())
    state.save()
    pid = zfs_fuse_pid()
    if pid is None:
        pid = system.start_daemon(cfg.arc_mb)
        log(f"started zfs-fuse (pid {pid}, ARC {cfg.arc_mb} MB, --disable-block-cache)")
    else:
        argv = system.daemon_cmdline(pid)
        if cfg.slow_data_iops and "--disable-block-cache" not in argv:
            raise LabError("--slow-data needs zfs-fuse started with --disable-block-cache, and the running daemon "
                           f"(pid {pid}) was not: stop it first")
        log(f"using the running zfs-fuse (pid {pid})")
    d = cfg.backing_dir()
    if not d.exists():
        d.mkdir(parents=True)
        state.dir_created = True
        state.save()
    plan = [(Role.DATA, f"data{i}", cfg.data_mb, f"mirror-{i // 2}") for i in range(4)]
    plan += [(Role.LOG, "log0", cfg.log_mb, ""), (Role.CACHE, "cache0", cfg.cache_mb, "")]
    try:
        for role, stem, size, parent in plan:
            f = d / f"{stem}.img"
            system.make_sparse(f, size)
            dev = Device(role=role.value, file=str(f), parent=parent)
            state.devices.append(dev)
            state.save()
            dev.loop = system.attach_loop(f)
            state.save()
        data = [x.loop for x in state.devices if x.role == "data" and x.loop]  # all attached just above
        log_dev = [x.loop for x in state.devices if x.role == "log" and x.loop]
        cache = [x.loop for x in state.devices if x.role == "cache" and x.loop]
        # cachefile=none: a daemon started after a crash does not re-import the pool (FAULTED, its files
        # gone after the clean-up) and keep itself alive; a lab pool exists only while its lab does
        system.create_pool(cfg.pool, ["mirror", data[0], data[1], "mirror", data[2], data[3],
                                      "log", *log_dev, "cache", *cache])
        state.pool_created = True
        state.save()
        ds = f"{cfg.pool}/{cfg.dataset}"
        run(["zfs", "create", "-o", f"recordsize={cfg.recordsize}", ds])
        if cfg.slow_data_iops:
            nums = [system.dev_numbers(x) for x in data if x]
            state.cgroup_rules = nums
            state.save()
            system.throttle(nums, cfg.slow_data_iops, pid)
            log(f"data vdevs throttled to {cfg.slow_data_iops} IOPS each (blkio cgroup); log and cache unthrottled")
        state.complete = True
        state.save()
    except BaseException:
        with contextlib.suppress(Exception):
            _teardown(state, log)
        raise
    log(f"lab {cfg.pool} is up in {time.monotonic() - t0:.1f} s: dataset {cfg.pool}/{cfg.dataset} at "
        f"/{cfg.pool}/{cfg.dataset}")
    return _info(state)


def down(pool: str, log=print) -> bool:
    """Remove what `up` created for this pool. Returns False if there was no such lab."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root: run it with sudo")
    with system.machine_lock():
        state = LabState.load(pool)
        if state is None:
            log(f"no lab named {pool} (nothing to do)")
            return False
        _teardown(state, log)
        return True


def _teardown(state: LabState, log) -> None:
    t0 = time.monotonic()
    if state.adopted:
        state.remove()
        log(f"pool {state.pool} is no longer a lab (it was adopted: nothing removed)")
        return
    if state.pool_created or system.pool_exists(state.pool):
        if state.pool_created and system.pool_exists(state.pool):
            for _ in range(10):
                cp = run(["zpool", "destroy", "-f", state.pool], check=False)
                if cp.returncode == 0 or not system.pool_exists(state.pool):
                    break
                time.sleep(0.5)
            else:
                raise LabError(f"cannot destroy pool {state.pool}: {cp.stderr.strip()}")
    if state.cgroup_rules:
        system.unthrottle(state.cgroup_rules)
    for dev in reversed(state.devices):
        if dev.loop:
            system.detach_loop(dev.loop, dev.file)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dev.file)
    if state.dir_created:
        d = LabConfig(**{k: v for k, v in state.config.items() if k in LabConfig.__dataclass_fields__}).backing_dir()
        shutil.rmtree(d, ignore_errors=True)
    state.remove()
    _maybe_stop_daemon(log)
    log(f"lab {state.pool} is down ({time.monotonic() - t0:.1f} s)")


def _maybe_stop_daemon(log) -> None:
    """Stop zfs-fuse only if zfsmon started it and nothing (no lab, no pool at all) still uses it."""
    rec = system.daemon_record()
    pid = zfs_fuse_pid()
    if not rec or pid is None or rec.get("pid") != pid or all_states():
        return
    cp = run(["zpool", "list", "-H", "-o", "name"], check=False)
    if cp.returncode == 0 and cp.stdout.strip():
        return
    system.stop_daemon(pid)
    log(f"stopped zfs-fuse (pid {pid}), which zfsmon had started")


def cold_cache(pool: str, log=print) -> None:
    """Empty the ARC and the L2ARC of a lab pool, so a soak starts cold.

    Loading a database already fills the L2ARC with what it wrote. In pool v23
    the L2ARC is not persistent and an export drops the pool's ARC buffers, so:
    remove the cache device, export and import the pool, add the cache device
    back. Nothing may hold the pool's files open (stop the database first).
    """
    if os.geteuid() != 0:
        raise LabError("the lab needs root: run it with sudo")
    with system.machine_lock():
        state = LabState.load(pool)
        if state is None or not state.complete:
            raise LabError(f"no lab named {pool} is up")
        cache = [d.loop for d in state.devices if d.role == Role.CACHE.value and d.loop]
        t0 = time.monotonic()
        for dev in cache:
            run(["zpool", "remove", pool, dev])
        run(["zpool", "export", pool])
        # import from where the devices were named (/dev for a lab's /dev/loopN, /dev/disk/by-id for an adopted
        # pool's), so the vdevs keep their names in the recording
        run(["zpool", "import", "-o", "cachefile=none", "-d", str(state.config.get("import_dir") or "/dev"), pool])
        if cache:
            run(["zpool", "add", "-f", pool, "cache", *cache])
        how = ("cache removed, pool exported and imported, cache added back" if cache else
               "no cache device: pool exported and imported")
        log(f"lab {pool}: ARC{' and L2ARC' if cache else ''} emptied ({how}) in {time.monotonic() - t0:.1f} s")


@contextlib.contextmanager
def unthrottled(pool: str, log=print) -> Iterator[bool]:
    """The lab's data vdevs at full speed for the ``with`` block, then throttled again as ``up`` left them; yields
    whether there was a throttle to lift.

    Loading a database on disks of 100 IOPS takes minutes, most of them building the primary keys; what a soak
    watches is the reads afterwards. The lock is held only while the
    rules change, not during the load."""
    with system.machine_lock():
        state = LabState.load(pool)
        iops = int(state.config.get("slow_data_iops") or 0) if state is not None and state.complete else 0
        rules = list(state.cgroup_rules) if state is not None and iops else []
        if rules:
            system.unthrottle(rules)
            log(f"lab {pool}: data vdevs unthrottled while the database loads")
    try:
        yield bool(rules)
    finally:
        if rules:
            with system.machine_lock():
                pid = zfs_fuse_pid()
                if pid is None:
                    raise LabError(f"lab {pool}: zfs-fuse is gone; the data vdevs stay unthrottled")
                system.throttle(rules, iops, pid)
                log(f"lab {pool}: data vdevs throttled again to {iops} IOPS each")


def status_lines() -> List[str]:
    """Human summary: the daemon, each lab's topology by role, throttles."""
    lines: List[str] = []
    pid = zfs_fuse_pid()
    rec = system.daemon_record()
    if pid is None:
        lines.append("zfs-fuse: not running")
    else:
        who = "started by zfsmon" if rec.get("pid") == pid else "not started by zfsmon"
        lines.append(f"zfs-fuse: pid {pid} ({who}): {' '.join(system.daemon_cmdline(pid))}")
    rules = system.throttle_rules()
    states = all_states()
    if not states:
        lines.append("labs: none")
    for st in states:
        if st.adopted:
            lines.append(f"lab {st.pool}: adopted pool ({st.roles_text()}), dataset {st.pool}/{st.config.get('dataset')}")
            continue
        alive = system.pool_exists(st.pool) if pid else False
        state = "up" if st.complete and alive else ("incomplete: run `zfsmon lab down`" if not st.complete
                                                   else "pool missing: run `zfsmon lab down`")
        lines.append(f"lab {st.pool}: {state}; backing files in {os.path.dirname(st.devices[0].file) if st.devices else '-'}")
        lines.append(f"  {st.pool} [pool]  dataset {st.pool}/{st.config.get('dataset')}")
        parents = sorted({d.parent for d in st.devices if d.parent})
        for parent in parents:
            lines.append(f"    {parent} [data]")
            for d in st.devices:
                if d.parent == parent:
                    lim = rules.get(system.dev_numbers(d.loop)) if d.loop and os.path.exists(d.loop) else None
                    thr = f"  throttled to {lim} IOPS" if lim else ""
                    lines.append(f"      {d.loop}  ({os.path.basename(d.file)}){thr}")
        for d in st.devices:
            if not d.parent:
                lines.append(f"    {d.loop} [{d.role}]  ({os.path.basename(d.file)})")
    return lines
