"""The per-pool ``iostats`` kstat (``/proc/spl/kstat/zfs/POOL/iostats``, OpenZFS 2.x on Linux).

Every statistic is a cumulative counter (rates are derived from deltas) kept
under the kernel's own name on the ``pool`` entity. OpenZFS 2.1 has the 18
trim statistics (manual ``trim``, ``autotrim`` and ``simple_trim``: extents
and bytes written, skipped, failed); 2.3 adds the DMU's reads and writes
through the ARC and, with Direct I/O, around it (26 in all). A field this
table does not list (a newer kernel's) is still recorded, as a gauge.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import COUNTER, MetricSpec
from zfsmon.model import Kind

PATH = "/proc/spl/kstat/zfs/POOL/iostats"


def _pool(name: str, unit: str, help: str) -> MetricSpec:
    return MetricSpec(name, unit, COUNTER, help, (Kind.POOL,), {"linux": f"{PATH} {name}"})


SPECS: List[MetricSpec] = []
for _kind in ("trim", "autotrim", "simple_trim"):
    for _what in ("written", "skipped", "failed"):
        SPECS.append(_pool(f"{_kind}_extents_{_what}", "count", f"{_kind.replace('_', ' ')} extents {_what}"))
        SPECS.append(_pool(f"{_kind}_bytes_{_what}", "B", f"{_kind.replace('_', ' ')} bytes {_what}"))
for _path in ("arc", "direct"):
    for _op in ("read", "write"):
        _how = "through the ARC (not in 2.1)" if _path == "arc" else "bypassing the ARC (Direct I/O, 2.3+)"
        SPECS.append(_pool(f"{_path}_{_op}_count", "ops", f"DMU {_op}s {_how}"))
        SPECS.append(_pool(f"{_path}_{_op}_bytes", "B", f"bytes of DMU {_op}s {_how}"))
