"""zfsmon's cost on the workload: pgbench TPS on the zfs-fuse lab (or a real pool) with and without zfsmon, interleaved.

Two arms (``--arm``):

- ``trace``: ``TraceCollector(SCRIPT)`` (the exact code path of ``zfsmon top --trace`` / ``record --trace``,
  polled every 0.5 s like the dashboard). A trace script costs CPU per traced event (a few map updates per
  I/O or syscall), and on a 2-core machine that CPU competes with PostgreSQL and zfs-fuse.
- ``record``: ``zfsmon record --pool POOL --interval 1`` (every source this host has, or the ``--sources`` named)
  as its own process, started before and stopped (SIGTERM) after each "on" run.

The trace arm also measures the tracer's own CPU directly, which the TPS difference (pgbench's spread on 2
shared cores is +-15-25 % a run) cannot resolve: the kernel's run count and run time of every BPF program the
tracer holds (``/proc/PID/fdinfo``, with ``kernel.bpf_stats_enabled`` set for the run and put back after) and the
tracer process's own CPU time, over each traced pgbench run.

``--switch SECONDS`` measures the same difference inside one long pgbench run instead (its per-second progress
reports): the arm is switched on and off every SECONDS, and each pair of neighbouring blocks is a round. Separate
runs a minute apart differ by up to 2x on this VM when a neighbour's load comes and goes; blocks two seconds apart
mostly do not, and half an hour gives hundreds of pairs. The recorder is stopped (SIGSTOP to its process group)
and continued; a tracer is detached and attached again, since a stopped bpftrace's probes still fire.

Runs are ABBA-ordered so drift (ARC and L2ARC warm-up, txg timing) does not masquerade as overhead; each
round's two runs are neighbours in time, so the paired difference is the estimate: the median of the
per-round differences with a bootstrap confidence interval (resampling the rounds).

    python3 bench/bench_overhead.py --arm record --rounds 12 --seconds 60 --pool ztab
    python3 bench/bench_overhead.py --arm record --switch 2 --guard 0 --minutes 30 --select-only --prewarm \
        --shared-buffers 512MB      # one run, the recorder stopped and continued every 2 s, neighbours paired
    python3 bench/bench_overhead.py --arm trace --script vdevlat --rounds 12 --seconds 60
    python3 bench/bench_overhead.py --pool zlab --keep      # an existing lab, left as it was
    python3 bench/bench_overhead.py --existing --pool zguest --dataset zguest/db --arm trace --script zfsslower
        # in the OpenZFS guest (zfsmon guest run): a real pool, nothing built or torn down

Needs root, zfs-fuse, PostgreSQL (and bpftrace for the trace arm). Prints a markdown section for
docs/performance.md after every round (to --out if given), so a stopped run still leaves its rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpfstats  # noqa: E402

from bench.bench_collect import pool_mountpoint, tree_cpu  # noqa: E402
from zfsmon import lab as labmod  # noqa: E402
from zfsmon.host import zfs_fuse_pid  # noqa: E402
from zfsmon.lab.config import LabConfig  # noqa: E402
from zfsmon.model import Sample  # noqa: E402
from zfsmon.names import is_grouping_vdev  # noqa: E402
from zfsmon.sources.pgbench.text import parse_progress, parse_summaries  # noqa: E402
from zfsmon.trace import TraceCollector  # noqa: E402
from zfsmon.workload.pgcluster import PgCluster  # noqa: E402


def pgbench_argv(cluster: PgCluster, db: str, clients: int, seconds: int, select_only: bool,
                 extra: Sequence[str] = ()) -> List[str]:
    return ([cluster.pgbench(), "-n", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds), *extra]
            + (["-S"] if select_only else []) + [db])


def run_pgbench(cluster: PgCluster, db: str, clients: int, seconds: int, select_only: bool) -> float:
    env = {**os.environ, **cluster.env(db)}
    res = subprocess.run(pgbench_argv(cluster, db, clients, seconds, select_only), capture_output=True, text=True,
                         env=env, timeout=seconds + 120)
    if res.returncode != 0:
        raise SystemExit(f"pgbench failed: {res.stderr.strip()[-300:]}")
    summaries = parse_summaries(res.stdout)
    if not summaries or summaries[-1].tps_excluding is None:
        raise SystemExit(f"no tps in pgbench output:\n{res.stdout[-500:]}")
    return float(summaries[-1].tps_excluding)


def prewarm(cluster: PgCluster, db: str) -> None:
    """pgbench's tables and indexes read into shared_buffers, so a select-only run reads none from ZFS."""
    sql = ("CREATE EXTENSION IF NOT EXISTS pg_prewarm; "
           "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
           "WHERE n.nspname = 'public' AND c.relname LIKE 'pgbench_%' AND c.relkind IN ('r', 'i')")
    res = cluster.query(sql, db, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"pg_prewarm failed: {res.stderr.strip()[-300:]}")


