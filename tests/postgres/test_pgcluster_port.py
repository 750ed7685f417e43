"""One cluster, two zfsmon commands with different ports (`soak --lab --port 5500`, then `top --soak --lab`)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import free_loopback_port
from zfsmon.workload.pgcluster import PgCluster, running_port

pytestmark = [pytest.mark.postgres]


def _psql_port(c: PgCluster) -> str:
    env = {**c.env(), "PGCONNECT_TIMEOUT": "10"}
    out = subprocess.run([str(c.bindir / "psql"), "-XAtc", "show port"], env=env, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_running_cluster_is_found_on_its_port_and_a_start_takes_the_asked_port(pg: PgCluster):
    other = PgCluster(pg.datadir, port=free_loopback_port())  # the same data directory, asked for another port
    assert other.is_running() and other.port == pg.port  # followed to where it listens
    assert _psql_port(other) == str(pg.port)
    assert running_port(pg.datadir / "postmaster.pid") == pg.port
    wanted = free_loopback_port()
    pg.stop(timeout=30)
    moved = PgCluster(pg.datadir, port=wanted)
    try:
        moved.start()  # postgresql.conf still says the initdb port; the asked one wins
        assert running_port(pg.datadir / "postmaster.pid") == wanted
        assert _psql_port(moved) == str(wanted)
    finally:
        moved.stop(timeout=30)
        pg.start()  # as the module's fixture had it
    assert pg.is_running() and pg.port == running_port(pg.datadir / "postmaster.pid")
