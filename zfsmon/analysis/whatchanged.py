"""What changed: a chosen window against the window of the same length just before it.

Pure: samples of both windows in, a :class:`Changes` out (``zfsmon analyze --changed``). Every figure
is the mean of its per-interval values in each window:

* per device of a role (leaves and single-disk vdevs, as :mod:`zfsmon.analysis.vdevperf` counts them):
  reads/s, writes/s, read and write bandwidth, the average waits of ``zpool iostat -l`` and a trace
  script's p99 latencies;
* ARC and L2ARC hit % (from the counters, :func:`zfsmon.analysis.rates.derive_samples`);
* the workload: fio's IOPS and p99 per job and direction, pgbench's TPS and latency.

Rates and latencies are ranked by how far they moved, ``|ln((after + e) / (before + e))|`` with a small
floor ``e`` per unit (1 op/s, 64 KiB/s, 0.01 ms), so a figure going from 0 to 0.2 does not outrank one
that halved; hit ratios (percentages) move by points and rank by points / 25.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis.rates import derive_samples
from zfsmon.analysis.vdevperf import device_samples
from zfsmon.model import Kind, Sample

#: how many changes the text names
TOP = 8
#: a change smaller than this score is not reported (x1.2 for a rate)
MIN_SCORE = math.log(1.2)
_FLOOR = {"ops/s": 1.0, "B/s": 65536.0, "ms": 0.01, "IOPS": 1.0, "TPS": 1.0}
_DEVICE = (("read_ops", "reads/s", "ops/s", 1.0), ("write_ops", "writes/s", "ops/s", 1.0),
           ("read_bw", "read B/s", "B/s", 1.0), ("write_bw", "write B/s", "B/s", 1.0),
           ("total_wait_read", "read wait", "ms", 1e-6), ("total_wait_write", "write wait", "ms", 1e-6),
           ("read_lat_p99_ns", "read p99", "ms", 1e-6), ("write_lat_p99_ns", "write p99", "ms", 1e-6))


@dataclass
class Change:
    what: str  # "zf14acc/loop6 (data) reads/s", "ARC hit %", "fio qd64 read IOPS"
    unit: str
    before: float
    after: float
    group: str  # vdev | arc | workload

    @property
    def score(self) -> float:
        if self.unit == "%":
            return abs(self.after - self.before) / 25.0
        e = _FLOOR.get(self.unit, 1.0)
        return abs(math.log((max(self.after, 0.0) + e) / (max(self.before, 0.0) + e)))

    def text(self) -> str:
        if self.unit == "%":
            return f"{self.what} {self.before:.1f}% -> {self.after:.1f}% ({self.after - self.before:+.1f} points)"
        ratio = f"x{self.after / self.before:.3g}" if self.before else "from 0"
        return f"{self.what} {_v(self.before, self.unit)} -> {_v(self.after, self.unit)} ({ratio})"

    def as_dict(self) -> Dict[str, object]:
        return {"what": self.what, "unit": self.unit, "before": self.before, "after": self.after,
                "group": self.group, "score": self.score}


def _v(v: float, unit: str) -> str:
    if unit == "B/s":
        for u, size in (("GiB/s", 2 ** 30), ("MiB/s", 2 ** 20), ("KiB/s", 2 ** 10)):
            if abs(v) >= size:
                return f"{v / size:.1f} {u}"
        return f"{v:.0f} B/s"
    if unit == "ms":
        return f"{v * 1000:.0f} us" if v < 1 else f"{v:.1f} ms"
    return f"{v:,.1f} {unit}" if abs(v) < 10 else f"{v:,.0f} {unit}"


@dataclass
class Changes:
    before: Tuple[float, float]
    window: Tuple[float, float]
    changes: List[Change] = field(default_factory=list)  # ranked, largest first

    def moved(self) -> List[Change]:
        return [c for c in self.changes if c.score >= MIN_SCORE]

    def text(self) -> str:
        span = self.window[1] - self.window[0]
        moved = self.moved()
        head = f"What changed in the window ({span:.0f} s) against the {span:.0f} s before it"
        if not moved:
            return head + ": nothing moved by more than x1.2 (or 5 points of a hit ratio)."
        by = {g: sum(1 for c in moved if c.group == g) for g in ("vdev", "arc", "workload")}
        counts = ", ".join(f"{n} {g}" for g, n in by.items() if n)
        return (f"{head}: {len(moved)} figures moved ({counts}); most: "
                + "; ".join(c.text() for c in moved[:TOP]) + ".")

    def as_dict(self) -> Dict[str, object]:
        return {"before": list(self.before), "window": list(self.window),
                "changes": [c.as_dict() for c in self.moved()]}


def _means(samples: Sequence[Sample]) -> Dict[Tuple[str, str, str], float]:
    """(group, what, unit) -> mean per-interval value."""
    acc: Dict[Tuple[str, str, str], List[float]] = {}

    def add(key: Tuple[str, str, str], v: Optional[float]) -> None:
        if v is not None:
            acc.setdefault(key, []).append(float(v))

    iostat = [s for s in samples if s.entity.kind in (Kind.VDEV, Kind.LEAF) and not s.since_boot and s.interval]
    traced = [s for s in samples if s.entity.kind == Kind.TRACE]
    for s in device_samples(iostat, (Kind.VDEV, Kind.LEAF)) + device_samples(traced, (Kind.TRACE,)):
        e = s.entity
        who = f"{e.pool}/{e.name} ({e.role.value if e.role else '?'})"
        for metric, words, unit, k in _DEVICE:
            if metric in s.metrics and (s.entity.kind != Kind.TRACE or metric.endswith("_ns")):
                add(("vdev", f"{who} {words}", unit), s.metrics[metric] * k)
    derived = derive_samples(samples)
    for kind, words in ((Kind.ARC, "ARC hit"), (Kind.L2ARC, "L2ARC hit")):
        for d in derived.get(kind, []):
            add(("arc", words, "%"), d.metrics.get("hit_pct"))
    for s in samples:
        if s.entity.kind != Kind.WORKLOAD:
            continue
        jd = names.fio_job_direction(s.entity.name)
        if jd is not None:
            if s.metrics.get("ios"):
                add(("workload", f"fio {jd[0]} {jd[1]} IOPS", "IOPS"), s.metrics.get("iops"))
                add(("workload", f"fio {jd[0]} {jd[1]} p99", "ms"), s.metrics.get("clat_p99_ms"))
        elif s.entity.name in (names.PGBENCH, names.PGBENCH_RUN):
            add(("workload", "pgbench TPS", "TPS"), s.metrics.get("tps"))
            add(("workload", "pgbench latency", "ms"), s.metrics.get("latency_avg_ms"))
    return {k: sum(v) / len(v) for k, v in acc.items() if v}


def compare(samples: Sequence[Sample], start: float, end: float) -> Changes:
    """The window [start, end] against [start - (end - start), start): every figure present in both, ranked."""
    span = end - start
    lo = start - span
    before = [s for s in samples if lo <= s.ts < start]
    window = [s for s in samples if start <= s.ts <= end]
    a, b = _means(before), _means(window)
    out = [Change(what, unit, a[(g, what, unit)], b[(g, what, unit)], g) for (g, what, unit) in a
           if (g, what, unit) in b]
    out.sort(key=lambda c: -c.score)
    return Changes((lo, start), (start, end), out)