def traced_run(script: str, cluster: PgCluster, db: str, args: argparse.Namespace, pool: str) -> Dict[str, float]:
    """One pgbench run with the tracer attached; also how many ops the tracer saw (proof it was tracing), and
    the tracer's own cost over the run: its BPF programs' runs and run time in the kernel, its process's CPU."""
    coll = start_tracer(script, pool, 30)
    traced = 0.0
    try:
        result: Dict[str, float] = {}
        t = threading.Thread(target=lambda: result.update(
            tps=run_pgbench(cluster, db, args.clients, args.seconds, args.select_only)))
        pid = bpfstats.tracer_pid(coll, script)
        before, w0 = bpfstats.probe_counters(pid), time.monotonic()
        t.start()
        while t.is_alive():
            for r in coll.poll():
                if isinstance(r, Sample):
                    if not is_grouping_vdev(r.entity.name):  # devices only: a mirror row repeats its leaves
                        traced += sum(v for k, v in r.metrics.items() if k.endswith("_ops"))
            time.sleep(0.5)
        t.join()
        after, wall = bpfstats.probe_counters(pid), time.monotonic() - w0
    finally:
        coll.stop()
    return {"tps": result["tps"], "traced_ops": traced, "wall": wall, **bpfstats.cost(before, after, wall)}


def start_tracer(script: str, pool: str, wait: float) -> TraceCollector:
    """``TraceCollector(script, 1)`` started, once it has reported its first interval (or ``wait`` seconds)."""
    coll = TraceCollector(script, 1, pools=(pool,))
    problem = coll.preflight()
    if problem:
        raise SystemExit(f"cannot trace: {problem}")
    coll.start()
    t0 = time.monotonic()
    while coll.intervals() < 1 and time.monotonic() - t0 < wait:
        coll.poll()
        time.sleep(0.1)
    return coll


def watched_run(cluster: PgCluster, db: str, args: argparse.Namespace, watch: Dict[str, int]) -> Dict[str, float]:
    """One pgbench run, and the CPU each watched process tree used over it (in % of one core): the recorder's
    own cost measured directly, and zfs-fuse's, which serves the recorder's kstat reads (FUSE) besides the
    workload's I/O, so only its difference between the arms says anything of zfsmon."""
    before, w0 = {k: tree_cpu(pid) for k, pid in watch.items()}, time.monotonic()
    tps = run_pgbench(cluster, db, args.clients, args.seconds, args.select_only)
    wall = time.monotonic() - w0
    return {"tps": tps, "wall": wall, **{f"{k}_pct": 100.0 * (tree_cpu(pid) - before[k]) / wall
                                         for k, pid in watch.items()}}


def fuse_watch() -> Dict[str, int]:
    """The zfs-fuse daemon to watch, by the name runs report it under (none: no daemon)."""
    pid = zfs_fuse_pid()
    return {"zfs-fuse": pid} if pid is not None else {}


