"""The goose-egg join in PromQL on a pool named by /dev/disk/by-id: the block devices' ``leaf`` label.

On the OpenZFS 2.3 guest (tests/data/openzfs-2.3, see its PROVENANCE.md) the pool's leaves are
``virtio-data0``..``3`` (``zpool status``), the kernel's devices ``vdb``..``vdg`` (``block-devs.txt``, the guest's
``/sys/class/block``) and ``zpool status -L`` (symbolic links resolved) names which is which. Built from those
captures: a ``/sys/class/block`` of the same shape and the by-id links as the guest's udev made them; the guest's
own ``/proc/diskstats`` counters (its exporter's scrape, ``run2/scrape.2``, written back in the kernel's layout:
sectors and milliseconds) go through the diskstats collector, which names each device's leaf with
:func:`resolve_leaves` (the same resolution the trace resolver uses), and the exporter renders them. Then the
rule ``ZfsmonGooseEgg`` and the dashboard's goose-egg query are evaluated by ``promtool test rules`` on that
output beside the guest's real leaf series: the join finds each data leaf's block device; without the label (the
old join on the kernel name) it found none.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO, TEST_DATA, need
from tests.unit.views.test_prometheus_rules import _render
from zfsmon.model import Kind, Sample
from zfsmon.names import whole_disk
from zfsmon.sources.devices import diskstats
from zfsmon.sources.zpool.status import parse_status
from zfsmon.views import grafana
from zfsmon.views.prometheus import LatestValues, ZfsmonCollector, prom_name

GUEST = TEST_DATA / "openzfs-2.3"
SCRAPE = GUEST / "run2" / "scrape.2"
RULES = REPO / "zfsmon" / "share" / "prometheus" / "zfsmon-rules.yml"
INSTANCE = "zfsmon-guest:9134"
#: what the captures say: zpool status's name -> the kernel's (zpool status -L)
GUEST_MAP = {"vdb": "virtio-data0", "vdc": "virtio-data1", "vdd": "virtio-data2", "vde": "virtio-data3",
             "vdf": "virtio-log0", "vdg": "virtio-cache0"}
DATA_LEAVES = ("virtio-data0", "virtio-data1", "virtio-data2", "virtio-data3")


def _leaf_to_kernel() -> Dict[str, str]:
    """zpool status and zpool status -L list the same tree in the same order: by-id name -> kernel name."""
    named = parse_status((GUEST / "zpool-status.txt").read_text())
    real = parse_status((GUEST / "bcc" / "zpool-status-L.txt").read_text())
    a, b = list(named.entities.values()), list(real.entities.values())
    assert [(e.kind, e.role, e.parent) for e in a] == [(e.kind, e.role, e.parent) for e in b]
    return {x.name: y.name for x, y in zip(a, b) if x.name != y.name}


def _block_devs() -> Dict[str, str]:
    """The guest's /sys/class/block: kernel name -> MAJ:MIN."""
    return dict(ln.split() for ln in (GUEST / "bcc" / "block-devs.txt").read_text().splitlines() if ln.strip())


def _guest_sysfs(root: Path) -> str:
    """A /sys/class/block of the guest's shape: each disk a directory, each partition inside it with ``partition``."""
    devs = _block_devs()
    cls = root / "class_block"
    cls.mkdir()
    for name in devs:
        disk = whole_disk(name)
        entry = root / "devices" / disk / name if disk in devs else root / "devices" / name
        entry.mkdir(parents=True, exist_ok=True)
        if disk in devs:
            (entry / "partition").write_text(name[len(disk):] + "\n")
        (cls / name).symlink_to(entry)
    return str(cls)


