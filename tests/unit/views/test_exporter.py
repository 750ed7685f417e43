"""The Prometheus exporter: names and units from the metrics table, and real scrapes of the real HTTP endpoint.

Every scrape goes over HTTP to 127.0.0.1 on an ephemeral port and is read back with prometheus_client's own
parser; the values must equal what the parsers read from genuine captures (tests/unit/report_data.py).
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from typing import Dict, List, Tuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_DATA, free_loopback_port, need
from tests.unit import report_data as rd
from tests.unit import vdevprops_data
from zfsmon import metrics
from zfsmon.cli import main
from zfsmon.commands import _serve
from zfsmon.commands import exporter as cmd
from zfsmon.engine import Sampler
from zfsmon.errors import UserError
from zfsmon.model import Entity, Kind, Record, Role, Sample
from zfsmon.sources.base import PolledCollector
from zfsmon.sources.devices import diskstats
from zfsmon.sources.fio import json_output as fio_json
from zfsmon.sources.kstat import arcstats, objset, zio_stats
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recorder, Recording
from zfsmon.trace.protocol import parse_text as trace_text
from zfsmon.trace.resolve import Names
from zfsmon.views.prometheus import (
    LABELS,
    LatestValues,
    is_histogram_metric,
    latest_from_recording,
    prom_name,
)
from zfsmon.views.prometheus import families as prom_families

NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
Scrape = Dict[str, Tuple[str, str, List[Tuple[str, Dict[str, str], float]]]]


def scrape(port: int) -> Scrape:
    """family name -> (type, help, [(sample name, labels, value)]) as Prometheus would read it."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    return families(text)


def families(text: str) -> Scrape:
    return {f.name: (f.type, f.documentation, [(s.name, s.labels, s.value) for s in f.samples])
            for f in text_string_to_metric_families(text)}


def value(fams: Scrape, family: str, **labels: str) -> float:
    hits = [v for _n, lab, v in fams[family][2] if all(lab.get(k) == x for k, x in labels.items())]
    assert len(hits) == 1, (family, labels, fams[family][2])
    return hits[0]


@pytest.fixture
def served():
    """Start the exporter's server on an ephemeral loopback port for a LatestValues; shut it down after."""
    servers = []

    def start(latest: LatestValues) -> int:
        server, port = cmd.serve(latest, "127.0.0.1", 0)
        servers.append(server)
        return port

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory, fixtures):
    path = str(tmp_path_factory.mktemp("exporter") / "soak.zfsmon")
    rd.write_recording(path)
    return path


def _last(pred) -> Sample:
    return [r for r in rd.records() if isinstance(r, Sample) and not r.since_boot and pred(r)][-1]


# --------------------------------------------------------------------------------------------- naming


def test_every_table_row_gets_a_valid_unique_prometheus_name():
    seen: Dict[str, Tuple[Kind, str]] = {}
    for (kind, name), spec in metrics.TABLE.items():
        pn = prom_name(kind, name)
        assert NAME_RE.match(pn.name) and pn.name.startswith(f"zfsmon_{kind.value}_"), pn.name
        assert pn.counter == (spec.kind == metrics.COUNTER)
        assert pn.name.endswith("_total") == pn.counter, pn.name
        family = pn.name[:-len("_total")] if pn.counter else pn.name
        assert family not in seen, f"{kind.value}.{name} and {seen[family]} both become {family}"
        seen[family] = (kind, name)
        assert pn.help.startswith(spec.help)
        assert "pct" not in pn.name and not pn.name.endswith("_ns") and not pn.name.endswith("_ms")


@pytest.mark.parametrize("kind,metric,name,scale", [
    (Kind.VDEV, "read_ops", "zfsmon_vdev_read_ops_per_second", 1.0),
    (Kind.LEAF, "write_bw", "zfsmon_leaf_write_bytes_per_second", 1.0),
    (Kind.ARC, "hits", "zfsmon_arc_hits_total", 1.0),
    (Kind.ARC, "size", "zfsmon_arc_size_bytes", 1.0),
    (Kind.ARC, "hit_pct", "zfsmon_arc_hit_ratio", 0.01),
    (Kind.L2ARC, "read_bytes", "zfsmon_l2arc_read_bytes_total", 1.0),
    (Kind.ZIL, "commit_count", "zfsmon_zil_commit_total", 1.0),
    (Kind.ZIO, "gang_writes", "zfsmon_zio_gang_writes_total", 1.0),
    (Kind.DEVICE, "read_time_ns", "zfsmon_device_read_time_seconds_total", 1e-9),
    (Kind.POOL, "total_wait_read", "zfsmon_pool_total_wait_read_seconds", 1e-9),
    (Kind.WORKLOAD, "tps", "zfsmon_workload_transactions_per_second", 1.0),
    (Kind.WORKLOAD, "latency_avg_ms", "zfsmon_workload_latency_avg_seconds", 1e-3),
])
def test_names_follow_prometheus_conventions(kind, metric, name, scale):
    pn = prom_name(kind, metric)
    assert (pn.name, pn.scale) == (name, scale)