def start_recorder(pool: str, out: str, own_group: bool, sources: Sequence[str] = ()) -> subprocess.Popen:
    """``zfsmon record`` (every source, or ``sources``, 1 s) started, past its first commit and its start-up."""
    argv = [sys.executable, "-m", "zfsmon", "record", "--pool", pool, "--interval", "1", "--quiet", "--out", out,
            *sources]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen(argv, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=own_group)
    try:
        t0 = time.monotonic()
        while not os.path.exists(out) and time.monotonic() - t0 < 30:  # its first commit
            if proc.poll() is not None:
                raise SystemExit(f"zfsmon record ended: {proc.stderr.read()[-300:]}")
            time.sleep(0.2)
        time.sleep(2)  # past start-up (imports, detection): the steady state is what is measured
    except BaseException:
        stop_recorder(proc)
        raise
    return proc


def stop_recorder(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def recorded_run(cluster: PgCluster, db: str, args: argparse.Namespace, pool: str, out: str) -> Dict[str, float]:
    """One pgbench run while ``zfsmon record`` (every source or ``--sources``, 1 s) runs as its own process; with the recorder's
    CPU (its process, its ``zpool`` children) over the run."""
    proc = start_recorder(pool, out, own_group=False, sources=args.sources)
    try:
        r = watched_run(cluster, db, args, {"recorder": proc.pid, **fuse_watch()})
    finally:
        stop_recorder(proc)
    if proc.returncode not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
        raise SystemExit(f"zfsmon record failed ({proc.returncode}): {proc.stderr.read()[-300:]}")
    size = os.path.getsize(out) if os.path.exists(out) else 0
    return {**r, "bytes": float(size)}


# --------------------------------------------------------------------------- switched: one run, the arm toggled
# Separate 60-s runs pair two minutes that a neighbour's load can tell apart by 2x on this VM. Switching the arm on
# and off inside one long pgbench run (its per-second progress lines, stamped with the epoch) pairs neighbouring
# blocks seconds apart instead, so slow drift cancels within a pair and an hour gives a hundred pairs.


class Block(NamedTuple):
    """A stretch of the switched run with the arm in one state; the seconds in [start, end] are measured."""

    on: bool
    start: float
    end: float
    fuse_pct: float = float("nan")  # the zfs-fuse daemon's CPU over the block, % of one core (nan: not measured)


def abba(k: int) -> bool:
    """Whether the arm is on in block ``k``: off on, on off, off on, ... (each pair of neighbours holds one of
    each, and the pairs alternate which comes first, so a steady drift does not favour either)."""
    return (k % 2 == 1) != (k // 2 % 2 == 1)


def block_tps(block: Block, progress: Sequence[Tuple[float, float]]) -> Optional[float]:
    """The mean TPS of the 1-s progress reports that lie wholly in the block (a report at epoch ``t`` covers the
    second before it), or None when none does."""
    inside = [tps for t, tps in progress if block.start <= t - 1.0 and t <= block.end]
    return statistics.fmean(inside) if inside else None


def block_pairs(blocks: Sequence[Block]) -> List[Tuple[Block, Block]]:
    """The pairs of neighbouring blocks (0-1, 2-3, ...) as (off, on), whichever came first."""
    out = []
    for a, b in zip(blocks[0::2], blocks[1::2]):
        off, on = (a, b) if b.on else (b, a)
        if off.on or not on.on:
            raise ValueError("a pair must hold one block of each state")
        out.append((off, on))
    return out


def paired_losses(blocks: Sequence[Block], progress: Sequence[Tuple[float, float]]) -> List[float]:
    """Per pair of neighbouring blocks (0-1, 2-3, ...), the loss in % of the block without the arm."""
    out = []
    for off, on in block_pairs(blocks):
        t_off, t_on = block_tps(off, progress), block_tps(on, progress)
        if t_off and t_on is not None:
            out.append(100.0 * (t_off - t_on) / t_off)
    return out


class RecorderSwitch:
    """``zfsmon record`` (every source, 1 s) running throughout in its own process group, stopped (SIGSTOP) while
    the arm is off: a stopped recorder and its ``zpool iostat`` child use no CPU and read no kstats. Continued, the
    recorder first takes the ticks it missed, at once (its schedule is fixed): with ``--guard 0`` the "on" blocks
    hold all of the run's ticks, twice the rate of steady recording; a guard second leaves that burst out."""

    def __init__(self, pool: str, out: str, sources: Sequence[str] = ()) -> None:
        self.proc = start_recorder(pool, out, own_group=True, sources=sources)
        self.pid = self.proc.pid

    def set(self, on: bool) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"zfsmon record ended: {self.proc.stderr.read()[-300:]}")
        os.killpg(self.pid, signal.SIGCONT if on else signal.SIGSTOP)

    def poll(self) -> None:
        pass

    def cpu(self) -> float:
        return tree_cpu(self.pid)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGCONT)
        stop_recorder(self.proc)


