"""zfsmon export --csv of issue 14's acceptance recordings: fio's values per job, direction and interval
(workload.csv) and the analysis' tables (fio_steps.csv, vdev_roles.csv, vdev_latency.csv,
vdev_latency_buckets.csv), cell for cell equal to what zfsmon.analysis computes from the same recording.

The recordings are the zfs-fuse lab runs of ``python3 -m bench.fio_acceptance`` (tests/data/fio/PROVENANCE.md).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

import pytest

from zfsmon.analysis import qdsweep, vdevperf
from zfsmon.cli import main
from zfsmon.model import Kind
from zfsmon.store import Recording
from zfsmon.views import csv_export


@pytest.fixture(scope="module")
def paths(fio_lab_recordings):
    return fio_lab_recordings


def _samples(path: str):
    with Recording.open(path) as rec:
        return list(rec.samples())


def _read(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _f(cell: str):
    return None if cell == "" else float(cell)


@pytest.fixture(scope="module")
def ceiling_csv(paths, tmp_path_factory):
    out = Path(tmp_path_factory.mktemp("ceiling-csv"))
    assert main(["export", paths["ceiling"], "--csv", str(out)]) == 0
    return out


def test_the_fio_tables_are_written_beside_the_kinds(ceiling_csv):
    names = sorted(p.name for p in ceiling_csv.iterdir())
    assert names == [".zfsmon-export", "arc.csv", "device.csv", "events.csv", "fio_steps.csv", "l2arc.csv", "meta.csv", "pool.csv",
                     "trace.csv", "vdev.csv", "vdev_latency.csv", "vdev_latency_buckets.csv", "vdev_roles.csv",
                     "workload.csv"]


def test_workload_csv_has_fios_values_per_job_direction_and_interval(paths, ceiling_csv):
    rows = _read(ceiling_csv / "workload.csv")
    want = [s for s in _samples(paths["ceiling"]) if s.entity.kind == Kind.WORKLOAD]
    assert [r["name"] for r in rows] == [s.entity.name for s in want]
    assert {r["name"] for r in rows} == {f"fio:qd{d}:read" for d in (1, 2, 4, 8, 16, 32, 64)}
    for col in ("iops", "bw_bytes", "clat_p50_ms", "clat_p90_ms", "clat_p99_ms", "clat_p999_ms", "clat_max_ms",
                "clat_mean_ms", "ios", "iodepth", "numjobs"):
        assert [_f(r[col]) for r in rows] == [s.metrics.get(col) for s in want], col
    first = rows[0]
    assert (first["source"], first["interval"], first["clat_p99_ms"]) == ("fio", "0.899", "88.604672")


def test_fio_steps_csv_is_the_sweep(paths, ceiling_csv):
    samples = _samples(paths["ceiling"])
    sw = qdsweep.sweep(samples)
    vrows = vdevperf.step_windows(samples, sw.steps)
    rows = _read(ceiling_csv / "fio_steps.csv")
    assert [_f(r["depth"]) for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    for r, s, v in zip(rows, sw.steps, vrows):
        assert r["jobs"] == " ".join(s.jobs) and _f(r["iops"]) == s.iops and _f(r["ios"]) == s.ios
        assert _f(r["lat_mean_ms"]) == s.lat_mean_ms and _f(r["in_flight"]) == s.in_flight
        assert _f(r["little_ratio"]) == s.little_ratio and _f(r["clat_max_ms"]) == s.max_ms
        assert _f(r["start_epoch"]) == s.t0 and _f(r["end_epoch"]) == s.t1
        for p in qdsweep.PCTS:
            assert _f(r[f"clat_{p}_ms"]) == s.pct_ms[p]
            assert _f(r[f"read_clat_{p}_ms"]) == s.by_direction["read"][p]
        assert _f(r["read_ios"]) == s.by_ios["read"]
        # the vdevs in the step's window, beside fio's
        for key in ("data_read_p50_ms", "data_read_p99_ms", "data_read_mean_ms", "data_reads_per_device_s"):
            assert _f(r[key]) == v[key]
    assert [r["knee"] for r in rows] == ["0", "0", "1", "0", "0", "0", "0"] and sw.knee.depth == 4
    assert [r["peak"] for r in rows] == ["0"] * 6 + ["1"]
    assert _f(rows[-1]["iops"]) == pytest.approx(415.4467, abs=1e-3)


def test_vdev_roles_and_latency_csv_are_vdevperfs(paths, ceiling_csv):
    vp = vdevperf.vdev_perf(_samples(paths["ceiling"]))
    roles = {r["role"]: r for r in _read(ceiling_csv / "vdev_roles.csv")}
    assert list(roles) == ["data", "log", "cache"]
    data = roles["data"]
    assert (data["devices"], data["top_level"], data["read_ops"], data["write_ops"]) == ("4", "2", "10559", "2235")
    assert _f(data["capacity_b"]) == vp.roles["data"].capacity_b == pytest.approx(2131335577.6)
    assert _f(data["iops_per_gb"]) == vp.roles["data"].iops_per_gb
    assert _f(data["fio_peak_iops_per_gb"]) == vp.as_dict()["fio_iops_per_data_gb"]
    assert roles["log"]["fio_peak_iops_per_gb"] == roles["cache"]["fio_peak_iops_per_gb"] == ""
    assert (roles["cache"]["l2arc_hits"], roles["data"]["l2arc_hits"]) == ("20543", "")
    lat = _read(ceiling_csv / "vdev_latency.csv")
    assert [(r["role"], r["op"]) for r in lat] == [(d.role, d.op) for d in vp.latency]
    for r, d in zip(lat, vp.latency):
        assert r["source"] == d.source == "trace:fusevdevlat"
        assert [_f(r[k]) for k in ("count", "mean_ms", "p50_ms", "p90_ms", "p99_ms")] == [
            d.count, d.mean_ms, d.p50_ms, d.p90_ms, d.p99_ms]
    assert (lat[0]["count"], lat[0]["p99_ms"][:7]) == ("10735", "108.108")
    buckets = _read(ceiling_csv / "vdev_latency_buckets.csv")
    for d in vp.latency:
        mine = [(_f(b["low_ns"]), _f(b["high_ns"]), _f(b["count"])) for b in buckets
                if (b["role"], b["op"]) == (d.role, d.op)]
        assert mine == [tuple(b) for b in d.buckets] and sum(b[2] for b in mine) == d.count


def test_one_depth_has_no_knee_or_peak_and_the_slog_is_there(paths, tmp_path):
    assert main(["export", paths["slog"], "--csv", str(tmp_path)]) == 0
    (row,) = _read(tmp_path / "fio_steps.csv")
    assert (row["depth"], row["jobs"], row["ios"], row["write_ios"], row["knee"], row["peak"]) == (
        "4", "qd4", "7130", "7130", "", "")
    assert "read_ios" not in row
    assert _f(row["log_write_p99_ms"]) < 1 < 50 < _f(row["data_write_p50_ms"])
    roles = {r["role"]: r for r in _read(tmp_path / "vdev_roles.csv")}
    assert (roles["log"]["write_ops"], roles["data"]["write_ops"]) == ("5770", "963")


def test_long_export_writes_them_too_and_a_non_fio_export_removes_them(paths, tmp_path, capsys):
    assert main(["export", paths["l2arc"], "--csv", str(tmp_path), "--long"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".zfsmon-export", "events.csv", "fio_steps.csv", "meta.csv", "samples.csv",
                                                          "vdev_latency.csv", "vdev_latency_buckets.csv",
                                                          "vdev_roles.csv"]
    rows = _read(tmp_path / "fio_steps.csv")
    assert [r["knee"] for r in rows].index("1") == 4  # depth 16
    capsys.readouterr()
    # the vdevs alone: no fio in the selection, so no fio tables, and the earlier ones go
    assert main(["export", paths["l2arc"], "--csv", str(tmp_path), "--entities", "vdev", "leaf"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".zfsmon-export", "events.csv", "meta.csv", "vdev.csv"]
    assert "removed an earlier export's fio_steps.csv" in capsys.readouterr().err


def test_a_recording_without_fio_writes_no_fio_tables(tmp_path):
    assert csv_export.write_fio_tables(str(tmp_path), []) == {}
    assert list(tmp_path.iterdir()) == []
