"""``zpool iostat -v`` output -> per-pool / per-vdev / per-leaf samples with roles.

The parser reads what every ZFS since OpenSolaris prints: the old header
(``used avail`` or ``alloc free``), the 0.7+ column groups of ``-l`` (waits)
and ``-q`` (queues) whose sets grew over versions (``trim``, ``rebuild``) --
so columns are taken from the header, never assumed -- ``-c`` script
columns (ignored), ``-r``/``-w`` histograms, ``-H`` (no header, no indent;
columns inferred from the field count and the flags we passed), ``-p`` exact
integers, ``-T u|d`` timestamps (used as the sample time) and ``-y``.  Rows are
split on whitespace, not by column position, because long names push columns
out of line.  ``-`` means "no value": the metric is left out, never set to 0.

A *report* is everything printed for one interval; the first one averages
since import (``since_boot=True``, ``interval=None``) unless the stream was
started with ``-y`` (``first_since_boot=False``).  Records are emitted per pool
as soon as the pool's rows are complete (its separator, the next pool, the
next header or timestamp), so the collector's latency is one line, not one
interval.  A pool whose set of vdevs/leaves or roles differs from its previous
report yields a ``topology`` event first (a cache device removed and added
back shows up that way).

Roles come from the ``logs``/``cache``/``special``/``dedup``/``spares``
headings; where the output cannot say (``-H``; zfs-fuse prints its SLOG
without a ``logs`` heading) a :class:`~zfsmon.sources.zpool_status.Topology`
from ``zpool status`` overrides role, kind and parent by name.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from zfsmon.model import SECTION_ROLES, Entity, Event, EventKind, Kind, ParseError, Record, Role, Sample
from zfsmon.sources.child import StreamCollector, StreamParser
from zfsmon.sources.zpool_status import Topology, TreeBuilder, indent_depth, read_topology, run_zpool
from zfsmon.units import is_missing, parse_count, parse_duration_ns, parse_size

__all__ = ["Column", "Header", "parse_header", "scripted_header", "ZpoolIostatParser", "parse_text",
           "ZpoolIostatCollector", "iostat_argv", "read_once"]

SOURCE = "zpool iostat"

_VALUE_RE = re.compile(r"^(-|\d+(?:\.\d+)?[A-Za-z]{0,2})$")
_EPOCH_RE = re.compile(r"^\d{9,11}$")
_DATE_RE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?: (\S+))? \d{4}$")
_SEPARATOR_RE = re.compile(r"^[\s-]*--[\s-]*$")
_HISTO_FIRST = {"req_size": "rq", "latency": "lat"}


# --- columns -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One value column: the metric it fills (None: a ``-c`` script column we do not read) and its unit reader."""

    metric: Optional[str]
    parse: Callable[[str], float] = parse_count


@dataclass(frozen=True)
class Header:
    """The columns of a stats table, or of a histogram table (``histogram`` = "rq"/"lat", ``owner`` its vdev)."""

    columns: Tuple[Column, ...]
    histogram: Optional[str] = None
    owner: str = ""

    @property
    def core(self) -> int:
        """Columns every row has (script columns come last and only rows with script output show them)."""
        n = len(self.columns)
        while n and self.columns[n - 1].metric is None:
            n -= 1
        return n


_PAIR_NAMES = {
    ("capacity", "alloc"): ("alloc", parse_size), ("capacity", "free"): ("free", parse_size),
    ("capacity", "used"): ("alloc", parse_size), ("capacity", "avail"): ("free", parse_size),
    ("operations", "read"): ("read_ops", parse_count), ("operations", "write"): ("write_ops", parse_count),
    ("bandwidth", "read"): ("read_bw", parse_size), ("bandwidth", "write"): ("write_bw", parse_size),
}


def _any_number(text: str) -> float:
    """A column we have no unit for (a future group): a time if it has a time unit, else a count."""
    try:
        return parse_count(text)
    except ValueError:
        return parse_duration_ns(text)


