"""``zpool iostat -v`` output -> per-pool / per-vdev / per-leaf samples with roles.

The parser reads what every ZFS since OpenSolaris prints, whatever its
columns (:mod:`zfsmon.sources.zpool.iostat_columns`: old and new headers,
``-l``/``-q`` groups, ``-c`` script columns, headerless ``-H`` rows),
``-r``/``-w`` histograms (:mod:`zfsmon.sources.zpool.iostat_histogram`), ``-p``
exact integers, ``-T u|d`` timestamps (used as the sample time) and ``-y``.
Rows are split on whitespace, not by column position, because long names
push columns out of line.  ``-`` means "no value": the metric is left out,
never set to 0.

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
without a ``logs`` heading) a :class:`~zfsmon.sources.zpool.status.Topology`
from ``zpool status`` overrides role, kind and parent by name. The running
collector is :mod:`zfsmon.sources.zpool.iostat_collector`.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from zfsmon.model import (
    SECTION_ROLES,
    Entity,
    Event,
    EventKind,
    Kind,
    ParseError,
    Record,
    Role,
    Sample,
    typical_gap,
)
from zfsmon.sources.child import StreamParser
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool.iostat_columns import (
    HISTOGRAM_KINDS,
    RECORD_SOURCE,
    Header,
    infer_flags,
    parse_header,
    scripted_fits,
    scripted_header,
)
from zfsmon.sources.zpool.iostat_histogram import HistogramTable, owner_entity
from zfsmon.sources.zpool.iostat_tree import guess_topology
from zfsmon.sources.zpool.status import (
    Topology,
    TreeBuilder,
    indent_depth,
    status_for,
    valid_pool_name,
)
from zfsmon.units import is_missing

__all__ = ["ZpoolIostatParser", "parse_text", "read_capture", "looks_like"]

_VALUE_RE = re.compile(r"^(-|\d+(?:\.\d+)?[A-Za-z]{0,2})$")
_EPOCH_RE = re.compile(r"^\d{9,11}$")
_DATE_RE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?: (\S+))? \d{4}$")
_SEPARATOR_RE = re.compile(r"^[\s-]*--[\s-]*$")


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

    def __init__(self, source: str = RECORD_SOURCE, interval: Optional[float] = None, *, first_since_boot: bool = True,
                 flags: str = "", pools: Sequence[str] = (), topology: Optional[Topology] = None,
                 topology_provider: Optional[TopologyProvider] = None,
                 report_clock: Optional[ClockForReport] = None, detect_skipped_first: bool = False,
                 where: Optional[str] = None) -> None:
        self.source = source
        #: what its errors name the text by (a captured file's name); ``source`` when not given
        self.where = where if where is not None else source
        self.interval = interval
        self.first_since_boot = first_since_boot
        self.flags = flags
        self.pools = list(pools)
        self.topology = topology
        self.topology_provider = topology_provider
        self.report_clock = report_clock
        self.detect_skipped_first = detect_skipped_first
        #: True once the text showed a first report with a time stamp and no rows (``-y`` with ``-T``)
        self.skipped_first = False
        #: interval histogram samples read while the interval was unknown: still per second (:func:`histogram_counts`)
        self.per_second: List[Sample] = []
        self._scripted: Dict[int, Header] = {}  # headerless column sets by value count, once decided
        self._line_no = 0
        self._held: Optional[Tuple[int, str, float]] = None  # header line 1 (no, text, ts) waiting for line 2
        self._header: Optional[Header] = None
        self._histo: Optional[HistogramTable] = None  # the -r/-w table being read
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
            raise ParseError(self.where, self._line_no, str(exc), line) from None

    def flush(self, ts: float) -> List[Record]:
        out: List[Record] = []
        held, self._held = self._held, None
        out.extend(self._close_group())
        out.extend(self._close_histo())
        if self._rows_in_report:
            out.extend(self._end_report(ts))
        if held is not None:
            raise ParseError(self.where, held[0], "unexpected text (not a header, row or timestamp)", held[1])
        return out

    # line dispatch ---------------------------------------------------------------------------------------
    def _feed(self, s: str, ts: float) -> List[Record]:
        stripped = s.strip()
        if not stripped:
            return []
        tokens = stripped.split()
        if self._held is not None:
            _, first, first_ts = self._held
            self._held = None
            return self._header_lines(first, s, first_ts)
        if len(tokens) >= 2 and _all_values(tokens[1:]):  # first: most lines are rows (none is a time or a rule)
            if self._histo is not None:
                return self._histo_row(tokens, s)
            return self._row(s, tokens, ts)
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
        if tokens[0] in ("pool", *HISTOGRAM_KINDS):
            raise ParseError(self.where, self._line_no, "header line without the column groups above it", s)
        self._held = (self._line_no, s, ts)
        return []

    def _header_lines(self, first: str, second: str, ts: float) -> List[Record]:
        header = parse_header(first, second, self.where, self._line_no)
        out = self._close_group()
        out.extend(self._close_histo())
        if header.histogram:
            if header.owner in self._report_pools:
                out.extend(self._end_report(ts))
            self._start_report_ts(ts)
            self._histo = HistogramTable(header)
            return out
        if self._rows_in_report:
            out.extend(self._end_report(ts))
        self._start_report_ts(ts)
        self._header = header
        return out

    def _separator(self) -> List[Record]:
        if self._histo is not None:
            return self._close_histo() if self._histo.values else []
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
            if (self.detect_skipped_first and self._report_printed_ts and self._report == 0
                    and self.reports_seen == 0 and self.first_since_boot):
                # `zpool iostat -y -T u`: the skipped since-import iteration still prints its time stamp
                self.first_since_boot = False
                self.skipped_first = True
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
            header = self._scripted.get(len(values)) or scripted_header(len(values), self.flags, self.where,
                                                                        self._line_no, s, values)
            self._scripted[len(values)] = header
        depth = 0 if scripted else indent_depth(s.expandtabs(8))
        all_missing = all(v == "-" for v in values)
        g = self._group
        if depth == 0 and name in SECTION_ROLES and all_missing and g is not None:
            g.builder.section(name)
            return out
        if depth == 0 and scripted and g is not None and not self._is_pool_name(name):
            depth = self._scripted_depth(g.pool, name)
        if not header.core <= len(values) <= len(header.columns):
            raise ParseError(self.where, self._line_no,
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
            raise ParseError(self.where, self._line_no, "vdev row before any pool row", s)
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
                raise ParseError(self.where, self._line_no, f"bad value {raw!r} for {col.metric}", line) from None
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
        assert self._histo is not None
        self._histo.add_row(tokens, s, self.where, self._line_no)
        self._rows_in_report += 1
        return []

    def _close_histo(self) -> List[Record]:
        h, self._histo = self._histo, None
        if h is None or not h.values:
            return []
        owner = h.owner
        is_pool = bool(not self._report_pools or owner in self.pools
                       or (self.topology and owner in self.topology.pools))
        if is_pool:
            self._histo_pool = owner
        entity = owner_entity(owner, self._histo_pool or owner, is_pool, self.topology)
        self._report_pools.add(owner)
        since_boot = self._report == 0 and self.first_since_boot
        ts = self._report_ts if self._report_ts is not None else self._last_ts
        sample = Sample(ts, entity, h.values, None if since_boot else self.interval, since_boot, self.source)
        if since_boot:  # the since-import table: zpool prints its counts as they are
            return [sample]
        if self.interval is None:  # counts once the capture's times say the interval (read_capture)
            self.per_second.append(sample)
            return [sample]
        return [histogram_counts(sample, self.interval)]


def histogram_counts(sample: Sample, interval: float) -> Sample:
    """An interval's ``-r``/``-w`` table as counts. zpool prints an interval's histograms per second (each bucket's
    count over the interval's seconds; with ``-p`` cut to a whole number), its since-import table as counts; a
    sample holds counts, so the interval's values are multiplied back (each bucket within ``interval`` I/Os of
    the count, from the cut)."""
    return Sample(sample.ts, sample.entity, {k: v * interval for k, v in sample.metrics.items()}, interval,
                  sample.since_boot, sample.source)


def _all_values(tokens: List[str]) -> bool:
    """Every token a value (a row, not a header). Plain digits, most rows of ``-p`` and ``-w``, are told in one
    C call; only other rows are matched token by token."""
    joined = "".join(tokens)
    return (joined.isdigit() and joined.isascii()) or all(_VALUE_RE.match(t) for t in tokens)


def _date_ts(text: str, zone: Optional[str]) -> float:
    """``-T d`` prints local time (C locale ``%a %b %e %H:%M:%S %Y``); read it in this machine's zone."""
    words = text.split()
    if zone:
        words.pop(4)
    st = time.strptime(" ".join(words), "%a %b %d %H:%M:%S %Y")
    if zone in ("UTC", "GMT"):
        return float(calendar.timegm(st))
    return time.mktime(st)


