"""The machine-level pieces a lab uses: the zfs-fuse daemon, loop devices, the blkio cgroup, the lock.

zfs-fuse is one daemon per machine, shared by every lab (and by anyone else's
pools). So: a machine-wide lock around every change, a record of whether
zfsmon started the daemon, and the daemon is stopped only when zfsmon started
it and no pool at all remains.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import psutil

from zfsmon.errors import UserError
from zfsmon.lab import flock
from zfsmon.lab.config import DAEMON_FILE, KSTAT_DIR, LOCK_FILE, RUN_DIR

BLKIO = Path("/sys/fs/cgroup/blkio")
CGROUP = BLKIO / "zfsmon-lab"


class LabError(UserError):
    """A lab step failed: the message says which and why."""


def run(argv: List[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise LabError(f"`{argv[0]}` is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from exc
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        raise LabError(f"`{' '.join(argv)}` failed: {msg[-1] if msg else f'exit {cp.returncode}'}")
    return cp


# --- preconditions ---------------------------------------------------------------------------------------------

def kernel_zfs_present() -> bool:
    return Path("/sys/module/zfs").exists() or Path("/proc/spl/kstat/zfs").exists()


def check_can_build() -> None:
    """Refuse, in one line, on a host where a zfs-fuse lab cannot or should not be built."""
    if kernel_zfs_present():
        raise LabError("a kernel ZFS module is loaded here: use your real pools; the zfs-fuse lab is not needed")
    if os.geteuid() != 0:
        raise LabError("the lab needs root (zfs-fuse, loop devices, cgroups): run it with sudo")
    if shutil.which("zfs-fuse") is None:
        raise LabError("zfs-fuse is not installed (Debian/Ubuntu: apt-get install zfs-fuse)")
    if not Path("/dev/fuse").exists():
        raise LabError("/dev/fuse is missing: load the fuse module (modprobe fuse) or give the container /dev/fuse")
    if shutil.which("losetup") is None:
        raise LabError("losetup is not installed (apt-get install mount)")


@contextlib.contextmanager
def machine_lock(timeout: float = 300.0) -> Iterator[None]:
    """One lab change at a time on this machine (tests in parallel wait here rather than race)."""
    with flock.held(LOCK_FILE, timeout, 0.2,
                    lambda _fd: LabError(f"another lab change holds {LOCK_FILE} for over {timeout:.0f} s")):
        yield


# --- the daemon --------------------------------------------------------------------------------------------------



def daemon_cmdline(pid: int) -> List[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def daemon_record() -> Dict[str, object]:
    try:
        return json.loads(DAEMON_FILE.read_text())
    except (OSError, ValueError):
        return {}


def zpool_ready() -> bool:
    cp = subprocess.run(["zpool", "list", "-H", "-o", "name"], capture_output=True, text=True, timeout=30)
    return cp.returncode == 0


def dead_mounts() -> List[str]:
    """Mount points a zfs-fuse daemon left behind when it died (no daemon runs, so every one of them is dead)."""
    out: List[str] = []
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and (parts[2] == "fuse.zfs" or (parts[2] == "fuse" and parts[1] == str(KSTAT_DIR))):
            out.append(parts[1].replace("\\040", " "))
    return out


def clear_dead_mounts() -> List[str]:
    """Lazily unmount what a crashed zfs-fuse left (its mounts answer "Transport endpoint is not connected")."""
    cleared = []
    for mnt in sorted(dead_mounts(), key=len, reverse=True):  # children first
        if run(["umount", "-l", mnt], check=False).returncode == 0:
            cleared.append(mnt)
    return cleared


def start_daemon(arc_mb: int) -> int:
    """Start zfs-fuse in the foreground of a new session (its -p is ignored with -n, so we keep the pid)."""
    clear_dead_mounts()
    KSTAT_DIR.mkdir(exist_ok=True)  # kstats appear only if this exists before the daemon starts
    log = open(RUN_DIR / "zfs-fuse.log", "ab")
    argv = ["zfs-fuse", "-n", "-m", str(arc_mb), "--disable-block-cache"]
    proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"zfs-fuse exited at start (status {proc.returncode}); see {RUN_DIR / 'zfs-fuse.log'}")
        if zpool_ready():
            DAEMON_FILE.write_text(json.dumps({"pid": proc.pid, "argv": argv, "started": time.time()}))
            return proc.pid
        time.sleep(0.2)
    proc.kill()
    raise LabError("zfs-fuse did not answer `zpool list` within 30 s")


def stop_daemon(pid: int) -> None:
    try:
        p = psutil.Process(pid)
        p.terminate()
        p.wait(timeout=30)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        p.kill()
        p.wait(timeout=10)
    DAEMON_FILE.unlink(missing_ok=True)


# --- loop devices ------------------------------------------------------------------------------------------------

def make_sparse(path: Path, size_mb: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size_mb * 1024 * 1024)


def attach_loop(path: Path) -> str:
    return run(["losetup", "-f", "--show", str(path)]).stdout.strip()


def loop_backing_file(loop: str) -> Optional[str]:
    name = os.path.basename(loop)
    try:
        return Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    except OSError:
        return None


def detach_loop(loop: str, expected_file: str) -> None:
    """Detach only if the loop device still points at our file (numbers get reused)."""
    backing = loop_backing_file(loop)
    if backing is None:
        return
    if os.path.realpath(backing.replace(" (deleted)", "")) != os.path.realpath(expected_file):
        return
    for _ in range(20):
        if run(["losetup", "-d", loop], check=False).returncode == 0:
            return
        time.sleep(0.25)
    raise LabError(f"cannot detach {loop} (still busy)")


def pool_exists(pool: str) -> bool:
    return run(["zpool", "list", "-H", "-o", "name", pool], check=False).returncode == 0


def create_pool(pool: str, vdev_args: List[str], attempts: int = 5) -> None:
    """``zpool create`` that tries again while zfs-fuse answers "I/O error" and no pool of that name came to be.

    zfs-fuse sometimes fails a create on fresh loop devices right after it destroyed a pool on the same loop
    numbers (as the crash-and-rebuild test does); the next attempt a moment later succeeds."""
    argv = ["zpool", "create", "-f", "-o", "cachefile=none", pool, *vdev_args]
    for attempt in range(attempts):
        cp = run(argv, check=False)
        if cp.returncode == 0:
            return
        reason = (cp.stderr or cp.stdout).strip().splitlines()
        last = reason[-1] if reason else f"exit {cp.returncode}"
        if "I/O error" not in last or pool_exists(pool) or attempt == attempts - 1:
            raise LabError(f"`{' '.join(argv)}` failed: {last}")
        time.sleep(0.5 * (attempt + 1))


def dev_numbers(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


# --- blkio throttling ----------------------------------------------------------------------------------------------

def throttle(devnums: List[str], iops: int, pid: int) -> None:
    """Make data loop devices behave like disks of `iops` operations/s, for the zfs-fuse process only."""
    if not BLKIO.is_dir() or not (BLKIO / "blkio.throttle.read_iops_device").exists():
        raise LabError("--slow-data needs the cgroup v1 blkio controller at /sys/fs/cgroup/blkio (not found)")
    CGROUP.mkdir(exist_ok=True)
    for dn in devnums:
        for f in ("blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"):
            (CGROUP / f).write_text(f"{dn} {iops}\n")
    (CGROUP / "cgroup.procs").write_text(str(pid))


def unthrottle(devnums: List[str]) -> None:
    if not CGROUP.is_dir():
        return
    for dn in devnums:
        for f in ("blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"):
            with contextlib.suppress(OSError):
                (CGROUP / f).write_text(f"{dn} 0\n")
    if throttle_rules():
        return  # another lab still throttles its devices
    for pid in (CGROUP / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            (BLKIO / "cgroup.procs").write_text(pid)
    with contextlib.suppress(OSError):
        CGROUP.rmdir()


def throttle_rules() -> Dict[str, int]:
    """Device -> read IOPS limit currently set in zfsmon's cgroup."""
    out: Dict[str, int] = {}
    try:
        text = (CGROUP / "blkio.throttle.read_iops_device").read_text()
    except OSError:
        return out
    for line in text.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = int(parts[1])
    return out