def _resolver(root: Path):
    """resolve_leaves on the guest's by-id links (a directory here, /dev/disk/by-id there)."""
    sysblk = _guest_sysfs(root)
    byid = root / "by-id"
    byid.mkdir()
    for leaf, kernel in _leaf_to_kernel().items():
        (byid / leaf).symlink_to(f"/dev/{kernel}")  # as udev makes them (../../vdb)
        (byid / f"{leaf}-part1").symlink_to(f"/dev/{kernel}1")

    def resolve(leaves):
        paths = {leaf: str(byid / leaf.rsplit("/", 1)[-1]) for leaf in leaves}  # -P names are by-id paths
        got = diskstats.resolve_leaves(list(paths.values()), sysblk)
        return {leaf: got[p] for leaf, p in paths.items() if p in got}

    return resolve


def _guest_diskstats() -> str:
    """The guest's /proc/diskstats at the scrape, from the scrape's zfsmon_device_* counters (17 fields)."""
    values: Dict[str, Dict[str, float]] = {}
    for fam in text_string_to_metric_families(SCRAPE.read_text()):
        for s in fam.samples:
            if s.name.startswith("zfsmon_device_"):
                values.setdefault(s.labels["device"], {})[s.name] = s.value
    lines = []
    for name, majmin in _block_devs().items():
        row = []
        for metric, scale in diskstats._FIELDS:
            pn = prom_name(Kind.DEVICE, metric)
            row.append(str(round(values[name][pn.name] / pn.scale / scale)))
        lines.append(f"{majmin.replace(':', ' ')} {name} {' '.join(row)}")
    return "\n".join(lines) + "\n"


@pytest.fixture()
def exporter_devices(tmp_path) -> List:
    """The device families the exporter serves for the guest's diskstats, leaves named from its topology."""
    path = tmp_path / "diskstats"
    path.write_text(_guest_diskstats())
    topo = parse_status((GUEST / "zpool-status.txt").read_text())
    col = diskstats.DiskstatsCollector(path=str(path), clock=lambda: 1000.0, topology=lambda: topo,
                                       resolve=_resolver(tmp_path))
    records = col.poll()
    assert all(isinstance(r, Sample) for r in records) and len(records) == len(_block_devs())
    latest = LatestValues()
    latest.add(records)
    reg = CollectorRegistry()
    reg.register(ZfsmonCollector(latest))
    return [f for f in text_string_to_metric_families(generate_latest(reg).decode())
            if f.name.startswith("zfsmon_device_")]


def test_the_device_series_name_the_leaf_they_are(exporter_devices) -> None:
    assert _leaf_to_kernel() == {v: k for k, v in GUEST_MAP.items()}
    scraped = {(s.name, s.labels["device"]): s.value for f in text_string_to_metric_families(SCRAPE.read_text())
               for s in f.samples if s.name.startswith("zfsmon_device_")}
    got = {(s.name, s.labels["device"]): s.value for f in exporter_devices for s in f.samples}
    assert got == pytest.approx(scraped)  # the same families, devices and values as the guest's exporter served
    assert len(exporter_devices) == 17
    for fam in exporter_devices:
        leaf = {s.labels["device"]: s.labels["leaf"] for s in fam.samples}
        # the whole disk is the leaf (zpool status -L): its counters include the partition's (vdb1) and vdb9
        assert {d: v for d, v in leaf.items() if v} == GUEST_MAP, fam.name
        assert leaf["vdb1"] == leaf["vda"] == leaf["loop0"] == ""


def test_a_partition_leaf_names_the_partition(tmp_path) -> None:
    """zpool status -P lists the by-id partitions ZFS opened: each names its partition (vdb1), not also the disk
    (one device per leaf, so a join on it has no duplicates); the whole-disk names name the disks."""
    resolve = _resolver(tmp_path)
    by_path = diskstats.leaf_of_device(parse_status((GUEST / "zpool-status-P.txt").read_text()), resolve)
    assert by_path == {f"{k}1": f"/dev/disk/by-id/{v}-part1" for k, v in GUEST_MAP.items()}
    assert resolve(["/dev/disk/by-id/virtio-data0-part1"]) == {"/dev/disk/by-id/virtio-data0-part1": ["vdb1", "vdb"]}
    assert diskstats.leaf_of_device(parse_status((GUEST / "zpool-status.txt").read_text()), resolve) == GUEST_MAP
    # a topology whose names resolve to nothing (another host's capture): no device is named
    assert diskstats.leaf_of_device(parse_status((GUEST / "zpool-status.txt").read_text()), lambda leaves: {}) == {}


