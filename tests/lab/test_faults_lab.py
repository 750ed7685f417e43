"""Issue 16's fault matrix on the live lab: `zfsmon record` at 1 s with a workload running, a fault injected, and
what the recording holds afterwards checked row by row (and `zfsmon top` read through tmux on the first rows).

For every row: no traceback, the fault is an event in plain words, no negative or absurd rate, and no pool
interval lost outside the fault's own window (the intervals before and after it are counted). Each test prints
its measured recovery time (``RECOVERY <row> <seconds>``), the figure docs/reliability.md quotes.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import pytest

from tests.conftest import REPO, need, wait_until
from tests.lab.helpers import write_file
from tests.lab.test_top_tmux import _cells, _nonzero, _row, _screen, _state, _tmux, _wait
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Kind, Sample
from zfsmon.store import Recording, RecordingError
from zfsmon.views.top.panels import TITLES

pytestmark = [pytest.mark.lab, pytest.mark.slow]

INTERVAL = 1.0
#: a 2**64 wrap or a counter read against the wrong baseline shows up as a rate far beyond anything a lab can do
ABSURD = 1e13


def _pool_ticks(path: str, pool: str) -> List[float]:
    try:
        with Recording.open(path) as r:
            keys = [e.key for e in r.entities() if e.kind == Kind.POOL and e.name == pool]
            return sorted({s.ts for s in r.samples(entity_keys=keys) if not s.since_boot}) if keys else []
    except RecordingError:
        return []


@dataclass
class Recorded:
    """What a finished run left: its samples, events and the pool's interval times."""

    samples: List[Sample]
    events: List[Event]
    ticks: List[float]
    stderr: str
    top_screens: List[str] = field(default_factory=list)

    def texts(self, *kinds: EventKind) -> List[str]:
        return [e.text for e in self.events if not kinds or e.kind in kinds]