def _stats_column(group: Optional[str], sub: str) -> Column:
    if group is None:
        return Column(None)  # `-c script` output
    known = _PAIR_NAMES.get((group, sub))
    if known:
        return Column(known[0], known[1])
    if sub == "wait":
        return Column(f"{group}_wait", parse_duration_ns)
    if group.endswith("_wait"):
        return Column(f"{group}_{sub}", parse_duration_ns)
    if sub in ("pend", "activ"):
        return Column(f"{group}_{sub}", parse_count)
    return Column(f"{group}_{sub}", _any_number)


def _pair_up(groups: Sequence[str], subs: Sequence[str], source: str, line_no: int, line: str
             ) -> List[Tuple[Optional[str], str]]:
    """Match the group labels of header line 1 with the sub-column labels of line 2.

    A group spans two sub-columns (``read write``, ``alloc free``, ``pend activ``,
    ``ind agg``) or one (``scrub`` over ``wait``); sub-columns left over after
    the last group stand alone (``-c`` columns; ``scrub``/``trim`` in ``-w``).
    """
    out: List[Tuple[Optional[str], str]] = []
    i = 0
    for g in groups:
        if i >= len(subs):
            raise ParseError(source, line_no, f"column group {g!r} has no sub-columns", line)
        if subs[i] == "wait":
            out.append((g, "wait"))
            i += 1
            continue
        if i + 1 >= len(subs):
            raise ParseError(source, line_no, f"column group {g!r} lacks its second sub-column", line)
        out.extend([(g, subs[i]), (g, subs[i + 1])])
        i += 2
    out.extend((None, s) for s in subs[i:])
    return out


def parse_header(line1: str, line2: str, source: str = SOURCE, line_no: int = 0) -> Header:
    """The two header lines of a stats table (``capacity operations ...`` / ``pool alloc free ...``) or a histogram."""
    top, sub = line1.split(), line2.split()
    if not sub:
        raise ParseError(source, line_no, "empty header line", line2)
    histo = _HISTO_FIRST.get(sub[0])
    if histo:
        if not top:
            raise ParseError(source, line_no - 1, "histogram header without the vdev name", line1)
        pairs = _pair_up(top[1:], sub[1:], source, line_no, line2)
        cols = []
        for g, s in pairs:
            name = f"{histo}_{g}_{s}" if g else f"{histo}_{s}"
            cols.append(Column(name, parse_count))
        return Header(tuple(cols), histo, top[0])
    if sub[0] != "pool":
        raise ParseError(source, line_no, "expected `pool` as the first column", line2)
    pairs = _pair_up(top, sub[1:], source, line_no, line2)
    if not pairs or pairs[0][0] is None:
        raise ParseError(source, line_no, "header has no column groups", line2)
    return Header(tuple(_stats_column(g, s) for g, s in pairs))


def _names_to_header(names: Sequence[str]) -> Header:
    cols = []
    for n in names:
        if n in ("alloc", "free", "read_bw", "write_bw"):
            cols.append(Column(n, parse_size))
        elif "wait" in n:
            cols.append(Column(n, parse_duration_ns))
        else:
            cols.append(Column(n, parse_count))
    return Header(tuple(cols))


_DEFAULT = ["alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw"]
# The -l and -q column sets seen in captures: 0.7 (scrub), 0.8 (+trim) and 2.x (+rebuild).
_LAT_BASE = [f"{w}_{d}" for w in ("total_wait", "disk_wait", "syncq_wait", "asyncq_wait") for d in ("read", "write")]
_LAT_SETS = [_LAT_BASE + ["scrub_wait"], _LAT_BASE + ["scrub_wait", "trim_wait"],
             _LAT_BASE + ["scrub_wait", "trim_wait", "rebuild_wait"]]
_Q_BASE = ["syncq_read", "syncq_write", "asyncq_read", "asyncq_write", "scrubq_read"]
_Q_SETS = [[f"{q}_{s}" for q in qs for s in ("pend", "activ")]
           for qs in (_Q_BASE, _Q_BASE + ["trimq_write"], _Q_BASE + ["trimq_write", "rebuildq_write"])]


