"""The Grafana dashboard and the alert rules against a real Prometheus holding the OpenZFS 2.3 guest's real scrape.

The lab test (tests/lab/test_prometheus_lab.py) scrapes zfs-fuse, which has no `zpool iostat -w`, slow_ios, TXG
kstat or disk_wait latency: a panel or rule naming one of those series wrongly would pass it. Here the exporter's
real scrape from the OpenZFS 2.3 guest (tests/data/openzfs-2.3/run2/scrape.2, see its PROVENANCE.md) goes into a
real Prometheus TSDB: written as OpenMetrics at three timestamps one 15 s scrape interval apart, starting at the
scrape's own time (its newest ``zfsmon_last_sample_timestamp_seconds``), with the job/instance labels a scrape
adds, the same real values each time (so counters are constant and every rate() is 0; no value is made up);
``promtool tsdb create-blocks-from openmetrics`` makes the blocks and Debian's ``prometheus`` serves them (own
process, loopback, free port, own directory). Then every panel query and every rule expression is evaluated at
the last timestamp: each must parse, and exactly the targets listed in EXPECTED_EMPTY come back empty.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Iterator, List, Set, Tuple

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests import promserver
from tests.conftest import REPO, TEST_DATA, free_loopback_port, need
from tests.unit.views.test_prometheus_rules import exposed_names
from zfsmon.views import grafana
from zfsmon.views.openmetrics import openmetrics as scrapes_as_openmetrics
from zfsmon.views.prometheus import LABELS

pytestmark = [pytest.mark.slow]

SCRAPE = TEST_DATA / "openzfs-2.3" / "run2" / "scrape.2"
RULES = REPO / "zfsmon" / "share" / "prometheus" / "zfsmon-rules.yml"
STEP = 15  # the scrape interval the samples are spaced by (Grafana's $__rate_interval for it: 1m)
POINTS = 3
#: what a Prometheus scrape adds to every series
JOB, INSTANCE = "zfsmon", "zfsmon-guest:9134"

#: (panel title, refId) of the dashboard targets that are empty on this capture, and why. Every other target
#: must return series, so a renamed metric (or a label the query joins on that the exporter stopped serving)
#: fails the test.
EXPECTED_EMPTY = {
    ("Workload TPS beside the L2ARC hit ratio", "A"):
        "the guest's exporter followed no workload output (no --pgbench-log/--fio): no zfsmon_workload_*",
    ("Goose egg: ZFS leaf ops vs block-device ops", "B"):
        "the join on device: the pool's leaves are named by their /dev/disk alias (virtio-data0) and "
        "/proc/diskstats by the kernel's name (vdb); the capture predates the devices' leaf label that maps the "
        "two (tests/unit/analysis/test_goose_leaf_join.py evaluates the join on the exporter's output with it)",
}
#: labels the exporter serves that the capture predates (it is real and is not edited), per entity kind
ADDED_SINCE_CAPTURE = {"device": {"leaf"}}
#: families the capture has under a name the exporter no longer serves (the capture is real and is not edited):
#: its name -> the name served today. OpenZFS counts the bytes L2ARC rebuilds restored since the module loaded,
#: so the metrics table declares them counters, which the exporter names ``_total``; the resets counter is served
#: from a source's first sample on (at 0), and promtool's lint refuses "counter" in the name of a counter with
#: samples.
RENAMED_SINCE_CAPTURE = {"zfsmon_counter_resets_total": "zfsmon_source_resets_total",
                         "zfsmon_l2arc_rebuild_size_bytes": "zfsmon_l2arc_rebuild_size_bytes_total",
                         "zfsmon_l2arc_rebuild_asize_bytes": "zfsmon_l2arc_rebuild_asize_bytes_total"}
#: zfsmon_* names a rule uses that have no series in this capture, and why. Every other one must have series.
EXPECTED_ABSENT_IN_RULES = {
    "zfsmon_source_errors_total": "no source failed during the capture (the family is served empty)",
    "zfsmon_source_resets_total": "the capture served no counter resets family by this name (it served it empty, "
                                  "as zfsmon_counter_resets_total)",
    "zfsmon_pool_scan_issued_bytes": "no scrub or resilver was running at the scrape (served only during a scan)",
}
#: the OpenZFS-only series the lab (zfs-fuse) never has: all must be in this capture and reach Prometheus
OPENZFS_ONLY = ('zfsmon_vdev_latency_seconds_bucket{queue="disk_wait"}', 'zfsmon_vdev_latency_seconds_count',
                'zfsmon_pool_latency_seconds_bucket', "zfsmon_vdev_slow_ios_total", "zfsmon_leaf_slow_ios_total",
                "zfsmon_pool_txg_sync_time_seconds_total", "zfsmon_pool_txgs_synced_total",
                "zfsmon_pool_scan_state", "zfsmon_pool_scrubbing", "zfsmon_vdev_syncq_write_pend")
POOL = "zguest"
LABEL_NAMES = {k.value: v for k, v in LABELS.items()}
VDEVS = {"mirror-0": "data", "mirror-1": "data", "virtio-log0": "log", "virtio-cache0": "cache"}


def _families() -> list:
    return list(text_string_to_metric_families(SCRAPE.read_text()))


def openmetrics(start: float) -> str:
    """The scrape as OpenMetrics: each series at POINTS timestamps STEP s apart, the same value each time (written
    as `export --openmetrics` writes a recording's scrapes)."""
    fams = _families()
    return "\n".join(scrapes_as_openmetrics([(start + i * STEP, fams) for i in range(POINTS)],
                                            {"job": JOB, "instance": INSTANCE})) + "\n"


def scrape_time() -> float:
    """When the scrape was taken: its newest sample's time, to the next whole second."""
    (fam,) = [f for f in _families() if f.name == "zfsmon_last_sample_timestamp_seconds"]
    return float(int(max(s.value for s in fam.samples)) + 1)


class AtScrape:
    """The loaded Prometheus, queried at the last loaded timestamp."""

    def __init__(self, prom: promserver.Prom, at: float) -> None:
        self.prom, self.at = prom, at

    def query(self, expr: str) -> List[dict]:
        return self.prom.query(expr, self.at)


@pytest.fixture(scope="module")
def prom(tmp_path_factory) -> Iterator[AtScrape]:
    start = scrape_time()
    with promserver.serving(tmp_path_factory.mktemp("prom-openzfs"), openmetrics(start), RULES,
                            free_loopback_port()) as p:
        yield AtScrape(p, start + (POINTS - 1) * STEP)


def test_the_scrape_is_in_the_exporters_current_naming() -> None:
    """Every family of the capture is one the exporter serves today (else regenerate it from the run's captures)."""
    served = exposed_names() | {"zfsmon_host_info"}
    stale = []
    for fam in _families():
        name = fam.name + {"counter": "_total", "histogram": "_bucket"}.get(fam.type, "")
        name = RENAMED_SINCE_CAPTURE.get(name, name)
        if name not in served and "(unlisted" not in fam.documentation:
            stale.append(name)
        kind = fam.name.split("_")[1]
        if kind in LABEL_NAMES:  # the label names the exporter gives that kind of entity today
            extra = {"queue", "op", "le"} if fam.type == "histogram" else set()
            now = set(LABEL_NAMES[kind]) - ADDED_SINCE_CAPTURE.get(kind, set())
            assert {k for s in fam.samples for k in s.labels} == now | extra, fam.name
    assert not stale, stale
    # a rename the capture does not need is gone
    assert set(RENAMED_SINCE_CAPTURE) <= {f.name + ("_total" if f.type == "counter" else "") for f in _families()}
    assert len(_families()) == 350


def test_promtool_check_metrics_is_clean() -> None:
    need(shutil.which("promtool") is not None, "promtool not installed (Debian package prometheus)")
    res = subprocess.run(["promtool", "check", "metrics"], input=SCRAPE.read_bytes(), capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), \
        (res.stdout + res.stderr).decode()[-3000:]


def test_the_openzfs_only_series_reach_prometheus(prom: AtScrape) -> None:
    for sel in OPENZFS_ONLY:
        assert prom.query(sel), sel
    # the loaded values are the capture's: one series each, checked against the scrape's text
    txg = prom.query(f'zfsmon_pool_txg_sync_max_seconds{{pool="{POOL}", instance="{INSTANCE}", job="{JOB}"}}')
    assert [float(r["value"][1]) for r in txg] == [0.33222538]
    disk_wait = prom.query('zfsmon_vdev_latency_seconds_count{queue="disk_wait"}')
    assert {(r["metric"]["vdev"], r["metric"]["role"]) for r in disk_wait} == set(VDEVS.items())
    assert {r["metric"]["op"] for r in disk_wait} == {"read", "write"}
    assert sum(float(r["value"][1]) for r in disk_wait) > 0  # real I/Os counted by zpool iostat -w
    # the stored points are the ones written: POINTS per series, STEP apart, constant
    hist = prom.query(f'count_over_time(zfsmon_vdev_latency_seconds_count{{vdev="mirror-0"}}[{POINTS * STEP}s])')
    assert {float(r["value"][1]) for r in hist} == {float(POINTS)}
    assert all(float(r["value"][1]) == 0 for r in prom.query("rate(zfsmon_arc_hits_total[1m])"))


def _targets() -> List[Tuple[str, str, str]]:
    """(panel title, refId, PromQL with the variables filled in as Grafana sends them with host and pool = All)."""
    return [(p["title"], t["refId"], grafana.fill(t["expr"], host=".*", pool=".*"))
            for p in grafana.dashboard()["panels"] for t in p["targets"]]  # type: ignore[index]


def test_every_dashboard_query_on_the_openzfs_scrape(prom: AtScrape) -> None:
    empty: Set[Tuple[str, str]] = set()
    for title, ref, expr in _targets():
        if not prom.query(expr):  # one that does not parse or evaluate raises inside
            empty.add((title, ref))
    assert empty == set(EXPECTED_EMPTY), (sorted(empty - set(EXPECTED_EMPTY)), sorted(set(EXPECTED_EMPTY) - empty))
    # with host and pool set to one value each, as a user would pick them
    for title, ref, expr in _targets():
        one = expr.replace('instance=~".*"', f'instance=~"{INSTANCE}"').replace('pool=~".*"',
                                                                                        f'pool=~"{POOL}"')
        assert bool(prom.query(one)) == ((title, ref) not in EXPECTED_EMPTY), (title, ref, one)
    # the variables' label_values find this host and pool
    for name, selector in grafana.variable_queries():
        got = prom.query(grafana.fill(selector))
        label = {"host": "instance", "pool": "pool"}[name]
        assert {r["metric"][label] for r in got} == {INSTANCE if name == "host" else POOL}, (name, selector)


def test_latency_panels_have_every_vdev_from_disk_wait(prom: AtScrape) -> None:
    """The per-vdev latency panels draw zpool iostat -w's disk_wait on OpenZFS: one series per vdev, with its role.
    (Counters are constant here, so the quantile of a zero rate is NaN: the series' presence is what is tested.)"""
    for op in ("read", "write"):
        for q in (0.5, 0.99):
            got = prom.query(grafana.fill(grafana.latency_quantile(q, op)))
            assert sorted((r["metric"]["vdev"], r["metric"]["role"]) for r in got) == sorted(VDEVS.items()), (op, q)
            assert {r["metric"]["pool"] for r in got} == {POOL}
    # the disk_wait half alone has them (the trace half is empty on OpenZFS without --trace)
    disk = grafana.latency_quantile(0.99, "read").split(" or ")[0]
    assert "disk_wait" in disk and len(prom.query(grafana.fill(disk))) == len(VDEVS)
    # on the cumulative counts (no rate) the same aggregation gives a real, finite write latency for every vdev
    # (the capture's reads were all ARC hits: its read buckets are 0 and their quantile NaN)
    cum = prom.query('histogram_quantile(0.99, sum by (vdev, le) (zfsmon_vdev_latency_seconds_bucket'
                     '{queue="disk_wait", op="write"}))')
    vals = {r["metric"]["vdev"]: float(r["value"][1]) for r in cum}
    assert set(vals) == set(VDEVS) and all(1e-6 <= v <= 10.0 for v in vals.values()), vals


def test_every_rule_expression_on_the_openzfs_scrape(prom: AtScrape) -> None:
    doc = yaml.safe_load(RULES.read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    assert len(rules) == 22
    got = {}
    for rule in rules:
        got[rule.get("record") or rule["alert"]] = prom.query(rule["expr"])  # raises on one Prometheus refuses
    # the recording rules all have series on OpenZFS
    for rule in rules:
        if "record" in rule:
            assert got[rule["record"]], rule["record"]
    p99 = got["zfsmon:vdev_latency_seconds:p99_5m"]
    assert {(r["metric"]["vdev"], r["metric"]["op"]) for r in p99} == {(v, op) for v in VDEVS for op in ("read", "write")}
    # no alert fires on a healthy, steady pool (constant counters: nothing increases, nothing is slow)
    firing = sorted(name for name, res in got.items() if not name.startswith("zfsmon:") and res)
    assert firing == [], firing
    # every zfsmon_* name a rule uses has series here, except the ones listed (with why)
    used = set(re.findall(r"\bzfsmon_[a-z0-9_]+", RULES.read_text()))
    absent = {n for n in used if not prom.query(f'{{__name__="{n}"}}')}
    assert absent == set(EXPECTED_ABSENT_IN_RULES), sorted(absent ^ set(EXPECTED_ABSENT_IN_RULES))
