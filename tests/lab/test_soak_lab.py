"""End to end on the zfs-fuse lab: `zfsmon soak --lab` records TPS, pg_stat_database and ZFS on one time axis,
and `zfsmon analyze` reports on them. Needs root, zfs-fuse and PostgreSQL (runs for real in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_loopback_port
from zfsmon.model import EventKind, Kind, Role
from zfsmon.store import Recording

pytestmark = [pytest.mark.lab, pytest.mark.postgres, pytest.mark.slow]


def _zfsmon(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsmon", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=str(Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="module")
def port() -> int:
    return free_loopback_port()


def test_loop_soak_on_lab(lab, require_postgres, tmp_path: Path, port: int) -> None:
    out = tmp_path / "soak.zfsmon"
    res = _zfsmon("soak", "--lab", lab.pool, "--cold", "--port", str(port), "--init-scale", "3", "--run-seconds", "5",
                  "--pause", "1", "--duration", "24", "--interval", "1", "--quiet", "--out", str(out),
                  "--", "-c", "4", "-j", "2", "-S", timeout=600)
    assert res.returncode == 0, res.stderr
    assert "initialising pgbench scale 3: 300,000 rows" in res.stderr
    assert f"lab {lab.pool}: ARC and L2ARC emptied" in res.stderr  # --cold, between loading and the soak
    datadir = Path(lab.mountpoint) / "zfsmon-pgdata"
    assert (datadir / "PG_VERSION").exists() and not (datadir / "postmaster.pid").exists()  # stopped afterwards
    log = out.with_suffix(".pgbench.log")
    assert log.read_text().count("tps = ") >= 3

    with Recording.open(str(out)) as rec:
        t0, t1 = rec.time_range()
        tps = rec.series("workload:pgbench-run", "tps")
        hits = rec.series("workload:pgstat:pgbench", "blks_hit")
        samples = list(rec.samples())
        runs = rec.events(kinds=[EventKind.RUN_END])
    assert len(tps) >= 3 and all(v > 0 for _, v in tps)
    assert len(runs) >= 3
    assert len(hits) >= 10 and hits[-1][1] > hits[0][1]
    arc = [s for s in samples if s.entity.kind == Kind.ARC]
    data = [s for s in samples if s.entity.kind in (Kind.VDEV, Kind.LEAF) and s.entity.role == Role.DATA
            and "read_ops" in s.metrics]
    assert arc and data, "ZFS sources missing from the recording"
    # one time axis: every source covers the soak, not some other stretch of time
    for series in ([t for t, _ in tps], [t for t, _ in hits], [s.ts for s in arc], [s.ts for s in data]):
        assert t0 <= min(series) <= t0 + 15 and t1 - 15 <= max(series) <= t1

    res = _zfsmon("analyze", str(out), "--json", timeout=120)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    topics = {f["topic"] for f in report["findings"]}
    assert "read_path" in topics
    corr = [f for f in report["findings"] if f["topic"] == "correlation"]
    assert {c["numbers"]["with"] for c in corr} >= {"arc_hit_pct", "pg_hit_pct"}
    (rp,) = [f for f in report["findings"] if f["topic"] == "read_path"]
    whole = rp["numbers"]["whole"]
    assert whole["basis"] == "postgres" and 0 <= whole["pg_buffers"] <= 100
    assert sum(whole[k] for k in ("pg_buffers", "arc", "l2arc", "disks") if whole[k] is not None) == \
        pytest.approx(100.0)
    text = _zfsmon("analyze", str(out), timeout=120).stdout
    assert "Read path (PostgreSQL block reads)" in text and "TPS vs ARC hit %" in text


def test_continuous_soak_on_lab(lab, require_postgres, tmp_path: Path, port: int) -> None:
    out = tmp_path / "cont.zfsmon"
    res = _zfsmon("soak", "--lab", lab.pool, "--port", str(port), "--mode", "continuous", "--progress", "1",
                  "--duration", "12", "--interval", "1", "--quiet", "--out", str(out), "--", "-c", "2", "-S",
                  timeout=300)
    assert res.returncode == 0, res.stderr
    with Recording.open(str(out)) as rec:
        t0, t1 = rec.time_range()
        prog = rec.series("workload:pgbench", "tps")
        runs = rec.events(kinds=[EventKind.RUN_END])
    assert len(prog) >= 8 and all(v > 0 for _, v in prog)
    assert all(t0 <= t <= t1 for t, _ in prog)  # pgbench's own --progress-timestamp clock, inside the recording
    assert len(runs) == 1 and runs[0].data.get("tps", 0) > 0
    assert os.path.getsize(out.with_suffix(".pgbench.log")) > 0
