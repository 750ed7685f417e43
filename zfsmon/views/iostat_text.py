"""The role-aware per-vdev table of ``zfsmon iostat``: like ``zpool iostat -v``, but the roles are always shown.

Rows of one pool are grouped the way ``zpool status`` groups them -- data
vdevs, then ``logs``, ``cache``, ``special``, ``dedup``, ``spares`` -- even where
the platform's own iostat omits a heading (zfs-fuse prints the SLOG as a
plain data row).  Numbers are humanised exactly as ``zpool iostat`` does
(:mod:`zfsmon.units`); ``parsable`` prints exact integers, ``scripted``
drops headers and indentation and separates fields by tabs, :func:`csv_header`
/ :func:`csv_rows` write one line per sample.

An optional device-level view (``device_ops``: leaf name -> block-device
ops/s, from ``iostat``/diskstats) adds a ``device`` column and marks a
``goose`` egg where the device claims 0 ops while ZFS issued some.  Views
only format records; they never run commands.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from zfsmon.errors import neutralise, printable
from zfsmon.model import Entity, Kind, Role, Sample
from zfsmon.units import MISSING, human_count, human_ns, human_size

__all__ = ["COLUMN_GROUPS", "IostatTable", "csv_header", "csv_rows", "DeviceOps", "SECTION_HEADINGS"]

Formatter = Callable[[Optional[float]], str]
#: leaf name -> device-level ops/s (None: unknown)
DeviceOps = Union[Mapping[str, float], Callable[[str], Optional[float]]]

#: (group label, [(sub label, metric, formatter)])
ColumnGroup = Tuple[str, List[Tuple[str, str, Formatter]]]

_WAIT: List[ColumnGroup] = [(g, [("read", f"{g}_read", human_ns), ("write", f"{g}_write", human_ns)])
                            for g in ("total_wait", "disk_wait", "syncq_wait", "asyncq_wait")]
_SINGLE_WAIT: List[ColumnGroup] = [(g, [("wait", f"{g}_wait", human_ns)])
                                   for g in ("scrub", "trim", "rebuild")]
_QUEUES: List[ColumnGroup] = [(q, [("pend", f"{q}_pend", human_count), ("activ", f"{q}_activ", human_count)])
                              for q in ("syncq_read", "syncq_write", "asyncq_read", "asyncq_write", "scrubq_read",
                                        "trimq_write", "rebuildq_write")]

#: the column groups in zpool iostat's order
COLUMN_GROUPS: List[ColumnGroup] = [
    ("capacity", [("alloc", "alloc", human_size), ("free", "free", human_size)]),
    ("operations", [("read", "read_ops", human_count), ("write", "write_ops", human_count)]),
    ("bandwidth", [("read", "read_bw", human_size), ("write", "write_bw", human_size)]),
    *_WAIT, *_SINGLE_WAIT, *_QUEUES,
]

#: the heading printed above each non-data role, as zpool status/iostat spell them
SECTION_HEADINGS: Dict[Role, str] = {Role.LOG: "logs", Role.CACHE: "cache", Role.SPECIAL: "special",
                                     Role.DEDUP: "dedup", Role.SPARE: "spares"}
_ROLE_ORDER = (Role.DATA, Role.SPECIAL, Role.DEDUP, Role.LOG, Role.CACHE, Role.SPARE)


def _exact(value: Optional[float]) -> str:
    if value is None:
        return MISSING
    if abs(value - round(value)) < 1e-9 or abs(value) >= 100:  # humanised input has no finer precision
        return str(int(round(value)))
    return f"{value:.2f}"


def _device_lookup(device_ops: Optional[DeviceOps]) -> Optional[Callable[[str], Optional[float]]]:
    if device_ops is None:
        return None
    if callable(device_ops):
        return device_ops
    mapping = device_ops
    return lambda name: mapping.get(name)


class IostatTable:
    """Formats the samples of one report, pool by pool; remembers the columns and widths it chose.

    Columns are the groups with any value in the first samples it sees (so a
    ``-l`` run shows waits, a zfs-fuse run only the classic six) and stay fixed
    afterwards, as a table's columns should.
    """

    def __init__(self, parsable: bool = False, scripted: bool = False,
                 device_ops: Optional[DeviceOps] = None) -> None:
        self.parsable = parsable
        self.scripted = scripted
        self.device_ops = _device_lookup(device_ops)
        self.groups: Optional[List[Tuple[str, List[Tuple[str, str, Formatter]]]]] = None
        self.name_width = 10
        self.col_width = 5

    # layout --------------------------------------------------------------------------------------------
    def _choose(self, samples: Sequence[Sample]) -> None:
        if self.groups is not None:
            return
        present = {m for s in samples for m in s.metrics}
        self.groups = [(g, subs) for g, subs in COLUMN_GROUPS if any(m in present for _, m, _ in subs)]
        if not self.groups:
            self.groups = COLUMN_GROUPS[:3]
        if self.parsable:
            biggest = max((abs(v) for s in samples for v in s.metrics.values()), default=0)
            self.col_width = max(5, len(_exact(biggest)))

    def _cells(self) -> List[Tuple[str, str, str, Formatter]]:
        assert self.groups is not None
        return [(g, sub, m, f) for g, subs in self.groups for sub, m, f in subs]

    def header(self) -> List[str]:
        """The three header lines (group labels, sub-column labels, dashes); none when scripted."""
        if self.scripted or self.groups is None:
            return []
        w = self.col_width
        top = " " * self.name_width
        for g, subs in self.groups:
            span = len(subs) * (w + 2)
            top += g.center(span) if len(g) < span else " " + g
        sub = "pool".ljust(self.name_width)
        dash = "-" * self.name_width
        for _, s, _, _ in self._cells():
            sub += "  " + s.rjust(w)
            dash += "  " + "-" * w
        if self.device_ops is not None:
            top += "  " + "device".rjust(w + 1)
            sub += "  " + "ops".rjust(w + 1)
            dash += "  " + "-" * (w + 1)
        return [top.rstrip(), sub, dash]

    def separator(self) -> str:
        return self.header()[2] if not self.scripted and self.groups is not None else ""

    # rows ----------------------------------------------------------------------------------------------
    def _value(self, metric: str, fmt: Formatter, sample: Optional[Sample]) -> str:
        if sample is None:
            return MISSING
        v = sample.metrics.get(metric)
        if v is None:
            return MISSING
        return _exact(v) if self.parsable else fmt(v)

    def _line(self, name: str, depth: int, sample: Optional[Sample], leafish: bool) -> str:
        """One row; ``name`` is the input's (``zpool iostat``'s), shown :func:`~zfsmon.errors.printable`."""
        cells = [self._value(m, f, sample) for _, _, m, f in self._cells()]
        dev = ""
        if self.device_ops is not None:
            dev = self._device_cell(name, sample) if leafish else MISSING
        if self.scripted:
            return "\t".join([printable(name), *cells, *([dev] if dev else [])])
        text = ("  " * depth + printable(name)).ljust(self.name_width)
        text += "".join("  " + c.rjust(self.col_width) for c in cells)
        if dev:
            text += "  " + dev.rjust(self.col_width + 1)
        return text

    def _device_cell(self, name: str, sample: Optional[Sample]) -> str:
        assert self.device_ops is not None
        dev = self.device_ops(name)
        if dev is None:
            return MISSING
        zfs = 0.0 if sample is None else sample.metrics.get("read_ops", 0.0) + sample.metrics.get("write_ops", 0.0)
        if dev == 0 and zfs > 0:
            return "goose"
        return _exact(dev) if self.parsable else human_count(dev)

    def render(self, samples: Sequence[Sample], with_header: bool = True) -> List[str]:
        """Lines for the pools in ``samples`` (each pool's tree, grouped by role), with the header if asked."""
        pools: OrderedDict[str, List[Sample]] = OrderedDict()
        for s in samples:
            if s.entity.kind in (Kind.POOL, Kind.VDEV, Kind.LEAF):
                pools.setdefault(s.entity.pool, []).append(s)
        if not pools:
            return []
        self._choose(samples)
        names = [s.entity.name for group in pools.values() for s in group]
        self.name_width = max(self.name_width, *(len(printable(n)) + 4 for n in names))
        out: List[str] = list(self.header()) if with_header else []
        for pool, group in pools.items():
            out.extend(self._pool_lines(pool, group))
            if not self.scripted:
                out.append(self.separator())
        return out

    def _pool_lines(self, pool: str, group: Sequence[Sample]) -> List[str]:
        by_name = {s.entity.name: s for s in group}
        pool_sample = next((s for s in group if s.entity.kind == Kind.POOL), None)
        children: Dict[str, List[Sample]] = {}
        tops: List[Sample] = []
        for s in group:
            if s.entity.kind == Kind.VDEV or (s.entity.kind == Kind.LEAF and s.entity.parent not in by_name):
                tops.append(s)
            elif s.entity.kind == Kind.LEAF:
                children.setdefault(s.entity.parent, []).append(s)
        lines = [self._line(pool, 0, pool_sample, False)]

        def walk(s: Sample, depth: int) -> None:
            kids = children.get(s.entity.name, [])
            lines.append(self._line(s.entity.name, depth, s, not kids))
            for k in kids:
                walk(k, depth + 1)

        for role in _ROLE_ORDER:
            members = [s for s in tops if (s.entity.role or Role.DATA) == role]
            if not members:
                continue
            if role != Role.DATA:
                lines.append(self._line(SECTION_HEADINGS[role], 0, None, False))
            for s in members:
                walk(s, 1)
        return lines


# --- CSV --------------------------------------------------------------------------------------------------

_ID_COLUMNS = ["time", "pool", "kind", "name", "role", "parent", "since_boot", "interval"]


def csv_columns(samples: Sequence[Sample]) -> List[str]:
    """Metric columns: the known ones in table order, then any others (histogram buckets) by name."""
    present = {m for s in samples for m in s.metrics}
    known = [m for _, subs in COLUMN_GROUPS for _, m, _ in subs if m in present]
    return known + sorted(present - set(known))


def csv_header(metric_columns: Sequence[str]) -> str:
    return ",".join(_ID_COLUMNS + list(metric_columns))


def _csv_cell(text: str) -> str:
    """A cell as a CSV writer quotes it."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def csv_rows(samples: Sequence[Sample], metric_columns: Sequence[str]) -> List[str]:
    """One line per sample; a metric the sample lacks (``-`` in zpool iostat) is an empty cell, not 0."""
    out = []
    for s in samples:
        e: Entity = s.entity
        # the names are the input's (zpool iostat's): no formula, no control character in their cells
        ident = [f"{s.ts:.3f}", neutralise(e.pool), e.kind.value, neutralise(e.name), e.role.value if e.role else "",
                 neutralise(e.parent), "1" if s.since_boot else "0", "" if s.interval is None else f"{s.interval:g}"]
        vals = ["" if s.metrics.get(m) is None else _exact(s.metrics[m]) for m in metric_columns]
        out.append(",".join(_csv_cell(c) for c in ident + vals))
    return out
