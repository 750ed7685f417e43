"""What each vdev role did beside the workload: operations, IOPS per GB, what the cache devices add, latency.

Pure: recorded samples in, a :class:`VdevPerf` out (``zfsmon analyze`` topic ``vdev_perf``, the sweep's
per-step columns, the report's pages and the CSV all ask this module).

* **Devices** are the rows that are nobody's parent: the leaves of a mirror or raidz, and a single-disk
  vdev (a SLOG or cache disk). Their ``read_ops``/``write_ops`` (per second over a ``zpool iostat``
  interval) times the interval are the operations the disks did; the first report (since import, no
  interval) is left out. A mirror's write is one operation per side.
* **Capacity** is ``alloc + free`` of the top-level vdevs of a role (the latest reading). **IOPS per GB**
  is the busiest interval's operations per second of the role's devices (reads + writes, as the disks did
  them: a mirror's write is one per side) over that capacity in GB (10^9 B): the figure that sets
  layouts side by side (mirrors vs raidz, with or without cache devices). With fio, its peak IOPS per data
  GB is the application's side of the same figure.
* **What the cache devices add**: their reads in the window against the data devices' reads and, with
  fio, against the workload's reads; the L2ARC's hits from arcstats (``l2arc`` entity, counter
  difference first -> last) in the same window.
* **Latency per role**: one distribution per (role, operation) from whichever the recording has, in this
  order: a trace script's per-device histograms (``<op>_hist_<lo>``: fusevdevlat on the zfs-fuse lab,
  vdevlat/blklat elsewhere), ``zpool iostat -w`` buckets (``lat_total_wait_<op>_<label>``), or, where the
  platform gives only averages (``zpool iostat -l``), the ops-weighted mean of ``total_wait_<op>``.
  Buckets of all devices of a role add up; percentiles interpolate inside a bucket.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from zfsmon.analysis import qdsweep
from zfsmon.metrics.latency import LAT_BUCKETS, lower_ns, split_metric, upper_ns
from zfsmon.model import Kind, Role, Sample

#: the roles reported, in this order
ROLES = ("data", "log", "cache", "special", "dedup")
#: the operations a latency distribution is kept for
LAT_OPS = ("read", "write", "flush")
#: what this module reads of a ``zpool iostat`` row (a vdev or a leaf): operations, capacity, ``-l`` means, and
#: every metric named with :data:`ROW_PREFIX` (``-w`` total_wait buckets)
ROW_METRICS = frozenset({"alloc", "free"} | {f"{op}_ops" for op in LAT_OPS} | {f"total_wait_{op}" for op in LAT_OPS})
ROW_PREFIX = "lat_total_wait_"
GB = 1e9

#: (low ns, high ns exclusive, count)
Bucket = Tuple[float, float, float]


def trace_bucket_upper(lo: int) -> int:
    """Exclusive upper end of a trace script's log-linear bucket starting at ``lo`` (ns): a quarter of its power
    of two wide (the arithmetic of :func:`zfsmon.trace.histogram.bucket_upper`, which analysis may not import)."""
    if lo < 4:
        return lo + 1
    return lo + ((1 << (lo.bit_length() - 1)) >> 2)


def percentile(buckets: Sequence[Bucket], q: float) -> Optional[float]:
    """The q-quantile of (low, high, count) buckets, interpolated inside its bucket; None when empty."""
    rows = sorted(b for b in buckets if b[2] > 0)
    total = sum(n for _lo, _hi, n in rows)
    if total <= 0:
        return None
    rank = q * total
    seen = 0.0
    for lo, hi, n in rows:
        if seen + n >= rank:
            return lo + (hi - lo) * max(rank - seen, 0.0) / n
        seen += n
    return rows[-1][1]


@dataclass
class LatDist:
    """One role's latency distribution for one operation (ms), with its buckets (ns) for a histogram plot."""

    role: str
    op: str
    source: str  # trace | zpool iostat -w | zpool iostat -l
    count: float
    mean_ms: Optional[float]
    p50_ms: Optional[float] = None
    p90_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    buckets: List[Bucket] = field(default_factory=list)

    def as_dict(self) -> Dict[str, object]:
        return {"role": self.role, "op": self.op, "source": self.source, "count": self.count, "mean_ms": self.mean_ms,
                "p50_ms": self.p50_ms, "p90_ms": self.p90_ms, "p99_ms": self.p99_ms,
                "buckets": [list(b) for b in self.buckets]}

    def text(self) -> str:
        if self.p50_ms is None:
            return f"{self.role} {self.op} mean {_ms(self.mean_ms)} ({self.count:,.0f} ops, {self.source})"
        return (f"{self.role} {self.op} p50 {_ms(self.p50_ms)}, p99 {_ms(self.p99_ms)} ({self.count:,.0f} ops, "
                f"{self.source})")


