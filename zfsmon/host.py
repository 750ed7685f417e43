"""What this host offers: platform, ZFS flavour and version, where the kstats are, which tools exist.

Probed, never assumed: `doctor` prints it, `record`/`top` choose their sources
from it. Every probe is cheap and bounded in time, and a failing probe is an
answer ("absent, because ..."), not an exception.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

LINUX_KSTAT = Path("/proc/spl/kstat/zfs")
ZFSFUSE_KSTAT = Path("/zfs-kstat/zfs")


@dataclass
class Check:
    """One line of `doctor`: a capability, whether it is there, and why we think so."""

    name: str
    ok: bool
    detail: str
    category: str = "source"

    def verdict(self) -> str:
        return "ok" if self.ok else "absent"


@dataclass
class Host:
    system: str  # Linux, FreeBSD, SunOS, Darwin
    release: str
    hostname: str
    flavour: str  # "openzfs-kmod", "zfs-fuse", "illumos", "freebsd", "none"
    zfs_version: str
    checks: List[Check] = field(default_factory=list)

    def check(self, name: str) -> Optional[Check]:
        return next((c for c in self.checks if c.name == name), None)

    def has(self, name: str) -> bool:
        c = self.check(name)
        return bool(c and c.ok)

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def _run(argv: List[str], timeout: float = 10) -> Optional[subprocess.CompletedProcess]:
    if shutil.which(argv[0]) is None:
        return None
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _first_line(cp: Optional[subprocess.CompletedProcess]) -> str:
    if cp is None:
        return ""
    text = (cp.stdout or cp.stderr or "").strip()
    return text.splitlines()[0] if text else ""


def zfs_fuse_pid() -> Optional[int]:
    """The running zfs-fuse daemon, if any (there is one per machine): the lab, doctor and tracing ask here."""
    import psutil

    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if p.info["name"] == "zfs-fuse" or (p.info["cmdline"] or [""])[0].endswith("/zfs-fuse"):
                if p.status() != psutil.STATUS_ZOMBIE:
                    return p.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


def detect_flavour(system: str) -> tuple:
    """(flavour, version, reason)."""
    if system == "Linux":
        ver = Path("/sys/module/zfs/version")
        if ver.exists():
            return "openzfs-kmod", ver.read_text().strip(), "/sys/module/zfs/version"
        if shutil.which("zfs-fuse"):
            cp = _run(["dpkg-query", "-W", "-f=${Version}", "zfs-fuse"])
            v = cp.stdout.strip() if cp and cp.returncode == 0 else "unknown"
            running = zfs_fuse_pid()
            state = f"daemon running (pid {running})" if running else "daemon not running"
            return "zfs-fuse", f"{v} (pool v23)", f"zfs-fuse installed, {state}"
        return "none", "", "no zfs kernel module (/sys/module/zfs) and no zfs-fuse"
    if system == "FreeBSD":
        cp = _run(["sysctl", "-n", "vfs.zfs.version.module"])
        v = cp.stdout.strip() if cp and cp.returncode == 0 else ""
        return ("freebsd", v or "legacy", "sysctl vfs.zfs.version.module") if cp else ("none", "", "no sysctl")
    if system == "SunOS":
        return "illumos", platform.version(), "SunOS kernel"
    if system == "Darwin":
        return "openzfs-macos", "", "Darwin"
    return "none", "", f"unsupported system {system}"


def probe_arc(system: str) -> Check:
    if system == "Linux":
        if (LINUX_KSTAT / "arcstats").exists():
            return Check("arcstats", True, f"{LINUX_KSTAT / 'arcstats'}")
        if (ZFSFUSE_KSTAT / "arcstats").is_dir():
            n = len(os.listdir(ZFSFUSE_KSTAT / "arcstats"))
            return Check("arcstats", True, f"{ZFSFUSE_KSTAT / 'arcstats'}/ ({n} files, zfs-fuse)")
        why = ("zfs-fuse kstats appear under /zfs-kstat only if it exists before the daemon starts and a pool exists"
               if shutil.which("zfs-fuse") else "no /proc/spl/kstat/zfs/arcstats")
        return Check("arcstats", False, why)
    if system == "FreeBSD":
        cp = _run(["sysctl", "-n", "kstat.zfs.misc.arcstats.hits"])
        ok = bool(cp and cp.returncode == 0)
        return Check("arcstats", ok, "sysctl kstat.zfs.misc.arcstats" if ok else "sysctl kstat.zfs.misc.arcstats missing")
    if system == "SunOS":
        cp = _run(["kstat", "-p", "zfs:0:arcstats:hits"])
        ok = bool(cp and cp.returncode == 0 and cp.stdout.strip())
        return Check("arcstats", ok, "kstat -p zfs:0:arcstats" if ok else "kstat zfs:0:arcstats not readable")
    return Check("arcstats", False, f"no known ARC kstats on {system}")


def probe_zil(system: str) -> Check:
    if system == "Linux":
        p = LINUX_KSTAT / "zil"
        if p.exists():
            return Check("zil", True, str(p))
        if ZFSFUSE_KSTAT.is_dir():
            return Check("zil", False, "zfs-fuse (pool v23) has no ZIL kstat; SLOG activity comes from the log vdev's "
                         "zpool iostat row")
        return Check("zil", False, "no /proc/spl/kstat/zfs/zil")
    if system == "SunOS":
        cp = _run(["kstat", "-p", "zfs:0:zil"])
        ok = bool(cp and cp.returncode == 0 and cp.stdout.strip())
        return Check("zil", ok, "kstat -p zfs:0:zil" if ok else "kstat zfs:0:zil not present")
    if system == "FreeBSD":
        cp = _run(["sysctl", "-n", "kstat.zfs.misc.zil.zil_commit_count"])
        ok = bool(cp and cp.returncode == 0)
        return Check("zil", ok, "sysctl kstat.zfs.misc.zil" if ok else "sysctl kstat.zfs.misc.zil missing")
    return Check("zil", False, f"no known ZIL kstats on {system}")


def probe_zpool_flags() -> Check:
    """Which `zpool iostat` flags the local zpool accepts: asked of zpool itself (zfsmon.sources.zpool_probe)."""
    from zfsmon.sources.zpool_probe import CANDIDATES, probe_flags

    if shutil.which("zpool") is None:
        return Check("zpool iostat", False, "no zpool command")
    flags = probe_flags()
    if flags.problem:
        return Check("zpool iostat", False, f"zpool does not answer ({flags.problem}); is the ZFS daemon/module up?")
    shown = " ".join(f"-{k}" for k in CANDIDATES if len(k) == 1 and flags.has(k))
    return Check("zpool iostat", True, "accepts -v" + (f" {shown}" if shown else ""))


def probe_tool(name: str, argv: List[str], category: str = "tool", why_absent: str = "") -> Check:
    if shutil.which(argv[0]) is None:
        return Check(name, False, why_absent or f"{argv[0]} not found on PATH", category)
    first = _first_line(_run(argv))
    return Check(name, True, f"{shutil.which(argv[0])}: {first}" if first else str(shutil.which(argv[0])), category)


def probe_bpftrace() -> Check:
    if shutil.which("bpftrace") is None:
        return Check("bpftrace", False, "bpftrace not found on PATH (apt-get install bpftrace)", "tracing")
    ver = _first_line(_run(["bpftrace", "--version"]))
    if os.geteuid() != 0:
        return Check("bpftrace", False, f"{ver} installed, but tracing needs root", "tracing")
    kprobes = Path("/sys/kernel/tracing/kprobe_events").exists() or Path("/sys/kernel/debug/tracing/kprobe_events").exists()
    btf = Path("/sys/kernel/btf/vmlinux").exists()
    extras = f"tracepoints yes, BTF {'yes' if btf else 'no'}, kprobes {'yes' if kprobes else 'no (kernel built without)'}"
    return Check("bpftrace", True, f"{ver}; {extras}", "tracing")


def probe_dtrace() -> Check:
    if shutil.which("dtrace") is None:
        return Check("dtrace", False, "dtrace not found on PATH (illumos/FreeBSD have it in base)", "tracing")
    ver = _first_line(_run(["dtrace", "-V"]))
    if os.geteuid() != 0:
        return Check("dtrace", False, f"{ver} installed, but tracing needs root (or dtrace_kernel privilege)", "tracing")
    return Check("dtrace", True, ver, "tracing")


def probe_kernel_zfs() -> Check:
    if Path("/sys/module/zfs").exists():
        v = Path("/sys/module/zfs/version")
        return Check("kernel zfs", True, f"module loaded, version {v.read_text().strip() if v.exists() else '?'}", "zfs")
    return Check("kernel zfs", False, "no zfs kernel module loaded (/sys/module/zfs absent)", "zfs")


def probe_zfs_fuse() -> Check:
    if shutil.which("zfs-fuse") is None:
        return Check("zfs-fuse", False, "not installed (apt-get install zfs-fuse)", "zfs")
    pid = zfs_fuse_pid()
    fuse = Path("/dev/fuse").exists()
    state = f"daemon running (pid {pid})" if pid else "daemon not running (`zfsmon lab up` starts it)"
    return Check("zfs-fuse", fuse, f"installed, {state}" + ("" if fuse else "; /dev/fuse missing"), "zfs")


def probe() -> Host:
    system = platform.system()
    flavour, version, why = detect_flavour(system)
    host = Host(system=system, release=platform.release(), hostname=platform.node(), flavour=flavour,
                zfs_version=version)
    host.checks.append(Check("zfs flavour", flavour != "none", f"{flavour} {version}: {why}".strip(), "zfs"))
    host.checks.append(probe_kernel_zfs())
    if system == "Linux":
        host.checks.append(probe_zfs_fuse())
    host.checks.append(probe_zpool_flags())
    host.checks.append(probe_arc(system))
    host.checks.append(probe_zil(system))
    if system == "Linux":
        ok = Path("/proc/diskstats").exists()
        host.checks.append(Check("diskstats", ok, "/proc/diskstats" if ok else "no /proc/diskstats"))
        objs = list(LINUX_KSTAT.glob("*/objset-*")) if LINUX_KSTAT.is_dir() else []
        host.checks.append(Check("objset kstats", bool(objs), f"{len(objs)} under {LINUX_KSTAT}" if objs else
                                 "no per-dataset objset kstats (OpenZFS >= 0.8 kernel module has them)"))
    host.checks.append(probe_tool("fsstat", ["fsstat", "-h"], "source", "fsstat is illumos/Solaris only"))
    host.checks.append(probe_tool("iostat", ["iostat", "-V"], "source", "iostat not found (sysstat)"))
    arcstat = next((n for n in ("arcstat", "zarcstat", "arcstat.py") if shutil.which(n)), None)
    host.checks.append(Check("arcstat", arcstat is not None, f"{shutil.which(arcstat)}" if arcstat else
                             "no arcstat/zarcstat (zfsmon arcstat works without it)", "tool"))
    host.checks.append(probe_dtrace())
    host.checks.append(probe_bpftrace())
    host.checks.append(probe_tool("pgbench", ["pgbench", "--version"], "workload"))
    host.checks.append(probe_tool("psql", ["psql", "--version"], "workload"))
    return host


def version_tuple(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])
