"""Which PostgreSQL a soak talks to: a cluster of zfsmon's own on the lab, or the one the user names.

One place for it, because ``zfsmon soak`` and ``zfsmon top --soak`` both need
the same answer: the libpq environment for pgbench, the conninfo for
pg_stat_database, which pgbench binary, and (with ``--lab``) the cluster to
stop afterwards.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

from zfsmon.errors import UserError
from zfsmon.workload.pgcluster import DEFAULT_PORT, PgCluster

LAB_DB = "pgbench"
LAB_DATADIR = "zfsmon-pgdata"


@dataclass
class Target:
    env: Dict[str, str]
    dbname: Optional[str]
    conninfo: str
    pgbench: str = "pgbench"
    cluster: Optional[PgCluster] = None
    lab_pool: Optional[str] = None
    meta: Dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        """Stop the lab cluster, if this target started one; a failure is a warning, not an error."""
        if self.cluster is None:
            return
        try:
            self.cluster.stop()
        except UserError as exc:
            print(f"zfsmon: warning: {exc}", file=sys.stderr)


def lab_cluster(pool: str, port: int = DEFAULT_PORT):
    """The lab's LabInfo and the cluster that lives (or will live) on its dataset."""
    from zfsmon import lab as labmod

    info = labmod.info(pool)
    if info is None:
        raise UserError(f"no lab named {pool} is up (start one with `zfsmon lab up --pool {pool}`)")
    if not os.path.isdir(info.mountpoint):
        raise UserError(f"lab dataset {info.dataset} is not mounted at {info.mountpoint}")
    return info, PgCluster(os.path.join(info.mountpoint, LAB_DATADIR), port=port)


def prepare(lab: Optional[str] = None, port: int = DEFAULT_PORT, dbname: Optional[str] = None,
            conn: Optional[str] = None, say: Callable[[str], None] = lambda m: print(f"zfsmon: {m}",
                                                                                   file=sys.stderr)) -> Target:
    """Resolve the connection; with ``lab``, create/start the cluster and the database. Call ``stop()`` after."""
    env = dict(os.environ)
    if lab:
        info, cluster = lab_cluster(lab, port)
        dbname = dbname or LAB_DB
        target = Target(env, dbname, cluster.conninfo(dbname), cluster.pgbench(), cluster, info.pool,
                        {"lab_pool": info.pool})
        try:
            if not cluster.is_initialized():
                say(f"creating a PostgreSQL cluster in {cluster.datadir} (port {cluster.port}, shared_buffers "
                    f"{cluster.shared_buffers})")
                cluster.init()
            if not cluster.is_running():
                cluster.start()
            cluster.createdb(dbname)
        except BaseException:
            target.stop()
            raise
        env.update(cluster.env(dbname))
        return target
    conninfo = conn or ""
    if conn and dbname:
        conninfo = f"{conn} dbname={dbname}" if "://" not in conn else conn
    # pgbench takes a conninfo or URI where the database name goes
    return Target(env, dbname if dbname else conn, conninfo)