@dataclass
class RoleStats:
    role: str
    devices: int = 0
    top_level: int = 0
    read_ops: float = 0.0  # operations in the window, all devices of the role
    write_ops: float = 0.0
    busiest_read_per_device_s: float = 0.0  # the busiest interval's reads/s, per device
    busiest_write_per_device_s: float = 0.0
    capacity_b: Optional[float] = None
    peak_iops: float = 0.0  # the role's devices' read+write ops/s, busiest interval
    peak_ts: Optional[float] = None  # that interval's end (epoch seconds)
    mean_iops: float = 0.0
    timed: int = 0  # the devices' interval rows counted above
    untimed: int = 0  # interval rows without an interval (a capture without times, imported without one)

    @property
    def unknown(self) -> str:
        """Why figures are missing or short, for the text: '' when every row had its interval."""
        if not self.untimed:
            return ""
        if not self.timed:
            return (f"no interval known for its {self.untimed:,} readings (a capture without times: import it with "
                    "--interval S), so no IOPS or operation counts")
        return f"{self.untimed:,} readings without an interval left out"

    @property
    def iops_per_gb(self) -> Optional[float]:
        return self.peak_iops / (self.capacity_b / GB) if self.capacity_b else None

    def as_dict(self) -> Dict[str, object]:
        return {"devices": self.devices, "leaves": self.devices, "top_level": self.top_level,
                "read_ops": self.read_ops, "write_ops": self.write_ops,
                "busiest_read_per_leaf_s": self.busiest_read_per_device_s,
                "busiest_write_per_leaf_s": self.busiest_write_per_device_s, "capacity_b": self.capacity_b,
                "peak_iops": self.peak_iops, "mean_iops": self.mean_iops, "iops_per_gb": self.iops_per_gb,
                "readings_without_interval": self.untimed}


