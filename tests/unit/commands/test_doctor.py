"""`zfsmon doctor` on this kind of machine: zfs-fuse and bpftrace there, kernel ZFS and DTrace not."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import need


def _doctor_json() -> dict:
    out = subprocess.run([sys.executable, "-m", "zfsmon", "doctor", "--json"], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout)


def _check(doc: dict, name: str) -> dict:
    return next(c for c in doc["checks"] if c["name"] == name)


@pytest.mark.lab  # root, zfs-fuse installed, bpftrace and pgbench: the lab machine
@pytest.mark.bpftrace
@pytest.mark.postgres
def test_doctor_on_this_host(require_bpftrace):
    need(shutil.which("zfs-fuse") is not None, "zfs-fuse not installed")
    doc = _doctor_json()
    assert doc["system"] == "Linux"
    assert doc["flavour"] == "zfs-fuse"
    zf = _check(doc, "zfs-fuse")
    assert zf["ok"] and "installed" in zf["detail"]
    bt = _check(doc, "bpftrace")
    assert bt["ok"] and "bpftrace v" in bt["detail"] and "kprobes no" in bt["detail"]
    kz = _check(doc, "kernel zfs")
    assert not kz["ok"] and "/sys/module/zfs" in kz["detail"]
    dt = _check(doc, "dtrace")
    assert not dt["ok"] and "not found" in dt["detail"]
    pg = _check(doc, "pgbench")
    assert pg["ok"] and "PostgreSQL" in pg["detail"]


@pytest.mark.lab
def test_doctor_with_the_lab_up_finds_kstats_and_probes_zpool(lab):
    doc = _doctor_json()
    arc = _check(doc, "arcstats")
    assert arc["ok"] and "/zfs-kstat/zfs/arcstats" in arc["detail"]
    zp = _check(doc, "zpool")
    # zfs-fuse's zpool knows only the classic flags: probed, not assumed
    assert zp["ok"] and zp["detail"] == "accepts -v -T"
    zil = _check(doc, "zil")
    assert not zil["ok"] and "no ZIL kstat" in zil["detail"]


def test_doctor_text_has_one_line_per_check():
    out = subprocess.run([sys.executable, "-m", "zfsmon", "doctor"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[0].startswith("host ")
    assert all(ln.split()[0] in ("ok", "absent") for ln in lines[1:])
