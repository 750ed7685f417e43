"""Long-soak benchmark: replay, analyze, report and export on a multi-day synthetic recording.

Generates (unless --recording names one) bench_store's synthetic pool (8 raidz2 vdevs x 8 leaves = 64
leaves, a log and a cache device, ARC, L2ARC and ZIL kstats, a pgbench-like workload) every second for
--hours, with a mark every 6 hours. --max-minutes caps the generation: when it runs out the recording
ends there and the report says how long it is. The file is written by the ordinary Recorder (same
format, compaction included) with ``synchronous=OFF`` and 60 one-second readings per transaction,
only to make it faster: durability is bench_store's subject, not this one's.

Then, on that file: replay (``Recording.open`` + the first 5-minute window + first paint at 160x50,
a step, a jump to the start: bench_top's code) and ``zfsmon analyze``, ``zfsmon report`` (PDF) and
``zfsmon export --csv DIR --every 1m``, each a child process under ``/usr/bin/time -v`` (wall time,
peak RSS).

    nice python3 bench/bench_soak.py --hours 168 --max-minutes 40 --dir /var/tmp/zfsmon-bench/soak

Prints a markdown section for docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from bench_store import T0, Synthetic  # noqa: E402
from bench_top import _open_replay  # noqa: E402

from zfsmon.model import Event, EventKind, Record  # noqa: E402
from zfsmon.store import Recorder, Recording  # noqa: E402

BATCH = 60


def generate(path: str, hours: float, max_minutes: float) -> Dict[str, float]:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    syn = Synthetic()
    ticks = int(hours * 3600)
    deadline = time.time() + 60 * max_minutes
    t0 = time.time()
    i = 0
    now = [T0]
    with Recorder(path, {"host": "bench-soak", "interval": "1", "argv": " ".join(sys.argv)},
                  clock=lambda: now[0]) as rec:
        rec._db.execute("PRAGMA synchronous=OFF")
        while i < ticks and time.time() < deadline:
            batch: List[Record] = []
            for j in range(i, min(i + BATCH, ticks)):
                batch += syn.tick(j, text=False)[0]
                if j and j % (6 * 3600) == 0:
                    batch.append(Event(T0 + j, EventKind.MARK, f"hour {j // 3600}", source="user"))
            rec.write(batch)
            i = min(i + BATCH, ticks)
            now[0] = T0 + i
            if i % 3600 == 0:
                print(f"  {i / 3600:.0f} h generated, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"ticks": i, "wall_s": time.time() - t0}


def timed(cmd: List[str]) -> Dict[str, float]:
    """Run ``cmd`` under /usr/bin/time -v: wall seconds, peak RSS (MiB), exit status."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    user = re.search(r"User time \(seconds\): ([\d.]+)", p.stderr)
    if p.returncode:
        print(p.stderr[-2000:], file=sys.stderr)
    return {"wall_s": wall, "rss_mib": int(rss.group(1)) / 1024 if rss else float("nan"),
            "user_s": float(user.group(1)) if user else float("nan"), "rc": p.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=168.0)
    ap.add_argument("--max-minutes", type=float, default=40.0, help="cap on the generation's wall time")
    ap.add_argument("--dir", default="/var/tmp/zfsmon-bench/soak")
    ap.add_argument("--recording", help="measure this recording instead of generating one")
    ap.add_argument("--skip", nargs="*", default=[], choices=["replay", "analyze", "report", "export"])
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    gen = None
    path = args.recording or os.path.join(args.dir, "soak.zfsmon")
    if not args.recording:
        gen = generate(path, args.hours, args.max_minutes)
    with Recording.open(path) as r:
        lo, hi = r.time_range()
        values = r.value_count()
    size = os.path.getsize(path)
    py = [sys.executable, "-m", "zfsmon"]
    res: Dict[str, Dict[str, float]] = {}
    if "replay" not in args.skip:
        res["replay"] = asyncio.run(_open_replay(path))
        print(f"  replay {res['replay']}", file=sys.stderr, flush=True)
    if "analyze" not in args.skip:
        res["analyze"] = timed(py + ["analyze", path])
        print(f"  analyze {res['analyze']}", file=sys.stderr, flush=True)
    if "report" not in args.skip:
        res["report"] = timed(py + ["report", path, "--out", os.path.join(args.dir, "soak.pdf")])
        print(f"  report {res['report']}", file=sys.stderr, flush=True)
    if "export" not in args.skip:
        out = os.path.join(args.dir, "export-1m")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        res["export"] = timed(py + ["export", path, "--csv", out, "--every", "1m"])
        print(f"  export {res['export']}", file=sys.stderr, flush=True)
    hours = (hi - lo) / 3600
    cmd = "python3 bench/bench_soak.py " + " ".join(sys.argv[1:])
    print(f"\n### Long soaks\n\nCommand: `{cmd}`\n")
    made = f", generated in {gen['wall_s']:.0f} s" if gen else ""
    print(f"Recording: {hours:.2f} h ({hours / 24:.2f} days) at 1 s, {size / 2 ** 20:.0f} MiB, "
          f"{values:,} values ({size / values:.2f} bytes/value){made}.\n")
    print("| step | wall | peak RSS | aim |\n|---|---|---|---|")
    if "replay" in res:
        rp = res["replay"]
        print(f"| replay: open + first 5-minute window | {rp['cursor_s']:.2f} s | | < 1 s |")
        print(f"| replay: first paint (160x50) | {rp['first_paint_s']:.2f} s | | |")
        print(f"| replay: a step back (mean of 10) | {rp['step_s'] * 1000:.0f} ms | | < 100 ms |")
        print(f"| replay: the cursor resting until the states behind it are ready | {rp['rest_s']:.2f} s | | |")
        print(f"| replay: the first step back / each of the next 9, key to screen | "
              f"{rp['step_first_paint_s'] * 1000:.0f} ms / {rp['step_rest_paint_s'] * 1000:.0f} ms | | < 100 ms |")
        print(f"| replay: the same in the pilot's wall time (its idle waits included) | "
              f"{rp['step_first_s'] * 1000:.0f} ms ({rp['step_first_cpu_s'] * 1000:.0f} ms CPU) / "
              f"{rp['step_rest_s'] * 1000:.0f} ms ({rp['step_rest_cpu_s'] * 1000:.0f} ms CPU) | | |")
        print(f"| replay: jump to the start | {rp['home_s']:.2f} s | | |")
        print(f"| replay: the window at the end and 10 steps back, checked against the file read afresh "
              f"(every sparkline series, pgbench's TPS readings, the findings) | "
              f"{' and '.join(map(str, rp['series_checked']))} series: the same | | |")
    for k, aim in (("analyze", "< 60 s"), ("report", "< 120 s"), ("export", "< 60 s")):
        if k in res:
            x = res[k]
            status = "" if not x["rc"] else f" (exit {x['rc']})"
            print(f"| `zfsmon {k}`{' --every 1m' if k == 'export' else ''}{status} | {x['wall_s']:.1f} s "
                  f"({x['user_s']:.1f} s user) | {x['rss_mib']:.0f} MiB | {aim} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
