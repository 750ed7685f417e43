"""Which PostgreSQL a soak talks to: a cluster of zfsmon's own on the lab, or the one the user names.

One place for it, because ``zfsmon soak`` and ``zfsmon top --soak`` both need
the same answer: the libpq environment for pgbench, the conninfo for
pg_stat_database, which pgbench binary, and (with ``--lab``) the cluster to
stop afterwards.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

from zfsmon import lab as labmod
from zfsmon import outfile
from zfsmon.defaults import LAB_DB
from zfsmon.errors import UserError, printable
from zfsmon.redact import quote_value, split_password, with_dbname
from zfsmon.workload.pgcluster import DEFAULT_PORT, PgCluster
from zfsmon.workload.soak import init_argv, init_message

#: PostgreSQL's longest name (NAMEDATALEN - 1)
MAX_DBNAME_BYTES = 63
LAB_DATADIR = "zfsmon-pgdata"


@dataclass
class Target:
    """``env`` is the children's environment (libpq's PG* variables, ``PGPASSWORD`` if the conninfo had a
    password); ``dbarg`` is what goes last on pgbench's and psql's command line (a conninfo without its
    password; None: from ``env``); ``conninfo`` is for psycopg in this process; ``dbname`` is for messages."""

    env: Dict[str, str]
    dbname: Optional[str]
    conninfo: str
    pgbench: str = "pgbench"
    cluster: Optional[PgCluster] = None
    lab_pool: Optional[str] = None
    meta: Dict[str, str] = field(default_factory=dict)
    owned: bool = True  # False: the lab cluster was already running (another zfsmon command's): leave it be
    dbarg: Optional[str] = None

    def stop(self) -> None:
        """Stop the lab cluster, if this target started one; a failure is a warning, not an error."""
        if self.cluster is None or not self.owned:
            return
        try:
            self.cluster.stop()
        except UserError as exc:
            print(f"zfsmon: warning: {exc}", file=sys.stderr)


def lab_cluster(pool: str, port: int = DEFAULT_PORT):
    """The lab's LabInfo and the cluster that lives (or will live) on its dataset."""
    info = labmod.info(pool)
    if info is None:
        raise UserError(f"no lab named {pool} is up (start one with `zfsmon lab up --pool {pool}`)")
    if not os.path.isdir(info.mountpoint):
        raise UserError(f"lab dataset {info.dataset} is not mounted at {info.mountpoint}")
    return info, PgCluster(Path(info.mountpoint, LAB_DATADIR), port=port)


def prepare(lab: Optional[str] = None, port: int = DEFAULT_PORT, dbname: Optional[str] = None,
            conn: Optional[str] = None, say: Callable[[str], None] = lambda m: print(f"zfsmon: {m}",
                                                                                   file=sys.stderr)) -> Target:
    """Resolve the connection; with ``lab``, create/start the cluster and the database. Call ``stop()`` after.

    A database name travels in ``PGDATABASE`` or as a quoted conninfo value, never as a bare argument, which
    pgbench and psql would take as an option (``-f...``) or expand as a conninfo (``host=...``)."""
    env = dict(os.environ)
    if dbname is not None:
        check_dbname(dbname)
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
            if cluster.is_running():  # e.g. a `soak --lab` in another terminal; its port is adopted
                target.owned = False
                say(f"using the lab's PostgreSQL cluster that is already running (port {cluster.port}); "
                    "it is left running afterwards")
            else:
                cluster.start()
            cluster.createdb(dbname)
        except BaseException:
            target.stop()
            raise
        target.conninfo = cluster.conninfo(dbname)
        env.update(cluster.env(dbname))
        return target
    if not conn:
        if dbname:
            env["PGDATABASE"] = dbname
        return Target(env, dbname, f"dbname={quote_value(dbname)}" if dbname else "")
    conninfo = with_dbname(conn, dbname) if dbname else conn
    try:
        dbarg, password = split_password(conninfo)
    except ValueError as exc:
        raise UserError(f"--conn is not a connection string libpq reads (keyword=value ... or "
                        f"postgresql://...): {exc}") from None
    if password is not None:
        env["PGPASSWORD"] = password  # a command line is visible to every user (ps); the environment is not
    # pgbench takes a conninfo or URI where the database name goes
    return Target(env, dbname or dbarg, conninfo, dbarg=dbarg)


def check_dbname(name: str) -> None:
    """A database name PostgreSQL keeps as given (at most 63 bytes; longer is cut), shown on one line."""
    if not name or len(name.encode("utf-8", "surrogatepass")) > MAX_DBNAME_BYTES or printable(name) != name:
        raise UserError(f"--dbname {name!r}: a database name is 1 to {MAX_DBNAME_BYTES} bytes without "
                        "control characters")


