"""A restart of ZFS inside a recording (a reboot, a module reload) and how fast the workload came back. Pure.

A soak resumed after a reboot appends to the same recording (the store's Recorder appends to a file that
exists, and says so in a ``recording resumed`` event), so one recording holds the warm plateau, a gap with no
samples, and the second boot. What marks a restart is the ARC's own counters: ``hits`` and ``misses`` count
since the zfs module loaded (zfs-fuse: since the daemon started) and never go back otherwise, and across a gap:
ZFS was not read for longer than :data:`GAP_INTERVALS` of its readings' intervals. A gap alone (a paused or
restarted recorder on the same boot) leaves the counters where they were and is not a restart, and neither is
a ``recording resumed`` event without them going back, nor counters going back from one reading to the next
without a gap (a reset, :mod:`zfsmon.analysis.rates`' new baseline).

After the restart, the persistent L2ARC (OpenZFS 2.0+) is rebuilt from the cache device's log blocks
asynchronously after import: ``l2_rebuild_size``, ``_asize`` and ``_bufs`` count what rebuilds restored since
the module loaded (so from 0 after the restart to the rebuilt total), and ``l2_rebuild_success`` grows when a
rebuild is done. With ``l2arc_rebuild_enabled=0`` they stay 0 and the L2ARC starts empty.

:func:`restarts` gives each restart's figures as a :class:`Restart`; ``findings`` says them in words.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis import arc
from zfsmon.analysis.correlate import Cells, level, median, present, smooth
from zfsmon.model import Event, EventKind, Kind, Sample, typical_gap

#: the TPS plateau before a restart: the median over this many seconds before the gap
PLATEAU_S = 180.0
#: the share of that plateau TPS must be back to
RECOVERED = 0.9
#: present TPS cells the plateau needs at least
PLATEAU_CELLS = 3
#: a gap: the ARC not read for longer than this many of its typical intervals
GAP_INTERVALS = 1.5


@dataclass(frozen=True)
class Restart:
    """One restart's figures: what ``analyze`` says and ``bench/`` compares between two recordings.

    Times in seconds; ``at`` is epoch seconds (the first sample after the gap). None where the recording has no
    such figure (no L2ARC rebuild statistics, no TPS, not back within what was recorded)."""

    at: float
    down_s: float
    rebuilt_bytes: Optional[float]
    rebuilt_bufs: Optional[float]
    #: from ``at`` to the first L2ARC reading at which the rebuilt bytes and buffers had stopped growing
    rebuild_s: Optional[float]
    #: ``l2_rebuild_success`` grew and bytes were restored
    rebuild_ok: bool
    plateau_tps: Optional[float]
    #: from ``at`` to the first grid cell whose TPS (rolling median of 3) is back to 90 % of the plateau
    back_90_s: Optional[float]
    #: seconds recorded from ``at`` to the next restart or the window's end
    recorded_s: float = 0.0
    #: the L2ARC readings' interval after the restart: ``rebuild_s``'s resolution
    l2_interval_s: Optional[float] = None
    #: a recorder session began in the gap (a ``recording resumed`` event)
    new_session: bool = False

    @property
    def rebuilt(self) -> bool:
        """Bytes were restored into the L2ARC (whether or not the rebuild reported success)."""
        return bool(self.rebuilt_bytes)


def is_resumed(ev: Event) -> bool:
    """The event a recorder writes when it opens a recording that already has readings: another process (often
    after a reboot) writing on into the same file. The dashboard's timeline marks it; a restart notes it."""
    return ev.kind == EventKind.INFO and ev.source == "record" and ev.text.startswith(names.RECORDING_RESUMED)


def _finite(v: object) -> Optional[float]:
    """A recorded value as a number a counter can be: finite and not negative, else None (damaged input)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) and f >= 0 else None


def _arc_counters(samples: Sequence[Sample]) -> List[Tuple[float, float, float]]:
    """(ts, hits, misses) of the ARC readings with counters, of the source that has the most of them."""
    by_source: Dict[str, List[Tuple[float, float, float]]] = {}
    for s in samples:
        if s.entity.kind is not Kind.ARC or not arc.has_counters(s):
            continue
        hits, misses = _finite(s.metrics.get("hits")), _finite(s.metrics.get("misses"))
        if hits is None and misses is None:
            continue
        by_source.setdefault(s.source, []).append((s.ts, math.nan if hits is None else hits,
                                                   math.nan if misses is None else misses))
    most = max(by_source, key=lambda src: len(by_source[src]), default=None)
    return [] if most is None else sorted(by_source[most])


def _went_back(before: Tuple[float, float, float], after: Tuple[float, float, float]) -> bool:
    """hits or misses lower than before (a nan, a value the reading lacked, compares as not lower)."""
    return after[1] < before[1] or after[2] < before[2]


def _gap(times: Sequence[float], lo: float, hi: float) -> Tuple[float, float]:
    """The longest stretch without any sample between ``lo`` and ``hi`` (the ARC readings either side of the
    restart): when the recorder was down, as every source's readings show it."""
    inside = times[bisect_left(times, lo):bisect_right(times, hi)]
    return max(zip(inside, inside[1:]), key=lambda p: p[1] - p[0], default=(lo, hi))