class FaultRun:
    """`zfsmon record --pool POOL -i 1` (and optionally `zfsmon top` in tmux) over a lab pool, with writes going on."""

    def __init__(self, lab, tmp_path, name: str, top: bool = False, sources: Optional[List[str]] = None,
                 prefix: Optional[List[str]] = None) -> None:
        self.prefix = prefix or []
        self.lab = lab
        self.pool = lab.pool
        self.path = str(tmp_path / f"{name}.zfsmon")
        self.name = name
        self.top = top
        self.sources = sources or []
        self.tmp = tmp_path
        self.session = f"zfsmon-fault-{name}-{os.getpid()}"
        self.rc_file = tmp_path / f"{name}.top.rc"
        self.stop_io = threading.Event()
        self.io_errors: List[str] = []
        self.proc: Optional[subprocess.Popen] = None
        self.err_path = tmp_path / f"{name}.stderr"
        self.fault_start = 0.0
        self.fault_end = 0.0
        self.screens: List[str] = []
        #: seconds after the fault's end that still belong to it (a restart's back-off)
        self.grace = 3.0

    # --- running -------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._err = open(self.err_path, "w")
        self.proc = subprocess.Popen([*self.prefix, sys.executable, "-m", "zfsmon", "record", *self.sources, "--pool", self.pool,
                                      "--interval", "1", "--out", self.path, "-q"], cwd=str(REPO),
                                     stdout=subprocess.DEVNULL, stderr=self._err)
        if self.top:
            need(shutil.which("tmux") is not None, "tmux not installed")
            cmd = (f"unset COLUMNS LINES; cd {REPO} && {sys.executable} -m zfsmon top --pool {self.pool} -i 1 "
                   f"--no-record; echo $? > {self.rc_file}; sleep 600")  # the pane stays: what top printed on exit is read
            _tmux("new-session", "-d", "-s", self.session, "-x", "130", "-y", "45", cmd)
            _tmux("set-option", "-t", self.session, "window-size", "manual")
            _tmux("resize-window", "-t", self.session, "-x", "130", "-y", "45")
        threading.Thread(target=self._writes, daemon=True).start()
        try:
            self.wait_ticks(5, "five pool intervals recorded before the fault")
            if self.top:
                self.screen(lambda s: self.pool in s and "mirror-0" in s and "LIVE" in s, "the pool's tree in top")
        except BaseException:
            self.stop(check=False)
            raise

    def _writes(self) -> None:
        target = os.path.join(self.lab.mountpoint, f"fault-{self.name}.bin")
        while not self.stop_io.is_set():
            try:
                write_file(target, 2)
            except OSError as exc:  # the pool may be away during the fault: keep trying
                self.io_errors.append(str(exc))
                self.stop_io.wait(0.5)

    def ticks(self) -> List[float]:
        return _pool_ticks(self.path, self.pool)

    def wait_ticks(self, n: int, what: str, after: Optional[float] = None, timeout: float = 120) -> float:
        """Wait for ``n`` pool intervals (after time ``after``); returns the first of them."""
        def enough() -> Optional[float]:
            t = [x for x in self.ticks() if after is None or x > after]
            return t[0] if len(t) >= n else None
        assert self.proc is not None
        wait_until(lambda: enough() is not None or self.proc.poll() is not None, timeout, what, step=0.5)
        assert self.proc.poll() is None, f"zfsmon record ended: {self.err_path.read_text()}"
        return enough()  # type: ignore[return-value]

    def screen(self, pred: Callable[[str], object], what: str, timeout: float = 120) -> str:
        s = _wait(self.session, pred, timeout, what)
        self.screens.append(s)
        return s

    def fault(self, begin: Callable[[], None]) -> None:
        self.fault_start = time.time()
        begin()

    def recovered(self, end: Optional[Callable[[], None]] = None) -> None:
        if end is not None:
            end()
        self.fault_end = time.time()

    def recovery(self, n: int = 3) -> float:
        """Seconds from the fault's end to the first of ``n`` pool intervals recorded after it."""
        first = self.wait_ticks(n, f"{n} pool intervals after the fault", after=self.fault_end)
        return max(0.0, first - self.fault_end)

    def stop(self, check: bool = True) -> Recorded:
        assert self.proc is not None
        if check and self.fault_end and self.proc.poll() is None:  # enough intervals after the fault to count
            self.wait_ticks(4, "four pool intervals after the fault's own window", after=self.fault_end + self.grace)
        self.stop_io.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._err.close()
            if self.top:
                _tmux("send-keys", "-t", self.session, "q")
                try:
                    wait_until(self.rc_file.exists, 60, "zfsmon top to exit after q", step=0.3)
                    self.screens.append(_screen(self.session))
                finally:
                    _tmux("kill-session", "-t", self.session)
            target = os.path.join(self.lab.mountpoint, f"fault-{self.name}.bin")
            if os.path.exists(target):
                os.unlink(target)
        err = self.err_path.read_text()
        if not check:
            return Recorded([], [], [], err)
        assert self.proc.returncode == 0, err
        if self.top:
            assert self.rc_file.read_text().strip() == "0", self.screens[-1]
            assert not any("Traceback" in s for s in self.screens), self.screens
        with Recording.open(self.path) as r:
            samples = list(r.samples())
            events = list(r.events())
        return Recorded(samples, events, self.ticks(), err, self.screens)

    def check(self, rec: Recorded) -> None:
        """The promises every row shares."""
        assert "Traceback" not in rec.stderr, rec.stderr
        assert not any("Traceback" in e.text for e in rec.events)
        _no_bad_rates(rec.samples)
        _no_lost_intervals(rec.ticks, self.fault_start, self.fault_end + self.grace)


def _no_bad_rates(samples: List[Sample]) -> None:
    """Every number a rate view would show is >= 0 and below ABSURD: recorded rates and rates of counters."""
    rd = RateDeriver()
    for s in sorted(samples, key=lambda s: s.ts):
        if s.since_boot:
            continue
        for k, v in s.metrics.items():
            if isinstance(v, (int, float)) and k.endswith(("_ops", "_bw", "_bytes", "_per_s")):
                assert 0 <= v < ABSURD and not math.isnan(v), (s.entity.key, k, v, s.ts)
        d, _ = rd.update(s)
        if d is not None:
            for k, v in d.rates.items():
                assert 0 <= v < ABSURD, (s.entity.key, k, v, s.ts)


def _no_lost_intervals(ticks: List[float], start: float, end: float) -> None:
    """Outside [start, end], consecutive pool intervals are at most two seconds apart (zpool prints whole-second
    times, so a report that drifts across a second boundary shows as 2 s), and the count matches the span."""
    before = [t for t in ticks if t < start]
    after = [t for t in ticks if t > end]
    assert len(before) >= 3 and len(after) >= 3, (before, after, start, end)
    for part in (before, after):
        gaps = [b - a for a, b in zip(part, part[1:])]
        assert max(gaps) <= 2.0 * INTERVAL + 0.01, gaps
        assert len(part) >= (part[-1] - part[0]) / INTERVAL, part


