"""Shared test plumbing: where the real fixtures are, and what this host can do.

In CI (``CI=true``) a missing capability (root, zfs-fuse, bpftrace, PostgreSQL,
the shared fixtures) is a failure, never a skip: those tests are the point.
Elsewhere such tests skip with a one-line reason; the shared fixtures' tier (files outside the
repository) is skipped as a whole, and the run says so in one line (:func:`shared_fixtures_missing`).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Awaitable, Callable, Dict, Generator, List, Optional, Set, Tuple, TypeVar, Union

import pytest
from hypothesis import settings

#: no per-example deadline: on a busy machine (CI's two cores shared with a lab soak, PostgreSQL, a guest) one
#: example of a property test took 466 ms against hypothesis's default 200 ms, a failure that says nothing
#: about the code; speed is measured in bench/, not here
settings.register_profile("zfsmon", deadline=None)
settings.load_profile("zfsmon")

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

T = TypeVar("T")
#: what a wait is for, in the failure message; a callable is asked at the deadline (e.g. for the last screen)
What = Union[str, Callable[[], str]]


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


def shared_fixtures_missing() -> str:
    """Why the shared fixtures cannot be read, or "" when they can: the one reason the whole tier gives."""
    root = fixtures_root()
    return "" if root.is_dir() else f"shared fixtures not found at {root} (set ZFSMON_FIXTURES)"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The genuine captures in ../shared/fixtures (read in place, never copied)."""
    why = shared_fixtures_missing()
    need(not why, why)
    return fixtures_root()


#: fixtures folders that fixture_files() found missing or empty, for the reason given to need() below
_MISSING_FIXTURES: List[Path] = []
#: the reason pytest gives a test parametrized over an empty list (pytest 7 to 9 all start with this)
_EMPTY_PARAMETER_SET = "got empty parameter set"
_VANISHED = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def fio_lab_recordings(tmp_path_factory) -> Dict[str, str]:
    """The issue-14 acceptance recordings (tests/data/fio/lab-acceptance: ceiling, l2arc, slog), gunzipped once."""
    d = Path(tmp_path_factory.mktemp("fio-lab"))
    return {name: gunzip(TEST_DATA / "fio" / "lab-acceptance" / f"{name}.zfsmon.gz", d)
            for name in ("ceiling", "l2arc", "slog")}


#: the other committed recordings: the OpenZFS 2.3 guest's, and one of schema 2
GUEST_RECORDING = TEST_DATA / "openzfs-2.3" / "recording" / "rec.zfsmon.gz"
V2_RECORDING = TEST_DATA / "store" / "v2-300ticks.zfsmon.gz"


@pytest.fixture(scope="session")
def real_recordings(tmp_path_factory, fio_lab_recordings) -> Dict[str, str]:
    """Every committed recording by name (ceiling, l2arc, slog: the lab's; guest: OpenZFS 2.3; v2: schema 2),
    gunzipped once."""
    d = Path(tmp_path_factory.mktemp("recordings"))
    return {**fio_lab_recordings, "guest": gunzip(GUEST_RECORDING, d), "v2": gunzip(V2_RECORDING, d)}


#: the real 100-minute soak on the lab (tests/data/zfsfuse/soak/PROVENANCE.md)
LAB_SOAK = TEST_DATA / "zfsfuse" / "soak" / "soak-100min.zfsmon.gz"


@pytest.fixture(scope="session")
def lab_soak_file(tmp_path_factory) -> str:
    """The real 100-minute lab soak's recording, gunzipped once."""
    return gunzip(LAB_SOAK, Path(tmp_path_factory.mktemp("lab-soak")))


@pytest.fixture(scope="session")
def lab_soak(lab_soak_file):
    """What ``zfsmon analyze`` reads of the lab soak, every reading (the kinds and metrics findings use), and its
    events: read once for the modules that check findings on it (samples are never changed by an analysis)."""
    from zfsmon.analysis import findings
    from zfsmon.store import Recording

    with Recording.open(lab_soak_file) as rec:
        return list(rec.samples(kinds=findings.KINDS, metrics=findings.reads_metric)), rec.events()