class TracerSwitch:
    """``TraceCollector(SCRIPT)`` attached while the arm is on and detached while it is off (a stopped tracer's
    probes would still fire in the kernel): its start-up and teardown fall between the measured blocks."""

    def __init__(self, script: str, pool: str) -> None:
        self.script, self.pool = script, pool
        self.coll: Optional[TraceCollector] = None
        self.spent = 0.0  # CPU of the tracers stopped so far (their own and their probes')
        self.base = 0.0

    def set(self, on: bool) -> None:
        if on and self.coll is None:
            self.coll = start_tracer(self.script, self.pool, 60)
            self.base = self._own()
        elif not on and self.coll is not None:
            self.spent += self._own() - self.base
            self.coll.stop()
            self.coll = None

    def _own(self) -> float:
        c = bpfstats.probe_counters(bpfstats.tracer_pid(self.coll, self.script))
        return c.cpu + c.run_ns / 1e9

    def poll(self) -> None:
        if self.coll is not None:
            self.coll.poll()

    def cpu(self) -> float:
        return self.spent + (self._own() - self.base if self.coll is not None else 0.0)

    def close(self) -> None:
        self.set(False)


def switched_run(cluster: PgCluster, db: str, args: argparse.Namespace, arm) -> Tuple[List[Block], List[Tuple[float, float]], List[float]]:
    """One pgbench run of ``--minutes`` with per-second progress, the arm switched every ``--switch`` seconds in
    ABBA order; the first ``--guard`` seconds after each switch are not measured. Returns the blocks, the
    progress reports (epoch, tps) and the arm's CPU in % of one core per "on" block."""
    total = int(args.minutes * 60)
    argv = pgbench_argv(cluster, db, args.clients, total, args.select_only, ("-P", "1", "--progress-timestamp"))
    env = {**os.environ, **cluster.env(db)}
    pg = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress: List[Tuple[float, float]] = []

    def read() -> None:
        for line in pg.stderr:
            p = parse_progress(line.strip())
            if p is not None:
                progress.append((p.t, p.tps))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    blocks: List[Block] = []
    cpu_on: List[float] = []
    fuse = fuse_watch().get("zfs-fuse")  # its CPU per block: what a tracer's uprobes cost it, or kstat reads
    t_end = time.time() + total - 2
    try:
        for k in itertools.count():
            on = abba(k)
            arm.set(on)
            start = time.time() + args.guard
            end = start + args.switch
            if end > t_end or pg.poll() is not None:
                break
            while time.time() < start:
                arm.poll()
                time.sleep(0.25)
            c0 = arm.cpu() if on else 0.0
            f0 = tree_cpu(fuse) if fuse else 0.0
            while time.time() < end:
                arm.poll()
                time.sleep(0.25)
            span = time.time() - start
            if on:
                cpu_on.append(100.0 * (arm.cpu() - c0) / span)
            blocks.append(Block(on, start, end, 100.0 * (tree_cpu(fuse) - f0) / span if fuse else float("nan")))
            if len(blocks) % 20 == 0:
                print(f"{len(blocks)} blocks, {len(progress)} progress reports", file=sys.stderr, flush=True)
    finally:
        arm.set(False)
        if pg.poll() is None:
            pg.wait(timeout=total + 120)
        reader.join(timeout=10)
    if pg.returncode != 0:
        raise SystemExit(f"pgbench failed ({pg.returncode})")
    if len(blocks) % 2:
        blocks.pop()
    return blocks, progress, cpu_on


