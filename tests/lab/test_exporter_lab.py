"""The exporter on the real zfs-fuse lab: a scrape shows the lab's vdevs with their roles, log and cache included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from typing import Dict, List, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO, free_loopback_port, wait_until
from tests.lab.helpers import write_file

pytestmark = [pytest.mark.lab]


def _scrape(port: int) -> Dict[str, List[Tuple[str, Dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def _vdev_roles(fams, pool: str) -> Dict[str, str]:
    return {lab["vdev"]: lab["role"] for _n, lab, _v in fams.get("zfsmon_vdev_write_ops_per_second", [])
            if lab.get("pool") == pool}


def _raw_hits(lab) -> float:
    with open(os.path.join(lab.kstat_dir, "arcstats", "hits")) as fh:
        return float(fh.read())


def test_exporter_shows_the_lab_vdevs_with_log_and_cache_roles(lab):
    port = free_loopback_port()
    hits_before = _raw_hits(lab)
    # a real process, stopped by SIGTERM as a service manager would (--duration bounds it if the test dies)
    proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "exporter", "--pool", lab.pool, "--interval", "1",
                             "--listen", f"127.0.0.1:{port}", "--duration", "120", "zpool", "arcstats"],
                            cwd=str(REPO), stderr=subprocess.PIPE, text=True)
    try:
        def every_role_scraped():
            """A scrape with vdevs of every role and the ARC, or None; real writes meanwhile (the SLOG gets some)."""
            write_file(os.path.join(lab.mountpoint, "exporter.bin"), 4)
            try:
                fams = _scrape(port)
            except OSError:  # not listening yet
                return None
            ok = {"data", "log", "cache"} <= set(_vdev_roles(fams, lab.pool).values()) and "zfsmon_arc_hits" in fams
            return fams if ok else None

        fams = wait_until(every_role_scraped, 90, "a scrape with data, log and cache vdevs and the ARC", step=0.5)
        roles = _vdev_roles(fams, lab.pool)
        log = os.path.basename(lab.devices["log"][0])
        cache = os.path.basename(lab.devices["cache"][0])
        assert roles.get(log) == "log", roles
        assert roles.get(cache) == "cache", roles
        assert sorted(v for v, r in roles.items() if r == "data") == ["mirror-0", "mirror-1"], roles
        parents = {lab_["vdev"]: lab_["parent"] for _n, lab_, _v in fams["zfsmon_vdev_read_ops_per_second"]
                   if lab_.get("pool") == lab.pool}
        assert set(parents.values()) == {lab.pool}
        leaves = {lab_["device"]: (lab_["role"], lab_["parent"]) for _n, lab_, _v in
                  fams["zfsmon_leaf_write_ops_per_second"] if lab_.get("pool") == lab.pool}
        for dev in lab.devices["data"]:
            role, parent = leaves[os.path.basename(dev)]
            assert role == "data" and parent in ("mirror-0", "mirror-1")
        # ARC hits is the raw cumulative kstat value: read after the exporter started and before this scrape
        hits = _scrape(port)["zfsmon_arc_hits"][0][2]
        assert hits_before <= hits <= _raw_hits(lab)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"on http://127.0.0.1:{port}/metrics" in err and "Traceback" not in err
