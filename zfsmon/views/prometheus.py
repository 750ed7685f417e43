"""The Prometheus view: the latest value of every metric, rendered by a ``prometheus_client`` Collector.

Why an exporter and not a home-made server: Prometheus already does the
scaling past one host (scraping many hosts, storage, ``rate()``, alerting), so
zfsmon only has to say what it saw last. Counters are exposed with their raw
cumulative values (Prometheus's ``rate()`` handles wrap and reset), gauges as
they are. Names follow Prometheus conventions and are derived from the one
metrics table (:mod:`zfsmon.metrics`): ``zfsmon_<kind>_<metric>`` with base
units (``_bytes``, ``_seconds``; ratios 0..1, not percent) and ``_total`` on
counters. A metric with no row in the table (a newer kstat field) is still
exposed, as an unlisted gauge whose name cannot be mistaken for a counter's or
a histogram's series; one whose name is another family's, or a series of one (``hits_`` ->
``zfsmon_arc_hits``, the family of ``zfsmon_arc_hits_total``), is left out, so a scrape never holds a name
twice (:func:`families`).

Latency histograms become real Prometheus histograms
(``zfsmon_<pool|vdev|leaf>_latency_seconds_bucket{...,queue,op,le}``): the
per-interval bucket counts of ``zpool iostat -w`` (OpenZFS) and of the trace
scripts (``<op>_hist_<lo>``: zfs-fuse, illumos, any platform without ``-w``)
are added up into cumulative counters here, on power-of-two bounds from 1 us
to 68 s, so every series of a family has the same, bounded set of ``le``.

Data arrives as records (from the engine, or the last values of a recording);
this module never runs commands.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from zfsmon import __version__, metrics
from zfsmon.errors import printable
from zfsmon.metrics import latency
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources.registry import one_name
from zfsmon.store import Recording
from zfsmon.trace.histogram import bucket_upper

PREFIX = "zfsmon"

# unit in the metrics table -> (Prometheus suffix, scale to base unit, words of the name that spell that unit)
_UNITS: Dict[str, Tuple[str, float, Tuple[str, ...]]] = {
    "B": ("bytes", 1.0, ("bytes",)),
    "B/s": ("bytes_per_second", 1.0, ("bytes", "bw")),
    "ns": ("seconds", 1e-9, ("ns",)),
    "ms": ("seconds", 1e-3, ("ms",)),
    "s": ("seconds", 1.0, ("s",)),
    "%": ("ratio", 0.01, ("pct",)),
    "ops/s": ("per_second", 1.0, ()),
    "ops": ("", 1.0, ()),
    "count": ("", 1.0, ()),
}

#: label names per entity kind: a family always carries the same names (empty value = not applicable)
LABELS: Dict[Kind, Tuple[str, ...]] = {
    Kind.POOL: ("pool",),
    Kind.VDEV: ("pool", "vdev", "role", "parent"),
    Kind.LEAF: ("pool", "device", "role", "parent"),
    Kind.DEVICE: ("device", "leaf"),  # leaf: the zpool leaf the block device is (empty: none, or unknown)
    Kind.DATASET: ("pool", "dataset"),
    Kind.WORKLOAD: ("workload",),
    Kind.TRACE: ("pool", "name"),  # a traced vdev's name (mirror-0) is only unique within its pool
}

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_RESERVED_SUFFIXES = ("_total", "_created", "_count", "_sum", "_bucket", "_info")

#: the label a trace script's histogram carries as its queue (zpool iostat -w says total/disk/syncq/asyncq)
TRACE_QUEUE = "trace"
#: the queues exposed by default: what the I/O took in all and at the disk (the sync/async queue waits,
#: scrub, trim and rebuild would add 7 x 30 series per vdev: `exporter --histograms all`)
DEFAULT_QUEUES = ("total_wait", "disk_wait", TRACE_QUEUE)


@dataclass(frozen=True)
class PromName:
    """How one (kind, metric) is exposed: family name, type, factor to base units, HELP text, whether the metrics
    table has a row for it."""

    name: str
    counter: bool
    scale: float
    help: str
    listed: bool = True


def _words_without(name: str, drop: Tuple[str, ...], per_s: bool) -> List[str]:
    words = [w for w in name.split("_") if w]
    if per_s and len(words) >= 2 and words[-2:] == ["per", "s"]:
        words = words[:-2]
    return [w for w in words if w not in drop]


@functools.lru_cache(maxsize=8192)
def prom_name(kind: Kind, metric: str) -> PromName:
    """The Prometheus family for a zfsmon metric (pure; the same answer for every sample)."""
    spec = metrics.lookup(kind, metric)
    base = _INVALID.sub("_", metric).strip("_") or "value"
    if spec is None:
        if base.endswith(_RESERVED_SUFFIXES):  # a counter's or histogram's sample names: a gauge must not take them
            base += "_raw"
        return PromName(f"{PREFIX}_{kind.value}_{base}", False, 1.0,
                        f"{metric} (unlisted: no row in zfsmon's metrics table, exposed as read)", listed=False)
    suffix, scale, drop = _UNITS.get(spec.unit, ("", 1.0, ()))
    counter = spec.kind == metrics.COUNTER
    words = _words_without(base, drop, per_s=spec.unit in ("B/s", "ops/s"))
    if spec.unit == "ops/s" and words[-1:] == ["s"]:
        words = words[:-1]  # read_ops_s -> read_ops_per_second
    words = ["transactions" if w == "tps" else w for w in words]
    if len(words) > 1 and words[0] == kind.value:
        words = words[1:]  # arc's arc_prune -> zfsmon_arc_prune_total
    if len(words) > 1 and words[-1] == "count":
        # commit_count -> commit_total; a gauge's count (l2arc log_blk_count) must not end in _count, which is a
        # histogram's series: log_blk_count -> log_blk_number
        words = words[:-1] if counter else words[:-1] + ["number"]
    if not counter and len(words) > 1 and words[-1] in ("sum", "bucket", "total", "created", "info"):
        words = words + ["value"]
    stem = "_".join(words) or base
    name = f"{PREFIX}_{kind.value}_{stem}" + (f"_{suffix}" if suffix else "") + ("_total" if counter else "")
    unit = f" [{spec.unit}" + (f", exposed x{scale:g}" if scale != 1.0 else "") + "]"
    return PromName(name, counter, scale, spec.help + unit)


def entity_labels(e: Entity) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(label names, values) for an entity; ARC, L2ARC and ZIL are host-wide and carry none."""
    names = LABELS.get(e.kind, ())
    role = e.role.value if e.role else ""
    known = {"pool": e.pool, "vdev": e.name, "device": e.name, "role": role, "parent": e.parent, "leaf": e.parent,
             "dataset": e.name, "workload": e.name, "name": e.name}
    return names, tuple(known[n] for n in names)


