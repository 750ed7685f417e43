"""`zfsmon record --trace vdevlat` on the lab: latency distributions land in the recording beside the counters."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import Set

import pytest

from tests.conftest import REPO, wait_until
from tests.lab.helpers import write_file
from zfsmon.model import Kind
from zfsmon.store import Recording, RecordingError

pytestmark = [pytest.mark.bpftrace, pytest.mark.lab]


def _traced(path: str, pool: str) -> Set[str]:
    """Names of the pool's traced entities in the recording being written (none while it cannot be read yet)."""
    try:
        with Recording.open(path) as rec:
            return {e.name for e in rec.entities() if e.kind == Kind.TRACE and e.pool == pool}
    except RecordingError:
        return set()


def test_record_with_trace_source(lab, require_bpftrace, tmp_path):
    out = str(tmp_path / "trace.zfsmon")
    path = os.path.join(lab.mountpoint, "tr.bin")
    data = {os.path.basename(d) for d in lab.devices["data"]}
    stop = threading.Event()

    def writes() -> None:  # synced writes until the tracer (which can take long to start) has seen them
        while not stop.is_set():
            write_file(path, 8)

    # --duration only bounds it should the test die: SIGTERM ends it once the traces are in
    proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "record", "--pool", lab.pool, "--trace", "vdevlat",
                             "--duration", "600", "--interval", "1", "--out", out, "-q"], cwd=REPO,
                            stderr=subprocess.PIPE, text=True)
    t = threading.Thread(target=writes, daemon=True)
    t.start()
    try:
        wait_until(lambda: data <= _traced(out, lab.pool), 180, lambda: f"traces of every data vdev "
                   f"{sorted(data)} in the recording (has {sorted(_traced(out, lab.pool))})", step=0.5)
    finally:
        stop.set()
        t.join(timeout=60)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            if os.path.exists(path):
                os.unlink(path)
    assert proc.returncode == 0, err
    with Recording.open(out) as rec:
        traced = {e.name for e in rec.entities() if e.kind == Kind.TRACE and e.pool == lab.pool}
        assert data <= traced, traced
        vdevs = {e.name for e in rec.entities() if e.kind == Kind.VDEV and e.pool == lab.pool}
        assert vdevs  # the counters were recorded too
