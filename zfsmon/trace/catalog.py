"""The trace scripts zfsmon knows, and which file runs on which platform.

One logical trace (``vdevlat``, ``arc``, ``zil``, ...) has a D script for
illumos/FreeBSD and a bpftrace twin for Linux; both print the same protocol.
``vdevlat`` on Linux picks the zfs-fuse syscall script when a zfs-fuse daemon
runs (it sees what ZFS sees, throttling included) and the block-layer script
otherwise.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from zfsmon.errors import UserError

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


SCRIPTS: Dict[str, TraceScript] = {s.name: s for s in (
    TraceScript("blklat", "block-device I/O latency histograms per device and vdev, read vs write",
                {"bpftrace": "bpftrace/blklat.bt", "dtrace": "dtrace/vdevlat.d"}, (NEEDS_SLOW,)),
    TraceScript("fusevdevlat", "zfs-fuse per-vdev latency at its vdev syscalls (Linux AIO, pread64/pwrite64, fsync)",
                {"bpftrace": "bpftrace/fusevdevlat.bt"}, (NEEDS_PID, NEEDS_SLOW)),
    TraceScript("vdevlat", "per-vdev I/O latency histograms with roles (picks the right script per platform)",
                {"bpftrace": "bpftrace/blklat.bt", "dtrace": "dtrace/vdevlat.d"}, (NEEDS_SLOW,)),
    TraceScript("arc", "ARC and L2ARC hits/misses by kind (demand/prefetch, data/metadata) and L2ARC feed",
                {"bpftrace": "bpftrace/arc.bt", "dtrace": "dtrace/arc.d"}, (), True),
    TraceScript("zil", "zil_commit latency and commits per second (and SLOG write latency with D)",
                {"bpftrace": "bpftrace/zil.bt", "dtrace": "dtrace/zil.d"}, (NEEDS_SLOW,), True),
    TraceScript("zfsslower", "ZFS read/write latency per filesystem, slow-op outliers, fsstat-like op counts",
                {"bpftrace": "bpftrace/zfsslower.bt", "dtrace": "dtrace/zfsslower.d"}, (NEEDS_SLOW,), True),
    TraceScript("txg", "txg sync (spa_sync) duration per pool",
                {"bpftrace": "bpftrace/txg.bt", "dtrace": "dtrace/txg.d"}, (NEEDS_SLOW,), True),
)}


def scripts_root() -> Path:
    """Where dtrace/ and bpftrace/ live: $ZFSMON_SCRIPTS, else the source tree this package came from."""
    env = os.environ.get("ZFSMON_SCRIPTS")
    return Path(env) if env else Path(__file__).resolve().parent.parent.parent


def tracer_family(platform: Optional[str] = None) -> str:
    plat = platform or sys.platform
    return "bpftrace" if plat.startswith("linux") else "dtrace"



def lookup(name: str) -> TraceScript:
    spec = SCRIPTS.get(name)
    if spec is None:
        raise UserError(f"no trace script called {name!r} (known: {', '.join(sorted(SCRIPTS))})")
    return spec


def resolve(name: str, platform: Optional[str] = None, fuse_pid: Optional[int] = None) -> TraceScript:
    """The script to run for ``name`` here: ``vdevlat`` on a zfs-fuse host becomes ``fusevdevlat``."""
    spec = lookup(name)
    if name == "vdevlat" and tracer_family(platform) == "bpftrace" and fuse_pid:
        return SCRIPTS["fusevdevlat"]
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


def argv_for(spec: TraceScript, interval: int, family: str, pid: Optional[int] = None,
             slow_ms: int = 0, tracer: Optional[str] = None) -> List[str]:
    """The command line: ``bpftrace -q -B line FILE INTERVAL ...`` or ``dtrace -q -s FILE INTERVAL ...``."""
    path = str(script_path(spec, family))
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