#: the longest gap between an entity's updates that still stretches its staleness (a source read every minute)
MAX_GAP_S = 600.0


@dataclass
class _Latest:
    entity: Entity
    values: Dict[str, float] = field(default_factory=dict)
    seen: float = 0.0  # monotonic time of the last update
    sources: set[str] = field(default_factory=set)  # the sources whose samples gave its values


class LatestValues:
    """The newest value of every (entity, metric), fed by sinks; safe to read while a sampler writes.

    Several sources may describe one entity (a pool from ``zpool iostat`` and from its kstats), so values
    are merged per metric. The first report of an interval command (``since_boot``) averages everything
    since import: it is not what happens now, so it is ignored. An entity not updated for ``stale_after``
    seconds, nor for three of its own longest gaps between updates, is dropped (a removed cache device, an
    exported pool; a hot spare, which only ``zpool status`` reports, once a minute on a calm Linux pool, stays);
    ``None`` keeps everything (a recording). An entity of a source whose read is stuck past its deadline (the
    sampler's error event with ``data={"stale": True}``) is kept, with its last values, until that source
    answers again: a slow source is shown stale (:meth:`sources`), not as gone.
    Latency histograms are added up interval by interval into cumulative ones (pools and vdevs; leaves too
    with ``leaf_histograms``: 30 series per leaf, queue and op), for the queues in ``histogram_queues``
    (default :data:`DEFAULT_QUEUES`; None: every queue ``zpool iostat -w`` has).
    """

    def __init__(self, stale_after: Optional[float] = None, clock: Callable[[], float] = time.monotonic,
                 leaf_histograms: bool = False, host: Optional[Mapping[str, str]] = None,
                 histogram_queues: Optional[Iterable[str]] = DEFAULT_QUEUES) -> None:
        #: where the values come from (``host``, ``platform``, ``zfs_flavour``, ``zfs_version``): a recording's
        #: meta, or this host's; shown as ``zfsmon_host_info``
        self.host: Dict[str, str] = dict(host or {})
        self.stale_after = stale_after
        self.clock = clock
        self.leaf_histograms = leaf_histograms
        self.histogram_queues = None if histogram_queues is None else frozenset(histogram_queues)
        self._lock = threading.Lock()
        self._version = 0
        self._by_key: Dict[str, _Latest] = {}
        self._hists: Dict[str, Tuple[Entity, Dict[Tuple[str, str], _Hist]]] = {}
        self._hist_seen: Dict[str, float] = {}
        self._errors: Dict[str, int] = {}
        self._resets: Dict[str, int] = {}
        self._source_ts: Dict[str, float] = {}
        #: per source: the record time of its newest error; whether its newest record (by record time) is a
        #: sample; and the sources whose read is stuck past the sampler's deadline (their entities are kept)
        self._error_ts: Dict[str, float] = {}
        self._up: Dict[str, bool] = {}
        self._stuck: set[str] = set()
        #: when each entity was last updated and its longest gap between updates, kept after it goes stale (an
        #: entity read once a minute comes back with its gap known)
        self._last_seen: Dict[str, float] = {}
        self._gaps: Dict[str, float] = {}

    def add(self, records: Iterable[Record]) -> None:
        """A sampler sink: ``Sampler(..., sinks=[latest.add])``."""
        now = self.clock()
        with self._lock:
            self._version += 1
            for r in records:
                if isinstance(r, Sample):
                    self._add_sample(r, now)
                elif isinstance(r, Event):
                    self._add_event(r, now)

    def _add_sample(self, s: Sample, now: float) -> None:
        if s.since_boot:
            return
        cur = self._by_key.get(s.entity.key)
        if cur is None:
            cur = self._by_key[s.entity.key] = _Latest(s.entity)
        cur.entity = s.entity  # latest role and parent
        self._add_histograms(s, now)
        for k, v in s.metrics.items():
            if is_histogram_metric(s.entity.kind, k):
                continue
            try:
                f = float(v)
            except (TypeError, ValueError):
                continue
            if math.isfinite(f):
                cur.values[k] = f
        last = self._last_seen.get(s.entity.key)
        if last is not None and now - last > 1.0:  # a new update, not another sample of the same tick
            self._gaps[s.entity.key] = min(MAX_GAP_S, max(self._gaps.get(s.entity.key, 0.0), now - last))
        self._last_seen[s.entity.key] = cur.seen = now
        src = one_name(s.source) if s.source else "unknown"  # a recording's older name for it: its record's
        cur.sources.add(src)
        self._source_ts[src] = max(self._source_ts.get(src, 0.0), s.ts)
        if s.ts > self._error_ts.get(src, -math.inf):
            self._up[src] = True
            self._answered(src, now)

    def _add_histograms(self, s: Sample, now: float) -> None:
        owner = _histogram_owner(s.entity, self.leaf_histograms)
        if owner is None:
            return
        parts = histogram_parts(s)
        if not parts:
            return
        ent, by_op = self._hists.setdefault(owner.key, (owner, {}))
        self._hists[owner.key] = (owner, by_op)  # latest role and parent
        for key, (counts, sum_s) in parts.items():
            if self.histogram_queues is not None and key[0] not in self.histogram_queues:
                continue
            h = by_op.setdefault(key, _Hist())
            for e, n in counts.items():
                h.buckets[e] = h.buckets.get(e, 0.0) + n
            h.count += sum(counts.values())
            h.sum_s += sum_s
        self._hist_seen[owner.key] = now

    def _add_event(self, e: Event, now: float) -> None:
        src = one_name(e.source) if e.source else "unknown"
        if e.kind == EventKind.ERROR:
            self._errors[src] = self._errors.get(src, 0) + 1
            self._error_ts[src] = max(self._error_ts.get(src, -math.inf), e.ts)
            self._up[src] = False
            if e.data.get("stale") is True:
                self._stuck.add(src)
            return
        if e.kind == EventKind.RESET:
            self._resets[src] = self._resets.get(src, 0) + 1
        if e.source == "clock" and "step_s" in e.data:
            self._error_ts.clear()  # the sampler's clock step: record times across it are not comparable
        elif e.ts >= self._error_ts.get(src, -math.inf):
            self._answered(src, now)  # a stuck read that returned says so in an event of its source

    def _answered(self, src: str, now: float) -> None:
        """``src`` answered after its read was stuck: its kept entities age from now on, as if just updated."""
        if src not in self._stuck:
            return
        self._stuck.discard(src)
        for cur in self._by_key.values():
            if src in cur.sources:
                cur.seen = max(cur.seen, now)

    def version(self) -> int:
        """Changes whenever records are added (a rendering of the values may be reused until it changes)."""
        return self._version

    def keep_only(self, keys: Iterable[str]) -> None:
        """Forget entities not in ``keys`` (those a recording says were gone by its end)."""
        wanted = set(keys)
        with self._lock:
            self._version += 1
            for key in [k for k in self._by_key if k not in wanted]:
                del self._by_key[key]
            for key in [k for k in self._hists if k not in wanted]:
                del self._hists[key]

    def snapshot(self) -> Tuple[List[Tuple[Entity, Dict[str, float]]], Dict[str, int], Dict[str, int],
                                Dict[str, float]]:
        """(entities with values, errors per source, resets per source, newest sample time per source)."""
        now = self.clock()
        with self._lock:
            if self.stale_after is not None:
                gaps = self._gaps
                stuck = self._stuck
                for key in [k for k, v in self._by_key.items()
                            if now - v.seen > max(self.stale_after, 3 * gaps.get(k, 0.0))
                            and not v.sources & stuck]:
                    del self._by_key[key]
            ents = [(v.entity, dict(v.values)) for _, v in sorted(self._by_key.items())]
            return ents, dict(self._errors), dict(self._resets), dict(self._source_ts)

    def sources(self) -> Dict[str, bool]:
        """Source -> up: its newest record is a sample (True) or an error (False: a failed read, or a read past
        the sampler's deadline, whose source's last values are still served); sources with neither are absent."""
        with self._lock:
            return dict(self._up)

    def histograms(self) -> List[Tuple[Entity, str, str, _Hist]]:
        """(entity, queue, op, cumulative histogram), stale ones dropped as :meth:`snapshot` drops entities."""
        now = self.clock()
        with self._lock:
            if self.stale_after is not None:
                for key in [k for k, t in self._hist_seen.items() if now - t > self.stale_after]:
                    self._hists.pop(key, None)
                    del self._hist_seen[key]
            return [(ent, q, op, _Hist(dict(h.buckets), h.sum_s, h.count))
                    for _k, (ent, by_op) in sorted(self._hists.items()) for (q, op), h in sorted(by_op.items())]