def parse_text(text: str, source: str = RECORD_SOURCE, interval: Optional[float] = None, *, start_ts: float = 0.0,
               first_since_boot: bool = True, flags: str = "", pools: Sequence[str] = (),
               topology: Optional[Topology] = None) -> List[Record]:
    """Every record of a captured ``zpool iostat`` log.

    Without ``-T`` stamps in the text, report N is dated ``start_ts + N * interval``.
    """
    return _parse(text, source, interval, start_ts, first_since_boot, flags, pools, topology)[0]


def _parse(text: str, source: str, interval: Optional[float], start_ts: float, first_since_boot: bool, flags: str,
           pools: Sequence[str], topology: Optional[Topology], detect_skipped_first: bool = False
           ) -> Tuple[List[Record], ZpoolIostatParser]:
    # the records carry the source's one name; ``source`` (the text's name) is what errors point at
    parser = ZpoolIostatParser(RECORD_SOURCE, interval, first_since_boot=first_since_boot, flags=flags, pools=pools,
                               topology=topology, report_clock=lambda n: start_ts + n * (interval or 0.0),
                               detect_skipped_first=detect_skipped_first, where=source)
    out: List[Record] = []
    for line in text.splitlines():
        out.extend(parser.feed(line, start_ts))
    out.extend(parser.flush(start_ts))
    return out, parser