def scripted_header(n_values: int, flags: str = "", source: str = SOURCE, line_no: int = 0,
                    line: Optional[str] = None) -> Header:
    """Columns of headerless ``-H`` rows from their count and the ``-l``/``-q`` flags of the run.

    Without flags every combination is tried; a count that fits none, or more
    than one, is a ParseError (e.g. 16 values: ``-l`` of 0.8 or ``-q`` of 0.7).
    """
    lat_opts: List[List[str]] = [[]]
    q_opts: List[List[str]] = [[]]
    if "l" in flags or not flags:
        lat_opts = ([[]] if not flags else []) + _LAT_SETS
    if "q" in flags or not flags:
        q_opts = ([[]] if not flags else []) + _Q_SETS
    fits = [_DEFAULT + la + q for la in lat_opts for q in q_opts if 6 + len(la) + len(q) == n_values]
    if len(fits) != 1:
        why = "matches no known column set" if not fits else "is ambiguous (pass the iostat flags)"
        raise ParseError(source, line_no, f"headerless row with {n_values} values {why}", line)
    return _names_to_header(fits[0])


# --- the parser ----------------------------------------------------------------------------------------

@dataclass
class _Row:
    entity: Entity
    metrics: Dict[str, float]
    depth: int


@dataclass
class _Group:
    """One pool's rows of one report."""

    pool: str
    builder: TreeBuilder
    header: Header
    report: int
    ts: float
    rows: List[_Row] = field(default_factory=list)
    pool_metrics: Dict[str, float] = field(default_factory=dict)


ClockForReport = Callable[[int], float]
TopologyProvider = Callable[[str], Optional[Topology]]


