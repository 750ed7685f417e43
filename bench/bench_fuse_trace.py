"""What each zfs-fuse trace script costs, per vdev I/O and to every other process, measured directly.

zfs-fuse's two scripts print the same thing and are priced differently:

- ``fusevdevlat.bt`` puts uprobes on libc's ``syscall``/``fsync``/``fdatasync``: only the processes that call
  those functions trap (two traps per AIO call of the daemon), and nothing else on the host pays.
- ``fusevdevlat_syscalls.bt`` (its variant where there are no uprobes) uses syscall tracepoints: while they are
  enabled every thread of every process takes the kernel's syscall slow path, besides the probes' own runs.

Each trial, with no tracer, then with each script attached (bpftrace, once it has reported its first interval), in
a rotating order: ``--reads`` random 8 KiB reads of a file larger than the ARC on a lab pool (host caches dropped
first, a fresh seed each trial, so most reach the vdevs), timing the daemon's CPU (its process tree, /proc) per
vdev read (/proc/diskstats of the pool's leaves); then a bystander, a process making ``--calls`` cheap syscalls
(``getppid``), timing its CPU per call, once as Python makes it and once through libc's ``syscall()`` (as Rust's
standard library makes its futex calls: those trap under the uprobe script). The medians over ``--trials`` are printed as a markdown table.

    python3 bench/bench_fuse_trace.py --pool zft --trials 5        # builds the lab zft, and removes it after

Needs root, zfs-fuse and bpftrace.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_collect import tree_cpu  # noqa: E402
from tests.lab.helpers import drop_host_caches, random_reads, write_file  # noqa: E402
from zfsmon import lab as labmod  # noqa: E402
from zfsmon.host import zfs_fuse_pid  # noqa: E402
from zfsmon.lab.config import LabConfig  # noqa: E402
from zfsmon.trace.collector import ensure_tracefs  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ARMS = ("none", "fusevdevlat.bt", "fusevdevlat_syscalls.bt")

#: the bystander: CPU seconds of ``n`` getppid() calls, in its own process (what another program pays per syscall),
#: made directly (argv[2] == "direct") or through libc's syscall(SYS_getppid) (ctypes; 110 on x86_64)
BYSTANDER = ("import ctypes, os, sys, time\nn = int(sys.argv[1])\n"
             "call = os.getppid if sys.argv[2] == 'direct' else (lambda f=ctypes.CDLL(None).syscall: f(110))\n"
             "t0 = time.process_time()\nfor _ in range(n):\n    call()\nprint(time.process_time() - t0)\n")


def disk_reads(names: List[str]) -> int:
    """Reads completed on these block devices (/proc/diskstats)."""
    with open("/proc/diskstats") as f:
        return sum(int(p[3]) for p in (line.split() for line in f) if p[2] in names)


def attach(script: str, pid: int) -> subprocess.Popen:
    """bpftrace running ``script`` on the daemon, once it has printed its first interval."""
    proc = subprocess.Popen(["bpftrace", "-q", "-B", "line", str(REPO / "bpftrace" / script), "1", str(pid), "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    for line in proc.stdout:
        if line.startswith("interval "):
            return proc
    raise SystemExit(f"{script}: bpftrace ended before its first interval (exit {proc.wait()})")


def trial(arm: str, pid: int, path: str, leaves: List[str], reads: int, calls: int, seed: int) -> Dict[str, float]:
    tracer: Optional[subprocess.Popen] = attach(arm, pid) if arm != "none" else None
    try:
        drop_host_caches()
        c0, r0 = tree_cpu(pid), disk_reads(leaves)
        random_reads(path, reads, seed=seed)
        cpu, vdev_reads = tree_cpu(pid) - c0, disk_reads(leaves) - r0
        by = {how: float(subprocess.run([sys.executable, "-c", BYSTANDER, str(calls), how], capture_output=True,
                                        text=True, check=True).stdout) for how in ("direct", "libc")}
    finally:
        if tracer is not None:
            tracer.send_signal(2)
            tracer.wait(timeout=60)
    return {"us_per_read": 1e6 * cpu / max(vdev_reads, 1), "vdev_reads": vdev_reads,
            "ns_per_call": 1e9 * by["direct"] / calls, "ns_per_libc_call": 1e9 * by["libc"] / calls}


def table(results: Dict[str, List[Dict[str, float]]]) -> str:
    def cell(xs: List[float], digits: int = 0) -> str:
        return f"**{statistics.median(xs):.{digits}f}** ({', '.join(f'{x:.0f}' for x in xs)})"

    rows = ["| arm | zfs-fuse CPU per vdev read, us | vdev reads a trial | a bystander's CPU per getppid(), ns | "
            "the same through libc's syscall(), ns |", "|---|---|---|---|---|"]
    for arm in ARMS:
        rs = results[arm]
        rows.append(f"| {arm} | {cell([r['us_per_read'] for r in rs], 1)} | "
                    f"{statistics.median(r['vdev_reads'] for r in rs):.0f} | {cell([r['ns_per_call'] for r in rs])} | "
                    f"{cell([r['ns_per_libc_call'] for r in rs])} |")
    return "\n".join(rows) + "\n\n(medians in bold, then each trial's value)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool", default="zfusetrace", help="lab pool (built if absent, removed after unless --keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--reads", type=int, default=6000)
    ap.add_argument("--calls", type=int, default=300_000)
    ap.add_argument("--file-mb", type=int, default=160, help="the read file (larger than the lab's 64 MB ARC)")
    args = ap.parse_args()
    problem = ensure_tracefs()
    if problem:
        raise SystemExit(problem)
    cfg = LabConfig(pool=args.pool)
    existed = labmod.info(args.pool) is not None
    info = labmod.up(cfg, log=lambda *_: None)
    try:
        pid = zfs_fuse_pid()
        if not pid:
            raise SystemExit("no zfs-fuse daemon")
        leaves = [os.path.basename(d) for role in ("data", "cache") for d in info.devices.get(role, [])]
        path = os.path.join(info.mountpoint, "fuse-trace.bin")
        if not os.path.exists(path):
            write_file(path, args.file_mb)
        results: Dict[str, List[Dict[str, float]]] = {a: [] for a in ARMS}
        seeds = random.Random(15)
        for t in range(args.trials):
            for arm in ARMS[t % 3:] + ARMS[:t % 3]:  # rotate which arm comes first
                results[arm].append(trial(arm, pid, path, leaves, args.reads, args.calls, seeds.randrange(1 << 30)))
                print(f"trial {t + 1} {arm}: {results[arm][-1]}", file=sys.stderr, flush=True)
        print(f"`python3 bench/bench_fuse_trace.py --trials {args.trials} --reads {args.reads} --calls {args.calls}` "
              f"({time.strftime('%Y-%m-%d')}, load average at the end {os.getloadavg()[0]:.1f}):\n")
        print(table(results))
    finally:
        if not args.keep and not existed:
            labmod.down(args.pool, log=lambda *_: None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
