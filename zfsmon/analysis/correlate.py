"""Put workload and ZFS series on one time grid and measure how they move together. Pure, no numpy.

Sources report at their own pace (pgbench every -P seconds or once per run,
``zpool iostat`` every interval, kstats when polled), so series are first
averaged into common grid cells. A value that describes an interval (a run
summary's TPS covers the whole run) fills every cell its interval covers.

Correlation: Pearson on values, Spearman on ranks (robust to the non-linear
but monotone way cache hit rates drive throughput), each also at the best lag
within a window (the cache warms before TPS follows). Significance comes from
the t statistic ``r * sqrt((n-2)/(1-r^2))`` with Student's t distribution;
because neighbouring cells of a time series are not independent, ``n`` is
first reduced to an effective size (Bartlett: ``n (1 - a b) / (1 + a b)`` with
a, b the lag-1 autocorrelations). That makes a smooth warm-up curve honestly
"suggestive" rather than "p < 1e-40".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

#: (ts, value) or (ts, value, span seconds the value describes, ending at ts)
Point = Tuple[float, ...]
Cells = List[Optional[float]]


# ---------------------------------------------------------------------------------------------------- the grid

def bounds(series: Mapping[str, Sequence[Point]], start: Optional[float] = None,
           end: Optional[float] = None) -> Optional[Tuple[float, float]]:
    """What a grid covers: ``start`` (else the first point's time) to ``end`` (else the last's); None when a
    side is not given and there are no points."""
    ts = [p[0] for pts in series.values() for p in pts] if start is None or end is None else []
    if not ts and (start is None or end is None):
        return None
    return (start if start is not None else min(ts)), (end if end is not None else max(ts))


def grid_for(series: Mapping[str, Sequence[Point]], step: float, start: Optional[float] = None,
             end: Optional[float] = None) -> List[float]:
    """Grid times from the first point (or ``start``) to the last (or ``end``), ``step`` apart."""
    if step <= 0:
        raise ValueError("grid step must be positive")
    got = bounds(series, start, end)
    if got is None:
        return []
    lo, hi = got
    if hi < lo:
        return []
    n = int(math.floor((hi - lo) / step + 0.5)) + 1  # the last point's nearest grid time is included
    return [lo + i * step for i in range(n)]


def align(points: Sequence[Point], grid: Sequence[float], step: float) -> Cells:
    """Mean value per grid point; each point goes to the nearest grid time (so clock jitter between sources does
    not push two readings into one cell), and a point with a span covers every grid time within it."""
    if not grid:
        return []
    lo = grid[0]
    n = len(grid)
    sums = [0.0] * n
    counts = [0] * n
    for p in points:
        ts, v = p[0], p[1]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        span = p[2] if len(p) > 2 and p[2] else 0.0
        if span > step:
            first = int(math.floor((ts - span - lo) / step)) + 1  # grid times strictly after the span's start
            last = int(math.floor((ts - lo) / step + 1e-9))
            idx = range(max(first, 0), min(last, n - 1) + 1)
        else:
            i = int(math.floor((ts - lo) / step + 0.5))
            idx = range(i, i + 1) if 0 <= i < n else range(0)
        for i in idx:
            sums[i] += v
            counts[i] += 1
    return [sums[i] / counts[i] if counts[i] else None for i in range(n)]


def align_all(series: Mapping[str, Sequence[Point]], step: float, start: Optional[float] = None,
              end: Optional[float] = None) -> Tuple[List[float], Dict[str, Cells]]:
    grid = grid_for(series, step, start, end)
    return grid, {name: align(pts, grid, step) for name, pts in series.items()}


def counter_rates(points: Sequence[Tuple[float, float]]) -> List[Tuple[float, float, float]]:
    """Cumulative counter readings -> (ts, per-second rate, span). A counter going backwards starts anew."""
    out: List[Tuple[float, float, float]] = []
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        dt = t1 - t0
        if dt <= 0 or v1 < v0:
            continue
        out.append((t1, (v1 - v0) / dt, dt))
    return out


def counter_deltas(points: Sequence[Tuple[float, float]]) -> List[Tuple[float, float, float]]:
    """Like :func:`counter_rates` but the raw increase per reading: (ts, delta, span)."""
    out: List[Tuple[float, float, float]] = []
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t1 > t0 and v1 >= v0:
            out.append((t1, v1 - v0, t1 - t0))
    return out


# ----------------------------------------------------------------------------------------------- statistics

def _pairs(xs: Sequence[Optional[float]], ys: Sequence[Optional[float]]) -> Tuple[List[float], List[float]]:
    px, py = [], []
    for x, y in zip(xs, ys):
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            continue
        px.append(float(x))
        py.append(float(y))
    return px, py


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of nothing")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """Pearson's r, or None when either side is constant or there are fewer than 3 pairs."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def ranks(xs: Sequence[float]) -> List[float]:
    """1-based ranks, ties get their average rank (what Spearman needs)."""
    n = len(xs)
    order = sorted(range(n), key=xs.__getitem__)
    out = [0.0] * n
    i = 0
    while i < n:  # a run of equal values is order[i:j] (analyze ranks each series at 21 lags: kept tight)
        v = xs[order[i]]
        j = i + 1
        while j < n and xs[order[j]] == v:
            j += 1
        if j == i + 1:
            out[order[i]] = i + 1.0
        else:
            r = (i + j - 1) / 2.0 + 1.0
            for k in range(i, j):
                out[order[k]] = r
        i = j
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    return pearson(ranks(xs), ranks(ys))


def autocorr1(xs: Sequence[float]) -> float:
    """Lag-1 autocorrelation (0 when undefined)."""
    if len(xs) < 3:
        return 0.0
    r = pearson(list(xs[:-1]), list(xs[1:]))
    return r if r is not None else 0.0


