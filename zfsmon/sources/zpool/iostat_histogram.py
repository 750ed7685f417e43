"""``zpool iostat -r`` / ``-w`` histogram tables: one table per pool or vdev, one row per bucket.

A table's bucket counts are flattened into metrics of the table's owner,
``<column metric>_<bucket>`` (see :mod:`zfsmon.metrics.vdev`), with bucket
labels in one canonical spelling whatever the zpool version printed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from zfsmon.model import Entity, Kind, ParseError, Role
from zfsmon.sources.zpool.iostat_columns import Header
from zfsmon.sources.zpool.status import Topology
from zfsmon.units import MISSING, human_ns, human_size, parse_count, parse_duration_ns, parse_size, plain_ints


def bucket_label(kind: str, label: str) -> str:
    """The canonical, lower-case bucket name: ``4K`` and ``4096`` are both ``4k``; ``131us`` stays."""
    if kind == "rq":
        return human_size(parse_size(label)).lower()
    return human_ns(parse_duration_ns(label))


#: unit readers that read a plain integer as its own value
_PLAIN_AS_IS = (parse_count, parse_size, parse_duration_ns)


@lru_cache(maxsize=1024)
def bucket_keys(metrics: Tuple[Optional[str], ...], kind: str, label: str) -> Tuple[str, ...]:
    """The metric names of one bucket row, one per column. Every interval prints the same few dozen rows per
    table, so they are named once, not once per value."""
    bucket = bucket_label(kind, label)
    return tuple(f"{m}_{bucket}" for m in metrics)


class HistogramTable:
    """One histogram table being read: its header (``owner``: the pool or vdev it is for) and the counts so far."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.values: Dict[str, float] = {}
        self._metrics = tuple(c.metric for c in header.columns)
        #: every column reads a plain integer as itself (counts, sizes, -p durations in ns)
        self._plain = all(c.parse in _PLAIN_AS_IS for c in header.columns)

    @property
    def owner(self) -> str:
        return self.header.owner

    def add_row(self, tokens: List[str], line: str, source: str, line_no: int) -> None:
        """A bucket row: its label, then one count per column (``-``: no count)."""
        h = self.header
        label, values = tokens[0], tokens[1:]
        if len(values) != len(h.columns):
            raise ParseError(source, line_no, f"{len(values)} values, the header has {len(h.columns)}", line)
        keys = bucket_keys(self._metrics, h.histogram or "", label)
        if self._plain and plain_ints(values):
            self.values.update(zip(keys, map(float, values)))  # -p and -w rows: every value a plain count
            return
        for key, col, raw in zip(keys, h.columns, values):
            if raw != MISSING:  # tokens of a split line: never blank
                self.values[key] = col.parse(raw)


def owner_entity(owner: str, pool: str, is_pool: bool, topology: Optional[Topology]) -> Entity:
    """The pool itself, or a vdev of ``pool`` (kind, role and parent from ``zpool status`` where it knows them)."""
    if is_pool:
        return Entity(Kind.POOL, owner, owner)
    known = topology.lookup(pool, owner) if topology is not None else None
    return (Entity(known.kind, owner, pool, known.role, known.parent) if known
            else Entity(Kind.VDEV, owner, pool, Role.DATA, pool))
