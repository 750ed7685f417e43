"""Goose eggs over a window of recorded samples: ``zfsmon analyze``, ``zfsmon report`` and the dashboard's findings
all ask :func:`summarize_window`, so one window gets one answer.

Every ZFS reporting interval of a leaf is compared with what its device counted over that same stretch of time
(readings of the two layers are taken at different moments, so the device's numbers are weighted by how much of
the leaf's interval they cover). No grid is laid over the window: the leaves' own reporting intervals are the
cells, whatever step or window start the caller's other analysis uses. Each interval is decided by
:mod:`zfsmon.analysis.goose`'s rules. A device's counters are taken column-wise with numpy (a window holds tens
of thousands of readings): that is why this is not part of :mod:`~zfsmon.analysis.goose`, which ``zfsmon iostat``
imports and which must not import numpy.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from zfsmon import metrics
from zfsmon.analysis import goose
from zfsmon.analysis.rates import Deriver
from zfsmon.model import Kind, Sample

#: a device's readings must cover at least this share of a leaf's interval to be compared with it
MIN_COVER = 0.5


def _interval_row(values: Mapping[str, float]) -> bool:
    """A device's interval row (illumos ``iostat``: ``read_ops``/``write_ops`` over its interval), not counters."""
    r, w = goose.OPS_PAIRS[0]
    return r in values or w in values


class Span(NamedTuple):
    """A device's ops/s over (start, end]: one interval row, or the rate between two counter readings (a tuple:
    a window makes one per device and reading)."""

    start: float
    end: float
    ops: float


def device_spans(samples: Iterable[Sample]) -> Dict[str, List[Span]]:
    """Device name -> its ops/s per reading interval, in time order.

    Interval rows (``read_ops``/``write_ops``: illumos ``iostat``) describe the
    ``interval`` before their time (or the gap since the previous row); counters
    (``reads``/``writes``: ``/proc/diskstats``) give a rate between two readings,
    through :class:`~zfsmon.analysis.rates.Deriver` (a reset starts anew).
    A device with interval rows is read from those.

    A device whose readings are all counters of one stream and layout (the live diskstats collector's) is taken
    column-wise (:func:`column_deltas`): the same spans, without a rate dict per reading.
    """
    devs = sorted((s for s in samples if s.entity.kind == Kind.DEVICE and not s.since_boot), key=lambda s: s.ts)
    at: Dict[str, List[int]] = {}  # each device's readings: their places in ``devs``
    for i, s in enumerate(devs):
        at.setdefault(s.entity.name, []).append(i)
    # (the place of the reading that gave a device its first span, the device, its spans): the mapping's order is
    # the one reading every device's readings in turn gives
    rows: List[Tuple[int, str, List[Span]]] = []
    counted: List[Tuple[int, str, List[Span]]] = []
    for name, places in at.items():
        mine = [devs[i] for i in places]
        got = _counter_spans(mine)
        if got is not None:
            first, spans = got
            if spans:
                counted.append((places[first], name, spans))
            continue
        for out, (first, spans) in zip((rows, counted), _spans_by_reading(mine)):
            if spans:
                out.append((places[first], name, spans))
    return {**{name: spans for _i, name, spans in sorted(counted)},
            **{name: spans for _i, name, spans in sorted(rows)}}


