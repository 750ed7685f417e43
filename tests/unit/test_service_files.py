"""The service files shipped in zfsmon/share: systemd units (verified by systemd-analyze, hardened, their
command lines run for real) and illumos SMF manifests (well-formed, in the DTD's order, valid command lines)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.conftest import REPO, free_loopback_port, need, wait_until
from zfsmon.cli import build_parser

SHARE = REPO / "zfsmon" / "share"
SYSTEMD = SHARE / "systemd"
SMF = SHARE / "smf"
UNITS = ("zfsmon-exporter.service", "zfsmon-record.service")
#: where docs/service.md installs zfsmon (a virtualenv), named by every unit and manifest
BINARY = "/opt/zfsmon/bin/zfsmon"
#: the highest `systemd-analyze security` exposure a shipped unit may have (0 = locked down, 10 = exposed)
MAX_EXPOSURE = 1.6


def unit_entries(path: Path) -> Dict[str, List[Tuple[str, str]]]:
    """A unit file as section -> [(key, value)], repeated keys kept (SystemCallFilter= appears twice)."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    section = ""
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out.setdefault(section, [])
        else:
            key, _, value = line.partition("=")
            out[section].append((key, value))
    return out


def service_value(path: Path, key: str) -> str:
    values = [v for k, v in unit_entries(path)["Service"] if k == key]
    assert len(values) == 1, (path.name, key, values)
    return values[0]


def default_env(path: Path) -> Dict[str, str]:
    env = {}
    for k, v in unit_entries(path)["Service"]:
        if k == "Environment":
            name, _, value = shlex.split(v)[0].partition("=")
            env[name] = value
    return env


def exec_argv(path: Path, extra: str = "") -> List[str]:
    """ExecStart as systemd splits it, with the unit's default $VARIABLES expanded (plus ``extra`` words)."""
    env = default_env(path)
    words = []
    for w in shlex.split(service_value(path, "ExecStart")):
        m = re.fullmatch(r"\$(\w+)", w)
        words.extend(shlex.split(env[m.group(1)] + " " + extra) if m else [w])
    return words


@pytest.fixture(scope="module")
def systemd_root(tmp_path_factory) -> Path:
    """A file-system root for `systemd-analyze --root`: systemd's own units, ours, and an executable zfsmon at
    the path the units name (verify checks that it exists)."""
    need(shutil.which("systemd-analyze") is not None, "systemd-analyze not installed (Debian: systemd)")
    system_units = next((p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
                         if (p / "sysinit.target").exists()), None)
    need(system_units is not None, "systemd's units (sysinit.target) not found")
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(system_units, root / "usr/lib/systemd/system", symlinks=True)
    exe = root / BINARY.lstrip("/")
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return root


def install(root: Path, unit: str, text: str, dropins: Tuple[str, ...] = ()) -> None:
    """The unit (and drop-ins) as the only ones in the root's /etc/systemd/system, as docs/service.md installs them."""
    etc = root / "etc/systemd/system"
    shutil.rmtree(etc, ignore_errors=True)
    etc.mkdir(parents=True)
    (etc / unit).write_text(text)
    if dropins:
        (etc / f"{unit}.d").mkdir()
        for d in dropins:
            shutil.copy(SYSTEMD / d, etc / f"{unit}.d" / d)


def analyze(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["systemd-analyze", *args, f"--root={root}"], capture_output=True, text=True, timeout=120)


def verify(root: Path, unit: str, dropins: Tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    install(root, unit, (SYSTEMD / unit).read_text(), dropins)
    return analyze(root, "verify", "--man=no", unit)


@pytest.mark.parametrize("unit,dropins", [(u, ()) for u in UNITS] + [(u, ("zfsmon-root.conf",)) for u in UNITS]
                         + [("zfsmon-record.service", ("zfsmon-trace.conf",))])
def test_systemd_analyze_verify_passes_without_a_warning(systemd_root, unit, dropins):
    out = verify(systemd_root, unit, dropins)
    assert out.returncode == 0 and out.stderr == "" and out.stdout == "", out.stderr + out.stdout


def test_verify_does_fail_on_a_broken_unit(systemd_root):
    """The check above can fail: an unknown key, or the binary missing, is reported."""
    install(systemd_root, "zfsmon-bad.service", (SYSTEMD / UNITS[0]).read_text()
            .replace("NoNewPrivileges=yes", "NoNewPrivilege=yes").replace(BINARY, "/opt/zfsmon/bin/zfsmon-missing"))
    out = analyze(systemd_root, "verify", "--man=no", "zfsmon-bad.service")
    assert "NoNewPrivilege" in out.stderr and "zfsmon-missing" in out.stderr and out.returncode != 0


@pytest.mark.parametrize("unit", UNITS)
def test_units_are_hardened(systemd_root, unit):
    path = SYSTEMD / unit
    assert service_value(path, "NoNewPrivileges") == "yes"
    assert service_value(path, "ProtectSystem") == "strict"
    assert service_value(path, "CapabilityBoundingSet") == "" and service_value(path, "AmbientCapabilities") == ""
    assert service_value(path, "DynamicUser") == "yes"
    assert exec_argv(path)[0] == BINARY
    install(systemd_root, unit, path.read_text())
    out = analyze(systemd_root, "security", "--offline=yes", unit)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", out.stdout)
    assert m, out.stdout[-2000:] + out.stderr
    assert float(m.group(1)) <= MAX_EXPOSURE, out.stdout


def test_the_trace_dropin_grants_only_what_bpftrace_needs():
    caps = service_value(SYSTEMD / "zfsmon-trace.conf", "CapabilityBoundingSet").split()
    assert sorted(caps) == ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"]
    assert service_value(SYSTEMD / "zfsmon-root.conf", "User") == "root"
    assert "CapabilityBoundingSet" not in dict(unit_entries(SYSTEMD / "zfsmon-root.conf")["Service"])


def _zfsmon_argv(argv: List[str]) -> List[str]:
    assert argv[0] == BINARY
    return [sys.executable, "-m", "zfsmon", *argv[1:]]


def test_record_units_command_line_rotates_into_a_new_file_per_run(tmp_path):
    """The unit's own ExecStart (its day shortened to 2 s, /proc/diskstats as the source), run twice the way
    Restart=always runs it: two recordings (names stamped to the second, and a run lasts 2 s), each readable."""
    argv = exec_argv(SYSTEMD / "zfsmon-record.service", extra="--interval 0.5 diskstats")
    assert argv[argv.index("--duration") + 1] == "1d"
    argv[argv.index("--duration") + 1] = "2s"
    for _ in range(2):
        # StateDirectory= gives the service STATE_DIRECTORY (and its working directory); this checkout's zfsmon
        out = subprocess.run(_zfsmon_argv(argv), cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(REPO), "STATE_DIRECTORY": str(tmp_path)})
        assert out.returncode == 0 and out.stderr == "", out.stderr
    files = sorted(tmp_path.glob("zfsmon-*.zfsmon"))
    assert len(files) == 2, files
    for f in files:
        info = json.loads(subprocess.run([sys.executable, "-m", "zfsmon", "info", "--json", str(f)],
                                         capture_output=True, text=True, timeout=120, check=True).stdout)
        assert info["samples"] > 0 and info["meta"]["argv"].startswith("zfsmon record --quiet --duration")


