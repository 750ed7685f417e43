"""A real Prometheus scraping `zfsmon exporter` on the zfs-fuse lab under a workload.

One setup for the module: a pgbench soak on the lab (PostgreSQL on the lab pool, select-only, progress every
second), random reads of a file larger than the ARC (so the L2ARC fills and answers), fsync'd writes (so the
SLOG works), the exporter sampling every source with `--trace fusevdevlat` (zfs-fuse's zpool has no -w: the
per-vdev latency histograms come from the trace) and following the soak's pgbench output, and Debian's
Prometheus as its own process on loopback with its own storage directory, scraping every second. Then the
tests ask Prometheus's HTTP API: the series, their labels and plausible values; every Grafana panel's query
returns data; every rule evaluates; `promtool check metrics` passes on a scrape with no warning.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
import yaml

from tests.conftest import REPO, _postgres_missing, free_loopback_port, need, wait_until
from tests.lab.helpers import drop_host_caches, random_reads, write_file
from zfsmon.views import grafana

pytestmark = [pytest.mark.lab]

RULES = REPO / "zfsmon" / "share" / "prometheus" / "zfsmon-rules.yml"


class Prom:
    """The test's Prometheus: its HTTP API, and the lab's names."""

    def __init__(self, port: int, exporter_port: int, pool: str, lab, logs: Dict[str, Path]) -> None:
        self.logs = logs
        self.base = f"http://127.0.0.1:{port}"
        self.exporter = f"http://127.0.0.1:{exporter_port}/metrics"
        self.pool = pool
        self.lab = lab

    def api(self, path: str, **params: str) -> dict:
        url = f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 400/422: a query that does not parse or evaluate
            body = json.loads(exc.read() or b"{}")
            raise AssertionError(f"{path} {params}: {exc.code} {body.get('error')}") from None
        assert body.get("status") == "success", body
        return body["data"]

    def query(self, expr: str) -> List[dict]:
        data = self.api("query", query=expr)
        return data["result"] if data["resultType"] == "vector" else [data["result"]]

    def values(self, expr: str) -> Dict[str, float]:
        """{labels as text: value} of an instant vector."""
        return {json.dumps(r["metric"], sort_keys=True): float(r["value"][1]) for r in self.query(expr)}

    def wait(self, expr: str, what: str, timeout: float = 180.0) -> List[dict]:
        return wait_until(lambda: self.query(expr) or None, timeout, lambda: f"{what} ({expr}){self.tails()}",
                          step=1.0)

    def tails(self) -> str:
        """The end of each process's stderr and of the pgbench output, for a failure's message."""
        out = []
        for name, path in self.logs.items():
            try:
                out.append(f"\n--- {name}: {path.read_text(errors='replace')[-1500:]}")
            except OSError as exc:
                out.append(f"\n--- {name}: {exc}")
        return "".join(out)


def _basename(path: str) -> str:
    return os.path.basename(path)


@pytest.fixture(scope="module")
def prom(lab, tmp_path_factory) -> Iterator[Prom]:
    need(shutil.which("prometheus") is not None and shutil.which("promtool") is not None,
         "prometheus/promtool not installed (Debian package prometheus: scripts/install-deps.sh)")
    why = _postgres_missing()
    need(not why, why)
    need(os.geteuid() == 0 and shutil.which("bpftrace") is not None, "needs root and bpftrace (--trace fusevdevlat)")
    tmp = tmp_path_factory.mktemp("prom")
    exp_port, prom_port, pg_port = free_loopback_port(), free_loopback_port(), free_loopback_port()
    procs: List[subprocess.Popen] = []
    stop = threading.Event()
    errs: Dict[str, Path] = {}

    def start(name: str, argv: List[str]) -> subprocess.Popen:
        errs[name] = tmp / f"{name}.err"
        p = subprocess.Popen(argv, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=open(errs[name], "w"))
        procs.append(p)
        return p

    soak_out = tmp / "soak.zfsmon"
    pgbench_log = soak_out.with_suffix(".pgbench.log")
    start("soak", [sys.executable, "-m", "zfsmon", "soak", "--lab", lab.pool, "--port", str(pg_port),
                   "--mode", "continuous", "--progress", "1", "--init-scale", "3", "--duration", "900", "--interval", "1",
                   "--quiet",
                   "--out", str(soak_out), "--", "-c", "2", "-S"])
    exporter = start("exporter", [sys.executable, "-m", "zfsmon", "exporter", "--pool", lab.pool, "--interval", "1",
                                  "--listen", f"127.0.0.1:{exp_port}", "--duration", "1200",
                                  "--pgbench-log", str(pgbench_log), "--trace", "fusevdevlat"])
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(RULES)],
              "scrape_configs": [{"job_name": "zfsmon", "scrape_interval": "1s", "scrape_timeout": "1s",
                                  "static_configs": [{"targets": [f"127.0.0.1:{exp_port}"]}]}]}
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    start("prometheus", ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                         f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{prom_port}",
                         "--log.level=warn"])

    # the ZFS workload: random reads of a file twice the ARC (L2ARC fills, then answers), fsync'd writes (SLOG)
    load_dir = os.path.join(lab.mountpoint, "prom-load")  # a directory: the lab's per-test cleanup leaves it
    os.makedirs(load_dir, exist_ok=True)
    big = os.path.join(load_dir, "reads.bin")
    write_file(big, 160)
    drop_host_caches()

    def load() -> None:
        seed = 0
        while not stop.is_set():
            seed += 1
            random_reads(big, 400, seed=seed)
            write_file(os.path.join(load_dir, "sync.bin"), 1)
            if seed % 5 == 0:
                drop_host_caches()

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    p = Prom(prom_port, exp_port, lab.pool, lab, {**errs, "pgbench output": pgbench_log})
    try:
        def scraping() -> bool:
            for name, proc in zip(("soak", "exporter", "prometheus"), procs):
                assert proc.poll() is None, f"{name} exited: {errs[name].read_text()[-2000:]}"
            try:
                return bool(p.query('count_over_time(up{job="zfsmon"}[1m]) >= 5 and up{job="zfsmon"} == 1'))
            except (OSError, AssertionError):
                return False

        wait_until(scraping, 180, "Prometheus to have scraped the exporter five times", step=1.0)
        yield p
    finally:
        stop.set()
        worker.join(timeout=120)
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(load_dir, ignore_errors=True)
        assert exporter.returncode == 0, errs["exporter"].read_text()[-3000:]
        assert "Traceback" not in errs["exporter"].read_text()


def test_vdevs_with_roles_leaves_and_devices(prom: Prom) -> None:
    lab, pool = prom.lab, prom.pool
    log, cache = _basename(lab.devices["log"][0]), _basename(lab.devices["cache"][0])
    vdevs = prom.wait(f'zfsmon_vdev_read_ops_per_second{{pool="{pool}"}}', "vdev series")
    roles = {r["metric"]["vdev"]: r["metric"]["role"] for r in vdevs}
    assert roles == {"mirror-0": "data", "mirror-1": "data", log: "log", cache: "cache"}, roles
    assert {r["metric"]["parent"] for r in vdevs} == {pool} and {r["metric"]["job"] for r in vdevs} == {"zfsmon"}
    leaves = prom.query(f'zfsmon_leaf_write_ops_per_second{{pool="{pool}"}}')
    by_dev = {r["metric"]["device"]: (r["metric"]["role"], r["metric"]["parent"]) for r in leaves}
    for dev in lab.devices["data"]:
        assert by_dev[_basename(dev)][0] == "data" and by_dev[_basename(dev)][1] in ("mirror-0", "mirror-1")
    # the block-device layer sees the same loop devices, under the same device label (the goose-egg join)
    devs = {r["metric"]["device"]: r["metric"].get("leaf", "") for r in prom.query("zfsmon_device_reads_total")}
    assert {_basename(d) for d in lab.devices["data"] + lab.devices["cache"]} <= set(devs)
    # each pool device's series name the zpool leaf (or single-disk vdev) it is: here its own loop name
    for d in lab.devices["data"] + lab.devices["log"] + lab.devices["cache"]:
        assert devs[_basename(d)] == _basename(d), (d, devs)
    alloc = prom.query(f'zfsmon_pool_alloc_bytes{{pool="{pool}"}}')
    assert alloc and float(alloc[0]["value"][1]) > 100 * 2 ** 20  # the 160 MiB file is in it


def test_plausible_rates_while_the_workload_runs(prom: Prom) -> None:
    pool = prom.pool
    prom.wait("rate(zfsmon_arc_hits_total[30s]) > 0", "ARC hits growing while reads run")
    prom.wait("rate(zfsmon_arc_misses_total[30s]) > 0", "ARC misses (the file is twice the ARC)")
    arc = prom.query("zfsmon_arc_size_bytes")
    # zfs-fuse's ARC overshoots its target under load (seen: 71 MiB with c_max 64 MiB): bounded, not exact
    assert 0 < float(arc[0]["value"][1]) <= float(prom.query("zfsmon_arc_c_max_bytes")[0]["value"][1]) * 1.5
    # the L2ARC fills, answers, and its cache device reads
    prom.wait("zfsmon_l2arc_size_bytes > 0", "the L2ARC feed to fill the cache device", timeout=240)
    prom.wait("rate(zfsmon_l2arc_hits_total[1m]) > 0", "L2ARC hits", timeout=300)
    prom.wait(f'max_over_time(zfsmon_vdev_read_ops_per_second{{pool="{pool}", role="cache"}}[2m]) > 0',
              "the cache vdev reading while the L2ARC serves")
    prom.wait(f'max_over_time(zfsmon_vdev_write_ops_per_second{{pool="{pool}", role="log"}}[2m]) > 0',
              "the SLOG writing (fsync'd writes)")
    ratio = prom.query("sum(rate(zfsmon_arc_hits_total[1m])) / (sum(rate(zfsmon_arc_hits_total[1m])) "
                       "+ sum(rate(zfsmon_arc_misses_total[1m])))")
    assert 0.0 < float(ratio[0]["value"][1]) < 1.0
    # the workload: pgbench's TPS from the soak's output, followed by the exporter
    tps = prom.wait('zfsmon_workload_transactions_per_second{workload="pgbench"} > 0', "pgbench TPS", timeout=300)
    assert 0 < float(tps[0]["value"][1]) < 1e6


def test_latency_histograms_from_the_trace(prom: Prom) -> None:
    pool = prom.pool
    prom.wait(f'increase(zfsmon_vdev_latency_seconds_count{{pool="{pool}", queue="trace", op="read"}}[1m]) > 0',
              "traced read latencies of the lab's vdevs")
    series = prom.query(f'zfsmon_vdev_latency_seconds_count{{pool="{pool}", queue="trace"}}')
    assert {r["metric"]["vdev"] for r in series} >= {"mirror-0", "mirror-1"}
    assert all(set(r["metric"]) >= {"pool", "vdev", "role", "parent", "queue", "op"} for r in series)
    p99 = prom.query(f'histogram_quantile(0.99, sum by (vdev, le) (rate(zfsmon_vdev_latency_seconds_bucket'
                     f'{{pool="{pool}", queue="trace", op="read"}}[1m])))')
    vals = [float(r["value"][1]) for r in p99 if r["value"][1] not in ("NaN",)]
    assert vals and all(1e-6 <= v <= 10.0 for v in vals), p99
    # _sum / _count is a mean latency between the smallest and largest bucket bound
    mean = prom.query(f'sum(rate(zfsmon_vdev_latency_seconds_sum{{pool="{pool}", queue="trace"}}[1m])) / '
                      f'sum(rate(zfsmon_vdev_latency_seconds_count{{pool="{pool}", queue="trace"}}[1m]))')
    assert 1e-7 < float(mean[0]["value"][1]) < 10.0


def test_promtool_check_metrics_on_a_scrape(prom: Prom) -> None:
    with urllib.request.urlopen(prom.exporter, timeout=30) as resp:
        text = resp.read()
    assert b"zfsmon_vdev_latency_seconds_bucket" in text and b"zfsmon_l2arc_" in text
    res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), \
        (res.stdout + res.stderr).decode()[-3000:]


def test_every_dashboard_query_returns_data_for_the_lab(prom: Prom) -> None:
    # the workload and the L2ARC must be visible first (the test above may not have run before this one)
    prom.wait('zfsmon_workload_transactions_per_second{workload="pgbench"}', "pgbench TPS", timeout=300)
    prom.wait("rate(zfsmon_l2arc_hits_total[1m]) > 0", "L2ARC hits", timeout=300)
    empty = []
    for title, expr in grafana.panel_queries(pool=prom.pool):
        if not prom.query(expr):  # a query that does not evaluate raises inside
            empty.append((title, expr))
    assert not empty, empty
    for name, selector in grafana.variable_queries():
        series = prom.api("series", **{"match[]": grafana.fill(selector, pool=prom.pool)})
        assert series, f"dashboard variable {name} has no values ({selector})"


def test_every_rule_evaluates(prom: Prom) -> None:
    # loaded by the test's Prometheus (rule_files) and evaluated by it on the lab's series, without error
    doc = yaml.safe_load(RULES.read_text())
    expected = sum(len(g["rules"]) for g in doc["groups"])

    def evaluated() -> bool:
        rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
        return len(rules) == expected and all(r.get("health") == "ok" for r in rules)

    wait_until(evaluated, 60, lambda: f"every rule evaluated with health ok: {prom.api('rules')}", step=1.0)
    recorded = prom.query("zfsmon:arc_hit_ratio:rate5m")
    assert recorded and 0.0 <= float(recorded[0]["value"][1]) <= 1.0
    for group in doc["groups"]:
        for rule in group["rules"]:
            prom.query(rule["expr"])  # raises on a query Prometheus refuses
    p99 = prom.query("histogram_quantile(0.99, sum by (instance, pool, vdev, role, op, le) ("
                     'rate(zfsmon_vdev_latency_seconds_bucket{queue=~"disk_wait|trace"}[5m])))')
    assert p99  # the latency recording rule has data on the lab
