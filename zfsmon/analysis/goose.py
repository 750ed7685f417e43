"""Goose eggs: the device layer reports (almost) nothing while ZFS says the leaf is busy.

On virtual disks, SAN LUNs behind a caching layer, or zfs-fuse reading
through the host page cache, ``iostat`` / ``/proc/diskstats`` can show zeros
for a disk that ZFS is hammering. Then the device view is not evidence of
anything and the ZFS numbers are the truth. This module decides, per
interval and per leaf, whether that is happening, and keeps the numbers it
decided on so a user can check the verdict.

Two questions, one set of rules. :func:`judge` answers for one interval (``zfsmon
iostat``, the dashboard's tree). :func:`summarize_window` answers for a window
of recorded samples (``zfsmon analyze``, ``zfsmon report`` and the dashboard's
findings all ask it, so one window gets one answer): every ZFS reporting
interval of a leaf is compared with what its device counted over that same
stretch of time (readings of the two layers are taken at different moments,
so the device's numbers are weighted by how much of the leaf's interval they
cover). No grid is laid over the window: the leaves' own reporting intervals
are the cells, whatever step or window start the caller's other analysis uses.

Pure: leaf names, device names and per-second rates in, verdicts out. Finding
which kernel device a leaf path is (symlinks, sysfs) is I/O and lives in
:mod:`zfsmon.sources.diskstats`; the name rules that need no file system are in
:mod:`zfsmon.names`, so captures from other machines (illumos ``c0t1d0``) can be matched too.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Kind, Sample
from zfsmon.names import guess_devices, is_grouping_vdev, whole_disk

GOOSE_EGG = "goose egg"
NOT_GOOSE_EGG = "not goose egg"
IDLE = "idle"  # ZFS did too little in the interval to judge
UNKNOWN = "unknown"  # no device-level numbers for this leaf
#: a device's readings must cover at least this share of a leaf's interval to be compared with it
MIN_COVER = 0.5


def is_device_row(entity: Entity) -> bool:
    """A ``zpool iostat`` row that is one device: a leaf, or a top-level vdev that is a disk itself.

    A single-disk SLOG or data vdev and a cache device are shown as vdev rows;
    mirror-0, raidz1-0 and the pool are not devices.
    """
    return entity.kind == Kind.LEAF or (entity.kind == Kind.VDEV and not is_grouping_vdev(entity.name))


#: the (reads, writes) pairs :func:`device_ops_per_s` reads, in the order it tries them
OPS_PAIRS = (("read_ops", "write_ops"), ("reads", "writes"))


def _interval_row(values: Mapping[str, float]) -> bool:
    """A device's interval row (illumos ``iostat``: ``read_ops``/``write_ops`` over its interval), not counters."""
    r, w = OPS_PAIRS[0]
    return r in values or w in values


def device_ops_per_s(values: Mapping[str, float]) -> Optional[float]:
    """Operations per second from one device's numbers.

    Takes either an interval row's gauges (``read_ops``/``write_ops``: illumos
    ``iostat``, ``zpool iostat`` leaves) or the per-second rates
    :class:`~zfsmon.analysis.rates.RateDeriver` derived from counters
    (``reads``/``writes``: ``/proc/diskstats``). None if neither is there.
    """
    for r, w in OPS_PAIRS:
        if r in values or w in values:
            return float(values.get(r, 0.0)) + float(values.get(w, 0.0))
    return None


def leaf_ops(samples: Iterable[Sample]) -> Dict[str, float]:
    """Device name -> ops/s from ``zpool iostat`` samples; the since-import first report is skipped.

    Leaves, plus top-level vdevs that are a device themselves (a single-disk
    SLOG or data vdev, a cache device), which ``zpool iostat`` rows show as vdevs.
    """
    out: Dict[str, float] = {}
    for s in samples:
        if s.since_boot or not is_device_row(s.entity):
            continue
        ops = device_ops_per_s(s.metrics)
        if ops is not None:
            out[s.entity.name] = out.get(s.entity.name, 0.0) + ops
    return out


@dataclass(frozen=True)
class Verdict:
    """One leaf in one interval. ``zfs_ops`` sums every leaf on the same device (partitions of one disk)."""

    leaf: str
    verdict: str
    device: Optional[str]
    zfs_ops: float
    device_ops: Optional[float]
    why: str

    @property
    def ratio(self) -> Optional[float]:
        """device ops / ZFS ops; None when either side is missing or ZFS was idle."""
        if self.device_ops is None or self.zfs_ops <= 0:
            return None
        return self.device_ops / self.zfs_ops