def switched_section(args: argparse.Namespace, blocks: List[Block], progress: List[Tuple[float, float]],
                     cpu_on: List[float]) -> str:
    losses = paired_losses(blocks, progress)
    med = statistics.median(losses)
    lo, hi = bootstrap_median(losses, args.resamples)
    off = [block_tps(b, progress) for b in blocks if not b.on]
    on = [block_tps(b, progress) for b in blocks if b.on]
    kind = "select-only (-S)" if args.select_only else "TPC-B-like"
    opts = _options(args) + f" --pool {args.pool} --port {args.port}" * (not args.existing)
    cmd = f"--arm trace --script {args.script}" if args.arm == "trace" else "--arm record"
    what = (f"`{args.script}` attached (TraceCollector, polled every 0.25 s) and detached" if args.arm == "trace"
            else f"`zfsmon record --pool POOL --interval 1` ({recorded(args)}) running and stopped (SIGSTOP)")
    ncpu = os.cpu_count() or 1
    return f"""`python3 bench/bench_overhead.py {cmd} --minutes {args.minutes} --switch {args.switch} --guard {args.guard}{opts}`
({platform.node()}, {ncpu} CPUs): one pgbench {kind} run of {args.minutes} min (scale {args.scale}, {args.clients}
clients, shared_buffers {args.shared_buffers}{", prewarmed" if args.prewarm else ""}), with {what} in turn, in
blocks of {args.switch} s measured after {args.guard} s of settling, ABBA.

- Blocks: {len(blocks)} ({len(losses)} pairs of neighbours); median TPS without {statistics.median(off):.1f}, with
  {statistics.median(on):.1f} (block means of pgbench's per-second reports).
- **Median paired loss {med:+.2f} %, 95 % bootstrap interval [{lo:+.2f}, {hi:+.2f}] %** ({args.resamples}
  resamples of the pairs). Quartiles of the pairs' losses: {_percentile(sorted(losses), 25):+.2f},
  {_percentile(sorted(losses), 75):+.2f} %.
- The arm's own CPU while on: median {statistics.median(cpu_on):.2f} % of one core
  ({statistics.median(cpu_on) / ncpu:.2f} % of the machine), range {min(cpu_on):.2f}-{max(cpu_on):.2f}.
{fuse_line(blocks)}- Load average at the end: {os.getloadavg()[0]:.1f}.
"""


def fuse_line(blocks: Sequence[Block]) -> str:
    """The zfs-fuse daemon's CPU in the blocks with and without the arm, and the median of the pairs' difference
    (a tracer's uprobes trap in its threads; the recorder's kstat reads are served by it), or "" if not measured."""
    pairs = [(off, on) for off, on in block_pairs(blocks)
             if not math.isnan(off.fuse_pct) and not math.isnan(on.fuse_pct)]
    if not pairs:
        return ""
    diff = statistics.median(on.fuse_pct - off.fuse_pct for off, on in pairs)
    return (f"- zfs-fuse's CPU (its process tree), % of one core: median {statistics.median(off.fuse_pct for off, _ in pairs):.2f} "
            f"without, {statistics.median(on.fuse_pct for _, on in pairs):.2f} with; median of the pairs' difference "
            f"{diff:+.2f}.\n")


