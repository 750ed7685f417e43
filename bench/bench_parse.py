"""Parsing cost per source, on the OpenZFS 2.3 guest's real captures (native CPU, no emulation).

What each collector's parser costs per reading, from the texts the guest's sources read once per interval:
`zpool iostat -w` (the latency source: one interval of the pool's histogram tables), `zpool iostat -vlpq`
(the zpool_iostat source's tree), arcstats, zil, a pool's txgs ring and iostats, a dataset's objset file,
and /proc/diskstats. The guest measures the whole collection (bench_collect.py --pool); this says, without a
guest, where a parser's time goes and what a change to one is worth:

    python3 bench/bench_parse.py [--seconds 2]

Prints one markdown table: microseconds of CPU per reading, and per hour at one reading a second.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zfsmon.sources.devices import diskstats  # noqa: E402
from zfsmon.sources.kstat import arcstats, objset, pool_iostats, txgs, zil  # noqa: E402
from zfsmon.sources.zpool.iostat import ZpoolIostatParser  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
G23 = DATA / "openzfs-2.3"


def _stream(path: Path, flags: str, source: str) -> Tuple[Callable[[], int], int]:
    """A streamed capture fed line by line to a fresh parser: one call reads it all; how many intervals it has."""
    lines = path.read_text().splitlines()
    intervals = sum(1 for ln in lines if ln.strip().isdigit())

    def run() -> int:
        p = ZpoolIostatParser(source, 1.0, first_since_boot=False, flags=flags, pools=[])
        n = 0
        for i, ln in enumerate(lines):
            n += len(p.feed(ln, float(i)))
        return n + len(p.flush(1e9))
    return run, max(1, intervals)


def cases() -> List[Tuple[str, Callable[[], object], int]]:
    """(what, one call, readings per call)."""
    w, w_n = _stream(G23 / "run2" / "zpool-iostat-wpyvTu.txt", "wp", "zpool iostat -w")
    v, v_n = _stream(G23 / "zpool-iostat-vlpTu.txt", "lpT", "zpool iostat")
    arc = (G23 / "kstat" / "arcstats").read_text()
    zl = (G23 / "zil.after").read_text()
    tx = (G23 / "run2" / "txgs.after").read_text()
    os_ = (G23 / "run2" / "objset.after").read_text()
    io = (G23 / "kstat" / "zguest.iostats").read_text()
    disk = (DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt").read_text()
    out = [
        ("latency: `zpool iostat -w` interval (9 tables)", w, w_n),
        ("zpool_iostat: `zpool iostat -vlp` interval", v, v_n),
        ("arcstats", lambda: arcstats.parse_linux(arc, 1.0), 1),
        ("zil", lambda: zil.parse_linux(zl, 1.0), 1),
        ("txgs: a pool's ring", lambda: txgs.parse_txgs(tx), 1),
        ("objset: one dataset", lambda: objset.parse_objset(os_, 1.0), 1),
        ("diskstats", lambda: diskstats.parse_diskstats(disk, 1.0), 1),
    ]
    out.append(("iostats: a pool", lambda: pool_iostats.parse_iostats(io, 1.0, "zguest"), 1))
    return out


def measure(fn: Callable[[], object], seconds: float) -> float:
    """CPU seconds per call, over at least ``seconds`` of calls."""
    fn()
    n, t0 = 0, time.process_time()
    while True:
        fn()
        n += 1
        dt = time.process_time() - t0
        if dt >= seconds:
            return dt / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds of calls per case (default 2)")
    a = ap.parse_args()
    print("| parser (real guest capture) | CPU per reading | per hour at 1 s |")
    print("|---|---|---|")
    for what, fn, per in cases():
        t = measure(fn, a.seconds) / per
        print(f"| {what} | {t * 1e6:,.0f} us | {t * 3600:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
