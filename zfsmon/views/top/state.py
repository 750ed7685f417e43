"""What the dashboard shows, as plain data: a rolling window of records folded into per-entity values.

The dashboard's widgets only draw what this model holds, so everything that
matters (which roles a pool has, what the ARC hit rate was, which leaf is a
goose egg, what a pause keeps back) is testable without a terminal, and the
same model serves live mode (records arrive from the sampler) and replay (the
window around the time cursor is read from a recording and fed in).

Pure: records in, values out; no I/O, no clocks (the caller says what "now" is).
Rates come from :mod:`zfsmon.analysis.rates` / :mod:`zfsmon.analysis.arc`,
goose eggs from :mod:`zfsmon.analysis.goose`, read shares from
:mod:`zfsmon.analysis.readpath`, findings from :mod:`zfsmon.analysis.findings`:
the same code ``zfsmon analyze`` and ``zfsmon report`` use, so a window shows
the same numbers here as there.
"""

from __future__ import annotations

import bisect
import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis import arc, findings, goose, readpath
from zfsmon.analysis.rates import RateDeriver
from zfsmon.metrics.health import HEALTHY_STATES, STATE_NAMES
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Role, Sample
from zfsmon.sources import registry
from zfsmon.views import thresholds
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
#: series kept for sparklines: (entity key or alias, metric)
ARC_SERIES = ("hit_pct", "demand_data_hit_pct", "demand_metadata_hit_pct", "prefetch_hit_pct")
Point = Tuple[float, float]
#: whole samples held at most (64 leaves at 1 Hz for an hour is ~300k: bounded memory beats a longer window)
MAX_SAMPLES = 200_000
#: fio's completion-latency percentiles the workload panel draws as a band (metric ``clat_<p>_ms``)
FIO_PCTS: Tuple[str, ...] = ("p50", "p90", "p99", "p999", "max")


def source_name(source: str) -> str:
    """The one name of the source a record's ``source`` names: its record's name (a recording from another
    zfsmon version may carry another of its names), else the name as it is (the recorder, a tracing script)."""
    rec = registry.named(source)
    return rec.name if rec is not None else source


#: entity kind -> the sources that feed it (a sample that names no source stands for each of them)
_FEEDING: Dict[Kind, Tuple[str, ...]] = {k: tuple(s.name for s in registry.SOURCES if k in s.feeds) for k in Kind}


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


