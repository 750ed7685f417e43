"""Latency histograms as the trace scripts emit them: explicit log-linear buckets.

Averages hide the truth; a histogram keeps the shape. The scripts bucket each
latency ``v`` (ns) by its highest power of two ``p`` and a quarter of it:
``lo = p + ((v - p) // (p // 4)) * (p // 4)`` (``lo = v`` below 4). So every
bucket is at most 25 % wide, which is good enough for p50/p95/p99, and the
same integer arithmetic works in D and in bpftrace (no log2, no loops).
Percentiles interpolate linearly inside a bucket and never exceed the exact
maximum when the script reports one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple


def bucket_of(value: int) -> int:
    """The bucket lower bound a script computes for ``value`` (the D/bpftrace arithmetic, in Python)."""
    if value < 4:
        return max(value, 0)
    p = 1 << (value.bit_length() - 1)
    q = p >> 2
    return p + ((value - p) // q) * q


def is_bucket(lo: int) -> bool:
    """True if ``lo`` is a bucket lower bound the scripts can produce (catches corrupted lines)."""
    return lo >= 0 and bucket_of(lo) == lo


def bucket_upper(lo: int) -> int:
    """Exclusive upper bound of the bucket starting at ``lo``."""
    if lo < 4:
        return lo + 1
    return lo + ((1 << (lo.bit_length() - 1)) >> 2)


@dataclass
class Histogram:
    """Bucket lower bound -> count, plus the exact max and sum when the script measured them."""

    buckets: Dict[int, int] = field(default_factory=dict)
    max: Optional[int] = None
    sum: Optional[int] = None

    def add(self, lo: int, count: int) -> None:
        self.buckets[lo] = self.buckets.get(lo, 0) + count

    def merge(self, other: Histogram) -> None:
        """Exact: buckets add up, maxima take the larger, sums add (used for leaf -> vdev roll-ups)."""
        for lo, n in other.buckets.items():
            self.add(lo, n)
        if other.max is not None:
            self.max = other.max if self.max is None else max(self.max, other.max)
        if other.sum is not None:
            self.sum = other.sum if self.sum is None else self.sum + other.sum

    @property
    def count(self) -> int:
        return sum(self.buckets.values())

    def sorted(self) -> List[Tuple[int, int]]:
        return sorted((lo, n) for lo, n in self.buckets.items() if n > 0)

    def top(self) -> int:
        """The largest value observed: the exact max, else the top of the highest bucket."""
        rows = self.sorted()
        if self.max is not None:
            return self.max
        return bucket_upper(rows[-1][0]) if rows else 0

    def percentile(self, q: float) -> float:
        """The q-quantile (0 < q <= 1), interpolated inside its bucket, never above the max."""
        rows = self.sorted()
        total = sum(n for _, n in rows)
        if total == 0:
            return 0.0
        rank = q * total
        seen = 0
        value = float(self.top())
        for lo, n in rows:
            if seen + n >= rank:
                value = lo + (bucket_upper(lo) - lo) * max(rank - seen, 0.0) / n
                break
            seen += n
        return min(value, float(self.top()))

    def mean(self) -> Optional[float]:
        n = self.count
        return self.sum / n if self.sum is not None and n else None


def merged(hists: Iterable[Histogram]) -> Histogram:
    out = Histogram()
    for h in hists:
        out.merge(h)
    return out
