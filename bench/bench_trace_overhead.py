"""Tracing overhead: pgbench TPS on the zfs-fuse lab with and without a trace script running, interleaved.

A trace script costs CPU per traced event (a few map updates per I/O or syscall), and on a 2-core
machine that CPU competes with PostgreSQL and zfs-fuse. This runs the same pgbench workload
alternately without and with ``TraceCollector(SCRIPT)`` (the exact code path of ``zfsmon top --trace`` /
``record --trace``, polled every 0.5 s like the dashboard), ABBA-ordered so drift (ARC and L2ARC
warm-up, txg timing) does not masquerade as overhead, and reports the median TPS of each arm and the
relative cost.

    python3 bench/bench_trace_overhead.py                      # builds a lab "ztbench", tears it down
    python3 bench/bench_trace_overhead.py --pool zlab --keep   # an existing lab, left as it was
    python3 bench/bench_trace_overhead.py --script blklat --rounds 4 --seconds 30

Needs root, zfs-fuse, bpftrace and PostgreSQL. Prints a markdown section for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zfsmon import lab as labmod  # noqa: E402
from zfsmon.lab.config import LabConfig  # noqa: E402
from zfsmon.model import Sample  # noqa: E402
from zfsmon.names import is_grouping_vdev  # noqa: E402
from zfsmon.sources.pgbench_text import parse_summaries  # noqa: E402
from zfsmon.trace import TraceCollector  # noqa: E402
from zfsmon.workload.pgcluster import PgCluster  # noqa: E402


def run_pgbench(cluster: PgCluster, db: str, clients: int, seconds: int, select_only: bool) -> float:
    argv = [cluster.pgbench(), "-n", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds)]
    if select_only:
        argv.append("-S")
    env = {**os.environ, **cluster.env(db)}
    res = subprocess.run(argv + [db], capture_output=True, text=True, env=env, timeout=seconds + 120)
    if res.returncode != 0:
        raise SystemExit(f"pgbench failed: {res.stderr.strip()[-300:]}")
    summaries = parse_summaries(res.stdout)
    if not summaries or summaries[-1].tps_excluding is None:
        raise SystemExit(f"no tps in pgbench output:\n{res.stdout[-500:]}")
    return float(summaries[-1].tps_excluding)


def traced_run(script: str, cluster: PgCluster, db: str, args: argparse.Namespace, pool: str) -> Dict[str, float]:
    """One pgbench run with the tracer attached; also how many ops the tracer saw (proof it was tracing)."""
    coll = TraceCollector(script, 1, pools=(pool,))
    problem = coll.preflight()
    if problem:
        raise SystemExit(f"cannot trace: {problem}")
    coll.start()
    traced = 0.0
    try:
        t0 = time.monotonic()
        while coll.intervals() < 1 and time.monotonic() - t0 < 30:
            coll.poll()
            time.sleep(0.1)
        result: Dict[str, float] = {}
        t = threading.Thread(target=lambda: result.update(
            tps=run_pgbench(cluster, db, args.clients, args.seconds, args.select_only)))
        t.start()
        while t.is_alive():
            for r in coll.poll():
                if isinstance(r, Sample):
                    if not is_grouping_vdev(r.entity.name):  # devices only: a mirror row repeats its leaves
                        traced += sum(v for k, v in r.metrics.items() if k.endswith("_ops"))
            time.sleep(0.5)
        t.join()
    finally:
        coll.stop()
    return {"tps": result["tps"], "traced_ops": traced}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", default="ztbench", help="lab pool (built if absent)")
    ap.add_argument("--keep", action="store_true", help="leave the lab and the cluster in place")
    ap.add_argument("--script", default="vdevlat", help="trace script (default vdevlat)")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="ABBA rounds (each: one run per arm)")
    ap.add_argument("--select-only", action="store_true", help="pgbench -S (reads) instead of TPC-B-like")
    ap.add_argument("--port", type=int, default=5497)
    args = ap.parse_args()

    existed = labmod.info(args.pool) is not None
    info = labmod.up(LabConfig(pool=args.pool), log=lambda *_: None)
    datadir = Path(info.mountpoint) / "pg-trace-bench"
    cluster = PgCluster(datadir=datadir, port=args.port, shared_buffers="16MB")
    tps: Dict[str, List[float]] = {"off": [], "on": []}
    traced: List[float] = []
    try:
        if not cluster.is_initialized():
            cluster.init()
        cluster.start()
        cluster.createdb("bench")
        env = {**os.environ, **cluster.env("bench")}
        subprocess.run([cluster.pgbench(), "-i", "-q", "-s", str(args.scale), "bench"], env=env, check=True,
                       capture_output=True, timeout=1800)
        run_pgbench(cluster, "bench", args.clients, min(10, args.seconds), args.select_only)  # warm-up
        for i in range(args.rounds):
            for arm in (("off", "on") if i % 2 == 0 else ("on", "off")):
                if arm == "off":
                    tps["off"].append(run_pgbench(cluster, "bench", args.clients, args.seconds, args.select_only))
                else:
                    r = traced_run(args.script, cluster, "bench", args, args.pool)
                    tps["on"].append(r["tps"])
                    traced.append(r["traced_ops"])
                print(f"round {i + 1} {arm}: {tps[arm][-1]:.1f} tps", file=sys.stderr)
    finally:
        if not args.keep:
            cluster.stop()
            if not existed:
                labmod.down(args.pool, log=lambda *_: None)
    off, on = statistics.median(tps["off"]), statistics.median(tps["on"])
    cost = 100.0 * (off - on) / off if off else float("nan")
    # each round's two runs are neighbours in time: their ratio is the drift-free estimate
    paired = [100.0 * (a - b) / a for a, b in zip(tps["off"], tps["on"]) if a]
    load = os.getloadavg()[0]
    kind = "select-only (-S)" if args.select_only else "TPC-B-like"
    print(f"""## Tracing

`python3 bench/bench_trace_overhead.py --script {args.script} --rounds {args.rounds} --seconds {args.seconds}`
({platform.node()}, {os.cpu_count()} CPUs): pgbench {kind}, scale {args.scale}, {args.clients} clients,
{args.seconds} s per run, on the zfs-fuse lab, runs interleaved ABBA without and with
`TraceCollector("{args.script}", 1)` polled every 0.5 s.

| arm | runs (tps) | median tps |
|---|---|---|
| without tracing | {", ".join(f"{x:.0f}" for x in tps["off"])} | {off:.1f} |
| with `{args.script}` | {", ".join(f"{x:.0f}" for x in tps["on"])} | {on:.1f} |

Cost of tracing: {cost:.1f} % of median TPS; per round (paired runs): {", ".join(f"{x:+.1f} %" for x in paired)}
(median {statistics.median(paired):.1f} %). The tracer saw {statistics.median(traced):.0f} vdev ops per run;
load average at the end: {load:.1f}.
""")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
