"""The Grafana dashboard for the exporter, generated from the metrics table so it cannot go stale.

Every metric name in a query is spelled by :func:`zfsmon.views.prometheus.prom_name` from a row of the
metrics table (:func:`m`): renaming or dropping a row breaks the generation (a KeyError), not the dashboard
in production. The JSON is Grafana's classic dashboard model (``schemaVersion``, ``panels`` with
``gridPos``/``targets``/``fieldConfig``, ``templating.list``), importable with Grafana's "Import dashboard"
or provisioned from a file; panels use a ``datasource`` variable, so no datasource uid is baked in.

``python3 -m zfsmon.views.grafana`` prints it; ``zfsmon/share/grafana/zfsmon.json`` and
``docs/grafana/zfsmon.json`` are that output (a test keeps them equal). :func:`panel_queries` gives the
PromQL of every panel with the variables filled in, which the lab test evaluates against a real Prometheus.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from zfsmon import metrics
from zfsmon.model import Kind
from zfsmon.views.prometheus import PREFIX, TRACE_QUEUE, prom_name

UID = "zfsmon-overview"
TITLE = "zfsmon: ZFS pools, vdevs, ARC/L2ARC, SLOG and the workload"
#: the selector every query carries: the host (Prometheus ``instance``) and pool variables
HOST = 'instance=~"$host"'
POOL = 'pool=~"$pool"'
RI = "$__rate_interval"


def m(kind: Kind, metric: str) -> str:
    """The exposed name of a metrics-table row; KeyError if the table has no such row (generation fails)."""
    if metrics.lookup(kind, metric) is None:
        raise KeyError(f"the dashboard uses {kind.value}.{metric}, which the metrics table no longer has")
    return prom_name(kind, metric).name


def unit_of(kind: Kind, metric: str) -> str:
    """Grafana's unit id for a table row's unit, once converted to base units by the exporter."""
    spec = metrics.lookup(kind, metric)
    assert spec is not None
    return {"B": "bytes", "B/s": "Bps", "ns": "s", "ms": "s", "s": "s", "%": "percentunit",
            "ops/s": "ops"}.get(spec.unit, "short")


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    targets: Tuple[Target, ...]
    unit: str = "short"
    description: str = ""
    width: int = 12


def _ratio(hits: str, misses: str, sel: str) -> str:
    h, mi = f"rate({hits}{{{sel}}}[{RI}])", f"rate({misses}{{{sel}}}[{RI}])"
    return f"sum by (instance) ({h}) / clamp_min(sum by (instance) ({h}) + sum by (instance) ({mi}), 1e-9)"


def _zero_if_none(expr: str) -> str:
    """Per host, the sum of ``expr``, or 0 for a host whose exporter is up but has none (no error yet)."""
    return f"sum by (instance) ({expr}) or on (instance) 0 * {PREFIX}_build_info{{{HOST}}}"


def as_leaf(expr: str) -> str:
    """Block-device series renamed to the zpool leaf each one is (its ``leaf`` label, served by the exporter),
    so ``on (instance, device)`` joins them with leaf series; a device without one keeps its own name."""
    return f'label_replace({expr}, "device", "$1", "leaf", "(.+)")'


def latency_quantile(q: float, op: str) -> str:
    """Per-vdev latency quantile: zpool iostat -w's disk_wait where the platform has it, else the trace's."""
    bucket = f"{PREFIX}_vdev_latency_seconds_bucket"
    parts = [f'histogram_quantile({q}, sum by (instance, pool, vdev, role, le) (rate({bucket}{{{HOST}, {POOL}, '
             f'queue="{queue}", op="{op}"}}[{RI}])))' for queue in ("disk_wait", TRACE_QUEUE)]
    return " or ".join(parts)


def panels() -> List[Panel]:
    V, L, A, L2, D, W = Kind.VDEV, Kind.LEAF, Kind.ARC, Kind.L2ARC, Kind.DEVICE, Kind.WORKLOAD
    P = Kind.POOL
    vsel = f"{HOST}, {POOL}"
    arc_hits, arc_miss = m(A, "hits"), m(A, "misses")
    l2_hits, l2_miss = m(L2, "hits"), m(L2, "misses")
    l2_ratio = _ratio(l2_hits, l2_miss, HOST)
    dev_ops = f"rate({m(D, 'reads')}{{{HOST}}}[{RI}]) + rate({m(D, 'writes')}{{{HOST}}}[{RI}])"
    return [
        Panel("Read ops/s by vdev role", (Target(
            f"sum by (instance, pool, role) ({m(V, 'read_ops')}{{{vsel}}})", "{{instance}} {{pool}} {{role}}"),),
            unit_of(V, "read_ops"), "Are the data disks or the cache device (L2ARC) answering reads?"),
        Panel("Write ops/s by vdev role", (Target(
            f"sum by (instance, pool, role) ({m(V, 'write_ops')}{{{vsel}}})", "{{instance}} {{pool}} {{role}}"),),
            unit_of(V, "write_ops"), "Data vdevs take the transaction groups; log vdevs (SLOG) the sync writes."),
        Panel("Bandwidth by vdev", (
            Target(f"{m(V, 'read_bw')}{{{vsel}}}", "read {{pool}} {{vdev}} ({{role}})"),
            Target(f"-{m(V, 'write_bw')}{{{vsel}}}", "write {{pool}} {{vdev}} ({{role}})")),
            unit_of(V, "read_bw"), "Reads up, writes down."),
        Panel("Per-vdev read latency p50 / p99", (
            Target(latency_quantile(0.5, "read"), "p50 {{pool}} {{vdev}} ({{role}})"),
            Target(latency_quantile(0.99, "read"), "p99 {{pool}} {{vdev}} ({{role}})")),
            "s", "From zpool iostat -w (disk_wait) on OpenZFS, from the tracing scripts (exporter --trace) "
                 "where zpool has no -w (zfs-fuse, illumos)."),
        Panel("Per-vdev write latency p50 / p99", (
            Target(latency_quantile(0.5, "write"), "p50 {{pool}} {{vdev}} ({{role}})"),
            Target(latency_quantile(0.99, "write"), "p99 {{pool}} {{vdev}} ({{role}})")),
            "s", "As the read panel, for writes."),
        Panel("ARC and L2ARC hit ratio", (
            Target(_ratio(arc_hits, arc_miss, HOST), "ARC {{instance}}"),
            Target(l2_ratio, "L2ARC {{instance}}")),
            "percentunit", "ARC: hits / (hits + misses). L2ARC: of the ARC misses that asked the cache device, "
                           "how many it answered."),
        Panel("ARC and L2ARC size", (
            Target(f"{m(A, 'size')}{{{HOST}}}", "ARC size {{instance}}"),
            Target(f"{m(A, 'c')}{{{HOST}}}", "ARC target c {{instance}}"),
            Target(f"{m(A, 'c_max')}{{{HOST}}}", "ARC c_max {{instance}}"),
            Target(f"{m(L2, 'size')}{{{HOST}}}", "L2ARC size {{instance}}")),
            unit_of(A, "size")),
        Panel("SLOG activity (log vdevs)", (
            Target(f'{m(V, "write_ops")}{{{vsel}, role="log"}}', "write ops/s {{pool}} {{vdev}}"),
            Target(f'{m(V, "write_bw")}{{{vsel}, role="log"}}', "write B/s {{pool}} {{vdev}}")),
            "short", "Sync writes (fsync, O_DSYNC) landing on the separate intent log."),
        Panel("Goose egg: ZFS leaf ops vs block-device ops", (
            Target(f"sum by (instance, device) ({m(L, 'read_ops')}{{{vsel}}} + {m(L, 'write_ops')}{{{vsel}}})",
                   "ZFS {{device}}"),
            Target(f"sum by (instance, device) ({as_leaf(dev_ops)}) and on (instance, device) "
                   f"{m(L, 'read_ops')}{{{vsel}}}", "device {{device}}")),
            "ops", "Side by side: a leaf ZFS says is busy while its block device shows nothing is a goose egg "
                   "(virtual or SAN disks, or the wrong device). A block device is drawn under the name of the "
                   "zpool leaf it is (its leaf label: vdb as virtio-data0).", width=24),
        Panel("Workload TPS beside the L2ARC hit ratio", (
            Target(f"{m(W, 'tps')}{{{HOST}}}", "TPS {{instance}} {{workload}}"),
            Target(l2_ratio, "L2ARC hit ratio {{instance}}")),
            "short", "Does throughput follow the cache device's hit ratio? (right axis: ratio)"),
        Panel("Pool and vdev health (1 = ONLINE)", (
            Target(f"{m(P, 'online')}{{{vsel}}}", "pool {{instance}} {{pool}}"),
            Target(f"min by (instance, pool, vdev, role) ({m(V, 'online')}{{{vsel}}})", "{{pool}} {{vdev}} ({{role}})")),
            "short", "zpool status: 0 means DEGRADED, FAULTED, OFFLINE, UNAVAIL, REMOVED or SUSPENDED (the state "
                     "code is zfsmon_pool_state / zfsmon_vdev_state)."),
        Panel("Read, write and checksum errors per vdev (last hour)", (Target(
            f"sum by (instance, pool, vdev) (increase({m(V, 'read_errors')}{{{vsel}}}[1h]) + "
            f"increase({m(V, 'write_errors')}{{{vsel}}}[1h]) + increase({m(V, 'checksum_errors')}{{{vsel}}}[1h]))",
            "{{pool}} {{vdev}}"),), "short", "zpool status's READ/WRITE/CKSUM columns, as counters."),
        Panel("Pool capacity used", (Target(
            f"{m(P, 'alloc')}{{{vsel}}} / ({m(P, 'alloc')}{{{vsel}}} + {m(P, 'free')}{{{vsel}}})",
            "{{instance}} {{pool}}"),), "percentunit"),
        Panel("Exporter: sources, errors and counter resets", (
            Target(f"time() - {PREFIX}_last_sample_timestamp_seconds{{{HOST}}}", "age {{instance}} {{source}}"),
            Target(_zero_if_none(f"increase({PREFIX}_source_errors_total{{{HOST}}}[1h])"), "errors {{instance}}"),
            Target(_zero_if_none(f"increase({PREFIX}_source_resets_total{{{HOST}}}[1h])"), "resets {{instance}}")),
            "s", "Seconds since each source's newest sample; errors and counter resets in the last hour."),
    ]


def _templating() -> Dict[str, object]:
    ds = {"type": "prometheus", "uid": "${datasource}"}
    pool_src = m(Kind.VDEV, "read_ops")

    def var(name: str, label: str, query: str) -> Dict[str, object]:
        return {"name": name, "label": label, "type": "query", "datasource": ds, "definition": query,
                "query": {"query": query, "refId": f"{name}-var"}, "refresh": 2, "includeAll": True,
                "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"}, "sort": 1}

    return {"list": [
        {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
         "current": {}, "refresh": 1},
        var("host", "host", f"label_values({PREFIX}_build_info, instance)"),
        var("pool", "pool", f'label_values({pool_src}{{instance=~"$host"}}, pool)'),
    ]}


def dashboard() -> Dict[str, Any]:  # JSON, as Grafana imports it
    """The dashboard as Grafana's classic JSON model."""
    ds = {"type": "prometheus", "uid": "${datasource}"}
    out: List[Dict[str, object]] = []
    x = y = 0
    for i, p in enumerate(panels(), start=1):
        if x + p.width > 24:
            x, y = 0, y + 8
        fc: Dict[str, object] = {"defaults": {"unit": p.unit}, "overrides": []}
        if p.title.startswith("Workload TPS"):
            fc["overrides"] = [{"matcher": {"id": "byRegexp", "options": "L2ARC.*"},
                                "properties": [{"id": "custom.axisPlacement", "value": "right"},
                                               {"id": "unit", "value": "percentunit"}]}]
        out.append({
            "id": i, "type": "timeseries", "title": p.title, "description": p.description, "datasource": ds,
            "gridPos": {"h": 8, "w": p.width, "x": x, "y": y}, "fieldConfig": fc,
            "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": [{"datasource": ds, "expr": t.expr, "legendFormat": t.legend, "refId": chr(ord("A") + j)}
                        for j, t in enumerate(p.targets)],
        })
        x += p.width
    return {
        "id": None, "uid": UID, "title": TITLE, "tags": ["zfs", "zfsmon", "storage"], "timezone": "browser",
        "editable": True, "graphTooltip": 1, "panels": out, "time": {"from": "now-1h", "to": "now"},
        "timepicker": {}, "templating": _templating(), "annotations": {"list": []}, "refresh": "30s",
        "schemaVersion": 39, "version": 1, "links": [],
        "description": "Generated by `python3 -m zfsmon.views.grafana` from zfsmon's metrics table; docs/exporter.md",
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, sort_keys=False) + "\n"


def fill(expr: str, host: str = ".*", pool: str = ".*", rate_interval: str = "1m") -> str:
    """A panel's PromQL with the dashboard's variables replaced, as Grafana would send it."""
    return expr.replace("$__rate_interval", rate_interval).replace("$host", host).replace("$pool", pool)


def panel_queries(dash: Optional[Dict[str, Any]] = None, **values: str) -> List[Tuple[str, str]]:
    """(panel title, filled PromQL) for every target of every panel."""
    d = dash if dash is not None else dashboard()
    return [(p["title"], fill(t["expr"], **values)) for p in d["panels"] for t in p["targets"]]


def variable_queries(dash: Optional[Dict[str, Any]] = None) -> List[Tuple[str, str]]:
    """(variable name, the series selector of its label_values query)."""
    d = dash if dash is not None else dashboard()
    out = []
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            hit = re.match(r"label_values\((.*),\s*(\w+)\)$", v["query"]["query"])
            if hit:
                out.append((v["name"], hit.group(1)))
    return out


def main(argv: Sequence[str] = ()) -> int:
    print(render(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