@dataclass
class VdevPerf:
    roles: Dict[str, RoleStats]
    latency: List[LatDist]
    l2_hits: Optional[float] = None
    l2_misses: Optional[float] = None
    fio_steps: List[qdsweep.Step] = field(default_factory=list)

    @property
    def fio_reads(self) -> float:
        return sum(s.by_ios.get("read", 0.0) for s in self.fio_steps)

    @property
    def fio_peak_iops(self) -> Optional[float]:
        return max((s.iops for s in self.fio_steps), default=None)

    def lat(self, role: str, op: str) -> Optional[LatDist]:
        return next((d for d in self.latency if d.role == role and d.op == op), None)

    def as_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {"roles": {r: s.as_dict() for r, s in self.roles.items()},
                                  "latency": [d.as_dict() for d in self.latency],
                                  "l2_hits": self.l2_hits, "l2_misses": self.l2_misses}
        if self.fio_steps:
            peak = self.fio_peak_iops or 0.0
            data = self.roles.get("data")
            out["fio_steps"] = [{"depth": s.depth, "jobs": s.jobs, "iops": s.iops, "ios": s.ios,
                                 "t0": s.t0, "t1": s.t1} for s in self.fio_steps]
            out["fio_peak_iops"] = peak
            if data is not None and data.capacity_b:
                out["fio_iops_per_data_gb"] = peak / (data.capacity_b / GB)
        return out

    def text(self) -> str:
        parts: List[str] = []
        data = self.roles.get("data")
        timed = {r: st for r, st in self.roles.items() if st.timed}
        if data is not None and not data.timed:
            parts.append(f"Data vdevs: {data.top_level} top-level, {data.devices} disks"
                         + (f", {_gb(data.capacity_b)}" if data.capacity_b else "") + f"; {data.unknown}.")
        elif data is not None:
            t = (f"Data vdevs: {data.top_level} top-level, {data.devices} disks"
                 + (f", {_gb(data.capacity_b)}" if data.capacity_b else "")
                 + f"; busiest interval {data.peak_iops:,.0f} disk IOPS")
            if data.iops_per_gb is not None:
                t += f" = {data.iops_per_gb:,.1f} IOPS per GB"
            t += (f" (per disk up to {data.busiest_read_per_device_s:,.0f} reads/s, "
                  f"{data.busiest_write_per_device_s:,.0f} writes/s); {data.read_ops:,.0f} reads and "
                  f"{data.write_ops:,.0f} writes in the window")
            peak = self.fio_peak_iops
            if peak and data.capacity_b:
                t += f"; fio's peak {peak:,.0f} IOPS = {peak / (data.capacity_b / GB):,.1f} per data GB"
            parts.append(t + (f"; {data.unknown}." if data.unknown else "."))
        cache = self.roles.get("cache")
        if cache is not None and not cache.timed:
            parts.append(f"Cache devices: {cache.devices}" + (f", {_gb(cache.capacity_b)}" if cache.capacity_b else "")
                         + f"; {cache.unknown}.")
        elif cache is not None:
            t = (f"Cache devices: {cache.devices}" + (f", {_gb(cache.capacity_b)}" if cache.capacity_b else "")
                 + f"; up to {cache.busiest_read_per_device_s:,.0f} reads/s per device; {cache.read_ops:,.0f} reads "
                 f"in the window")
            if "data" in timed:
                t += f" against the data disks' {timed['data'].read_ops:,.0f}"
            if self.fio_reads:
                t += f", of fio's {self.fio_reads:,.0f} reads"
            if self.l2_hits is not None:
                t += f"; L2ARC hits (arcstats, every pool) {self.l2_hits:,.0f}" + (f", misses {self.l2_misses:,.0f}"
                                                             if self.l2_misses is not None else "")
            if cache.iops_per_gb is not None:
                t += f"; {cache.iops_per_gb:,.0f} IOPS per GB of cache"
            parts.append(t + (f"; {cache.unknown}." if cache.unknown else "."))
        log = self.roles.get("log")
        if log is not None and not log.timed:
            parts.append(f"Log devices (SLOG): {log.unknown}.")
        elif log is not None:
            t = f"Log devices (SLOG): {log.write_ops:,.0f} writes in the window"
            if data is not None and "data" in timed:
                t += f" against {data.write_ops:,.0f} on the {data.devices} data disks"
            parts.append(t + (f"; {log.unknown}." if log.unknown else "."))
        if self.latency:
            parts.append("Latency per role: " + "; ".join(d.text() for d in self.latency) + ".")
        return " ".join(parts)


def _ms(v: Optional[float]) -> str:
    if v is None:
        return "?"
    return f"{v * 1000:.0f} us" if v < 1 else f"{v:.1f} ms"


def _gb(b: Optional[float]) -> str:
    if not b:
        return "?"
    return f"{b / 2 ** 30:.2f} GiB" if b >= 2 ** 30 else f"{b / 2 ** 20:.0f} MiB"


#: the roles this analysis reports, by model role (a lookup: asking an enum member its value costs a call)
_ROLE_NAMES: Dict[Role, str] = {r: r.value for r in Role if r.value in ROLES}


def _role(s: Sample) -> Optional[str]:
    r = s.entity.role
    return _ROLE_NAMES.get(r) if r is not None else None


def _by_role(rows: Iterable[Tuple[Sample, str]]) -> Dict[str, List[Sample]]:
    out: Dict[str, List[Sample]] = {}
    for s, role in rows:
        out.setdefault(role, []).append(s)
    return out


def device_samples(samples: Sequence[Sample], kinds: Tuple[Kind, ...]) -> List[Sample]:
    """Samples of devices with a role: rows of ``kinds`` that are no other row's parent."""
    mine = [(s, role) for s in samples if s.entity.kind in kinds and (role := _role(s))]
    parents = {(s.entity.pool, s.entity.parent) for s, _r in mine if s.entity.parent}
    return [s for s, _r in _not_parents(mine, parents)]