def _zpool(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    cp = subprocess.run(["zpool", *args], capture_output=True, text=True, timeout=120)
    if check:
        assert cp.returncode == 0, (args, cp.stderr)
    return cp


def _report(row: str, seconds: float) -> None:
    print(f"RECOVERY {row} {seconds:.1f}")


# --- rows ----------------------------------------------------------------------------------------------------

def test_fault_cache_device_removed_and_added_back(lab, tmp_path):
    cache_dev = lab.devices["cache"][0]
    cache = os.path.basename(cache_dev)
    run = FaultRun(lab, tmp_path, "cache", top=True)
    run.start()
    removed = False
    try:
        run.screen(lambda s: _cells(s, cache) is not None, "the cache device in top")
        run.fault(lambda: _zpool("remove", lab.pool, cache_dev))
        removed = True
        # the L2ARC counters are the ARC's and outlive the device: the panel says there is none instead
        run.screen(lambda s: _cells(s, cache) is None and "mirror-0" in s and "L2ARC: no cache device" in s,
                   "top without the cache device, its L2ARC panel saying so")
        run.wait_ticks(2, "intervals without the cache device", after=time.time())
        _zpool("add", "-f", lab.pool, "cache", cache_dev)
        removed = False
        run.recovered()
        recovery = run.recovery()
        run.screen(lambda s: _cells(s, cache) is not None and "L2ARC: no cache device" not in s,
                   "the cache device back in top, and its L2ARC figures")
    finally:
        if removed:
            _zpool("add", "-f", lab.pool, "cache", cache_dev, check=False)
        rec = run.stop()
    run.check(rec)
    topo = [e for e in rec.events if e.kind == EventKind.TOPOLOGY]
    assert any(cache in e.text and "removed" in e.text for e in topo), rec.texts()
    assert any(cache in e.text and "added" in e.text for e in topo), rec.texts()
    _report("cache", recovery)


def test_fault_log_device_removed_and_added_back(lab, tmp_path):
    log_dev = lab.devices["log"][0]
    log = os.path.basename(log_dev)
    run = FaultRun(lab, tmp_path, "log", top=True)
    run.start()
    removed = False
    try:
        run.screen(lambda s: _cells(s, log) is not None and "logs" in s, "the log device in top")
        run.fault(lambda: _zpool("remove", lab.pool, log_dev))
        removed = True
        run.screen(lambda s: _cells(s, log) is None and "mirror-0" in s, "top without the log device")
        run.wait_ticks(2, "intervals without the log device", after=time.time())
        _zpool("add", "-f", lab.pool, "log", log_dev)
        removed = False
        run.recovered()
        recovery = run.recovery()
        run.screen(lambda s: _cells(s, log) is not None and "logs" in s, "the log device back in top")
    finally:
        if removed:
            _zpool("add", "-f", lab.pool, "log", log_dev, check=False)
        rec = run.stop()
    run.check(rec)
    topo = [e for e in rec.events if e.kind == EventKind.TOPOLOGY]
    assert any(log in e.text and "removed" in e.text for e in topo), rec.texts()
    assert any(log in e.text and "added" in e.text for e in topo), rec.texts()
    _report("log", recovery)


def test_fault_data_leaf_offlined_then_onlined(lab, tmp_path):
    leaf_dev, other_dev = lab.devices["data"][0], lab.devices["data"][1]
    leaf, other = os.path.basename(leaf_dev), os.path.basename(other_dev)
    run = FaultRun(lab, tmp_path, "offline", top=True)
    run.start()
    offline = False
    try:
        run.fault(lambda: _zpool("offline", lab.pool, leaf_dev))
        offline = True
        # the offline leaf's row says OFFLINE (the status source, every 10 s) and drops to zero while its
        # mirror partner goes on counting
        run.screen(lambda s: _row(s, leaf) == ["0", "0", "0", "0"] and _nonzero(_row(s, other))
                   and _state(s, leaf) == "OFFLINE" and _state(s, other) == "",
                   "the offline leaf OFFLINE at 0 and its partner counting, in top")
        t_off = time.time()
        run.wait_ticks(3, "intervals with the leaf offline", after=t_off)
        _zpool("online", lab.pool, leaf_dev)
        offline = False
        run.recovered()
        recovery = run.recovery()
    finally:
        if offline:
            _zpool("online", lab.pool, leaf_dev, check=False)
        rec = run.stop()
    run.check(rec)
    words = " ".join(rec.texts()).lower()
    assert leaf in words and ("offline" in words or "degraded" in words), rec.texts()
    during = [s for s in rec.samples if s.entity.kind == Kind.LEAF and s.entity.name == other and not s.since_boot
              and run.fault_start + 2 < s.ts < run.fault_end]
    assert any(s.metrics.get("write_ops", 0) > 0 for s in during), "the other leaf's writes were not counted"
    _report("offline", recovery)


def test_fault_pool_exported_then_imported(lab, tmp_path):
    run = FaultRun(lab, tmp_path, "export", top=True)
    run.grace = 35  # the collector's back-off: at most 30 s between attempts
    run.start()
    exported = False
    try:
        def export() -> None:
            run.stop_io.set()  # nothing may hold the pool's files open
            wait_until(lambda: _zpool("export", lab.pool, check=False).returncode == 0, 120,
                       "the pool to export", step=1)
        run.fault(export)
        exported = True
        run.screen(lambda s: "stale" in s or "no longer" in s or "error" in s.lower(), "top saying the pool is away")
        _zpool("import", "-o", "cachefile=none", "-d", "/dev", lab.pool)
        exported = False
        run.recovered()
        run.stop_io.clear()
        threading.Thread(target=run._writes, daemon=True).start()
        recovery = run.recovery()
        run.screen(lambda s: "stale" not in s and "mirror-0" in s, "top live again")
    finally:
        if exported:
            _zpool("import", "-o", "cachefile=none", "-d", "/dev", lab.pool, check=False)
        rec = run.stop()
    run.check(rec)
    errors = rec.texts(EventKind.ERROR)
    assert errors and any(lab.pool in t for t in errors), rec.texts()
    assert len(errors) < 30, errors  # no error storm
    _report("export", recovery)


def _children(pid: int, word: str) -> List[int]:
    import psutil

    out = []
    for c in psutil.Process(pid).children(recursive=True):
        try:
            if word in " ".join(c.cmdline()):
                out.append(c.pid)
        except psutil.Error:  # ended (or a zombie) between the listing and the read: not a live child
            continue
    return out


def _iostat_children(pool: str) -> List[int]:
    """Every `zpool iostat` of this pool (the recorder's and top's)."""
    import psutil

    out = []
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if argv[:2] == ["zpool", "iostat"] and pool in argv:
            out.append(p.pid)
    return out


def test_fault_zpool_iostat_child_hung_then_killed(lab, tmp_path):
    run = FaultRun(lab, tmp_path, "hung", top=True)
    run.start()
    assert run.proc is not None
    try:
        child = _children(run.proc.pid, "iostat")
        assert len(child) == 1, child
        stopped = _iostat_children(lab.pool)  # the recorder's and top's

        def hang() -> None:
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
        run.fault(hang)
        run.screen(lambda s: "stale" in s, "top showing the vdevs stale with their age")
        wait_until(lambda: (c := _children(run.proc.pid, "iostat")) and c != child, 120,
                   "the hung zpool iostat replaced", step=0.5)
        run.recovered()
        recovery_hung = run.recovery()
        run.screen(lambda s: "stale" not in s and "mirror-0" in s, "top live again after the hang")
        second = _children(run.proc.pid, "iostat")
        t_kill = time.time()
        for pid in _iostat_children(lab.pool):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: (c := _children(run.proc.pid, "iostat")) and c != second, 120,
                   "the killed zpool iostat replaced", step=0.5)
        run.fault_end = time.time()
        recovery_killed = run.recovery()
        run.screen(lambda s: "stale" not in s and "mirror-0" in s, "top live again")
    finally:
        rec = run.stop()
    # the killed child's interval belongs to the fault too: check the whole window from the SIGSTOP on
    run.check(rec)
    errors = rec.texts(EventKind.ERROR)
    assert any("printed nothing" in t and "hung" in t for t in errors), rec.texts()
    assert any("ended" in t for t in errors if t), rec.texts()
    assert t_kill > run.fault_start
    # a sampler held up by the hung child would show no ARC sample until the child is replaced (10 s of
    # silence, `hang_after`); a busy machine only delays single samples by a second or two
    arc = [s.ts for s in rec.samples if s.entity.kind == Kind.ARC and run.fault_start <= s.ts <= t_kill]
    edges = [run.fault_start, *arc, t_kill]
    gaps = [b - a for a, b in zip(edges, edges[1:])]
    assert len(arc) >= 3 and max(gaps) < 6.0, ("arcstats was held up by the hung child", gaps)
    _report("hung", recovery_hung)
    _report("killed", recovery_killed)