def _rebuild(samples: Sequence[Sample], at: float, end: float
             ) -> Tuple[Optional[float], Optional[float], Optional[float], bool, Optional[float]]:
    """The L2ARC rebuild after the restart at ``at`` (readings up to ``end``): bytes, buffers, seconds from ``at``
    until they stopped growing (None when nothing was rebuilt, or still growing at the last reading of a rebuild
    not done), success, and the readings' interval. All None without rebuild statistics (zfs-fuse, before 2.0)."""
    rows = sorted((s.ts, _finite(s.metrics.get("rebuild_size")), _finite(s.metrics.get("rebuild_bufs")),
                   _finite(s.metrics.get("rebuild_success"))) for s in samples
                  if s.entity.kind is Kind.L2ARC and at <= s.ts <= end and not s.since_boot)
    rows = [r for r in rows if r[1] is not None or r[2] is not None]
    if not rows:
        return None, None, None, False, None
    size = max((r[1] for r in rows if r[1] is not None), default=None)
    bufs = max((r[2] for r in rows if r[2] is not None), default=None)
    ok = bool(size) and any(r[3] for r in rows)
    gaps = [b[0] - a[0] for a, b in zip(rows, rows[1:]) if b[0] > a[0]]
    interval = median(gaps) if gaps else None
    done = next(i for i, r in enumerate(rows) if (size is None or (r[1] or 0.0) >= size)
                and (bufs is None or (r[2] or 0.0) >= bufs))
    still = done == len(rows) - 1 and not ok and len(rows) > 1
    return size, bufs, (None if still or not size else rows[done][0] - at), ok, interval


def _plateau(grid: Sequence[float], tps: Cells, lo: float, hi: float) -> Optional[float]:
    """TPS's level over the last :data:`PLATEAU_S` seconds before ``hi`` (not before ``lo``): the median of its
    cells, None with fewer than :data:`PLATEAU_CELLS` of them."""
    idx = [i for i in present(tps) if max(lo, hi - PLATEAU_S) <= grid[i] <= hi]
    return level(tps, idx) if len(idx) >= PLATEAU_CELLS else None


def _back(grid: Sequence[float], tps: Cells, at: float, end: float, plateau: float) -> Optional[float]:
    """Seconds from ``at`` to the first cell (up to ``end``) whose smoothed TPS is back to :data:`RECOVERED` of
    ``plateau``; the smoothing sees only the cells after the restart."""
    idx = [i for i, t in enumerate(grid) if at <= t <= end]
    if not idx:
        return None
    sm = smooth([tps[i] for i in idx])
    hit = next((i for i, v in zip(idx, sm) if v is not None and v >= RECOVERED * plateau), None)
    return None if hit is None else max(0.0, grid[hit] - at)


def _clean(tps: Optional[Cells]) -> Cells:
    """TPS cells with a damaged value (infinite, negative) taken as missing."""
    return [_finite(v) for v in tps] if tps else []


def restarts(samples: Sequence[Sample], events: Sequence[Event] = (), grid: Sequence[float] = (),
             tps: Optional[Cells] = None) -> List[Restart]:
    """Each restart in ``samples`` (time order not needed), with its L2ARC rebuild and TPS recovery.

    ``grid``/``tps``: TPS on the window's grid (``findings.analyze``'s cells; none: no TPS figures)."""
    counters = _arc_counters(samples)
    every = typical_gap(c[0] for c in counters) or 0.0
    resets = [(a[0], b[0]) for a, b in zip(counters, counters[1:])
              if b[0] - a[0] > GAP_INTERVALS * every and _went_back(a, b)]
    if not resets:
        return []
    times = sorted({s.ts for s in samples})
    cells = _clean(tps)
    grid = list(grid) if len(grid) == len(cells) else []
    gaps = []
    for lo, hi in resets:
        gap = _gap(times, lo, hi)
        # other sources read on (the zfs module reloaded under a running recorder): ZFS's own gap is the one
        gaps.append(gap if gap[1] - gap[0] > every else (lo, hi))
    resumed = [e.ts for e in events if is_resumed(e)]
    out: List[Restart] = []
    for k, (lo, at) in enumerate(gaps):
        end = gaps[k + 1][0] if k + 1 < len(gaps) else times[-1]
        before = gaps[k - 1][1] if k else -math.inf
        size, bufs, rebuild_s, ok, interval = _rebuild(samples, at, end)
        plateau = _plateau(grid, cells, before, lo) if grid else None
        back = _back(grid, cells, at, end, plateau) if plateau else None
        out.append(Restart(at, at - lo, size, bufs, rebuild_s, ok, plateau, back, end - at, interval,
                           any(lo < t <= at for t in resumed)))
    return out