class ZpoolIostatParser(StreamParser):
    """Incremental ``zpool iostat`` reader: feed lines, get each pool's samples as soon as they are complete.

    ``interval``: seconds between reports (None if unknown); ``first_since_boot``:
    False for ``-y`` streams; ``flags``: the ``-l``/``-q`` letters of the run
    (only needed for headerless ``-H`` rows); ``pools``: pool names, so ``-H -v``
    rows can be told apart; ``topology`` / ``topology_provider``: roles and
    parents from ``zpool status`` (the provider is asked again for a pool
    whenever its printed rows change); ``report_clock``: time of report N when
    the text carries none (captured logs).
    """

    def __init__(self, source: str = SOURCE, interval: Optional[float] = None, *, first_since_boot: bool = True,
                 flags: str = "", pools: Sequence[str] = (), topology: Optional[Topology] = None,
                 topology_provider: Optional[TopologyProvider] = None,
                 report_clock: Optional[ClockForReport] = None) -> None:
        self.source = source
        self.interval = interval
        self.first_since_boot = first_since_boot
        self.flags = flags
        self.pools = list(pools)
        self.topology = topology
        self.topology_provider = topology_provider
        self.report_clock = report_clock
        self._line_no = 0
        self._held: Optional[Tuple[int, str, float]] = None  # header line 1 (no, text, ts) waiting for line 2
        self._header: Optional[Header] = None
        self._histo: Optional[Header] = None
        self._histo_values: Dict[str, float] = {}
        self._histo_line = 0
        self._group: Optional[_Group] = None
        self._report = 0
        self._report_ts: Optional[float] = None  # printed by -T, or the arrival of the report's first line
        self._report_printed_ts = False
        self._report_pools: Set[str] = set()
        self._report_has_children = False
        self._rows_in_report = 0
        self._last_report_pools: Optional[Set[str]] = None
        self._verbose: Optional[bool] = None
        self._raw_sig: Dict[str, Tuple[Tuple[str, int], ...]] = {}
        self._sig: Dict[str, FrozenSet[Tuple[str, str, str, str]]] = {}
        self._last_ts = 0.0
        self._histo_pool = ""
        self.reports_seen = 0

    # public ----------------------------------------------------------------------------------------------
    def inherit(self, old: ZpoolIostatParser) -> None:
        """Take over what ``old`` knew about each pool's tree (for a restarted child's stream)."""
        self._sig = dict(old._sig)
        self.topology = old.topology

    def feed(self, line: str, ts: float) -> List[Record]:
        self._line_no += 1
        self._last_ts = ts
        try:
            return self._feed(line.rstrip("\r\n"), ts)
        except ParseError:
            self._held = None
            raise
        except (ValueError, OverflowError, IndexError) as exc:  # a number we cannot read, a cut-off row
            self._held = None
            raise ParseError(self.source, self._line_no, str(exc), line) from None

    def flush(self, ts: float) -> List[Record]:
        out: List[Record] = []
        held, self._held = self._held, None
        out.extend(self._close_group())
        out.extend(self._close_histo())
        if self._rows_in_report:
            out.extend(self._end_report(ts))
        if held is not None:
            raise ParseError(self.source, held[0], "unexpected text (not a header, row or timestamp)", held[1])
        return out

    # line dispatch ---------------------------------------------------------------------------------------
    def _feed(self, s: str, ts: float) -> List[Record]:
        stripped = s.strip()
        if not stripped:
            return []
        tokens = stripped.split()
        if self._held is not None:
            no, first, first_ts = self._held
            self._held = None
            return self._header_lines(first, s, no, first_ts)
        if _EPOCH_RE.match(stripped):
            out = self._new_report_boundary(ts)
            self._report_ts = float(stripped)
            self._report_printed_ts = True
            return out
        m = _DATE_RE.match(stripped)
        if m:
            out = self._new_report_boundary(ts)
            self._report_ts = _date_ts(stripped, m.group(1))
            self._report_printed_ts = True
            return out
        if _SEPARATOR_RE.match(s):
            return self._separator()
        if len(tokens) >= 2 and all(_VALUE_RE.match(t) for t in tokens[1:]):
            if self._histo is not None:
                return self._histo_row(tokens, s)
            return self._row(s, tokens, ts)
        if tokens[0] in ("pool", *_HISTO_FIRST):
            raise ParseError(self.source, self._line_no, "header line without the column groups above it", s)
        self._held = (self._line_no, s, ts)
        return []

    def _header_lines(self, first: str, second: str, no: int, ts: float) -> List[Record]:
        header = parse_header(first, second, self.source, self._line_no)
        out = self._close_group()
        out.extend(self._close_histo())
        if header.histogram:
            if header.owner in self._report_pools:
                out.extend(self._end_report(ts))
            self._start_report_ts(ts)
            self._histo = header
            self._histo_values = {}
            self._histo_line = no
            return out
        if self._rows_in_report:
            out.extend(self._end_report(ts))
        self._start_report_ts(ts)
        self._header = header
        return out

    def _separator(self) -> List[Record]:
        if self._histo is not None:
            return self._close_histo() if self._histo_values else []
        return self._close_group()

    # report bookkeeping ----------------------------------------------------------------------------------
    def _start_report_ts(self, ts: float) -> None:
        if self._report_ts is None:
            self._report_ts = self.report_clock(self._report) if self.report_clock else ts

    def _new_report_boundary(self, ts: float) -> List[Record]:
        out = self._close_group()
        out.extend(self._close_histo())
        if self._rows_in_report:
            out.extend(self._end_report(ts))
        else:
            self._report_ts = None
        return out

    def _end_report(self, ts: float) -> List[Record]:
        """The current report is over: learn whether the stream is verbose, note pools that disappeared."""
        out: List[Record] = []
        if self._verbose is None and self._rows_in_report:
            self._verbose = self._report_has_children
        if self._last_report_pools is not None and self._report_pools:
            gone = sorted(self._last_report_pools - self._report_pools)
            if gone:
                ets = self._report_ts if self._report_ts is not None else ts
                out.append(Event(ets, EventKind.TOPOLOGY, f"pool(s) no longer reported: {', '.join(gone)}",
                                 source=self.source, data={"removed_pools": gone}))
                for p in gone:
                    self._sig.pop(p, None)
                    self._raw_sig.pop(p, None)
        if self._report_pools:
            self._last_report_pools = set(self._report_pools)
        self._report += 1
        self.reports_seen += 1
        self._report_pools = set()
        self._report_has_children = False
        self._rows_in_report = 0
        self._report_ts = None
        self._report_printed_ts = False
        return out

    # stats rows ------------------------------------------------------------------------------------------
    def _row(self, s: str, tokens: List[str], ts: float) -> List[Record]:
        name, values = tokens[0], tokens[1:]
        out: List[Record] = []
        scripted = self._header is None
        header = self._header
        if header is None:
            header = scripted_header(len(values), self.flags, self.source, self._line_no, s)
        depth = 0 if scripted else indent_depth(s.expandtabs(8))
        all_missing = all(v == "-" for v in values)
        g = self._group
        if depth == 0 and name in SECTION_ROLES and all_missing and g is not None:
            g.builder.section(name)
            return out
        if depth == 0 and scripted and g is not None and not self._is_pool_name(name):
            depth = self._scripted_depth(g.pool, name)
        if not header.core <= len(values) <= len(header.columns):
            raise ParseError(self.source, self._line_no,
                             f"{len(values)} values, the header has {header.core} columns", s)
        if depth == 0:
            if name in self._report_pools:
                out.extend(self._close_group())
                out.extend(self._end_report(ts))
            else:
                out.extend(self._close_group())
            self._start_report_ts(ts)
            assert self._report_ts is not None
            builder = TreeBuilder(name)
            self._group = _Group(name, builder, header, self._report, self._report_ts,
                                 pool_metrics=self._values(header, values, s))
            self._report_pools.add(name)
            self._rows_in_report += 1
            if self._verbose is False:
                out.extend(self._close_group())
            return out
        if g is None:
            raise ParseError(self.source, self._line_no, "vdev row before any pool row", s)
        if scripted and self.topology is not None:
            known = self.topology.lookup(g.pool, name)
            entity = (Entity(known.kind, name, g.pool, known.role, known.parent) if known
                      else Entity(Kind.VDEV, name, g.pool, g.builder.role, g.pool))
        else:
            entity = g.builder.add(name, depth)
        g.rows.append(_Row(entity, self._values(header, values, s), depth))
        self._rows_in_report += 1
        self._report_has_children = True
        self._verbose = True
        return out

    def _is_pool_name(self, name: str) -> bool:
        if name in self.pools:
            return True
        if self.topology is not None:
            return name in self.topology.pools
        return not self.pools  # nothing known: every headerless row is a pool (plain `-H`)

    def _scripted_depth(self, pool: str, name: str) -> int:
        known = self.topology.lookup(pool, name) if self.topology is not None else None
        return 2 if known is not None and known.kind == Kind.LEAF else 1

    def _values(self, header: Header, values: Sequence[str], line: str) -> Dict[str, float]:
        metrics: Dict[str, float] = {}
        for col, raw in zip(header.columns, values):
            if col.metric is None or is_missing(raw):
                continue
            try:
                metrics[col.metric] = col.parse(raw)
            except (ValueError, OverflowError):
                raise ParseError(self.source, self._line_no, f"bad value {raw!r} for {col.metric}", line) from None
        return metrics

    def _close_group(self) -> List[Record]:
        g, self._group = self._group, None
        if g is None:
            return []
        pool_entity = g.builder.pool_entity()
        raw_sig = tuple((r.entity.name, r.depth) for r in g.rows)
        if self.topology_provider is not None and self._raw_sig.get(g.pool) != raw_sig:
            fresh = self.topology_provider(g.pool)
            if fresh is not None:
                if self.topology is None:
                    self.topology = Topology()
                self.topology.merge(fresh)
        self._raw_sig[g.pool] = raw_sig
        entities = [self._authoritative(r.entity) for r in g.rows]
        out: List[Record] = []
        sig = frozenset((e.kind.value, e.name, (e.role or Role.DATA).value, e.parent) for e in entities)
        old = self._sig.get(g.pool)
        if old is not None and old != sig:
            out.append(self._topology_event(g, pool_entity, old, sig))
        self._sig[g.pool] = sig
        since_boot = g.report == 0 and self.first_since_boot
        interval = None if since_boot else self.interval
        samples = [Sample(g.ts, pool_entity, g.pool_metrics, interval, since_boot, self.source)]
        samples.extend(Sample(g.ts, e, r.metrics, interval, since_boot, self.source) for r, e in zip(g.rows, entities))
        out.extend(samples)
        return out

    def _authoritative(self, e: Entity) -> Entity:
        """Role, kind and parent as ``zpool status`` says, where it knows the vdev."""
        if self.topology is None:
            return e
        known = self.topology.lookup(e.pool, e.name)
        if known is None:
            return e
        parent = known.parent
        if known.kind != Kind.VDEV and self.topology.lookup(e.pool, parent) is None:
            parent = e.parent
        return Entity(known.kind, e.name, e.pool, known.role, parent)

    def _topology_event(self, g: _Group, pool_entity: Entity, old: FrozenSet, new: FrozenSet) -> Event:
        old_by = {(k, n): (r, p) for k, n, r, p in old}
        new_by = {(k, n): (r, p) for k, n, r, p in new}
        added = sorted(n for (k, n) in new_by if (k, n) not in old_by)
        removed = sorted(n for (k, n) in old_by if (k, n) not in new_by)
        changed = sorted(n for kn, rp in new_by.items() if kn in old_by and old_by[kn] != rp for n in [kn[1]])
        parts = []
        for label, names in (("added", added), ("removed", removed), ("changed role/parent", changed)):
            if names:
                parts.append(f"{label} {', '.join(names)}")
        text = f"pool {g.pool}: " + "; ".join(parts or ["topology changed"])
        return Event(g.ts, EventKind.TOPOLOGY, text, source=self.source, entity=pool_entity.key,
                     data={"pool": g.pool, "added": added, "removed": removed, "changed": changed})

    # histograms ------------------------------------------------------------------------------------------
    def _histo_row(self, tokens: List[str], s: str) -> List[Record]:
        h = self._histo
        assert h is not None
        label, values = tokens[0], tokens[1:]
        if len(values) != len(h.columns):
            raise ParseError(self.source, self._line_no, f"{len(values)} values, the header has {len(h.columns)}", s)
        bucket = _bucket_label(h.histogram or "", label)
        for col, raw in zip(h.columns, values):
            if is_missing(raw):
                continue
            self._histo_values[f"{col.metric}_{bucket}"] = col.parse(raw)
        self._rows_in_report += 1
        return []

    def _close_histo(self) -> List[Record]:
        h, self._histo = self._histo, None
        if h is None or not self._histo_values:
            return []
        values, self._histo_values = self._histo_values, {}
        owner = h.owner
        if not self._report_pools or owner in self.pools or (self.topology and owner in self.topology.pools):
            entity = Entity(Kind.POOL, owner, owner)
            self._histo_pool = owner
        else:
            pool = self._histo_pool or owner
            known = self.topology.lookup(pool, owner) if self.topology is not None else None
            entity = (Entity(known.kind, owner, pool, known.role, known.parent) if known
                      else Entity(Kind.VDEV, owner, pool, Role.DATA, pool))
        self._report_pools.add(owner)
        since_boot = self._report == 0 and self.first_since_boot
        ts = self._report_ts if self._report_ts is not None else self._last_ts
        return [Sample(ts, entity, values, None if since_boot else self.interval, since_boot, self.source)]


