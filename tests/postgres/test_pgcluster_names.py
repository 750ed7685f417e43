"""A database name is only a name: the lab cluster creates and samples databases whose names are SQL, conninfo
or options, and nothing else happens. Needs PostgreSQL (runs for real in CI)."""

from __future__ import annotations

import pytest

from zfsmon.model import Sample
from zfsmon.sources.pgbench.pgstat import PgStatCollector, entity_for
from zfsmon.workload.pgcluster import PgCluster

pytestmark = pytest.mark.postgres

ROLE = "zfsmon_pwned"
HOSTILE = ['x"; DROP DATABASE postgres; --', f"x'; CREATE ROLE {ROLE}; --", "nope' OR datname = 'postgres",
           "a\\'b \\\\ c", "-e host=127.0.0.2"]


def _one(pg: PgCluster, sql: str) -> str:
    res = pg.query(sql)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_database_name_is_created_as_it_is_and_runs_nothing(pg: PgCluster, name: str):
    pg.createdb(name)
    pg.createdb(name)  # it exists now: nothing to do, no error
    names = _one(pg, "SELECT datname FROM pg_database").splitlines()
    assert name in names and "postgres" in names
    assert _one(pg, f"SELECT count(*) FROM pg_roles WHERE rolname = '{ROLE}'") == "0"
    col = PgStatCollector(pg.conninfo(name))  # the conninfo names that database and no other
    try:
        (s,) = col.poll()
    finally:
        col.stop()
    assert isinstance(s, Sample) and s.entity == entity_for(name)