def test_unlisted_metrics_pass_through_as_gauges():
    pn = prom_name(Kind.ARC, "some_new-kstat")
    assert (pn.name, pn.counter, pn.scale) == ("zfsmon_arc_some_new_kstat", False, 1.0)
    assert "unlisted" in pn.help


# --------------------------------------------------------------------------------------------- LatestValues


def test_since_boot_reports_are_not_served_and_values_merge_per_metric():
    pool = Entity(Kind.POOL, "tank", "tank")
    lv = LatestValues()
    lv.add([Sample(1.0, pool, {"read_ops": 500.0}, since_boot=True, source="zpool iostat")])
    assert lv.snapshot()[0] == []
    lv.add([Sample(2.0, pool, {"read_ops": 7.0}, interval=1.0, source="zpool iostat"),
            Sample(2.0, pool, {"txg": 99.0}, source="txgs")])
    assert lv.snapshot()[0] == [(pool, {"read_ops": 7.0, "txg": 99.0})]


def test_entities_not_updated_go_stale():
    now = [100.0]
    lv = LatestValues(stale_after=10, clock=lambda: now[0])
    cache = Entity(Kind.VDEV, "sdf", "tank", Role.CACHE, "tank")
    data = Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank")
    lv.add([Sample(1.0, cache, {"read_ops": 1.0}), Sample(1.0, data, {"read_ops": 2.0})])
    now[0] = 105.0
    lv.add([Sample(6.0, data, {"read_ops": 3.0})])
    now[0] = 112.0
    assert [e.name for e, _ in lv.snapshot()[0]] == ["mirror-0"]


def test_an_entity_read_once_a_minute_stays_between_its_readings():
    """A hot spare only `zpool status` reports (once a minute on a calm Linux pool) is kept for three of its own
    gaps once it has shown one (until its second reading, stale_after holds); a cache device read every second
    still goes after stale_after once it stops."""
    now = [0.0]
    lv = LatestValues(stale_after=8, clock=lambda: now[0])
    spare = Entity(Kind.LEAF, "sdz", "tank", Role.SPARE, "tank")
    cache = Entity(Kind.VDEV, "sdf", "tank", Role.CACHE, "tank")
    for t in range(0, 241):
        now[0] = float(t)
        lv.add([Sample(now[0], cache, {"read_ops": 1.0})] if t <= 200 else [])
        if t % 60 == 0:
            lv.add([Sample(now[0], spare, {"state": 0.0}, source="status")])
        names = {e.name for e, _ in lv.snapshot()[0]}
        assert ("sdz" in names) == (t <= 8 or t >= 60), t
        assert ("sdf" in names) == (t <= 208), t
    now[0] = 240.0 + 3 * 60 + 1
    assert "sdz" not in {e.name for e, _ in lv.snapshot()[0]}  # three of its gaps missed: gone


# --------------------------------------------------------------------------------------------- scrapes


def test_scrape_of_a_recordings_last_values(recording, served):
    with Recording.open(recording) as rec:
        port = served(latest_from_recording(rec))
    fams = scrape(port)
    # vdevs with their roles: the lab's log and cache devices
    for name, role in (("loop5", "log"), ("loop6", "cache"), ("mirror-0", "data"), ("mirror-1", "data")):
        s = _last(lambda r, n=name: r.entity.kind == Kind.VDEV and r.entity.name == n)
        assert s.entity.role.value == role
        for metric in ("read_ops", "write_ops", "read_bw", "write_bw", "alloc", "free"):
            fam = prom_name(Kind.VDEV, metric).name
            assert fams[fam][0] == "gauge"
            assert value(fams, fam, pool="ziocap", vdev=name, role=role, parent="ziocap") == s.metrics[metric]
    leaf = _last(lambda r: r.entity.kind == Kind.LEAF and r.entity.name == "loop3")
    assert value(fams, "zfsmon_leaf_write_bytes_per_second", pool="ziocap", device="loop3", role="data",
                 parent="mirror-1") == leaf.metrics["write_bw"]
    for fam in (f for f in fams if f.startswith("zfsmon_vdev_")):
        assert all(set(lab) == set(LABELS[Kind.VDEV]) for _n, lab, _v in fams[fam][2])
    # counters: raw cumulative values of the last arcstats snapshot (ZoL 0.6.4), exposed as counters
    arc = _last(lambda r: r.entity.kind == Kind.ARC and "hits" in r.metrics)
    assert fams["zfsmon_arc_hits"][0] == "counter"
    assert fams["zfsmon_arc_hits"][2] == [("zfsmon_arc_hits_total", {}, arc.metrics["hits"])]
    assert value(fams, "zfsmon_arc_misses") == arc.metrics["misses"]
    assert value(fams, "zfsmon_arc_size_bytes") == arc.metrics["size"]
    l2 = _last(lambda r: r.entity.kind == Kind.L2ARC and "hits" in r.metrics)
    assert value(fams, "zfsmon_l2arc_hits") == l2.metrics["hits"] == 573868618
    # percentages as ratios 0..1 (the arcstat tool's hit%, still the newest hit_pct)
    tool = _last(lambda r: r.entity.kind == Kind.ARC and "hit_pct" in r.metrics)
    assert value(fams, "zfsmon_arc_hit_ratio") == pytest.approx(tool.metrics["hit_pct"] / 100)
    # workload: tps per second, latency in seconds
    prog = _last(lambda r: r.entity.kind == Kind.WORKLOAD and r.entity.name == "pgbench")
    assert value(fams, "zfsmon_workload_transactions_per_second", workload="pgbench") == prog.metrics["tps"]
    assert value(fams, "zfsmon_workload_latency_avg_seconds", workload="pgbench") == pytest.approx(
        prog.metrics["latency_avg_ms"] / 1000)
    zil = _last(lambda r: r.entity.kind == Kind.ZIL)
    assert value(fams, "zfsmon_zil_commit") == zil.metrics["commit_count"] == 52922839
    assert fams["zfsmon_zil_commit"][1] == prom_name(Kind.ZIL, "commit_count").help
    # the exporter's own families
    # a recording that names a source by an older name (``zpool iostat``) is labelled with the record's one name,
    # as live sources are
    assert value(fams, "zfsmon_source_errors", source="zpool") == 1
    assert value(fams, "zfsmon_source_up", source="zpool") == 1  # its error (no such pool) is older than its samples
    assert value(fams, "zfsmon_source_up", source="arcstats") == 1
    assert fams["zfsmon_build_info"][2][0][2] == 1


