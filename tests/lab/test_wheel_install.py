"""zfsmon installed from its wheel works anywhere: built (sdist, then the wheel from the sdist), installed into a
fresh virtualenv outside the source tree, and run from a directory outside it: doctor, trace --list, and a
real trace of the lab with the trace scripts the wheel carries."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import REPO, need, wait_until
from tests.lab.helpers import collect_lines, drop_host_caches, random_reads, write_file
from zfsmon.cli import COMMANDS
from zfsmon.trace import catalog
from zfsmon.trace.collector import ensure_tracefs

pytestmark = [pytest.mark.lab, pytest.mark.slow]

#: every script the catalog names, as the repository holds it (dtrace/..., bpftrace/...)
SCRIPT_FILES = sorted({rel for spec in catalog.SCRIPTS.values() for rel in spec.files.values()})


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Dict[str, Path]:
    """`python -m build`: the sdist from the tree, then the wheel built from that sdist (as PyPI users get it)."""
    need(subprocess.run([sys.executable, "-m", "build", "--version"], capture_output=True).returncode == 0,
         "the build front end is not installed (pip install build: it is in the test extra)")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sdist,) = out.glob("zfsmon-*.tar.gz")
    (wheel,) = out.glob("zfsmon-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv outside the source tree with the wheel (and the exporter extra) installed."""
    root = tmp_path_factory.mktemp("install")
    assert REPO not in root.parents
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    proc = subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                           f"{dist['wheel']}[exporter]"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env_dir


def clean_env() -> Dict[str, str]:
    """The environment of a user who never saw the source tree: no PYTHONPATH into it, no ZFSMON_SCRIPTS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "ZFSMON_SCRIPTS")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO)))
    return env


def run(venv: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=timeout)


def test_sdist_carries_the_trace_scripts_and_share(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for rel in SCRIPT_FILES:
        assert rel in names, rel
    assert {"setup.py", "MANIFEST.in", "docs/man/zfsmon.1"} <= names
    assert {"zfsmon/share/systemd/zfsmon-exporter.service", "zfsmon/share/smf/zfsmon-record.xml"} <= names


def test_wheel_carries_the_scripts_as_package_data(dist):
    with zipfile.ZipFile(dist["wheel"]) as whl:
        names = set(whl.namelist())
        for rel in SCRIPT_FILES:  # byte for byte the repository's script
            assert whl.read(f"zfsmon/share/{rel}") == (REPO / rel).read_bytes(), rel
    shared = {f"zfsmon/share/{p.relative_to(REPO / 'zfsmon' / 'share')}"
              for p in (REPO / "zfsmon" / "share").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert "zfsmon/share/systemd/zfsmon-record.service" in shared
    assert shared <= names, shared - names  # units, manifests, dashboard, alert rules: all of share/
    assert any(n.endswith(".data/data/share/man/man1/zfsmon.1") for n in names)
    assert not any(n.startswith(("dtrace/", "bpftrace/", "tests/")) for n in names)


def test_installed_zfsmon_runs_from_outside_the_tree(venv, tmp_path):
    where = run(venv, tmp_path, "python", "-c", "import zfsmon, zfsmon.trace.catalog as c; "
                "print(zfsmon.__file__); print(c.scripts_root())")
    assert where.returncode == 0, where.stderr
    module, scripts = (Path(line) for line in where.stdout.split())
    assert venv in module.parents and venv in scripts.parents, where.stdout  # not the source tree
    assert REPO not in module.parents
    for rel in SCRIPT_FILES:
        assert (scripts / rel).is_file(), rel

    doctor = run(venv, tmp_path, "zfsmon", "doctor")
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "zpool" in doctor.stdout and "bpftrace" in doctor.stdout, doctor.stdout

    listed = run(venv, tmp_path, "zfsmon", "trace", "--list")
    assert listed.returncode == 0, listed.stderr
    for name in catalog.SCRIPTS:
        assert any(line.startswith(name + " ") for line in listed.stdout.splitlines()), name

    assert (venv / "share" / "man" / "man1" / "zfsmon.1").read_text() == (REPO / "docs/man/zfsmon.1").read_text()
    completion = run(venv, tmp_path, "zfsmon", "completion", "bash")
    assert completion.returncode == 0 and all(m.NAME in completion.stdout for m in COMMANDS)


def test_installed_zfsmon_traces_the_lab(venv, lab, require_bpftrace, tmp_path):
    """`zfsmon trace vdevlat` from the virtualenv, on the lab under random reads: bpftrace runs the wheel's
    fusevdevlat.bt, its protocol lines come back parsed into rows per vdev with the lab's roles."""
    problem = ensure_tracefs()
    assert problem is None, problem
    path = os.path.join(lab.mountpoint, "wheel-trace.bin")
    if not os.path.exists(path):
        write_file(path, 96)  # larger than the lab's 64 MB ARC, so reads reach the vdevs
    proc = subprocess.Popen([str(venv / "bin" / "zfsmon"), "trace", "vdevlat", "1", "--csv", "--pool", lab.pool],
                            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: List[str] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        reader = collect_lines(proc.stdout, lines)
        data_leaves = {os.path.basename(d) for d in lab.devices["data"]}

        def rows() -> List[Dict[str, str]]:
            text = "".join(lines)
            return list(csv.DictReader(io.StringIO(text))) if text.startswith("ts,") else []

        def leaves_read() -> set:
            drop_host_caches()
            random_reads(path, 500, seed=len(lines))
            return {r["entity"] for r in rows() if r["pool"] == lab.pool and r["role"] == "data"
                    and r["op"] == "read" and float(r["ops"]) > 0} >= data_leaves

        wait_until(leaves_read, 180, "read rows for every data leaf of the lab from the installed zfsmon trace",
                   step=0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=30)
        err = proc.stderr.read()
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        got = rows()
        assert {r["script"] for r in got} == {"fusevdevlat"}  # vdevlat on zfs-fuse: the zfs-fuse script
        assert {r["entity"] for r in got if r["pool"] == lab.pool} >= data_leaves | {"mirror-0", "mirror-1"}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