def _series(fams, names, extra: Dict[str, str]) -> List[Dict[str, str]]:
    """promtool input series: every sample of the named families, constant over the test (its real value)."""
    out = []
    for fam in fams:
        for s in fam.samples:
            if s.name in names:
                labels = {k: v for k, v in {**s.labels, **extra}.items() if v}  # Prometheus drops empty labels
                text = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                out.append({"series": f"{s.name}{{{text}}}", "values": f"{s.value!r}x20"})
    return out


def _leaf_series() -> List[Dict[str, str]]:
    fams = list(text_string_to_metric_families(SCRAPE.read_text()))
    return _series(fams, {"zfsmon_leaf_read_ops_per_second", "zfsmon_leaf_write_ops_per_second"},
                   {"instance": INSTANCE})


def _goose_rule() -> dict:
    doc = yaml.safe_load(RULES.read_text())
    (rule,) = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == "ZfsmonGooseEgg"]
    return rule


def _promtool_expr_tests(tmp_path: Path, series, cases) -> None:
    need(shutil.which("promtool") is not None, "promtool not installed (Debian package prometheus)")
    tests = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [
        {"name": "goose-egg join", "interval": "1m", "input_series": series,
         "promql_expr_test": [{"expr": expr, "eval_time": "10m", "exp_samples": exp} for expr, exp in cases]}]}
    path = tmp_path / "test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    res = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def _one_sub(expr: str, old: str, new: str) -> str:
    assert expr.count(old) == 1, (old, expr)
    return expr.replace(old, new)


def test_the_goose_egg_rule_joins_leaf_and_device(exporter_devices, tmp_path) -> None:
    """The rule's expression on the exporter's output. The capture's leaves are idle at the scrape (0 ops/s) and its
    counters constant here (rate 0), so the rule's thresholds are lowered to >= 0 to see each side of the join."""
    series = _leaf_series() + _series(exporter_devices, {"zfsmon_device_reads_total", "zfsmon_device_writes_total"},
                                      {"instance": INSTANCE})
    rule = _goose_rule()["expr"]
    busy = _one_sub(rule, ") > 5", ") >= 0")  # every leaf counts as busy
    leaves = [{"labels": f'{{device="{d}", instance="{INSTANCE}", parent="mirror-{i // 2}", pool="zguest", '
                         f'role="data"}}', "value": 0} for i, d in enumerate(DATA_LEAVES)]
    panel = next(t.expr for p in grafana.panels() if p.title.startswith("Goose egg") for t in p.targets
                 if "device_reads" in t.expr)
    cases = [
        (rule, []),  # the real alert: idle leaves, no goose egg
        # the 'and on (instance, device) ...reads_total' side finds every leaf's block device: all four are eggs
        # while their devices' rate is 0 ...
        (busy, leaves),
        # ... and the 'unless' side finds them too: with rate >= 0 counting as I/O, none is
        (_one_sub(busy, ")) > 0", ")) >= 0"), []),
        # the join as it was, on the kernel's name: no leaf has a device (the bug this label fixes)
        ("(zfsmon_leaf_read_ops_per_second + zfsmon_leaf_write_ops_per_second) >= 0 "
         "and on (instance, device) zfsmon_device_reads_total", []),
        # the dashboard's device line: one per data leaf, under the leaf's name
        (grafana.fill(panel), [{"labels": f'{{device="{d}", instance="{INSTANCE}"}}', "value": 0}
                               for d in DATA_LEAVES]),
    ]
    _promtool_expr_tests(tmp_path, series, cases)


