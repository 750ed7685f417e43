"""A queue-depth sweep (fio at 1, 2, 4, ... outstanding I/Os) as a finding: IOPS and latency per depth, the knee, Little.

Pure: recorded fio samples in (``workload:fio:<job>:<direction>``, from
:mod:`zfsmon.sources.fio.json_output`), a :class:`Sweep` out.

* A **step** is one fio job (clones ``<job>.0``, ``<job>.1``... of one job are
  one step); its depth is ``iodepth x numjobs``, the I/Os it keeps in flight.
  When the recording holds fio's final report for the job (``fio-run:``
  entities), the step's figures are fio's own over the whole run: its IOPS the
  sum of fio's IOPS of its directions and clones, its I/Os, mean latency and
  max fio's, its percentiles per direction fio's printed ones (clones: the
  I/O-weighted median of theirs). Without one (fio killed, the window cuts the
  run), they come from the intervals: IOPS is all its I/Os (every direction)
  over its run time; mean latency is weighted by I/Os; percentiles are, per
  direction, the I/O-weighted median of the intervals' percentiles. Either
  way the step's p99 is the worst direction's; its max is the largest of all.
* A **sweep** is the steps of a recording with at least three different
  depths, in order of depth (several steps of one depth are combined).
* The **knee** is the smallest depth whose IOPS reaches :data:`KNEE_SHARE` of
  the sweep's highest IOPS: past it, more outstanding I/Os add little
  throughput and only queue, so the latency tail grows. There is no knee when
  the deepest step is the first to get there (IOPS still rising).
* **Little's law**: I/Os in flight = IOPS x mean latency. Per step, that
  product is set against the depth; a ratio well below 1 means fio did not
  keep that many I/Os outstanding all the time (time spent between I/Os: a
  CPU-bound client, think time, a rate limit). Buffered libaio (no O_DIRECT)
  still fits: fio counts the queued I/Os' wait, but IOPS stays flat from
  depth 1 (tests/data/fio: the knee is at depth 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from zfsmon.model import Kind, Sample
from zfsmon.names import FIO_RUN_PREFIX, fio_job_direction

#: the knee: the first depth reaching this share of the sweep's highest IOPS
KNEE_SHARE = 0.9
#: Little's law holds when IOPS x mean latency is within this factor of the depth
LITTLE_TOLERANCE = 0.2
#: a sweep needs this many different depths
MIN_DEPTHS = 3
PCTS = ("p50", "p90", "p99", "p999")
_CLONE = re.compile(r"^(?P<job>.+)\.(?P<k>\d+)$")


@dataclass
class Step:
    """One depth of the sweep: throughput, latency (ms) and the Little's-law product."""

    depth: float
    jobs: List[str]
    iops: float
    ios: float
    seconds: float
    lat_mean_ms: Optional[float]
    pct_ms: Dict[str, float] = field(default_factory=dict)  # p50..p999: the worst direction's
    by_direction: Dict[str, Dict[str, float]] = field(default_factory=dict)
    max_ms: Optional[float] = None
    t0: Optional[float] = None  # when the step's first interval began and its last ended (fio's clock)
    t1: Optional[float] = None
    by_ios: Dict[str, float] = field(default_factory=dict)  # I/Os per direction

    @property
    def in_flight(self) -> Optional[float]:
        """Little's law: IOPS x mean latency, the I/Os outstanding on average."""
        return None if self.lat_mean_ms is None else self.iops * self.lat_mean_ms / 1000.0

    @property
    def little_ratio(self) -> Optional[float]:
        v = self.in_flight
        return None if v is None or self.depth <= 0 else v / self.depth

    def as_dict(self) -> Dict[str, object]:
        return {"depth": self.depth, "jobs": self.jobs, "iops": self.iops, "ios": self.ios, "seconds": self.seconds,
                "lat_mean_ms": self.lat_mean_ms, **{f"clat_{k}_ms": v for k, v in self.pct_ms.items()},
                "clat_max_ms": self.max_ms, "in_flight": self.in_flight, "little_ratio": self.little_ratio,
                "by_direction": self.by_direction}


