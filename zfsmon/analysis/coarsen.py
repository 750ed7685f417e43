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

The recording is read a block of columns at a time (:meth:`zfsmon.store.Recording.blocks`), as ``export
--every`` reads it: a step's sums are taken over slices of the columns, and a Sample is made only for what is
kept, never one per reading.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from zfsmon import metrics, names
from zfsmon.metrics.latency import split_metric
from zfsmon.model import Column, Kind, Sample, SampleBlock, column_item

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


Row = Tuple[SampleBlock, int]  # a reading: its block and index
#: a layout's fold rules and, per column, its weighting column (or None)
_Plan = Tuple[Tuple[str, ...], Tuple[Optional[int], ...]]
#: what becomes of a reading: kept if it is a step's last (or the window's first), summed into its step, or kept
SNAPSHOT, FOLDED, AS_IS = 0, 1, 2


def _as_is(kind: Kind, name: str, interval: Optional[float], every: float) -> bool:
    """Whether a reading with an interval is handed on unfolded (since-import reports and trace rows always are)."""
    if kind is Kind.TRACE or (interval is not None and interval >= every):
        return True
    return kind is Kind.WORKLOAD and interval is not None and name != names.PGBENCH


class _Step:
    """One stream's interval rows within one step: sums over slices of its columns. (A plain class with slots: a
    long window makes one per stream and step, a million for 8 hours at 2 s steps.)"""

    __slots__ = ("index", "names", "rules", "by", "last", "covered", "totals", "weights")

    def __init__(self, index: int, names: Tuple[str, ...], rules: Tuple[str, ...], by: Tuple[Optional[int], ...],
                 last: Row) -> None:
        self.index = index
        self.names = names
        self.rules = rules
        self.by = by  # for a wait averaged per read or write: the column of those operations
        self.last = last
        self.covered = 0.0
        self.totals = [0.0] * len(names)
        self.weights = [0.0] * len(names)

    def add(self, cols: Sequence[Column], ivs: Sequence[Optional[float]], i: int, j: int,
            row: Row) -> None:
        self.last = row
        part_iv = [float(v or 0.0) for v in ivs[i:j]]
        span = sum(part_iv)
        self.covered += span
        same = part_iv.count(part_iv[0]) == len(part_iv)
        for k, how in enumerate(self.rules):
            if how is LAST:
                continue
            part = cols[k][i:j]
            if how is SUM:
                self.totals[k] += float(sum(part))
                self.weights[k] += j - i
            elif how is MEAN:
                self.totals[k] += part_iv[0] * float(sum(part)) if same else sum(map(float.__mul__, map(float, part),
                                                                                      part_iv))
                self.weights[k] += span
            else:
                by = self.by[k]
                ops = [float(x or 0.0) for x in cols[by][i:j]] if by is not None else [0.0] * (j - i)
                w = [x * iv for x, iv in zip(ops, part_iv)]
                self.totals[k] += sum(float(v) * x for v, x in zip(part, w))
                self.weights[k] += sum(w)

    def sample(self) -> Sample:
        sb, i = self.last  # a block of this step's layout: its columns are the step's names
        out: Dict[str, float] = {}
        for k, (name, how) in enumerate(zip(self.names, self.rules)):
            if how is LAST:
                out[name] = column_item(sb.cols[k], i)
            elif how is SUM:
                out[name] = self.totals[k]
            else:
                out[name] = self.totals[k] / self.weights[k] if self.weights[k] else 0.0
        return Sample(sb.ts[i], sb.entity_at(sb.ts[i]), out, interval=self.covered, source=sb.source)