def _bucket_label(kind: str, label: str) -> str:
    """The canonical, lower-case bucket name: ``4K`` and ``4096`` are both ``4k``; ``131us`` stays."""
    from zfsmon.units import human_ns, human_size  # formatting lives with the views

    if kind == "rq":
        return human_size(parse_size(label)).lower()
    return human_ns(parse_duration_ns(label))


def _date_ts(text: str, zone: Optional[str]) -> float:
    """``-T d`` prints local time (C locale ``%a %b %e %H:%M:%S %Y``); read it in this machine's zone."""
    words = text.split()
    if zone:
        words.pop(4)
    st = time.strptime(" ".join(words), "%a %b %d %H:%M:%S %Y")
    if zone in ("UTC", "GMT"):
        return float(calendar.timegm(st))
    return time.mktime(st)


def parse_text(text: str, source: str = SOURCE, interval: Optional[float] = None, *, start_ts: float = 0.0,
               first_since_boot: bool = True, flags: str = "", pools: Sequence[str] = (),
               topology: Optional[Topology] = None) -> List[Record]:
    """Every record of a captured ``zpool iostat`` log.

    Without ``-T`` stamps in the text, report N is dated ``start_ts + N * interval``.
    """
    parser = ZpoolIostatParser(source, interval, first_since_boot=first_since_boot, flags=flags, pools=pools,
                               topology=topology, report_clock=lambda n: start_ts + n * (interval or 0.0))
    out: List[Record] = []
    for line in text.splitlines():
        out.extend(parser.feed(line, start_ts))
    out.extend(parser.flush(start_ts))
    return out


