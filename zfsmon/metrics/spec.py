"""The row type of the metrics table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Tuple

from zfsmon.model import Kind

COUNTER = "counter"
GAUGE = "gauge"


@dataclass(frozen=True)
class MetricSpec:
    """One metric. ``sources`` maps a platform (illumos, freebsd, linux, zfs-fuse, any) to what provides it."""

    name: str
    unit: str  # "ops/s", "B/s", "B", "ns", "%", "count", "ops", ...
    kind: str  # COUNTER or GAUGE
    help: str
    kinds: Tuple[Kind, ...]
    sources: Mapping[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.name, self.kinds))
