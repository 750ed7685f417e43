"""Where zfsmon finds dtrace/ and bpftrace/: $ZFSMON_SCRIPTS, else the installed package's data, else the tree."""

from __future__ import annotations

import importlib.resources

from tests.conftest import REPO
from zfsmon.trace import catalog


def test_the_environment_variable_wins(monkeypatch, tmp_path):
    (tmp_path / "zfsmon" / "share" / "bpftrace").mkdir(parents=True)
    monkeypatch.setattr(importlib.resources, "files", lambda pkg: tmp_path / pkg)
    monkeypatch.setenv("ZFSMON_SCRIPTS", "/opt/my-scripts")
    assert str(catalog.scripts_root()) == "/opt/my-scripts"


def test_an_installed_package_uses_its_package_data(monkeypatch, tmp_path):
    """A wheel install: zfsmon/share/{dtrace,bpftrace} next to the modules (setup.py puts them there)."""
    (tmp_path / "zfsmon" / "share" / "bpftrace").mkdir(parents=True)
    (tmp_path / "zfsmon" / "share" / "bpftrace" / "blklat.bt").write_text("BEGIN {}\n")
    monkeypatch.setattr(importlib.resources, "files", lambda pkg: tmp_path / pkg)
    monkeypatch.delenv("ZFSMON_SCRIPTS", raising=False)
    assert catalog.scripts_root() == tmp_path / "zfsmon" / "share"
    spec = catalog.SCRIPTS["blklat"]
    assert catalog.script_path(spec, "bpftrace") == tmp_path / "zfsmon" / "share" / "bpftrace" / "blklat.bt"


def test_the_source_tree_has_no_copy_and_uses_its_own_folders(monkeypatch):
    monkeypatch.delenv("ZFSMON_SCRIPTS", raising=False)
    assert not (REPO / "zfsmon" / "share" / "bpftrace").exists()  # never committed twice
    assert catalog.scripts_root() == REPO
    for spec in catalog.SCRIPTS.values():
        for family in spec.files:
            assert catalog.script_path(spec, family).is_file()
