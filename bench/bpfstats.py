"""What a tracer costs, read from the kernel: the run count and run time of the BPF programs a process holds.

The kernel counts a program's runs and their time only while ``kernel.bpf_stats_enabled`` is 1 (the counting adds
its own timing to each run, so the figures are an upper bound of the programs' cost); :func:`stats_enabled`
turns it on for a measurement and puts the old value back. Shared by bench_overhead (the lab, beside pgbench) and
bench_trace_cost (any host with a trace script: the OpenZFS guest's).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_collect import proc_cpu  # noqa: E402

BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"


class ProbeCounters(NamedTuple):
    runs: int  # runs of the process's BPF programs, all of them
    run_ns: int  # their time in the kernel
    cpu: float  # the process's own CPU seconds (user + system)


def tracer_pid(collector, what: str) -> int:
    """The pid of a started trace collector's tracer (bpftrace, or bcc's python), which holds its BPF programs."""
    proc = collector._proc
    if proc is None:
        raise SystemExit(f"{what}: the tracer is not running")
    return proc.pid


def probe_counters(pid: int) -> ProbeCounters:
    """Summed over the BPF programs process ``pid`` holds (``/proc/PID/fdinfo``), and its CPU from /proc."""
    runs = ns = 0
    fds = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fds):
        try:
            with open(os.path.join(fds, fd)) as fh:
                info = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:  # closed meanwhile
            continue
        if "prog_type" in info:
            runs += int(info.get("run_cnt", "0"))
            ns += int(info.get("run_time_ns", "0"))
    return ProbeCounters(runs, ns, proc_cpu(f"/proc/{pid}/stat"))


@contextlib.contextmanager
def stats_enabled() -> Iterator[None]:
    """``kernel.bpf_stats_enabled`` on for the block, then as it was."""
    with open(BPF_STATS) as fh:
        was = fh.read().strip()
    with open(BPF_STATS, "w") as fh:
        fh.write("1")
    try:
        yield
    finally:
        with open(BPF_STATS, "w") as fh:
            fh.write(was)


def cost(before: ProbeCounters, after: ProbeCounters, wall: float) -> dict:
    """Per second of ``wall``: probe runs, ns per run, the probes' and the process's CPU in % of one core."""
    runs = after.runs - before.runs
    ns = after.run_ns - before.run_ns
    return {"runs_per_s": runs / wall, "ns_per_run": ns / runs if runs else 0.0,
            "probes_pct": 100.0 * ns / 1e9 / wall, "tracer_pct": 100.0 * (after.cpu - before.cpu) / wall}