def check_pgbench_args(raw: List[str]) -> List[str]:
    """pgbench options for a soak: those zfsmon sets itself are refused, so the recording says what ran."""
    args = list(raw)
    if args and args[0] == "--":
        args = args[1:]
    for bad in ("-T", "--time", "-P", "--progress", "-i", "--initialize", "-t", "--transactions"):
        if bad in args or any(a.startswith(bad + "=") for a in args):
            raise UserError(f"pgbench option {bad} is set by zfsmon soak (use --run-seconds/--progress/"
                            f"--init-scale/--duration)")
    return args


def has_pgbench_tables(env: dict, dbname: Optional[str], pgbench: str) -> bool:
    """Whether the database is initialised; a database we cannot reach is a user error right away."""
    psql = os.path.join(os.path.dirname(pgbench), "psql") if os.path.dirname(pgbench) else "psql"
    argv = [psql, "-XAtq", "-c", "SELECT to_regclass('pgbench_accounts') IS NOT NULL"]
    if dbname:
        argv += ["-d", dbname]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True  # no psql, or it hangs: let pgbench say what is wrong
    if res.returncode != 0:
        err = res.stderr.strip().splitlines()
        raise UserError(f"cannot reach the database: {err[-1] if err else 'psql failed'}")
    return res.stdout.strip() == "t"


def initialise(pgbench: str, scale: int, dbname: Optional[str], env: dict, log: str, quiet: bool) -> None:
    """pgbench -i -s SCALE, its output tee'd to the soak's log, with the size estimate printed first."""
    msg = init_message(scale)
    print(f"zfsmon: {msg}", file=sys.stderr)
    argv = init_argv(pgbench, scale, dbname)
    t0 = time.monotonic()
    with outfile.open_append(log) as tee:
        tee.write(f"# zfsmon soak: {' '.join(shlex.quote(a) for a in argv)}\n")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        last = ""
        for line in proc.stdout:
            tee.write(line)
            last = line.strip() or last
            if not quiet:
                sys.stderr.write(line)
        rc = proc.wait()
    if rc != 0:
        raise UserError(f"pgbench -i failed (status {rc}): {last}")
    print(f"zfsmon: initialised in {time.monotonic() - t0:.0f} s", file=sys.stderr)


def ensure_database(tgt: Target, init_scale: Optional[int], log: str, quiet: bool) -> None:
    """Initialise with --init-scale, or check that the database already holds pgbench's tables."""
    if init_scale:
        initialise(tgt.pgbench, init_scale, tgt.dbarg, tgt.env, log, quiet)
    elif not has_pgbench_tables(tgt.env, tgt.dbarg, tgt.pgbench):
        raise UserError(f"database {tgt.dbname or '(from PGDATABASE)'} has no pgbench tables: add --init-scale S")


def ready(tgt: Target, init_scale: Optional[int], log: str, quiet: bool, cold: bool,
          say: Callable[[str], None] = lambda m: print(f"zfsmon: {m}", file=sys.stderr)) -> None:
    """The database there (loaded with ``init_scale``: on a throttled lab, at full speed, then throttled again),
    then, with ``cold``, the caches emptied: the order a soak's first minutes need (soak and top --soak)."""
    if init_scale and tgt.lab_pool is not None:
        with labmod.unthrottled(tgt.lab_pool, log=say):
            ensure_database(tgt, init_scale, log, quiet)
    else:
        ensure_database(tgt, init_scale, log, quiet)
    if cold:
        cold_start(tgt, say)


def cold_start(tgt: Target, say: Callable[[str], None] = lambda m: print(f"zfsmon: {m}", file=sys.stderr)) -> None:
    """Start the soak with empty ZFS caches: stop the lab cluster, empty ARC and L2ARC, start it again.

    Loading the database leaves the L2ARC full of what it wrote; a warm-up can
    only be watched from cold. Only a lab can be emptied this way (it exports
    and imports the pool).
    """
    if tgt.cluster is None or tgt.lab_pool is None:
        raise UserError("--cold needs --lab: only a lab pool can be exported and imported to empty its caches")
    if not tgt.owned:
        raise UserError("--cold would stop the lab's PostgreSQL cluster, which another command started and is "
                        "using: stop that first, or leave out --cold")
    tgt.cluster.stop()
    labmod.cold_cache(tgt.lab_pool, log=say)
    tgt.cluster.start()