def stale_after(interval: float) -> float:
    """Seconds after which a live exporter drops an entity not updated: three sampling intervals and 5 s more
    (:class:`LatestValues` also waits three of the entity's own gaps, for a slow source)."""
    return 3 * interval + 5


class ZfsmonCollector(Collector):
    """Renders a :class:`LatestValues` as Prometheus metric families at every scrape."""

    def __init__(self, latest: LatestValues, note: Optional[Callable[[str], None]] = None) -> None:
        self.latest = latest
        #: told once about each unlisted metric left out of the scrape (the exporter prints it on stderr)
        self.note = note
        self._noted: set[Tuple[Kind, str]] = set()
        self._noted_keys: set[str] = set()  # entities left out for another's labels, told once
        self._noted_lock = threading.Lock()
        #: seconds the newest complete rendering took (collect and encode), served by the next one; None before
        self.render_s: Optional[float] = None

    def describe(self) -> List[Metric]:
        return []  # families depend on what the sources found: no fixed list to pre-register

    def collect(self) -> Iterator[Metric]:
        """The families; the time from the first to the last is this rendering's, served by the next one (the
        encoder formats each family as it is yielded, so that time is the scrape's but for gzip and HTTP)."""
        t0 = time.perf_counter()
        ents, errors, resets, source_ts = self.latest.snapshot()
        hists = self.latest.histograms()
        clashes = label_clashes([e for e, _ in ents] + [h[0] for h in hists])
        fams, dropped = families([(e, v) for e, v in ents if e.key not in clashes])
        self._tell(dropped, clashes)
        yield from fams
        yield from histogram_families([h for h in hists if h[0].key not in clashes])
        yield from _self_metrics(errors, resets, source_ts, self.latest.sources(), self.render_s)
        yield host_info(self.latest.host)
        self.render_s = time.perf_counter() - t0

    def _tell(self, dropped: Sequence[Dropped], clashes: Mapping[str, str]) -> None:
        with self._noted_lock:  # two scrapes at once still say it once
            new = [d for d in dropped if (d.kind, d.metric) not in self._noted]
            self._noted.update((d.kind, d.metric) for d in new)
            fresh = sorted(k for k in clashes if k not in self._noted_keys)
            self._noted_keys.update(fresh)
        note = self.note
        if note is None:
            return
        for d in new:
            whose = f"unlisted '{printable(d.owner)}' has it" if d.owner else "one of zfsmon's own families takes it"
            note(f"{d.kind.value} statistic '{printable(d.metric)}' is not exported: its name would be {d.name}, "
                 f"and {whose} (docs/exporter.md, Names)")
        for key in fresh:
            note(f"'{printable(key)}' is not exported: its labels are those of '{printable(clashes[key])}' "
                 f"(docs/exporter.md, Labels)")


