"""Issue 14's acceptance as one command: fio sweeps on the zfs-fuse lab with throttled data disks.

    sudo python3 -m bench.fio_acceptance [--slow-data 100] [--step 4] [--out DIR] [--markdown FILE]
    python3 -m bench.fio_acceptance --check DIR        # the checks again on recordings already made

It builds a lab (``zfsmon lab up --slow-data IOPS``: two mirrors of four throttled data disks, a SLOG, a
256 MiB L2ARC; the daemon's ARC is the lab's ``--arc-mb``, 64 MiB), records three fio runs with
``zfsmon soak --fio-preset ... --trace fusevdevlat`` and checks what ``zfsmon analyze --json`` says:

a. ``ceiling``: the 8 KiB random-read sweep (depths 1..64) on a dataset that caches no data
   (``primarycache=metadata``, ``secondarycache=none``), so every read goes to the throttled disks: the
   peak IOPS is the mirrors' ceiling, consistent with the throttle (4 disks x IOPS: a mirror reads from
   either side), the data disks' reads/s per disk at the throttle, a knee, p99 growing past it;
b. ``l2arc``: the same sweep on a dataset whose working set (96 MiB) fits the L2ARC but not the ARC, after
   a warm-up pass (a random read of every block, and a wait until the L2ARC holds the set): IOPS far above
   the ceiling, the reads served by the cache device (its reads against the data disks', and the
   L2ARC's hits from arcstats);
c. ``slog``: 8 KiB random writes with ``fsync=1`` (4 jobs): the log vdev carries the synchronous writes
   (its write operations against the data leaves' and against fio's writes).

Each check prints its numbers; the exit status is 1 when one fails. The lab is removed at the end
(``--keep-lab`` keeps it). Run time: about 5 minutes with ``--step 4``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

from zfsmon.units import parse_size

ROOT = Path(__file__).resolve().parents[1]
ARCSTATS = Path("/zfs-kstat/zfs/arcstats")
#: the l2arc run's working set: larger than the ARC (64 MiB), well inside the L2ARC (256 MiB)
L2_SET_MB = 96
CEIL_SET_MB = 64
SLOG_SET_MB = 32


def zfsmon(*args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "zfsmon", *args], capture_output=True, text=True, timeout=timeout,
                         cwd=str(ROOT))
    if check and res.returncode != 0:
        raise RuntimeError(f"zfsmon {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()[-600:]}")
    return res


def arcstat(name: str) -> float:
    return float((ARCSTATS / name).read_text().split()[0])


def cache_alloc(pool: str) -> float:
    """Bytes on the pool's cache device(s), from `zpool iostat -v POOL` (arcstats' l2_size is every pool's)."""
    out = subprocess.run(["zpool", "iostat", "-v", pool], capture_output=True, text=True, timeout=60).stdout
    total, inside = 0.0, False
    for line in out.splitlines():
        cols = line.split()
        if cols[:1] == ["cache"]:
            inside = True
        elif inside and len(cols) >= 3 and not cols[0].startswith("-"):
            total += parse_size(cols[1])
        elif inside:
            inside = False
    return total