def leaf_devices(leaves: Iterable[str], devices: Mapping[str, str]) -> Dict[str, List[str]]:
    """Leaf -> the block devices whose numbers stand for it, most specific first (``leaf_devices`` of :func:`judge`).

    ``devices``: each known block device -> the zpool leaf it says it is (its entity's ``parent``, set by the
    live diskstats collector: ``vdb`` -> ``virtio-data0``; "" when it does not say). A leaf a device names
    gets that device (the collector labels the most specific one: the partition ZFS opened, or the whole disk
    when the leaf is the disk, whose counters include its partitions), then, for a partition, its whole disk
    (some kernels count only there). A leaf no device names (recordings from before the label, imported
    captures, illumos/FreeBSD) is matched by name alone (:func:`zfsmon.names.guess_devices`), never to a device
    that says it is another leaf.
    """
    named: Dict[str, List[str]] = {}
    for dev, leaf in devices.items():
        if leaf:
            named.setdefault(leaf, []).append(dev)
    out: Dict[str, List[str]] = {}
    for leaf in leaves:
        mine = named.get(leaf)
        if mine:
            cands = sorted(mine, key=lambda d: (whole_disk(d) is None, d))  # partitions first
            cands += [d for d in dict.fromkeys(whole_disk(d) for d in cands)
                      if d and d in devices and d not in cands and devices[d] in ("", leaf)]
        else:
            cands = [d for d in guess_devices(leaf, devices) if devices[d] in ("", leaf)]
        out[leaf] = cands
    return out


def judge(zfs_ops: Mapping[str, float], device_ops: Mapping[str, float],
          leaf_devices: Mapping[str, Sequence[str]], min_ops: float = 1.0,
          far_below: float = 0.1) -> List[Verdict]:
    """A verdict per leaf of ``zfs_ops`` (leaf -> ops/s in one interval).

    ``device_ops``: device name -> ops/s in the same interval (a device absent
    from an ``iostat -z`` report should be passed as 0). ``leaf_devices``: leaf ->
    candidate device names, most specific first; the first one with numbers is
    used. Leaves that land on the same device are compared together, since the
    device sees their sum. A goose egg: ZFS did at least ``min_ops`` ops/s and
    the device saw no more than ``far_below`` times that (ZFS and the block
    layer both merge adjacent I/Os, so a fraction, not equality, is the test).
    """
    decided, on_device = _decide(zfs_ops, device_ops, leaf_devices, min_ops, far_below)
    return [_verdict(d, on_device, leaf_devices, min_ops, far_below) for d in decided]


#: one leaf's verdict before it is put in words: (leaf, verdict, device, ZFS ops/s, device ops/s)
_Decided = Tuple[str, str, Optional[str], float, Optional[float]]


def _decide(zfs_ops: Mapping[str, float], device_ops: Mapping[str, float],
            leaf_devices: Mapping[str, Sequence[str]], min_ops: float, far_below: float
            ) -> Tuple[List[_Decided], Dict[str, List[str]]]:
    """:func:`judge`'s rules without the sentences (a window judges tens of thousands of leaf-intervals and
    words only a few): the decisions in leaf order, and the leaves each device serves."""
    chosen: Dict[str, Optional[str]] = {}
    for leaf in zfs_ops:
        chosen[leaf] = next((d for d in leaf_devices.get(leaf, ()) if d in device_ops), None)
    per_device: Dict[str, float] = {}
    on_device: Dict[str, List[str]] = {}  # the leaves each device serves (one pass: a pool has hundreds of leaves)
    for leaf, dev in chosen.items():
        if dev is not None:
            per_device[dev] = per_device.get(dev, 0.0) + max(0.0, zfs_ops[leaf])
            on_device.setdefault(dev, []).append(leaf)
    out: List[_Decided] = []
    for leaf in sorted(zfs_ops):
        dev = chosen[leaf]
        if dev is None:
            out.append((leaf, UNKNOWN, None, zfs_ops[leaf], None))
            continue
        zops, dops = per_device[dev], device_ops[dev]
        v = IDLE if zops < min_ops else GOOSE_EGG if dops <= far_below * zops else NOT_GOOSE_EGG
        out.append((leaf, v, dev, zops, dops))
    return out, on_device