def _headerless_rows(text: str) -> List[List[str]]:
    """The values of every headerless row (``-H``), name left out; empty if the text has a header."""
    rows = []
    for line in text.splitlines()[:20000]:
        toks = line.split()
        if not toks or _EPOCH_RE.match(line.strip()) or _DATE_RE.match(line.strip()):
            continue
        if len(toks) < 2 or not all(_VALUE_RE.match(t) for t in toks[1:]):
            return []
        rows.append(toks[1:])
    return rows


def read_capture(text: str, source: str, interval: Optional[float], options: ParseOptions) -> List[Record]:
    """A captured log with what the user and the files beside it say (``zfsmon parse`` / ``zfsmon import``).

    Roles and parents the text does not show (``-H -v``, ``-v -r``/``-w``) come
    from a ``zpool status`` capture among ``options.beside`` that lists the
    pool, else from this host's ``zpool status`` when it lists the pool and
    every device the text names, else they are guessed from the text
    (:mod:`zfsmon.sources.zpool.iostat_tree`).  ``options.flags``: ``l``/``q``
    say the columns of headerless rows (inferred when left out), ``y`` that
    the first report is an interval (inferred when a ``-T`` stamp comes with
    no rows).  Every guess is an ``info`` event whose ``data`` has ``note``.
    """
    notes: List[str] = []
    letters = "".join(c for c in options.flags if c in "lq")
    said_y = "y" in options.flags
    rows = _headerless_rows(text)
    if rows and not letters:
        ambiguous = any(len(scripted_fits(len(r))) > 1 for r in rows)
        inferred = infer_flags(rows)
        if inferred is not None:
            letters = inferred
            if ambiguous:
                notes.append(f"headerless rows of {len(rows[0])} values read as `zpool iostat -H"
                             f"{'' if not inferred else ' -' + inferred}` (their values say so); "
                             "say otherwise with --iostat-flags")
    guess = guess_topology(text)
    topology: Optional[Topology] = None
    pools: Sequence[str] = ()
    if guess is not None:
        pool = guess.topology.pools[0]
        found = status_for(pool, options.beside)
        if found is None and options.host_text is not None:
            live = options.host_text(["zpool", "status", pool])
            if live is not None:
                hit = status_for(pool, [("zpool status on this host", live)])
                if hit is not None and all(hit[1].lookup(pool, e.name) for e in guess.topology.of_pool(pool)):
                    found = hit
        if found is not None:
            topology = found[1]
            notes.append(f"pool {pool}: roles and parents from {found[0]}")
        else:
            topology = guess.topology
            notes.extend(guess.notes)
        pools = topology.pools
    elif options.beside:
        # the text shows its tree, but not always every role (zfs-fuse prints its SLOG without `logs`):
        # a zpool status given for one of its pools is still the authority
        names = {ln.split()[0] for ln in text.splitlines()[:5000] if ln.strip() and not ln[0].isspace()}
        found = next((hit for pool in sorted(names) if valid_pool_name(pool)
                      for hit in [status_for(pool, options.beside)] if hit is not None), None)
        if found is not None:
            topology = found[1]
            pools = topology.pools if rows else ()
            notes.append(f"roles and parents from {found[0]}")
    records, parser = _parse(text, source, interval, 0.0, not said_y, letters, pools, topology,
                             detect_skipped_first=not said_y)
    if parser.per_second:  # the interval its printed times show, as :func:`zfsmon.model.with_intervals` takes it
        gap = typical_gap(r.ts for r in records if isinstance(r, Sample))
        if gap is not None:
            scaled = {id(s): histogram_counts(s, gap) for s in parser.per_second}
            records = [scaled.get(id(r), r) for r in records]
    if parser.skipped_first:
        notes.append("the first time stamp came with no rows (`zpool iostat -y`): every report is an interval")
    if not notes:
        return records
    ts = min((r.ts for r in records), default=0.0)
    return [Event(ts, EventKind.INFO, f"{source}: {n}", source=source, data={"note": n}) for n in notes] + records