def test_fault_two_recorders_on_one_file(lab, tmp_path):
    run = FaultRun(lab, tmp_path, "two")
    run.start()
    try:
        run.fault(lambda: None)
        cp = subprocess.run([sys.executable, "-m", "zfsmon", "record", "--pool", lab.pool, "--interval", "1",
                             "--out", run.path, "--duration", "5s", "-q"], cwd=str(REPO), capture_output=True,
                            text=True, timeout=120)
        run.recovered()
        recovery = run.recovery()
    finally:
        rec = run.stop()
    assert cp.returncode != 0, (cp.stdout, cp.stderr)
    assert "Traceback" not in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    assert "already" in cp.stderr or "in use" in cp.stderr or "another" in cp.stderr, cp.stderr
    run.check(rec)
    _report("two", recovery)


def test_fault_read_only_output_directory(lab, tmp_path):
    """`zfsmon record --out` into a directory on a read-only mount (a read-only bind mount in a private mount
    namespace: root ignores permission bits). A file system cannot be turned read-only under an open writer (the
    kernel answers EBUSY), so the mid-recording case is the full disk's (tests/unit/store/test_store_durability.py)."""
    need(shutil.which("unshare") is not None, "unshare missing")
    out = tmp_path / "ro"
    out.mkdir()
    path = str(out / "ro.zfsmon")
    t0 = time.time()
    cp = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                         f'mount --bind "{out}" "{out}" && mount -o remount,ro,bind "{out}" && exec "{sys.executable}" '
                         f'-m zfsmon record --pool {lab.pool} --interval 1 --out "{path}" -q --duration 30s'],
                        cwd=str(REPO), capture_output=True, text=True, timeout=120)
    took = time.time() - t0
    assert cp.returncode != 0 and "Traceback" not in cp.stderr, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0].lower() and "ro.zfsmon" in lines[0], cp.stderr
    assert not os.path.exists(path)
    _report("read-only", took)


