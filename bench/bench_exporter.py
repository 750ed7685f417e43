"""Exporter benchmark: series per host and the cost of one scrape, for 64 leaves and a simulated 1,000-leaf host.

The host is built from recorded data, not invented numbers: every vdev and leaf sample is a copy (renamed) of
a vdev or leaf row of the OpenZFS 2.3 guest's `zpool iostat -vlq` capture (tests/data/openzfs-2.3), every
vdev also carries the `zpool iostat -vw` capture's latency histograms of a mirror, the ARC and L2ARC come
from that guest's arcstats, and each leaf has a block device sample parsed from this machine's
/proc/diskstats. Leaves are in 2-way mirrors (N/2 top-level vdevs), plus one log and one cache device. Each
"interval" feeds all samples to LatestValues (what the sampler's sink does), then a scrape renders the text
format through prometheus_client (what the HTTP handler does); both are timed over --scrapes rounds.

    python3 bench/bench_exporter.py --leaves 64 1000 [--leaf-histograms]

Prints a markdown table for docs/exporter.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import sys
import time
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

from zfsmon.model import Entity, Kind, Role, Sample  # noqa: E402
from zfsmon.sources.arcstats import parse_linux  # noqa: E402
from zfsmon.sources.diskstats import parse_diskstats  # noqa: E402
from zfsmon.sources.zpool_iostat import parse_text  # noqa: E402
from zfsmon.views.prometheus import LatestValues, ZfsmonCollector  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "openzfs-2.3")
POOL = "tank"


def _samples(name: str) -> List[Sample]:
    with open(os.path.join(DATA, name)) as f:
        return [r for r in parse_text(f.read()) if isinstance(r, Sample) and not r.since_boot]


def templates() -> Tuple[Dict[str, float], Dict[str, float], Dict[str, float], Dict[str, float], List[Sample]]:
    """(pool metrics, vdev metrics, leaf metrics, one vdev's -w histograms, ARC+L2ARC samples) from captures."""
    vlq = _samples("zpool-iostat-vlq.txt")
    pool = next(s.metrics for s in vlq if s.entity.kind == Kind.POOL)
    vdev = next(s.metrics for s in vlq if s.entity.name.startswith("mirror"))
    leaf = next(s.metrics for s in vlq if s.entity.kind == Kind.LEAF or s.entity.name.startswith("virtio-data"))
    hist = next(s.metrics for s in _samples("zpool-iostat-vw.txt") if s.entity.name.startswith("mirror"))
    with open(os.path.join(DATA, "arcstats.after")) as f:
        arc = parse_linux(f.read(), 0.0)
    return dict(pool), dict(vdev), dict(leaf), dict(hist), arc


def host(leaves: int, ts: float) -> List[Sample]:
    pool_m, vdev_m, leaf_m, hist_m, arc = templates()
    with open("/proc/diskstats") as f:
        dev_m = dict(parse_diskstats(f.read(), ts)[0].metrics)
    out = [Sample(ts, Entity(Kind.POOL, POOL, POOL), pool_m, interval=1.0, source="zpool")]
    for v in range(leaves // 2):
        vd = f"mirror-{v}"
        out.append(Sample(ts, Entity(Kind.VDEV, vd, POOL, Role.DATA, POOL), {**vdev_m, **hist_m}, interval=1.0,
                          source="zpool"))
        for i in (0, 1):
            d = f"disk{2 * v + i}"
            out.append(Sample(ts, Entity(Kind.LEAF, d, POOL, Role.DATA, vd), {**leaf_m, **hist_m}, interval=1.0,
                              source="zpool"))
            out.append(Sample(ts, Entity(Kind.DEVICE, d), dev_m, source="diskstats"))
    for name, role in (("log0", Role.LOG), ("cache0", Role.CACHE)):
        out.append(Sample(ts, Entity(Kind.VDEV, name, POOL, role, POOL), {**vdev_m, **hist_m}, interval=1.0,
                          source="zpool"))
    out += [dataclasses.replace(s, ts=ts) for s in arc]
    return out


def measure(leaves: int, scrapes: int, leaf_histograms: bool) -> Dict[str, float]:
    latest = LatestValues(leaf_histograms=leaf_histograms)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ZfsmonCollector(latest))
    feed = scrape = 0.0
    text = b""
    for i in range(scrapes):
        samples = host(leaves, float(i))
        t0 = time.perf_counter()
        latest.add(samples)
        t1 = time.perf_counter()
        text = generate_latest(reg)
        t2 = time.perf_counter()
        feed += t1 - t0
        scrape += t2 - t1
    series = sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))
    return {"leaves": leaves, "series": series, "bytes": len(text), "scrape_ms": 1000 * scrape / scrapes,
            "feed_ms": 1000 * feed / scrapes,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, nargs="+", default=[64, 1000])
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--leaf-histograms", action="store_true")
    args = ap.parse_args()
    print(f"| leaves | series per scrape | scrape size | scrape CPU | sampling feed CPU | exporter max RSS |"
          f"{' (with --leaf-histograms)' if args.leaf_histograms else ''}")
    print("|---|---|---|---|---|---|")
    for n in args.leaves:
        r = measure(n, args.scrapes, args.leaf_histograms)
        print(f"| {n} | {r['series']:,} | {r['bytes'] / 1e6:.1f} MB | {r['scrape_ms']:.0f} ms | "
              f"{r['feed_ms']:.0f} ms | {r['rss_mb']:.0f} MB |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