@dataclass
class Sweep:
    steps: List[Step]
    knee: Optional[Step]
    peak: Step

    @property
    def past_knee(self) -> List[Step]:
        if self.knee is None:
            return []
        return [s for s in self.steps if s.depth > self.knee.depth]

    def little_misfits(self) -> List[Step]:
        return [s for s in self.steps if s.little_ratio is not None and abs(s.little_ratio - 1) > LITTLE_TOLERANCE]

    def as_dict(self) -> Dict[str, object]:
        return {"steps": [s.as_dict() for s in self.steps], "knee_depth": self.knee.depth if self.knee else None,
                "peak_iops": self.peak.iops, "peak_depth": self.peak.depth,
                "little_misfit_depths": [s.depth for s in self.little_misfits()]}

    def text(self) -> List[str]:
        """The finding in words: the knee (or its absence), the tail past it, and Little's law."""
        first, last = self.steps[0], self.steps[-1]
        depths = ", ".join(f"{s.depth:g}" for s in self.steps)
        lines = [f"fio queue-depth sweep over {len(self.steps)} depths ({depths}): IOPS {first.iops:,.0f} at depth "
                 f"{first.depth:g} to a peak of {self.peak.iops:,.0f} at depth {self.peak.depth:g}; p99 "
                 f"{_ms(first.pct_ms.get('p99'))} to {_ms(last.pct_ms.get('p99'))}."]
        if self.knee is None:
            lines.append(f"No knee within the sweep: IOPS was still rising at depth {last.depth:g} (it first reached "
                         f"{KNEE_SHARE:.0%} of its peak there); sweep deeper to find the ceiling.")
        else:
            k = self.knee
            text = (f"Knee at depth {k.depth:g}: {k.iops:,.0f} IOPS, {k.iops / self.peak.iops:.0%} of the peak, "
                    f"p99 {_ms(k.pct_ms.get('p99'))}")
            if self.past_knee:
                gain = last.iops / k.iops - 1
                p99k, p99l = k.pct_ms.get("p99"), last.pct_ms.get("p99")
                grew = f"p99 x{p99l / p99k:.1f} ({_ms(p99k)} -> {_ms(p99l)})" if p99k and p99l else "p99 unknown"
                text += (f"; beyond it to depth {last.depth:g} IOPS changed {gain:+.0%} while {grew}: "
                         f"more outstanding I/Os only queue.")
            else:
                text += "."
            lines.append(text)
        checked = [s for s in self.steps if s.little_ratio is not None]
        if checked:
            misfits = self.little_misfits()
            pairs = ", ".join(f"{s.depth:g}->{s.in_flight:.1f}" for s in checked)
            if not misfits:
                lines.append(f"Little's law holds (IOPS x mean latency = I/Os in flight, within "
                             f"{LITTLE_TOLERANCE:.0%} of the depth at every step: {pairs}).")
            else:
                bad = ", ".join(f"depth {s.depth:g}: {s.in_flight:.1f} in flight" for s in misfits)
                lines.append(f"Little's law does not fit at {len(misfits)} of {len(checked)} steps ({bad}): fio did "
                             "not keep that many I/Os outstanding all the time (time between I/Os: a CPU-bound "
                             "client, think time, a rate limit), so those latencies are not a full queue's.")
        return lines


def _ms(v: Optional[float]) -> str:
    if v is None:
        return "?"
    return f"{v * 1000:.0f} us" if v < 1 else f"{v:.2f} ms"


def _weighted_median(pairs: List[Tuple[float, float]]) -> Optional[float]:
    pairs = sorted(p for p in pairs if p[1] > 0)
    total = sum(w for _, w in pairs)
    if total <= 0:
        return None
    run = 0.0
    for value, weight in pairs:
        run += weight
        if run >= total / 2:
            return value
    return pairs[-1][0]


@dataclass
class _Acc:
    ios: float = 0.0
    seconds: Dict[str, float] = field(default_factory=dict)  # per entity: clones run side by side
    lat_sum: float = 0.0
    lat_ios: float = 0.0
    depth: float = 0.0
    pcts: Dict[Tuple[str, str], List[Tuple[float, float]]] = field(default_factory=dict)
    dir_ios: Dict[str, float] = field(default_factory=dict)
    max_ms: Optional[float] = None
    jobs: List[str] = field(default_factory=list)
    t0: Optional[float] = None
    t1: Optional[float] = None
    run_iops: float = 0.0  # fio's final report: the sum of its IOPS over the job's directions and clones
    run_seconds: Dict[str, float] = field(default_factory=dict)


def _add(acc: _Acc, job: str, direction: str, s: Sample, ios: float, seconds: float) -> None:
    """One interval, or one final report's job direction, into its step's sums."""
    if job not in acc.jobs:
        acc.jobs.append(job)
    acc.depth = s.metrics.get("iodepth", 1.0) * s.metrics.get("numjobs", 1.0)
    acc.ios += ios
    acc.dir_ios[direction] = acc.dir_ios.get(direction, 0.0) + ios
    key = f"{job}:{direction}"
    acc.seconds[key] = acc.seconds.get(key, 0.0) + seconds
    lat = s.metrics.get("lat_mean_ms", s.metrics.get("clat_mean_ms"))
    if lat is not None:
        acc.lat_sum += lat * ios
        acc.lat_ios += ios
    for p in PCTS:
        v = s.metrics.get(f"clat_{p}_ms")
        if v is not None:
            acc.pcts.setdefault((direction, p), []).append((v, ios))
    mx = s.metrics.get("clat_max_ms")
    if mx is not None:
        acc.max_ms = mx if acc.max_ms is None else max(acc.max_ms, mx)