def bootstrap_median(diffs: List[float], resamples: int, seed: int = 15) -> Tuple[float, float]:
    """95 % percentile-bootstrap interval of the median of ``diffs`` (rounds resampled with replacement). Plain
    Python, so that the bench runs where numpy is not installed (the OpenZFS guest's image)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return _percentile(meds, 2.5), _percentile(meds, 97.5)


def _percentile(xs: List[float], q: float) -> float:
    """numpy's default (linear) percentile of sorted ``xs``."""
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def cost_table(costs: List[Dict[str, float]]) -> str:
    """The tracer's own cost per traced run, measured directly (not through TPS), and the median."""
    cols = (("traced I/Os per s", lambda c: c["traced_ops"] / c["wall"], 0), ("probe runs per s", "runs_per_s", 0),
            ("ns per probe run", "ns_per_run", 0), ("probes' CPU, % of a core", "probes_pct", 2),
            ("the tracer process's CPU, % of a core", "tracer_pct", 2))
    cells = []
    for _name, key, d in cols:
        vals = [key(c) if callable(key) else c[key] for c in costs]
        cells.append(", ".join(f"{v:.{d}f}" for v in vals) + f" (median {statistics.median(vals):.{d}f})")
    return ("| " + " | ".join(n for n, _k, _d in cols) + " |\n|" + "---|" * len(cols) + "\n| " + " | ".join(cells)
            + " |\n")


def recorder_table(costs: List[Dict[str, float]], fuse_off: List[float]) -> str:
    """The recorder's own CPU per recorded run, measured directly, and zfs-fuse's in the paired runs."""
    ncpu = os.cpu_count() or 1
    rec = [c["recorder_pct"] for c in costs]
    on = [c.get("zfs-fuse_pct", float("nan")) for c in costs]
    rows = [("`zfsmon record` and its children, % of one core", rec),
            ("the same, % of the machine's CPU", [v / ncpu for v in rec]),
            ("zfs-fuse, % of one core: runs without", fuse_off),
            ("zfs-fuse, % of one core: runs with", on),
            ("zfs-fuse: with minus without, per round", [b - a for a, b in zip(fuse_off, on)])]
    return "| per run | each run | median |\n|---|---|---|\n" + "".join(
        f"| {name} | {', '.join(f'{v:.2f}' for v in vals)} | {statistics.median(vals) if vals else float('nan'):.2f} |\n"
        for name, vals in rows)


def recorded(args: argparse.Namespace) -> str:
    """What the recorder reads, in words: every source, or the ones named."""
    return "only " + ", ".join(args.sources) if args.sources else "every source"


def _options(args: argparse.Namespace) -> str:
    """The workload's options as the command line gave them, for a section's command."""
    opts = "".join(f" --{k.replace('_', '-')} {getattr(args, k)}" for k in ("scale", "clients", "shared_buffers"))
    opts += " --select-only" * args.select_only + " --prewarm" * args.prewarm
    if args.arm == "record" and args.sources:
        opts += " --sources " + " ".join(args.sources)
    if args.existing:
        opts += f" --existing --pool {args.pool}" + (f" --dataset {args.dataset}" if args.dataset else "")
    return opts