def test_fault_kstat_directory_vanishes_and_returns(lab, tmp_path):
    """zfs-fuse's kstats are a FUSE file system (/zfs-kstat): the recorder runs in a private mount namespace, where
    an empty tmpfs is mounted over the kstat directory (it vanishes) and unmounted again (it returns)."""
    need(shutil.which("unshare") is not None and shutil.which("nsenter") is not None, "unshare/nsenter missing")
    run = FaultRun(lab, tmp_path, "kstat", prefix=["unshare", "-m", "--propagation", "private"])
    run.start()
    assert run.proc is not None
    ns = ["nsenter", "-t", str(run.proc.pid), "-m"]
    hidden = False
    try:
        wait_until(lambda: any(s.entity.kind == Kind.ARC for s in _samples(run.path)), 120, "ARC samples", step=0.5)
        run.fault(lambda: subprocess.run([*ns, "mount", "-t", "tmpfs", "none", lab.kstat_dir], check=True,
                                         timeout=60))
        hidden = True
        wait_until(lambda: any(e.kind == EventKind.ERROR and "arc" in e.text for e in _events(run.path)), 120,
                   "an error event for the vanished kstats", step=0.5)
        subprocess.run([*ns, "umount", lab.kstat_dir], check=True, timeout=60)
        hidden = False
        run.recovered()
        wait_until(lambda: any(s.entity.kind == Kind.ARC and s.ts > run.fault_end for s in _samples(run.path)),
                   120, "ARC samples again", step=0.5)
        recovery = min(s.ts for s in _samples(run.path) if s.entity.kind == Kind.ARC and s.ts > run.fault_end) \
            - run.fault_end
    finally:
        if hidden:
            subprocess.run([*ns, "umount", lab.kstat_dir], check=False, timeout=60)
        rec = run.stop()
    run.check(rec)
    errors = [t for t in rec.texts(EventKind.ERROR) if "arc" in t]
    assert errors and all("Traceback" not in t for t in errors), rec.texts()
    _report("kstat", recovery)