@dataclass
class FioRow:
    """One fio job and direction over the window: IOPS now and its series, latency percentiles as a band.

    The band's percentiles are, each, the I/O-weighted median of the window's intervals' own percentiles (the
    rule of :mod:`zfsmon.analysis.qdsweep`: fio's per-interval percentiles cannot be merged exactly without its
    histograms, and a median is not moved by one bad second as a mean is); ``max`` is the window's largest.
    """

    job: str
    direction: str
    key: str  # the entity key (its series: ``spark(key, "iops")``)
    iops: Optional[float]  # the newest interval's
    last: float  # ts of the newest sample
    intervals: int  # intervals with I/O in the window (what the band is made of)
    pct_ms: Dict[str, float] = field(default_factory=dict)  # FIO_PCTS -> ms


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
    """Feed record batches in time order; ask for panels' values. ``window_s`` bounds memory and the views."""

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
        self.boot: Dict[str, Sample] = {}  # since-import first reports, shown until an interval arrives
        self.entities: Dict[str, Entity] = {}
        self.derived: Dict[str, Dict[str, float]] = {}
        self.series: Dict[Tuple[str, str], Deque[Point]] = {}
        self.last_seen: Dict[Kind, float] = {}  # entity kind -> ts of its newest sample
        #: source (its one name, :func:`source_name`) -> ts of its newest sample
        self.source_seen: Dict[str, float] = {}
        self.errors: Dict[str, Event] = {}  # source (its one name) -> its newest error
        self.cadence: Dict[Kind, float] = {}  # kind -> longest interval its samples describe (pgbench -P 10...)
        self.verdicts: Dict[Tuple[str, str], goose.Verdict] = {}  # (pool, leaf) -> latest verdict
        self.now: Optional[float] = None
        self.first: Optional[float] = None
        self._arc = arc.ArcAnalyzer()
        self._rates = RateDeriver()
        # per-interval read counts for the read path: (ts, {pg_blks_hit, pg_blks_read, arc_hits, arc_misses, l2_hits})
        self._reads: Deque[Tuple[float, Dict[str, float]]] = deque()
        self._read_now: Dict[str, float] = {}
        # per fio entity: (ts, I/Os, {percentile: ms}) of each interval with I/O
        self._fio: Dict[str, Deque[Tuple[float, float, Dict[str, float]]]] = {}
        self.fed = 0

    def copy(self) -> TopState:
        """An independent state at the same point: replay keeps the states around its cursor, so stepping back
        is taking one, not rebuilding a window (0.1-0.2 s for 64 leaves). Every container is copied (a mapping's
        deques, lists and dicts too); the records in them are shared, being immutable."""
        new = copy.copy(self)
        for name, v in vars(self).items():
            if isinstance(v, (deque, dict, list)):
                setattr(new, name, _copied(v))
            elif isinstance(v, (RateDeriver, arc.ArcAnalyzer, WindowTotals)):
                setattr(new, name, v.copy())
        return new

    # ----------------------------------------------------------------------------------------------- feeding
    def feed(self, records: Iterable[Record]) -> None:
        batch = sorted(records, key=lambda r: r.ts)
        if not batch:
            return
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
        self.samples.append(s)
        self._totals.add(s)
        newest = self.latest.get(key)
        if newest is None:
            self.latest[key] = {s.source: s}
        else:
            newest[s.source] = s
        if e.kind in (Kind.ARC, Kind.L2ARC, Kind.ZIL):
            d, _ = self._arc.update(s)
            if d is not None:
                self.derived[key] = dict(d.metrics)
                self._arc_series(e, s.ts, d.metrics, d.interval or 0.0)
            self._level_series(e, s)
        elif e.kind == Kind.DEVICE:
            d, _ = self._rates.update(s)
            if d is not None:
                self.derived[key] = _device_rates(d.rates, d.deltas)
        elif e.kind == Kind.WORKLOAD:
            self._workload(s)
        return e.kind in (Kind.LEAF, Kind.DEVICE)

    def _push(self, key: str, metric: str, ts: float, value: float) -> None:
        q = self.series.get((key, metric))
        if q is None:
            q = self.series[(key, metric)] = deque()
        q.append((ts, float(value)))

    def _arc_series(self, e: Entity, ts: float, m: Dict[str, float], elapsed: float) -> None:
        if e.kind == Kind.ARC:
            for name in ARC_SERIES:
                if name in m:
                    self._push("arc", name, ts, m[name])
            if "hits_per_s" in m and "misses_per_s" in m and elapsed > 0:
                self._read_now["arc_hits"] = m["hits_per_s"] * elapsed
                self._read_now["arc_misses"] = m["misses_per_s"] * elapsed
                self._reads.append((ts, {"arc_hits": m["hits_per_s"] * elapsed,
                                         "arc_misses": m["misses_per_s"] * elapsed}))
        elif e.kind == Kind.L2ARC:
            for name in ("hit_pct", "write_bytes_per_s", "read_bytes_per_s"):
                if name in m:
                    self._push("l2arc", name, ts, m[name])
            if "hits_per_s" in m and elapsed > 0:
                self._read_now["l2_hits"] = m["hits_per_s"] * elapsed
                self._reads.append((ts, {"l2_hits": m["hits_per_s"] * elapsed}))
        elif e.kind == Kind.ZIL:
            for name in ("commits_per_s", "itx_per_s"):
                if name in m:
                    self._push("zil", name, ts, m[name])

    def _level_series(self, e: Entity, s: Sample) -> None:
        if e.kind == Kind.ARC and "size" in s.metrics:
            self._push("arc", "size", s.ts, s.metrics["size"])
        elif e.kind == Kind.L2ARC:
            size = s.metrics.get("asize", s.metrics.get("size"))
            if size is not None:
                self._push("l2arc", "size", s.ts, size)

    def _workload(self, s: Sample) -> None:
        name = s.entity.name
        if name == names.PGBENCH:
            for m in ("tps", "latency_avg_ms"):
                if m in s.metrics:
                    self._push("workload", m, s.ts, s.metrics[m])
        elif name == names.PGBENCH_RUN:  # a run's summary: the only numbers of a loop soak without -P
            for m, series in (("tps", "run_tps"), ("latency_avg_ms", "run_latency_ms")):
                if m in s.metrics:
                    self._push("workload", series, s.ts, s.metrics[m])
        elif names.fio_job_direction(name) is not None:
            key = s.entity.key
            if "iops" in s.metrics:
                self._push(key, "iops", s.ts, s.metrics["iops"])
            ios = s.metrics.get("ios", 0.0)
            pcts = {p: s.metrics[f"clat_{p}_ms"] for p in FIO_PCTS if f"clat_{p}_ms" in s.metrics}
            if ios > 0 and pcts:
                self._fio.setdefault(key, deque()).append((s.ts, ios, pcts))
        elif name.startswith(names.PGSTAT_PREFIX):
            d, _ = self._rates.update(s)
            pg = readpath.pg_buffers(d.deltas, d.elapsed) if d is not None else None
            if pg is None:
                return
            self.derived[s.entity.key] = {k: pg[k] for k in ("blks_hit_per_s", "blks_read_per_s", "hit_pct") if k in pg}
            if "hit_pct" in pg:
                self._push("workload", "pg_hit_pct", s.ts, pg["hit_pct"])
            hit, read = pg["blks_hit"], pg["blks_read"]
            self._read_now.update(pg_blks_hit=hit, pg_blks_read=read)
            self._reads.append((s.ts, {"pg_blks_hit": hit, "pg_blks_read": read}))

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
        while self._reads and self._reads[0][0] < lo:
            self._reads.popleft()
        for q in self.series.values():
            while q and q[0][0] < lo:
                q.popleft()
        for f in self._fio.values():
            while f and f[0][0] < lo:
                f.popleft()

    # ----------------------------------------------------------------------------------------------- goose eggs
    def _judge_goose(self) -> None:
        devices = {e.name: k for k, e in self.entities.items() if e.kind == Kind.DEVICE and k in self.derived}
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
        if h is not None and "state" in h.metrics:
            row.state = STATE_NAMES.get(int(h.metrics["state"]), "?")
        if e.kind == Kind.LEAF or (e.kind == Kind.VDEV and not any(
                x.kind == Kind.LEAF and x.parent == e.name and x.pool == e.pool for x in self.entities.values())):
            v = self.verdicts.get((e.pool, e.name))
            if v is not None:
                row.verdict, row.why, row.device = v.verdict, v.why, v.device
                dev = self.derived.get(f"device:{v.device}") if v.device else None
                if dev is not None:
                    row.device_ops = dev.get("ops_per_s")
                    row.device_lat_ns = dev.get("lat_ns")
        return row

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

    def arc(self) -> Dict[str, Optional[float]]:
        """ARC/L2ARC numbers: interval hit % if two readings exist, else since-boot % from the counters
        (both from :mod:`zfsmon.analysis.arc`, as every other view computes them)."""
        out: Dict[str, Optional[float]] = {}
        raw = self.newest("arc:arc")
        d = self.derived.get("arc:arc", {})
        if raw is not None:
            for k in ("size", "c", "c_max"):
                out[k] = raw.metrics.get(k)
        for k in ARC_SERIES:
            out[k] = d.get(k)
        out["since_boot"] = 0.0
        if not d and raw is not None:
            out["since_boot"] = 1.0
            boot = arc.since_boot(Kind.ARC, raw.metrics)
            for k in ARC_SERIES:
                out[k] = boot.get(k)
        l2 = self.newest("l2arc:l2arc")
        ld = self.derived.get("l2arc:l2arc", {})
        if l2 is not None:
            out["l2_size"] = l2.metrics.get("asize", l2.metrics.get("size"))
            out["l2_hit_pct"] = ld.get("hit_pct") if ld else arc.since_boot(Kind.L2ARC, l2.metrics).get("hit_pct")
            out["l2_write_bps"] = ld.get("write_bytes_per_s")
            out["l2_read_bps"] = ld.get("read_bytes_per_s")
        return out

    def zil(self) -> Dict[str, Optional[float]]:
        """ZIL kstat rates, and what the SLOG (log-role vdevs) did in the last interval."""
        out: Dict[str, Optional[float]] = dict(self.derived.get("zil:zil", {}))
        logs = [e for e in self.entities.values() if e.role == Role.LOG and e.kind == Kind.VDEV]
        if logs:
            w = lat = 0.0
            bw = 0.0
            have_lat = False
            n = 0
            for e in logs:
                vals, _ = self.values(e.key)
                if not vals:
                    continue
                n += 1
                w += vals.get("write_ops", 0.0)
                bw += vals.get("write_bw", 0.0)
                v = vals.get("total_wait_write", vals.get("disk_wait_write"))
                if v is not None:
                    lat, have_lat = max(lat, v), True
            if n:
                out["slog_write_ops"] = w
                out["slog_write_bw"] = bw
                out["slog_lat_ns"] = lat if have_lat else None
                out["slog_devices"] = float(n)
        return out

    def workload(self) -> Dict[str, Optional[float]]:
        out: Dict[str, Optional[float]] = {}
        for m in ("tps", "latency_avg_ms", "pg_hit_pct", "run_tps", "run_latency_ms"):
            q = self.series.get(("workload", m))
            out[m] = q[-1][1] if q else None
        out["runs"] = float(len(self.window_events((EventKind.RUN_END,))))
        return out

    def fio(self) -> List[FioRow]:
        """Each fio job and direction with a sample in the window, in the order they first appeared."""
        lo, _ = self.window()
        rows: List[FioRow] = []
        for key, e in self.entities.items():
            jd = names.fio_job_direction(e.name) if e.kind == Kind.WORKLOAD else None
            if jd is None:
                continue
            q = self.series.get((key, "iops"))
            if not q or q[-1][0] < lo:
                continue
            ivs = [x for x in self._fio.get(key, ()) if x[0] >= lo]
            pct: Dict[str, float] = {}
            for p in FIO_PCTS:
                pairs = [(v[p], ios) for _, ios, v in ivs if p in v]
                if pairs:
                    pct[p] = max(v for v, _ in pairs) if p == "max" else weighted_median(pairs)
            rows.append(FioRow(jd[0], jd[1], key, q[-1][1], q[-1][0], len(ivs), pct))
        return rows

    def spark(self, key: str, metric: str) -> List[Point]:
        lo, hi = self.window()
        q = self.series.get((key, metric))
        if not q:
            return []
        pts = list(q)
        i = bisect.bisect_left([p[0] for p in pts], lo)
        return pts[i:]

    def read_path(self) -> Tuple[Optional[readpath.ReadPath], Optional[readpath.ReadPath]]:
        """(last interval, window) shares of reads answered by PostgreSQL buffers, ARC, L2ARC, disks."""
        def of(d: Dict[str, float]) -> Optional[readpath.ReadPath]:
            return readpath.shares(d.get("pg_blks_hit"), d.get("pg_blks_read"), d.get("arc_hits"),
                                   d.get("arc_misses"), d.get("l2_hits"))

        lo, _ = self.window()
        sums: Dict[str, float] = {}
        for ts, d in self._reads:
            if ts >= lo:
                for k, v in d.items():
                    sums[k] = sums.get(k, 0.0) + v
        return of(self._read_now), of(sums)

    def goose_eggs(self) -> List[goose.Verdict]:
        return [v for v in self.verdicts.values() if v.verdict == goose.GOOSE_EGG]


