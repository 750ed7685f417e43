"""Boot a cached guest image under QEMU (TCG), run one command in it, and bring the results back.

KVM is not assumed (TCG: ``-accel tcg,thread=multi -cpu max``). The root disk
is attached first with its own ``-device`` and ``snapshot=on`` (the cached
image stays pristine), booted by ``root=LABEL=``; the pool's disks are fresh
sparse files named by serial. The project tree is shared read-only, the output
directory writable; there is no network device. QEMU runs under ``timeout``
in its own session, and is ended, with the pool's disk files removed, however
the run ends (Ctrl-C and SIGTERM included). One guest at a time per machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Optional, Sequence

from zfsmon.defaults import SOURCE_TREE
from zfsmon.lab.guest import dtrace, hostctl, inguest, runner
from zfsmon.lab.guest.runner import PoolLayout
from zfsmon.lab.guest.spec import LOCK_DIR, ROOT_LABEL, RUN_ROOT, Image
from zfsmon.lab.guest.steps import GuestError, Progress, exclusive, kill_group, signals_raise, tail

QEMU = "qemu-system-x86_64"
REPO = SOURCE_TREE
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: seconds a guest may take to power off once its command has ended
POWEROFF_GRACE = 180.0


@dataclass(frozen=True)
class Machine:
    """The guest's virtual hardware."""

    memory_mib: int = 4096
    cpus: int = 2


@dataclass
class RunResult:
    exit_code: int
    out_dir: Path
    seconds: float
    console: Optional[Path]

    @property
    def output(self) -> Path:
        return self.out_dir / runner.OUTPUT_LOG


def check_can_boot(image: Image) -> None:
    if shutil.which(QEMU) is None:
        raise GuestError(f"QEMU is not installed (`{QEMU}`: apt-get install qemu-system-x86 qemu-utils, "
                         "or sudo bash scripts/install-deps.sh)")
    if os.geteuid() != 0:
        raise GuestError("running the guest needs root (its cached image, disks and lock are root's): use sudo")
    if not image.complete():
        raise GuestError(f"no complete guest image in {image.directory}: build it first (zfsmon guest build)")


def qemu_argv(image: Image, disks_dir: Path, out_dir: Path, src: Path, layout: Optional[PoolLayout],
              machine: Machine, keep: bool, console: Optional[Path], qmp: Optional[Path] = None) -> List[str]:
    """The QEMU command line (pure: tests check it without booting). ``qmp``: the socket the host answers the
    guest's requests through (:mod:`zfsmon.lab.guest.hostctl`); each pool disk's device has an id for it."""
    flags = "zfsmon.run=1" + (" zfsmon.keep=1" if keep else "")
    argv = [QEMU, "-name", "zfsmon-guest", "-machine", "pc", "-accel", "tcg,thread=multi", "-cpu", "max",
            "-smp", str(machine.cpus), "-m", str(machine.memory_mib), "-nodefaults", "-no-user-config",
            "-display", "none", "-no-reboot", "-nic", "none",
            "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", f"root=LABEL={ROOT_LABEL} rw console=ttyS0 panic=1 {flags}",
            # the root disk first, with its own device: otherwise it may come after the pool's disks
            "-drive", f"if=none,id=root,format=raw,snapshot=on,file={image.root}",
            "-device", "virtio-blk-pci,drive=root"]
    for d in layout.disks if layout else ():
        limit = (f",throttling.iops-read={layout.slow_data_iops}"
                 if layout and layout.slow_data_iops and d.role == "data" else "")
        argv += ["-drive", f"if=none,id={d.serial},format=raw,cache=unsafe{limit},"
                           f"file={disks_dir / (d.serial + '.img')}",
                 "-device", f"virtio-blk-pci,drive={d.serial},serial={d.serial},id={hostctl.device_id(d.serial)}"]
    argv += ["-virtfs", f"local,path={src},mount_tag={inguest.SRC_TAG},security_model=none,readonly=on",
             "-virtfs", f"local,path={out_dir},mount_tag={inguest.OUT_TAG},security_model=none"]
    argv += ["-serial", "mon:stdio"] if keep else ["-serial", f"file:{console}", "-monitor", "none"]
    if qmp is not None:
        argv += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    return argv


