"""What `zfsmon record` costs the whole machine on an idle lab: its own CPU, the zfs-fuse daemon's, the kernel's.

The recorder's own CPU (its process and `zpool` children) leaves out work done on its behalf elsewhere: on the lab,
zfs-fuse serves every kstat read (53 arcstats files a second, each a few FUSE requests, each a wakeup of a daemon
thread and of the recorder), and the kernel commits and flushes the recording every second. This runs
``zfsmon record`` (every source, 1 s) on an idle lab pool, stops and continues its process group in alternating
blocks (SIGSTOP/SIGCONT, as ``bench_overhead --switch`` does under pgbench), and per block takes the machine's busy
CPU (/proc/stat: every process, kernel threads, interrupts), the recorder's, zfs-fuse's and zfs-fuse's context
switches. The medians of the "on" blocks less those of the "off" ones are the recorder's cost; on a 2-core machine
running a CPU-bound workload, that share of the machine is the most a fair scheduler would take from it.

    python3 bench/bench_record_cpu.py --rounds 4 --seconds 40

Needs root and zfs-fuse (it builds a lab pool of its own and removes it). Run it on an otherwise quiet machine:
the machine-wide figure counts everything. Prints a markdown section for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_collect import Stretch, tree_cpu  # noqa: E402
from bench.bench_overhead import start_recorder, stop_recorder  # noqa: E402
from zfsmon import lab as labmod  # noqa: E402
from zfsmon.host import zfs_fuse_pid  # noqa: E402
from zfsmon.lab.config import LabConfig  # noqa: E402

#: a block's figures, in % of one core (switches: a second)
FIGURES = ("machine", "recorder", "zfs-fuse", "zfs-fuse switches")


def block(seconds: float, recorder: int, fuse: int) -> Dict[str, float]:
    """The figures over one block of ``seconds``."""
    r0 = tree_cpu(recorder)
    with Stretch(fuse) as st:
        time.sleep(seconds)
    r1 = tree_cpu(recorder)
    return {"machine": 100 * st.machine / st.seconds, "recorder": 100 * (r1 - r0) / st.seconds,
            "zfs-fuse": 100 * st.cpu / st.seconds, "zfs-fuse switches": st.switches / st.seconds}


def measure(pool: str, rounds: int, seconds: float, settle: float) -> Dict[str, List[Dict[str, float]]]:
    """``rounds`` pairs of blocks (off, on; the order alternates each round: ABBA), ``settle`` seconds after each
    switch left out."""
    fuse = zfs_fuse_pid()
    if fuse is None:
        raise SystemExit("no zfs-fuse daemon")
    out: Dict[str, List[Dict[str, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        proc = start_recorder(pool, os.path.join(d, "rec.zfsmon"), own_group=True)
        try:
            for r in range(rounds):
                for arm in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    os.killpg(proc.pid, signal.SIGSTOP if arm == "off" else signal.SIGCONT)
                    time.sleep(settle)
                    out[arm].append(block(seconds, proc.pid, fuse))
                os.killpg(proc.pid, signal.SIGCONT)
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
            stop_recorder(proc)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="pairs of blocks (default 4)")
    ap.add_argument("--seconds", type=float, default=40.0, help="length of a block (default 40)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds left out after each switch (default 2)")
    a = ap.parse_args()
    pool = f"zrcpu{os.getpid()}"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        labmod.up(LabConfig(pool=pool, directory=d), log=lambda *_: None)
        try:
            got = measure(pool, a.rounds, a.seconds, a.settle)
        finally:
            labmod.down(pool, log=lambda *_: None)
    print("## The recorder's whole cost on an idle lab\n")
    print(f"Command: `python3 bench/bench_record_cpu.py --rounds {a.rounds} --seconds {a.seconds:g}`\n")
    print("| figure (% of one core; switches a second) | recorder stopped | recording | the recorder's cost |")
    print("|---|---|---|---|")
    for f in FIGURES:
        off = statistics.median(b[f] for b in got["off"])
        on = statistics.median(b[f] for b in got["on"])
        print(f"| {f} | {off:.2f} | {on:.2f} | **{on - off:+.2f}** |")
    print("\nPer block (on): " + "; ".join(", ".join(f"{b[f]:.2f}" for f in FIGURES) for b in got["on"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
