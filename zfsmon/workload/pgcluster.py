"""A throw-away PostgreSQL cluster for soaks on the lab: initdb, start, stop, nothing else.

Why its own cluster: a soak must hit ZFS, so the data directory sits on the lab
dataset and ``shared_buffers`` is kept small (16MB) so most reads leave
PostgreSQL's buffers and reach the ARC, L2ARC and disks. It listens on a
non-default port and a private socket directory so it never collides with a
system cluster. As root, every server command runs as the ``postgres`` user
(PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from zfsmon.defaults import LAB_PG_PORT
from zfsmon.errors import UserError
from zfsmon.redact import quote_value

DEFAULT_PORT = LAB_PG_PORT
PG_ROOT_GLOB = "/usr/lib/postgresql/*/bin"


def running_port(pidfile: Path) -> Optional[int]:
    """The port in a running server's postmaster.pid (its 4th line), or None if unreadable."""
    try:
        lines = pidfile.read_text(encoding="utf-8", errors="replace").splitlines()
        return int(lines[3])
    except (OSError, IndexError, ValueError):
        return None


def _version_key(path: str) -> tuple:
    ver = Path(path).parent.name
    return tuple(int(p) if p.isdigit() else 0 for p in ver.split("."))


def find_bindir(prefer: Optional[str] = None) -> Optional[Path]:
    """The newest PostgreSQL server bin directory (Debian layout), or one on PATH."""
    if prefer:
        p = Path(prefer)
        return p if (p / "initdb").exists() else None
    dirs = [d for d in glob.glob(PG_ROOT_GLOB) if os.path.exists(os.path.join(d, "initdb"))]
    if dirs:
        return Path(sorted(dirs, key=_version_key)[-1])
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def quote_ident(name: str) -> str:
    """``name`` as an SQL identifier: double-quoted, its double quotes doubled (PostgreSQL's quote_ident)."""
    _no_nul(name)
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """``text`` as an SQL string literal, whatever ``standard_conforming_strings`` says (PostgreSQL's
    quote_literal: quotes doubled; with a backslash, an ``E''`` literal with backslashes doubled)."""
    _no_nul(text)
    body = text.replace("'", "''")
    if "\\" not in text:
        return f"'{body}'"
    return "E'" + body.replace("\\", "\\\\") + "'"


def _no_nul(text: str) -> None:
    if "\0" in text:
        raise UserError("a PostgreSQL name or string cannot hold a NUL character")


