"""Run one trace script as a child and turn its protocol output into samples.

The tracer (bpftrace or dtrace) holds kernel probes for as long as it runs,
so it must never outlive zfsmon: it runs in its own process group, gets
SIGINT first (bpftrace and dtrace both detach and run END on it), then
SIGTERM and SIGKILL, and on Linux the kernel sends it SIGTERM if zfsmon dies
without stopping it (``prctl(PR_SET_PDEATHSIG)``). Probes are tied to the
tracer's file descriptors, so even a SIGKILLed tracer leaves none behind.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from zfsmon import host
from zfsmon.errors import UserError
from zfsmon.host import zfs_fuse_pid
from zfsmon.model import Event, EventKind, ParseError, Record
from zfsmon.queues import drain
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.zpool.status import Topology, read_topology
from zfsmon.trace import catalog
from zfsmon.trace.catalog import TraceScript
from zfsmon.trace.protocol import TraceParser
from zfsmon.trace.resolve import (
    Names,
    block_device_names,
    dsk_links,
    fd_paths,
    kernel_links,
    mounted_filesystems,
)

TRACEFS = "/sys/kernel/tracing"
DEBUGFS = "/sys/kernel/debug"
ZFS_MODULE = "/sys/module/zfs"  # present when the OpenZFS kernel module is loaded
_PR_SET_PDEATHSIG = 1
_NOISE = ("couldn't set RLIMIT_MEMLOCK", "Attaching ")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM the tracer when zfsmon's thread that started it dies; give it SIGINT's default.

    A zfsmon started in the background by a shell script has SIGINT ignored, and an ignored signal stays ignored
    across exec: dtrace then leaves SIGINT ignored (it installs its handler only for a signal not ignored) and
    does not stop on the SIGINT it is sent (seen in the OpenZFS guest)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def explain_stderr(text: str, tracer: str = "bpftrace") -> str:
    """One actionable line from a tracer's error output (pure, so it is tested on real messages)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not any(n in ln for n in _NOISE)]
    for ln in lines:
        if "tracepoint not found:" in ln:
            probe = ln.split("tracepoint not found:", 1)[1].strip()
            return (f"probe tracepoint:{probe} is absent on this kernel"
                    + (" (the OpenZFS kernel module is not loaded)" if probe.startswith("zfs:") else ""))
        if "Error attaching probe:" in ln:
            probe = ln.split("Error attaching probe:", 1)[1].strip().strip("'")
            hint = ""
            if "kprobe_events" in text or "not traceable" in text:
                hint = " (kprobes are unavailable on this kernel, or the function does not exist)"
            return f"cannot attach {probe}{hint}"
        if "does not match any probes" in ln:  # dtrace
            return f"probes absent on this system: {ln.split(':', 1)[-1].strip()}"
        if "Operation not permitted" in ln or "must be run as root" in ln or "Permission denied" in ln:
            return f"not permitted ({ln}): tracing needs root"
    errors = [ln for ln in lines if "ERROR" in ln or ln.startswith("dtrace:")]
    if errors:
        return errors[0]
    return lines[-1] if lines else ""


