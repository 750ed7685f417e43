"""A long window's readings folded to its grid step, so that a week of one-second readings fits in memory.

``analyze`` puts a window that would need more than ``findings.MAX_CELLS`` cells on a coarser grid (a week of
one-second readings: one-minute cells). Its analyses then see every reading only to average it into a cell, so
the readings are folded to that step as they are read: one reading per entity, source and step, not one Python
object per second (a week of a 64-leaf pool at 1 s is ~35 GiB of samples held whole). Per metric:

* a rate or level of an interval row (``zpool iostat``'s ops/s and B/s, queue lengths, pgbench's TPS): the mean
  weighted by each reading's interval, so operations in the step (rate x interval) add up exactly;
* a count per interval (``zpool iostat -w`` latency buckets, ``-r`` request sizes): the sum;
* a mean latency of reads or writes (``zpool iostat -l``): weighted by the reads or writes in each interval;
* a size (``alloc``, ``free``): the last;
* a reading with no interval (kstat counters and levels, /proc/diskstats, pg_stat_database): the step's last
  reading as it was (and the window's first); rates between two of them are exact over the step.

Left as they are: the first (since-import) report, readings that already cover the step or more (a pgbench
run's summary), fio's and trace rows (short runs, read as they are). The folded reading is stamped with the
step's last reading time and covers the sum of its intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from zfsmon import metrics, names
from zfsmon.metrics.latency import split_metric
from zfsmon.model import Kind, Sample

#: how a metric of an interval row is folded
MEAN, SUM, LAST, BY_READS, BY_WRITES = "mean", "sum", "last", "read_ops", "write_ops"


def rule(kind: Kind, name: str) -> str:
    """How metric ``name`` of an interval row of ``kind`` is folded (see the module's docstring)."""
    if split_metric(name) is not None or name.startswith("rq_"):
        return SUM
    spec = metrics.lookup(kind, name)
    if spec is None:
        return MEAN
    if spec.unit == "B":
        return LAST
    if spec.unit == "ns":
        return BY_READS if name.endswith("_read") else BY_WRITES if name.endswith("_write") else MEAN
    return MEAN


def _as_is(s: Sample, every: float) -> bool:
    """Readings handed on unfolded."""
    e = s.entity
    if s.since_boot or (s.interval is not None and s.interval >= every) or e.kind is Kind.TRACE:
        return True
    return e.kind is Kind.WORKLOAD and s.interval is not None and e.name != names.PGBENCH


@dataclass
class _Step:
    """One entity's interval rows of one source within one step."""

    index: int
    last: Sample
    covered: float = 0.0
    totals: Dict[str, float] = field(default_factory=dict)
    weights: Dict[str, float] = field(default_factory=dict)

    def add(self, s: Sample, rules: Dict[str, str]) -> None:
        iv = float(s.interval or 0.0)
        self.last = s
        self.covered += iv
        m = s.metrics
        for name, v in m.items():
            how = rules[name]
            if how == LAST:
                continue
            if how == SUM:
                w = 1.0
            elif how == MEAN:
                w = iv
            else:
                w = iv * float(m.get(how) or 0.0)
            self.totals[name] = self.totals.get(name, 0.0) + float(v) * w
            self.weights[name] = self.weights.get(name, 0.0) + w

    def sample(self, rules: Dict[str, str]) -> Sample:
        s = self.last
        out: Dict[str, float] = {}
        for name, v in s.metrics.items():
            how = rules[name]
            if how == LAST:
                out[name] = v
            elif how == SUM:
                out[name] = self.totals[name]
            else:
                w = self.weights.get(name, 0.0)
                out[name] = self.totals[name] / w if w else 0.0
        return Sample(s.ts, s.entity, out, interval=self.covered, source=s.source)


def coarsen(samples: Iterable[Sample], every: float) -> List[Sample]:
    """``samples`` (in recording order) folded to steps of ``every`` seconds, sorted by time (stable)."""
    if every <= 0:
        raise ValueError("every must be positive")
    out: List[Tuple[float, int, Sample]] = []
    seq = 0
    rows: Dict[Tuple[str, str], _Step] = {}
    snaps: Dict[Tuple[str, str], Tuple[int, Sample, bool]] = {}  # the step's last reading, and whether it is out
    plans: Dict[Tuple[Kind, Tuple[str, ...]], Dict[str, str]] = {}

    def emit(s: Sample) -> None:
        nonlocal seq
        out.append((s.ts, seq, s))
        seq += 1

    def rules_of(s: Sample) -> Dict[str, str]:
        key = (s.entity.kind, tuple(s.metrics))
        got = plans.get(key)
        if got is None:
            got = plans[key] = {n: rule(s.entity.kind, n) for n in key[1]}
        return got

    for s in samples:
        if _as_is(s, every):
            emit(s)
            continue
        key = (s.entity.key, s.source)
        index = int(s.ts // every)
        if not s.interval:
            held: Optional[Tuple[int, Sample, bool]] = snaps.get(key)
            if held is None:  # the window's first reading too: a counter's increase over the window starts there
                emit(s)
                snaps[key] = (index, s, True)
                continue
            if held[0] != index and not held[2]:
                emit(held[1])
            snaps[key] = (index, s, False)
            continue
        rules = rules_of(s)
        step = rows.get(key)
        if step is not None and (step.index != index or tuple(step.last.metrics) != tuple(s.metrics)):
            emit(step.sample(rules_of(step.last)))
            step = None
        if step is None:
            step = rows[key] = _Step(index, s)
        step.add(s, rules)
    for step in rows.values():
        emit(step.sample(rules_of(step.last)))
    for _i, s, done in snaps.values():
        if not done:
            emit(s)
    out.sort(key=lambda x: (x[0], x[1]))
    return [s for _t, _q, s in out]