def wait_until(cond: Callable[[], bool], timeout: float, every: float = 1.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


@dataclass
class Plan:
    pool: str = "zf14acc"
    slow_data: int = 100
    step_s: int = 4
    interval: float = 1.0
    out: Path = Path("/var/tmp/zf14acc-runs")
    trace: str = "fusevdevlat"
    l2_set_mb: int = L2_SET_MB
    ceil_set_mb: int = CEIL_SET_MB
    slog_set_mb: int = SLOG_SET_MB
    slog_runtime_s: int = 12
    data_mb: int = 1024
    cache_mb: int = 256
    log_mb: int = 128

    @property
    def ceiling(self) -> float:
        """The throttled mirrors' read ceiling: 4 data disks x IOPS (a mirror's reads go to either side)."""
        return 4.0 * self.slow_data


def lab_up(plan: Plan) -> str:
    zfsmon("lab", "up", "--pool", plan.pool, "--dir", f"/var/tmp/{plan.pool}", "--data-mb", str(plan.data_mb),
           "--cache-mb", str(plan.cache_mb), "--log-mb", str(plan.log_mb), "--slow-data", str(plan.slow_data),
           timeout=300)
    for name, props in (("ceil", ("primarycache=metadata", "secondarycache=none")), ("l2", ()), ("slog", ())):
        ds = f"{plan.pool}/{name}"
        if subprocess.run(["zfs", "list", ds], capture_output=True).returncode != 0:
            argv = ["zfs", "create", "-o", "recordsize=8k"]
            for p in props:
                argv += ["-o", p]
            subprocess.run(argv + [ds], check=True, capture_output=True, timeout=120)
    return f"/{plan.pool}"


def soak(plan: Plan, name: str, preset: str, directory: str, size_mb: int, runtime: int, *extra: str) -> Path:
    out = plan.out / f"{name}.zfsmon"
    for suffix in (".zfsmon", ".fio", ".fio.json", ".fio.json.stderr"):
        p = plan.out / f"{name}{suffix}"
        if p.exists():
            p.unlink()
    args = ["soak", "--lab", plan.pool, "--fio-preset", preset, "--fio-dir", directory, "--fio-size",
            f"{size_mb}M", "--fio-runtime", str(runtime), "--interval", f"{plan.interval:g}", "--out", str(out),
            *extra]
    if plan.trace:
        args += ["--trace", plan.trace]
    zfsmon(*args, timeout=1200)
    return out


def warm_l2arc(plan: Plan, directory: str) -> Dict[str, float]:
    """Lay the file out as the preset names it, read every block once at random (16 slices, 16 jobs) and wait
    until the L2ARC holds most of the set; again (at most 3 passes) while it does not."""
    job = plan.out / "l2arc-warm.fio"
    size = plan.l2_set_mb
    job.write_text("\n".join([
        "[global]", f"directory={directory}", "filename=zfsmon-fio.randread", "ioengine=psync", "group_reporting",
        "", "[layout]", "rw=read", f"size={size}M", "bs=1M", "",
        "[warm]", "stonewall", "rw=randread", "bs=8k", f"size={size // 16}M", f"offset_increment={size // 16}M",
        "numjobs=16", ""]))
    t0 = time.monotonic()
    before = cache_alloc(plan.pool)
    passes = 0
    want = 0.8 * size * 2 ** 20
    while passes < 3:
        passes += 1
        subprocess.run(["fio", str(job), "--output-format=terse"], check=True, capture_output=True, timeout=600)
        if wait_until(lambda: cache_alloc(plan.pool) >= want, timeout=30):
            break
    return {"passes": passes, "seconds": round(time.monotonic() - t0, 1), "cache_alloc_before": before,
            "cache_alloc_after": cache_alloc(plan.pool), "wanted": want}


def analyze(rec: Path) -> Dict[str, object]:
    return json.loads(zfsmon("analyze", "--json", str(rec), timeout=300).stdout)


def finding(report: Dict[str, object], topic: str) -> Optional[Dict[str, object]]:
    hits = [f for f in report["findings"] if f["topic"] == topic]  # type: ignore[union-attr,index]
    return hits[0] if hits else None


@dataclass
class Checks:
    lines: List[str] = field(default_factory=list)
    failed: int = 0

    def check(self, ok: bool, what: str) -> None:
        self.lines.append(f"{'PASS' if ok else 'FAIL'} {what}")
        print(self.lines[-1], flush=True)
        self.failed += not ok


def role_ops(vp: Dict[str, object], role: str, op: str) -> float:
    """Operations (not per second) of ``role``'s leaves in the window, from the vdev_perf finding's numbers."""
    return float(vp["roles"].get(role, {}).get(f"{op}_ops", 0.0))  # type: ignore[union-attr,index]


def check_all(plan: Plan, recs: Dict[str, Path], checks: Checks) -> Dict[str, object]:
    numbers: Dict[str, object] = {}
    ceiling = plan.ceiling
    # a: the throttled mirrors' ceiling
    rep = analyze(recs["ceiling"])
    sw, vp = finding(rep, "qd_sweep"), finding(rep, "vdev_perf")
    checks.check(sw is not None and vp is not None, "ceiling: analyze reports the sweep and the vdevs")
    if sw and vp:
        s = sw["numbers"]
        steps = s["steps"]
        peak = s["peak_iops"]
        knee = s["knee_depth"]
        p99 = {st["depth"]: st.get("clat_p99_ms") for st in steps}
        per_disk = vp["numbers"]["roles"]["data"]["busiest_read_per_leaf_s"]
        numbers["ceiling"] = {"peak_iops": peak, "peak_depth": s["peak_depth"], "knee_depth": knee,
                              "iops": {st["depth"]: round(st["iops"]) for st in steps}, "p99_ms": p99,
                              "little": {st["depth"]: st["in_flight"] for st in steps},
                              "data_reads_per_disk_s": per_disk, "text": sw["text"], "vdev_text": vp["text"]}
        checks.check(0.6 * ceiling <= peak <= 1.2 * ceiling,
                     f"ceiling: peak {peak:,.0f} IOPS at depth {s['peak_depth']:g} within 60-120% of the throttle's "
                     f"{ceiling:,.0f} (4 disks x {plan.slow_data})")
        checks.check(0.6 * plan.slow_data <= per_disk <= 1.3 * plan.slow_data,
                     f"ceiling: the busiest interval's data-disk reads {per_disk:,.0f}/s per disk near the throttle "
                     f"({plan.slow_data})")
        checks.check(knee is not None and knee < steps[-1]["depth"], f"ceiling: a knee within the sweep (depth {knee})")
        if knee is not None:
            deep = steps[-1]["depth"]
            checks.check(bool(p99.get(knee)) and bool(p99.get(deep)) and p99[deep] > 1.5 * p99[knee],
                         f"ceiling: p99 grows past the knee: {p99.get(knee)} ms at depth {knee:g} -> "
                         f"{p99.get(deep)} ms at depth {deep:g}")
        checks.check("Knee at depth" in sw["text"] and "Little's law" in sw["text"],
                     "ceiling: analyze states the knee and the Little's-law check")
    # b: the L2ARC-served sweep
    rep = analyze(recs["l2arc"])
    sw, vp = finding(rep, "qd_sweep"), finding(rep, "vdev_perf")
    checks.check(sw is not None and vp is not None, "l2arc: analyze reports the sweep and the vdevs")
    if sw and vp:
        peak = sw["numbers"]["peak_iops"]
        vn = vp["numbers"]
        cache_r, data_r = role_ops(vn, "cache", "read"), role_ops(vn, "data", "read")
        l2_hits = vn.get("l2_hits")
        fio_reads = sum(st["ios"] for st in sw["numbers"]["steps"])
        numbers["l2arc"] = {"peak_iops": peak, "peak_depth": sw["numbers"]["peak_depth"],
                            "iops": {st["depth"]: round(st["iops"]) for st in sw["numbers"]["steps"]},
                            "p99_ms": {st["depth"]: st.get("clat_p99_ms") for st in sw["numbers"]["steps"]},
                            "cache_reads": cache_r, "data_reads": data_r, "l2_hits": l2_hits,
                            "fio_reads": fio_reads, "text": sw["text"], "vdev_text": vp["text"]}
        checks.check(peak >= 5 * ceiling, f"l2arc: peak {peak:,.0f} IOPS >= 5x the disks' ceiling ({ceiling:,.0f})")
        checks.check(cache_r >= 5 * max(data_r, 1.0),
                     f"l2arc: the cache device read {cache_r:,.0f} times, the data disks {data_r:,.0f}")
        checks.check(l2_hits is not None and l2_hits >= 0.2 * fio_reads and l2_hits >= 5 * max(data_r, 1.0),
                     f"l2arc: {l2_hits if l2_hits is None else f'{l2_hits:,.0f}'} L2ARC hits (arcstats) of "
                     f"{fio_reads:,.0f} fio reads, against {data_r:,.0f} data-disk reads")
    # c: the SLOG
    rep = analyze(recs["slog"])
    vp = finding(rep, "vdev_perf")
    fio_w = sum(st["ios"] for st in qd_steps(rep))
    checks.check(vp is not None, "slog: analyze reports the vdevs")
    if vp:
        vn = vp["numbers"]
        log_w, data_w = role_ops(vn, "log", "write"), role_ops(vn, "data", "write")
        leaves = max(1, int(vn["roles"].get("data", {}).get("leaves", 4)))
        numbers["slog"] = {"log_writes": log_w, "data_leaf_writes": data_w, "data_leaves": leaves,
                           "fio_writes": fio_w, "vdev_text": vp["text"]}
        checks.check(log_w >= 0.3 * fio_w > 0,
                     f"slog: the log vdev wrote {log_w:,.0f} times for fio's {fio_w:,.0f} synchronous writes")
        checks.check(log_w > data_w / leaves,
                     f"slog: log vdev writes {log_w:,.0f} > per data leaf {data_w / leaves:,.0f} "
                     f"({data_w:,.0f} over {leaves} leaves: txg syncs, aggregated)")
    return numbers


def qd_steps(report: Dict[str, object]) -> List[Dict[str, float]]:
    """fio's steps whatever their number (a single step is no sweep, so not in qd_sweep): from vdev_perf."""
    vp = finding(report, "vdev_perf")
    return list(vp["numbers"].get("fio_steps", [])) if vp else []  # type: ignore[union-attr,index]


def record_all(plan: Plan) -> Dict[str, Path]:
    plan.out.mkdir(parents=True, exist_ok=True)
    root = lab_up(plan)
    recs: Dict[str, Path] = {}
    t = time.monotonic()
    recs["ceiling"] = soak(plan, "ceiling", "randread-sweep", f"{root}/ceil", plan.ceil_set_mb, plan.step_s)
    print(f"ceiling sweep recorded in {time.monotonic() - t:.0f} s", flush=True)
    t = time.monotonic()
    warm = warm_l2arc(plan, f"{root}/l2")
    print(f"L2ARC warm-up: {warm}", flush=True)
    recs["l2arc"] = soak(plan, "l2arc", "randread-sweep", f"{root}/l2", plan.l2_set_mb, plan.step_s)
    print(f"l2arc sweep recorded in {time.monotonic() - t:.0f} s", flush=True)
    t = time.monotonic()
    recs["slog"] = soak(plan, "slog", "randwrite-fsync", f"{root}/slog", plan.slog_set_mb, plan.slog_runtime_s,
                        "--fio-depth", "4")
    print(f"slog run recorded in {time.monotonic() - t:.0f} s", flush=True)
    return recs


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", default="zf14acc")
    ap.add_argument("--slow-data", type=int, default=100, metavar="IOPS")
    ap.add_argument("--step", type=int, default=4, metavar="S", help="seconds per sweep depth (default 4)")
    ap.add_argument("--out", type=Path, default=Path("/var/tmp/zf14acc-runs"), help="where the recordings go")
    ap.add_argument("--check", type=Path, metavar="DIR", help="only check recordings already in DIR")
    ap.add_argument("--keep-lab", action="store_true")
    ap.add_argument("--json", type=Path, metavar="FILE", help="write the numbers as JSON")
    args = ap.parse_args(argv)
    plan = Plan(pool=args.pool, slow_data=args.slow_data, step_s=args.step, out=args.check or args.out)
    t0 = time.monotonic()
    if args.check:
        recs = {n: args.check / f"{n}.zfsmon" for n in ("ceiling", "l2arc", "slog")}
    else:
        try:
            recs = record_all(plan)
        finally:
            if not args.keep_lab:
                zfsmon("lab", "down", "--pool", plan.pool, timeout=300, check=False)
    checks = Checks()
    numbers = check_all(plan, recs, checks)
    numbers["seconds"] = time.monotonic() - t0
    numbers["plan"] = {"slow_data": plan.slow_data, "step_s": plan.step_s, "ceiling": plan.ceiling}
    numbers["checks"] = checks.lines
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2, default=str))
    print(f"{len(checks.lines) - checks.failed} of {len(checks.lines)} checks passed in "
          f"{numbers['seconds']:.0f} s", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