def section(args: argparse.Namespace, tps: Dict[str, List[float]], extra: List[float], done: int,
            costs: Optional[List[Dict[str, float]]] = None, fuse_off: Optional[List[float]] = None) -> str:
    off, on = statistics.median(tps["off"]), statistics.median(tps["on"])
    # each round's two runs are neighbours in time: their difference is the drift-free estimate
    paired = [100.0 * (a - b) / a for a, b in zip(tps["off"], tps["on"]) if a]
    med = statistics.median(paired)
    lo, hi = bootstrap_median(paired, args.resamples) if len(paired) > 1 else (float("nan"), float("nan"))
    kind = "select-only (-S)" if args.select_only else "TPC-B-like"
    opts = _options(args)
    if args.arm == "trace":
        title, what = "Tracing", f"`TraceCollector(\"{args.script}\", 1)` polled every 0.5 s"
        label = f"with `{args.script}`"
        cmd = f"--arm trace --script {args.script}"
        seen = (f"The tracer handled a median {statistics.median(extra):.0f} vdev ops per run "
                f"({statistics.median(extra) / args.seconds:.0f} events/s)." if extra else "")
    else:
        title, what = "Recording's cost on the workload", f"`zfsmon record --pool POOL --interval 1` ({recorded(args)})"
        label = "with `zfsmon record`"
        cmd = "--arm record"
        seen = (f"The recording grew by a median {statistics.median(extra) / 1024:.0f} KiB per run." if extra else "")
    return f"""## {title}

`python3 bench/bench_overhead.py {cmd} --rounds {args.rounds} --seconds {args.seconds}{opts}`
({platform.node()}, {os.cpu_count()} CPUs; {done} of {args.rounds} rounds completed): pgbench {kind},
scale {args.scale}, {args.clients} clients, {args.seconds} s per run, shared_buffers {args.shared_buffers}
{"(prewarmed)" if args.prewarm else ""}, on {"pool " + args.pool if args.existing else "the zfs-fuse lab"}, runs interleaved ABBA without and with {what}.

| arm | runs (tps) | median tps |
|---|---|---|
| without | {", ".join(f"{x:.0f}" for x in tps["off"])} | {off:.1f} |
| {label} | {", ".join(f"{x:.0f}" for x in tps["on"])} | {on:.1f} |

Per round (paired runs, loss in % of the run without): {", ".join(f"{x:+.1f}" for x in paired)}.
Median paired loss {med:+.2f} %, 95 % bootstrap interval [{lo:+.2f}, {hi:+.2f}] % ({args.resamples} resamples
of the {len(paired)} rounds, percentile bootstrap). {seen} Load average at the end:
{os.getloadavg()[0]:.1f}.
""" + (f"""
The recorder's own cost in each recorded run, measured directly (the CPU of `zfsmon record`'s process tree over
the pgbench run, from /proc), and the zfs-fuse daemon's in both arms (it serves the recorder's kstat reads through
FUSE besides the workload's I/O):

{recorder_table(costs, fuse_off or [])}""" if costs and args.arm == "record" else "") + (f"""
The tracer's own cost in each traced run, measured directly (the kernel's run count and run time of its BPF
programs with `kernel.bpf_stats_enabled`, which adds its own timing to each run; its process's CPU from
/proc), per traced run:

{cost_table(costs)}""" if costs and args.arm == "trace" else "")


