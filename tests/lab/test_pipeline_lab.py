"""Sources -> sampler on the real lab: the host's own choice of collectors yields role-aware samples."""

from __future__ import annotations

import os
import threading

import pytest

from tests.lab.helpers import write_file
from zfsmon import host
from zfsmon.engine import Sampler
from zfsmon.model import Kind, Role, Sample
from zfsmon.sources.registry import build_collectors

pytestmark = [pytest.mark.lab]


def test_default_collectors_on_the_lab(lab):
    h = host.probe()
    collectors, skipped = build_collectors(h, 1.0, pools=[lab.pool])
    names = {c.name for c in collectors}
    assert {"zpool_iostat", "arcstats", "diskstats"} <= names
    assert any(s.startswith("zil: ") and "no ZIL kstat" in s for s in skipped)
    got = []
    s = Sampler(collectors, 1.0, sinks=[got.extend])
    t = threading.Thread(target=write_file, args=(os.path.join(lab.mountpoint, "pipe.bin"), 16))
    t.start()
    s.run(duration=4.2)
    t.join()
    samples = [r for r in got if isinstance(r, Sample)]
    vdevs = {r.entity.name: r.entity for r in samples if r.entity.kind == Kind.VDEV and r.entity.pool == lab.pool}
    roles = {e.role for e in vdevs.values()}
    assert roles == {Role.DATA, Role.LOG, Role.CACHE}, vdevs
    assert os.path.basename(lab.devices["log"][0]) in vdevs and vdevs[os.path.basename(lab.devices["log"][0])].role == Role.LOG
    assert vdevs[os.path.basename(lab.devices["cache"][0])].role == Role.CACHE
    leaves = {r.entity.name for r in samples if r.entity.kind == Kind.LEAF and r.entity.pool == lab.pool}
    assert leaves == {os.path.basename(d) for d in lab.devices["data"]}
    interval_writes = sum(r.metrics.get("write_ops", 0) for r in samples
                          if r.entity.kind == Kind.LEAF and r.entity.pool == lab.pool and not r.since_boot)
    assert interval_writes > 0
    assert any(r.entity.kind == Kind.ARC for r in samples) and any(r.entity.kind == Kind.L2ARC for r in samples)
    devs = {r.entity.name for r in samples if r.entity.kind == Kind.DEVICE}
    assert {os.path.basename(d) for d in lab.devices["data"]} <= devs