def test_a_recording_of_zio_stats_serves_its_four_counters(served, tmp_path):
    """The OpenZFS 2.3 guest's zio_stats reading: host-wide counters, no labels, the metrics table's help."""
    path = str(tmp_path / "zio.zfsmon")
    [reading] = zio_stats.READER.parse_linux((TEST_DATA / "openzfs-2.3" / "kstat" / "zio_stats").read_text(),
                                             1_800_000_000.0)
    with Recorder(path, {"host": "guest", "interval": "10"}) as rec:
        rec.write([reading])
    with Recording.open(path) as rec:
        fams = scrape(served(latest_from_recording(rec)))
    zio = {f: v for f, v in fams.items() if f.startswith("zfsmon_zio_")}
    assert {f: (typ, samples) for f, (typ, _help, samples) in zio.items()} == {
        "zfsmon_zio_total_allocations": ("counter", [("zfsmon_zio_total_allocations_total", {}, 35793.0)]),
        "zfsmon_zio_alloc_class_fallbacks": ("counter", [("zfsmon_zio_alloc_class_fallbacks_total", {}, 0.0)]),
        "zfsmon_zio_gang_writes": ("counter", [("zfsmon_zio_gang_writes_total", {}, 0.0)]),
        "zfsmon_zio_gang_multilevel": ("counter", [("zfsmon_zio_gang_multilevel_total", {}, 0.0)])}
    assert zio["zfsmon_zio_gang_writes"][1] == prom_name(Kind.ZIO, "gang_writes").help
    assert prom_name(Kind.ZIO, "gang_writes").help.startswith("allocations that found no contiguous space")


def test_vdev_properties_are_served_on_the_series_of_zpool_status_and_iostat(served, tmp_path):
    """The OpenZFS 2.4 slow-leaf captures (tests/unit/vdevprops_data.py): the vdevprops metrics under the table's
    names and units, on the same label sets as the status source's counters and zpool iostat's rates (one series
    per vdev, not one per source)."""
    path = str(tmp_path / "props.zfsmon")
    with Recorder(path, {"host": "guest", "interval": "2"}) as rec:
        rec.write(vdevprops_data.records(1_800_000_000.0))
    with Recording.open(path) as rec:
        fams = scrape(served(latest_from_recording(rec)))
    bad = {"pool": "zslow", "device": vdevprops_data.BAD, "role": "data", "parent": "raidz1-0"}
    assert value(fams, "zfsmon_leaf_sit_out", **bad) == 1.0
    assert value(fams, "zfsmon_leaf_sit_out", device=vdevprops_data.GOOD) == 0.0
    assert value(fams, "zfsmon_leaf_trim_errors", **bad) == 0.0
    assert fams["zfsmon_leaf_trim_errors"][0] == "counter"
    assert value(fams, "zfsmon_vdev_capacity_ratio", vdev="raidz1-0", role="data") == pytest.approx(0.39)
    assert value(fams, "zfsmon_vdev_autosit", vdev="raidz1-0", role="data", parent="zslow") == 1.0
    assert value(fams, "zfsmon_leaf_slow_ios", **bad) == 49.0  # the status source's
    for family in ("zfsmon_leaf_sit_out", "zfsmon_leaf_slow_ios", "zfsmon_leaf_read_ops_per_second"):
        labels = [lab for _n, lab, _v in fams[family][2] if lab.get("device") == vdevprops_data.BAD]
        assert labels == [bad], (family, labels)


