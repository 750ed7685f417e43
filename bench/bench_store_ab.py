"""Store A/B: the same synthetic data recorded and read by an older zfsmon and by this checkout, timed in turns.

The older code is taken with ``git archive OLD zfsmon`` (default: the last commit before schema 3). Each side
writes --hours of bench_store's synthetic pool (64 leaves, 1 s) with its own Recorder, then, in alternating
child processes (--rounds of each, so a loaded machine slows both alike), reads it with its own reader:
one hour of one leaf's read_bw, every sample of the first hour, and the first hour exported to long CSV
downsampled to 1 min (`zfsmon export --long --every 1m`'s code). CPU seconds of the child; the median is
printed.

    python3 bench/bench_store_ab.py --hours 2 --dir /var/tmp/zfsmon-bench/ab
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OLD = "13660656c4a3e90261af5497ce37be0bf98e1f54"

WRITE = """
import os, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
import zfsmon.store  # this side's package, before bench_store puts the checkout first on the path
from bench_store import Synthetic
from zfsmon.store import Recorder
path, ticks = sys.argv[3], int(sys.argv[4])
for s in ("", "-wal", "-shm"):
    if os.path.exists(path + s):
        os.remove(path + s)
g = Synthetic()
with Recorder(path, {"interval": "1"}) as rec:
    rec._db.execute("PRAGMA synchronous=OFF")
    for i in range(ticks):
        rec.write(g.tick(i, text=False)[0])
"""

READ = """
import io, json, sys, time
sys.path.insert(0, sys.argv[1])
from zfsmon.store import Recording
from zfsmon.views import csv_export as view
path, t0, mid = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
out = {}
c = time.process_time()
with Recording.open(path) as r:
    n = len(r.series("leaf:tank/sdd3", "read_bw", mid, mid + 3599))
out["leaf_hour_ms"] = 1000 * (time.process_time() - c)
c = time.process_time()
with Recording.open(path) as r:
    m = sum(1 for _ in r.samples(start=t0, end=t0 + 3599))
out["hour_all_s"] = time.process_time() - c
c = time.process_time()
with Recording.open(path) as r:
    view.write_long(io.StringIO(), view.rows(r.samples(start=t0, end=t0 + 3599), 60.0))
out["export_1m_hour_s"] = time.process_time() - c
out["n"] = [n, m]
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--old", default=OLD, help="commit of the older code")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp/zfsmon-bench/ab")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    old_root = tempfile.mkdtemp(prefix="zfsmon-old-")
    arc = subprocess.run(["git", "-C", ROOT, "archive", args.old, "zfsmon"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", old_root], input=arc, check=True)
    sides = {"old": old_root, "new": ROOT}
    ticks = int(args.hours * 3600)
    paths = {k: os.path.join(args.dir, f"{k}.zfsmon") for k in sides}
    sizes = {}
    for k, root in sides.items():
        subprocess.run([sys.executable, "-c", WRITE, root, HERE, paths[k], str(ticks)], check=True)
        sizes[k] = os.path.getsize(paths[k])
    t0 = 1_700_000_000.0
    mid = t0 + max(0, ticks // 2 - 1800)
    got = {k: [] for k in sides}
    for _ in range(args.rounds):
        for k, root in sides.items():
            p = subprocess.run([sys.executable, "-c", READ, root, paths[k], str(t0), str(mid)], check=True,
                               capture_output=True, text=True)
            got[k].append(json.loads(p.stdout))
    print(f"Command: `python3 bench/bench_store_ab.py {' '.join(sys.argv[1:])}` (old = {args.old[:10]}, "
          f"{args.hours:g} h, median of {args.rounds} alternating rounds, CPU)\n")
    print("| measure | old (schema 2) | this checkout |\n|---|---|---|")
    print(f"| file size | {sizes['old'] / 2**20:.1f} MiB | {sizes['new'] / 2**20:.1f} MiB |")
    for key, label, unit in (("leaf_hour_ms", "open + one hour of one leaf's read_bw", "ms"),
                             ("hour_all_s", "open + every sample of the first hour", "s"),
                             ("export_1m_hour_s", "first hour to long CSV at 1 min", "s")):
        o = statistics.median(r[key] for r in got["old"])
        n = statistics.median(r[key] for r in got["new"])
        print(f"| {label} | {o:.{0 if unit == 'ms' else 2}f} {unit} | {n:.{0 if unit == 'ms' else 2}f} {unit} |")
    assert got["old"][0]["n"] == got["new"][0]["n"], (got["old"][0]["n"], got["new"][0]["n"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
