"""`zfsmon record --trace vdevlat` on the lab: latency distributions land in the recording beside the counters."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from tests.conftest import REPO
from tests.lab.helpers import write_file
from zfsmon.model import Kind
from zfsmon.store import Recording

pytestmark = [pytest.mark.bpftrace, pytest.mark.lab]


def test_record_with_trace_source(lab, require_bpftrace, tmp_path):
    out = str(tmp_path / "trace.zfsmon")
    path = os.path.join(lab.mountpoint, "tr.bin")
    t = threading.Timer(2.0, write_file, args=(path, 32))
    t.start()
    try:
        cp = subprocess.run([sys.executable, "-m", "zfsmon", "record", "--pool", lab.pool, "--trace", "vdevlat",
                             "--duration", "7", "--interval", "1", "--out", out, "-q"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    finally:
        t.join()
        os.unlink(path)
    assert cp.returncode == 0, cp.stderr
    with Recording.open(out) as rec:
        traced = {e.name for e in rec.entities() if e.kind == Kind.TRACE and e.pool == lab.pool}
        data = {os.path.basename(d) for d in lab.devices["data"]}
        assert data <= traced, traced
        vdevs = {e.name for e in rec.entities() if e.kind == Kind.VDEV and e.pool == lab.pool}
        assert vdevs  # the counters were recorded too
