"""What the dashboard shows, as plain data: a rolling window of records folded into per-entity values.

The dashboard's widgets only draw what this model holds, so everything that
matters (which roles a pool has, what the ARC hit rate was, which leaf is a
goose egg, what a pause keeps back) is testable without a terminal, and the
same model serves live mode (records arrive from the sampler) and replay (the
window around the time cursor is read from a recording and fed in).

Pure: records in, values out; no I/O, no clocks (the caller says what "now" is).
Rates and ratios are each sample's :class:`~zfsmon.model.Derived` values:
live, the ones the engine's sampler took and handed over with the records (a
:class:`~zfsmon.model.Tick`); for records read from a recording
(replay), the same :class:`~zfsmon.analysis.rates.Deriver` run over them here.
Goose eggs come from :mod:`zfsmon.analysis.goose`, read shares from
:mod:`zfsmon.analysis.readpath`, findings from :mod:`zfsmon.analysis.findings`:
the same code ``zfsmon analyze`` and ``zfsmon report`` use, so a window shows
the same numbers here as there.
"""

from __future__ import annotations

import bisect
import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple, Type, TypeVar, cast

from zfsmon import names
from zfsmon.analysis import findings, goose, readpath
from zfsmon.analysis.rates import Deriver
from zfsmon.metrics.health import HEALTHY_STATES, STATE_NAMES
from zfsmon.model import Derived, Entity, Event, EventKind, Kind, Record, Role, Sample, derived_of
from zfsmon.sources import registry
from zfsmon.sources.zpool import vdev_props
from zfsmon.views import thresholds
from zfsmon.views.top.folds import (
    FOLDS,
    ArcFold,
    FioRow,
    Fold,
    Point,
    ReadFold,
    WorkloadFold,
    ZilFold,
    copied,
)
from zfsmon.views.top.totals import TOTALLED, WindowTotals

#: order of role groups in the vdev tree, and their headings (as ``zpool status`` names its sections)
ROLE_ORDER: Tuple[Role, ...] = (Role.DATA, Role.SPECIAL, Role.DEDUP, Role.LOG, Role.CACHE, Role.SPARE)
ROLE_HEADING: Dict[Role, str] = {Role.DATA: "data", Role.SPECIAL: "special", Role.DEDUP: "dedup",
                                 Role.LOG: "logs", Role.CACHE: "cache", Role.SPARE: "spares"}
#: sort keys of the tree (cycled with `s`)
SORTS: Tuple[str, ...] = ("name", "ops", "bandwidth", "latency")
#: windows offered by +/- (seconds)
WINDOWS: Tuple[float, ...] = (60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0)

#: the kinds of the vdev tree's rows (their cadence is the goose-egg judgement's)
TREE_KINDS: Tuple[Kind, ...] = (Kind.POOL, Kind.VDEV, Kind.LEAF)
#: whole samples held at most (64 leaves at 1 Hz for an hour is ~300k: bounded memory beats a longer window)
MAX_SAMPLES = 200_000
F = TypeVar("F", bound=Fold)
#: a row's error counters, as the status source names them (READ, WRITE, CKSUM of ``zpool status``)
ERROR_COUNTS: Tuple[str, ...] = ("read_errors", "write_errors", "checksum_errors")
#: the kinds whose derived figures the panels read by entity (:attr:`TopState.derived`)
SHOWN_DERIVED: Tuple[Kind, ...] = (Kind.ARC, Kind.L2ARC, Kind.ZIL, Kind.ZIO, Kind.DEVICE)


#: the one name of the source a record's ``source`` names (:func:`zfsmon.sources.registry.one_name`)
source_name = registry.one_name


#: entity kind -> the sources that feed it (a sample that names no source stands for each of them)
_FEEDING: Dict[Kind, Tuple[str, ...]] = {k: registry.feeding((k,)) for k in Kind}


