"""Collection cost: CPU of sampling everything once per second, against running `zpool iostat -v 1` alone.

Two parts:

* replay: a large pool (8 raidz2 vdevs x 8 leaves = 64 leaves, plus log and cache) as `zpool iostat -v 1`
  prints it, plus Linux arcstats text, for --replay-hours of 1 s reports, fed through zfsmon's
  incremental parsers. The text is generated first (bench_store's Synthetic), only parsing is timed.
* lab (root, zfs-fuse): a lab pool under a write/read workload (a separate process), sampled by every
  collector the host offers (`zpool iostat -v -T u 1` child + `zpool status` on changes, arcstats,
  diskstats) for --seconds, against `zpool iostat -v POOL 1` alone for as long. CPU is user+system of
  this process (collectors, parsers, sampler, rate derivation) plus its children, per hour.
* breakdown (--breakdown, with the lab or --pool): then each source alone on the same pool for --seconds, a
  sampler of no source (its own ticking), and no sampler at all (the daemon's own idle CPU), so that what each
  source costs the zfs-fuse daemon is its CPU with that source less its CPU with none; and, where bpftrace runs, the FUSE requests every source together
  sends a tick, by opcode (the ``fuse:fuse_request_send`` tracepoint, this process's threads only), in a
  stretch of its own (bpftrace's probes would weigh on the CPU figures).

    python3 bench/bench_collect.py --seconds 300 --replay-hours 1
    python3 bench/bench_collect.py --seconds 60 --replay-hours 0.01 --no-workload --breakdown

Prints a markdown section for docs/performance.md.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

import psutil

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_store import Synthetic  # noqa: E402
from zfsmon.sources.kstat.arcstats import parse_linux  # noqa: E402
from zfsmon.sources.kstat.text import StatDir  # noqa: E402
from zfsmon.sources.zpool.iostat import ZpoolIostatParser  # noqa: E402


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def switches_self() -> int:
    """Context switches of this process so far, the threads that ended included (a sampler's read workers end
    with it)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw + r.ru_nivcsw


def replay(hours: float) -> dict:
    syn = Synthetic()
    n = int(hours * 3600)
    iostat, kst = [], []
    for i in range(n):
        _, text, k = syn.tick(i)
        iostat.append(text)
        kst.append(k.split("\n26 1 0x01")[0])  # arcstats part only
    lines = "".join(iostat).splitlines()
    parser = ZpoolIostatParser("bench", 1.0)
    t0 = time.process_time()
    samples = 0
    for i, line in enumerate(lines):
        samples += len(parser.feed(line, float(i)))
    samples += len(parser.flush(float(len(lines))))
    t_iostat = time.process_time() - t0
    t0 = time.process_time()
    for i, k in enumerate(kst):
        parse_linux(k, float(i))
    t_arc = time.process_time() - t0
    return {"reports": n, "lines": len(lines), "samples": samples, "iostat_cpu_h": t_iostat / hours,
            "arc_cpu_h": t_arc / hours}


WORKLOAD = """
import os, sys, time, random
path = sys.argv[1]
end = time.time() + float(sys.argv[2])
blk = os.urandom(1 << 20)
while time.time() < end:
    with open(path, "wb") as f:
        for _ in range(16):
            f.write(blk)
        f.flush(); os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    for _ in range(200):
        os.pread(fd, 8192, random.randrange(2048) * 8192)
    os.close(fd)
    time.sleep(0.2)
"""


TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(path: str) -> float:
    """user+system seconds of a process or thread from its /proc stat file (0 when it is gone)."""
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def tree_procs(pid: int) -> List[psutil.Process]:
    """Process ``pid`` and its descendants (none when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root] + root.children(recursive=True)
    except psutil.Error:
        return []


def tree_times(pid: int) -> Tuple[float, float]:
    """(user, system) seconds of process ``pid`` and its descendants: the living ones' own, and what each has of
    the children it reaped (a ``zpool status`` run that ended is in its parent's). (0, 0) when it is gone."""
    user = system = 0.0
    for p in tree_procs(pid):
        try:
            t = p.cpu_times()
        except psutil.Error:  # ended meanwhile: its parent has it once reaped
            continue
        user += t.user + t.children_user
        system += t.system + t.children_system
    return user, system


def tree_cpu(pid: int) -> float:
    """user+system seconds of process ``pid`` and its descendants (:func:`tree_times`); 0 when it is gone."""
    return sum(tree_times(pid))


def switches(pid: int) -> int:
    """Context switches (voluntary and not) of every thread of process ``pid`` so far: how often it was woken or
    preempted (/proc/PID/status counts the main thread only). 0 when it is gone."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                total += sum(int(line.split(":")[1]) for line in f if "ctxt_switches" in line)
        except OSError:  # the thread ended meanwhile
            continue
    return total


def machine_busy() -> float:
    """Seconds of CPU the whole machine has spent busy (every process, kernel threads and interrupts: /proc/stat's
    first line less idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


class Stretch:
    """Over a stretch of time: its length, the whole machine's busy CPU, and the zfs-fuse daemon's CPU and context
    switches (on the lab it serves every kstat read, 53 arcstats files a tick, each a few FUSE round trips: work
    done for the collector or the recorder in another process)."""

    def __init__(self, fuse: Optional[int]) -> None:
        self.fuse = fuse
        self.seconds = self.machine = self.cpu = self.switches = 0.0

    def __enter__(self) -> Stretch:
        self._t0, self._m0 = time.monotonic(), machine_busy()
        if self.fuse is not None:
            self._c0, self._s0 = proc_cpu(f"/proc/{self.fuse}/stat"), switches(self.fuse)
        return self

    def __exit__(self, *exc) -> None:
        self.seconds, self.machine = time.monotonic() - self._t0, machine_busy() - self._m0
        if self.fuse is not None:
            self.cpu = proc_cpu(f"/proc/{self.fuse}/stat") - self._c0
            self.switches = switches(self.fuse) - self._s0


def pool_mountpoint(pool: str) -> str:
    """Where pool (or dataset) ``pool`` is mounted; one line and an exit if it is not."""
    res = subprocess.run(["zfs", "get", "-H", "-o", "value", "mountpoint", pool], capture_output=True, text=True,
                         timeout=60)
    where = res.stdout.strip()
    if res.returncode != 0 or not where.startswith("/"):
        why = "; ".join(line for line in res.stderr.splitlines() if line.strip()) or where
        raise SystemExit(f"{pool}: no mounted pool ({why})")
    return where


def thread_cpu() -> Tuple[float, float]:
    """(user, system) seconds of the calling thread so far."""
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime, r.ru_stime


class PerSource:
    """Where a sampler's CPU goes, per collector: its ``poll`` (on its read worker or in the sampler's thread), its
    reader thread (a persistent child's parser), its child process, and the sampler's rate derivation. A zfs-fuse
    kstat folder's poll is split further: the read of its files (:class:`StatDir`, user and system CPU apart: the
    system part is the syscalls and the FUSE requests they send) and the rest, parsing the text into samples."""

    def __init__(self, sampler) -> None:
        self.cpu: dict = {}
        for c in sampler.collectors:
            c.poll = self._timed(c.poll, (c.name, "poll"))
            c.stop = self._before_stop(c, c.stop)
            folder = getattr(c, "_dir", None)
            if isinstance(folder, StatDir):
                folder.read = self._split(folder.read, c.name)
        sampler.deriver.update = self._timed(sampler.deriver.update, ("sampler", "derive"))

    def _split(self, fn, name: str):
        def wrapper(*a, **kw):
            u0, s0 = thread_cpu()
            try:
                return fn(*a, **kw)
            finally:
                u1, s1 = thread_cpu()
                self._add((name, "read: user"), u1 - u0)
                self._add((name, "read: system"), s1 - s0)
        return wrapper

    def parts(self) -> dict:
        """``cpu`` with each split poll's read taken out of it: the rest is that poll's ``parse``."""
        out = dict(self.cpu)
        for (name, part) in list(self.cpu):
            if part == "read: user":
                read = self.cpu[(name, "read: user")] + self.cpu.get((name, "read: system"), 0.0)
                out[(name, "parse")] = max(0.0, out.pop((name, "poll"), 0.0) - read)
        return out

    def _add(self, key, v: float) -> None:
        self.cpu[key] = self.cpu.get(key, 0.0) + v

    def _timed(self, fn, key):
        def wrapper(*a, **kw):
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                self._add(key, time.thread_time() - t0)
        return wrapper

    def _before_stop(self, c, stop):
        """Read the collector's reader thread and child CPU just before it stops them (reaped, they are gone)."""
        def wrapper():
            for t in threading.enumerate():
                if t.name == f"zfsmon-{c.name}" and t.native_id:
                    self._add((c.name, "thread"), proc_cpu(f"/proc/self/task/{t.native_id}/stat"))
            proc = getattr(c, "_proc", None)
            if proc is not None and proc.poll() is None:
                self._add((c.name, "child"), proc_cpu(f"/proc/{proc.pid}/stat"))
            return stop()
        return wrapper


def measure(pool: str, mountpoint: str, seconds: float, profile: Optional[str] = None,
            workload: bool = True) -> dict:
    """Every collector this host offers for ``pool`` for ``seconds``, then `zpool iostat -v POOL 1` alone for
    as long, the WORKLOAD writing and reading a file under ``mountpoint`` throughout (unless ``workload`` is
    false: an idle pool, where what the zfs-fuse daemon does is all for the collector). ``profile``: cProfile the
    sampler's thread into that file (the CPU figures then include the profiler's own cost)."""
    from zfsmon import host
    from zfsmon.engine import Sampler
    from zfsmon.sources.registry import build_collectors

    wl = subprocess.Popen([sys.executable, "-c", WORKLOAD, os.path.join(mountpoint, "bench-collect.bin"),
                           str(2 * seconds + 30)]) if workload else None
    fuse = host.zfs_fuse_pid()
    try:
        collectors, _ = build_collectors(host.probe(), 1.0, [pool])
        got = [0]
        s = Sampler(collectors, 1.0, sinks=[lambda recs: got.__setitem__(0, got[0] + len(recs))])
        per = PerSource(s)
        c_self, c_kids, z_sw = cpu_self(), cpu_children(), switches_self()
        with Stretch(fuse) as d_on:
            if profile:
                cProfile.runctx("s.run(duration=seconds)", globals(), {"s": s, "seconds": seconds}, profile)
            else:
                s.run(duration=seconds)
        z_self, z_kids, z_sw = cpu_self() - c_self, cpu_children() - c_kids, switches_self() - z_sw
        # the baseline: zpool iostat -v alone
        b_kids = cpu_children()
        with Stretch(fuse) as d_off:
            p = subprocess.Popen(["zpool", "iostat", "-v", pool, "1"], stdout=subprocess.DEVNULL)
            time.sleep(seconds)
            p.terminate()
            p.wait()
        base = cpu_children() - b_kids
    finally:
        if wl is not None:
            wl.kill()
            wl.wait()
    per_h = 3600.0 / seconds
    out = {"seconds": seconds, "records": got[0], "names": [c.name for c in collectors],
           "zfsmon_self_h": z_self * per_h, "zfsmon_children_h": z_kids * per_h, "baseline_h": base * per_h,
           "per_source_h": {k: v * per_h for k, v in sorted(per.parts().items())},
           "zfsmon_switches_s": z_sw / seconds, "workload": workload,
           "machine_on_h": d_on.machine * per_h, "machine_off_h": d_off.machine * per_h}
    if fuse is not None:
        out.update(fuse_on_h=d_on.cpu * per_h, fuse_off_h=d_off.cpu * per_h, fuse_on_switches_s=d_on.switches / seconds,
                   fuse_off_switches_s=d_off.switches / seconds)
    return out


def alone(pool: str, names: Optional[Sequence[str]], seconds: float, fuse: Optional[int]) -> dict:
    """One stretch of ``seconds``: a sampler of the sources ``names`` alone (empty: a sampler ticking with no
    source, its own cost; None: no sampler, what the zfs-fuse daemon spends on its own), per hour: this process's
    CPU and its children's, the daemon's CPU, and context switches a second of this process and of the daemon."""
    from zfsmon import host
    from zfsmon.engine import Sampler
    from zfsmon.sources.registry import build_collectors

    s = None if names is None else Sampler(build_collectors(host.probe(), 1.0, [pool], names)[0] if names else [],
                                           1.0)
    c_self, c_kids, sw = cpu_self(), cpu_children(), switches_self()
    with Stretch(fuse) as d:
        if s is not None:
            s.run(duration=seconds)
        else:
            time.sleep(seconds)
    per_h = 3600.0 / d.seconds
    return {"self_h": (cpu_self() - c_self) * per_h, "children_h": (cpu_children() - c_kids) * per_h,
            "fuse_h": d.cpu * per_h, "fuse_switches_s": d.switches / d.seconds,
            "self_switches_s": (switches_self() - sw) / d.seconds}


#: FUSE opcodes (linux/fuse.h) a kstat reader sends, by number
FUSE_OPS = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 14: "OPEN", 15: "READ", 18: "RELEASE", 25: "FLUSH",
            27: "OPENDIR", 28: "READDIR", 29: "RELEASEDIR", 42: "BATCH_FORGET", 44: "READDIRPLUS", 52: "STATX"}

#: counts the FUSE requests the threads of process $1 send, by opcode, until interrupted
FUSE_COUNT = """BEGIN { printf("ready\\n"); }
tracepoint:fuse:fuse_request_send /pid == $1/ { @requests[args->opcode] = count(); }
"""


def fuse_op_counts(text: str) -> Dict[str, int]:
    """bpftrace's printed ``@requests[OPCODE]: N`` lines -> {opcode name: N}; other lines are ignored."""
    out: Dict[str, int] = {}
    for m in re.finditer(r"^@requests\[(\d+)\]: (\d+)$", text, re.M):
        op = int(m.group(1))
        name = FUSE_OPS.get(op, f"opcode {op}")
        out[name] = out.get(name, 0) + int(m.group(2))
    return out


def fuse_requests(pool: str, seconds: float) -> Optional[dict]:
    """The FUSE requests a tick of every source sends, by opcode: bpftrace attached to a sampler already running
    (its start, the first listing of a kstat folder, left out) for about ``seconds``; None (and a line on stderr)
    where bpftrace cannot attach."""
    from zfsmon import host
    from zfsmon.engine import Sampler
    from zfsmon.sources.registry import build_collectors

    if not shutil.which("bpftrace"):
        print("bench_collect: no bpftrace, FUSE requests not counted", file=sys.stderr)
        return None
    s = Sampler(build_collectors(host.probe(), 1.0, [pool])[0], 1.0)
    done = threading.Event()
    runs = threading.Thread(target=s.run, kwargs={"stop_event": done}, name="bench-sampler")
    runs.start()
    try:
        while s.ticks < 3:  # past the start and the first listing
            time.sleep(0.1)
        bt = subprocess.Popen(["bpftrace", "-q", "-B", "line", "-e", FUSE_COUNT, str(os.getpid())],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert bt.stdout is not None
        if bt.stdout.readline().strip() != "ready":  # it prints that once its probes are attached
            bt.kill()
            why = bt.communicate()[1].strip().splitlines()
            print(f"bench_collect: bpftrace did not attach ({why[-1] if why else 'no reason given'}), FUSE requests "
                  "not counted", file=sys.stderr)
            return None
        t0 = s.ticks
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.2)
        bt.send_signal(signal.SIGINT)
        ticks = s.ticks - t0
        out, _ = bt.communicate(timeout=60)
    finally:
        done.set()
        runs.join()
    ops = fuse_op_counts(out)
    return {"ticks": ticks, "ops": ops, "per_tick": {k: v / ticks for k, v in ops.items()} if ticks else {}}


def breakdown(pool: str, seconds: float, names: Sequence[str]) -> dict:
    """Each source of ``names`` alone for ``seconds``, then a sampler of none, then no sampler (the daemon
    idle), then the FUSE requests a tick of them all."""
    from zfsmon import host

    fuse = host.zfs_fuse_pid()
    out: dict = {"alone": {n: alone(pool, [n], seconds, fuse) for n in names}}
    out["sampler"] = alone(pool, [], seconds, fuse)
    out["idle"] = alone(pool, None, seconds, fuse)
    out["requests"] = fuse_requests(pool, min(seconds, 20.0)) if fuse is not None else None
    return out


def lab(seconds: float, profile: Optional[str] = None, workload: bool = True, split: bool = False) -> dict:
    from zfsmon import lab as labmod
    from zfsmon.lab.config import LabConfig

    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        cfg = LabConfig(pool=f"zbench{os.getpid()}", directory=d, data_mb=256, log_mb=128, cache_mb=256)
        info = labmod.up(cfg, log=lambda *_: None)
        try:
            got = measure(cfg.pool, info.mountpoint, seconds, profile, workload)
            if split:
                got["breakdown"] = breakdown(cfg.pool, seconds, got["names"])
            return got
        finally:
            labmod.down(cfg.pool, log=lambda *_: None)


def print_breakdown(lb: dict, where: str) -> None:
    """The breakdown's tables: each source's CPU together and alone, the daemon's share, the FUSE requests."""
    bd = lb["breakdown"]
    idle = bd["idle"]
    per = lb["per_source_h"]
    inproc = sum(v for (_, part), v in per.items() if part != "child")
    print(f"\nBy source, {where} (CPU per hour; together: the per-source parts of the run above; alone: each source "
          f"by itself for {lb['seconds']:g} s (a sampler's own cost included: its row), then none; the daemon's "
          f"figure less its {idle['fuse_h']:.1f} s an hour, {idle['fuse_switches_s']:.0f} switches a second, with no source):\n")
    print("| source | together, in this process (parts) | alone: this process + children | alone: zfs-fuse's extra "
          "| alone: context switches a second, zfsmon / zfs-fuse's extra |")
    print("|---|---|---|---|---|")
    for name in lb["names"]:
        parts = {part: v for (n, part), v in per.items() if n == name}
        mine = " + ".join(f"{part} {v:.1f}" for part, v in sorted(parts.items(), key=lambda kv: -kv[1]))
        a = bd["alone"][name]
        print(f"| {name} | {mine or '-'} s | {a['self_h']:.1f} + {a['children_h']:.1f} s | "
              f"{a['fuse_h'] - idle['fuse_h']:+.1f} s | {a['self_switches_s']:.0f} / "
              f"{a['fuse_switches_s'] - idle['fuse_switches_s']:+.0f} |")
    runs = lb["zfsmon_children_h"] - sum(v for (_, part), v in per.items() if part == "child")
    print(f"| `zpool status` runs (zfsmon's children less the persistent ones) | {runs:.1f} s | | | |")
    derive = per.get(("sampler", "derive"), 0.0)
    a = bd["sampler"]
    print(f"| sampler | derive {derive:.1f} + the rest {lb['zfsmon_self_h'] - inproc:.1f} s (ticking, read workers, "
          f"the sink) | with no source: {a['self_h']:.1f} s | {a['fuse_h'] - idle['fuse_h']:+.1f} s | "
          f"{a['self_switches_s']:.0f} / {a['fuse_switches_s'] - idle['fuse_switches_s']:+.0f} |")
    req = bd["requests"]
    if req:
        total = sum(req["per_tick"].values())
        ops = ", ".join(f"{k} {v:.1f}" for k, v in sorted(req["per_tick"].items(), key=lambda kv: -kv[1]))
        print(f"\nFUSE requests a tick, every source, this process's threads ({req['ticks']} ticks, bpftrace on "
              f"`fuse:fuse_request_send`): {total:.1f} ({ops}).")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=300.0, help="lab run length of each side (default 300)")
    ap.add_argument("--replay-hours", type=float, default=1.0, help="hours of 1 s reports to parse (default 1)")
    ap.add_argument("--no-lab", action="store_true", help="only the replay part (no root needed)")
    ap.add_argument("--pool", metavar="POOL", help="measure on this existing pool (kernel OpenZFS, e.g. in the "
                    "OpenZFS guest) instead of a zfs-fuse lab pool; the workload runs in its mountpoint")
    ap.add_argument("--profile", metavar="FILE", help="cProfile the sampler's thread into FILE (pstats)")
    ap.add_argument("--no-workload", action="store_true", help="no write/read workload on the pool: on the lab, "
                    "the zfs-fuse daemon's work is then all for the collector (its kstat reads)")
    ap.add_argument("--breakdown", action="store_true", help="then each source alone, none, and the FUSE requests "
                    "a tick (bpftrace): what each source costs this process and the zfs-fuse daemon")
    a = ap.parse_args()
    r = replay(a.replay_hours)
    print("## Collection\n")
    pool = f" --pool {a.pool}" if a.pool else ""
    idle = " --no-workload" if a.no_workload else ""
    split = " --breakdown" if a.breakdown else ""
    print(f"Command: `python3 bench/bench_collect.py --seconds {a.seconds:g} --replay-hours {a.replay_hours:g}"
          f"{pool}{idle}{split}`\n")
    print("| what | CPU per hour of 1 s samples |")
    print("|---|---|")
    print(f"| replay: parse `zpool iostat -v 1` of a 64-leaf pool ({r['reports']} reports, {r['lines']} lines, "
          f"{r['samples']} samples) | {r['iostat_cpu_h']:.1f} s |")
    print(f"| replay: parse Linux arcstats once per second | {r['arc_cpu_h']:.1f} s |")
    if a.pool:
        lb = measure(a.pool, pool_mountpoint(a.pool), a.seconds, a.profile, not a.no_workload)
        if a.breakdown:
            lb["breakdown"] = breakdown(a.pool, a.seconds, lb["names"])
    elif not a.no_lab:
        lb = lab(a.seconds, a.profile, not a.no_workload, a.breakdown)
    if a.pool or not a.no_lab:
        where = "guest" if a.pool else "lab"
        total = lb["zfsmon_self_h"] + lb["zfsmon_children_h"]
        print(f"| {where}: zfsmon, every source ({', '.join(lb['names'])}): this process | "
              f"{lb['zfsmon_self_h']:.1f} s |")
        print(f"| {where}: zfsmon's children (`zpool iostat -v -T u 1`, `zpool status`) | "
              f"{lb['zfsmon_children_h']:.1f} s |")
        print(f"| {where}: zfsmon in all | {total:.1f} s |")
        print(f"| {where}: `zpool iostat -v POOL 1` alone | {lb['baseline_h']:.1f} s |")
        if "fuse_on_h" in lb:
            print(f"| {where}: the zfs-fuse daemon while zfsmon collects / while `zpool iostat` runs alone | "
                  f"{lb['fuse_on_h']:.1f} s / {lb['fuse_off_h']:.1f} s |")
            print(f"| {where}: context switches a second: zfsmon's threads; zfs-fuse's while zfsmon collects / "
                  f"while `zpool iostat` runs alone | {lb['zfsmon_switches_s']:.0f}; {lb['fuse_on_switches_s']:.0f} / "
                  f"{lb['fuse_off_switches_s']:.0f} |")
        print(f"| {where}: the whole machine busy (every process, the kernel; /proc/stat) while zfsmon collects / "
              f"while `zpool iostat` runs alone | {lb['machine_on_h']:.1f} s / {lb['machine_off_h']:.1f} s |")
        ratio = total / lb["baseline_h"] if lb["baseline_h"] else float("inf")
        print("\nPer source (CPU per hour; `poll` in the sampler's thread, `thread` a child's reader and parser, "
              "`child` the child process; the children's rest is short-lived `zpool status` runs):\n")
        print("| source | part | CPU per hour |")
        print("|---|---|---|")
        for (name, part), v in sorted(lb["per_source_h"].items(), key=lambda kv: -kv[1]):
            print(f"| {name} | {part} | {v:.1f} s |")
        if "breakdown" in lb:
            print_breakdown(lb, where)
        print(f"\nCollecting everything costs {ratio:.2f}x the `zpool iostat` child alone "
              f"(aim: at most 1.5x).")
        if "fuse_on_h" in lb:
            both = (total + lb["fuse_on_h"]) / (lb["baseline_h"] + lb["fuse_off_h"]) \
                if lb["baseline_h"] + lb["fuse_off_h"] else float("inf")
            print(f"Counting the zfs-fuse daemon's CPU on both sides: {both:.2f}x"
                  + ("" if not lb["workload"] else " (the workload's I/O is in the daemon's CPU on both sides)") + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