@dataclass
class PgCluster:
    """One cluster: where it lives, how to reach it, how to start and stop it."""

    datadir: Path
    port: int = DEFAULT_PORT
    shared_buffers: str = "16MB"
    bindir: Optional[Path] = None
    os_user: str = "postgres"
    listen_addresses: str = ""  # unix socket only unless asked (e.g. "127.0.0.1")
    extra_conf: Dict[str, str] = field(default_factory=dict)
    start_timeout: int = 60

    def __post_init__(self) -> None:
        self.datadir = Path(self.datadir)
        if self.bindir is None:
            self.bindir = find_bindir()
        if self.bindir is None:
            raise UserError("PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH);"
                            " install postgresql")

    # where things are ---------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        return self.datadir / "socket"

    @property
    def logfile(self) -> Path:
        return self.datadir / "server.log"

    def env(self, dbname: str = "postgres") -> Dict[str, str]:
        """libpq environment for clients (pgbench, psql, psycopg)."""
        return {"PGHOST": str(self.socket_dir), "PGPORT": str(self.port), "PGUSER": self.db_user,
                "PGDATABASE": dbname}

    def conninfo(self, dbname: str = "postgres") -> str:
        return (f"host={quote_value(str(self.socket_dir))} port={int(self.port)} user={quote_value(self.db_user)} "
                f"dbname={quote_value(dbname)}")

    @property
    def db_user(self) -> str:
        return "postgres"

    # running commands -----------------------------------------------------------
    def _as_owner(self, argv: Sequence[str]) -> List[str]:
        if os.geteuid() == 0 and self.os_user:
            return ["runuser", "-u", self.os_user, "--", *argv]
        return list(argv)

    def _run(self, argv: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess:
        full = self._as_owner(argv)
        try:
            res = subprocess.run(full, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                                 cwd="/")
        except subprocess.TimeoutExpired as exc:
            raise UserError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from exc
        except OSError as exc:
            raise UserError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        if res.returncode != 0:
            err = (res.stderr or res.stdout).strip().splitlines()
            raise UserError(f"`{os.path.basename(argv[0])}` failed: {err[-1] if err else res.returncode}")
        return res

    def _bin(self, name: str) -> str:
        assert self.bindir is not None
        return str(self.bindir / name)

    # lifecycle ----------------------------------------------------------------------
    def is_initialized(self) -> bool:
        return (self.datadir / "PG_VERSION").exists()

    def init(self) -> None:
        """initdb into ``datadir`` (created and handed to the owner), then our settings."""
        self.datadir.mkdir(parents=True, exist_ok=True)
        if any(self.datadir.iterdir()):
            raise UserError(f"{self.datadir} is not empty; refusing to initdb over it")
        self._chown(self.datadir)
        self._run([self._bin("initdb"), "-D", str(self.datadir), "-U", self.db_user, "--auth=trust",
                   "-E", "UTF8", "--locale=C", "--no-sync"], timeout=300)
        self.socket_dir.mkdir(exist_ok=True)
        self._chown(self.socket_dir)
        conf = {
            "port": str(self.port),
            "listen_addresses": f"'{self.listen_addresses}'",
            "unix_socket_directories": f"'{self.socket_dir}'",
            "shared_buffers": self.shared_buffers,
            "max_connections": "100",
            # lab pools are small, and a full zfs-fuse pool can take the daemon down: keep WAL bounded
            "max_wal_size": "256MB",
            "logging_collector": "off",
            **self.extra_conf,
        }
        with open(self.datadir / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write("\n# zfsmon lab cluster\n")
            for k, v in conf.items():
                fh.write(f"{k} = {v}\n")

    def _chown(self, path: Path) -> None:
        if os.geteuid() != 0 or not self.os_user:
            return
        try:
            pw = pwd.getpwnam(self.os_user)
        except KeyError as exc:
            raise UserError(f"user {self.os_user!r} does not exist (PostgreSQL must not run as root)") from exc
        os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(path, 0o700)

    def is_running(self) -> bool:
        """Whether the server runs; if it does, clients follow it to the port it listens on.

        The lab's one cluster may have been started by another zfsmon command with another ``--port``
        (`soak --lab --port 5500` while `top --soak --lab` starts): connecting to our default port would fail.
        """
        pid = self.datadir / "postmaster.pid"
        if not pid.exists():
            return False
        try:
            self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "status"], timeout=20)
        except UserError:
            return False
        port = running_port(pid)
        if port is not None:
            self.port = port
        return True

    def start(self) -> None:
        self.logfile.touch(exist_ok=True)
        self._chown(self.logfile)
        os.chmod(self.logfile, 0o600)
        # -p: the port asked for now wins over the one written into postgresql.conf at initdb
        self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile), "-w",
                   "-t", str(self.start_timeout), "-o", f"-p {int(self.port)}", "start"],
                  timeout=self.start_timeout + 10)

    def stop(self, timeout: int = 60) -> None:
        """Fast shutdown; immediate if that does not finish. Safe when not running."""
        if not (self.datadir / "postmaster.pid").exists():
            return
        try:
            self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "-t", str(timeout), "stop"],
                      timeout=timeout + 10)
        except UserError:
            self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "-w", "stop"], timeout=30)

    def createdb(self, name: str) -> None:
        """Create a database unless it exists (by SQL with the name quoted: any name is only a name)."""
        res = self.query(f"SELECT 1 FROM pg_database WHERE datname = {quote_literal(name)}")
        if res.returncode == 0 and res.stdout.strip() == "1":
            return
        res = self.query(f"CREATE DATABASE {quote_ident(name)}", timeout=60)
        if res.returncode != 0:
            err = res.stderr.strip().splitlines()
            raise UserError(f"cannot create database {name}: {err[-1] if err else f'psql exit {res.returncode}'}")

    def pgbench(self) -> str:
        return self._bin("pgbench")

    def query(self, sql: str, dbname: str = "postgres", timeout: float = 30) -> subprocess.CompletedProcess:
        """``sql`` run by psql as a client of this cluster (unaligned, tuples only); the caller reads its
        returncode and stdout."""
        return subprocess.run([self._bin("psql"), "-XAtq", "-c", sql], capture_output=True, text=True,
                              env={**os.environ, **self.env(dbname)}, timeout=timeout)

    def __enter__(self) -> PgCluster:
        if not self.is_initialized():
            self.init()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