def _terminate(signum, frame):  # SIGTERM: leave through the finally blocks (cluster and lab torn down)
    raise KeyboardInterrupt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arm", choices=("trace", "record"), default="trace",
                    help="what the 'on' runs add: a trace script, or zfsmon record (every source, 1 s)")
    ap.add_argument("--pool", default="ztbench", help="lab pool (built if absent)")
    ap.add_argument("--keep", action="store_true", help="leave the lab and the cluster in place")
    ap.add_argument("--existing", action="store_true",
                    help="POOL is a real pool (not a lab): run on it as it is (the OpenZFS guest's zguest)")
    ap.add_argument("--dataset", help="with --existing: the dataset PostgreSQL's cluster goes in (default: POOL's "
                                      "root; the guest's zguest/db has recordsize 8k)")
    ap.add_argument("--script", default="vdevlat", help="trace script for --arm trace (default vdevlat)")
    ap.add_argument("--sources", nargs="+", default=[], metavar="SOURCE",
                    help="with --arm record: record only these sources (zfsmon record's SOURCES; default every one), "
                         "to tell which of them the cost is")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="ABBA rounds (each: one run per arm)")
    ap.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    ap.add_argument("--select-only", action="store_true", help="pgbench -S (reads) instead of TPC-B-like")
    ap.add_argument("--shared-buffers", default="16MB",
                    help="PostgreSQL's shared_buffers (default 16MB: most reads go to ZFS; one larger than the "
                         "scale's tables, with --prewarm, makes a select-only run CPU-bound)")
    ap.add_argument("--prewarm", action="store_true",
                    help="load pgbench's tables and indexes into shared_buffers (pg_prewarm) before the rounds")
    ap.add_argument("--port", type=int, default=5497)
    ap.add_argument("--out", help="write the markdown section here after every round")
    ap.add_argument("--switch", type=int, metavar="SECONDS",
                    help="instead of rounds of separate runs: one pgbench run of --minutes, the arm switched on and "
                         "off every SECONDS (ABBA), neighbouring blocks paired")
    ap.add_argument("--minutes", type=float, default=30.0, help="with --switch: the run's length (default 30)")
    ap.add_argument("--guard", type=int, default=2,
                    help="with --switch: seconds after each switch left out of the blocks (default 2)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _terminate)

    if args.existing:  # a real pool (the OpenZFS guest's): used as it is, nothing built or torn down
        existed = True
        datadir = Path(pool_mountpoint(args.dataset or args.pool)) / "pg-overhead-bench"
    else:
        existed = labmod.info(args.pool) is not None
        info = labmod.up(LabConfig(pool=args.pool), log=lambda *_: None)
        datadir = Path(info.mountpoint) / "pg-overhead-bench"
    cluster = PgCluster(datadir=datadir, port=args.port, shared_buffers=args.shared_buffers)
    tps: Dict[str, List[float]] = {"off": [], "on": []}
    extra: List[float] = []
    costs: List[Dict[str, float]] = []
    fuse_off: List[float] = []  # zfs-fuse's CPU in the runs without the recorder
    recording = f"/var/tmp/{args.pool}-overhead.zfsmon"
    stats = contextlib.ExitStack()
    if args.arm == "trace":  # the BPF programs' run time is counted only while this is on: put back after
        stats.enter_context(bpfstats.stats_enabled())
    text: Optional[str] = None
    try:
        if not cluster.is_initialized():
            cluster.init()
        if not cluster.is_running():  # a --keep run left it up
            cluster.start()
        cluster.createdb("bench")
        held = cluster.query("SHOW shared_buffers", "bench").stdout.strip()
        if held and held != args.shared_buffers:  # set at initdb: a cluster a --keep run left keeps its own
            print(f"the cluster's shared_buffers is {held} (set when it was made), not {args.shared_buffers}",
                  file=sys.stderr)
            args.shared_buffers = held
        env = {**os.environ, **cluster.env("bench")}
        subprocess.run([cluster.pgbench(), "-i", "-q", "-s", str(args.scale), "bench"], env=env, check=True,
                       capture_output=True, timeout=1800)
        if args.prewarm:
            prewarm(cluster, "bench")
        run_pgbench(cluster, "bench", args.clients, min(10, args.seconds), args.select_only)  # warm-up
        if args.switch:
            arm = (TracerSwitch(args.script, args.pool) if args.arm == "trace"
                   else RecorderSwitch(args.pool, recording, args.sources))
            try:
                blocks, progress, cpu_on = switched_run(cluster, "bench", args, arm)
            finally:
                arm.close()
            text = switched_section(args, blocks, progress, cpu_on)
            if args.out:
                Path(args.out).write_text(text)
        for i in range(0 if args.switch else args.rounds):
            for arm in (("off", "on") if i % 2 == 0 else ("on", "off")):
                if arm == "off":
                    r = watched_run(cluster, "bench", args, fuse_watch())
                    tps["off"].append(r["tps"])
                    fuse_off.append(r.get("zfs-fuse_pct", float("nan")))
                elif args.arm == "trace":
                    r = traced_run(args.script, cluster, "bench", args, args.pool)
                    tps["on"].append(r["tps"])
                    extra.append(r["traced_ops"])
                    costs.append(r)
                else:
                    if os.path.exists(recording):
                        os.unlink(recording)
                    r = recorded_run(cluster, "bench", args, args.pool, recording)
                    tps["on"].append(r["tps"])
                    extra.append(r["bytes"])
                    costs.append(r)
                print(f"round {i + 1} {arm}: {tps[arm][-1]:.1f} tps", file=sys.stderr, flush=True)
            text = section(args, tps, extra, i + 1, costs, fuse_off)
            if args.out:
                Path(args.out).write_text(text)
    except KeyboardInterrupt:
        print("stopped: the rounds completed so far are reported", file=sys.stderr)
    finally:
        stats.close()
        if not args.keep:
            cluster.stop()
            if not existed:
                labmod.down(args.pool, log=lambda *_: None)
        if os.path.exists(recording):
            os.unlink(recording)
    if text:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