def steps_from_samples(samples: Iterable[Sample]) -> List[Step]:
    """Every fio job of the samples as a step, in order of depth (steps of one depth combined)."""
    by_job: Dict[str, _Acc] = {}
    runs: Dict[str, _Acc] = {}  # the same sums from fio's final reports, which win where they exist
    for s in samples:
        if s.entity.kind != Kind.WORKLOAD:
            continue
        jd = fio_job_direction(s.entity.name)
        run = jd is None
        if run:
            jd = fio_job_direction(s.entity.name, FIO_RUN_PREFIX)
        if jd is None:
            continue
        job, direction = jd
        m = _CLONE.match(job)
        base = m.group("job") if m else job
        ios = s.metrics.get("ios", 0.0)
        if ios <= 0 or not s.interval:
            continue
        acc = (runs if run else by_job).setdefault(base, _Acc())
        start = s.ts - s.interval
        acc.t0 = start if acc.t0 is None else min(acc.t0, start)
        acc.t1 = s.ts if acc.t1 is None else max(acc.t1, s.ts)
        _add(acc, job, direction, s, ios, s.interval)
        if run:
            acc.run_iops += s.metrics.get("iops", 0.0)
    for base, acc in runs.items():
        seen = by_job.get(base)
        if seen is not None:  # the intervals' time span: where the step ran on the recording's clock
            acc.t0, acc.t1 = seen.t0, seen.t1
        by_job[base] = acc
    by_depth: Dict[float, List[_Acc]] = {}
    for acc in by_job.values():
        by_depth.setdefault(acc.depth, []).append(acc)
    return [_step(depth, accs) for depth, accs in sorted(by_depth.items())]


def _step(depth: float, accs: List[_Acc]) -> Step:
    ios = sum(a.ios for a in accs)
    # a job's run time: its directions and clones overlap, so the longest of them; jobs of one depth ran apart
    seconds = sum(max(a.seconds.values()) for a in accs)
    lat_ios = sum(a.lat_ios for a in accs)
    by_dir: Dict[str, Dict[str, float]] = {}
    for a in accs:
        for direction, p in a.pcts:
            by_dir.setdefault(direction, {}).setdefault(p, 0.0)
    for direction, values in by_dir.items():
        for p in list(values):
            v = _weighted_median([pair for a in accs for pair in a.pcts.get((direction, p), [])])
            if v is None:
                del values[p]
            else:
                values[p] = v
    worst = {p: max(d[p] for d in by_dir.values() if p in d) for p in PCTS if any(p in d for d in by_dir.values())}
    maxes = [a.max_ms for a in accs if a.max_ms is not None]
    t0s, t1s = [a.t0 for a in accs if a.t0 is not None], [a.t1 for a in accs if a.t1 is not None]
    dir_ios: Dict[str, float] = {}
    for a in accs:
        for d, n in a.dir_ios.items():
            dir_ios[d] = dir_ios.get(d, 0.0) + n
    if len(accs) == 1 and accs[0].run_iops > 0:
        iops = accs[0].run_iops  # fio's own
    else:  # jobs of one depth ran one after the other: their I/Os over their time (fio's when it reported)
        spent = sum(a.ios / a.run_iops if a.run_iops > 0 else max(a.seconds.values()) for a in accs)
        iops = ios / spent if spent else 0.0
    return Step(depth=depth, jobs=[j for a in accs for j in a.jobs], iops=iops, ios=ios,
                seconds=seconds, lat_mean_ms=sum(a.lat_sum for a in accs) / lat_ios if lat_ios else None,
                pct_ms=worst, by_direction=by_dir, max_ms=max(maxes) if maxes else None,
                t0=min(t0s) if t0s else None, t1=max(t1s) if t1s else None, by_ios=dir_ios)


def sweep(samples: Iterable[Sample]) -> Optional[Sweep]:
    """The sweep in the samples, or None when they hold fewer than :data:`MIN_DEPTHS` depths of fio."""
    steps = steps_from_samples(samples)
    if len(steps) < MIN_DEPTHS:
        return None
    peak = max(steps, key=lambda s: s.iops)
    first = next(s for s in steps if s.iops >= KNEE_SHARE * peak.iops)
    knee = None if first is steps[-1] else first
    return Sweep(steps=steps, knee=knee, peak=peak)
