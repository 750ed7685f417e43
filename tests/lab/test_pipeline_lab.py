"""Sources -> sampler on the real lab: the host's own choice of collectors yields role-aware samples."""

from __future__ import annotations

import os
import threading
from typing import List

import pytest

from tests.conftest import wait_until
from tests.lab.helpers import write_file
from zfsmon import host
from zfsmon.engine import Sampler
from zfsmon.model import Kind, Record, Role, Sample
from zfsmon.sources.registry import build_collectors

pytestmark = [pytest.mark.lab]


def _interval_leaf_writes(samples: List[Sample], pool: str) -> float:
    return sum(r.metrics.get("write_ops", 0) for r in samples
               if r.entity.kind == Kind.LEAF and r.entity.pool == pool and not r.since_boot)


def _seen_everything(got: List[Record], lab) -> bool:
    """What the test checks has arrived: vdevs of each role, interval writes on the leaves, ARC, L2ARC, devices.

    On a loaded machine `zpool iostat` can start after a short write is over, so its first (since-import)
    report holds it all: the writes go on until an interval report shows them.
    """
    samples = [r for r in list(got) if isinstance(r, Sample)]
    roles = {r.entity.role for r in samples if r.entity.kind == Kind.VDEV and r.entity.pool == lab.pool}
    kinds = {r.entity.kind for r in samples}
    devs = {r.entity.name for r in samples if r.entity.kind == Kind.DEVICE}
    return (roles >= {Role.DATA, Role.LOG, Role.CACHE} and _interval_leaf_writes(samples, lab.pool) > 0
            and {Kind.ARC, Kind.L2ARC} <= kinds and {os.path.basename(d) for d in lab.devices["data"]} <= devs)


def test_default_collectors_on_the_lab(lab):
    h = host.probe()
    collectors, skipped = build_collectors(h, 1.0, pools=[lab.pool])
    names = {c.name for c in collectors}
    assert {"zpool", "arcstats", "diskstats"} <= names  # each collector under its source record's one name
    assert any(s.startswith("zil: ") and "no ZIL kstat" in s for s in skipped)
    got: List[Record] = []
    s = Sampler(collectors, 1.0, sinks=[got.extend])
    stop = threading.Event()

    def workload() -> None:  # synced writes (to one file, so the pool never fills) until the sampler saw them
        while not stop.is_set():
            write_file(os.path.join(lab.mountpoint, "pipe.bin"), 4)

    t = threading.Thread(target=workload, daemon=True)
    t.start()
    s.run_in_thread()
    try:
        wait_until(lambda: _seen_everything(got, lab), 120, "vdevs of every role, interval writes on the "
                   "leaves, ARC, L2ARC and device samples")
    finally:
        stop.set()
        t.join(timeout=60)
        s.stop()
    samples = [r for r in got if isinstance(r, Sample)]
    vdevs = {r.entity.name: r.entity for r in samples if r.entity.kind == Kind.VDEV and r.entity.pool == lab.pool}
    roles = {e.role for e in vdevs.values()}
    assert roles == {Role.DATA, Role.LOG, Role.CACHE}, vdevs
    assert os.path.basename(lab.devices["log"][0]) in vdevs and vdevs[os.path.basename(lab.devices["log"][0])].role == Role.LOG
    assert vdevs[os.path.basename(lab.devices["cache"][0])].role == Role.CACHE
    leaves = {r.entity.name for r in samples if r.entity.kind == Kind.LEAF and r.entity.pool == lab.pool}
    assert leaves == {os.path.basename(d) for d in lab.devices["data"]}
    assert _interval_leaf_writes(samples, lab.pool) > 0
    assert any(r.entity.kind == Kind.ARC for r in samples) and any(r.entity.kind == Kind.L2ARC for r in samples)
    devs = {r.entity.name for r in samples if r.entity.kind == Kind.DEVICE}
    assert {os.path.basename(d) for d in lab.devices["data"]} <= devs