def label_clashes(ents: Iterable[Entity]) -> Dict[str, str]:
    """Entity key -> the key of another entity whose labels it has (the first in sorted order keeps them).

    The labels tell apart every entity a source makes; only a recording can hold others (an ``arc`` of
    another name, a pool entity not named as its pool): those are left out, since Prometheus' parsers refuse
    a scrape with a series twice."""
    first: Dict[Tuple[Kind, Tuple[str, ...]], str] = {}
    out: Dict[str, str] = {}
    for e in sorted(ents, key=lambda e: e.key):
        owner = first.setdefault((e.kind, entity_labels(e)[1]), e.key)
        if owner != e.key:
            out[e.key] = owner
    return out


#: the series names a family's type adds to the family's name, in either exposition format (text, OpenMetrics)
_TYPE_SERIES: Dict[str, Tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created", "_gcount", "_gsum"),
    "summary": ("_count", "_sum", "_created"),
    "info": ("_info",),
}


def taken_names(family: str, mtype: str) -> Tuple[str, ...]:
    """Every name a family of this type occupies in a scrape (its own and its series'): no other family may
    use one, or Prometheus' parsers reject the scrape."""
    return (family,) + tuple(family + s for s in _TYPE_SERIES.get(mtype, ()))


@functools.lru_cache(maxsize=1)
def reserved_names() -> frozenset[str]:
    """The names the metrics table's families, the latency histograms and the exporter's own families occupy,
    present in a scrape or not: an unlisted metric never takes one, so its name cannot depend on what else the
    host reports."""
    out: set[str] = set()
    for kind, metric in metrics.TABLE:
        pn = prom_name(kind, metric)
        out.update(taken_names(pn.name[:-len("_total")], "counter") if pn.counter else taken_names(pn.name, "gauge"))
    for kind in HISTOGRAM_KINDS:
        out.update(taken_names(histogram_family_name(kind), "histogram"))
    for fam in [*_self_metrics({}, {}, {}), host_info({})]:
        out.update(taken_names(fam.name, fam.type))
    return frozenset(out)