@dataclass
class TreeRow:
    """One line of the vdev tree: a pool, a role heading, a top-level vdev or a leaf."""

    kind: str  # "pool" | "role" | "vdev" | "leaf"
    name: str
    depth: int
    role: Optional[Role] = None
    metrics: Dict[str, float] = field(default_factory=dict)
    since_boot: bool = False
    device: Optional[str] = None  # the block device a leaf maps to
    device_ops: Optional[float] = None
    device_lat_ns: Optional[float] = None
    verdict: Optional[str] = None  # goose.* constant
    why: str = ""
    state: str = ""  # health from the status source (ONLINE, DEGRADED, OFFLINE, ...); "" when not known
    #: READ, WRITE, CKSUM error counts from the status source (:data:`ERROR_COUNTS`); () when not known
    errors: Tuple[float, ...] = ()
    slow_ios: Optional[float] = None  # zpool status -s SLOW (the status source); None when not known
    sit_out: bool = False  # a RAIDZ/dRAID leaf sitting out reads (the vdevprops source's ``sit_out``)


@dataclass
class Staleness:
    last: Optional[float]  # ts of the newest sample of the panel's entity kinds
    error: Optional[Event]  # the newest of ``errors``
    cadence: float = 0.0  # how often the panel's sources report, if their samples say
    #: each failing source's newest error (no sample of that source since), newest first
    errors: List[Event] = field(default_factory=list)

    def every(self, interval: float) -> float:
        """The source's interval: the sampling interval asked for, or longer if its samples say so."""
        return max(interval, self.cadence)

    def stale_lag(self, now: Optional[float], interval: float) -> Optional[float]:
        """How old the figures last reported at ``last`` are at ``now``, once that is past the "stale" threshold
        (:mod:`zfsmon.views.thresholds`, in intervals of :meth:`every`); None while fresh, or when unknown.

        The one rule for stale figures: a panel's status line says their age, the goose-egg judgement skips them.
        """
        every = self.every(interval)
        if now is None or self.last is None or every <= 0:
            return None
        lag = now - self.last
        return lag if thresholds.level("stale", lag / every) != "ok" else None