def test_exporter_units_command_line_serves_metrics():
    need(importlib.util.find_spec("prometheus_client") is not None, "prometheus_client not installed (test extra)")
    port = free_loopback_port()
    argv = exec_argv(SYSTEMD / "zfsmon-exporter.service",
                     extra=f"--listen 127.0.0.1:{port} --interval 0.5 --duration 30s diskstats")
    proc = subprocess.Popen(_zfsmon_argv(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def scrape() -> str:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    body = r.read().decode()
            except OSError:
                return ""
            return body if "zfsmon_device_" in body else ""
        assert "zfsmon_device_" in wait_until(scrape, 60, "the exporter's /metrics with device series")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_tmpfiles_rule_removes_old_recordings_and_keeps_the_current_one(tmp_path):
    tmpfiles = shutil.which("systemd-tmpfiles")
    need(tmpfiles is not None, "systemd-tmpfiles not installed (Debian: systemd)")
    state = tmp_path / "var/lib/private/zfsmon"
    state.mkdir(parents=True)
    (tmp_path / "var/lib/zfsmon").symlink_to("private/zfsmon")  # how DynamicUser= lays out a state directory
    old, new = state / "zfsmon-h-20200101T000000Z.zfsmon", state / "zfsmon-h-20200201T000000Z.zfsmon"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    past = time.time() - 31 * 86400
    os.utime(old, (past, past))
    out = subprocess.run([tmpfiles, "--clean", f"--root={tmp_path}", str(SYSTEMD / "zfsmon.tmpfiles.conf")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert not old.exists() and new.exists()


# --- illumos SMF ---------------------------------------------------------------------------------------------

MANIFESTS = sorted(SMF.glob("*.xml"))
#: the order service_bundle.dtd.1 gives a <service>'s children (each at most once except those marked *)
SERVICE_ORDER = ("create_default_instance", "single_instance", "restarter", "dependency", "dependent",
                 "method_context", "exec_method", "property_group", "instance", "stability", "template")


def test_there_is_a_manifest_per_unit():
    assert [m.name for m in MANIFESTS] == ["zfsmon-exporter.xml", "zfsmon-record.xml"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_smf_manifest_is_well_formed_and_in_the_dtds_order(path):
    text = path.read_text()
    assert '<!DOCTYPE service_bundle SYSTEM "/usr/share/lib/xml/dtd/service_bundle.dtd.1">' in text
    bundle = ET.fromstring(text)
    assert bundle.tag == "service_bundle" and bundle.get("type") == "manifest"
    (service,) = bundle.findall("service")
    assert service.get("name").startswith("application/zfsmon/") and service.get("type") == "service"
    ranks = [SERVICE_ORDER.index(child.tag) for child in service]
    assert ranks == sorted(ranks), [c.tag for c in service]
    assert service.find("template/common_name/loctext") is not None  # a manifest needs a template
    methods = {m.get("name"): m for m in service.findall("exec_method")}
    assert set(methods) == {"start", "stop"}
    for m in methods.values():
        assert m.get("type") == "method" and m.get("timeout_seconds", "").isdigit()
    assert methods["stop"].get("exec") == ":kill"  # SIGTERM: both commands stop cleanly on it
    cred = service.find("method_context/method_credential")
    assert cred is not None and cred.get("user") not in ("root", "0") and cred.get("privileges", "").startswith("basic")
    props = {p.get("name"): p.get("value") for p in service.findall("property_group[@name='config']/propval")}
    start = methods["start"].get("exec")
    used = re.findall(r"%\{config/(\w+)\}", start)
    assert used and set(used) == set(props), (used, props)
    # the start command is a real zfsmon command line: the parser accepts it with the defaults filled in
    words = shlex.split(re.sub(r"%\{config/(\w+)\}", lambda m: props[m.group(1)], start))
    assert words[0] == BINARY and words[-1] == "&"
    args = build_parser().parse_args(words[1:-1])
    assert args.command == service.get("name").rsplit("/", 1)[-1]
