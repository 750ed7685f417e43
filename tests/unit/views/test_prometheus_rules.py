"""The shipped alert rules: `promtool check rules`, and `promtool test rules` with a firing and a quiet case per
alert (series written here, expectations derived from the rules file's own labels and annotations).
Every zfsmon_* name the rules use is one the exporter serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import yaml

from tests.conftest import REPO, need
from zfsmon import metrics
from zfsmon.views.prometheus import PREFIX, prom_name

RULES = REPO / "zfsmon" / "share" / "prometheus" / "zfsmon-rules.yml"

H = 'instance="h1"'
V = 'instance="h1", pool="tank", vdev="mirror-0", role="data"'
LEAF = 'instance="h1", pool="tank", device="sda", role="data", parent="mirror-0"'


def _hist(labels: str, fast: str, slow: str) -> List[Dict[str, str]]:
    """Latency buckets (0.001 s, 0.1 s, +Inf) of one vdev: ``fast``/``slow`` are the 0.001 and 0.1 bucket series."""
    return [{"series": f'zfsmon_vdev_latency_seconds_bucket{{{labels}, queue="disk_wait", op="read", le="{le}"}}',
             "values": v} for le, v in (("0.001", fast), ("0.1", slow), ("+Inf", slow))]


# alert -> (eval time, labels of the firing alert, firing input series, quiet input series)
Series = List[Dict[str, str]]
CASES: Dict[str, Tuple[str, Dict[str, str], Series, Series]] = {
    "ZfsmonL2ARCHitRatioCollapse": ("70m", {"instance": "h1"}, [
        {"series": f"zfsmon_l2arc_hits_total{{{H}}}", "values": "0+800x40 32000+100x30"},
        {"series": f"zfsmon_l2arc_misses_total{{{H}}}", "values": "0+200x40 8000+900x30"},
    ], [
        {"series": f"zfsmon_l2arc_hits_total{{{H}}}", "values": "0+800x70"},
        {"series": f"zfsmon_l2arc_misses_total{{{H}}}", "values": "0+200x70"},
    ]),
    "ZfsmonARCHitRatioDrop": ("95m", {"instance": "h1"}, [
        {"series": f"zfsmon_arc_hits_total{{{H}}}", "values": "0+9000x60 540000+5000x40"},
        {"series": f"zfsmon_arc_misses_total{{{H}}}", "values": "0+1000x60 60000+5000x40"},
    ], [
        {"series": f"zfsmon_arc_hits_total{{{H}}}", "values": "0+9000x100"},
        {"series": f"zfsmon_arc_misses_total{{{H}}}", "values": "0+1000x100"},
    ]),
    "ZfsmonVdevLatencyGrowing": ("80m", {"instance": "h1", "pool": "tank", "vdev": "mirror-0", "role": "data",
                                         "op": "read"},
                                 _hist(V, "0+100x60 6000+0x30", "0+100x90"),
                                 _hist(V, "0+100x90", "0+100x90")),
    "ZfsmonVdevQueueGrowing": ("55m", {"instance": "h1", "pool": "tank", "vdev": "mirror-0", "role": "data"}, [
        {"series": f"zfsmon_vdev_syncq_read_pend{{{V}}}", "values": "0+1x60"},
        *({"series": f"zfsmon_vdev_{q}_pend{{{V}}}", "values": "0x60"}
          for q in ("syncq_write", "asyncq_read", "asyncq_write")),
    ], [
        {"series": f"zfsmon_vdev_syncq_read_pend{{{V}}}", "values": "40x60"},
        *({"series": f"zfsmon_vdev_{q}_pend{{{V}}}", "values": "0x60"}
          for q in ("syncq_write", "asyncq_read", "asyncq_write")),
    ]),
    "ZfsmonSLOGSaturated": ("15m", {"instance": "h1", "pool": "tank", "vdev": "sdz"}, [
        {"series": 'zfsmon_vdev_syncq_write_pend{instance="h1", pool="tank", vdev="sdz", role="log"}',
         "values": "20x20"},
    ], [
        {"series": 'zfsmon_vdev_syncq_write_pend{instance="h1", pool="tank", vdev="sdz", role="log"}',
         "values": "2x20"},
    ]),
    "ZfsmonGooseEgg": ("20m", {"instance": "h1", "pool": "tank", "device": "sda", "role": "data",
                               "parent": "mirror-0"}, [
        {"series": f"zfsmon_leaf_read_ops_per_second{{{LEAF}}}", "values": "50x25"},
        {"series": f"zfsmon_leaf_write_ops_per_second{{{LEAF}}}", "values": "0x25"},
        {"series": 'zfsmon_device_reads_total{instance="h1", device="sda"}', "values": "100x25"},
        {"series": 'zfsmon_device_writes_total{instance="h1", device="sda"}', "values": "100x25"},
    ], [
        {"series": f"zfsmon_leaf_read_ops_per_second{{{LEAF}}}", "values": "50x25"},
        {"series": f"zfsmon_leaf_write_ops_per_second{{{LEAF}}}", "values": "0x25"},
        {"series": 'zfsmon_device_reads_total{instance="h1", device="sda"}', "values": "0+3000x25"},
        {"series": 'zfsmon_device_writes_total{instance="h1", device="sda"}', "values": "100x25"},
    ]),
    "ZfsmonSourceFailing": ("10m", {"instance": "h1", "source": "zpool"}, [
        {"series": 'zfsmon_source_errors_total{instance="h1", source="zpool"}', "values": "0x5 1+1x10"},
    ], [
        {"series": 'zfsmon_source_errors_total{instance="h1", source="zpool"}', "values": "3x15"},
    ]),
    "ZfsmonSourceQuiet": ("10m", {"instance": "h1", "source": "zpool"}, [
        {"series": 'zfsmon_last_sample_timestamp_seconds{instance="h1", source="zpool"}', "values": "0x15"},
    ], [
        {"series": 'zfsmon_last_sample_timestamp_seconds{instance="h1", source="zpool"}', "values": "0+60x15"},
    ]),
    "ZfsmonCounterReset": ("10m", {"instance": "h1", "source": "arcstats"}, [
        {"series": 'zfsmon_source_resets_total{instance="h1", source="arcstats"}', "values": "0x5 1x10"},
    ], [
        {"series": 'zfsmon_source_resets_total{instance="h1", source="arcstats"}', "values": "1x15"},
    ]),
    "ZfsmonExporterDown": ("5m", {"instance": "h1", "job": "zfsmon"}, [
        {"series": 'up{instance="h1", job="zfsmon"}', "values": "0x10"},
    ], [
        {"series": 'up{instance="h1", job="zfsmon"}', "values": "1x10"},
    ]),
    "ZfsmonPoolDegradedNotResilvering": ("10m", {"instance": "h1", "pool": "tank"}, [
        {"series": 'zfsmon_pool_online{instance="h1", pool="tank"}', "values": "0x15"},
        {"series": 'zfsmon_pool_resilvering{instance="h1", pool="tank"}', "values": "0x15"},
    ], [
        {"series": 'zfsmon_pool_online{instance="h1", pool="tank"}', "values": "0x15"},
        {"series": 'zfsmon_pool_resilvering{instance="h1", pool="tank"}', "values": "1x15"},
    ]),
    "ZfsmonDeviceErrors": ("10m", {"instance": "h1", "pool": "tank", "device": "sda", "role": "data"}, [
        # read errors, then `zpool clear` (back to 0): an increase, and the reset itself is no error
        {"series": f"zfsmon_leaf_read_errors_total{{{LEAF}}}", "values": "0x5 40+40x3 0x3"},
        {"series": f"zfsmon_leaf_write_errors_total{{{LEAF}}}", "values": "0x12"},
        {"series": f"zfsmon_leaf_checksum_errors_total{{{LEAF}}}", "values": "0x12"},
    ], [
        # errors from before the window, then cleared: nothing new
        {"series": f"zfsmon_leaf_read_errors_total{{{LEAF}}}", "values": "300x2 0x12"},
        {"series": f"zfsmon_leaf_write_errors_total{{{LEAF}}}", "values": "0x14"},
        {"series": f"zfsmon_leaf_checksum_errors_total{{{LEAF}}}", "values": "5x2 0x12"},
    ]),
    "ZfsmonResilverStalled": ("65m", {"instance": "h1", "pool": "tank"}, [
        {"series": 'zfsmon_pool_resilvering{instance="h1", pool="tank"}', "values": "1x70"},
        {"series": 'zfsmon_pool_scan_issued_bytes{instance="h1", pool="tank"}', "values": "1000000000x70"},
    ], [
        {"series": 'zfsmon_pool_resilvering{instance="h1", pool="tank"}', "values": "1x70"},
        {"series": 'zfsmon_pool_scan_issued_bytes{instance="h1", pool="tank"}', "values": "0+1000000x70"},
    ]),
    "ZfsmonSlowIOs": ("10m", {"instance": "h1", "pool": "tank", "device": "sdz", "role": "cache"}, [
        # a cache device is a top-level vdev of one disk: its count is the vdev's
        {"series": 'zfsmon_vdev_slow_ios_total{instance="h1", pool="tank", vdev="sdz", role="cache"}',
         "values": "0x5 1+1x10"},
        {"series": f"zfsmon_leaf_slow_ios_total{{{LEAF}}}", "values": "4x15"},
    ], [
        {"series": 'zfsmon_vdev_slow_ios_total{instance="h1", pool="tank", vdev="sdz", role="cache"}',
         "values": "4x15"},
        {"series": f"zfsmon_leaf_slow_ios_total{{{LEAF}}}", "values": "4x15"},
    ]),
    "ZfsmonARCMemoryThrottling": ("10m", {"instance": "h1"}, [
        {"series": f"zfsmon_arc_memory_throttle_total{{{H}}}", "values": "0x5 1+1x10"},
    ], [
        {"series": f"zfsmon_arc_memory_throttle_total{{{H}}}", "values": "7x15"},
    ]),
    "ZfsmonTXGSyncSlow": ("20m", {"instance": "h1", "pool": "tank"}, [
        {"series": 'zfsmon_pool_txg_sync_time_seconds_total{instance="h1", pool="tank"}', "values": "0+60x30"},
        {"series": 'zfsmon_pool_txgs_synced_total{instance="h1", pool="tank"}', "values": "0+6x30"},
    ], [
        {"series": 'zfsmon_pool_txg_sync_time_seconds_total{instance="h1", pool="tank"}', "values": "0+12x30"},
        {"series": 'zfsmon_pool_txgs_synced_total{instance="h1", pool="tank"}', "values": "0+6x30"},
    ]),
    "ZfsmonPoolFullIn24h": ("45m", {"instance": "h1", "pool": "tank"}, [
        {"series": 'zfsmon_pool_free_bytes{instance="h1", pool="tank"}', "values": "100000000000-100000000x60"},
        {"series": 'zfsmon_pool_alloc_bytes{instance="h1", pool="tank"}', "values": "900000000000+100000000x60"},
    ], [
        {"series": 'zfsmon_pool_free_bytes{instance="h1", pool="tank"}', "values": "100000000000x60"},
        {"series": 'zfsmon_pool_alloc_bytes{instance="h1", pool="tank"}', "values": "900000000000x60"},
    ]),
}


def _rules() -> Dict[str, dict]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def _render(template: str, labels: Dict[str, str]) -> str:
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda mo: labels.get(mo.group(1), ""), template)


def _promtool() -> str:
    path = shutil.which("promtool")
    need(path is not None, "promtool not installed (Debian package prometheus: scripts/install-deps.sh)")
    return str(path)


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    assert set(_rules()) == set(CASES)


def test_promtool_check_rules() -> None:
    res = subprocess.run([_promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout and "WARNING" not in (res.stdout + res.stderr).upper()


@pytest.mark.parametrize("alert", sorted(CASES))
def test_promtool_test_rules(alert: str, tmp_path: Path) -> None:
    rule = _rules()[alert]
    at, labels, firing, quiet = CASES[alert]
    labels = {**labels, **rule.get("labels", {})}
    annotations = {k: _render(v, labels) for k, v in rule.get("annotations", {}).items()}
    tests = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [
        {"name": f"{alert} fires", "interval": "1m", "input_series": firing,
         "alert_rule_test": [{"eval_time": at, "alertname": alert,
                              "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}]}]},
        {"name": f"{alert} stays quiet", "interval": "1m", "input_series": quiet,
         "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": []}]},
    ]}
    path = tmp_path / "test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    res = subprocess.run([_promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def exposed_names() -> set:
    """Every family name the exporter can serve (table rows, latency histograms' series, its own families)."""
    names = {prom_name(k, n).name for (k, n) in metrics.TABLE}
    for kind in ("pool", "vdev", "leaf"):
        names |= {f"{PREFIX}_{kind}_latency_seconds_{s}" for s in ("bucket", "sum", "count")}
    names |= {f"{PREFIX}_{n}" for n in ("build_info", "source_errors_total", "source_resets_total",
                                         "last_sample_timestamp_seconds", "source_up", "scrape_duration_seconds")}
    return names


def test_rules_use_only_names_the_exporter_serves() -> None:
    used = set(re.findall(r"\bzfsmon_[a-z0-9_]+", RULES.read_text()))
    assert used and used <= exposed_names(), sorted(used - exposed_names())