def test_live_scrape_through_the_engine(served, fixtures):
    """Collectors reading genuine captures, sampled by the real engine in its thread, scraped over HTTP."""
    topo = parse_status((rd.FUSE / "zpool_status_ziocap.txt").read_text())
    iostat_text = (rd.FUSE / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt").read_text()
    snaps = [(fixtures / "arcstats" / n).read_text() for n in rd.ARCSTATS[1:3]]  # 2.3 then 2.1: a reset

    class Replay(PolledCollector):
        def __init__(self, name, texts, parse):
            super().__init__()
            self.name, self.texts, self.parse_fn, self.n = name, texts, parse, 0

        def read_text(self) -> str:
            text = self.texts[min(self.n, len(self.texts) - 1)]
            self.n += 1
            return text

        def parse(self, text, ts):
            return self.parse_fn(text, ts)

    iostat = Replay("zpool_iostat", [iostat_text],
                    lambda t, ts: zpool_iostat.parse_text(t, interval=1.0, topology=topo))
    arc = Replay("arcstats", snaps, arcstats.parse_linux)
    latest = LatestValues(stale_after=60)
    sampler = Sampler([iostat, arc], 0.05, sinks=[latest.add])
    port = served(latest)
    sampler.run_in_thread()
    try:
        deadline = time.monotonic() + 20
        while arc.n < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        fams = scrape(port)
    finally:
        sampler.stop()
    last_report = [r for r in zpool_iostat.parse_text(iostat_text, interval=1.0, topology=topo)
                   if isinstance(r, Sample)][-9:]
    for s in last_report:
        if s.entity.kind == Kind.VDEV:
            assert value(fams, "zfsmon_vdev_write_ops_per_second", vdev=s.entity.name,
                         role=s.entity.role.value) == s.metrics["write_ops"]
    assert {lab["role"] for _n, lab, _v in fams["zfsmon_vdev_read_ops_per_second"][2]} == {"data", "log", "cache"}
    two_one = arcstats.parse_linux(snaps[1], 0.0)[0]
    assert value(fams, "zfsmon_arc_hits") == two_one.metrics["hits"]
    assert value(fams, "zfsmon_source_resets", source="arcstats") >= 1  # 2.3 -> 2.1 went backwards
    assert value(fams, "zfsmon_last_sample_timestamp_seconds", source="arcstats") > time.time() - 60


def test_cli_serves_a_recording_and_stops_after_duration(recording, capsys):
    port = free_loopback_port()
    rc: List[int] = []
    t = threading.Thread(target=lambda: rc.append(main(["exporter", "--from-recording", recording, "--listen",
                                                        f"127.0.0.1:{port}", "--duration", "4"])))
    t.start()
    fams = None
    deadline = time.monotonic() + 10
    while fams is None and time.monotonic() < deadline:
        try:
            fams = scrape(port)
        except OSError:
            time.sleep(0.1)
    t.join(15)
    assert rc == [0] and fams is not None
    assert value(fams, "zfsmon_vdev_write_ops_per_second", vdev="loop5", role="log") == _last(
        lambda r: r.entity.kind == Kind.VDEV and r.entity.name == "loop5").metrics["write_ops"]
    assert f"http://127.0.0.1:{port}/metrics" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--listen", "9134"], "expected ADDRESS:PORT"),
    (["--listen", "127.0.0.1:99999"], "expected ADDRESS:PORT"),
    (["--from-recording", "/nonexistent.zfsmon"], "no such recording"),
])
def test_cli_user_errors(argv, message, capsys):
    assert main(["exporter", *argv, "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_port_in_use_is_a_clear_error(recording, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["exporter", "--from-recording", recording, "--listen", f"127.0.0.1:{port}",
                     "--duration", "1"]) == 2
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def test_listen_parsing_and_loopback():
    assert cmd.parse_listen("127.0.0.1:9134") == ("127.0.0.1", 9134)
    assert cmd.parse_listen("[::1]:0") == ("::1", 0)
    assert cmd.parse_listen(":9134") == ("127.0.0.1", 9134)
    assert _serve.is_loopback("::1") and _serve.is_loopback("localhost") and not _serve.is_loopback("0.0.0.0")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
@example(":\u00b2")  # a superscript two is a digit to str.isdigit, not to int()
def test_any_listen_text_is_parsed_or_a_user_error(text):
    try:
        host, port = cmd.parse_listen(text)
    except UserError:
        return
    assert 0 <= port <= 65535 and host


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(Kind)), st.text(min_size=1, max_size=30))
def test_any_metric_name_becomes_a_valid_prometheus_name(kind, metric):
    pn = prom_name(kind, metric)
    assert NAME_RE.match(pn.name) and pn.name.startswith(f"zfsmon_{kind.value}_")


def test_an_unlisted_name_cannot_shadow_a_counters_samples():
    assert prom_name(Kind.ARC, "hits_total").name == "zfsmon_arc_hits_total_raw"


