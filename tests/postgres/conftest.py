"""A throw-away PostgreSQL cluster for these tests: initdb into /var/tmp, loopback port, stopped at the end."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Iterator

import pytest

from tests.conftest import _postgres_missing, free_loopback_port, need
from zfsmon.workload.pgcluster import PgCluster

DB = "bench"


@pytest.fixture(scope="module")
def pg() -> Iterator[PgCluster]:
    why = _postgres_missing()
    need(not why, why)
    # /var/tmp, not pytest's tmp_path: that is private to root and the server runs as postgres
    top = tempfile.mkdtemp(prefix="zfsmon-pgtest-", dir="/var/tmp")
    os.chmod(top, 0o755)
    cluster = PgCluster(os.path.join(top, "data"), port=free_loopback_port(), listen_addresses="127.0.0.1",
                        start_timeout=60)
    try:
        cluster.init()
        cluster.start()
        cluster.createdb(DB)
        env = {**os.environ, **cluster.env(DB)}
        subprocess.run([cluster.pgbench(), "-i", "-s", "1", "-q", DB], env=env, check=True, capture_output=True,
                       timeout=120)
        yield cluster
    finally:
        try:
            cluster.stop(timeout=30)
        finally:
            shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def pg_env(pg: PgCluster) -> dict:
    return {**os.environ, **pg.env(DB)}