@dataclass(frozen=True)
class Dropped:
    """An unlisted metric left out of the scrape: the name it would have taken, and the unlisted metric that has
    it (empty: one of :func:`reserved_names`)."""

    kind: Kind
    metric: str
    name: str
    owner: str = ""


def families(ents: Sequence[Tuple[Entity, Dict[str, float]]]) -> Tuple[List[Metric], List[Dropped]]:
    """One family per (kind, metric), one sample per entity; and the unlisted metrics left out.

    Names are unique in the scrape: an unlisted metric whose sanitised name is in :func:`reserved_names` is
    left out, and of several unlisted metrics that sanitise to one name (``new-stat``, ``new_stat``) only one
    is kept, the same at every scrape: the one already spelled as its name, else the first in sorted order.
    """
    fams: Dict[str, Union[CounterMetricFamily, GaugeMetricFamily]] = {}
    # unlisted family name -> metric -> [(label values, value)]: the name's owner is chosen once all are known
    unlisted: Dict[str, Dict[str, List[Tuple[List[str], float]]]] = {}
    label_names: Dict[str, Tuple[Kind, Tuple[str, ...]]] = {}
    reserved = reserved_names()
    dropped: List[Dropped] = []
    for ent, values in ents:
        names, vals = entity_labels(ent)
        for metric, value in sorted(values.items()):
            pn = prom_name(ent.kind, metric)
            if not pn.listed:
                unlisted.setdefault(pn.name, {}).setdefault(metric, []).append((list(vals), value))
                label_names[pn.name] = (ent.kind, names)
                continue
            fam = fams.get(pn.name)
            if fam is None:
                cls = CounterMetricFamily if pn.counter else GaugeMetricFamily
                fam = fams[pn.name] = cls(pn.name, pn.help, labels=names)
            fam.add_metric(list(vals), value * pn.scale)
    for name, by_metric in sorted(unlisted.items()):
        kind, names = label_names[name]
        spelled = f"{PREFIX}_{kind.value}_"
        owner = None if name in reserved else min(by_metric, key=lambda m: (spelled + m != name, m))
        dropped.extend(Dropped(kind, m, name, owner or "") for m in sorted(by_metric) if m != owner)
        if owner is None:
            continue
        fam = fams[name] = GaugeMetricFamily(name, prom_name(kind, owner).help, labels=names)
        for labels, value in by_metric[owner]:
            fam.add_metric(labels, value)
    return list(fams.values()), dropped