def test_a_real_openzfs_2_3_arcstats_scrape_passes_promtool(served):
    """Issue 16 item 12: a kernel with the persistent L2ARC's ``l2_log_blk_count`` (a gauge) made the scrape fail
    ``promtool check metrics`` (``_count`` is a histogram's or summary's series). The whole scrape of the OpenZFS
    2.3 guest's real arcstats passes, and the statistic is there under its renamed family."""
    promtool = shutil.which("promtool")
    need(promtool is not None, "promtool not installed (Debian package prometheus)")
    text = (TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats").read_text()
    raw = {p[0]: int(p[2]) for p in (line.split() for line in text.splitlines()) if len(p) == 3 and p[1] == "4"}
    assert "l2_log_blk_count" in raw  # the capture has the statistic this test is about
    samples = arcstats.parse_linux(text, 1_700_000_000.0)
    latest = LatestValues()
    latest.add(samples)
    port = served(latest)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        body = resp.read()
    res = subprocess.run([str(promtool), "check", "metrics"], input=body, capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stdout and not res.stderr, (res.stdout + res.stderr).decode()
    fams = families(body.decode())
    assert fams["zfsmon_l2arc_log_blk_number"] == ("gauge", prom_name(Kind.L2ARC, "log_blk_count").help, [
        ("zfsmon_l2arc_log_blk_number", {}, raw["l2_log_blk_count"])])
    assert b"log_blk_count" not in body
    # the rest of the arcstats came through too: a counter and a size, with the capture's values
    assert fams["zfsmon_arc_hits"][2] == [("zfsmon_arc_hits_total", {}, raw["hits"])]
    assert value(fams, "zfsmon_arc_size_bytes") == raw["size"]


# --------------------------------------------------------------------------------------------- unique names

OPENMETRICS = "application/openmetrics-text; version=1.0.0"

#: statistics a newer (or a hostile) kernel could add beside the real ones: each sanitises onto a name that is
#: already taken: the counter hits' family, the gauge size's family, and one another unlisted statistic has
CRAFTED = {"hits_": 7, "size_bytes": 9, "new-stat": 1, "new_stat": 2}


def _get(port: int, query: str = "", accept: str = "") -> bytes:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics{query}", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
        return resp.read()


def assert_valid_scrape(text_body: bytes, openmetrics_body: bytes) -> None:
    """What Prometheus' parsers demand of a scrape, in both formats: promtool (text format), prometheus_client's
    text and OpenMetrics parsers, and no family or series (name and labels) twice."""
    promtool = shutil.which("promtool")
    need(promtool is not None, "promtool not installed (Debian package prometheus)")
    res = subprocess.run([str(promtool), "check", "metrics"], input=text_body, capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stdout and not res.stderr, (res.stdout + res.stderr).decode()
    for fams in (list(text_string_to_metric_families(text_body.decode())),
                 list(om_families(openmetrics_body.decode()))):
        names = [f.name for f in fams]
        assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
        series = [(s.name, tuple(sorted(s.labels.items()))) for f in fams for s in f.samples]
        assert len(series) == len(set(series)), sorted({s for s in series if series.count(s) > 1})
        taken = [n for f in fams for n in {f.name} | {s.name for s in f.samples}]
        assert len(taken) == len(set(taken)), sorted({n for n in taken if taken.count(n) > 1})


def served_valid(served, latest: LatestValues) -> Tuple[Scrape, int]:
    """Serve ``latest`` and check its scrape in both formats (:func:`assert_valid_scrape`): the text scrape's
    families, and the port for more scrapes."""
    port = served(latest)
    text_body = _get(port)
    assert_valid_scrape(text_body, _get(port, accept=OPENMETRICS))
    return families(text_body.decode()), port


@pytest.mark.parametrize("capture,line,parse", [
    ("openzfs-2.3/kstat/arcstats", "{name} 4 {value}\n", arcstats.parse_linux),
    ("arcstats/freebsd-14.0-RC2__sysctl_kstat.zfs.misc.arcstats.txt", "kstat.zfs.misc.arcstats.{name}: {value}\n",
     arcstats.parse_freebsd),
], ids=["openzfs-2.3", "freebsd-14"])
def test_unlisted_names_that_sanitise_onto_a_taken_name_are_left_out_with_one_note(served, capsys, fixtures,
                                                                                   capture, line, parse):
    """Issue 41 item 10: ``hits_`` became a gauge ``zfsmon_arc_hits`` beside the counter family of that name,
    ``size_bytes`` a second ``zfsmon_arc_size_bytes`` series, ``new-stat`` and ``new_stat`` two series of one
    family: Prometheus' OpenMetrics parser refused the scrape. Now each name is there once, the real statistics
    keep their values, and each statistic left out is said once on stderr."""
    path = TEST_DATA / capture if capture.startswith("openzfs") else fixtures / capture
    real = path.read_text()
    text = real + "".join(line.format(name=n, value=v) for n, v in CRAFTED.items())
    samples = parse(text, 1_700_000_000.0)
    arc = next(s for s in samples if s.entity.kind == Kind.ARC)
    assert {n: arc.metrics[n] for n in CRAFTED} == CRAFTED  # the parser passes them on: the exporter decides
    hits, size = arc.metrics["hits"], arc.metrics["size"]
    latest = LatestValues()
    latest.add(samples)
    fams, port = served_valid(served, latest)
    text_body = _get(port)
    assert fams["zfsmon_arc_hits"] == ("counter", prom_name(Kind.ARC, "hits").help, [
        ("zfsmon_arc_hits_total", {}, hits)])
    assert fams["zfsmon_arc_size_bytes"] == ("gauge", prom_name(Kind.ARC, "size").help, [
        ("zfsmon_arc_size_bytes", {}, size)])
    assert fams["zfsmon_arc_new_stat"][2] == [("zfsmon_arc_new_stat", {}, 2.0)]  # the one spelled as its name
    assert b"hits_ " not in text_body and b"new-stat" not in text_body
    _get(port)  # a second scrape: no second note
    err = capsys.readouterr().err.splitlines()
    assert sorted(err) == [
        "zfsmon: note: arc statistic 'hits_' is not exported: its name would be zfsmon_arc_hits, and one of "
        "zfsmon's own families takes it (docs/exporter.md, Names)",
        "zfsmon: note: arc statistic 'new-stat' is not exported: its name would be zfsmon_arc_new_stat, and "
        "unlisted 'new_stat' has it (docs/exporter.md, Names)",
        "zfsmon: note: arc statistic 'size_bytes' is not exported: its name would be zfsmon_arc_size_bytes, and "
        "one of zfsmon's own families takes it (docs/exporter.md, Names)"], err


def test_no_unlisted_name_takes_a_name_of_zfsmons_own_families():
    """Every suffix Prometheus adds is covered: a counter's _total/_created, a histogram's series, the
    exporter's own families; what is left out does not depend on what else the host reports."""
    ents = [(Entity(Kind.ARC, "arc"), {"hits_": 1.0, "hits_created": 2.0, "size_bytes": 3.0, "fresh": 4.0}),
            (Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank"),
             {"latency_seconds": 5.0, "latency-seconds_count": 6.0})]
    fams, dropped = prom_families(ents)
    assert {(d.kind, d.metric) for d in dropped} == {(Kind.ARC, "hits_"), (Kind.ARC, "size_bytes"),
                                                     (Kind.VDEV, "latency_seconds")}
    assert sorted(f.name for f in fams) == ["zfsmon_arc_fresh", "zfsmon_arc_hits_created_raw",
                                            "zfsmon_vdev_latency_seconds_count_raw"]


def _renamed(text: str, old: str, new: str) -> str:
    """A second pool's capture: a copy of real text with the pool's name replaced (as a word)."""
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def _two_pools() -> List[Sample]:
    """Samples from real captures of two pools whose vdevs, leaves and traced entities have the same names:
    zfs-fuse ``zpool iostat -v`` and ``zpool status`` (mirror-0, leaf loop1, ... in both), OpenZFS 2.3's
    ``zpool iostat -vw`` histograms and objset kstats, the uprobe trace of lab pool zcap36 (whose daemon served a
    second pool on fds 10-15: its ``zpool status`` here is zcap36's renamed, on those fds' loop devices), the block
    devices (loop1 is a device and, in both pools, a leaf) and fio's two jobs of one name."""
    status = (rd.FUSE / "zpool_status_ziocap.txt").read_text()
    iostat = (rd.FUSE / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt").read_text()
    vw = (TEST_DATA / "openzfs-2.3" / "zpool-iostat-vw.txt").read_text()
    objsets = [(TEST_DATA / "openzfs-2.3" / "kstat" / f"zguest.objset-{i}").read_text() for i in ("0x36", "0x98")]
    traced = (TEST_DATA / "trace" / "fusevdevlat.zpool_status").read_text()
    on_fds = {"loop6": "loop5", "loop7": "loop0", "loop8": "loop1", "loop9": "loop2", "loop10": "loop3",
              "loop11": "loop4"}  # the second pool's layout is not in the capture: one with reads on mirror-0
    second = re.sub(r"\bloop\d+\b", lambda m: on_fds[m.group(0)], _renamed(traced, "zcap36", "zcap37"))
    fds = dict(line.split(None, 1) for line in (TEST_DATA / "trace" / "fusevdevlat.fds").read_text().splitlines())
    names = Names(topology=parse_status(traced + "\n" + second), fds=fds)
    recs: List[Record] = []
    for pool in ("ziocap", "zpool2"):
        topo = parse_status(_renamed(status, "ziocap", pool))
        recs += zpool_iostat.parse_text(_renamed(iostat, "ziocap", pool), interval=1.0, topology=topo)
    recs += zpool_health.parse_text(status + "\n" + _renamed(status, "ziocap", "zpool2"), "zpool status")
    for pool in ("zguest", "zother"):
        recs += zpool_iostat.parse_text(_renamed(vw, "zguest", pool), interval=1.0, first_since_boot=False)
        recs += [objset.parse_objset(_renamed(t, "zguest", pool), 1_795_332_275.0) for t in objsets]
    recs += trace_text((TEST_DATA / "trace" / "fusevdevlat.bt.out").read_text(), resolve=names)
    recs += diskstats.parse_diskstats((TEST_DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt")
                                      .read_text(), 1_795_332_275.0)
    recs += fio_json.parse_json((TEST_DATA / "fio" / "randread-numjobs2-status-json.json").read_text())
    return [r for r in recs if isinstance(r, Sample)]


def test_two_pools_with_the_same_vdev_leaf_and_traced_names_give_each_series_once(served):
    """Issue 41 item 10: trace entities were labelled by ``name`` alone, so mirror-0 traced in two pools gave one
    series twice and Prometheus' parsers refused the scrape. Every family is served from real captures of two
    pools with clashing names: each series once, every parser accepts it, and each entity's values are there
    under labels that tell the pools apart."""
    samples = _two_pools()
    keys = {s.entity.key for s in samples}
    for kind, name in ((Kind.VDEV, "mirror-0"), (Kind.LEAF, "loop1"), (Kind.TRACE, "mirror-0"),
                       (Kind.TRACE, "mirror-1"), (Kind.VDEV, "virtio-data0")):  # the same name in two pools or more
        assert len({k for k in keys if k.startswith(f"{kind.value}:") and k.endswith(f"/{name}")}) >= 2, name
    assert "device:loop1" in keys and "workload:fio:rr.0:read" in keys and "workload:fio:rr.1:read" in keys
    latest = LatestValues(leaf_histograms=True, histogram_queues=None)
    latest.add(samples)
    fams, _port = served_valid(served, latest)
    last = {}
    for s in samples:
        if not s.since_boot:
            last.setdefault(s.entity.key, {}).update(s.metrics)
    for pool, vdev in (("zcap36", "mirror-0"), ("zcap37", "mirror-0"), ("zcap37", "loop1")):
        m = {k: v for k, v in last[f"trace:{pool}/{vdev}"].items() if not is_histogram_metric(Kind.TRACE, k)}
        assert m
        for metric, v in m.items():
            pn = prom_name(Kind.TRACE, metric)
            assert value(fams, pn.name, pool=pool, name=vdev) == pytest.approx(v * pn.scale), metric
    assert all(set(lab) == set(LABELS[Kind.TRACE]) for f, fam in fams.items() if f.startswith("zfsmon_trace_")
               for _n, lab, _v in fam[2])
    for pool, op in (("zcap36", "read"), ("zcap37", "read"), ("zcap37", "write")):  # the traced histograms of both pools' mirror-0
        assert value(fams, "zfsmon_vdev_latency_seconds", pool=pool, vdev="mirror-0", queue="trace", op=op,
                     le="+Inf") > 0


def test_a_scaled_zpool_iostat_w_capture_gives_whole_bucket_counts(served):
    """Issue 41 item 10: OpenZFS 2.3's ``zpool iostat -vw`` without ``-p`` prints ``2.40K``, which reads as
    2457.6 I/Os; served as a bucket's value, Prometheus' OpenMetrics parser refused the scrape. A count of I/Os is
    whole: each reading's count is rounded, and every series of the histogram is an integer."""
    text = (TEST_DATA / "openzfs-2.3" / "zpool-iostat-vw.txt").read_text()
    samples = [r for r in zpool_iostat.parse_text(text, interval=1.0, first_since_boot=False) if isinstance(r, Sample)]
    raw = [v for s in samples if s.entity.key == "pool:zguest/zguest" for k, v in s.metrics.items()
           if k.startswith("lat_disk_wait_write_")]  # the capture's two reports
    assert any(v != round(v) for v in raw)  # the capture has the scaled counts this test is about
    latest = LatestValues()
    latest.add(samples)
    fams, _port = served_valid(served, latest)
    series = fams["zfsmon_pool_latency_seconds"][2]
    assert all(v == int(v) for n, _lab, v in series if not n.endswith("_sum"))
    assert value(fams, "zfsmon_pool_latency_seconds", pool="zguest", queue="disk_wait", op="write",
                 le="+Inf") == sum(round(v) for v in raw)


def test_a_recordings_entities_that_share_labels_are_served_once_with_one_note(served, capsys, tmp_path):
    """No source makes two entities of one kind with the same labels, but a recording can hold any: a second
    ``arc`` (host-wide, no labels), a pool entity not named as its pool, a block device with a pool, a workload
    with one. Each would repeat the other's series; the first (sorted by key) is served, the other said once."""
    arc = arcstats.parse_linux((TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats").read_text(), 1_700_000_000.0)
    real = [s for s in arc if s.entity.kind == Kind.ARC][0]
    crafted = [Sample(1_700_000_000.0, Entity(Kind.ARC, "arc2"), {"hits": 1.0, "size": 2.0}),
               Sample(1_700_000_000.0, Entity(Kind.POOL, "tank", "tank"), {"read_ops": 3.0}),
               Sample(1_700_000_000.0, Entity(Kind.POOL, "zzz", "tank"), {"read_ops": 4.0}),
               Sample(1_700_000_000.0, Entity(Kind.DEVICE, "sda"), {"reads": 5.0}),
               Sample(1_700_000_000.0, Entity(Kind.DEVICE, "sda", "tank"), {"reads": 6.0}),
               Sample(1_700_000_000.0, Entity(Kind.WORKLOAD, "pgbench", "tank"), {"tps": 7.0}),
               Sample(1_700_000_000.0, Entity(Kind.WORKLOAD, "pgbench"), {"tps": 8.0})]
    path = str(tmp_path / "crafted.zfsmon")
    with Recorder(path, {"host": "lab", "interval": "1"}) as rec:
        rec.write(arc + crafted)
    with Recording.open(path) as rec:
        fams, port = served_valid(served, latest_from_recording(rec))
    assert fams["zfsmon_arc_hits"][2] == [("zfsmon_arc_hits_total", {}, real.metrics["hits"])]  # arc < arc2
    assert value(fams, "zfsmon_pool_read_ops_per_second", pool="tank") == 3.0
    assert value(fams, "zfsmon_device_reads", device="sda") == 5.0
    assert value(fams, "zfsmon_workload_transactions_per_second", workload="pgbench") == 8.0
    _get(port)
    err = capsys.readouterr().err.splitlines()
    assert sorted(err) == [f"zfsmon: note: '{k}' is not exported: its labels are those of '{o}' (docs/exporter.md, "
                           f"Labels)" for k, o in (("arc:arc2", "arc:arc"), ("device:tank/sda", "device:sda"),
                                                   ("pool:tank/zzz", "pool:tank/tank"),
                                                   ("workload:tank/pgbench", "workload:pgbench"))], err


def test_name_filter_serves_those_families_and_an_unknown_name_an_empty_valid_scrape(served):
    """Issue 41 item 10: ``?name[]=`` (prometheus_client's filter) answered an empty body whatever was asked."""
    samples = arcstats.parse_linux((TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats").read_text(), 1.0)
    latest = LatestValues()
    latest.add(samples)
    port = served(latest)
    hits = next(s for s in samples if s.entity.kind == Kind.ARC).metrics["hits"]
    # a counter by its series' name, a gauge by its family's name; the unknown name is ignored
    query = "?name[]=zfsmon_arc_hits_total&name[]=zfsmon_arc_size_bytes&name[]=zfsmon_nothing_such"
    text_body, om_body = _get(port, query), _get(port, query, OPENMETRICS)
    assert_valid_scrape(text_body, om_body)
    assert sorted(families(text_body.decode())) == ["zfsmon_arc_hits", "zfsmon_arc_size_bytes"]
    assert sorted(f.name for f in om_families(om_body.decode())) == ["zfsmon_arc_hits", "zfsmon_arc_size_bytes"]
    assert value(families(text_body.decode()), "zfsmon_arc_hits") == hits
    assert families(_get(port, "?name[]=zfsmon_arc_hits").decode())["zfsmon_arc_hits"][2] == [
        ("zfsmon_arc_hits_total", {}, hits)]  # the family's own name works too
    empty_text, empty_om = _get(port, "?name[]=zfsmon_nothing_such"), _get(port, "?name[]=x", OPENMETRICS)
    assert empty_text == b"" and empty_om == b"# EOF\n"
    assert_valid_scrape(empty_text, empty_om)
    assert "zfsmon_arc_hits" in families(_get(port, "?other=1").decode())  # other parameters: the whole scrape


#: vdev names no parser refuses (whitespace-free) that a label value must carry as they are: a quote and a
#: backslash (the exposition format escapes both), a terminal escape, markup and a formula (data to Prometheus)
HOSTILE_LABELS = {"loop1": 'q"uo\\te', "loop2": "=1+1", "loop3": "\x1b]0;t\x07[/]", "loop4": "$\\foo$"}


def test_hostile_names_are_label_values_as_they_are_in_a_valid_scrape(served, tmp_path):
    """Names from the input reach Prometheus only as label values: every parser accepts the scrape, and each value
    reads back exactly as the name was (escaped on the wire, never cut or merged)."""
    fuse = TEST_DATA / "zfsfuse"
    status, iostat = (fuse / "zpool_status_ziocap.txt").read_text(), (
        fuse / "zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt").read_text()
    for name, bad in HOSTILE_LABELS.items():
        status, iostat = status.replace(name, bad), iostat.replace(name, bad)
    records = zpool_iostat.parse_text(iostat, interval=1.0, start_ts=1_800_000_000.0, topology=parse_status(status))
    path = str(tmp_path / "hostile.zfsmon")
    with Recorder(path, {"host": "h", "interval": "1"}) as rec:
        rec.write(records)
    with Recording.open(path) as rec:
        fams, _port = served_valid(served, latest_from_recording(rec))
    shown = {v for _t, _d, samples in fams.values() for _n, labels, _v in samples for v in labels.values()}
    assert set(HOSTILE_LABELS.values()) <= shown
