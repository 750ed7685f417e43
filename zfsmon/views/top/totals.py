"""The vdev tree's totals (the `r` toggle): each row's per-interval amounts summed over the window, kept as
samples enter and leave it, so a redraw reads a sum per row instead of scanning the window for each.

A total is a sample's rate times its interval (``read_ops * interval`` is the operations of that interval),
summed over the samples the dashboard holds (:attr:`TopState.samples <zfsmon.views.top.state.TopState.samples>`)
whose time is in the window. Samples leave in two ways: the window's start passes them (it moves with the newest
record and with +/-, either way), or the state lets them go (the oldest first: out of the window, or over
``MAX_SAMPLES``). Records arrive out of time order across batches (a slow source's batch after a faster one's),
so a held sample older than the window's start can come back into it when the window grows.

The sums are exact: each amount is added and taken away as an integer count of 2**-1074 (the finest step a float
has), so a spike that leaves the window leaves nothing behind, however long the dashboard runs, and a total is
the correctly rounded sum of its amounts. Non-finite amounts (from a damaged recording) are counted apart and give
what a float sum of them would (nan, or an infinity).

Pure: samples in, sums out; no I/O, no clocks.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Deque, Dict, List, Optional, Set, Tuple

from zfsmon.model import Sample

#: the metrics of the tree a total is given for (each a rate per second over the sample's interval)
TOTALLED: Tuple[str, ...] = ("read_ops", "write_ops", "read_bw", "write_bw")

_FRAC = 1074  # binary digits after the point: the smallest subnormal float is 2**-1074
_ONE = 1 << _FRAC

# one running sum: [whole part, the rest in units of 2**-1074, amounts in it, nans, +infs, -infs]; whole amounts
# (counts over whole seconds, the common case) go to the first, a small int, which is cheaper to add to
_Sum = List[int]
#: a held sample's part: (ts, row key, ((metric, amount), ...))
_Part = Tuple[float, str, Tuple[Tuple[str, float], ...]]


def _fixed(x: float) -> int:
    """A finite float as an exact integer count of 2**-1074."""
    n, d = x.as_integer_ratio()
    return n << (_FRAC + 1 - d.bit_length())


def _value(acc: _Sum) -> float:
    """The float a sum stands for: correctly rounded, or what the non-finite amounts in it make."""
    whole, fine, _, nans, pinf, ninf = acc
    if nans or (pinf and ninf):
        return float("nan")
    if pinf or ninf:
        return float("inf") if pinf else float("-inf")
    try:
        return float(whole) if not fine else ((whole << _FRAC) + fine) / _ONE  # both correctly rounded
    except OverflowError:
        return float("inf") if whole > 0 else float("-inf")


class WindowTotals:
    """Per row, the sum of its samples' amounts over the window; told of every sample the state holds, in the
    order it holds them (:meth:`add`, :meth:`drop_oldest`), asked with the window's start (:meth:`row`).

    Memory: per held sample that has an interval and a totalled metric, one entry (its time, key and up to four
    amounts) and one or two heap slots; per row, four sums.
    """

    def __init__(self) -> None:
        self._seq = 0
        #: one slot per sample the state holds, in its order: the entry's number, or None (it adds nothing)
        self._order: Deque[Optional[int]] = deque()
        self._parts: Dict[int, _Part] = {}
        self._counted: Set[int] = set()  # entries in the window (their amounts are in the sums)
        self._early: Set[int] = set()  # entries held but before the window's start
        self._heap: List[Tuple[float, int]] = []  # (ts, entry) of counted ones, oldest first; stale slots skipped
        self._lo = float("-inf")  # the window's start the sets are for
        self._sums: Dict[str, Dict[str, _Sum]] = {}

    def copy(self) -> WindowTotals:
        new = WindowTotals.__new__(WindowTotals)
        new._seq, new._lo = self._seq, self._lo
        new._order, new._parts = deque(self._order), dict(self._parts)
        new._counted, new._early, new._heap = set(self._counted), set(self._early), list(self._heap)
        new._sums = {k: {m: list(acc) for m, acc in d.items()} for k, d in self._sums.items()}
        return new

    def add(self, s: Sample) -> None:
        """A sample the state now holds (appended after the others)."""
        amounts = tuple((m, s.metrics[m] * s.interval) for m in TOTALLED if m in s.metrics) if s.interval else ()
        if not amounts:
            self._order.append(None)
            return
        seq = self._seq
        self._seq += 1
        self._order.append(seq)
        self._parts[seq] = (s.ts, s.entity.key, amounts)
        if s.ts >= self._lo:
            self._count(seq, 1)
        else:
            self._early.add(seq)
        if len(self._heap) > 2 * len(self._counted) + 1024:  # slots of entries gone: compacted now and then
            self._heap = [x for x in self._heap if x[1] in self._counted]
            heapq.heapify(self._heap)

    def drop_oldest(self) -> None:
        """The state let go of its oldest sample."""
        seq = self._order.popleft()
        if seq is None:
            return
        if seq in self._counted:
            self._count(seq, -1)
        self._early.discard(seq)
        del self._parts[seq]

    def row(self, key: str, lo: float) -> Dict[str, float]:
        """``key``'s totals over the samples held from ``lo`` on: each metric any of them has."""
        self._move_to(lo)
        sums = self._sums.get(key)
        return {m: _value(acc) for m, acc in sums.items()} if sums else {}

    def _move_to(self, lo: float) -> None:
        """The window now starts at ``lo``: entries it passed leave the sums, entries it reached back to enter."""
        if lo > self._lo:
            heap = self._heap
            while heap and heap[0][0] < lo:
                _, seq = heapq.heappop(heap)
                if seq in self._counted:
                    self._count(seq, -1)
                    self._early.add(seq)
        elif lo < self._lo:
            back = [seq for seq in self._early if self._parts[seq][0] >= lo]
            for seq in back:
                self._early.discard(seq)
                self._count(seq, 1)
        self._lo = lo

    def _count(self, seq: int, sign: int) -> None:
        """Put an entry's amounts into its row's sums (``sign`` 1) or take them out (-1)."""
        ts, key, amounts = self._parts[seq]
        if sign > 0:
            self._counted.add(seq)
            heapq.heappush(self._heap, (ts, seq))
        else:
            self._counted.discard(seq)
        sums = self._sums.setdefault(key, {})
        for m, x in amounts:
            acc = sums.get(m)
            if acc is None:
                acc = sums[m] = [0, 0, 0, 0, 0, 0]
            acc[2] += sign
            try:
                n = int(x)
            except ValueError:  # nan
                acc[3] += sign
            except OverflowError:  # an infinity
                acc[4 if x > 0 else 5] += sign
            else:
                if n == x:
                    acc[0] += sign * n
                else:
                    acc[1] += sign * _fixed(x)
            if not acc[2]:
                del sums[m]
        if not sums:
            del self._sums[key]