def latest_from_recording(rec: Recording, lookback: Optional[float] = None, leaf_histograms: bool = False,
                          histogram_queues: Optional[Iterable[str]] = DEFAULT_QUEUES) -> LatestValues:
    """The last values of a recording: what a scrape at its end would have shown.

    Reads the tail (``lookback`` seconds, default ten nominal intervals, at least a minute) and, for entities
    still present at the end but silent in the tail (a slow source), their own last samples.
    """
    latest = LatestValues(leaf_histograms=leaf_histograms, host=rec.meta, histogram_queues=histogram_queues)
    span = rec.time_range()
    if span is None:
        return latest
    iv = rec.nominal_interval() or 1.0
    start = span[1] - (lookback if lookback is not None else max(60.0, 10 * iv))
    latest.add(rec.events())  # first: a source is up at the end if a sample of it is newer than its last error
    latest.add(rec.samples(start=start))
    have = {e.key for e, _ in latest.snapshot()[0]}
    missing = [e.key for e in rec.topology() if e.key not in have]
    if missing:
        latest.add(rec.samples(entity_keys=missing))
    present = {e.key for e in rec.topology()}
    latest.keep_only(present)
    return latest


#: the labels of ``zfsmon_host_info`` and the recording meta key each comes from
HOST_INFO_LABELS = (("host", "host"), ("platform", "platform"), ("zfs_flavour", "zfs_flavour"),
                    ("zfs_version", "zfs_version"), ("zfs_userland", "zfs_userland"))


def host_info(meta: Mapping[str, str]) -> Metric:
    """``zfsmon_host_info{host, platform, zfs_flavour, zfs_version, zfs_userland} 1``; a label the source did
    not record (an old recording) is empty."""
    fam = GaugeMetricFamily(f"{PREFIX}_host_info", "where the metrics come from: host, platform, ZFS flavour and "
                            "versions (1)", labels=[label for label, _ in HOST_INFO_LABELS])
    fam.add_metric([str(meta.get(key, "")) for _, key in HOST_INFO_LABELS], 1.0)
    return fam


