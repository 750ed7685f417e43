"""The trace scripts zfsmon knows, and which file runs on which platform.

One logical trace (``vdevlat``, ``arc``, ``zil``, ...) has a D script for
illumos/FreeBSD and a bpftrace twin for Linux; both print the same protocol.
``vdevlat`` on Linux picks the zfs-fuse script (uprobes on its libc calls) when a
zfs-fuse daemon runs (it sees what ZFS sees, throttling included) and the block-layer script
otherwise.
"""

from __future__ import annotations

import importlib.resources
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from zfsmon.defaults import LINUX_BACKENDS
from zfsmon.errors import UserError
from zfsmon.host import bcc_facts, detect_flavour, uprobes_available, version_tuple, zfs_tracepoints
from zfsmon.trace import bcc_program

#: what a script needs from zfsmon at start, passed as extra positional arguments after INTERVAL
NEEDS_PID = "zfs-fuse pid"
NEEDS_SLOW = "slow-op threshold (ms)"


@dataclass(frozen=True)
class TraceScript:
    name: str
    help: str
    files: Dict[str, str]  # platform family ("dtrace" | "bpftrace") -> path relative to the repo
    args: tuple = ()  # extra positional arguments after INTERVAL, in order (NEEDS_*)
    needs_zfs_module: bool = False  # Linux: needs OpenZFS kernel module probes (kprobes / zfs tracepoints)
    #: bpftrace: the oldest OpenZFS (major, minor) whose kernel constants the script writes were checked for
    #: (its CONSTANTS header); an older module has them elsewhere, so the script is refused there
    openzfs_min: tuple = ()
    used_when: str = ""  # a VARIANTS or LINUX_D script: where it runs instead of its trace's own script
    #: the families whose script ``openzfs_min`` is about (SCRIPTS' arc: arc.bt's constants, not arc.d's)
    openzfs_gated: tuple = ("bpftrace",)


SCRIPTS: Dict[str, TraceScript] = {s.name: s for s in (
    TraceScript("blklat", "block-device I/O latency histograms per device and vdev, read vs write",
                {"bpftrace": "bpftrace/blklat.bt", "dtrace": "dtrace/vdevlat.d"}, (NEEDS_SLOW,)),
    TraceScript("fusevdevlat", "zfs-fuse per-vdev latency at its own libc calls (Linux AIO through syscall(), fsync; "
                "uprobes)",
                {"bpftrace": "bpftrace/fusevdevlat.bt"}, (NEEDS_PID, NEEDS_SLOW)),
    TraceScript("vdevlat", "per-vdev I/O latency histograms with roles (picks the right script per platform)",
                {"bpftrace": "bpftrace/blklat.bt", "dtrace": "dtrace/vdevlat.d"}, (NEEDS_SLOW,)),
    TraceScript("arc", "ARC and L2ARC hits/misses by kind (demand/prefetch, data/metadata) and L2ARC feed",
                {"bpftrace": "bpftrace/arc.bt", "dtrace": "dtrace/arc.d"}, (), True, openzfs_min=(0, 8)),
    TraceScript("zil", "zil_commit latency and commits per second (and SLOG write latency with D)",
                {"bpftrace": "bpftrace/zil.bt", "dtrace": "dtrace/zil.d"}, (NEEDS_SLOW,), True),
    TraceScript("zfsslower", "ZFS read/write latency per filesystem, slow-op outliers, fsstat-like op counts",
                {"bpftrace": "bpftrace/zfsslower.bt", "dtrace": "dtrace/zfsslower.d"}, (NEEDS_SLOW,), True),
    TraceScript("txg", "txg sync (spa_sync) duration per pool",
                {"bpftrace": "bpftrace/txg.bt", "dtrace": "dtrace/txg.d"}, (NEEDS_SLOW,), True),
)}


#: a trace's other implementation, used where its script's probes are missing: ``arc`` on an OpenZFS module
#: built without its tracepoints (Debian's zfs-dkms) runs arc_kprobe.bt (kprobes on arc_read), which prints the
#: same protocol under the same name. Its constants were checked for OpenZFS 2.1 - 2.3 (its CONSTANTS header).
VARIANTS: Dict[str, TraceScript] = {
    "arc": TraceScript("arc", "ARC hits/misses by kind (demand/prefetch, data/metadata), kprobes on arc_read: for an "
                       "OpenZFS module without its tracepoints", {"bpftrace": "bpftrace/arc_kprobe.bt"}, (), True,
                       openzfs_min=(2, 1), used_when="without zfs tracepoints"),
    "fusevdevlat": TraceScript("fusevdevlat", "zfs-fuse per-vdev latency at its vdev syscalls (syscall tracepoints: "
                               "Linux AIO, pread64/pwrite64, fsync): for a host without uprobes or not x86_64",
                               {"bpftrace": "bpftrace/fusevdevlat_syscalls.bt"}, (NEEDS_PID, NEEDS_SLOW),
                               used_when="without uprobes, or not x86_64"),
}