# --- a saved text? (`zfsmon parse` / `zfsmon import`) ------------------------------------------------

_HEAD = re.compile(r"^\s*(capacity\s+)?operations\s+bandwidth\b")
_COLUMNS = re.compile(r"^\s*pool\s+(alloc\s+free|used\s+avail)\s+read\s+write")
_HISTOGRAM = re.compile(r"^\S+\s+(total_wait|sync_read)\s+\S+")


def looks_like(text: str) -> bool:
    """A ``zpool iostat`` header (either generation) or histogram header among the first 60 lines, or ``-H`` rows."""
    head = [ln for ln in text.splitlines()[:60] if ln.strip()]
    return any(_HEAD.match(ln) or _COLUMNS.match(ln) or _HISTOGRAM.match(ln) for ln in head) or _looks_headerless(head)


def _looks_headerless(head: Sequence[str]) -> bool:
    """``zpool iostat -H`` rows: a pool or vdev name, then values only, as many as a known column set has.

    Every line must be such a row (or a ``-T`` stamp), the first a valid pool
    name, and every row's count one ``-H`` prints (6; 15-17 with ``-l``; 16, 18,
    20 with ``-q``; 25, 28, 31 with both), so tables of other tools with numeric
    columns are not taken for it.
    """
    rows = [ln.split() for ln in head if not (_EPOCH_RE.match(ln.strip()) or _DATE_RE.match(ln.strip()))]
    if not rows or not valid_pool_name(rows[0][0]):
        return False
    for toks in rows:
        if len(toks) < 7 or not scripted_fits(len(toks) - 1) or not all(_VALUE_RE.match(t) for t in toks[1:]):
            return False
        if toks[0][0].isdigit() and toks[0].isdigit():
            return False
    return True