def _self_metrics(errors: Dict[str, int], resets: Dict[str, int], source_ts: Dict[str, float],
                  up: Optional[Mapping[str, bool]] = None, render_s: Optional[float] = None) -> Iterator[Metric]:
    info = GaugeMetricFamily(f"{PREFIX}_build_info", "zfsmon version serving these metrics", labels=["version"])
    info.add_metric([__version__], 1.0)
    yield info
    # every source seen has both counters from its first sample on, at 0 until it counts: a series that is born at
    # 1 gives increase() nothing to see, so the first error or reset would raise no alert
    seen = sorted(set(errors) | set(resets) | set(source_ts))
    err = CounterMetricFamily(f"{PREFIX}_source_errors_total", "errors reported by a source (it keeps running)",
                              labels=["source"])
    for src in seen:
        err.add_metric([src], float(errors.get(src, 0)))
    yield err
    rst = CounterMetricFamily(f"{PREFIX}_source_resets_total", "counters seen going backwards (new baseline)",
                              labels=["source"])
    for src in seen:
        rst.add_metric([src], float(resets.get(src, 0)))
    yield rst
    last = GaugeMetricFamily(f"{PREFIX}_last_sample_timestamp_seconds",
                             "time of the newest sample from each source (epoch seconds)", labels=["source"])
    for src, ts in sorted(source_ts.items()):
        last.add_metric([src], ts)
    yield last
    ups = GaugeMetricFamily(f"{PREFIX}_source_up", "1 when a source's newest record is a sample, 0 when it is an "
                            "error: a failed read, or a read past its deadline, whose last values are still served "
                            "(their age: zfsmon_last_sample_timestamp_seconds)", labels=["source"])
    for src, ok in sorted((up or {}).items()):
        ups.add_metric([src], 1.0 if ok else 0.0)
    yield ups
    took = GaugeMetricFamily(f"{PREFIX}_scrape_duration_seconds", "seconds the exporter's previous rendering of "
                             "its metrics took (none before the first; a scrape answered from the cache renders "
                             "nothing)")
    if render_s is not None:
        took.add_metric([], render_s)
    yield took


# --- latency histograms -------------------------------------------------------------------------------------

#: the trace scripts' buckets: <op>_hist_<lower bound in ns>
_TRACE_HIST = re.compile(r"^([a-z_]+?)_hist_(\d+)$")
#: the exposed bucket bounds: powers of two, 2^10 ns (~1 us) .. 2^36 ns (~69 s), then +Inf. Fixed, so a series'
#: buckets never come and go, and bounded: 28 series per (vdev, queue, op).
LE_EXPONENTS = tuple(range(10, 37))


def _le_exponent(upper_ns: float) -> Optional[int]:
    """The exposed bucket (exponent of its 2^e ns bound) holding latencies below ``upper_ns``; None = +Inf."""
    for e in LE_EXPONENTS:
        if upper_ns <= (1 << e):
            return e
    return None


def zpool_bucket_upper_ns(j: int) -> float:
    """Exclusive upper end of ``zpool iostat -w`` bucket ``j`` ([2^j, 2^(j+1)) ns; zpool prints 2^(j+1)-1)."""
    return float(latency.upper_ns(j) + 1)


@dataclass
class _Hist:
    """One cumulative histogram: counts per exposed bound (exponent; None = +Inf), sum of latencies (s), count."""

    buckets: Dict[Optional[int], float] = field(default_factory=dict)
    sum_s: float = 0.0
    count: float = 0.0


def histogram_parts(s: Sample) -> Dict[Tuple[str, str], Tuple[Dict[Optional[int], float], float]]:
    """(queue, op) -> (counts per exposed bound, sum of latencies in seconds) for one interval sample.

    The sum is exact where the source says it: the trace scripts' mean x count, ``zpool iostat -l``'s average
    wait x count when the same sample has it; otherwise each I/O counts at 3/4 of its bucket's upper bound
    (the middle of [2^j, 2^(j+1))), an estimate within a bucket's width.
    """
    out: Dict[Tuple[str, str], Tuple[Dict[Optional[int], float], float]] = {}
    m = s.metrics
    mids: Dict[Tuple[str, str], float] = {}
    is_trace = s.entity.kind == Kind.TRACE
    for name, raw in m.items():
        bucket = _bucket_of(is_trace, name)
        if bucket is None:
            continue
        try:
            n = float(raw)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(n) or n < 0:
            continue
        # a count of I/Os: whole (zpool's scaled "2.40K" reads as 2457.6), as OpenMetrics wants a bucket's value
        n = float(round(n))
        key, upper, e = bucket
        counts, _ = out.setdefault(key, ({}, 0.0))
        counts[e] = counts.get(e, 0.0) + n
        mids[key] = mids.get(key, 0.0) + n * 0.75 * upper * 1e-9
    for key, (counts, _) in list(out.items()):
        queue, op = key
        total = sum(counts.values())
        avg = m.get(f"{op}_lat_mean_ns") if queue == TRACE_QUEUE else m.get(f"{queue}_{op}")
        try:
            exact = float(avg) * 1e-9 * total if avg is not None else None
        except (TypeError, ValueError):
            exact = None
        out[key] = (counts, exact if exact is not None and math.isfinite(exact) else mids[key])
    return out