def test_the_goose_egg_alert_fires_through_the_leaf_label(tmp_path) -> None:
    """Firing and quiet by the alert's own rule: a busy leaf whose labelled device stays still fires (for 10m); the
    same with the device counting does not, and a device of the same kernel name family without the label (vdb1)
    counting does not hide it."""
    leaf = 'instance="h1", pool="zguest", device="virtio-data0", role="data", parent="mirror-0"'
    common = [{"series": f"zfsmon_leaf_read_ops_per_second{{{leaf}}}", "values": "50x25"},
              {"series": f"zfsmon_leaf_write_ops_per_second{{{leaf}}}", "values": "0x25"},
              {"series": 'zfsmon_device_reads_total{instance="h1", device="vdb1"}', "values": "0+3000x25"},
              {"series": 'zfsmon_device_writes_total{instance="h1", device="vdb1"}', "values": "0+3000x25"},
              {"series": 'zfsmon_device_writes_total{instance="h1", device="vdb", leaf="virtio-data0"}',
               "values": "7x25"}]
    still = {"series": 'zfsmon_device_reads_total{instance="h1", device="vdb", leaf="virtio-data0"}',
             "values": "100x25"}
    moving = {**still, "values": "100+3000x25"}
    rule = _goose_rule()
    exp = {**rule["labels"], "instance": "h1", "pool": "zguest", "device": "virtio-data0", "role": "data",
           "parent": "mirror-0"}
    annotations = {k: _render(v, exp) for k, v in rule["annotations"].items()}
    assert annotations["summary"].startswith("virtio-data0 on h1: ")
    need(shutil.which("promtool") is not None, "promtool not installed (Debian package prometheus)")
    tests = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [
        {"name": "fires", "interval": "1m", "input_series": [*common, still],
         "alert_rule_test": [{"eval_time": "20m", "alertname": "ZfsmonGooseEgg", "exp_alerts": [{
             "exp_labels": exp, "exp_annotations": annotations}]}]},
        {"name": "quiet", "interval": "1m", "input_series": [*common, moving],
         "alert_rule_test": [{"eval_time": "20m", "alertname": "ZfsmonGooseEgg", "exp_alerts": []}]},
    ]}
    path = tmp_path / "test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    res = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_the_collector_asks_zpool_status_again_only_when_needed(tmp_path) -> None:
    """At start, when the set of block devices changes, and every LEAF_REFRESH_S; a failing zpool status keeps the
    names known before (none at start; the zpool source reports it) and the counters still flow."""
    path = tmp_path / "diskstats"
    text = _guest_diskstats()
    path.write_text(text)
    topo = parse_status((GUEST / "zpool-status.txt").read_text())
    calls: List[float] = []
    now = [1000.0]
    fail = [False]

    def topology():
        calls.append(now[0])
        if fail[0]:
            raise OSError("`zpool status` failed: no pools available")
        return topo

    col = diskstats.DiskstatsCollector(path=str(path), clock=lambda: now[0], topology=topology,
                                       resolve=_resolver(tmp_path))

    def leaves() -> Dict[str, str]:
        recs = col.poll()
        assert all(isinstance(r, Sample) for r in recs)
        return {r.entity.name: r.entity.parent for r in recs if r.entity.parent}

    fail[0] = True
    assert leaves() == {} and calls == [1000.0]  # zpool status failed at start: no names, the samples still come
    fail[0] = False
    now[0] += 1
    assert leaves() == {} and len(calls) == 1  # same devices, within the refresh time: not asked
    now[0] += diskstats.LEAF_REFRESH_S
    assert leaves() == GUEST_MAP and len(calls) == 2
    now[0] += diskstats.LEAF_REFRESH_S - 1
    assert leaves() == GUEST_MAP and len(calls) == 2
    path.write_text("\n".join(ln for ln in text.splitlines() if " vdg" not in ln) + "\n")  # vdg removed
    fail[0] = True
    assert leaves() == {k: v for k, v in GUEST_MAP.items() if k != "vdg"} and len(calls) == 3  # asked; kept
