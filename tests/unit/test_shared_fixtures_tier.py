"""A run without the shared fixtures (../shared/fixtures: a fresh clone) skips their tier in one line outside CI,
and fails it in CI (tests/conftest.py, ``shared_fixtures_missing``).

Each test runs pytest on a small module of its own with tests/conftest.py loaded as a plugin and
ZFSMON_FIXTURES pointing at a folder that does not exist; the module reads the fixtures the ways the suite does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

from tests.conftest import REPO

#: a module of the tier: a list made at import, the ``fixtures`` fixture, a parametrization over the list, and a
#: test that needs nothing of them
READER = '''
import pytest
from tests.conftest import fixture_files

FILES = fixture_files("arcstats")
BY_NAME = {p.name: p for p in FILES}


def test_reads_a_capture_listed_at_import():
    assert BY_NAME["linux-2.3.arcstats"].read_text()


def test_asks_for_the_fixture(fixtures):
    assert (fixtures / "arcstats").is_dir()


@pytest.mark.parametrize("path", FILES)
def test_each_capture(path):
    assert path.stat().st_size


def test_needs_no_capture():
    assert sorted(BY_NAME) == [p.name for p in FILES]
'''

#: a module that reads no fixture: its failure stays a failure whatever the fixtures
BYSTANDER = '''
def test_fails_on_its_own():
    assert 1 + 1 == 3
'''


def _run(tmp_path: Path, ci: bool, *modules: str) -> subprocess.CompletedProcess:
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if k != "CI"}
    env["ZFSMON_FIXTURES"] = str(tmp_path / "no-such-fixtures")
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "-rfEs", "-q", "--rootdir", str(tmp_path), *modules],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_outside_ci_the_tier_is_skipped_in_one_line(tmp_path):
    cp = _run(tmp_path, False, _write(tmp_path, "test_reader.py", READER))
    out = cp.stdout
    assert cp.returncode == 0, out + cp.stderr
    missing = tmp_path / "no-such-fixtures"
    lines = [ln for ln in out.splitlines() if "shared fixtures not found" in ln]
    assert lines == [f"run-tests: shared fixtures not found at {missing} (set ZFSMON_FIXTURES): the shared-fixtures "
                     "tier is skipped (3 tests that read them; with CI=true they fail)"], out
    assert "1 passed, 3 skipped without the shared fixtures" in out
    assert "FAILED" not in out and "ERROR" not in out


def test_in_ci_the_tier_fails(tmp_path):
    cp = _run(tmp_path, True, _write(tmp_path, "test_reader.py", READER))
    out = cp.stdout
    assert cp.returncode == 1, out + cp.stderr
    assert f"CI must have this capability: shared fixtures not found at {tmp_path / 'no-such-fixtures'}" in out
    assert "1 failed, 1 passed, 2 errors" in out  # the KeyError of the list made at import, the two need()s
    assert "skipped without the shared fixtures" not in out and "run-tests:" not in out


def test_outside_ci_a_failure_of_a_module_that_reads_no_fixture_still_fails(tmp_path):
    cp = _run(tmp_path, False, _write(tmp_path, "test_reader.py", READER),
              _write(tmp_path, "test_bystander.py", BYSTANDER))
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert any(ln.startswith("FAILED ") and "test_bystander.py::test_fails_on_its_own" in ln
               for ln in cp.stdout.splitlines()), cp.stdout
    assert "1 failed, 1 passed, 3 skipped without the shared fixtures" in cp.stdout