def existing_disks(disks_dir: Path, layout: PoolLayout) -> bool:
    """Whether ``disks_dir`` holds every disk of the layout (a pool from an earlier boot): then it is imported, not
    created. Some but not all of them is an error, never a silent new pool over old disks; so is a disk file that
    is a symbolic link or no regular file (QEMU would write through it)."""
    files = [disks_dir / f"{d.serial}.img" for d in layout.disks]
    odd = [f.name for f in files if f.is_symlink() or (f.exists() and not f.is_file())]
    if odd:
        raise GuestError(f"{disks_dir}: {', '.join(odd)} not a regular file: refusing to use it as a disk")
    there = [f for f in files if f.is_file()]
    if there and len(there) < len(files):
        raise GuestError(f"{disks_dir} holds only some of the pool's disks ({', '.join(f.name for f in there)}): "
                         "give an empty directory, or one with all of them")
    return bool(there)


def _prepare(out_dir: Path, command: str, layout: Optional[PoolLayout], params: Sequence[str] = (),
             dtrace_prefix: Optional[Path] = None) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    if dtrace_prefix is None:
        dtrace.unshare(out_dir)
    else:
        dtrace.share(dtrace_prefix, out_dir)
    params_file = out_dir / runner.PARAMS_FILE
    if params:
        params_file.write_text(" ".join(params) + "\n")
    else:
        params_file.unlink(missing_ok=True)
    for name in (runner.EXIT_FILE, runner.OUTPUT_LOG, "console.log"):
        (out_dir / name).unlink(missing_ok=True)
    (out_dir / inguest.RUNNER_NAME).write_text(runner.RUNNER_SH)
    (out_dir / runner.COMMAND_SCRIPT).write_text(runner.command_script(command, layout))
    pool = out_dir / runner.POOL_SCRIPT
    if layout is None:
        pool.unlink(missing_ok=True)
    else:
        pool.write_text(layout.script())


def run(image: Image, command: str, out_dir: Path, *, layout: Optional[PoolLayout] = PoolLayout(),
        src: Path = REPO, machine: Machine = Machine(), timeout: float = 1800, keep: bool = False,
        log=print, echo: bool = True, disks: Optional[Path] = None, params: Sequence[str] = (),
        dtrace_prefix: Optional[Path] = None) -> RunResult:
    """Boot, run ``command`` (bash) in the guest, power off. ``echo`` streams the guest's output as it comes.

    ``disks``: a directory that keeps the pool's disk files after the run (created on the first boot, the pool
    imported from them on the next: a reboot); by default they are fresh and removed afterwards. ``params``:
    the zfs module's parameters (NAME=VALUE) for this boot. ``dtrace_prefix``: an installed DTrace to carry into
    the guest (:mod:`zfsmon.lab.guest.dtrace`)."""
    check_can_boot(image)
    out_dir = out_dir.resolve()
    progress = Progress(log)
    with signals_raise(), exclusive(LOCK_DIR / "guest.lock", "a zfsmon guest"):
        RUN_ROOT.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="disks.", dir=RUN_ROOT))
        disks_dir = scratch
        try:
            if disks is not None and layout is not None:
                disks_dir = disks.resolve()
                disks_dir.mkdir(parents=True, exist_ok=True)
                if existing_disks(disks_dir, layout):
                    layout = replace(layout, existing=True)
                    progress.say(f"the pool's disks from {disks_dir}: importing {layout.pool}")
            for d in layout.disks if layout and not layout.existing else ():
                fd = os.open(disks_dir / f"{d.serial}.img", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o600)
                with os.fdopen(fd, "wb") as f:
                    f.truncate(d.size_mib * 1024 * 1024)
            _prepare(out_dir, command, layout, params, dtrace_prefix)
            console = None if keep else out_dir / "console.log"
            qmp = None if keep or layout is None else scratch / "qmp.sock"
            argv = qemu_argv(image, disks_dir, out_dir, src, layout, machine, keep, console, qmp)
            env = dict(os.environ, TMPDIR=str(scratch))  # the root disk's snapshot overlay goes there
            if keep:
                progress.say("booting with the serial console here: root logs in without a password; "
                             "`poweroff` (or Ctrl-A x) leaves")
                cp = subprocess.run(["timeout", "--foreground", "-k", "30", str(int(timeout)), *argv], env=env)
                qemu_rc = cp.returncode
            else:
                ctl = None
                if qmp is not None and layout is not None:
                    ctl = hostctl.HostControl(out_dir, qmp, {d.serial: disks_dir / f"{d.serial}.img"
                                                             for d in layout.disks}, log=progress.say)
                    ctl.prepare()
                qemu_rc = _watch(argv, env, out_dir, console, timeout, progress, echo, ctl)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    seconds = progress.elapsed()
    exit_file = out_dir / runner.EXIT_FILE
    if not exit_file.is_file():
        why = "timed out" if qemu_rc == 124 else f"QEMU exited {qemu_rc}"
        raise GuestError(f"the guest did not finish its command ({why} after {seconds:.0f} s); "
                         f"console: {console}\n{_console_tail(console)}")
    code = int(exit_file.read_text().strip() or "255")
    progress.say(f"guest done: command exit {code}, {seconds:.0f} s in all; results in {out_dir}")
    return RunResult(code, out_dir, seconds, console)