def _verdict(decided: _Decided, on_device: Mapping[str, List[str]], leaf_devices: Mapping[str, Sequence[str]],
             min_ops: float, far_below: float) -> Verdict:
    """A decision of :func:`_decide` with the sentence that gives its numbers."""
    leaf, v, dev, zops, dops = decided
    if dev is None:
        cands = ", ".join(leaf_devices.get(leaf, ())) or "none found"
        return Verdict(leaf, UNKNOWN, None, zops, None, f"no device-level numbers for {leaf} (candidates: {cands})")
    shared = [other for other in on_device[dev] if other != leaf]
    on = f"{dev}" + (f" (shared with {', '.join(sorted(shared))})" if shared else "")
    if v == IDLE:
        why = f"ZFS issued {zops:.1f} ops/s to {on}: below {min_ops:g}, nothing to judge"
    elif v == GOOSE_EGG:
        why = (f"ZFS issued {zops:.1f} ops/s to {on} but the device saw {dops:.1f} ops/s "
               f"(<= {far_below:.0%}): the device view is blind here; trust ZFS")
    else:
        why = f"ZFS issued {zops:.1f} ops/s to {on}, the device saw {dops:.1f} ops/s"
    return Verdict(leaf, v, dev, zops, dops, why)


def summarize(verdicts: Sequence[Verdict]) -> Tuple[int, int, int, int]:
    """(goose eggs, not goose eggs, idle, unknown) counts, for a one-line status."""
    counts = {GOOSE_EGG: 0, NOT_GOOSE_EGG: 0, IDLE: 0, UNKNOWN: 0}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts[GOOSE_EGG], counts[NOT_GOOSE_EGG], counts[IDLE], counts[UNKNOWN]


# ------------------------------------------------------------------------------------------------- a window

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
    through :class:`~zfsmon.analysis.rates.RateDeriver` (a reset starts anew).
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
    rates = RateDeriver()
    prev: Optional[float] = None
    for k, s in enumerate(mine):
        before, prev = prev, s.ts
        if _interval_row(s.metrics):
            span = s.interval or (s.ts - before if before is not None else 0.0)
            if span > 0:
                rows.append(Span(s.ts - span, s.ts, device_ops_per_s(s.metrics) or 0.0))
                first[0] = k if first[0] < 0 else first[0]
            continue
        d, _events = rates.update(s)
        ops = device_ops_per_s(d.rates) if d is not None else None
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
    if len(mine) < 2 or not any(n in names for n in OPS_PAIRS[1]):
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
    r, w = (deltas[:, names.index(n)] / elapsed if n in names else 0.0 for n in OPS_PAIRS[1])
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
    for s in sorted((s for s in samples if is_device_row(s.entity)), key=lambda s: s.ts):
        key = s.entity.key
        prev, last[key] = last.get(key), s.ts
        ops = device_ops_per_s(s.metrics)
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
    worst: Dict[str, Verdict] = field(default_factory=dict)
    #: per leaf, when that interval ended (epoch seconds): where a reader goes to check it
    worst_at: Dict[str, float] = field(default_factory=dict)

    def add(self, decided: Sequence[_Decided], words: Callable[[_Decided], Verdict], at: Optional[float] = None
            ) -> None:
        """One interval's decisions (:func:`_decide`) counted; ``words`` makes the Verdict of a leaf's new worst;
        ``at``: the interval's end."""
        per_leaf, worst = self.per_leaf, self.worst
        for d in decided:
            leaf, v = d[0], d[1]
            tally = per_leaf.get(leaf)
            if tally is None:
                tally = per_leaf[leaf] = {}
            tally[v] = tally.get(v, 0) + 1
            if v == GOOSE_EGG and (leaf not in worst or d[3] > worst[leaf].zfs_ops):
                worst[leaf] = words(d)
                if at is not None:
                    self.worst_at[leaf] = at

    def eggs(self) -> Dict[str, int]:
        return {leaf: t.get(GOOSE_EGG, 0) for leaf, t in self.per_leaf.items()}

    def busy(self) -> Dict[str, int]:
        """Per leaf, the intervals that could be judged: ZFS busy enough and device numbers there."""
        return {leaf: t.get(GOOSE_EGG, 0) + t.get(NOT_GOOSE_EGG, 0) for leaf, t in self.per_leaf.items()}

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
    all (nothing to compare). Leaves map to devices by :func:`leaf_devices`: the leaf a device's samples name
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
    cands = leaf_devices({leaf for zfs in reports.values() for leaf in zfs}, said)
    out = WindowVerdicts()
    for (start, end), zfs in sorted(reports.items()):
        devs: Dict[str, float] = {}
        for dev in {d for leaf in zfs for d in cands[leaf]}:
            ops = ops_over(spans[dev], ends[dev], start, end)
            if ops is not None:
                devs[dev] = ops
        decided, on_device = _decide(zfs, devs, cands, min_ops, far_below)
        out.add(decided, functools.partial(_verdict, on_device=on_device, leaf_devices=cands, min_ops=min_ops,
                                           far_below=far_below), end)
    return out