def fio_documents(text: str) -> List[dict]:
    """fio's JSON documents of an output, decoded with the json module alone: what tests compare the parser with."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while text.find("{", i) >= 0:
        doc, i = decoder.raw_decode(text, text.find("{", i))
        docs.append(doc)
    return docs


def gunzip(src: Path, directory: Path) -> str:
    """A committed ``NAME.gz`` recording, unpacked as ``directory/NAME`` (recordings are opened, never changed)."""
    path = directory / src.name[:-3]
    with gzip.open(src) as f, open(path, "wb") as dst:
        shutil.copyfileobj(f, dst)
    return str(path)


def fixture_files(sub: str) -> List[Path]:
    """For parametrize: every file of a fixtures folder (new files get tested automatically).

    A missing folder gives an empty list; the tests parametrized over it do not vanish: they go through
    need() when they run (pytest_collection_modifyitems below), so they fail in CI and skip elsewhere.
    """
    d = fixtures_root() / sub
    files = sorted(p for p in d.glob("*") if p.is_file()) if d.is_dir() else []
    if not files:
        _MISSING_FIXTURES.append(d)
    return files


def fixture_ids(paths: List[Path]) -> List[str]:
    return [p.name for p in paths]


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    """A test parametrized over nothing (shared fixtures missing, or a filter over them matching no file) would
    be skipped by pytest with a generic reason, in CI too: it goes through need() instead (pytest_runtest_setup)."""
    for item in items:
        empty = [m for m in item.own_markers
                 if m.name == "skip" and str(m.kwargs.get("reason", "")).startswith(_EMPTY_PARAMETER_SET)]
        if not empty:
            continue
        item.own_markers[:] = [m for m in item.own_markers if m not in empty]
        missing = ", ".join(sorted({str(d) for d in _MISSING_FIXTURES}))
        item.stash[_VANISHED] = (shared_fixtures_missing()
                                 or (f"shared fixtures missing or empty: {missing} (set ZFSMON_FIXTURES)" if missing
                                     else "parametrized over an empty list: a filter over the fixtures matched no file"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    why = item.stash.get(_VANISHED, None)
    if why is not None:
        need(False, why)


# --- the shared fixtures' tier, outside CI ------------------------------------------------------------------
# Without ../shared/fixtures (a fresh clone), the tests that read them cannot pass: those asking for the
# ``fixtures`` fixture skip through need(), but modules that list the captures when imported (fixture_files(),
# fixtures_root()) fail on what they did not find, as a KeyError or an empty sampled_from. Outside CI every such
# outcome is reported as one category, "skipped without the shared fixtures", and the run ends with one line
# naming the tier and the reason; in CI nothing here applies and they fail, as need() says. A test of a module
# that reads no fixture fails as ever (tests/unit/test_shared_fixtures_tier.py).

#: the category (pytest_report_teststatus) of a test of the tier skipped for want of the shared fixtures
TIER_SKIPPED = "skipped without the shared fixtures"
#: the user property that puts a report in that category
_TIER_MARK = ("zfsmon_tier", "shared fixtures")
_tier_skips: List[str] = []
_reads_cache: Dict[str, bool] = {}
#: what a module that reads the shared fixtures calls (the names it imports from this module)
_READERS = ("fixtures_root", "fixture_files")


def _source_reads_fixtures(module: ModuleType) -> bool:
    path = getattr(module, "__file__", None)
    try:
        text = Path(path).read_text() if path else ""
    except OSError:
        return False
    return any(name in text for name in _READERS)


def reads_shared_fixtures(module: ModuleType, _seen: Optional[Set[str]] = None) -> bool:
    """Whether a test module reads the shared fixtures: it, or a helper module of tests/ that it imports
    (tests/unit/top_data.py, bad_input.py, ...), calls fixtures_root() or fixture_files()."""
    name = module.__name__
    if name in _reads_cache:
        return _reads_cache[name]
    seen = _seen if _seen is not None else set()
    seen.add(name)
    found = _source_reads_fixtures(module)
    for value in list(vars(module).values()):
        if found:
            break
        helper = value if isinstance(value, ModuleType) else sys.modules.get(getattr(value, "__module__", "") or "")
        if (helper is not None and helper.__name__.startswith("tests.") and helper.__name__ != __name__
                and helper.__name__ not in seen):
            found = reads_shared_fixtures(helper, seen)
    _reads_cache[name] = found
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """Outside CI, without the shared fixtures: a test of a module that reads them, failed or skipped for it,
    is reported in the tier's category (its outcome a skip with the tier's reason)."""
    report = yield
    assert isinstance(report, pytest.TestReport)
    why = shared_fixtures_missing()
    if IN_CI or not why or report.passed:
        return report
    reader = isinstance(item, pytest.Function) and reads_shared_fixtures(item.module)
    skipped_for_it = report.skipped and (why in str(report.longrepr)
                                         or reader and "shared fixture" in str(report.longrepr))
    if skipped_for_it or report.failed and reader:
        path, line, _ = item.location
        report.outcome = "skipped"
        report.longrepr = (path, (line or 0) + 1, f"Skipped: {why}")
        report.user_properties.append(_TIER_MARK)
    return report


def pytest_report_teststatus(report: pytest.TestReport) -> Optional[Tuple[str, str, str]]:
    if _TIER_MARK in getattr(report, "user_properties", ()) and report.skipped:
        return TIER_SKIPPED, "s", "SKIPPED (no shared fixtures)"
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _TIER_MARK in report.user_properties and report.nodeid not in _tier_skips:
        _tier_skips.append(report.nodeid)


def pytest_terminal_summary(terminalreporter) -> None:
    """The one line a run without the shared fixtures ends with: which tier it skipped, and why."""
    if _tier_skips:
        terminalreporter.write_line(f"run-tests: {shared_fixtures_missing()}: the shared-fixtures tier is skipped "
                                    f"({len(_tier_skips)} tests that read them; with CI=true they fail)")


def _timed_out(timeout: float, what: What) -> None:
    pytest.fail(f"timed out after {timeout:g} s waiting for {what() if callable(what) else what}")


def wait_until(predicate: Callable[[], T], timeout: float, what: What, step: float = 0.1) -> T:
    """Poll ``predicate`` until it returns something true (which is returned); fail after ``timeout`` seconds.

    Tests wait for the condition they need, never for a fixed time: a busy machine only makes them slower.
    Give a generous ``timeout`` (tens of seconds): it only bounds a test that would otherwise hang.
    """
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            _timed_out(timeout, what)
        time.sleep(step)


async def wait_until_async(predicate: Callable[[], T], timeout: float, what: What,
                           pause: Callable[[float], Awaitable[object]], step: float = 0.05) -> T:
    """:func:`wait_until` inside an event loop: ``pause`` yields to it (Textual's ``pilot.pause``) between polls."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            _timed_out(timeout, what)
        await pause(step)


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
    _LAB_CONFIGS[cfg.pool] = cfg
    try:
        yield info
    finally:
        labmod.down(cfg.pool, log=lambda *_: None)


#: the session lab's configuration, by pool: what revive_lab builds again
_LAB_CONFIGS: Dict[str, object] = {}


def revive_lab(info) -> bool:
    """Build the session lab again if zfs-fuse died under it; returns whether it had to.

    Why: the daemon died once under load in the fault tests (docs/lab.md, "When zfs-fuse dies"), and every later
    lab test of that session then failed on the dead daemon. Now the test it died in fails, and the next finds a
    lab again: the same pool, dataset and mountpoint (``lab.up`` clears what the dead one left, its mounts too).
    """
    from zfsmon import lab as labmod
    from zfsmon.host import zfs_fuse_pid

    if zfs_fuse_pid() is not None:
        return False
    fresh = labmod.up(_LAB_CONFIGS[info.pool], log=lambda *_: None)
    for f in dataclasses.fields(fresh):  # the loop devices may be others: the session's LabInfo is what tests hold
        object.__setattr__(info, f.name, getattr(fresh, f.name))
    return True


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
def _lab_around_test(request):
    """Around each test that uses the session lab: before it, a lab whose daemon died is built again
    (:func:`revive_lab`); after it, the files it left are removed, so the pool never fills up.

    (A full zfs-fuse pool does not fail writes cleanly: the daemon can die on an assertion.)
    Directories, such as a PostgreSQL cluster's, stay.
    """
    if "lab" not in request.fixturenames:
        yield
        return
    info = request.getfixturevalue("lab")
    if revive_lab(info):
        warnings.warn(f"zfs-fuse had died: lab {info.pool} built again before {request.node.nodeid}",
                      pytest.PytestWarning, stacklevel=1)
    yield
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
