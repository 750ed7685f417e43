"""The Prometheus view: the latest value of every metric, rendered by a ``prometheus_client`` Collector.

Why an exporter and not a home-made server: Prometheus already does the
scaling past one host (scraping many hosts, storage, ``rate()``, alerting), so
zfsmon only has to say what it saw last. Counters are exposed with their raw
cumulative values (Prometheus's ``rate()`` handles wrap and reset), gauges as
they are. Names follow Prometheus conventions and are derived from the one
metrics table (:mod:`zfsmon.metrics`): ``zfsmon_<kind>_<metric>`` with base
units (``_bytes``, ``_seconds``; ratios 0..1, not percent) and ``_total`` on
counters. A metric with no row in the table (a newer kstat field, a latency
bucket) is still exposed, as an unlisted gauge.

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
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from zfsmon import __version__, metrics
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.store import Recording

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
    Kind.DEVICE: ("device",),
    Kind.DATASET: ("pool", "dataset"),
    Kind.WORKLOAD: ("workload",),
    Kind.TRACE: ("name",),
}

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


@dataclass(frozen=True)
class PromName:
    """How one (kind, metric) is exposed: family name, type, factor to base units, HELP text."""

    name: str
    counter: bool
    scale: float
    help: str


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
        if base.endswith(("_total", "_created")):  # a counter's sample names: a gauge must not take them
            base += "_raw"
        return PromName(f"{PREFIX}_{kind.value}_{base}", False, 1.0,
                        f"{metric} (unlisted: no row in zfsmon's metrics table, exposed as read)")
    suffix, scale, drop = _UNITS.get(spec.unit, ("", 1.0, ()))
    counter = spec.kind == metrics.COUNTER
    words = _words_without(base, drop, per_s=spec.unit in ("B/s", "ops/s"))
    if spec.unit == "ops/s" and words[-1:] == ["s"]:
        words = words[:-1]  # read_ops_s -> read_ops_per_second
    words = ["transactions" if w == "tps" else w for w in words]
    if len(words) > 1 and words[0] == kind.value:
        words = words[1:]  # arc's arc_prune -> zfsmon_arc_prune_total
    if counter and len(words) > 1 and words[-1] == "count":
        words = words[:-1]  # commit_count -> commit_total
    stem = "_".join(words) or base
    name = f"{PREFIX}_{kind.value}_{stem}" + (f"_{suffix}" if suffix else "") + ("_total" if counter else "")
    unit = f" [{spec.unit}" + (f", exposed x{scale:g}" if scale != 1.0 else "") + "]"
    return PromName(name, counter, scale, spec.help + unit)


def entity_labels(e: Entity) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(label names, values) for an entity; ARC, L2ARC and ZIL are host-wide and carry none."""
    names = LABELS.get(e.kind, ())
    role = e.role.value if e.role else ""
    known = {"pool": e.pool, "vdev": e.name, "device": e.name, "role": role, "parent": e.parent,
             "dataset": e.name, "workload": e.name, "name": e.name}
    return names, tuple(known[n] for n in names)


@dataclass
class _Latest:
    entity: Entity
    values: Dict[str, float] = field(default_factory=dict)
    seen: float = 0.0  # monotonic time of the last update