# --- running it ----------------------------------------------------------------------------------------

def iostat_argv(pools: Sequence[str], interval: Optional[float], flags: Sequence[str] = (), zpool: str = "zpool",
                count: Optional[int] = None) -> List[str]:
    """``zpool iostat [flags] -v [POOL...] [INTERVAL [COUNT]]``; intervals are whole seconds for old zpools."""
    argv = [zpool, "iostat", *flags, "-v", *pools]
    if interval is not None:
        argv.append(str(int(interval)) if float(interval).is_integer() else str(interval))
        if count is not None:
            argv.append(str(count))
    return argv


def _letters(flags: Sequence[str]) -> str:
    return "".join(f[1:] for f in flags if f.startswith("-") and f not in ("-T",) and not f.startswith("-T"))


def read_once(pools: Sequence[str] = (), flags: Sequence[str] = (), zpool: str = "zpool",
              topology: Optional[Topology] = None, timeout: float = 30.0, clock: Callable[[], float] = time.time
              ) -> List[Record]:
    """One ``zpool iostat -v`` (since-import averages) parsed. Raises OSError if the command fails."""
    argv = iostat_argv(pools, None, flags, zpool)
    text = run_zpool(argv, timeout)
    now = clock()
    return parse_text(text, " ".join(argv), None, start_ts=now, flags=_letters(flags), pools=pools,
                      topology=topology)