#: D scripts for the OpenZFS module on Linux, run by ``--backend dtrace`` (Oracle's DTrace for Linux) instead of the
#: trace's illumos script, a clause of which needs what Linux lacks (docs/tracing.md, "D on kernel OpenZFS")
LINUX_D: Dict[str, TraceScript] = {
    "arc": TraceScript("arc", "ARC hits, I/O hits and misses by kind, and L2ARC hits (fbt on arc_access): D on "
                       "OpenZFS for Linux, where arc.d's sdt probes are absent and arc_read cannot be probed",
                       {"dtrace": "dtrace/arc_linux.d"}, (), True, openzfs_min=(2, 2), used_when="D on Linux",
                       openzfs_gated=("dtrace",)),
    "zfsslower": TraceScript("zfsslower", "ZFS read/write latency per filesystem, slow ops, op counts (fbt on the "
                             "ZPL's zpl_iter_read/write): D on OpenZFS for Linux, which has no vnode_t and no fsinfo",
                             {"dtrace": "dtrace/zfsslower_linux.d"}, (NEEDS_SLOW,), True, used_when="D on Linux"),
}



def variant_specs() -> List[TraceScript]:
    """Every script run instead of a trace's own somewhere (:data:`VARIANTS`, :data:`LINUX_D`)."""
    return [*VARIANTS.values(), *LINUX_D.values()]


#: the machines whose syscall numbers fusevdevlat.bt writes (its CONSTANTS header); elsewhere its variant runs
FUSEVDEVLAT_MACHINES = ("x86_64",)


def variant_reason(name: str, machine: Optional[str] = None, uprobes: Optional[bool] = None) -> Optional[str]:
    """Why ``name`` runs its :data:`VARIANTS` script on this host (bpftrace), or None for its own script.

    ``arc``: the OpenZFS module is loaded and has no zfs tracepoints (``host.zfs_tracepoints``).
    ``fusevdevlat``: the host is not one whose syscall numbers the uprobe script writes (``machine``, default
    this one's), or its kernel has no uprobes (``uprobes``, default ``host.uprobes_available``): then the
    syscall-tracepoint script runs, which costs every process's syscalls a little while it is attached."""
    if name == "arc" and os.path.isdir("/sys/module/zfs") and not zfs_tracepoints():
        return "the OpenZFS module has no zfs tracepoints (built without them): arc runs arc_kprobe.bt (kprobes)"
    if name == "fusevdevlat":
        machine = machine or platform.machine()
        if machine not in FUSEVDEVLAT_MACHINES:
            return (f"fusevdevlat.bt writes x86_64's syscall numbers and this host is {machine}: fusevdevlat runs "
                    f"fusevdevlat_syscalls.bt (syscall tracepoints)")
        if not (uprobes_available() if uprobes is None else uprobes):
            return "the kernel has no uprobes: fusevdevlat runs fusevdevlat_syscalls.bt (syscall tracepoints)"
    return None


#: the package-data folder an installed zfsmon carries dtrace/ and bpftrace/ in (setup.py copies them there)
PACKAGED_SCRIPTS = "share"


def scripts_root() -> Path:
    """Where dtrace/ and bpftrace/ live: $ZFSMON_SCRIPTS, else the installed package's data
    (``zfsmon/share/``, found through importlib.resources), else the source tree this package came from."""
    env = os.environ.get("ZFSMON_SCRIPTS")
    if env:
        return Path(env)
    packaged = importlib.resources.files("zfsmon") / PACKAGED_SCRIPTS
    if isinstance(packaged, Path) and (packaged / "bpftrace").is_dir():
        return packaged  # a wheel install: unpacked files, so dtrace/bpftrace can read them by path
    return Path(__file__).resolve().parent.parent.parent


def tracer_family(platform: Optional[str] = None, backend: Optional[str] = None) -> str:
    """Which scripts run: dtrace/ on illumos and FreeBSD, and on Linux with ``--backend dtrace``; else bpftrace/."""
    plat = platform or sys.platform
    return "bpftrace" if plat.startswith("linux") and backend != "dtrace" else "dtrace"







def bcc_offers(name: str) -> bool:
    """The bcc backend has this trace (``vdevlat`` is its ``blklat``, as bpftrace's vdevlat is blklat.bt)."""
    return name in bcc_program.TRACES or name in bcc_program.ALIASES


def choose_backend(requested: Optional[str], names: List[str], platform: Optional[str] = None) -> str:
    """The backend of a ``zfsmon trace`` run: as asked; else bcc for several traces at once (one program),
    else bpftrace when it is installed, else dtrace when one is (Oracle Linux's), else bcc when ``import bcc``
    works, else bpftrace (whose absence then gives the error)."""
    if tracer_family(platform) == "dtrace":
        if requested:
            raise UserError(f"--backend {requested} is for Linux; this platform traces with dtrace")
        return "dtrace"
    if requested:
        if requested not in LINUX_BACKENDS:
            raise UserError(f"no tracing backend {requested!r} (Linux has: {', '.join(LINUX_BACKENDS)})")
        return requested
    if len(names) > 1 or any(n == "all" for n in names):
        return "bcc"
    backend = script_backend(platform)
    if backend == "bpftrace" and not shutil.which("bpftrace") and bcc_facts().version:
        return "bcc"
    return backend