def effective_n(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Bartlett's effective sample size for correlating two autocorrelated series."""
    n = len(xs)
    ab = autocorr1(xs) * autocorr1(ys)
    if ab >= 0.999:
        return 2.0
    return max(2.0, min(float(n), n * (1 - ab) / (1 + ab)))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def betai(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1.0 - x)
    front = math.exp(lbeta)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_pvalue(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        return 1.0
    if math.isinf(t):
        return 0.0
    return betai(df / 2.0, 0.5, df / (df + t * t))


def r_pvalue(r: float, n: float) -> float:
    """p-value of a correlation ``r`` over ``n`` (effective) pairs via the t statistic."""
    if n <= 2:
        return 1.0
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2.0) / (1.0 - r * r))
    return t_pvalue(t, n - 2.0)


def lagged(xs: Sequence[Optional[float]], ys: Sequence[Optional[float]], lag: int) -> Tuple[List[float], List[float]]:
    """Pairs (x[t], y[t - lag]): a positive lag means y moves first."""
    if lag >= 0:
        return _pairs(xs[lag:], ys[: len(ys) - lag] if lag else ys)
    return _pairs(xs[: len(xs) + lag], ys[-lag:])


@dataclass(frozen=True)
class Correlation:
    """How one series moves with another on a shared grid."""

    n: int
    pearson: Optional[float]
    spearman: Optional[float]
    n_effective: float
    p_value: Optional[float]  # of Spearman at lag 0 (Pearson when ranks are undefined), effective n
    p_value_naive: Optional[float]  # the same with every point counted as independent
    best_lag: int  # grid cells; > 0: the other series moves first
    best_lag_s: float
    r_at_best_lag: Optional[float]  # Spearman at the best lag
    p_at_best_lag: Optional[float]
    note: str

    def as_dict(self) -> Dict[str, object]:
        return asdict(self)


def significance_note(r: Optional[float], p: Optional[float], n: int, n_eff: float,
                      p_naive: Optional[float] = None) -> str:
    if r is None or p is None:
        return f"undefined ({n} paired points, or one series is constant)"
    strength = "very strong" if abs(r) >= 0.8 else "strong" if abs(r) >= 0.6 else "moderate" if abs(r) >= 0.4 \
        else "weak" if abs(r) >= 0.2 else "no"
    direction = "positive" if r > 0 else "negative"
    what = "no correlation" if strength == "no" else f"{strength} {direction}"
    if n < 8:
        return f"{what} ({n} points: too few to judge)"
    if p < 0.01:
        sig = f"significant (p={p:.2g}, effective n={n_eff:.0f} of {n})"
    elif p < 0.05:
        sig = f"suggestive (p={p:.2g}, effective n={n_eff:.0f} of {n})"
    elif p_naive is not None and p_naive < 0.01:
        sig = (f"p={p_naive:.2g} at face value, but both series trend smoothly (about {n_eff:.0f} independent "
               f"points, p={p:.2g}): a shared trend, not proof")
    else:
        sig = f"not significant (p={p:.2g}, effective n={n_eff:.0f} of {n})"
    return f"{what}, {sig}"


def correlate(xs: Cells, ys: Cells, step: float, max_lag: int = 0) -> Correlation:
    """Correlate ``ys`` with ``xs`` at lag 0 and find the lag in [-max_lag, max_lag] with the largest |Spearman|."""
    px, py = _pairs(xs, ys)
    n = len(px)
    r_p = pearson(px, py)
    r_s = spearman(px, py)
    n_eff = effective_n(px, py) if n >= 3 else float(n)
    r_main = r_s if r_s is not None else r_p
    p = r_pvalue(r_main, n_eff) if r_main is not None else None
    p_naive = r_pvalue(r_main, n) if r_main is not None else None
    best, best_r = 0, r_s
    max_lag = max(0, min(max_lag, len(xs) - 3))  # a longer lag leaves fewer than 3 pairs: nothing to try
    for lag in range(-max_lag, max_lag + 1):
        if lag == 0:
            continue
        lx, ly = lagged(xs, ys, lag)
        if len(lx) < max(3, n // 2):
            continue
        r = spearman(lx, ly)
        if r is not None and (best_r is None or abs(r) > abs(best_r) + 1e-9):
            best, best_r = lag, r
    p_best = None
    if best_r is not None:
        lx, ly = lagged(xs, ys, best)
        p_best = r_pvalue(best_r, effective_n(lx, ly))
    return Correlation(n=n, pearson=r_p, spearman=r_s, n_effective=n_eff, p_value=p, p_value_naive=p_naive,
                       best_lag=best, best_lag_s=best * step, r_at_best_lag=best_r, p_at_best_lag=p_best,
                       note=significance_note(r_main, p, n, n_eff, p_naive))


def present(cells: Cells) -> List[int]:
    """The indices of the cells that hold a value."""
    return [i for i, v in enumerate(cells) if v is not None]


def level(cells: Cells, idx: Sequence[int]) -> Optional[float]:
    """A series' level over the cells ``idx``: the median of those present (one spike does not move it)."""
    vals = [v for i in idx if (v := cells[i]) is not None]
    return median(vals) if vals else None


def smooth(cells: Cells, width: int = 3) -> Cells:
    """Centred rolling median over present values (one spike must not decide a threshold crossing)."""
    out: Cells = []
    h = width // 2
    for i in range(len(cells)):
        window = [v for v in cells[max(0, i - h): i + h + 1] if v is not None]
        out.append(median(window) if window and cells[i] is not None else None)
    return out
