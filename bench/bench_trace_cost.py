"""What a trace script costs, measured directly: its BPF programs' runs and run time, and its tracer's CPU.

For each ``--script``: ``TraceCollector(SCRIPT, 1)`` (the code path of ``zfsmon record --trace``) on POOL while
bench_collect's workload writes, fsyncs and reads a file in the pool's mountpoint; once the script has reported
its first interval, for ``--seconds``: the kernel's run count and run time of the tracer's BPF programs
(``kernel.bpf_stats_enabled`` on for the bench, then as it was) and the tracer process's CPU. A probe run is one
event the script handles (a function entered or returned, a tracepoint hit), whatever it then keeps. Where
bench_overhead's TPS A/B needs the zfs-fuse lab, this runs on any pool the scripts can trace: the OpenZFS guest's
scripts on ZFS tracepoints and kprobes (numbers there are emulated CPU: their shape, not their size).

    zfsmon guest run --zfs 2.3 --out DIR -- 'cd /mnt/zfsmon && /opt/zfsmon/venv/bin/python3 \\
        bench/bench_trace_cost.py --pool zguest --seconds 60 --script arc --script zil --script txg \\
        --script zfsslower'

Needs root and a tracer (bpftrace, or bcc with ``--tracer bcc``). Prints a markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpfstats  # noqa: E402

from bench.bench_collect import WORKLOAD, pool_mountpoint  # noqa: E402
from zfsmon.trace import TraceCollector  # noqa: E402


def measure(script: str, pool: str, seconds: float, tracer: str) -> Dict[str, float]:
    """One script: its cost over ``seconds`` of the workload, once it has reported an interval."""
    coll = TraceCollector(script, 1, pools=(pool,), tracer=tracer or None)
    problem = coll.preflight()
    if problem:
        raise SystemExit(f"cannot trace {script}: {problem}")
    coll.start()
    try:
        t0 = time.monotonic()
        while coll.intervals() < 1:  # bpftrace takes 30-55 s to start under emulation
            if time.monotonic() - t0 > 300:
                raise SystemExit(f"{script}: no interval reported in 300 s")
            coll.poll()
            time.sleep(0.2)
        pid = bpfstats.tracer_pid(coll, script)
        before, w0 = bpfstats.probe_counters(pid), time.monotonic()
        while time.monotonic() - w0 < seconds:
            coll.poll()  # as record and top do: the reports are read (and parsed) as they come
            time.sleep(0.5)
        after, wall = bpfstats.probe_counters(pid), time.monotonic() - w0
    finally:
        coll.stop()
    return bpfstats.cost(before, after, wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", required=True, help="an imported pool; the workload runs in its mountpoint")
    ap.add_argument("--script", action="append", required=True, help="a trace script (repeat for several)")
    ap.add_argument("--seconds", type=float, default=60.0, help="measured seconds per script (default 60)")
    ap.add_argument("--tracer", default="", help="bpftrace (default where it runs) or bcc")
    a = ap.parse_args()
    mnt = pool_mountpoint(a.pool)
    rows: List[str] = []
    wl = subprocess.Popen([sys.executable, "-c", WORKLOAD, os.path.join(mnt, "bench-trace-cost.bin"),
                           str(len(a.script) * (a.seconds + 330))])
    try:
        with bpfstats.stats_enabled():
            for script in a.script:
                c = measure(script, a.pool, a.seconds, a.tracer)
                rows.append(f"| `{script}` | {c['runs_per_s']:.0f} | {c['ns_per_run']:.0f} | {c['probes_pct']:.2f} | "
                            f"{c['tracer_pct']:.2f} |")
                print(rows[-1], file=sys.stderr, flush=True)
    finally:
        wl.kill()
        wl.wait()
    print(f"Command: `python3 bench/bench_trace_cost.py --pool {a.pool} --seconds {a.seconds:g} "
          + " ".join(f"--script {s}" for s in a.script) + (f" --tracer {a.tracer}" if a.tracer else "") + "`\n")
    print("| script | probe runs (events handled) per s | ns per probe run | probes' CPU, % of a core | the tracer "
          "process's CPU, % of a core |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