def script_backend(platform: Optional[str] = None) -> str:
    """Who runs a trace's script where none is asked for (``record``/``top --trace``): on Linux bpftrace, or
    dtrace where it is installed and bpftrace is not (Oracle Linux); elsewhere dtrace."""
    if tracer_family(platform) == "dtrace":
        return "dtrace"
    return "dtrace" if not shutil.which("bpftrace") and shutil.which("dtrace") else "bpftrace"


def split_names(text: str) -> List[str]:
    """``zfsslower,arc,vdevlat`` -> its names (several traces at once are for the bcc backend)."""
    return [n.strip() for n in text.split(",") if n.strip()]


def lookup(name: str) -> TraceScript:
    spec = SCRIPTS.get(name)
    if spec is None:
        raise UserError(f"no trace script called {name!r} (known: {', '.join(sorted(SCRIPTS))})")
    return spec


def resolve(name: str, platform: Optional[str] = None, fuse_pid: Optional[int] = None,
            family: Optional[str] = None) -> TraceScript:
    """The script to run for ``name`` here: ``vdevlat`` on a zfs-fuse host becomes ``fusevdevlat``; a trace whose
    own probes this host lacks becomes its :data:`VARIANTS` script; D on Linux runs :data:`LINUX_D`'s."""
    family = family or tracer_family(platform)
    spec = lookup(name)
    if family == "dtrace":
        return LINUX_D.get(name, spec) if (platform or sys.platform).startswith("linux") else spec
    if name == "vdevlat" and fuse_pid:
        spec, name = SCRIPTS["fusevdevlat"], "fusevdevlat"
    if name in VARIANTS and variant_reason(name):
        return VARIANTS[name]
    return spec


def script_path(spec: TraceScript, family: str) -> Path:
    rel = spec.files.get(family)
    if rel is None:
        raise UserError(f"trace {spec.name!r} has no {family} script (it exists for: {', '.join(spec.files)})")
    path = scripts_root() / rel
    if not path.is_file():
        raise UserError(f"trace script {path} not found (set ZFSMON_SCRIPTS to the directory holding "
                        f"dtrace/ and bpftrace/)")
    return path


def openzfs_module_version() -> Optional[str]:
    """The loaded OpenZFS kernel module's version (``2.3.1-1``), or None where there is none."""
    flavour, version, _why = detect_flavour(platform.system())
    return version if flavour == "openzfs-kmod" else None


def check_openzfs(spec: TraceScript, family: str, zfs_version: Optional[str]) -> None:
    """Refuse a script on an OpenZFS older than the one its constants (or probe arguments) were checked for.

    Silent is the danger: arc.bt run on 0.7 would test the wrong metadata bit and still print numbers.
    An unknown version (no module) passes: the module check of the preflight reports that.
    """
    if not spec.openzfs_min or family not in spec.openzfs_gated or not zfs_version:
        return
    have = version_tuple(zfs_version)[:2]
    if have and have < spec.openzfs_min:
        least = ".".join(str(n) for n in spec.openzfs_min)
        raise UserError(f"trace {spec.name!r}: {spec.files[family]} writes OpenZFS kernel constants checked for "
                        f"OpenZFS {least} and later (see its CONSTANTS header); this host runs {zfs_version}")


def argv_for(spec: TraceScript, interval: int, family: str, pid: Optional[int] = None,
             slow_ms: int = 0, tracer: Optional[str] = None, zfs_version: Optional[str] = None) -> List[str]:
    """The command line: ``bpftrace -q -B line FILE INTERVAL ...`` or ``dtrace -q -s FILE INTERVAL ...``.

    ``zfs_version`` is the OpenZFS module's version for :func:`check_openzfs`; None reads it from this host.
    """
    path = str(script_path(spec, family))
    if spec.openzfs_min:
        check_openzfs(spec, family, zfs_version if zfs_version is not None else openzfs_module_version())
    extra: List[str] = []
    for need in spec.args:
        if need == NEEDS_PID:
            if not pid:
                raise UserError(f"trace {spec.name!r} needs the zfs-fuse daemon's pid, and none is running")
            extra.append(str(pid))
        elif need == NEEDS_SLOW:
            extra.append(str(int(slow_ms)))
    if family == "bpftrace":
        return [tracer or "bpftrace", "-q", "-B", "line", path, str(int(interval)), *extra]
    return [tracer or "dtrace", "-q", "-s", path, str(int(interval)), *extra]
