"""Shared test plumbing: where the real fixtures are, and what this host can do.

In CI (``CI=true``) a missing capability (root, zfs-fuse, bpftrace, PostgreSQL,
the shared fixtures) is a failure, never a skip: those tests are the point.
Elsewhere such tests skip with a one-line reason.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(ok: bool, why: str) -> None:
    """Skip (outside CI) or fail (in CI) when a capability is missing."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"CI must have this capability: {why}", pytrace=False)
    pytest.skip(why)


def fixtures_root() -> Path:
    env = os.environ.get("ZFSMON_FIXTURES")
    return Path(env) if env else REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The genuine captures in ../shared/fixtures (read in place, never copied)."""
    root = fixtures_root()
    need(root.is_dir(), f"shared fixtures not found at {root} (set ZFSMON_FIXTURES)")
    return root


def fixture_files(sub: str) -> List[Path]:
    """For parametrize: every file of a fixtures folder (new files get tested automatically)."""
    d = fixtures_root() / sub
    return sorted(p for p in d.glob("*") if p.is_file()) if d.is_dir() else []


def fixture_ids(paths: List[Path]) -> List[str]:
    return [p.name for p in paths]


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 right now, for a server started by a test (tiny race: fine for tests)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def require_root() -> None:
    need(os.geteuid() == 0, "needs root")


@pytest.fixture
def require_bpftrace(require_root: None) -> None:
    need(shutil.which("bpftrace") is not None, "bpftrace not installed")


# --- the zfs-fuse lab ------------------------------------------------------------------------------------------

def _lab_capable() -> str:
    """Empty if a lab can be built here, else why not."""
    from zfsmon.lab import system

    try:
        system.check_can_build()
    except system.LabError as exc:
        return str(exc)
    return ""


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A real zfs-fuse pool for this test session, with a unique name; removed at the end.

    Sizes are small so that tests stay quick; the layout is the lab's (2 mirrors, log, cache).
    """
    why = _lab_capable()
    need(not why, f"zfs-fuse lab unavailable: {why}")
    from zfsmon import lab as labmod
    from zfsmon.lab.config import LabConfig

    cfg = LabConfig(pool=f"zt{os.getpid()}", directory=str(tmp_path_factory.mktemp("lab")), data_mb=512,
                    log_mb=128, cache_mb=384, arc_mb=64)
    info = labmod.up(cfg, log=lambda *_: None)
    try:
        yield info
    finally:
        labmod.down(cfg.pool, log=lambda *_: None)


# --- PostgreSQL --------------------------------------------------------------------------------------------------

def _postgres_missing() -> str:
    """Empty if a throw-away PostgreSQL cluster can be run here (server binaries, pgbench, a non-root owner)."""
    import pwd

    from zfsmon.workload.pgcluster import find_bindir

    bindir = find_bindir()
    if bindir is None or not (bindir / "pgbench").exists() and shutil.which("pgbench") is None:
        return "PostgreSQL server binaries and pgbench not installed (/usr/lib/postgresql/*/bin)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root but there is no 'postgres' user to own a cluster"
    return ""


@pytest.fixture
def require_postgres() -> None:
    why = _postgres_missing()
    need(not why, why)


@pytest.fixture(autouse=True)
def _lab_files_removed(request):
    """Files a test leaves on the shared session lab are removed after it, so the pool never fills up.

    (A full zfs-fuse pool does not fail writes cleanly: the daemon can die on an assertion.)
    Directories, such as a PostgreSQL cluster's, stay.
    """
    yield
    if "lab" not in request.fixturenames:
        return
    info = request.getfixturevalue("lab")
    try:
        names = os.listdir(info.mountpoint)
    except OSError:
        return
    for name in names:
        path = os.path.join(info.mountpoint, name)
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                os.unlink(path)
            except OSError:
                pass