def column_deltas(ts: np.ndarray, values: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :meth:`~zfsmon.analysis.rates.RateDeriver.update` gives reading by reading, for a run of readings of one
    stream that all have the same counters (``values``: a row per reading, a column per counter, as floats), taken
    column-wise: a window's tens of thousands of device readings cost a few numpy calls a stream, not a dict per
    reading. (Here, not in :mod:`~zfsmon.analysis.rates`: the recorder's sampler imports that module, and the
    recorder does not import numpy.)

    For each reading after the first: the seconds since the one before, the counters' deltas, and whether
    ``update`` gives them (time moved on and no counter went backwards; after a reset the reading is the new
    baseline, as there). The arithmetic is ``update``'s, so the numbers are the same floats."""
    elapsed = np.diff(ts)
    deltas = np.diff(values, axis=0)
    return elapsed, deltas, (elapsed > 0) & ~(deltas < 0).any(axis=1)


def _spans_by_reading(mine: Sequence[Sample]) -> Tuple[Tuple[int, List[Span]], Tuple[int, List[Span]]]:
    """One device's readings (in time order) one by one: (the reading that gave the first span, the spans) from its
    interval rows, and the same from its counters."""
    rows: List[Span] = []
    counted: List[Span] = []
    first = [-1, -1]
    rates = Deriver()
    prev: Optional[float] = None
    for k, s in enumerate(mine):
        before, prev = prev, s.ts
        if _interval_row(s.metrics):
            span = s.interval or (s.ts - before if before is not None else 0.0)
            if span > 0:
                rows.append(Span(s.ts - span, s.ts, goose.device_ops_per_s(s.metrics) or 0.0))
                first[0] = k if first[0] < 0 else first[0]
            continue
        d, _events = rates.update(s)
        ops = goose.device_ops_per_s(d.rates) if d is not None else None
        if d is not None and ops is not None:
            counted.append(Span(s.ts - d.elapsed, s.ts, ops))
            first[1] = k if first[1] < 0 else first[1]
    return (first[0], rows), (first[1], counted)


def _counter_spans(mine: Sequence[Sample]) -> Optional[Tuple[int, List[Span]]]:
    """:func:`_spans_by_reading`'s counter spans of one device, column-wise, when all its readings are counters of
    one entity, source and layout; None otherwise."""
    s0 = mine[0]
    key, source, layout = s0.entity.key, s0.source, tuple(s0.metrics)
    if _interval_row(s0.metrics) or any(
            s.source != source or s.entity.key != key for s in mine) or len({tuple(s.metrics) for s in mine}) > 1:
        return None
    names = metrics.counter_names(Kind.DEVICE, layout)
    if len(mine) < 2 or not any(n in names for n in goose.OPS_PAIRS[1]):
        return 0, []
    try:  # every value of the layout, in its order (a C call a reading), then the counters' columns
        values = np.array([list(s.metrics.values()) for s in mine], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    ts = np.array([s.ts for s in mine], dtype=np.float64)
    elapsed, deltas, ok = column_deltas(ts, values[:, [layout.index(n) for n in names]])
    keep = np.flatnonzero(ok)
    if not len(keep):
        return 0, []
    elapsed, deltas, ends = elapsed[keep], deltas[keep], ts[1:][keep]
    # device_ops_per_s of update()'s rates: reads/s plus writes/s, one missing counted as 0.0
    r, w = (deltas[:, names.index(n)] / elapsed if n in names else np.zeros_like(elapsed)
            for n in goose.OPS_PAIRS[1])
    spans = [Span(a, b, c) for a, b, c in zip((ends - elapsed).tolist(), ends.tolist(), (r + w).tolist())]
    return int(keep[0]) + 1, spans


def ops_over(spans: Sequence[Span], ends: Sequence[float], start: float, end: float) -> Optional[float]:
    """Mean ops/s of a device over (start, end], each of its spans weighted by its overlap; None if its
    readings cover less than :data:`MIN_COVER` of it. ``ends``: the spans' end times (for bisection)."""
    covered = total = 0.0
    for i in range(bisect.bisect_right(ends, start), len(spans)):
        sp = spans[i]
        if sp.start >= end:
            break
        part = min(end, sp.end) - max(start, sp.start)
        if part > 0:
            covered += part
            total += sp.ops * part
    if end <= start or covered < MIN_COVER * (end - start):
        return None
    return total / covered


def leaf_intervals(samples: Iterable[Sample]) -> Dict[Tuple[float, float], Dict[str, float]]:
    """(start, end) of each ZFS report -> device row name -> ops/s in it (rows of one name are summed).

    An interval is what the row's ``interval`` says it covers (else the gap since
    that row's previous report); the since-import first report is no interval.
    """
    out: Dict[Tuple[float, float], Dict[str, float]] = {}
    last: Dict[str, float] = {}
    for s in sorted((s for s in samples if goose.is_device_row(s.entity)), key=lambda s: s.ts):
        key = s.entity.key
        prev, last[key] = last.get(key), s.ts
        ops = goose.device_ops_per_s(s.metrics)
        if s.since_boot or ops is None:
            continue
        span = s.interval or (s.ts - prev if prev is not None else 0.0)
        if span > 0:
            report = out.setdefault((s.ts - span, s.ts), {})
            report[s.entity.name] = report.get(s.entity.name, 0.0) + ops
    return out


@dataclass
class WindowVerdicts:
    """Goose-egg verdicts over a window: per leaf, how many of its reporting intervals got each verdict."""

    per_leaf: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: per leaf, its busiest goose-egg interval (the example a reader can check)
    worst: Dict[str, goose.Verdict] = field(default_factory=dict)
    #: per leaf, when that interval ended (epoch seconds): where a reader goes to check it
    worst_at: Dict[str, float] = field(default_factory=dict)

    def add(self, decided: Sequence[goose.Decided], words: Callable[[goose.Decided], goose.Verdict],
            at: Optional[float] = None) -> None:
        """One interval's decisions (:func:`~zfsmon.analysis.goose.decide`) counted; ``words`` makes the Verdict of a
        leaf's new worst; ``at``: the interval's end."""
        per_leaf, worst = self.per_leaf, self.worst
        for d in decided:
            leaf, v = d[0], d[1]
            tally = per_leaf.get(leaf)
            if tally is None:
                tally = per_leaf[leaf] = {}
            tally[v] = tally.get(v, 0) + 1
            if v == goose.GOOSE_EGG and (leaf not in worst or d[3] > worst[leaf].zfs_ops):
                worst[leaf] = words(d)
                if at is not None:
                    self.worst_at[leaf] = at

    def eggs(self) -> Dict[str, int]:
        return {leaf: t.get(goose.GOOSE_EGG, 0) for leaf, t in self.per_leaf.items()}

    def busy(self) -> Dict[str, int]:
        """Per leaf, the intervals that could be judged: ZFS busy enough and device numbers there."""
        return {leaf: t.get(goose.GOOSE_EGG, 0) + t.get(goose.NOT_GOOSE_EGG, 0) for leaf, t in self.per_leaf.items()}

    def text(self) -> str:
        """The verdict in one sentence, with the numbers behind it."""
        eggs, busy = self.eggs(), self.busy()
        hit = sorted(leaf for leaf, n in eggs.items() if n)
        if hit:
            parts = [f"{leaf} in {eggs[leaf]} of {busy[leaf]} busy intervals (e.g. ZFS "
                     f"{self.worst[leaf].zfs_ops:.0f} ops/s, device {self.worst[leaf].device_ops or 0:.0f} ops/s)"
                     for leaf in hit]
            return ("Goose eggs: the device layer showed (almost) nothing while ZFS was busy on " + "; ".join(parts)
                    + ". Trust ZFS's numbers for these devices.")
        total = sum(busy.values())
        if total == 0:
            return "Goose eggs: nothing to judge (no leaf busy enough, or no device numbers for the leaves)."
        return f"No goose eggs: the device layer agreed with ZFS in all {total} busy leaf-intervals."


def summarize_window(samples: Iterable[Sample], min_ops: float = 1.0,
                     far_below: float = 0.1) -> Optional[WindowVerdicts]:
    """Every ZFS reporting interval of every device row in ``samples`` judged against its device.

    None when the window has no ZFS device rows or no device-level numbers at
    all (nothing to compare). Leaves map to devices by
    :func:`~zfsmon.analysis.goose.leaf_devices`: the leaf a device's samples name
    (their latest in the window), else by name alone, as a capture from another host needs.
    """
    devices: List[Sample] = []  # the window sorted out once: each pass below looks at one part of it
    zfs_rows: List[Sample] = []
    for s in samples:
        (devices if s.entity.kind is Kind.DEVICE else zfs_rows).append(s)
    spans = device_spans(devices)
    if not spans:  # asked first: most recordings have no device numbers, and the ZFS side is the long pass
        return None
    reports = leaf_intervals(zfs_rows)
    if not reports:
        return None
    ends = {dev: [sp.end for sp in sps] for dev, sps in spans.items()}
    said: Dict[str, str] = {dev: "" for dev in spans}
    for s in sorted((s for s in devices if s.entity.parent), key=lambda s: s.ts):
        if s.entity.name in said:
            said[s.entity.name] = s.entity.parent  # the latest word wins (a disk replaced under a name)
    cands = goose.leaf_devices({leaf for zfs in reports.values() for leaf in zfs}, said)
    out = WindowVerdicts()
    for (start, end), zfs in sorted(reports.items()):
        devs: Dict[str, float] = {}
        for dev in {d for leaf in zfs for d in cands[leaf]}:
            ops = ops_over(spans[dev], ends[dev], start, end)
            if ops is not None:
                devs[dev] = ops
        decided, on_device = goose.decide(zfs, devs, cands, min_ops, far_below)
        out.add(decided, functools.partial(goose.in_words, on_device=on_device, leaf_devices=cands, min_ops=min_ops,
                                           far_below=far_below), end)
    return out
