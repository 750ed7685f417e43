"""On the zfs-fuse lab: `zfsmon soak --lab POOL --fio-preset randread-sweep` records fio's per-step numbers and the
ZFS sources on one time axis, and the data vdevs saw the reads. Needs root, zfs-fuse and fio (runs in CI; short)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need
from zfsmon.model import Kind, Role, Sample
from zfsmon.names import fio_job_direction
from zfsmon.store import Recording

pytestmark = [pytest.mark.lab]


def _zfsmon(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsmon", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=str(Path(__file__).resolve().parents[2]))


def test_fio_sweep_on_lab(lab, tmp_path: Path) -> None:
    need(shutil.which("fio") is not None, "fio is not installed (scripts/install-deps.sh)")
    out = tmp_path / "fio.zfsmon"
    res = _zfsmon("soak", "--lab", lab.pool, "--fio-preset", "randread-sweep", "--fio-size", "16M",
                  "--fio-runtime", "1", "--interval", "1", "--out", str(out), timeout=300)
    assert res.returncode == 0, res.stderr
    job = out.with_suffix(".fio").read_text()
    assert f"directory={lab.mountpoint}" in job and "numjobs=64" in job
    assert (Path(lab.mountpoint) / "zfsmon-fio.randread").exists()  # fio's file is on the lab pool
    assert out.with_suffix(".fio.json").read_text().lstrip().startswith("{")

    with Recording.open(str(out)) as rec:
        t0, t1 = rec.time_range()
        samples = list(rec.samples())
    fio = [s for s in samples if s.entity.kind == Kind.WORKLOAD and fio_job_direction(s.entity.name)]
    steps: dict = {}
    for s in fio:
        steps.setdefault(fio_job_direction(s.entity.name)[0], []).append(s)
    assert sorted(steps, key=lambda n: int(n[2:])) == [f"qd{n}" for n in (1, 2, 4, 8, 16, 32, 64)]
    for name, step in steps.items():
        assert all(s.metrics["numjobs"] == int(name[2:]) for s in step)
        assert sum(s.metrics["ios"] for s in step) > 0  # (an interval may complete nothing: zfs-fuse stalls)
        for s in step:
            if s.metrics["ios"]:
                assert 0 < s.metrics["clat_p50_ms"] <= s.metrics["clat_p99_ms"] <= s.metrics["clat_max_ms"]
            else:
                assert s.metrics["iops"] == 0 and "clat_p99_ms" not in s.metrics
    zfs: list[Sample] = [s for s in samples if s.entity.pool == lab.pool]
    assert any(s.entity.kind in (Kind.VDEV, Kind.LEAF) and s.entity.role == Role.DATA for s in zfs)
    # one time axis: fio's samples lie within the recording, among the ZFS samples
    zts = [s.ts for s in zfs]
    assert all(t0 <= s.ts <= t1 for s in fio) and min(zts) <= max(s.ts for s in fio) <= max(zts) + 2

    # analyze reports the sweep: every depth, IOPS and p99 per depth, the Little's-law product per step
    res = _zfsmon("analyze", "--json", str(out), timeout=120)
    assert res.returncode == 0, res.stderr
    (sweep,) = [f for f in json.loads(res.stdout)["findings"] if f["topic"] == "qd_sweep"]
    assert [s["depth"] for s in sweep["numbers"]["steps"]] == [1, 2, 4, 8, 16, 32, 64]
    assert all(s["iops"] > 0 and s["clat_p99_ms"] > 0 and s["in_flight"] > 0 for s in sweep["numbers"]["steps"])
    assert "fio queue-depth sweep over 7 depths" in sweep["text"]