def _console_tail(console: Optional[Path]) -> str:
    return ANSI.sub("", tail(console, 20)) if console else ""


def _watch(argv: List[str], env: dict, out_dir: Path, console: Optional[Path], timeout: float, progress: Progress,
           echo: bool, ctl: Optional[hostctl.HostControl] = None) -> int:
    """Run QEMU to its end, streaming the guest's output, with a heartbeat from the console while it boots, and
    answering the guest's requests to the host (``ctl``) as they come."""
    progress.say(f"booting the guest (TCG, {argv[argv.index('-smp') + 1]} CPUs); console: {console}")
    with open(out_dir / "qemu.log", "wb") as qlog:
        proc = subprocess.Popen(["timeout", "-k", "30", str(int(timeout)), *argv], stdout=qlog, stderr=qlog,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    output = out_dir / runner.OUTPUT_LOG
    offset, last_news = 0, time.monotonic()
    finished: Optional[float] = None
    try:
        while proc.poll() is None:
            if finished is None and (out_dir / runner.EXIT_FILE).is_file():
                finished = time.monotonic()
            elif finished is not None and time.monotonic() - finished > POWEROFF_GRACE:
                # the command is done and its results are in the share: a guest that cannot power off (a
                # suspended pool holds its shutdown) is not waited for until the timeout
                progress.say(f"the guest did not power off {POWEROFF_GRACE:.0f} s after its command ended: "
                             "stopping QEMU")
                break
            time.sleep(1.0)
            offset, news = _stream(output, offset, progress if echo else None)
            for req, answer in ctl.poll() if ctl is not None else ():
                progress.say(f"  host| {req}: {answer}")
            now = time.monotonic()
            if news:
                last_news = now
            elif now - last_news >= 60:
                last_news = now
                line = _console_tail(console).splitlines()
                progress.say(f"  ... console: {line[-1][:150] if line else '(nothing yet)'}")
        _stream(output, offset, progress if echo else None)
    finally:
        if ctl is not None:
            ctl.close()
        kill_group(proc)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    if proc.returncode not in (0, 124):
        progress.say(f"QEMU exited {proc.returncode}: {tail(out_dir / 'qemu.log', 5)}")
    return proc.returncode


def _stream(path: Path, offset: int, progress: Optional[Progress]):
    """Print what the guest appended to its output since ``offset`` (whole lines only)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return offset, False
    end = data.rfind(b"\n") + 1
    if end <= 0:
        return offset, False
    if progress is not None:
        for line in data[:end].decode(errors="replace").splitlines():
            progress.say(f"  guest| {line}")
    return offset + end, True