def weighted_median(pairs: Sequence[Tuple[float, float]]) -> float:
    """The value where the running weight of (value, weight) pairs, in order of value, reaches half of all."""
    ordered = sorted(pairs)
    half = sum(w for _, w in ordered) / 2
    run = 0.0
    for value, weight in ordered:
        run += weight
        if run >= half:
            return value
    return ordered[-1][0]


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


def _device_rates(rates: Dict[str, float], deltas: Dict[str, float]) -> Dict[str, float]:
    """Ops/s, bytes/s and average latency of a block device from its counter rates."""
    out = {k: v for k, v in rates.items() if k in ("reads", "writes", "read_bytes", "write_bytes")}
    ops = goose.device_ops_per_s(rates)
    if ops is not None:
        out["ops_per_s"] = ops
    n = deltas.get("reads", 0.0) + deltas.get("writes", 0.0)
    t = deltas.get("read_time_ns", 0.0) + deltas.get("write_time_ns", 0.0)
    if n > 0 and t > 0:
        out["lat_ns"] = t / n
    return out


def _copied(v: object) -> object:
    """A container copied one level down (a dict's deques and dicts too): what :meth:`TopState.copy` needs."""
    if isinstance(v, deque):
        return deque(v)
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return {k: _copied(x) if isinstance(x, (deque, dict, list)) else x for k, x in v.items()}
    return v


def _is_health(s: Sample) -> bool:
    """A sample of the status source (metrics/health.py): it carries the state code and the online gauge."""
    return "state" in s.metrics and "online" in s.metrics and "read_ops" not in s.metrics


def unhealthy(state: str) -> bool:
    """A known state that is not doing its job (DEGRADED, FAULTED, OFFLINE, ...): shown beside the row."""
    return bool(state) and state not in HEALTHY_STATES
