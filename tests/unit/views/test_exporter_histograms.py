"""Latency histograms as Prometheus histograms, from real captures: `zpool iostat -vw` of the OpenZFS 2.3 guest
(interval deltas added up) and fusevdevlat.bt on the zfs-fuse lab (trace buckets, rolled up to the vdev).
Buckets are cumulative and end at +Inf = _count; _sum is exact where the source has a mean; the scrape
passes `promtool check metrics` with no warning."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from typing import Dict, List, Tuple

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_DATA, need
from tests.unit.views.top.test_top_listen import HOST, exporter_scrape
from zfsmon.commands import exporter as exporter_cmd
from zfsmon.metrics import latency
from zfsmon.model import Kind, Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.zpool.iostat import parse_text as parse_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.trace.protocol import parse_text as parse_trace
from zfsmon.trace.resolve import Names
from zfsmon.views.prometheus import (
    LE_EXPONENTS,
    LatestValues,
    ZfsmonCollector,
    histogram_parts,
    zpool_bucket_upper_ns,
)

TRACE = TEST_DATA / "trace"


def _vw() -> List[Sample]:
    """The -vw capture's first report (since import: thousands of I/Os; the interval report after it is nearly
    idle) fed as if it were an interval's counts: real numbers in zpool's real shape."""
    recs = parse_iostat((TEST_DATA / "openzfs-2.3" / "zpool-iostat-vw.txt").read_text())
    return [dataclasses.replace(r, since_boot=False) for r in recs if isinstance(r, Sample) and r.since_boot]


def _render(latest: LatestValues) -> bytes:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ZfsmonCollector(latest))
    return generate_latest(reg)


def _hist(text: bytes, family: str, **labels: str) -> Tuple[List[Tuple[float, float]], float, float]:
    """(buckets (le, cumulative), sum, count) of one series."""
    for fam in text_string_to_metric_families(text.decode()):
        if fam.name != family:
            continue
        rows = [s for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items())]
        buckets = [(float(s.labels["le"]), s.value) for s in rows if s.name.endswith("_bucket")]
        (total,) = [s.value for s in rows if s.name.endswith("_sum")]
        (count,) = [s.value for s in rows if s.name.endswith("_count")]
        return buckets, total, count
    raise AssertionError(f"no {family} {labels}")


def _upper(name: str) -> float:
    hit = latency.split_metric(name)
    assert hit is not None, name
    return zpool_bucket_upper_ns(hit[2])


def test_zpool_bucket_bounds() -> None:
    # bucket j holds [2^j, 2^(j+1)) ns; zpool prints 2^(j+1)-1
    assert [_upper(f"lat_disk_wait_read_{x}") for x in ("1ns", "1us", "131us", "137s")] == [2, 2 ** 10, 2 ** 17,
                                                                                            2 ** 37]


def test_zpool_w_intervals_add_up_into_cumulative_buckets() -> None:
    samples = _vw()
    mirror = next(s for s in samples if s.entity.name == "mirror-0")
    # whole I/Os: the capture (no -p) prints scaled counts (5.50K reads as 5632.0, 1.40K as 1433.6)
    raw = {k: round(v) for k, v in mirror.metrics.items() if k.startswith("lat_disk_wait_read_")}
    expect_count = sum(raw.values())
    assert expect_count > 0
    latest = LatestValues(histogram_queues=None)
    latest.add(samples)
    later = [dataclasses.replace(s, ts=s.ts + 2) for s in samples]  # a second interval with the same counts
    latest.add(later)
    text = _render(latest)
    buckets, total, count = _hist(text, "zfsmon_vdev_latency_seconds", vdev="mirror-0", queue="disk_wait", op="read")
    assert count == 2 * expect_count
    assert buckets[-1] == (float("inf"), count)
    assert [b[0] for b in buckets[:-1]] == [(1 << e) / 1e9 for e in LE_EXPONENTS]
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))  # cumulative
    # each bucket holds exactly the I/Os zpool counted at or under its bound
    for le, cum in buckets[:-1]:
        under = sum(v for k, v in raw.items() if _upper(k) <= le * 1e9 + 0.5)
        assert cum == 2 * under, le
    # no mean in a -w report: each I/O at 3/4 of its bucket's upper bound, so the sum lies within the bounds
    lo = 2 * sum(v * _upper(k) / 2 for k, v in raw.items()) * 1e-9
    hi = 2 * sum(v * _upper(k) for k, v in raw.items()) * 1e-9
    assert lo <= total <= hi
    # the pool and every vdev get one, the buckets are not also exposed as gauges
    names = {f.name for f in text_string_to_metric_families(text.decode())}
    assert "zfsmon_pool_latency_seconds" in names and not any("lat_" in n for n in names)


def test_default_queues_keep_cardinality_bounded() -> None:
    latest = LatestValues()  # total_wait, disk_wait and trace only
    latest.add(_vw())
    fams = {f.name: f for f in text_string_to_metric_families(_render(latest).decode())}
    queues = {s.labels["queue"] for s in fams["zfsmon_vdev_latency_seconds"].samples}
    assert queues == {"total_wait", "disk_wait"}
    per_series = len(LE_EXPONENTS) + 3  # buckets, +Inf, _sum, _count
    vdevs = {s.labels["vdev"] for s in fams["zfsmon_vdev_latency_seconds"].samples}
    assert len(fams["zfsmon_vdev_latency_seconds"].samples) == len(vdevs) * 4 * per_series


def _fusevdevlat() -> List[Sample]:
    fds = dict(line.split(None, 1) for line in (TRACE / "fusevdevlat_syscalls.fds").read_text().splitlines())
    names = Names(topology=parse_status((TRACE / "lab.zpool_status").read_text()), fds=fds)
    recs = parse_trace((TRACE / "fusevdevlat_syscalls.bt.out").read_text(), resolve=names)
    return [r for r in recs if isinstance(r, Sample)]


def test_trace_histograms_become_vdev_histograms_with_an_exact_sum() -> None:
    samples = _fusevdevlat()
    vdev = [s for s in samples if s.entity.name == "mirror-0" and s.metrics.get("read_ops", 0) > 0]
    assert vdev, "the trace parser rolls leaves up into their vdev"
    latest = LatestValues()
    latest.add(samples)
    text = _render(latest)
    buckets, total, count = _hist(text, "zfsmon_vdev_latency_seconds", vdev="mirror-0", queue="trace", op="read")
    n = sum(s.metrics["read_ops"] for s in vdev)
    assert count == n and buckets[-1][1] == n
    exact = sum(s.metrics["read_lat_mean_ns"] * s.metrics["read_ops"] for s in vdev) * 1e-9
    assert total == pytest.approx(exact)
    # the cache and log devices are top-level vdevs with their roles; leaves only with --leaf-histograms
    fams = {f.name: f for f in text_string_to_metric_families(text.decode())}
    roles = {s.labels["vdev"]: s.labels["role"] for s in fams["zfsmon_vdev_latency_seconds"].samples}
    assert "cache" in roles.values() and "zfsmon_leaf_latency_seconds" not in fams
    leafy = LatestValues(leaf_histograms=True)
    leafy.add(samples)
    assert b"zfsmon_leaf_latency_seconds_bucket" in _render(leafy)


def test_sum_uses_the_zpool_l_mean_when_the_sample_has_it() -> None:
    s = next(x for x in _vw() if x.entity.name == "mirror-0")
    with_mean: Dict[str, float] = {**s.metrics, "disk_wait_read": 500_000.0}  # 0.5 ms average (zpool -l)
    parts = histogram_parts(dataclasses.replace(s, metrics=with_mean))
    counts, total = parts[("disk_wait", "read")]
    assert total == pytest.approx(sum(counts.values()) * 0.5e-3)


def test_promtool_accepts_the_histograms() -> None:
    promtool = shutil.which("promtool")
    need(promtool is not None, "promtool not installed (Debian package prometheus)")
    latest = LatestValues(histogram_queues=None, leaf_histograms=True)
    latest.add(_vw() + _fusevdevlat())
    res = subprocess.run([str(promtool), "check", "metrics"], input=_render(latest), capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stdout and not res.stderr, (res.stdout + res.stderr).decode()


def test_kinds_of_the_trace_owner() -> None:
    s = _fusevdevlat()
    assert {x.entity.kind for x in s} == {Kind.TRACE}


def test_label_names_are_a_fixed_bounded_set() -> None:
    """No per-I/O, per-file or per-client label: every label is one of the entity labels, queue/op/le or the
    exporter's own; the le values are the fixed set."""
    latest = LatestValues(histogram_queues=None, leaf_histograms=True)
    latest.add(_vw() + _fusevdevlat())
    text = _render(latest).decode()
    allowed = {"pool", "vdev", "device", "role", "parent", "dataset", "workload", "name", "queue", "op", "le",
               "source", "version", "host", "platform", "zfs_flavour", "zfs_version", "zfs_userland"}
    les = set()
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            assert set(smp.labels) <= allowed, (smp.name, smp.labels)
            if "le" in smp.labels:
                les.add(smp.labels["le"])
    assert len(les) == len(LE_EXPONENTS) + 1


@pytest.mark.parametrize("choice,queues", [("none", set()), ("wait", {"total_wait", "disk_wait"}),
                                           ("all", {"total_wait", "disk_wait", "syncq_wait", "asyncq_wait", "scrub",
                                                    "trim"})])
def test_the_live_exporter_serves_the_histograms_asked_for(choice, queues, monkeypatch) -> None:
    """`zfsmon exporter --histograms CHOICE` sampling a source (not only --from-recording) honours CHOICE."""
    reads: List[int] = []

    class Vw(Collector):
        name = "zpool_iostat_w"

        def poll(self):
            reads.append(1)
            return _vw()

    monkeypatch.setattr(exporter_cmd, "probe", lambda: HOST)
    monkeypatch.setattr(exporter_cmd, "pick_collectors", lambda *a, **k: ([Vw()], []))
    fams = {name: series for name, (_t, _h, series) in
            exporter_scrape(monkeypatch, ["--histograms", choice], lambda: len(reads) >= 2).items()}
    served = {lab["queue"] for _n, lab, _v in fams.get("zfsmon_vdev_latency_seconds", [])}
    assert served >= queues and (served == queues or choice == "all")
