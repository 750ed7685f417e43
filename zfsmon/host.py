"""What this host offers: platform, ZFS flavour and version, which tools exist, tracing and privilege.

Probed, never assumed: `doctor` prints it, `record`/`top` hand it to the
sources, which check for themselves whether they can run here (each source's
``check``, :mod:`zfsmon.sources.spec`) and add their lines to doctor's. Every
probe is cheap and bounded in time, and a failing probe is an answer
("absent, because ..."), not an exception.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import psutil

#: where tracefs is mounted (the first, or the older debugfs path)
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

#: doctor's sections, in the order it prints them
CATEGORIES = ("zfs", "source", "tool", "tracing", "workload")


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
    #: the OpenZFS tools' own version (``zfs version``: ``zfs-2.3.2-2~bpo12+2``), which decides the commands'
    #: options (``zpool status -j``); empty where there is no such command (zfs-fuse, illumos, legacy FreeBSD)
    zfs_userland: str = ""

    def check(self, name: str) -> Optional[Check]:
        return next((c for c in self.checks if c.name == name), None)

    def has(self, name: str) -> bool:
        c = self.check(name)
        return bool(c and c.ok)

    def add(self, checks: Iterable[Check]) -> None:
        """More checks (the sources' own), each placed in its category's section."""
        self.checks = sorted([*self.checks, *checks], key=lambda c: CATEGORIES.index(c.category))

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)

    def openzfs_version(self) -> tuple:
        """(major, minor, patch) of OpenZFS's tools (else its kernel module); () when this is not OpenZFS."""
        if self.flavour not in ("openzfs-kmod", "freebsd", "openzfs-macos"):
            return ()
        for text in (self.zfs_userland, self.zfs_version):
            v = version_tuple(text.split("zfs-", 1)[-1]) if text else ()
            if len(v) >= 2:
                return v
        return ()

    def describe_zfs(self) -> str:
        """``openzfs-kmod 2.3.2-2~bpo12+2`` (plus the tools' version where it differs): for headers and meta."""
        tools = self.zfs_userland.split("zfs-", 1)[-1] if self.zfs_userland else ""
        extra = f" (tools {tools})" if tools and tools != self.zfs_version else ""
        return f"{self.flavour} {self.zfs_version}".strip() + extra


def run_probe(argv: List[str], timeout: float = 10) -> Optional[subprocess.CompletedProcess]:
    """A probe command's result; None when it is not installed, cannot start or takes too long."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def first_line(cp: Optional[subprocess.CompletedProcess]) -> str:
    if cp is None:
        return ""
    text = (cp.stdout or cp.stderr or "").strip()
    return text.splitlines()[0] if text else ""


def zfs_fuse_pid() -> Optional[int]:
    """The running zfs-fuse daemon, if any (there is one per machine): the lab, doctor and tracing ask here."""
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
            cp = run_probe(["dpkg-query", "-W", "-f=${Version}", "zfs-fuse"])
            v = cp.stdout.strip() if cp and cp.returncode == 0 else "unknown"
            running = zfs_fuse_pid()
            state = f"daemon running (pid {running})" if running else "daemon not running"
            return "zfs-fuse", f"{v} (pool v23)", f"zfs-fuse installed, {state}"
        return "none", "", "no zfs kernel module (/sys/module/zfs) and no zfs-fuse"
    if system == "FreeBSD":
        cp = run_probe(["sysctl", "-n", "vfs.zfs.version.module"])
        v = cp.stdout.strip() if cp and cp.returncode == 0 else ""
        return ("freebsd", v or "legacy", "sysctl vfs.zfs.version.module") if cp else ("none", "", "no sysctl")
    if system == "SunOS":
        return "illumos", platform.version(), "SunOS kernel"
    if system == "Darwin":
        return "openzfs-macos", "", "Darwin"
    return "none", "", f"unsupported system {system}"


def zfs_userland_version(flavour: str) -> str:
    """``zfs version``'s first line (``zfs-2.3.2-2~bpo12+2``) on OpenZFS 0.8+; empty elsewhere or when it fails."""
    if flavour not in ("openzfs-kmod", "freebsd", "openzfs-macos"):
        return ""
    cp = run_probe(["zfs", "version"], timeout=5)
    line = first_line(cp) if cp is not None and cp.returncode == 0 else ""
    return line if line.startswith("zfs-") else ""


def recording_meta() -> Dict[str, str]:
    """What every recording says about where it was made: host, platform, ZFS flavour and versions."""
    system = platform.system()
    flavour, version, _why = detect_flavour(system)
    meta = {"host": platform.node(), "platform": f"{system} {platform.release()} {platform.machine()}",
            "zfs_flavour": flavour, "zfs_version": version}
    tools = zfs_userland_version(flavour)
    if tools:
        meta["zfs_userland"] = tools
    return meta


def probe_tool(name: str, argv: List[str], category: str = "tool", why_absent: str = "") -> Check:
    if shutil.which(argv[0]) is None:
        return Check(name, False, why_absent or f"{argv[0]} not found on PATH", category)
    first = first_line(run_probe(argv))
    return Check(name, True, f"{shutil.which(argv[0])}: {first}" if first else str(shutil.which(argv[0])), category)


def probe_bpftrace() -> Check:
    if shutil.which("bpftrace") is None:
        return Check("bpftrace", False, "bpftrace not found on PATH (apt-get install bpftrace)", "tracing")
    ver = first_line(run_probe(["bpftrace", "--version"]))
    if os.geteuid() != 0:
        return Check("bpftrace", False, f"{ver} installed, but tracing needs root", "tracing")
    kprobes = kprobes_available()
    btf = Path("/sys/kernel/btf/vmlinux").exists()
    extras = f"tracepoints yes, BTF {'yes' if btf else 'no'}, kprobes {'yes' if kprobes else 'no (kernel built without)'}"
    extras += f", uprobes {'yes' if uprobes_available() else 'no'}"
    extras += ", " + _zfs_detail(Path("/sys/module/zfs").exists(), kprobes)
    return Check("bpftrace", True, f"{ver}; {extras}", "tracing")


def kprobes_available() -> bool:
    """The kernel has kprobes (kprobe_events in tracefs); zfsmon's build machine has none."""
    return any(Path(d, "kprobe_events").exists() for d in TRACEFS_DIRS)


def uprobes_available(pmu: str = "/sys/bus/event_source/devices/uprobe") -> bool:
    """The kernel has uprobes: its perf uprobe PMU, or uprobe_events in a mounted tracefs (zfs-fuse's
    fusevdevlat.bt traps in the daemon's libc calls instead of enabling syscall tracepoints for every process)."""
    return Path(pmu).is_dir() or any(Path(d, "uprobe_events").exists()
                                     for d in TRACEFS_DIRS)


def zfs_tracepoints(kallsyms: str = "/proc/kallsyms") -> bool:
    """The OpenZFS module has its tracepoints (zfs:zfs_arc__hit, ...); Debian's zfs-dkms builds it without.

    From tracefs when it is mounted (``events/zfs``); else from the kernel's symbols (a tracepoint is a
    ``__tracepoint_zfs_arc__hit`` symbol of the module), so an unmounted tracefs does not read as "none"."""
    dirs = [d for d in TRACEFS_DIRS if Path(d, "events").is_dir()]
    if dirs:
        return any(Path(d, "events", "zfs").is_dir() for d in dirs)
    try:
        with open(kallsyms) as f:
            return any("__tracepoint_zfs_arc__hit" in line for line in f)
    except OSError:
        return False


#: the functions the kprobe ARC variant (arc_kprobe.bt, bcc's kprobe arc) attaches to
ARC_KPROBE_FUNCTIONS = ("arc_read", "arc_buf_access", "arc_access")


def untraceable(functions: Sequence[str]) -> List[str]:
    """Those of ``functions`` that kprobes cannot attach to here: absent from tracefs'
    ``available_filter_functions`` (inlined, notrace or not there; Debian's OpenZFS 2.1.11 build inlines
    ``arc_access``). Empty when the list cannot be read (then attaching decides)."""
    for d in TRACEFS_DIRS:
        try:
            with open(os.path.join(d, "available_filter_functions")) as f:
                have = {line.split(None, 1)[0] for line in f if line.strip()}
        except OSError:
            continue
        return [fn for fn in functions if fn not in have]
    return []


def _zfs_detail(zfs: bool, kprobes: bool = True) -> str:
    if not zfs:
        return "OpenZFS module no (zfsslower, arc, zil, txg cannot run)"
    if not zfs_tracepoints():
        if kprobes:
            missing = untraceable(ARC_KPROBE_FUNCTIONS)
            if missing:
                return (f"OpenZFS module yes, without its tracepoints (built without them) and {', '.join(missing)} "
                        f"not traceable in this build (inlined): arc cannot run")
            return ("OpenZFS module yes, without its tracepoints (built without them): arc uses kprobes on arc_read "
                    "(arc_kprobe.bt)")
        return "OpenZFS module yes, without its tracepoints and no kprobes (arc cannot run)"
    return "OpenZFS module yes, with tracepoints"


def kernel_headers() -> Optional[str]:
    """Where bcc finds the running kernel's headers (it compiles against them), or None."""
    env = os.environ.get("BCC_KERNEL_SOURCE")
    rel = platform.release()
    for cand in ([env] if env else []) + [f"/lib/modules/{rel}/build", f"/lib/modules/{rel}/source",
                                          "/sys/kernel/kheaders.tar.xz"]:
        if Path(cand).exists():
            return cand
    return None


@dataclass
class BccFacts:
    """What the bcc backend needs here: root, the bcc module, kernel headers; kprobes and the ZFS module per trace."""

    root: bool
    version: Optional[str]  # bcc's version, None when `import bcc` fails
    import_error: str
    headers: Optional[str]
    kprobes: bool
    zfs_module: bool

    def problem(self) -> Optional[str]:
        """Why no bcc trace can run here at all, or None."""
        if self.version is None:
            return f"the python3 module bcc is not importable ({self.import_error}; apt install python3-bpfcc)"
        if not self.root:
            return f"bcc {self.version} installed, but tracing needs root"
        if self.headers is None:
            return (f"bcc {self.version}: no kernel headers for {platform.release()} (bcc compiles against them: "
                    f"apt install linux-headers-{platform.release()}, or set BCC_KERNEL_SOURCE)")
        return None


def bcc_facts() -> BccFacts:
    try:
        import bcc  # third-party extra (Debian python3-bpfcc)
        version: Optional[str] = str(getattr(bcc, "__version__", "?"))
        why = ""
    except ImportError as exc:
        version, why = None, f"import bcc: {exc}"
    return BccFacts(os.geteuid() == 0, version, why, kernel_headers(), kprobes_available(),
                    Path("/sys/module/zfs").exists())


def probe_bcc() -> Check:
    """doctor's bcc line: usable or not and why; which of its traces this kernel allows."""
    facts = bcc_facts()
    problem = facts.problem()
    if problem:
        return Check("bcc", False, problem, "tracing")
    kp = "kprobes yes" if facts.kprobes else "kprobes no (zfsslower, zil cannot run)"
    zfs = _zfs_detail(facts.zfs_module, facts.kprobes).replace(", txg", "").replace("(arc_kprobe.bt)", "")
    return Check("bcc", True, f"bcc {facts.version}; headers {facts.headers}; tracepoints yes (blklat), {kp}, {zfs}",
                 "tracing")


def probe_dtrace() -> Check:
    if shutil.which("dtrace") is None:
        where = ("Linux: Oracle's DTrace for Linux, installed by you (zfsmon ships none)" if
                 sys.platform.startswith("linux") else "illumos/FreeBSD have it in base")
        return Check("dtrace", False, f"dtrace not found on PATH ({where})", "tracing")
    ver = first_line(run_probe(["dtrace", "-V"]))
    if os.geteuid() != 0:
        return Check("dtrace", False, f"{ver} installed, but tracing needs root (or dtrace_kernel privilege)", "tracing")
    if sys.platform.startswith("linux") and Path("/sys/module/zfs").exists():
        btf = Path("/sys/kernel/btf/zfs").exists()
        ver += ("; the zfs module's types: BTF yes" if btf else
                "; the zfs module has no BTF: the D scripts' casts to ZFS types fail (docs/tracing.md)")
    return Check("dtrace", True, ver + ("; --backend dtrace" if sys.platform.startswith("linux") else ""),
                 "tracing")


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


def identify() -> Host:
    """The host as a source's check reads it (platform, ZFS flavour and versions), without the tools' probes of
    :func:`probe` (a tenth of a second of ``--version`` runs): what `zfsmon iostat` asks its device source with."""
    system = platform.system()
    flavour, version, why = detect_flavour(system)
    host = Host(system=system, release=platform.release(), hostname=platform.node(), flavour=flavour,
                zfs_version=version, zfs_userland=zfs_userland_version(flavour))
    host.checks.append(Check("zfs flavour", flavour != "none", f"{flavour} {version}: {why}".strip(), "zfs"))
    return host


def probe() -> Host:
    """The host and its host-wide checks; each source adds its own (:func:`zfsmon.sources.registry.source_checks`)."""
    host = identify()
    system = host.system
    host.checks.append(probe_kernel_zfs())
    if system == "Linux":
        host.checks.append(probe_zfs_fuse())
    arcstat = next((n for n in ("arcstat", "zarcstat", "arcstat.py") if shutil.which(n)), None)
    host.checks.append(Check("arcstat", arcstat is not None, f"{shutil.which(arcstat)}" if arcstat else
                             "no arcstat/zarcstat (zfsmon arcstat works without it)", "tool"))
    host.checks.append(probe_dtrace())
    host.checks.append(probe_bpftrace())
    if system == "Linux":
        host.checks.append(probe_bcc())
    host.checks.append(probe_tool("pgbench", ["pgbench", "--version"], "workload"))
    host.checks.append(probe_tool("psql", ["psql", "--version"], "workload"))
    return host


def version_tuple(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])