class ZpoolIostatCollector(StreamCollector):
    """One persistent ``zpool iostat -T u -v [-l -q -p] [POOL...] INTERVAL`` child, roles merged from ``zpool status``.

    ``flags=None`` probes which flags the local ``zpool`` accepts (at
    :meth:`start`, once) and uses the richest set.  ``zpool status`` is read
    again for a pool whenever its printed rows change, so a removed and
    re-added cache device keeps its role; if it fails, the samples keep the
    roles ``zpool iostat`` itself shows and an error event says why.
    """

    def __init__(self, pools: Sequence[str] = (), interval: float = 5.0, flags: Optional[Sequence[str]] = None,
                 zpool: str = "zpool", clock: Callable[[], float] = time.time,
                 roles_from_status: bool = True) -> None:
        self.pools = list(pools)
        self.interval = float(interval)
        self.zpool = zpool
        self.flags: Optional[List[str]] = list(flags) if flags is not None else None
        self.roles_from_status = roles_from_status
        parser = ZpoolIostatParser(SOURCE, self.interval, pools=self.pools)
        super().__init__(iostat_argv(self.pools, self.interval, self.flags or (), zpool), parser, "zpool_iostat",
                         clock=clock)

    def start(self) -> None:
        if self.flags is None:
            from zfsmon.sources.zpool_probe import probe_flags

            self.flags = probe_flags(self.zpool, keys=("", "T", "l", "q", "lq", "p")).argv()
        self.argv = iostat_argv(self.pools, self.interval, self.flags, self.zpool)
        super().start()

    def _spawn(self) -> None:
        """Each (re)started child begins with a since-import report, so it gets a fresh parser.

        What the old parser knew about each pool's tree is carried over, so a
        pool that comes back different (re-imported without its cache device)
        still shows up as a topology event.
        """
        old = self.parser
        fresh = ZpoolIostatParser(SOURCE, self.interval, flags=_letters(self.flags or ()), pools=self.pools,
                                  topology_provider=self._status if self.roles_from_status else None)
        if isinstance(old, ZpoolIostatParser):
            fresh.inherit(old)
        self.parser = fresh
        super()._spawn()

    def _status(self, pool: str) -> Optional[Topology]:
        """Called from the reader thread by the parser; failures become error events, not exceptions."""
        try:
            return read_topology([pool], self.zpool)
        except (OSError, ParseError) as exc:
            self._q.put(self._error(f"{self.name}: roles from zpool status unavailable: {exc}"))
            return None