def test_fault_zfs_fuse_daemon_stopped_kstat_reads_stuck(lab, tmp_path):
    """SIGSTOP the zfs-fuse daemon: its kstats are FUSE files, so the recorder's ARC read blocks in the kernel
    (state D) until SIGCONT. The recording says the source is stale, diskstats goes on, and SIGTERM ends the
    recorder while the read is still stuck. Every pool of the machine stops with the daemon: run only while the
    lab's pool is the only one, under the lab's machine lock, kept short; SIGCONT whatever happens."""
    from zfsmon.host import zfs_fuse_pid
    from zfsmon.lab import system

    def alone() -> bool:
        cp = _zpool("list", "-H", "-o", "name", check=False)
        return cp.returncode == 0 and cp.stdout.split() == [lab.pool]
    wait_until(alone, 900, "the lab's pool to be the only pool on the machine (other lab tests running)", step=5)
    run = FaultRun(lab, tmp_path, "sigstop")
    run.start()
    assert run.proc is not None
    stopped = None
    try:
        wait_until(lambda: any(s.entity.kind == Kind.ARC for s in _samples(run.path)), 120, "ARC samples", step=0.5)
        with system.machine_lock():
            stopped = zfs_fuse_pid()
            assert stopped is not None
            run.stop_io.set()  # the writer would block in the stopped daemon as well
            run.fault(lambda: os.kill(stopped, signal.SIGSTOP))  # type: ignore[arg-type]
            stale = wait_until(lambda: [e for e in _events(run.path) if e.source == "arcstats"
                                        and "read did not return within" in e.text], 60,
                               "the stuck ARC read recorded as stale", step=0.5)
            assert stale[0].kind == EventKind.ERROR and "stuck kernel read?" in stale[0].text, stale[0].text
            wait_until(lambda: len({s.ts for s in _samples(run.path) if s.source == "diskstats"
                                    and s.ts > stale[0].ts}) >= 3, 60, "diskstats sampled meanwhile", step=0.5)
            t0 = time.monotonic()
            run.proc.send_signal(signal.SIGTERM)
            run.proc.wait(timeout=60)
            took = time.monotonic() - t0
            os.kill(stopped, signal.SIGCONT)
            stopped = None
            run.recovered()
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        run.stop(check=False)
    err = run.err_path.read_text()
    assert run.proc.returncode == 0 and "Traceback" not in err, err
    assert "zfsmon: warning: arcstats: a read has not returned for" in err, err
    with Recording.open(run.path) as r:
        assert r.integrity() == "ok"
        assert list(r.events())[-1].text == "recording stopped"
    _report("sigstop", took)


def _samples(path: str) -> List[Sample]:
    try:
        with Recording.open(path) as r:
            return list(r.samples())
    except RecordingError:
        return []


def _events(path: str) -> List[Event]:
    try:
        with Recording.open(path) as r:
            return list(r.events())
    except RecordingError:
        return []


def _under(screen: str, title: str) -> str:
    """What top prints on the line under a panel's heading, within the panel's columns: its status while the
    source is away ("error: ...", "stale: last data 5s ago", "no data from this source"), else its first row."""
    lines = screen.splitlines()
    for i, line in enumerate(lines[:-1]):
        found = re.search(rf" {re.escape(TITLES[title])}( |$)", line)
        if found is None:
            continue
        at = found.start()
        ends = [m.start() for t in TITLES.values() for m in re.finditer(rf" {re.escape(t)}( |$)", line) if m.start() > at]
        return lines[i + 1][at:min(ends, default=len(lines[i + 1]))].strip()
    return ""


def _sources_away(screen: str) -> bool:
    """The vdev tree and the ARC panel both say how old their figures are ("stale: last data 5s ago", then the
    source's error if it has one)."""
    return all(_under(screen, area).startswith("stale: last data ") for area in ("vdevs", "arc"))


def _sources_back(screen: str, pool: str) -> bool:
    """No status line under either heading (their sources report again), and the pool's row has an interval's
    figures (a since-import report would be ``pool*``) with writes counted."""
    row = _row(screen, pool)
    return (_under(screen, "vdevs").split()[:2] == ["vdev", "r/s"] and _under(screen, "arc").startswith("hit")
            and row is not None and _nonzero(row))