@dataclass
class _Rows:
    """The window's rows this module reads, each with its role, sorted out in one pass over the samples (a long
    window holds hundreds of thousands; asking each its kind and role once per analysis was most of the cost)."""

    iostat: List[Tuple[Sample, str]] = field(default_factory=list)  # VDEV and LEAF rows with a role
    traced: List[Tuple[Sample, str]] = field(default_factory=list)  # TRACE rows with a role
    #: (pool, name) of the rows some row names as its parent: of every iostat row, of those after the first
    #: (since-import) report, of the trace rows
    parents: Set[Tuple[str, str]] = field(default_factory=set)
    parents_interval: Set[Tuple[str, str]] = field(default_factory=set)
    parents_traced: Set[Tuple[str, str]] = field(default_factory=set)

    @classmethod
    def of(cls, samples: Iterable[Sample]) -> _Rows:
        out = cls()
        roles = _ROLE_NAMES
        for s in samples:
            e = s.entity
            kind = e.kind
            if kind is not Kind.VDEV and kind is not Kind.LEAF and kind is not Kind.TRACE:
                continue
            role = roles.get(e.role) if e.role is not None else None
            if role is None:
                continue
            if kind is Kind.TRACE:
                out.traced.append((s, role))
                if e.parent:
                    out.parents_traced.add((e.pool, e.parent))
                continue
            out.iostat.append((s, role))
            if e.parent:
                out.parents.add((e.pool, e.parent))
                if not s.since_boot:
                    out.parents_interval.add((e.pool, e.parent))
        return out

    def devices(self) -> List[Tuple[Sample, str]]:
        """iostat rows of devices (no row's parent), the first report included: :func:`device_samples`."""
        return _not_parents(self.iostat, self.parents)

    def interval_devices(self) -> List[Tuple[Sample, str]]:
        """iostat rows after the first report, of devices among those rows alone (what :func:`role_stats` counts)."""
        return _not_parents((row for row in self.iostat if not row[0].since_boot), self.parents_interval)

    def traced_devices(self) -> List[Tuple[Sample, str]]:
        return _not_parents(self.traced, self.parents_traced)


def _not_parents(rows: Iterable[Tuple[Sample, str]], parents: Set[Tuple[str, str]]) -> List[Tuple[Sample, str]]:
    """The rows whose (pool, name) no row names as its parent: the devices."""
    return [(s, r) for s, r in rows if (s.entity.pool, s.entity.name) not in parents]


def role_stats(samples: Sequence[Sample]) -> Dict[str, RoleStats]:
    return _role_stats(_Rows.of(samples))


def _role_stats(rows: _Rows) -> Dict[str, RoleStats]:
    out: Dict[str, RoleStats] = {}
    #: (role, time) -> the role's devices' reads/s, writes/s and reads+writes/s summed, and how many devices
    per_ts: Dict[Tuple[str, float], List[float]] = {}
    names: Dict[str, Set[Tuple[str, str]]] = {}  # (pool, name) of each role's devices: a tuple, not a string per row
    for s, role in rows.interval_devices():
        m = s.metrics
        if "read_ops" not in m and "write_ops" not in m:
            continue
        st = out.get(role)
        if st is None:
            st = out[role] = RoleStats(role)
            names[role] = set()
        names[role].add((s.entity.pool, s.entity.name))
        r, w = float(m.get("read_ops", 0.0)), float(m.get("write_ops", 0.0))
        if not s.interval:
            st.untimed += 1
        else:
            st.timed += 1
            st.read_ops += r * s.interval
            st.write_ops += w * s.interval
            got = per_ts.get((role, s.ts))
            if got is None:
                per_ts[(role, s.ts)] = [r, w, r + w, 1]
            else:
                got[0] += r
                got[1] += w
                got[2] += r + w
                got[3] += 1
    totals: Dict[str, List[float]] = {}
    for (role, ts), (sr, sw, srw, n) in per_ts.items():
        st = out[role]
        st.busiest_read_per_device_s = max(st.busiest_read_per_device_s, sr / n)
        st.busiest_write_per_device_s = max(st.busiest_write_per_device_s, sw / n)
        totals.setdefault(role, []).append(srw)
        if st.peak_ts is None or srw > st.peak_iops or (srw == st.peak_iops and ts < st.peak_ts):
            st.peak_iops, st.peak_ts = srw, ts
    for role, series in totals.items():
        out[role].mean_iops = sum(series) / len(series)
    for role, st in out.items():
        st.devices = len(names[role])
    # top-level vdevs: the pool's children; capacity from the latest reading with alloc and free
    top = [(s, role) for s, role in rows.iostat if not s.since_boot and s.entity.kind is Kind.VDEV
           and s.entity.parent in ("", s.entity.pool)]
    cap: Dict[Tuple[str, str], float] = {}
    tops: Dict[str, Set[str]] = {}
    for s, role in sorted(top, key=lambda x: x[0].ts):
        tops.setdefault(role, set()).add(f"{s.entity.pool}/{s.entity.name}")
        if "alloc" in s.metrics and "free" in s.metrics:
            cap[(role, f"{s.entity.pool}/{s.entity.name}")] = s.metrics["alloc"] + s.metrics["free"]
    for role, st in out.items():
        sizes = [v for (r, _n), v in cap.items() if r == role]
        st.capacity_b = sum(sizes) if sizes else None
        st.top_level = len(tops.get(role, ()))
    return out


