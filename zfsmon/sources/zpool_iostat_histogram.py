"""``zpool iostat -r`` / ``-w`` histogram tables: one table per pool or vdev, one row per bucket.

A table's bucket counts are flattened into metrics of the table's owner,
``<column metric>_<bucket>`` (see :mod:`zfsmon.metrics.vdev`), with bucket
labels in one canonical spelling whatever the zpool version printed.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from zfsmon.model import Entity, Kind, ParseError, Role
from zfsmon.sources.zpool_iostat_columns import Header
from zfsmon.sources.zpool_status import Topology
from zfsmon.units import human_ns, human_size, is_missing, parse_duration_ns, parse_size


def bucket_label(kind: str, label: str) -> str:
    """The canonical, lower-case bucket name: ``4K`` and ``4096`` are both ``4k``; ``131us`` stays."""
    if kind == "rq":
        return human_size(parse_size(label)).lower()
    return human_ns(parse_duration_ns(label))


class HistogramTable:
    """One histogram table being read: its header (``owner``: the pool or vdev it is for) and the counts so far."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.values: Dict[str, float] = {}

    @property
    def owner(self) -> str:
        return self.header.owner

    def add_row(self, tokens: List[str], line: str, source: str, line_no: int) -> None:
        """A bucket row: its label, then one count per column (``-``: no count)."""
        h = self.header
        label, values = tokens[0], tokens[1:]
        if len(values) != len(h.columns):
            raise ParseError(source, line_no, f"{len(values)} values, the header has {len(h.columns)}", line)
        bucket = bucket_label(h.histogram or "", label)
        for col, raw in zip(h.columns, values):
            if is_missing(raw):
                continue
            self.values[f"{col.metric}_{bucket}"] = col.parse(raw)


def owner_entity(owner: str, pool: str, is_pool: bool, topology: Optional[Topology]) -> Entity:
    """The pool itself, or a vdev of ``pool`` (kind, role and parent from ``zpool status`` where it knows them)."""
    if is_pool:
        return Entity(Kind.POOL, owner, owner)
    known = topology.lookup(pool, owner) if topology is not None else None
    return (Entity(known.kind, owner, pool, known.role, known.parent) if known
            else Entity(Kind.VDEV, owner, pool, Role.DATA, pool))