@functools.lru_cache(maxsize=65536)
def _bucket_of(is_trace: bool, name: str) -> Optional[Tuple[Tuple[str, str], float, Optional[int]]]:
    """((queue, op), upper bound in ns, exposed bound's exponent) of a histogram bucket metric, else None.
    Cached: the same few hundred names come back every interval, for every vdev."""
    if is_trace:
        hit = _TRACE_HIST.match(name)
        if not hit:
            return None
        upper = float(bucket_upper(int(hit.group(2))))
        return (TRACE_QUEUE, hit.group(1)), upper, _le_exponent(upper)
    split = latency.split_metric(name)  # the latency family's own names: lat_<queue>[_<op>]_<label>
    if split is None:
        return None
    queue, op, j = split
    key, upper = (queue, op), zpool_bucket_upper_ns(j)
    return key, upper, _le_exponent(upper)


def is_histogram_metric(kind: Kind, name: str) -> bool:
    """A bucket of a latency histogram (exposed as part of a histogram family, never as its own gauge)."""
    return _bucket_of(kind == Kind.TRACE, name) is not None


def _histogram_owner(e: Entity, leaf_histograms: bool) -> Optional[Entity]:
    """Where a sample's histogram is exposed: its own pool/vdev/leaf; a trace entity as the vdev or leaf it
    resolved to (the trace parser already rolls leaves up into their top-level vdev)."""
    if e.kind in (Kind.POOL, Kind.VDEV) or (e.kind == Kind.LEAF and leaf_histograms):
        return e
    if e.kind == Kind.TRACE and e.pool and e.parent:
        kind = Kind.VDEV if e.parent == e.pool else Kind.LEAF
        if kind == Kind.LEAF and not leaf_histograms:
            return None
        return Entity(kind, e.name, e.pool, e.role, e.parent)
    return None


#: the kinds whose latency histograms are exposed (:func:`_histogram_owner`)
HISTOGRAM_KINDS = (Kind.POOL, Kind.VDEV, Kind.LEAF)


def histogram_family_name(kind: Kind) -> str:
    """``zfsmon_<kind>_latency_seconds``."""
    return f"{PREFIX}_{kind.value}_latency_seconds"


def histogram_families(hists: Sequence[Tuple[Entity, str, str, _Hist]]) -> List[Metric]:
    """``zfsmon_<kind>_latency_seconds`` histogram families, one series per (entity, queue, op)."""
    fams: Dict[str, HistogramMetricFamily] = {}
    for ent, queue, op, h in hists:
        names, vals = entity_labels(ent)
        name = histogram_family_name(ent.kind)
        fam = fams.get(name)
        if fam is None:
            fam = fams[name] = HistogramMetricFamily(
                name, f"I/O latency of each {ent.kind.value} by queue (zpool iostat -w: total_wait, disk_wait, "
                      f"syncq_wait, asyncq_wait, scrub, trim, rebuild; {TRACE_QUEUE}: a tracing script) and "
                      f"operation (read, write; any for scrub/trim/rebuild) [seconds]",
                labels=list(names) + ["queue", "op"])
        buckets, acc = [], 0.0
        for e in LE_EXPONENTS:
            acc += h.buckets.get(e, 0.0)
            buckets.append((repr((1 << e) / 1e9), acc))
        buckets.append(("+Inf", h.count))
        fam.add_metric(list(vals) + [queue, op], buckets, h.sum_s)
    return list(fams.values())