def _trace_buckets(s: Sample, op: str) -> List[Bucket]:
    prefix = f"{op}_hist_"
    out: List[Bucket] = []
    for name, n in s.metrics.items():
        if name.startswith(prefix) and n:
            try:
                lo = int(name[len(prefix):])
            except ValueError:
                continue
            out.append((float(lo), float(trace_bucket_upper(lo)), float(n)))
    return out


def _total_wait(name: str) -> Optional[Tuple[str, float, float]]:
    """A ``zpool iostat -w`` total_wait bucket's (op, lower ns, upper ns), or None for any other metric (asked
    through :func:`_wait_name`, which caches it)."""
    hit = split_metric(name)
    if hit is None or hit[0] != "total_wait":
        return None
    j = hit[2]
    hi = float(upper_ns(j) + 1) if j < len(LAT_BUCKETS) - 1 else float(2 * lower_ns(j))
    return hit[1], float(lower_ns(j)), hi


@lru_cache(maxsize=8192)
def _wait_name(name: str) -> Tuple[bool, Optional[Tuple[str, float, float]]]:
    """Whether ``name`` is one of ``zpool iostat -w``'s total_wait names, and its bucket (:func:`_total_wait`)."""
    return name.startswith(ROW_PREFIX), _total_wait(name)


def _wait_buckets(s: Sample) -> Tuple[bool, Dict[str, List[Bucket]]]:
    """Whether the sample has any ``-w`` total_wait metric, and its non-empty buckets by op: one pass."""
    out: Dict[str, List[Bucket]] = {}
    named = False
    for name, n in s.metrics.items():
        is_wait, b = _wait_name(name)
        if not is_wait:
            continue
        named = True
        if b is not None and n:
            got = out.get(b[0])
            if got is None:
                out[b[0]] = [(b[1], b[2], float(n))]
            else:
                got.append((b[1], b[2], float(n)))
    return named, out


def _merge(buckets: Iterable[Bucket]) -> List[Bucket]:
    acc: Dict[Tuple[float, float], float] = {}
    for lo, hi, n in buckets:
        acc[(lo, hi)] = acc.get((lo, hi), 0.0) + n
    return [(lo, hi, n) for (lo, hi), n in sorted(acc.items())]


def _dist(role: str, op: str, source: str, buckets: List[Bucket], sum_ns: Optional[float]) -> LatDist:
    merged = _merge(buckets)
    count = sum(b[2] for b in merged)

    def pct(q: float) -> Optional[float]:
        v = percentile(merged, q)
        return None if v is None else v / 1e6

    mean = sum_ns / count / 1e6 if sum_ns is not None and count else None
    if mean is None and count:
        mean = sum(n * (lo + hi) / 2 for lo, hi, n in merged) / count / 1e6  # bucket midpoints: an estimate
    return LatDist(role, op, source, count, mean, pct(0.5), pct(0.9), pct(0.99), merged)


def role_latency(samples: Sequence[Sample]) -> List[LatDist]:
    """One distribution per (role, op): trace histograms first, else ``zpool iostat -w``, else ``-l`` means."""
    return _role_latency(_Rows.of(samples))


#: per operation, the ``-l`` mean wait's metric and the operations' it is weighted by
_MEAN_NAMES = tuple((op, f"total_wait_{op}", f"{op}_ops") for op in LAT_OPS)


