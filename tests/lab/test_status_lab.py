"""The ``status`` source live on the zfs-fuse lab (the text path), and the origin every recording carries."""

from __future__ import annotations

import subprocess
import sys
from typing import List

import pytest

from tests.conftest import REPO, wait_until
from zfsmon.host import probe
from zfsmon.model import Event, Kind, Record, Sample
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.store import Recording

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def _zpool(*args: str) -> None:
    subprocess.run(["zpool", *args], check=True, capture_output=True, text=True, timeout=60)


def test_offline_online_and_scrub_become_events(lab):
    opts, why = zpool_health.choose(probe())
    assert opts == [] and "no -j" in why  # zfs-fuse: the text of zpool status
    c = zpool_health.StatusCollector([lab.pool], opts, every=0.2)
    seen: List[Record] = []

    def events() -> List[str]:
        seen.extend(c.poll())
        return [r.text for r in seen if isinstance(r, Event)]

    def pool_sample(state: float) -> bool:
        events()
        return any(isinstance(r, Sample) and r.entity.kind == Kind.POOL and r.entity.name == lab.pool
                   and r.metrics.get("state") == state for r in seen)

    leaf = lab.devices["data"][1]  # the second leaf of mirror-0
    name = leaf.rsplit("/", 1)[-1]
    with c:
        wait_until(lambda: pool_sample(0), 60, "an ONLINE reading of the pool")
        leaves = {r.entity.name: r for r in seen if isinstance(r, Sample) and r.entity.kind == Kind.LEAF}
        assert leaves[name].entity.parent == "mirror-0" and leaves[name].metrics["read_errors"] == 0
        _zpool("offline", lab.pool, leaf)
        try:
            wait_until(lambda: f"pool {lab.pool}: {name} OFFLINE (was ONLINE)" in events(), 60, "the OFFLINE event")
            assert f"pool {lab.pool}: mirror-0 DEGRADED (was ONLINE)" in events()
            assert pool_sample(float(zpool_health.STATE_CODES["DEGRADED"]))
        finally:
            _zpool("online", lab.pool, leaf)
        wait_until(lambda: f"pool {lab.pool}: {name} ONLINE (was OFFLINE)" in events(), 60, "back ONLINE")
        _zpool("scrub", lab.pool)
        wait_until(lambda: any(t.startswith(f"pool {lab.pool}: scrub finished") for t in events()), 60,
                   "the scrub's end")
    assert c.last_run_s is not None and c.runs >= 3


def test_a_lab_recording_carries_platform_and_zfs_version(lab, tmp_path):
    path = str(tmp_path / "lab.zfsmon")
    subprocess.run([sys.executable, "-m", "zfsmon", "record", "status", "zpool", "--pool", lab.pool, "--interval",
                    "1", "--duration", "3", "--quiet", "--out", path], cwd=REPO, check=True, timeout=120)
    with Recording.open(path) as rec:
        assert rec.meta["zfs_flavour"] == "zfs-fuse" and "pool v23" in rec.meta["zfs_version"]
        assert rec.meta["platform"].startswith("Linux ")
        pools = [s for s in rec.samples() if s.entity.kind == Kind.POOL and s.source == "status"]
        assert pools and pools[0].metrics["state"] == 0
    out = subprocess.run([sys.executable, "-m", "zfsmon", "info", path], cwd=REPO, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert "zfs:        zfs-fuse 0.7.0" in out and "platform:   Linux" in out
