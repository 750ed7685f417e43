"""Exporter benchmark: series per host and the cost of one scrape, for 64 leaves and a simulated 1,000-leaf host.

The host is built from recorded data, not invented numbers: every vdev and leaf sample is a copy (renamed) of
a vdev or leaf row of the OpenZFS 2.3 guest's `zpool iostat -vlq` capture (tests/data/openzfs-2.3), every
vdev also carries the `zpool iostat -vw` capture's latency histograms of a mirror, the ARC and L2ARC come
from that guest's arcstats, and each leaf has a block device sample parsed from this machine's
/proc/diskstats. Leaves are in 2-way mirrors (N/2 top-level vdevs), plus one log and one cache device. Each
"interval" feeds all samples to LatestValues (what the sampler's sink does), then a scrape renders the text
format through prometheus_client (what the HTTP handler does); both are timed over --scrapes rounds.

    python3 bench/bench_exporter.py --leaves 64 1000 [--leaf-histograms]
    python3 bench/bench_exporter.py --leaves 1000 --prometheus 4    # also: what a real Prometheus spends

Prints a markdown table for docs/exporter.md. With --prometheus N, Debian's prometheus (on PATH) scrapes N
copies of the host (N targets, each serving one rendered scrape) every 5 s for --scrapes-by-prometheus
rounds, on loopback with its own storage directory; its head series, resident memory and samples appended
are read from its own /metrics, minus those of an idle Prometheus measured the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.server
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from zfsmon.model import Entity, Kind, Role, Sample  # noqa: E402
from zfsmon.sources.devices.diskstats import parse_diskstats  # noqa: E402
from zfsmon.sources.kstat.arcstats import parse_linux  # noqa: E402
from zfsmon.sources.zpool.iostat import parse_text  # noqa: E402
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


def _prom_metrics(port: int) -> Dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    want = ("prometheus_tsdb_head_series", "process_resident_memory_bytes",
            "prometheus_tsdb_head_samples_appended_total", "process_cpu_seconds_total")
    out: Dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if smp.name in want:
                out[smp.name] = out.get(smp.name, 0.0) + smp.value
    return out


def run_prometheus(payload: bytes, targets: int, rounds: int) -> Dict[str, float]:
    """Serve ``payload`` on ``targets`` ports, let a real Prometheus scrape them ``rounds`` times every 5 s."""
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *a: object) -> None:
            pass

    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), H) for _ in range(targets)]
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="zfsmon-bench-prom-")
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        tl = ", ".join(f"'127.0.0.1:{srv.server_port}'" for srv in servers)
        f.write(f"global: {{scrape_interval: 5s}}\nscrape_configs:\n  - job_name: zfsmon\n    scrape_timeout: 5s\n"
                f"    static_configs: [{{targets: [{tl}]}}]\n")
    proc = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=error"])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                base = _prom_metrics(port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        time.sleep(5 * rounds)  # the measurement itself: Prometheus scraping on its own schedule
        end = _prom_metrics(port)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        for srv in servers:
            srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"series": end.get("prometheus_tsdb_head_series", 0.0),
            "rss_mb": end["process_resident_memory_bytes"] / 2 ** 20,
            "rss_growth_mb": (end["process_resident_memory_bytes"] - base["process_resident_memory_bytes"]) / 2 ** 20,
            "samples": end["prometheus_tsdb_head_samples_appended_total"]
            - base.get("prometheus_tsdb_head_samples_appended_total", 0.0),
            "cpu_s": end["process_cpu_seconds_total"] - base["process_cpu_seconds_total"],
            "seconds": 5.0 * rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, nargs="+", default=[64, 1000])
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--leaf-histograms", action="store_true")
    ap.add_argument("--prometheus", type=int, metavar="N", help="also have a real Prometheus scrape N such hosts")
    ap.add_argument("--scrapes-by-prometheus", type=int, default=12)
    args = ap.parse_args()
    print(f"| leaves | series per scrape | scrape size | scrape CPU | sampling feed CPU | exporter max RSS |"
          f"{' (with --leaf-histograms)' if args.leaf_histograms else ''}")
    print("|---|---|---|---|---|---|")
    for n in args.leaves:
        r = measure(n, args.scrapes, args.leaf_histograms)
        print(f"| {n} | {r['series']:,} | {r['bytes'] / 1e6:.1f} MB | {r['scrape_ms']:.0f} ms | "
              f"{r['feed_ms']:.0f} ms | {r['rss_mb']:.0f} MB |", flush=True)
    if args.prometheus:
        print("\n| leaves per host | hosts | head series | Prometheus RSS | RSS per series | samples/s | "
              "Prometheus CPU |\n|---|---|---|---|---|---|---|")
        for n in args.leaves:
            latest = LatestValues(leaf_histograms=args.leaf_histograms)
            reg = CollectorRegistry(auto_describe=False)
            reg.register(ZfsmonCollector(latest))
            latest.add(host(n, 0.0))
            latest.add(host(n, 1.0))
            p = run_prometheus(generate_latest(reg), args.prometheus, args.scrapes_by_prometheus)
            per = p["rss_mb"] * 2 ** 20 / max(p["series"], 1)
            print(f"| {n} | {args.prometheus} | {p['series']:,.0f} | {p['rss_mb']:.0f} MB | {per / 1024:.1f} KiB | "
                  f"{p['samples'] / p['seconds']:,.0f} | {100 * p['cpu_s'] / p['seconds']:.0f} % of a core |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
