"""`zfsmon iostat` on the lab: the device column next to ZFS's own numbers, as a person reads it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from tests.conftest import REPO
from tests.lab.helpers import write_file

pytestmark = [pytest.mark.lab]


def test_device_column_agrees_with_zfs_for_data_leaves(lab):
    path = os.path.join(lab.mountpoint, "dev.bin")
    done = threading.Event()

    def workload() -> None:  # synced writes for as long as zfsmon reports, so every interval has I/O
        while not done.is_set():
            write_file(path, 8)

    proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "iostat", "-y", lab.pool, "1", "3"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t = threading.Thread(target=workload)
    t.start()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        done.set()
        t.join()
        os.unlink(path)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].rstrip().endswith("device") and lines[1].rstrip().endswith("ops")
    data = {os.path.basename(d) for d in lab.devices["data"]}
    busy = 0
    for ln in lines:
        parts = ln.split()
        if parts and parts[0] in data:
            assert len(parts) == 8, ln  # name, alloc, free, r, w, rB, wB, device ops
            zfs_ops = _n(parts[3]) + _n(parts[4])
            dev = _n(parts[7])
            if zfs_ops >= 50:
                busy += 1
                # zfs-fuse with --disable-block-cache: every vdev I/O reaches the loop device
                assert 0.7 * zfs_ops <= dev <= 1.3 * zfs_ops, ln
    assert busy >= 2, out


def _n(text: str) -> float:
    mult = {"K": 1024.0, "M": 1024.0 ** 2}
    return float(text[:-1]) * mult[text[-1]] if text[-1] in mult else float(text)