def _role_latency(rows: _Rows) -> List[LatDist]:
    every = rows.devices()
    # -w histograms: the intervals' deltas; the since-import table only when that is all there is (one report).
    # Both sums are made in the one pass over the rows' metrics that also tells whether any has them.
    # The same pass sums the -l means' numerators and operations per (role, op), in case no better source is there.
    waits: Dict[Tuple[str, str], List[Bucket]] = {}
    waits_every: Dict[Tuple[str, str], List[Bucket]] = {}
    means: Dict[Tuple[str, str], List[float]] = {}  # (role, op) -> [sum of wait x ops, ops], intervals only
    hist_seen = False
    for s, role in every:
        named, by_op = _wait_buckets(s)
        if named and not s.since_boot:
            hist_seen = True
        for op, bs in by_op.items():
            waits_every.setdefault((role, op), []).extend(bs)
            if not s.since_boot:
                waits.setdefault((role, op), []).extend(bs)
        iv = s.interval
        if iv and not s.since_boot:
            m = s.metrics
            for op, wait_name, ops_name in _MEAN_NAMES:
                w, r = m.get(wait_name), m.get(ops_name)
                if w is not None and r:
                    acc = means.get((role, op))
                    if acc is None:
                        acc = means[(role, op)] = [0.0, 0.0]
                    acc[0] += w * r * iv
                    acc[1] += r * iv
    if not hist_seen:
        waits = waits_every
    traced_by = _by_role(rows.traced_devices())
    out: List[LatDist] = []
    for role in ROLES:
        for op in LAT_OPS:
            tb: List[Bucket] = []
            tsum = 0.0
            exact = True
            for s in traced_by.get(role, ()):
                b = _trace_buckets(s, op)
                tb += b
                n, mean = s.metrics.get(f"{op}_ops"), s.metrics.get(f"{op}_lat_mean_ns")
                if b and (n is None or mean is None):
                    exact = False
                elif n and mean is not None:
                    tsum += n * mean
            if tb:
                src = sorted({s.source for s in traced_by.get(role, ()) if s.source}) or ["trace"]
                out.append(_dist(role, op, ", ".join(src), tb, tsum if exact else None))
                continue
            wb = waits.get((role, op))
            if wb:
                out.append(_dist(role, op, "zpool iostat -w", wb, None))
                continue
            tot, n_ops = means.get((role, op), (0.0, 0.0))
            if n_ops:
                out.append(LatDist(role, op, "zpool iostat -l", n_ops, tot / n_ops / 1e6))
    return out


def _l2_window(samples: Sequence[Sample]) -> Tuple[Optional[float], Optional[float]]:
    l2 = sorted((s for s in samples if s.entity.kind == Kind.L2ARC and not s.since_boot and "hits" in s.metrics),
                key=lambda s: s.ts)
    if len(l2) < 2:
        return None, None
    hits = l2[-1].metrics["hits"] - l2[0].metrics["hits"]
    misses = (l2[-1].metrics["misses"] - l2[0].metrics["misses"]) if all("misses" in s.metrics for s in
                                                                         (l2[0], l2[-1])) else None
    if hits < 0 or (misses is not None and misses < 0):
        return None, None  # a reboot/reset in the window
    return hits, misses


def vdev_perf(samples: Sequence[Sample]) -> Optional[VdevPerf]:
    """The window's vdev figures, or None without ``zpool iostat`` samples of any role."""
    rows = _Rows.of(samples)
    roles = _role_stats(rows)
    if not roles:
        return None
    hits, misses = _l2_window(samples)
    return VdevPerf(roles, _role_latency(rows), hits, misses, qdsweep.steps_from_samples(samples))


def step_windows(samples: Sequence[Sample], steps: Sequence[qdsweep.Step]
                 ) -> List[Dict[str, Optional[float]]]:
    """Per fio step, what the vdevs did meanwhile: reads/s per data disk and per cache device, log writes/s, and
    each role's latency (p50/p99) in the step's time window, beside fio's own percentiles."""
    out: List[Dict[str, Optional[float]]] = []
    for st in steps:
        if st.t0 is None or st.t1 is None:
            continue
        # a zpool iostat interval belongs to a step when it ends inside it (it then mostly covers it)
        inside = _Rows.of(s for s in samples if st.t0 < s.ts <= st.t1 + 0.5 and s.entity.kind != Kind.WORKLOAD)
        roles = _role_stats(inside)
        lat = _role_latency(inside)
        row: Dict[str, Optional[float]] = {"depth": st.depth, "fio_iops": st.iops,
                                           "fio_p50_ms": st.pct_ms.get("p50"), "fio_p99_ms": st.pct_ms.get("p99")}
        span = st.t1 - st.t0
        for role, rs in roles.items():
            if span > 0 and rs.devices:
                row[f"{role}_reads_per_device_s"] = rs.read_ops / span / rs.devices
                row[f"{role}_writes_per_device_s"] = rs.write_ops / span / rs.devices
        for d in lat:
            row[f"{d.role}_{d.op}_p50_ms"] = d.p50_ms
            row[f"{d.role}_{d.op}_p99_ms"] = d.p99_ms
            row[f"{d.role}_{d.op}_mean_ms"] = d.mean_ms
        out.append(row)
    return out
