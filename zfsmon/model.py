"""The one metric model every source produces and every view consumes.

A number always belongs to an :class:`Entity` (what it measures: a pool, a vdev
with its role, the ARC, a dataset, ...).  Sources turn platform output into
timestamped :class:`Sample` objects; noteworthy happenings (a counter reset, a
topology change, an error, a user's mark) are :class:`Event` objects.  Nothing
in here does I/O.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:  # the arrays a recording's reader may hand as columns (zfsmon.store.arrays)
    import numpy.typing as npt

#: the times a recording can hold: those a calendar date can be printed for (UTC years 1 to 9999). A time
#: outside (1e300, nan, a duration of 300000000000 s added to a start) is an impossible time: refused on input,
#: and a recording holding one is damaged.
TS_MIN = -62135596800.0
TS_MAX = 253402300799.0


def valid_ts(ts: object) -> bool:
    """A finite time between :data:`TS_MIN` and :data:`TS_MAX` (nan and infinities are not)."""
    return isinstance(ts, (int, float)) and TS_MIN <= ts <= TS_MAX


class Kind(str, Enum):
    """What an entity is. The string values are stored in recordings: never rename."""

    POOL = "pool"
    VDEV = "vdev"  # a top-level vdev: mirror / raidz / draid or a single disk
    LEAF = "leaf"  # a disk or file under a top-level vdev
    DEVICE = "device"  # the block-device view (iostat, /proc/diskstats)
    ARC = "arc"
    L2ARC = "l2arc"
    ZIL = "zil"
    ZIO = "zio"  # the zio pipeline's global counters (block allocations, gang writes)
    DATASET = "dataset"
    WORKLOAD = "workload"  # pgbench and PostgreSQL's own statistics
    TRACE = "trace"  # distributions measured by dtrace/bpftrace scripts

    def __str__(self) -> str:  # so f-strings show "vdev", not "Kind.VDEV"
        return self.value


class Role(str, Enum):
    """Why a vdev is in the pool. Stored in recordings: never rename."""

    DATA = "data"
    LOG = "log"  # SLOG
    CACHE = "cache"  # L2ARC
    SPECIAL = "special"
    DEDUP = "dedup"
    SPARE = "spare"

    def __str__(self) -> str:
        return self.value


#: Section headings of `zpool iostat -v` / `zpool status` and the role they start.
SECTION_ROLES: Dict[str, Role] = {
    "logs": Role.LOG,
    "log": Role.LOG,
    "cache": Role.CACHE,
    "special": Role.SPECIAL,
    "dedup": Role.DEDUP,
    "spares": Role.SPARE,
    "spare": Role.SPARE,
}


@dataclass(frozen=True)
class Entity:
    """What a set of numbers belongs to.

    ``name`` is unique within (kind, pool). ``parent`` is the parent's name in
    the same pool (a leaf's vdev, a vdev's pool), so views can draw the tree; a
    block device's is the zpool leaf it is (``vdb`` -> ``virtio-data0``), when known.
    ``role`` is set for vdevs and leaves. Identity (``key``) deliberately
    excludes role and parent: a device that changes role is the same device,
    and the change is a topology event.
    """

    kind: Kind
    name: str
    pool: str = ""
    role: Optional[Role] = None
    parent: str = ""

    @cached_property
    def key(self) -> str:
        """Cached (every record is grouped by it, many times): a frozen dataclass's ``__dict__`` takes it, and
        it is no field, so equality, hashing and ``replace`` do not see it."""
        return f"{self.kind.value}:{self.pool}/{self.name}" if self.pool else f"{self.kind.value}:{self.name}"

    def label(self) -> str:
        role = f" [{self.role.value}]" if self.role else ""
        return f"{self.name}{role}"


Metrics = Mapping[str, float]

#: ``__slots__`` where the interpreter can make them (3.10+): a long window holds a Sample per reading, and a
#: slotted one is about half the size of one with a ``__dict__``
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(frozen=True, **_SLOTS)
class Sample:
    """Numbers for one entity at one moment.

    ``interval`` is the length in seconds that interval-style values (a
    ``zpool iostat`` row, a derived rate) describe; ``since_boot`` marks the
    first report of interval commands, which averages everything since import
    and must not be plotted as an interval.
    """

    ts: float
    entity: Entity
    metrics: Metrics
    interval: Optional[float] = None
    since_boot: bool = False
    source: str = ""


#: one metric's values in a :class:`SampleBlock`: a list, or a numpy array (:mod:`zfsmon.store.arrays`)
Column = Union[Sequence[float], "npt.NDArray[Any]"]


def column_item(col: Column, i: int) -> float:
    """Value ``i`` of a column as a Python number (an array's element is a numpy scalar)."""
    return col.item(i) if hasattr(col, "item") else col[i]


@dataclass
class SampleBlock:
    """Consecutive samples of one entity from one source with the same metrics, column-wise.

    What a recording's compacted chunks hold (one column of values per metric), handed on without building a
    :class:`Sample` per reading: downsampling a long recording sums, counts and compares the columns' slices.
    ``entities`` is the entity at ``ts[0]``, then each change of its role or parent up to ``ts[-1]``.
    """

    ts: List[float]
    entities: List[Tuple[float, Entity]]
    names: Tuple[str, ...]
    cols: List[Column]
    source: str = ""
    since_boot: bool = False
    #: each reading's interval (None: a reading without one), when the reader gave them
    intervals: Optional[List[Optional[float]]] = None

    @classmethod
    def of(cls, s: Sample) -> SampleBlock:
        return cls([s.ts], [(s.ts, s.entity)], tuple(s.metrics), [[v] for v in s.metrics.values()], s.source,
                   s.since_boot, [s.interval])

    @property
    def entity(self) -> Entity:
        return self.entities[0][1]

    def entity_at(self, ts: float) -> Entity:
        """The entity as it was at ``ts`` (a time of this block)."""
        ent = self.entities[0][1]
        for t, e in self.entities[1:]:
            if t > ts:
                break
            ent = e
        return ent

    def sample(self, i: int) -> Sample:
        """Row ``i`` as a Sample (for the few readings that need one); an array column's value (a numpy scalar,
        :mod:`zfsmon.store.arrays`) becomes the Python number it holds."""
        return Sample(self.ts[i], self.entity_at(self.ts[i]),
                      {n: column_item(c, i) for n, c in zip(self.names, self.cols)},
                      interval=self.intervals[i] if self.intervals is not None else None, source=self.source,
                      since_boot=self.since_boot)


class EventKind(str, Enum):
    MARK = "mark"  # a user's annotation
    RUN_START = "run_start"  # a workload run (pgbench) begins
    RUN_END = "run_end"
    TOPOLOGY = "topology"  # devices added/removed or a role changed
    RESET = "reset"  # a counter went backwards: new baseline
    ERROR = "error"  # a source failed; others go on
    INFO = "info"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Event:
    ts: float
    kind: EventKind
    text: str
    source: str = ""
    entity: str = ""  # an Entity.key, where the event concerns one
    data: Mapping[str, object] = field(default_factory=dict)


Record = Union[Sample, Event]


@dataclass(frozen=True)
class Derived:
    """What one reading adds to the previous one of its entity and source.

    Made by :class:`zfsmon.analysis.rates.Deriver`, once per sample (live: in the engine's sampler). ``metrics``:
    the figures its kind is read by (ARC/L2ARC/ZIL: :mod:`zfsmon.analysis.arc`'s; a block device:
    :func:`zfsmon.analysis.rates.device_rates`; others: none)."""

    sample: Sample
    elapsed: float
    deltas: Dict[str, float]
    rates: Dict[str, float]
    metrics: Dict[str, float] = field(default_factory=dict)

    def interval_sample(self) -> Sample:
        """The derived figures as an interval sample of the reading's entity and source (gauges only)."""
        s = self.sample
        return Sample(s.ts, s.entity, self.metrics, interval=self.elapsed, source=s.source)


class Tick(List[Record]):
    """One tick's records as the sampler hands them to its sinks, with each sample's :class:`Derived` values.

    A list of the raw records (what a sink that records or serves them takes, unchanged), plus ``derived``."""

    def __init__(self, records: Iterable[Record] = (), derived: Sequence[Derived] = ()) -> None:
        super().__init__(records)
        self.derived: List[Derived] = list(derived)


def derived_of(records: Iterable[Record]) -> Optional[List[Derived]]:
    """The derived values a batch of records came with (a :class:`Tick`'s), or None for plain records (a
    recording's, a test's): those are derived by whoever reads them, with a
    :class:`zfsmon.analysis.rates.Deriver`."""
    return records.derived if isinstance(records, Tick) else None


def joined(batches: Iterable[Sequence[Record]]) -> List[Record]:
    """Several batches as one: a :class:`Tick` with all their derived values when any came from the sampler
    (the others then hold events only: a recording's failure, a mark), else a plain list."""
    batches = list(batches)
    records = [r for b in batches for r in b]
    ticks = [b for b in batches if isinstance(b, Tick)]
    return Tick(records, [d for t in ticks for d in t.derived]) if ticks else records


def typical_gap(times: Iterable[float]) -> Optional[float]:
    """The median gap between consecutive distinct times, or None when there are fewer than two.

    The interval a series was taken at, as its own times show it: a one-off
    late report or whole-second stamps (``zpool iostat -T u``: 5, 6, 5 s) do
    not move it. ``zfsmon info`` states it for a recording, and a capture's
    interval rows without a said interval are given it.
    """
    ts = sorted(set(times))
    gaps = sorted(b - a for a, b in zip(ts, ts[1:]))
    return gaps[len(gaps) // 2] if gaps else None


def with_intervals(records: Sequence[Record]) -> List[Record]:
    """Interval rows (not a since-boot first report) that carry no interval get the capture's
    :func:`typical_gap`: a capture with printed times says its interval in them. Unchanged when its times do
    not (fewer than two distinct ones: a capture without times, given no ``--interval``)."""
    gap = typical_gap(r.ts for r in records if isinstance(r, Sample))
    if gap is None:
        return list(records)
    return [replace(r, interval=gap) if isinstance(r, Sample) and r.interval is None and not r.since_boot else r
            for r in records]


class ParseError(ValueError):
    """Text a parser cannot read. Names the source and line, so users can find it."""

    def __init__(self, source: str, line_no: Optional[int], message: str, line: Optional[str] = None):
        self.source = source
        self.line_no = line_no
        self.message = message
        self.line = line
        if len(message) > 240:  # a message quoting a damaged value (4,400 digits) stays readable
            message = message[:200] + f"... ({len(message)} characters)"
        where = f"{source}:{line_no}" if line_no is not None else source
        shown = f": {line.strip()[:80]!r}" if line is not None and line.strip() else ""
        super().__init__(f"{where}: {message}{shown}")