class TopState:
    """Feed record batches in time order; ask for panels' values. ``window_s`` bounds memory and the views.

    It keeps the window and what the panels share (entities, each one's newest samples and derived rates,
    staleness, errors, the vdev tree and its goose-egg verdicts); what one panel keeps beyond that (its series,
    its per-interval counts) is that panel's fold (:mod:`zfsmon.views.top.folds`), fed each interval sample of its
    kinds by :meth:`feed`."""

    def __init__(self, window_s: float = 300.0, keep_s: Optional[float] = None, interval: float = 1.0) -> None:
        self.window_s = float(window_s)
        #: the sampling interval (the view's): with the sources' own cadence, when figures are stale
        self.interval = float(interval)
        #: how long sparkline series are held (the largest window +/- can show in live mode); whole samples
        #: (for totals, export and findings) are held for the current window only, at most MAX_SAMPLES
        self.keep_s = float(keep_s) if keep_s is not None else max(self.window_s, 3600.0)
        self.samples: Deque[Sample] = deque()
        #: each row's totals over the window, told of every sample ``samples`` takes in and lets go
        self._totals = WindowTotals()
        self.events: Deque[Event] = deque()
        #: each entity's newest sample of each source: a vdev on OpenZFS has ``zpool iostat``'s ops and bandwidth
        #: and ``zpool iostat -w``'s latency histograms, in two samples whose order in an interval is anyone's
        self.latest: Dict[str, Dict[str, Sample]] = {}
        #: each pool/vdev/leaf's newest health sample (the status source), kept apart from its I/O sample
        self.health: Dict[str, Sample] = {}
        #: each pool/vdev/leaf's newest vdev properties (the vdevprops source, every minute), kept apart likewise
        self.props: Dict[str, Sample] = {}
        self.boot: Dict[str, Sample] = {}  # since-import first reports, shown until an interval arrives
        self.entities: Dict[str, Entity] = {}
        self.derived: Dict[str, Dict[str, float]] = {}
        self.last_seen: Dict[Kind, float] = {}  # entity kind -> ts of its newest sample
        #: source (its one name, :func:`source_name`) -> ts of its newest sample
        self.source_seen: Dict[str, float] = {}
        self.errors: Dict[str, Event] = {}  # source (its one name) -> its newest error
        self.cadence: Dict[Kind, float] = {}  # kind -> longest interval its samples describe (pgbench -P 10...)
        self.verdicts: Dict[Tuple[str, str], goose.Verdict] = {}  # (pool, leaf) -> latest verdict
        self.now: Optional[float] = None
        self.first: Optional[float] = None
        #: derives the samples of a recording's records (replay, tests); live records come derived (a Tick)
        self._deriver = Deriver()
        self._given: Optional[Dict[int, Derived]] = None
        #: each panel's fold (:mod:`zfsmon.views.top.folds`) by panel id: what a panel keeps beyond the above
        self.folds: Dict[str, Fold] = {f.id: f() for f in FOLDS}
        self._fed_by: Dict[Kind, Tuple[Fold, ...]] = self._routes()
        self.fed = 0

    def _routes(self) -> Dict[Kind, Tuple[Fold, ...]]:
        """Entity kind -> the folds fed its samples."""
        return {k: tuple(f for f in self.folds.values() if k in f.kinds) for k in Kind}

    def copy(self) -> TopState:
        """An independent state at the same point: replay keeps the states around its cursor, so stepping back
        is taking one, not rebuilding a window (0.1-0.2 s for 64 leaves). Every container is copied (a mapping's
        deques, lists and dicts too); the records in them are shared, being immutable."""
        new = copy.copy(self)
        for name, v in vars(self).items():
            if isinstance(v, (deque, dict, list)):
                setattr(new, name, copied(v))
            elif isinstance(v, (Deriver, WindowTotals)):
                setattr(new, name, v.copy())
        new.folds = {k: f.copy() for k, f in self.folds.items()}
        new._fed_by = new._routes()
        return new

    # ----------------------------------------------------------------------------------------------- feeding
    def feed(self, records: Iterable[Record]) -> None:
        """Fold a batch in: the sampler's (a :class:`~zfsmon.model.Tick`, its samples' derived values
        with it) or a recording's (derived here, by the same :class:`~zfsmon.analysis.rates.Deriver`)."""
        given = derived_of(records)
        batch = sorted(records, key=lambda r: r.ts)
        if not batch:
            return
        #: the sampler's derived values by the sample they are of (the very record handed over)
        self._given = {id(d.sample): d for d in given} if given is not None else None
        touched_leaves = False
        for r in batch:
            self.fed += 1
            if self.first is None or r.ts < self.first:
                self.first = r.ts
            if self.now is None or r.ts > self.now:
                self.now = r.ts
            if isinstance(r, Event):
                self._event(r)
            else:
                touched_leaves |= self._sample(r)
        if touched_leaves:
            self._judge_goose()
        self._trim()

    def _event(self, ev: Event) -> None:
        self.events.append(ev)
        if ev.kind == EventKind.ERROR:
            self.errors[source_name(ev.source)] = ev
        elif ev.kind == EventKind.TOPOLOGY and ev.data.get("removed"):
            # a removed device leaves the tree at once: its last figures would otherwise stay on screen as if current
            # two shapes: the zpool iostat source names the pool and the removed vdevs; the recorder's own
            # membership event is about its entity (``{"removed": True}``, entity set)
            removed = ev.data["removed"]
            if isinstance(removed, (list, tuple)):
                pool, gone = ev.data.get("pool"), {str(n) for n in removed}
                doomed = [k for k, e in self.entities.items() if e.pool == pool and e.name in gone]
            else:
                doomed = [ev.entity] if ev.entity else []
            for key in [k for k in doomed if k in self.entities and self.entities[k].kind in (Kind.VDEV, Kind.LEAF)]:
                del self.entities[key]
                self.latest.pop(key, None)
                self.boot.pop(key, None)
                self.health.pop(key, None)
                self.props.pop(key, None)

    def _sample(self, s: Sample) -> bool:
        e = s.entity
        key = e.key
        self.entities[key] = e
        self.last_seen[e.kind] = max(self.last_seen.get(e.kind, s.ts), s.ts)
        for src in (source_name(s.source),) if s.source else _FEEDING.get(e.kind, ()):
            self.source_seen[src] = max(self.source_seen.get(src, s.ts), s.ts)
        if s.interval:
            self.cadence[e.kind] = max(self.cadence.get(e.kind, 0.0), float(s.interval))
        if s.since_boot:
            self.boot[key] = s
            return False
        if _is_health(s):
            # zpool status every few seconds, for the same entities zpool iostat reports: as the latest sample
            # it would blank the row's I/O columns and feed the goose-egg judgement zero ops
            self.health[key] = s
            return False
        if source_name(s.source) == vdev_props.NAME:
            # once a minute: in the window's samples it would drop out of a short window between two readings
            self.props[key] = s
            return False
        self.samples.append(s)
        self._totals.add(s)
        newest = self.latest.get(key)
        if newest is None:
            self.latest[key] = {s.source: s}
        else:
            newest[s.source] = s
        d = self._derived(s)
        if d is not None and e.kind in SHOWN_DERIVED:
            self.derived[key] = dict(d.metrics)
        for f in self._fed_by[e.kind]:
            f.feed(s, d)
        return e.kind in (Kind.LEAF, Kind.DEVICE)

    def _derived(self, s: Sample) -> Optional[Derived]:
        """An interval sample's derived values: the sampler's, or (a recording's records) this state's deriver's."""
        if self._given is not None:
            return self._given.get(id(s))
        e = s.entity
        if e.kind in SHOWN_DERIVED or (e.kind == Kind.WORKLOAD and e.name.startswith(names.PGSTAT_PREFIX)):
            return self._deriver.update(s)[0]  # PostgreSQL's counters: the workload's hit rate, the read path's
        return None

    def _trim(self) -> None:
        if self.now is None:
            return
        lo = self.now - self.keep_s
        while self.events and self.events[0].ts < lo:
            self.events.popleft()
        slo = self.now - self.window_s
        while self.samples and (self.samples[0].ts < slo or len(self.samples) > MAX_SAMPLES):
            self.samples.popleft()
            self._totals.drop_oldest()
        for f in self.folds.values():
            f.trim(lo)

    # ----------------------------------------------------------------------------------------------- goose eggs
    def device_fresh(self, key: str) -> bool:
        """Whether a block device's newest figures are current (by the stale rule): a disk pulled out of the
        machine leaves ``/proc/diskstats``, and its last rate must not be shown as if it still ran."""
        newest = max((s.ts for s in self.latest.get(key, {}).values()), default=None)
        return Staleness(newest, None, self.cadence.get(Kind.DEVICE, 0.0)).stale_lag(self.now, self.interval) is None

    def _judge_goose(self) -> None:
        devices = {e.name: k for k, e in self.entities.items()
                   if e.kind == Kind.DEVICE and k in self.derived and self.device_fresh(k)}
        if not devices:
            return
        dev_ops = {n: self.derived[k].get("ops_per_s", 0.0) for n, k in devices.items()}
        said = {n: self.entities[k].parent for n, k in devices.items()}  # the zpool leaf each says it is
        by_pool: Dict[str, List[Sample]] = {}
        for srcs in self.latest.values():
            for s in srcs.values():
                if goose.is_device_row(s.entity) and goose.device_ops_per_s(s.metrics) is not None:
                    by_pool.setdefault(s.entity.pool, []).append(s)
        cadence = max(self.cadence.get(k, 0.0) for k in TREE_KINDS)
        # judged afresh: a leaf with no figures now (removed) keeps no verdict from before
        self.verdicts = {}
        for pool, leaves in by_pool.items():
            zfs_ops = goose.leaf_ops(leaves)
            cands = goose.leaf_devices(zfs_ops, said)
            # a leaf whose figures are stale (its source failing: the ZFS daemon gone) keeps its last interval
            # while the devices go on counting: comparing the two would call every busy leaf a goose egg
            lags = {s.entity.name: Staleness(s.ts, None, cadence).stale_lag(self.now, self.interval) for s in leaves}
            stale = {leaf for leaf in zfs_ops if lags.get(leaf) is not None}
            fresh = {leaf: ops for leaf, ops in zfs_ops.items() if leaf not in stale}
            for v in goose.judge(fresh, dev_ops, cands):
                self.verdicts[(pool, v.leaf)] = v
            for leaf in stale:
                self.verdicts[(pool, leaf)] = goose.Verdict(
                    leaf, goose.UNKNOWN, None, zfs_ops[leaf], None,
                    f"ZFS's figures for {leaf} are {lags[leaf]:.0f} s old (its source stopped reporting): not judged")

    # ----------------------------------------------------------------------------------------------- questions
    def window(self) -> Tuple[float, float]:
        end = self.now if self.now is not None else 0.0
        return end - self.window_s, end

    def window_samples(self) -> List[Sample]:
        lo, hi = self.window()
        return [s for s in self.samples if lo <= s.ts <= hi]

    def window_events(self, kinds: Optional[Sequence[EventKind]] = None) -> List[Event]:
        lo, hi = self.window()
        return [e for e in self.events if lo <= e.ts <= hi and (kinds is None or e.kind in kinds)]

    def findings_job(self) -> Callable[[], findings.Report]:
        """The findings of the current window (``zfsmon analyze`` of the same samples), as a call that may run
        in another thread: the window is copied now, so feeding on meanwhile does not change its answer."""
        samples, events, (lo, hi) = self.window_samples(), self.window_events(), self.window()
        return lambda: findings.analyze(samples, events, start=lo, end=hi)

    def pools(self) -> List[str]:
        return sorted({e.pool for e in self.entities.values() if e.kind == Kind.POOL})

    def staleness(self, kinds: Sequence[Kind], sources: Sequence[str]) -> Staleness:
        """How fresh a panel's figures are (its entity ``kinds``' newest sample) and which of its ``sources`` are
        failing: each one's error stands until a sample of that same source comes after it, so a failing
        ``zpool status`` shows while ``zpool iostat`` keeps the tree fresh."""
        seen = [self.last_seen[k] for k in kinds if k in self.last_seen]
        errors = self.failing(sources)
        return Staleness(max(seen) if seen else None, errors[0] if errors else None,
                         max((self.cadence.get(k, 0.0) for k in kinds), default=0.0), errors)

    def failing(self, sources: Sequence[str]) -> List[Event]:
        """The newest error of each of ``sources`` that no sample of its own has followed, newest first."""
        out = []
        for src in sources:
            err = self.errors.get(src)
            if err is not None and self.source_seen.get(src, float("-inf")) <= err.ts:
                out.append(err)
        return sorted(out, key=lambda e: -e.ts)

    def unowned_errors(self) -> List[Event]:
        """:meth:`failing` for what no source module declares (the recorder, the clock, a tracing script): no
        panel's sources name them, so the header shows them."""
        return self.failing([src for src in self.errors if registry.named(src) is None])

    def values(self, key: str) -> Tuple[Dict[str, float], bool]:
        """Latest interval values of an entity, else its since-import report (flagged True).

        Each source's newest sample in the window, the newer over the older; a source that stopped before the
        window (a trace script ended) adds nothing. With none in the window, the newest sample's values: stale
        figures are shown and said to be stale (:meth:`staleness`), as before a source was lost.
        """
        srcs = self.latest.get(key)
        if srcs:
            newest = sorted(srcs.values(), key=lambda s: s.ts)
            lo = self.window()[0]
            out: Dict[str, float] = {}
            for s in [s for s in newest if s.ts >= lo] or newest[-1:]:
                out.update(s.metrics)
            return out, False
        b = self.boot.get(key)
        return (dict(b.metrics), True) if b is not None else ({}, False)

    def newest(self, key: str) -> Optional[Sample]:
        """An entity's newest sample, whatever its source."""
        srcs = self.latest.get(key)
        return max(srcs.values(), key=lambda s: s.ts) if srcs else None

    def totals(self, key: str) -> Dict[str, float]:
        """Per-interval rates summed over the window into amounts (ops, bytes): the `r` toggle. Kept as samples
        come and go (:mod:`zfsmon.views.top.totals`): a redraw of every row reads a sum each, not the window."""
        return self._totals.row(key, self.window()[0])

    def tree(self, pool: str, sort: str = "name", collapsed: bool = False, filter_text: str = "",
             totals: bool = False) -> List[TreeRow]:
        """The pool, then one group per role present (data, special, dedup, logs, cache, spares)."""
        ents = [e for e in self.entities.values() if e.pool == pool]
        pool_ent = next((e for e in ents if e.kind == Kind.POOL), None)
        rows: List[TreeRow] = []
        if pool_ent is not None:
            rows.append(self._row("pool", pool_ent, 0, totals))
        vdevs = [e for e in ents if e.kind == Kind.VDEV]
        leaves: Dict[str, List[Entity]] = {}
        for e in ents:
            if e.kind == Kind.LEAF:
                leaves.setdefault(e.parent, []).append(e)
        # a leaf whose parent is the pool (a single-disk top-level vdev reported as a leaf) is a vdev too
        vdevs += leaves.pop(pool, [])
        flt = filter_text.lower()
        for role in ROLE_ORDER:
            group = [v for v in vdevs if (v.role or Role.DATA) == role]
            if not group:
                continue
            rows.append(TreeRow("role", ROLE_HEADING[role], 1, role))
            vrows = []
            for v in group:
                vrow = self._row("vdev", v, 2, totals)
                lrows = [self._row("leaf", leaf, 3, totals) for leaf in leaves.get(v.name, [])]
                if flt and flt not in v.name.lower():
                    lrows = [r for r in lrows if flt in r.name.lower()]
                    if not lrows:
                        continue
                vrows.append((vrow, sorted(lrows, key=_sort_key(sort))))
            vrows.sort(key=lambda p: _sort_key(sort)(p[0]))
            for vrow, lrows in vrows:
                rows.append(vrow)
                if not collapsed:
                    rows.extend(lrows)
        return rows

    def _row(self, kind: str, e: Entity, depth: int, totals: bool) -> TreeRow:
        vals, boot = self.values(e.key)
        if totals:
            t = self.totals(e.key)
            vals = {**{k: v for k, v in vals.items() if k not in TOTALLED}, **t}
            boot = False
        row = TreeRow(kind, e.name, depth, e.role, vals, boot)
        h = self.health.get(e.key)
        if h is not None:
            if "state" in h.metrics:
                row.state = STATE_NAMES.get(int(h.metrics["state"]), "?")
            if any(k in h.metrics for k in ERROR_COUNTS):
                row.errors = tuple(h.metrics.get(k, 0.0) for k in ERROR_COUNTS)
            row.slow_ios = h.metrics.get("slow_ios")
        p = self.props.get(e.key)
        row.sit_out = p is not None and p.metrics.get("sit_out") == 1.0
        if e.kind == Kind.LEAF or (e.kind == Kind.VDEV and not any(
                x.kind == Kind.LEAF and x.parent == e.name and x.pool == e.pool for x in self.entities.values())):
            v = self.verdicts.get((e.pool, e.name))
            if v is not None:
                row.verdict, row.why, row.device = v.verdict, v.why, v.device
                key = f"device:{v.device}" if v.device else ""
                dev = self.derived.get(key) if key and self.device_fresh(key) else None
                if dev is not None:
                    row.device_ops = dev.get("ops_per_s")
                    row.device_lat_ns = dev.get("lat_ns")
        return row

    def cache_devices_out(self) -> List[Tuple[str, str]]:
        """The cache devices whose newest health reading is not ONLINE (REMOVED: pulled out of the machine;
        FAULTED), as (name, state): still in the pool's tree and in the kernel's count, serving nothing."""
        out = []
        for e in self.entities.values():
            h = self.health.get(e.key)
            if e.role == Role.CACHE and e.kind in (Kind.VDEV, Kind.LEAF) and h is not None and "state" in h.metrics:
                word = STATE_NAMES.get(int(h.metrics["state"]), "?")
                if unhealthy(word):
                    out.append((e.name, word))
        return sorted(out)

    def has_cache_device(self) -> Optional[bool]:
        """Whether any pool seen has an L2ARC (cache) device now; None when no pool's tree is known.

        The L2ARC counters are the ARC's, global and kept after the last cache
        device is removed: with none left, the panel says so instead of
        showing figures that belong to no device.
        """
        tree = [e for e in self.entities.values() if e.kind in (Kind.VDEV, Kind.LEAF)]
        if not tree:
            return None
        return any(e.role == Role.CACHE for e in tree)

    def fold(self, kind: Type[F]) -> F:
        """The panel's fold of that class (its panel's render reads it)."""
        return cast(F, self.folds[kind.id])

    @property
    def series(self) -> Dict[Tuple[str, str], Deque[Point]]:
        """Every fold's sparkline series, by (entity key or alias, metric)."""
        return {k: q for f in self.folds.values() for k, q in f.series.items()}

    def spark(self, key: str, metric: str) -> List[Point]:
        """A series' points in the window (the folds keep ``keep_s`` of them)."""
        lo, hi = self.window()
        for f in self.folds.values():
            q = f.series.get((key, metric))
            if q:
                pts = list(q)
                i = bisect.bisect_left([p[0] for p in pts], lo)
                return pts[i:]
        return []

    def arc(self) -> Dict[str, Optional[float]]:
        """The ARC / L2ARC panel's values (:meth:`ArcFold.values`)."""
        return self.fold(ArcFold).values(self)

    def zil(self) -> Dict[str, Optional[float]]:
        """The ZIL / SLOG panel's values (:meth:`ZilFold.values`)."""
        return self.fold(ZilFold).values(self)

    def workload(self) -> Dict[str, Optional[float]]:
        """pgbench's newest figures and the runs ended in the window (:meth:`WorkloadFold.values`)."""
        return self.fold(WorkloadFold).values(self)

    def fio(self) -> List[FioRow]:
        """Each fio job and direction with a sample in the window (:meth:`WorkloadFold.rows`)."""
        return self.fold(WorkloadFold).rows(self)

    def read_path(self) -> Tuple[Optional[readpath.ReadPath], Optional[readpath.ReadPath]]:
        """(last interval, window) shares of reads answered by PostgreSQL buffers, ARC, L2ARC, disks."""
        return self.fold(ReadFold).shares(self.window()[0])

    def goose_eggs(self) -> List[goose.Verdict]:
        return [v for v in self.verdicts.values() if v.verdict == goose.GOOSE_EGG]


def _sort_key(sort: str):
    def key(r: TreeRow):
        m = r.metrics
        if sort == "ops":
            return -(m.get("read_ops", 0.0) + m.get("write_ops", 0.0))
        if sort == "bandwidth":
            return -(m.get("read_bw", 0.0) + m.get("write_bw", 0.0))
        if sort == "latency":
            return -max(m.get("total_wait_read", 0.0), m.get("total_wait_write", 0.0))
        return r.name
    return key


def _is_health(s: Sample) -> bool:
    """A sample of the status source (metrics/health.py): it carries the state code and the online gauge."""
    return "state" in s.metrics and "online" in s.metrics and "read_ops" not in s.metrics


def unhealthy(state: str) -> bool:
    """A known state that is not doing its job (DEGRADED, FAULTED, OFFLINE, ...): shown beside the row."""
    return bool(state) and state not in HEALTHY_STATES