def _ensure_mounted(fstype: str, source: str, path: str, marker: str) -> Optional[str]:
    """Mount ``fstype`` at ``path`` unless ``path/marker`` is there. Returns a problem, or None."""
    if os.path.isdir(os.path.join(path, marker)):
        return None
    try:
        subprocess.run(["mount", "-t", fstype, source, path], capture_output=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return f"{fstype} is not mounted at {path} and mounting it failed (mount -t {fstype} {source} {path})"
    return None if os.path.isdir(os.path.join(path, marker)) else f"{fstype} at {path} has no {marker}/"


def ensure_tracefs(path: str = TRACEFS) -> Optional[str]:
    """bpftrace needs tracefs for tracepoints; mount it if absent. Returns a problem, or None."""
    return _ensure_mounted("tracefs", "nodev", path, "events")


def ensure_debugfs(path: str = DEBUGFS) -> Optional[str]:
    """DTrace for Linux reads tracefs under debugfs (``/sys/kernel/debug/tracing``); mount debugfs if absent."""
    return _ensure_mounted("debugfs", "debugfs", path, "tracing")


def preflight(spec: TraceScript, family: str, tracer: Optional[str] = None) -> Optional[str]:
    """Why this script cannot run here (missing tool, privileges, kernel support), or None."""
    exe = tracer or family
    if shutil.which(exe) is None:
        how = "apt-get install bpftrace" if family == "bpftrace" else "DTrace ships with illumos and FreeBSD"
        return f"{exe} not found on PATH ({how})"
    if os.geteuid() != 0:
        return f"tracing needs root ({exe} loads kernel probes): run zfsmon as root"
    if family == "dtrace" and sys.platform.startswith("linux"):
        problem = ensure_debugfs()
        if problem:
            return problem
        if spec.needs_zfs_module and not os.path.isdir(ZFS_MODULE):
            return f"trace {spec.name!r} needs the OpenZFS kernel module, and this host has none loaded"
    if family == "bpftrace":
        problem = ensure_tracefs()
        if problem:
            return problem
        if spec.needs_zfs_module and not os.path.isdir(ZFS_MODULE):
            return (f"trace {spec.name!r} needs the OpenZFS kernel module (kprobes/zfs tracepoints), and this "
                    f"host has none loaded (zfs-fuse runs ZFS in user space: try `zfsmon trace vdevlat`)")
        if spec is catalog.VARIANTS["arc"]:  # arc_kprobe.bt: its functions must be traceable here
            missing = host.untraceable(host.ARC_KPROBE_FUNCTIONS)
            if missing:
                return (f"trace {spec.name!r}: the OpenZFS module has no zfs tracepoints, and {', '.join(missing)} "
                        f"is not traceable in this build (inlined): {spec.files[family]} cannot attach")
    return None


class TraceCollector(StreamCollector):
    """``TraceCollector("vdevlat", 5)``: one trace script as a collector for top/record."""

    stop_signals = ((signal.SIGINT, 3.0), (signal.SIGTERM, 2.0))
    #: the script run; None for a bcc program of several (:class:`~zfsmon.trace.bcc_collector.BccCollector`)
    spec: Optional[TraceScript]

    def __init__(self, name: str, interval: int = 1, slow_ms: int = 0, platform: Optional[str] = None,
                 pools: tuple = (), tracer: Optional[str] = None, clock: Clock = time.time,
                 backend: Optional[str] = None) -> None:
        self.family = catalog.tracer_family(platform, backend)
        fuse_pid = zfs_fuse_pid() if self.family == "bpftrace" else None
        spec = self.spec = catalog.resolve(name, platform, fuse_pid, self.family)
        self.pid = fuse_pid if catalog.NEEDS_PID in spec.args else None  # the traced daemon, if any
        self.pools = tuple(pools)
        self.names = Names(refresh=self._refresh_names)
        argv = catalog.argv_for(spec, max(1, int(interval)), self.family, self.pid, slow_ms, tracer)
        super().__init__(argv, TraceParser(f"trace:{spec.name}", self.names), f"trace:{name}", clock)
        self.tracer = tracer
        self.interval = max(1, int(interval))
        self.slow_ms = slow_ms
        self._gone = ""
        self._preflight_failed = False

    def _refresh_names(self, names: Names) -> None:
        """Re-read devices, the daemon's fds and the pools' topology (a device appeared or changed role)."""
        self._load_topology()
        self._read_names()

    def _read_names(self) -> None:
        self.names.devices = block_device_names()
        self.names.fds = fd_paths(self.pid) if self.pid else {}
        self.names.mounts = mounted_filesystems()
        self.names.links = {**dsk_links(), **kernel_links(self.names.topology)}

    def _load_topology(self) -> Optional[str]:
        try:
            self.names.topology = read_topology(self.pools)
        except (OSError, ParseError) as exc:
            self.names.topology = Topology()
            return f"{self.name}: no vdev roles ({exc}); devices are shown by name"
        return None

    def preflight(self) -> Optional[str]:
        """Why the script cannot run here (no tracer, not root, no tracefs, no ZFS module), or None."""
        return preflight(self.spec, self.family, self.tracer) if self.spec is not None else None

    def ended(self) -> bool:
        """The tracer is not running (exited, or never started); ``poll`` restarts it with back-off."""
        return self._proc is None or self._proc.poll() is not None

    def intervals(self) -> int:
        """Intervals the script has reported so far (including empty ones, which yield no samples)."""
        return self.parser.intervals if isinstance(self.parser, TraceParser) else 0

    def start(self) -> None:
        problem = self.preflight()
        if problem:
            self._preflight_failed = True
            self._q.put(self._error(f"{self.name}: {problem}"))
            return
        note = self._load_topology()
        if note:
            self._q.put(Event(self.clock(), EventKind.INFO, note, source=self.name))
        if self.spec is not None and catalog.VARIANTS.get(self.spec.name) is self.spec:  # a variant (bcc: no spec)
            self._q.put(Event(self.clock(), EventKind.INFO, f"{self.name}: {catalog.variant_reason(self.spec.name)}",
                              source=self.name))
        self._read_names()
        super().start()

    def poll(self) -> List[Record]:
        if self._preflight_failed:
            return drain(self._q)
        if self.pid and self._proc is not None and self._proc.poll() is None and not os.path.exists(f"/proc/{self.pid}"):
            # the traced daemon is gone: its pid filter would match nothing forever. End the tracer; the
            # restart (with back-off) looks the daemon up again.
            self._gone = f"the traced zfs-fuse (pid {self.pid}) exited"
            try:
                os.killpg(self._proc.pid, signal.SIGINT)
            except (ProcessLookupError, PermissionError):
                pass
        return super().poll()

    def _spawn(self) -> None:
        spec = self.spec
        if spec is not None and catalog.NEEDS_PID in spec.args:
            pid = zfs_fuse_pid()
            if pid != self.pid:
                self.pid = pid
                try:
                    self.argv = catalog.argv_for(spec, self.interval, self.family, pid, self.slow_ms, self.tracer)
                except UserError as exc:
                    self._q.put(self._error(f"{self.name}: {exc}"))
                    self._schedule_restart()
                    return
                self.names.fds = fd_paths(pid) if pid else {}
        self._gone = ""
        super()._spawn()

    def _popen_extra(self) -> Dict[str, Any]:
        return {"preexec_fn": _die_with_parent} if os.name == "posix" else {}

    def _exit_reason(self, rc: int, stderr: str) -> str:
        return self._gone or explain_stderr(stderr, self.family) or f"exit status {rc}"

    @property
    def child_pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None


def trace_collectors(names: Sequence[str], interval: float, pools: Optional[Sequence[str]] = None,
                     backend: Optional[str] = None) -> List[Collector]:
    """`--trace NAME` for `top`/`record`: one tracing script (dtrace/ or bpftrace/) per name, as a source."""
    out: List[Collector] = []
    for name in names:
        if name not in catalog.SCRIPTS:
            raise UserError(f"unknown trace script {name} (known: {', '.join(sorted(catalog.SCRIPTS))})")
        out.append(TraceCollector(name, max(1, int(round(interval))), pools=tuple(pools or ()),
                                  backend=backend or catalog.script_backend()))
    return out