def test_fault_zfs_fuse_daemon_killed_and_restarted(lab, tmp_path):
    """The last row on purpose: every pool of the machine goes away with the daemon. Run only while the lab's pool
    is the machine's only one (waits for other lab tests to finish), under the lab's machine lock, kept short."""
    from zfsmon.host import zfs_fuse_pid
    from zfsmon.lab import system

    def alone() -> bool:
        cp = _zpool("list", "-H", "-o", "name", check=False)
        return cp.returncode == 0 and cp.stdout.split() == [lab.pool]
    wait_until(alone, 900, "the lab's pool to be the only pool on the machine (other lab tests running)", step=5)
    run = FaultRun(lab, tmp_path, "daemon", top=True)
    run.grace = 35  # the restart back-off: up to 30 s between attempts
    run.start()
    try:
        with system.machine_lock():
            pid = zfs_fuse_pid()
            assert pid is not None
            argv = system.daemon_cmdline(pid)
            arc_mb = int(argv[argv.index("-m") + 1]) if "-m" in argv else 64

            def kill() -> None:
                # writes stop first: with the dataset's mount gone they would land in the directory beneath it
                run.stop_io.set()
                os.kill(pid, signal.SIGKILL)
                wait_until(lambda: zfs_fuse_pid() is None, 60, "zfs-fuse gone", step=0.2)
            run.fault(kill)
            # top's own zpool iostat and kstat reads went with the daemon: its panels say so, with the data's age
            down = run.screen(_sources_away, "top's vdev and ARC panels saying how old their figures are")
            assert _cells(down, lab.pool) is not None, down  # the last figures stay, under their age

            def restarted() -> bool:
                try:  # the killed daemon may be this process's child (the lab fixture started it): reap it
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                try:
                    system.start_daemon(arc_mb)  # fails while the dead one's mounts and socket are torn down
                except system.LabError:
                    return False
                return True
            wait_until(restarted, 120, "zfs-fuse started again", step=1)
            _zpool("import", "-o", "cachefile=none", "-d", "/dev", lab.pool, check=False)
            assert _zpool("list", lab.pool, check=False).returncode == 0, "the pool was not imported again"
            wait_until(lambda: os.path.ismount(lab.mountpoint) or subprocess.run(
                ["zfs", "mount", lab.dataset], capture_output=True, timeout=60).returncode == 0, 120,
                "the lab's dataset mounted again", step=1)
            run.recovered()
        run.stop_io.clear()
        threading.Thread(target=run._writes, daemon=True).start()
        recovery = run.recovery()
        run.screen(lambda s: _sources_back(s, lab.pool), "top live again after the restart, the pool's figures back")
    finally:
        rec = run.stop()
    run.check(rec)
    texts = rec.texts()
    assert any(e.kind == EventKind.ERROR and "zpool" in e.text for e in rec.events), texts
    assert any(e.kind == EventKind.INFO and "restarting" in e.text for e in rec.events), texts
    assert any(e.kind == EventKind.RESET for e in rec.events), texts  # the ARC's counters started again from 0
    _report("daemon", recovery)


def test_fault_clock_stepped_back_then_forward(lab, tmp_path):
    """The machine's clock is never touched: the recording pipeline of `zfsmon record` (Sampler, collectors and
    Recorder) is given one injectable clock, stepped back an hour and forward again. (A time namespace,
    `unshare --time`, moves only the monotonic and boot clocks, never the wall clock zfsmon stamps with.)"""
    from zfsmon.engine import Sampler
    from zfsmon.sources.kstat import arcstats
    from zfsmon.sources.zpool.iostat_collector import ZpoolIostatCollector
    from zfsmon.store import Recorder

    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]
    path = str(tmp_path / "clock.zfsmon")
    collectors = [ZpoolIostatCollector([lab.pool], interval=1.0, clock=clock)]
    arc = arcstats.collector_for_host(1.0)
    need(arc is not None, "no arcstats on this host")
    arc.clock = clock
    collectors.append(arc)
    stop = threading.Event()

    def writes() -> None:
        while not stop.is_set():
            write_file(os.path.join(lab.mountpoint, "clock.bin"), 2)
    threading.Thread(target=writes, daemon=True).start()
    with Recorder(path, {"interval": "1", "argv": "test clock"}, clock=clock) as rec:
        sampler = Sampler(collectors, 1.0, sinks=[rec.write], clock=clock)
        sampler.run_in_thread()
        try:
            wait_until(lambda: len(_pool_ticks(path, lab.pool)) >= 5, 120, "five intervals", step=0.5)
            t0 = time.time()
            offset[0] = -3600.0
            wait_until(lambda: sum(1 for s in _samples(path) if s.entity.kind == Kind.ARC and s.ts < t0 - 3000) >= 3,
                       120, "three ARC readings an hour back", step=0.5)
            offset[0] = 0.0
            t1 = time.time()
            wait_until(lambda: len([t for t in _pool_ticks(path, lab.pool) if t > t1 + 3]) >= 4, 120,
                       "intervals after the clock came back", step=0.5)
        finally:
            stop.set()
            sampler.stop()
    with Recording.open(path) as r:
        samples, events = list(r.samples()), list(r.events())
    texts = [e.text for e in events]
    assert any(t.startswith("the clock stepped back by 3") for t in texts), texts
    assert any(t.startswith("the clock stepped forward by 3") for t in texts), texts
    _no_bad_rates(samples)
    # rates as a reader takes them, in recorded order per entity, never across the step: none negative
    ticks = sorted({s.ts for s in samples if s.entity.kind == Kind.POOL and not s.since_boot})
    _no_lost_intervals(ticks, t0, t1 + 3)  # zpool stamps its reports itself (-T u): they stay ordered
    _report("clock", 0.0)