class _Fold:
    """The fold's state across blocks: one open step per stream, the held last reading of each snapshot stream."""

    def __init__(self, every: float) -> None:
        if every <= 0:
            raise ValueError("every must be positive")
        self.every = every
        self.out: List[Tuple[float, int, Sample]] = []
        self.steps: Dict[Tuple[str, str], _Step] = {}
        self.snaps: Dict[Tuple[str, str], Tuple[int, Row, bool]] = {}  # (step, its last reading, whether out)
        self.plans: Dict[Tuple[Kind, Tuple[str, ...]], _Plan] = {}

    def _plan(self, sb: SampleBlock) -> _Plan:
        """A layout's fold rules and weighting columns: once per kind and layout."""
        kind = sb.entity.kind
        got = self.plans.get((kind, sb.names))
        if got is None:
            rules = tuple(rule(kind, n) for n in sb.names)
            at = {n: k for k, n in enumerate(sb.names)}
            by = tuple(at.get(how) if how is BY_READS or how is BY_WRITES else None for how in rules)
            got = self.plans[(kind, sb.names)] = (rules, by)
        return got

    def _emit(self, row: Row) -> None:
        sb, i = row
        self._put(sb.sample(i))

    def _put(self, s: Sample) -> None:
        self.out.append((s.ts, len(self.out), s))

    def add(self, sb: SampleBlock) -> None:
        n = len(sb.ts)
        ivs = sb.intervals if sb.intervals is not None else [None] * n
        ent = sb.entity
        if sb.since_boot or ent.kind is Kind.TRACE:
            for i in range(n):
                self._emit((sb, i))
            return
        every = self.every
        ts = sb.ts
        key = (ent.key, sb.source)
        plan = self._plan(sb)
        mode = self._block_mode(ent.kind, ent.name, ivs)
        if mode is not None and all(map(operator.le, ts, ts[1:])):  # one mode, times in order: cut by bisection
            steps = _steps(ts, every)
            if mode == FOLDED and all(isinstance(c, np.ndarray) for c, how in zip(sb.cols, plan[0]) if how is not LAST):
                self._array_rows(sb, key, plan, steps, ivs)
                return
            for b, i, j in steps:
                self._run(sb, key, plan, mode, b, i, j, ivs)
            return
        modes = [self._mode(ent.kind, ent.name, iv) for iv in ivs]
        i = 0
        while i < n:  # a block of mixed modes, or times out of order (a clock step): runs of one step and mode
            b = int(ts[i] // every)
            j = i + 1
            while j < n and int(ts[j] // every) == b and modes[j] == modes[i]:
                j += 1
            self._run(sb, key, plan, modes[i], b, i, j, ivs)
            i = j

    def _mode(self, kind: Kind, name: str, iv: Optional[float]) -> int:
        return SNAPSHOT if iv is None else AS_IS if _as_is(kind, name, iv, self.every) else FOLDED

    def _block_mode(self, kind: Kind, name: str, ivs: Sequence[Optional[float]]) -> Optional[int]:
        """The mode every reading of a block has, or None if they differ (as_is is monotonic in the interval)."""
        if ivs.count(None) == len(ivs):
            return SNAPSHOT
        if None in ivs:
            return None
        lo, hi = self._mode(kind, name, min(ivs)), self._mode(kind, name, max(ivs))  # type: ignore[type-var]
        return lo if lo == hi else None

    def _run(self, sb: SampleBlock, key: Tuple[str, str], plan: _Plan, mode: int, b: int, i: int, j: int,
             ivs: Sequence[Optional[float]]) -> None:
        """Readings i..j of ``sb``, all in step ``b`` and of one ``mode``; ``key``: its stream's (entity key,
        source), ``plan``: its layout's (asked once per block, not per step)."""
        if mode == FOLDED:
            self._interval_rows(sb, key, plan, b, i, j, ivs)
        elif mode == SNAPSHOT:
            self._snapshots(sb, key, b, i, j)
        else:
            for k in range(i, j):
                self._emit((sb, k))

    def _snapshots(self, sb: SampleBlock, key: Tuple[str, str], b: int, i: int, j: int) -> None:
        held = self.snaps.get(key)
        if held is None:  # the window's first reading too: a counter's increase over the window starts there
            self._emit((sb, i))
            held = (b, (sb, i), True)
            i += 1
        if i < j:
            if held[0] != b and not held[2]:
                self._emit(held[1])
            held = (b, (sb, j - 1), False)
        self.snaps[key] = held

    def _step(self, sb: SampleBlock, key: Tuple[str, str], plan: _Plan, b: int, i: int) -> _Step:
        """The stream's open step for step ``b`` of ``sb``'s layout: the one open, or a new one (the one open, of
        another step or layout, is handed on)."""
        step = self.steps.get(key)
        if step is not None and (step.index != b or step.names != sb.names):
            self._put(step.sample())
            step = None
        if step is None:
            step = self.steps[key] = _Step(b, sb.names, plan[0], plan[1], (sb, i))
        return step

    def _interval_rows(self, sb: SampleBlock, key: Tuple[str, str], plan: _Plan, b: int, i: int, j: int,
                       ivs: Sequence[Optional[float]]) -> None:
        self._step(sb, key, plan, b, i).add(sb.cols, ivs, i, j, (sb, j - 1))

    def _array_rows(self, sb: SampleBlock, key: Tuple[str, str], plan: _Plan, steps: List[Tuple[int, int, int]],
                    ivs: Sequence[Optional[float]]) -> None:
        """:meth:`_interval_rows` for each step of a block whose folded columns are numpy arrays
        (:mod:`zfsmon.store.arrays`): every step's sums from one ``numpy.add.reduceat`` per rule, then added to the
        steps as lists (the sums agree with the slices' to float rounding)."""
        rules, by = plan
        starts = [i for _b, i, _j in steps]
        iv = np.array(ivs, dtype=np.float64) if None not in ivs else np.array([float(v or 0.0) for v in ivs])
        covered = np.add.reduceat(iv, starts)
        totals = np.zeros((len(rules), len(steps)))
        weights = np.zeros((len(rules), len(steps)))
        for how in (SUM, MEAN):
            ks = [k for k, r in enumerate(rules) if r is how]
            if ks:
                m = np.vstack([sb.cols[k] for k in ks]).astype(np.float64)
                totals[ks] = np.add.reduceat(m if how is SUM else m * iv, starts, axis=1)
                weights[ks] = np.diff(starts + [len(iv)]) if how is SUM else covered
        for k, how in enumerate(rules):
            if how is BY_READS or how is BY_WRITES:
                ops = by[k]
                w = iv * sb.cols[ops] if ops is not None else np.zeros_like(iv)
                totals[k] = np.add.reduceat(sb.cols[k] * w, starts)
                weights[k] = np.add.reduceat(w, starts)
        for (b, i, j), span, tot, wt in zip(steps, covered.tolist(), totals.T.tolist(), weights.T.tolist()):
            step = self._step(sb, key, plan, b, i)
            step.last = (sb, j - 1)
            step.covered += span
            step.totals = list(map(operator.add, step.totals, tot))
            step.weights = list(map(operator.add, step.weights, wt))

    def finish(self) -> List[Sample]:
        for step in self.steps.values():
            self._put(step.sample())
        for _b, row, done in self.snaps.values():
            if not done:
                self._emit(row)
        self.out.sort(key=lambda x: (x[0], x[1]))
        return [s for _t, _q, s in self.out]


def _steps(ts: Sequence[float], every: float) -> List[Tuple[int, int, int]]:
    """Times in order cut into steps of ``every`` seconds: (step index, first reading, one past its last)."""
    n = len(ts)
    out = []
    i = 0
    while i < n:
        b = int(ts[i] // every)
        j = max(i + 1, bisect_left(ts, (b + 1) * every, i))
        while j > i + 1 and int(ts[j - 1] // every) != b:  # float rounding at the step's edge
            j -= 1
        while j < n and int(ts[j] // every) == b:
            j += 1
        out.append((b, i, j))
        i = j
    return out


def coarsen_blocks(blocks: Iterable[Sequence[SampleBlock]], every: float) -> List[Sample]:
    """A recording's column blocks (in time order, as :meth:`zfsmon.store.Recording.blocks` gives them, with the
    metrics the caller reads) folded to steps of ``every`` seconds, sorted by time (stable)."""
    fold = _Fold(every)
    for group in blocks:
        for sb in group:
            fold.add(sb)
    return fold.finish()


def coarsen(samples: Iterable[Sample], every: float) -> List[Sample]:
    """``samples`` (in recording order) folded to steps of ``every`` seconds, sorted by time (stable)."""
    return coarsen_blocks(([SampleBlock.of(s)] for s in samples), every)