class LatestValues:
    """The newest value of every (entity, metric), fed by sinks; safe to read while a sampler writes.

    Several sources may describe one entity (a pool from ``zpool iostat`` and from its kstats), so values
    are merged per metric. The first report of an interval command (``since_boot``) averages everything
    since import: it is not what happens now, so it is ignored. An entity not updated for ``stale_after``
    seconds (a removed cache device, an exported pool) is dropped; ``None`` keeps everything (a recording).
    """

    def __init__(self, stale_after: Optional[float] = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after = stale_after
        self.clock = clock
        self._lock = threading.Lock()
        self._by_key: Dict[str, _Latest] = {}
        self._errors: Dict[str, int] = {}
        self._resets: Dict[str, int] = {}
        self._source_ts: Dict[str, float] = {}

    def add(self, records: Iterable[Record]) -> None:
        """A sampler sink: ``Sampler(..., sinks=[latest.add])``."""
        now = self.clock()
        with self._lock:
            for r in records:
                if isinstance(r, Sample):
                    self._add_sample(r, now)
                elif isinstance(r, Event):
                    self._add_event(r)

    def _add_sample(self, s: Sample, now: float) -> None:
        if s.since_boot:
            return
        cur = self._by_key.get(s.entity.key)
        if cur is None:
            cur = self._by_key[s.entity.key] = _Latest(s.entity)
        cur.entity = s.entity  # latest role and parent
        for k, v in s.metrics.items():
            try:
                f = float(v)
            except (TypeError, ValueError):
                continue
            if math.isfinite(f):
                cur.values[k] = f
        cur.seen = now
        src = s.source or "unknown"
        self._source_ts[src] = max(self._source_ts.get(src, 0.0), s.ts)

    def _add_event(self, e: Event) -> None:
        if e.kind == EventKind.ERROR:
            src = e.source or "unknown"
            self._errors[src] = self._errors.get(src, 0) + 1
        elif e.kind == EventKind.RESET:
            src = e.source or "unknown"
            self._resets[src] = self._resets.get(src, 0) + 1

    def keep_only(self, keys: Iterable[str]) -> None:
        """Forget entities not in ``keys`` (those a recording says were gone by its end)."""
        wanted = set(keys)
        with self._lock:
            for key in [k for k in self._by_key if k not in wanted]:
                del self._by_key[key]

    def snapshot(self) -> Tuple[List[Tuple[Entity, Dict[str, float]]], Dict[str, int], Dict[str, int],
                                Dict[str, float]]:
        """(entities with values, errors per source, resets per source, newest sample time per source)."""
        now = self.clock()
        with self._lock:
            if self.stale_after is not None:
                for key in [k for k, v in self._by_key.items() if now - v.seen > self.stale_after]:
                    del self._by_key[key]
            ents = [(v.entity, dict(v.values)) for _, v in sorted(self._by_key.items())]
            return ents, dict(self._errors), dict(self._resets), dict(self._source_ts)


class ZfsmonCollector(Collector):
    """Renders a :class:`LatestValues` as Prometheus metric families at every scrape."""

    def __init__(self, latest: LatestValues) -> None:
        self.latest = latest

    def describe(self) -> List[Metric]:
        return []  # families depend on what the sources found: no fixed list to pre-register

    def collect(self) -> Iterator[Metric]:
        ents, errors, resets, source_ts = self.latest.snapshot()
        yield from families(ents)
        yield from _self_metrics(errors, resets, source_ts)


def families(ents: Sequence[Tuple[Entity, Dict[str, float]]]) -> List[Metric]:
    """One family per (kind, metric), one sample per entity."""
    fams: Dict[str, Metric] = {}
    for ent, values in ents:
        names, vals = entity_labels(ent)
        for metric, value in sorted(values.items()):
            pn = prom_name(ent.kind, metric)
            fam = fams.get(pn.name)
            if fam is None:
                cls = CounterMetricFamily if pn.counter else GaugeMetricFamily
                fam = fams[pn.name] = cls(pn.name, pn.help, labels=names)
            fam.add_metric(list(vals), value * pn.scale)
    return list(fams.values())


def latest_from_recording(rec: Recording, lookback: Optional[float] = None) -> LatestValues:
    """The last values of a recording: what a scrape at its end would have shown.

    Reads the tail (``lookback`` seconds, default ten nominal intervals, at least a minute) and, for entities
    still present at the end but silent in the tail (a slow source), their own last samples.
    """
    latest = LatestValues()
    span = rec.time_range()
    if span is None:
        return latest
    iv = rec.nominal_interval() or 1.0
    start = span[1] - (lookback if lookback is not None else max(60.0, 10 * iv))
    latest.add(rec.samples(start=start))
    have = {e.key for e, _ in latest.snapshot()[0]}
    missing = [e.key for e in rec.topology() if e.key not in have]
    if missing:
        latest.add(rec.samples(entity_keys=missing))
    latest.add(rec.events())
    present = {e.key for e in rec.topology()}
    latest.keep_only(present)
    return latest


def _self_metrics(errors: Dict[str, int], resets: Dict[str, int], source_ts: Dict[str, float]) -> Iterator[Metric]:
    info = GaugeMetricFamily(f"{PREFIX}_build_info", "zfsmon version serving these metrics", labels=["version"])
    info.add_metric([__version__], 1.0)
    yield info
    err = CounterMetricFamily(f"{PREFIX}_source_errors_total", "errors reported by a source (it keeps running)",
                              labels=["source"])
    for src, n in sorted(errors.items()):
        err.add_metric([src], float(n))
    yield err
    rst = CounterMetricFamily(f"{PREFIX}_counter_resets_total", "counters seen going backwards (new baseline)",
                              labels=["source"])
    for src, n in sorted(resets.items()):
        rst.add_metric([src], float(n))
    yield rst
    last = GaugeMetricFamily(f"{PREFIX}_last_sample_timestamp_seconds",
                             "time of the newest sample from each source (epoch seconds)", labels=["source"])
    for src, ts in sorted(source_ts.items()):
        last.add_metric([src], ts)
    yield last