@pytest.mark.postgres
def test_fault_postgres_restarted_and_pgbench_killed_mid_soak(lab, require_postgres, tmp_path):
    """`zfsmon soak --lab` in loop mode: pgbench killed, then PostgreSQL restarted; each gap is an event, the loop
    starts the next run, and the ZFS recording beside it loses no interval."""
    import psutil

    from tests.conftest import free_loopback_port
    from zfsmon.workload.target import lab_cluster

    port = free_loopback_port()
    out = str(tmp_path / "soak.zfsmon")
    err_path = tmp_path / "soak.stderr"

    def ends(after: float) -> int:
        return sum(1 for e in _events(out) if e.kind == EventKind.RUN_END and e.ts > after and "tps" in e.text)
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "soak", "--lab", lab.pool, "--port", str(port),
                                 "--init-scale", "2", "--run-seconds", "5", "--pause", "1", "--duration", "20m",
                                 "--interval", "1", "--quiet", "--out", out, "--", "-c", "2", "-j", "1", "-S"],
                                cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_until(lambda: ends(0) >= 1 or proc.poll() is not None, 600, "a first finished pgbench run", step=1)
        assert proc.poll() is None, err_path.read_text()
        victims = wait_until(lambda: [c for c in psutil.Process(proc.pid).children(recursive=True)
                                      if c.name() == "pgbench"], 120, "a running pgbench", step=0.2)
        t_kill = time.time()
        victims[0].kill()
        wait_until(lambda: ends(t_kill) >= 1, 300, "a run finished after pgbench was killed", step=1)
        recovery_kill = min(e.ts for e in _events(out) if e.kind == EventKind.RUN_START and e.ts > t_kill) - t_kill
        cluster = lab_cluster(lab.pool, port)[1]
        t_pg = time.time()
        cluster.stop()
        cluster.start()
        t_pg_end = time.time()
        wait_until(lambda: ends(t_pg_end) >= 1, 300, "a run finished after PostgreSQL restarted", step=1)
        recovery_pg = min(e.ts for e in _events(out) if e.kind == EventKind.RUN_START and e.ts > t_pg_end) - t_pg_end
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    err = err_path.read_text()
    assert proc.returncode == 0 and "Traceback" not in err, err
    events = _events(out)
    texts = [e.text for e in events]
    assert any(e.kind == EventKind.ERROR and "pgbench exited with status" in e.text and t_kill <= e.ts < t_pg
               for e in events), texts
    assert any(e.kind == EventKind.ERROR and e.ts >= t_pg and ("pgbench" in e.text or "pgstat" in e.text)
               for e in events), texts
    samples = _samples(out)
    _no_bad_rates(samples)
    ticks = sorted({s.ts for s in samples if s.entity.kind == Kind.POOL and s.entity.name == lab.pool
                    and not s.since_boot})
    _no_lost_intervals(ticks, t_kill, t_kill)  # ZFS recording unaffected: no window is excused
    _report("pgbench-killed", recovery_kill)
    _report("postgres-restarted", recovery_pg)
