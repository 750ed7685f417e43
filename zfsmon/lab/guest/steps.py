"""Long host-side steps of the guest: progress with elapsed time, child processes, mounts, locks.

A build takes ~20 minutes and a guest run several, so each step says what it
does and how long it took, a heartbeat repeats the log's last line during long
ones, and nothing outlives an interruption: children run in their own session
and are killed on any exception (Ctrl-C, or SIGTERM turned into one), and
mounts made under a directory are undone (also those a killed build left).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence

from zfsmon.errors import UserError
from zfsmon.lab import flock

Log = Callable[[str], None]


class GuestError(UserError):
    """A guest step failed or cannot start: the message says which and why."""


class Progress:
    """Prints ``[mm:ss] message`` lines, the time counted from the start of the whole job."""

    def __init__(self, log: Log = print) -> None:
        self.t0 = time.monotonic()
        self.log = log

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, message: str) -> None:
        e = int(self.elapsed())
        self.log(f"[{e // 60:2d}:{e % 60:02d}] {message}")


def last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = [x for x in f.read().decode(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:160] if lines else ""


def tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def kill_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """End a child started with its own session, and everything it started."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_step(progress: Progress, what: str, argv: Sequence[str], logfile: Path, timeout: float,
             heartbeat: float = 60.0, env: Optional[dict] = None) -> None:
    """Run one step, its output appended to ``logfile``; say when it starts, how it goes, and how long it took."""
    progress.say(f"{what} ...")
    t0 = time.monotonic()
    with open(logfile, "ab") as out:
        out.write(f"\n### {what}: {' '.join(argv)}\n".encode())
        out.flush()
        try:
            proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=env)
        except FileNotFoundError as exc:
            raise GuestError(f"`{argv[0]}` is not installed") from exc
    try:
        next_beat = t0 + heartbeat
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            if now - t0 > timeout:
                raise GuestError(f"{what}: did not finish within {timeout:.0f} s (log: {logfile})")
            if now >= next_beat:
                next_beat = now + heartbeat
                progress.say(f"  ... {what}, {now - t0:.0f} s: {last_line(logfile)}")
    finally:
        kill_group(proc)
    if proc.returncode != 0:
        raise GuestError(f"{what} failed (exit {proc.returncode}); the last lines of {logfile}:\n{tail(logfile)}")
    progress.say(f"{what}: done in {time.monotonic() - t0:.0f} s")


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt, so clean-up code runs as it does on Ctrl-C.

    SIGINT too: a background job of a non-interactive shell starts with SIGINT ignored, and would
    otherwise not stop on it at all (seen: a guest run sent SIGINT ran its command to the end).
    """
    def handler(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def exclusive(lock: Path, what: str, wait: float = 0.0) -> Iterator[None]:
    """A machine-wide lock (flock): two builds, or two guests, never run at once."""
    def busy(fd: int) -> GuestError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        return GuestError(f"{what} is already running on this machine (pid {holder or '?'}, lock {lock})")

    with flock.held(lock, wait, 1.0, busy) as fd:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield


def mounts_under(directory: Path) -> List[str]:
    """Mount points at or below ``directory``, deepest first."""
    root = os.path.realpath(directory)
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            mnt = line.split()[1].replace("\\040", " ")
            if mnt == root or mnt.startswith(root + "/"):
                out.append(mnt)
    return sorted(out, key=len, reverse=True)


def unmount_all(directory: Path) -> None:
    """Undo every mount below ``directory``; lazily if a plain unmount is refused."""
    for mnt in mounts_under(directory):
        if subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    left = mounts_under(directory)
    if left:
        raise GuestError(f"could not unmount {', '.join(left)}")


@contextlib.contextmanager
def chroot_mounts(rootfs: Path) -> Iterator[None]:
    """proc, sys, dev and dev/pts inside a chroot, always undone."""
    try:
        for kind, src, sub in (("proc", "proc", "proc"), ("sysfs", "sys", "sys"), ("bind", "/dev", "dev"),
                               ("bind", "/dev/pts", "dev/pts")):
            target = rootfs / sub
            target.mkdir(parents=True, exist_ok=True)
            argv = ["mount", "--bind", src, str(target)] if kind == "bind" else ["mount", "-t", kind, src, str(target)]
            cp = subprocess.run(argv, capture_output=True, text=True)
            if cp.returncode != 0:
                raise GuestError(f"`{' '.join(argv)}` failed: {cp.stderr.strip()}")
        yield
    finally:
        unmount_all(rootfs)
