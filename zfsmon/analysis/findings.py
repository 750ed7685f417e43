"""What a soak recording says, in plain words with numbers: warm-up, cache fill, correlation, decay, goose eggs.

Pure: samples and events in, a :class:`Report` out (``zfsmon analyze``, the
dashboard and reports all use this one module). The two stories it must tell:

* cache warm-up: TPS climbs to a plateau while the L2ARC fills and data-disk
  reads fall (how long until 90% of the plateau, how fast the L2ARC filled,
  when disk reads halved, how closely TPS followed the caches);
* decay: TPS falls from its early level (a provider's write-back cache filling up).

And a restart inside a soak (:mod:`zfsmon.analysis.restart`): how long it was down, what the persistent L2ARC
rebuilt, and how fast TPS came back.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from zfsmon import names
from zfsmon.analysis import (
    arc,
    cacheadvice,
    goose,
    goose_window,
    incidents,
    qdsweep,
    readpath,
    restart,
    vdevperf,
)
from zfsmon.analysis.correlate import (
    Cells,
    Correlation,
    Point,
    align_all,
    bounds,
    correlate,
    median,
    smooth,
)
from zfsmon.analysis.correlate import level as _level
from zfsmon.analysis.correlate import present as _present
from zfsmon.analysis.incidents import Incident
from zfsmon.analysis.limits import MAX_CELLS
from zfsmon.analysis.rates import Deriver, derive_samples
from zfsmon.analysis.restart import Restart
from zfsmon.model import Event, EventKind, Kind, Role, Sample

# canonical series names ------------------------------------------------------------------------------------------
TPS = "tps"
#: fio's IOPS (its interval reports, every job and direction summed): the load a fio soak warms up by
IOPS = "fio_iops"
LATENCY = "latency_ms"
ARC_HIT = "arc_hit_pct"
L2_HIT = "l2arc_hit_pct"
L2_SIZE = "l2arc_size"
DATA_READS = "data_reads_per_disk"
CACHE_READS = "cache_reads_per_device"
PG_HIT = "pg_hit_pct"
#: per-second rates for the read path
RATE_SERIES = ("pg_blks_hit", "pg_blks_read", "arc_hits", "arc_misses", "l2_hits")

#: every kind of entity :func:`analyze` reads (the pool line, the ZIL and datasets are not among them): a
#: recording's other streams need not be read at all
KINDS = frozenset({Kind.WORKLOAD, Kind.ARC, Kind.L2ARC, Kind.VDEV, Kind.LEAF, Kind.DEVICE, Kind.TRACE})

#: what :func:`analyze` reads of a ``zpool iostat`` row (vdevs and leaves, most of a long window's samples):
#: vdevperf's metrics, goose's operations, the disk-read series' ``read_ops``; the bandwidth, queue and
#: other latency columns are not read
ROW_METRICS = vdevperf.ROW_METRICS | {n for pair in goose.OPS_PAIRS for n in pair} | {"read_ops"}


def reads_metric(kind: Kind, name: str) -> bool:
    """Whether :func:`analyze` reads metric ``name`` of an entity of ``kind`` (every metric of other kinds)."""
    if kind is Kind.VDEV or kind is Kind.LEAF:
        return name in ROW_METRICS or name.startswith(vdevperf.ROW_PREFIX)
    return True


#: what TPS is correlated with, and how each is called in words
DRIVERS: Tuple[Tuple[str, str], ...] = (
    (L2_HIT, "L2ARC hit %"),
    (L2_SIZE, "L2ARC size"),
    (ARC_HIT, "ARC hit %"),
    (DATA_READS, "data-disk reads/s per disk"),
    (CACHE_READS, "cache-device reads/s per device"),
    (PG_HIT, "PostgreSQL buffer hit %"),
)


# ------------------------------------------------------------------------------------------- samples -> series

def _pg_series(samples: Sequence[Sample], out: Dict[str, List[Point]]) -> None:
    """PostgreSQL buffer hit % and block rates per interval of each database's pg_stat_database counters, from
    :func:`zfsmon.analysis.readpath.pg_buffers` (as the dashboard has them); a reset starts a new baseline."""
    pg = sorted((s for s in samples if s.entity.kind == Kind.WORKLOAD and s.entity.name.startswith(names.PGSTAT_PREFIX)
                 and "blks_hit" in s.metrics and "blks_read" in s.metrics), key=lambda s: s.ts)
    if not pg:
        return
    deriver = Deriver()
    hit_pct: List[Point] = []
    hits: List[Point] = []
    reads: List[Point] = []
    for s in pg:
        d, _events = deriver.update(s)
        figs = readpath.pg_buffers(d.deltas, d.elapsed) if d is not None else None
        if d is None or figs is None:
            continue
        if "hit_pct" in figs:
            hit_pct.append((s.ts, figs["hit_pct"], d.elapsed))
        hits.append((s.ts, figs["blks_hit_per_s"], d.elapsed))
        reads.append((s.ts, figs["blks_read_per_s"], d.elapsed))
    out[PG_HIT], out["pg_blks_hit"], out["pg_blks_read"] = hit_pct, hits, reads


def _arc_series(samples: Sequence[Sample], out: Dict[str, List[Point]]) -> None:
    """ARC/L2ARC hit % and the read path's rates, from :mod:`zfsmon.analysis.arc` (one implementation for every
    view): counters where the window has them, else the percentages a tool (arcstat) recorded."""
    derived = derive_samples(samples)
    for kind, hit_name, rates in ((Kind.ARC, ARC_HIT, (("hits_per_s", "arc_hits"), ("misses_per_s", "arc_misses"))),
                                  (Kind.L2ARC, L2_HIT, (("hits_per_s", "l2_hits"),))):
        mine = [s for s in samples if s.entity.kind == kind]
        if any("hits" in s.metrics and "misses" in s.metrics and arc.has_counters(s) for s in mine):
            pts = derived[kind]
            out[hit_name] = [(d.ts, d.metrics["hit_pct"], d.interval or 0.0) for d in pts if "hit_pct" in d.metrics]
            for metric, name in rates:
                out[name] = [(d.ts, d.metrics[metric], d.interval or 0.0) for d in pts if metric in d.metrics]
        else:
            recorded = [(s.ts, float(s.metrics["hit_pct"])) for s in mine if "hit_pct" in s.metrics]
            if recorded:
                out[hit_name] = sorted(recorded)


def series_from_samples(samples: Iterable[Sample]) -> Dict[str, List[Point]]:
    """The series findings need, from any mix of recorded samples. Missing sources just leave series out.

    One pass sorts the window out (a long one holds millions of rows, nearly all ``zpool iostat`` leaves): the
    ARC, L2ARC and workload samples the other series read are handed on, not looked for again."""
    by: Dict[Tuple[str, str], List[Tuple[float, float]]] = {}
    spans: Dict[Tuple[str, str], List[Optional[float]]] = {}
    disk_reads: Dict[Tuple[Role, Kind], Dict[float, List[float]]] = {}
    caches: List[Sample] = []  # ARC and L2ARC, in window order
    workload: List[Sample] = []
    fio_iops: Dict[float, float] = {}
    fio_jobs: Set[str] = set()
    leaf, vdev, l2, wl, arc_kind = Kind.LEAF, Kind.VDEV, Kind.L2ARC, Kind.WORKLOAD, Kind.ARC
    data, cache = Role.DATA, Role.CACHE
    for s in samples:
        if s.since_boot:
            continue
        e = s.entity
        kind = e.kind
        if kind is leaf or kind is vdev:
            role = e.role
            if (role is data or role is cache) and "read_ops" in s.metrics:
                per_ts = disk_reads.get((role, kind))
                if per_ts is None:
                    per_ts = disk_reads[(role, kind)] = {}
                got = per_ts.get(s.ts)
                if got is None:
                    per_ts[s.ts] = [float(s.metrics["read_ops"])]
                else:
                    got.append(float(s.metrics["read_ops"]))
        elif kind is wl:
            workload.append(s)
            group = e.name  # pg_stat_database: _pg_series
            job = names.fio_job_direction(group) if group.startswith(names.FIO_PREFIX) else None
            if job is not None and "iops" in s.metrics:
                fio_iops[s.ts] = fio_iops.get(s.ts, 0.0) + float(s.metrics["iops"])
                fio_jobs.add(job[0])
                continue
            if group not in (names.PGBENCH, names.PGBENCH_RUN):
                continue
            for m in ("tps", "latency_avg_ms"):
                if m in s.metrics:
                    by.setdefault((group, m), []).append((s.ts, float(s.metrics[m])))
                    spans.setdefault((group, m), []).append(s.interval)
        elif kind is l2:
            caches.append(s)
            for m in ("size", "asize"):
                if m in s.metrics:
                    by.setdefault(("l2", m), []).append((s.ts, float(s.metrics[m])))
        elif kind is arc_kind:
            caches.append(s)
    out: Dict[str, List[Point]] = {}
    for group in (names.PGBENCH, names.PGBENCH_RUN):
        if (group, "tps") in by:
            summary = group == names.PGBENCH_RUN
            out[TPS] = [(t, v, sp or 0.0) if summary else (t, v) for (t, v), sp in
                        zip(by[(group, "tps")], spans[(group, "tps")])]
            if (group, "latency_avg_ms") in by:
                out[LATENCY] = [(t, v, sp or 0.0) if summary else (t, v) for (t, v), sp in
                                zip(by[(group, "latency_avg_ms")], spans[(group, "latency_avg_ms")])]
            break
    if fio_iops and len(fio_jobs) == 1:  # one job: a queue-depth sweep's jobs (qd1, qd2 ...) rise by design
        out[IOPS] = sorted(fio_iops.items())
    _arc_series(caches, out)
    size = by.get(("l2", "size")) or by.get(("l2", "asize"))
    if size:
        out[L2_SIZE] = list(size)
    _pg_series(workload, out)
    for role, name in ((Role.DATA, DATA_READS), (Role.CACHE, CACHE_READS)):
        per_ts = disk_reads.get((role, leaf)) or disk_reads.get((role, vdev))
        if per_ts:
            out[name] = [(t, sum(v) / len(v)) for t, v in sorted(per_ts.items())]
    return out


# ------------------------------------------------------------------------------------------------- the report

@dataclass
class Finding:
    topic: str  # warmup | l2arc_fill | disk_reads | correlation | warmup_correlation | decay | read_path | goose_eggs
    #           | fio_run | qd_sweep | vdev_perf | cache_advice | restart | incident | data
    text: str
    numbers: Dict[str, object] = field(default_factory=dict)
    #: the moments the text speaks of, in words -> epoch seconds (the time TPS reached its plateau, a goose egg's
    #: busiest interval): where the dashboard's findings view jumps to
    moments: Dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    start: Optional[float]
    end: Optional[float]
    step: float
    series: Dict[str, int]  # name -> points present
    findings: List[Finding]
    runs: int = 0
    #: the step the readings were folded to as they were read (:mod:`zfsmon.analysis.coarsen`), if they were
    folded: Optional[float] = None

    def as_dict(self) -> Dict[str, object]:
        return {"start": self.start, "end": self.end, "step_s": self.step, "series": self.series, "runs": self.runs,
                **({"folded_to_s": self.folded} if self.folded else {}),
                "findings": [{"topic": f.topic, "text": f.text, **({"numbers": f.numbers} if f.numbers else {}),
                              **({"moments": f.moments} if f.moments else {})} for f in self.findings]}

    def render(self) -> str:
        lines = []
        if self.start is not None and self.end is not None:
            folded = f" (readings folded to {duration(self.folded)} steps as read)" if self.folded else ""
            lines.append(f"Window: {duration(self.end - self.start)} on a {duration(self.step)} grid{folded}"
                         f"{f', {self.runs} pgbench run' + ('s' if self.runs != 1 else '') if self.runs else ''}.")
        for f in self.findings:
            lines.append(f"- {f.text}")
        return "\n".join(lines) + "\n"

    def topic(self, name: str) -> List[Finding]:
        return [f for f in self.findings if f.topic == name]


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 35 min``: how people say soak times."""
    s = int(round(seconds))
    if s < 120:
        return f"{seconds:.0f} s" if seconds >= 10 or seconds == int(seconds) else f"{seconds:.1f} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 and s < 600 else f"{round(s / 60)} min"
    h, m = divmod(round(s / 60), 60)
    return f"{h} h {m} min" if m else f"{h} h"


def _num(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _bytes(v: float) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= div:
            return f"{v / div:.1f} {unit}"
    return f"{v:.0f} B"


def _edge(n: int, frac: float, least: int = 3) -> int:
    return max(least, int(round(n * frac)))


EARLY_SECONDS = 60.0
"""The early level's span at most: a warm-up of minutes must not be averaged away on a window of hours."""


def _early(grid: List[float], idx: Sequence[int]) -> int:
    """How many of the first present cells make the early level: the first tenth, but no more than
    EARLY_SECONDS of it (at least 3 cells). The first tenth of a 100-minute soak is already warm."""
    first = idx[:_edge(len(idx), 0.1)]
    t0 = grid[idx[0]]
    return max(3, sum(1 for i in first if grid[i] - t0 < EARLY_SECONDS))


def _warmup(grid: List[float], tps: Cells, what: str = "TPS") -> List[Finding]:
    """TPS (or, for a fio soak, ``what`` = IOPS) from its start level to its plateau, and when it reached 90 %."""
    idx = _present(tps)
    if len(idx) < 6:
        return [Finding("warmup", f"Too few {what} points ({len(idx)}) to judge a warm-up.", {"points": len(idx)})]
    sm = smooth(tps)
    start = _level(tps, idx[:_early(grid, idx)])
    plateau = _level(tps, idx[-_edge(len(idx), 0.2):])
    assert start is not None and plateau is not None
    t0 = grid[idx[0]]
    if plateau <= 0 or plateau < start * 1.1:
        return []
    hit = next((i for i in idx if (level := sm[i]) is not None and level >= 0.9 * plateau), None)
    nums: Dict[str, object] = {"tps_start": start, "tps_plateau": plateau, "factor": plateau / start if start else None}
    if what != "TPS":
        nums["of"] = what
    text = f"{what} warmed up from {_num(start)} to a plateau of {_num(plateau)}"
    if start > 0:
        text += f" (x{plateau / start:.1f})"
    moments = {f"{what} first measured": t0}
    if hit is not None:
        nums["time_to_90pct_s"] = grid[hit] - t0
        moments[f"{what} reached 90% of the plateau"] = grid[hit]
        text += f"; it reached 90% of the plateau after {duration(grid[hit] - t0)}."
    else:
        text += "."
    return [Finding("warmup", text, nums, moments)]


def _l2_fill(grid: List[float], size: Cells) -> List[Finding]:
    idx = _present(size)
    if len(idx) < 3:
        return []
    s0 = size[idx[0]]
    smax = max(v for i in idx if (v := size[i]) is not None)
    assert s0 is not None
    if smax - s0 < 1 << 20:
        return [Finding("l2arc_fill", f"The L2ARC did not grow ({_bytes(s0)} throughout).", {"size_b": s0})]
    t0 = grid[idx[0]]
    i90, s90 = next((i, v) for i in idx if (v := size[i]) is not None and v >= s0 + 0.9 * (smax - s0))
    t90 = grid[i90] - t0
    rate = (s90 - s0) / t90 if t90 > 0 else None
    last = size[idx[-1]]
    tail = size[idx[-_edge(len(idx), 0.1, 2)]]
    growing = last is not None and tail is not None and last > tail * 1.02
    nums: Dict[str, object] = {"size_start_b": s0, "size_max_b": smax, "time_to_90pct_s": t90,
                               "fill_rate_b_per_s": rate, "still_growing": growing}
    text = f"The L2ARC grew from {_bytes(s0)} to {_bytes(smax)}; it reached 90% of that after {duration(t90)}"
    if rate:
        text += f" (filling at {_bytes(rate)}/s)"
    text += "; still growing at the end." if growing else "."
    return [Finding("l2arc_fill", text, nums, {"the L2ARC reached 90% of its growth": grid[i90]})]


def _disk_reads(grid: List[float], reads: Cells, cache: Optional[Cells]) -> List[Finding]:
    idx = _present(reads)
    if len(idx) < 6:
        return []
    k = _early(grid, idx)
    early = _level(reads, idx[:k])
    late = _level(reads, idx[-_edge(len(idx), 0.1):])
    assert early is not None and late is not None
    nums: Dict[str, object] = {"early_per_disk": early, "late_per_disk": late}
    text = f"Data-disk reads went from {_num(early)}/s to {_num(late)}/s per disk"
    sm = smooth(reads)
    moments: Dict[str, float] = {}
    # a fall that did not last (a dip of disks busy to the end, e.g. at their IOPS limit) is no fall by half
    if early > 0 and late <= early / 2:
        half = next((i for i in idx[k:] if (level := sm[i]) is not None and level <= early / 2), None)
        if half is not None:
            nums["time_to_half_s"] = grid[half] - grid[idx[0]]
            moments["data-disk reads fell by half"] = grid[half]
            text += f"; they fell by half after {duration(grid[half] - grid[idx[0]])}"
    elif early > 0 and late >= early * 0.8:
        text += "; no lasting fall: they were as busy at the end"
    if cache is not None and _present(cache):
        vals = [v for v in cache if v is not None]
        lo, hi = min(vals), max(vals)
        nums.update(cache_min_per_device=lo, cache_max_per_device=hi)
        text += f", while each cache device served {_num(lo)}-{_num(hi)} reads/s"
    return [Finding("disk_reads", text + ".", nums, moments)]


def _decay(grid: List[float], tps: Cells, threshold: float) -> List[Finding]:
    idx = _present(tps)
    if len(idx) < 6:
        return []
    k = _early(grid, idx)
    early = _level(tps, idx[:k])
    width = _edge(len(idx), 0.1)
    late = _level(tps, idx[-width:])
    sm = smooth(tps)
    assert early is not None and late is not None
    peak = _peak_level(tps, idx, width)
    out: List[Finding] = []
    if early > 0 and late < early * (1 - threshold):
        floor = early * (1 - threshold)
        below = next((i for i in idx[k:] if (level := sm[i]) is not None and level < floor), None)
        nums: Dict[str, object] = {"tps_early": early, "tps_late": late, "drop_pct": 100 * (1 - late / early),
                                   "threshold_pct": 100 * threshold}
        text = f"TPS decayed {100 * (1 - late / early):.0f}% from its early level of {_num(early)} to {_num(late)}"
        moments: Dict[str, float] = {}
        if below is not None:
            nums["below_threshold_after_s"] = grid[below] - grid[idx[0]]
            moments[f"TPS fell below {100 * (1 - threshold):.0f}% of the early level"] = grid[below]
            text += (f"; it stayed below {100 * (1 - threshold):.0f}% of the early level from "
                     f"{duration(grid[below] - grid[idx[0]])} on")
        out.append(Finding("decay", text + ".", nums, moments))
    elif peak is not None and peak > early * 1.1 and late < peak * (1 - threshold):
        out.append(Finding("decay", f"TPS fell {100 * (1 - late / peak):.0f}% from its peak level of {_num(peak)} "
                           f"to {_num(late)} (medians of {width} points each).",
                           {"tps_peak": peak, "tps_late": late, "drop_pct": 100 * (1 - late / peak),
                            "points_per_level": width}))
    return out


def _peak_level(cells: Cells, idx: Sequence[int], width: int) -> Optional[float]:
    """The highest level held: the largest median of ``width`` consecutive present cells (stepping half of that).

    Measured as the late level is (a median of as many points), so one fast run or second of a soak whose runs
    spread +-20 % is not taken for a level TPS later fell from."""
    last = max(0, len(idx) - width)
    starts = [*range(0, last, max(1, width // 2)), last]
    return max((v for v in (_level(cells, idx[i:i + width]) for i in starts) if v is not None), default=None)


def _correlations(cells: Dict[str, Cells], step: float, max_lag: int) -> List[Finding]:
    tps = cells.get(TPS)
    if tps is None:
        return []
    out: List[Finding] = []
    for name, words in DRIVERS:
        other = cells.get(name)
        if other is None or len(_present(other)) < 3:
            continue
        c: Correlation = correlate(tps, other, step, max_lag)
        if c.n < 3:
            continue
        text = f"TPS vs {words}: "
        if c.spearman is None:
            text += c.note + "."
        else:
            pear = f"{c.pearson:+.2f}" if c.pearson is not None else "n/a"
            text += f"Spearman {c.spearman:+.2f}, Pearson {pear} over {c.n} points: {c.note}"
            if c.best_lag and c.r_at_best_lag is not None and abs(c.r_at_best_lag) > abs(c.spearman) + 0.05:
                lead = "moves first" if c.best_lag > 0 else "follows TPS"
                text += (f"; strongest at a lag of {duration(abs(c.best_lag_s))} ({words} {lead}), "
                         f"Spearman {c.r_at_best_lag:+.2f}")
            text += "."
        out.append(Finding("correlation", text, {"with": name, **c.as_dict()}))
    return out


#: the warm-up phase whose correlations are stated on their own: this many times its time to 90 % of the plateau
#: (the climb and as long again on the plateau, for contrast), if that is at most half the window
WARMUP_PHASE = 2.0


def _warmup_correlations(grid: List[float], cells: Dict[str, Cells], step: float,
                         warm: Sequence[Finding]) -> List[Finding]:
    """TPS against each cache series over the warm-up alone, when it is a small part of the window.

    Over a 100-minute soak that warmed in 3 minutes, the whole window's correlations describe the plateau's
    noise (Spearman ~0); how TPS climbed with the L2ARC is what the user asked."""
    t90 = next((f.numbers.get("time_to_90pct_s") for f in warm if f.numbers.get("time_to_90pct_s")), None)
    tps = cells.get(TPS)
    if not isinstance(t90, (int, float)) or tps is None:
        return []
    idx = _present(tps)
    t0 = grid[idx[0]]
    end = next((i for i in range(idx[0], len(grid)) if grid[i] - t0 > WARMUP_PHASE * t90), len(grid))
    if end - idx[0] < 10 or end > len(grid) / 2:
        return []
    part = slice(idx[0], end)
    said: List[Tuple[float, str]] = []
    phase_s, n_cells = grid[end - 1] + step - t0, end - idx[0]
    numbers: Dict[str, object] = {"phase_s": phase_s, "cells": n_cells}
    per: Dict[str, object] = {}
    for name, words in DRIVERS:
        other = cells.get(name)
        if other is None:
            continue
        c = correlate(tps[part], other[part], step, max(0, min(10, (end - idx[0]) // 4)))
        if c.spearman is None:
            continue
        per[name] = c.as_dict()
        said.append((abs(c.spearman), f"{words} (Spearman {c.spearman:+.2f})"))
    if not said:
        return []
    numbers["with"] = per
    listed = ", ".join(w for _r, w in sorted(said, key=lambda x: -x[0]))
    return [Finding("warmup_correlation",
                    f"During the warm-up (its first {duration(phase_s)}, {n_cells} points), "
                    f"TPS moved with: {listed}. Everything trends during a warm-up, so these say what moved "
                    "together, not what caused what.", numbers)]


def _read_path(cells: Dict[str, Cells]) -> List[Finding]:
    if not any(n in cells for n in RATE_SERIES):
        return []
    n = max(len(v) for v in cells.values())
    whole = readpath.window_shares(cells, 0, n)
    if whole is None:
        return []
    k = max(1, n // 10)
    early, late = readpath.window_shares(cells, 0, k), readpath.window_shares(cells, n - k, n)
    basis = "PostgreSQL block reads" if whole.basis == "postgres" else "ZFS reads (no pg_stat_database)"
    text = f"Read path ({basis}): {whole.text()}"
    if early is not None and late is not None and n >= 10:
        text += f"; first tenth: {early.text()}; last tenth: {late.text()}"
    return [Finding("read_path", text + ".", {"whole": whole.as_dict(),
                                                 "early": early.as_dict() if early else None,
                                                 "late": late.as_dict() if late else None})]


def _goose(window: Sequence[Sample]) -> List[Finding]:
    """Goose eggs over the window, from :func:`zfsmon.analysis.goose_window.summarize_window` (every view asks it)."""
    summary = goose_window.summarize_window(window)
    if summary is None:
        return []
    moments = {f"goose egg on {leaf}: its busiest (ZFS {summary.worst[leaf].zfs_ops:.0f} ops/s)": at
               for leaf, at in sorted(summary.worst_at.items())}
    return [Finding("goose_eggs", summary.text(), {"per_leaf": summary.per_leaf}, moments)]


def fio_runs(samples: Iterable[Sample]) -> List[Dict[str, Any]]:
    """fio's own result per job and direction (its final report, ``fio-run:`` entities) as dicts: the whole-run
    IOPS, bandwidth and printed percentiles, the numbers fio printed and users quote, not ones rebuilt from
    intervals. ``analyze`` and ``info`` both show these."""
    runs: List[Dict[str, Any]] = []
    for s in samples:
        jd = names.fio_job_direction(s.entity.name, names.FIO_RUN_PREFIX) if s.entity.kind == Kind.WORKLOAD else None
        if jd is not None and s.metrics.get("ios", 0.0) > 0:
            runs.append({"job": jd[0], "direction": jd[1], "ts": s.ts, **s.metrics})
    return runs


def fio_run_text(run: Mapping[str, Any]) -> str:
    """One run of :func:`fio_runs` in words: job, direction, IOPS, bandwidth, clat p50/p99/p99.9, runtime, error."""
    pct = " / ".join(f"{label} {_lat_ms(run.get(f'clat_{p}_ms'))}" for p, label in
                     (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")))
    err = f", error {run['error']:g}" if run.get("error") else ""
    return (f"{run['job']} {run['direction']} {run.get('iops', 0.0):,.0f} IOPS, {_bytes(run.get('bw_bytes', 0.0))}/s, "
            f"clat {pct} over {duration(run.get('runtime_s', 0.0))}{err}")


def _fio_runs(window: Sequence[Sample]) -> List[Finding]:
    """fio's own result per job and direction: :func:`fio_runs`, said by :func:`fio_run_text`."""
    runs = fio_runs(window)
    if not runs:
        return []
    text = "fio's result (its final report): " + "; ".join(fio_run_text(r) for r in runs) + "."
    return [Finding("fio_run", text, {"runs": runs})]


def _qd_sweep(window: Sequence[Sample]) -> List[Finding]:
    """fio's queue-depth sweep: IOPS and latency per depth, the knee, Little's law (:mod:`zfsmon.analysis.qdsweep`)."""
    sw = qdsweep.sweep(window)
    if sw is None:
        return []
    numbers = sw.as_dict()
    rows = vdevperf.step_windows(window, sw.steps)
    numbers["per_step_vdevs"] = rows
    text = sw.text()
    beside = _beside(rows)
    if beside:
        text.append(beside)
    return [Finding("qd_sweep", " ".join(text), numbers)]


def _beside(rows: Sequence[Mapping[str, Optional[float]]]) -> str:
    """The devices' latency beside fio's per depth: where the time went (data disks, cache devices, SLOG)."""
    parts = []
    for r in rows:
        fio = (r.get("fio_p50_ms"), r.get("fio_p99_ms"))
        devs = [f"{role} {op} {_lat_ms(r.get(f'{role}_{op}_p50_ms'))}/{_lat_ms(r.get(f'{role}_{op}_p99_ms'))}"
                for role in ("data", "cache", "log") for op in ("read", "write")
                if r.get(f"{role}_{op}_p99_ms") is not None]
        if devs and fio[1] is not None:
            parts.append(f"depth {r['depth']:g}: fio {_lat_ms(fio[0])}/{_lat_ms(fio[1])}, " + ", ".join(devs))
    if not parts:
        return ""
    return "Device latency beside fio's (p50/p99 per depth, from the vdevs' own histograms): " + "; ".join(parts) + "."


def _lat_ms(v: object) -> str:
    if not isinstance(v, (int, float)):
        return "?"
    return f"{v * 1000:.0f} us" if v < 1 else f"{v:.1f} ms"


def _vdev_perf(window: Sequence[Sample]) -> List[Finding]:
    """Operations, IOPS per GB, what the cache devices add, latency per role (:mod:`zfsmon.analysis.vdevperf`)."""
    vp = vdevperf.vdev_perf(window)
    if vp is None:
        return []
    moments = {f"busiest interval of the {role} devices ({st.peak_iops:,.0f} IOPS)": st.peak_ts
               for role, st in vp.roles.items() if st.peak_ts is not None and st.peak_iops > 0}
    return [Finding("vdev_perf", vp.text(), vp.as_dict(), moments)]


def _cache_advice(window: Sequence[Sample]) -> List[Finding]:
    """Would a larger ARC or an L2ARC help (:mod:`zfsmon.analysis.cacheadvice`)."""
    adv = cacheadvice.advise(window)
    return [Finding("cache_advice", adv.text(), dict(adv.numbers))] if adv else []


def _clock(ts: float) -> str:
    """A moment as people read it off a log: ``01:23:45Z`` (UTC, as the timeline labels it)."""
    return time.strftime("%H:%M:%S", time.gmtime(ts)) + "Z"


def incident_text(inc: Incident) -> str:
    """``virtio-data0 (data leaf of zguest/mirror-0) REMOVED at 14:47:29Z for 47 s; pool DEGRADED; pool zguest:
    resilver finished with 0 errors; the workload did 1,782 ops/s meanwhile against 2,367 in the minute before
    (-25 %).``: which device, when, how long, what ZFS did, what it cost."""
    if inc.kind == Kind.POOL:
        what = f"pool {inc.pool}"
    elif inc.kind == Kind.VDEV or not inc.parent or inc.parent == inc.pool:
        what = f"{inc.device} ({inc.role or 'a'} device of {inc.pool})"
    else:
        what = f"{inc.device} ({inc.role or 'a'} leaf of {inc.pool}/{inc.parent})"
    span = (f"for {duration(inc.seconds)}" if inc.end is not None
            else f"and was still so when the recording ended, {duration(inc.seconds)} later")
    head = f"{'/'.join(inc.states)} at" if inc.states else "failing I/O from"
    parts = [f"{what} {head} {_clock(inc.start)} {span}"]
    errs = incidents.error_words(inc.errors)
    if errs:
        parts.append(f"{errs} counted")
    if inc.pool_states and inc.kind != Kind.POOL:
        parts.append(f"pool {'/'.join(inc.pool_states)}")
    parts += inc.scans
    rel = incidents.change(inc.ops_before, inc.ops_during)
    if rel is not None and inc.ops_before is not None and inc.ops_during is not None:
        parts.append(f"the workload did {_num(inc.ops_during)} ops/s meanwhile against {_num(inc.ops_before)} in "
                     f"the minute before ({rel * 100:+.0f} %)")
    return "; ".join(parts) + "."


def _incidents(window: Sequence[Sample], events: Sequence[Event]) -> List[Finding]:
    out = []
    for inc in incidents.incidents(window, events):
        moments = {"it began": inc.start, **({"it ended": inc.end} if inc.end is not None else {})}
        out.append(Finding("incident", incident_text(inc), inc.as_dict(), moments))
    return out


def _tps_back(r: Restart) -> str:
    """How long TPS took to be back to 90 % of its plateau after ``r``, in words (a lower bound when it was not
    back by the end of what was recorded)."""
    if r.back_90_s is not None:
        return duration(r.back_90_s)
    return f"more than {duration(r.recorded_s)} (not back within what was recorded)"


def restart_text(r: Restart) -> str:
    """One restart in words: down for how long, what the L2ARC rebuild restored and when, when TPS was back."""
    text = f"After the restart at {_clock(r.at)} (down {duration(r.down_s)})"
    bufs = f" ({r.rebuilt_bufs:,.0f} buffers)" if r.rebuilt_bufs is not None else ""
    every = f" (L2ARC readings every {duration(r.l2_interval_s)})" if r.l2_interval_s else ""
    if r.rebuilt_bytes is None:
        text += " no L2ARC rebuild figures were recorded"
    elif not r.rebuilt:
        text += " the L2ARC started empty (no rebuild)"
    else:
        size = _bytes(r.rebuilt_bytes or 0.0)
        if r.rebuild_s is None:
            when = f", still rebuilding at the end{every}"
        elif r.rebuild_s == 0:
            when = f", done by the first L2ARC reading after it{every}"
        else:
            when = f" in {duration(r.rebuild_s)}{every}"
        text += (f" the L2ARC was rebuilt: {size}{bufs}{when}" if r.rebuild_ok else
                 f" the L2ARC rebuild restored {size}{bufs}{when}, but reported no success")
    if r.plateau_tps is not None:
        plateau = f"90 % of its plateau ({_num(r.plateau_tps)} TPS before the restart)"
        text += (f"; TPS back to {plateau} after {duration(r.back_90_s)}" if r.back_90_s is not None else
                 f"; TPS not back to {plateau} within the {duration(r.recorded_s)} recorded")
    return text + "."


def restart_compared(rebuilt: Restart, cold: Restart) -> str:
    """Two recordings' restarts, one with the L2ARC rebuild and one without (``l2arc_rebuild_enabled=0``), in
    one sentence: what ``bench/`` prints."""
    if rebuilt.rebuilt:
        took = f" in {duration(rebuilt.rebuild_s)}" if rebuilt.rebuild_s is not None else ", still rebuilding"
        what = f"the L2ARC was rebuilt ({_bytes(rebuilt.rebuilt_bytes or 0.0)}{took})"
    else:
        what = "the L2ARC was not rebuilt"
    if rebuilt.plateau_tps is None or cold.plateau_tps is None:
        return f"After the restart {what}; TPS: no plateau before the restart to compare with."
    return (f"After the restart {what}; TPS was back to 90 % of its plateau after {_tps_back(rebuilt)}, "
            f"against {_tps_back(cold)} cold.")


def _before_restart(found: List[Finding], restarts: Sequence[Restart]) -> List[Finding]:
    """Findings of the first boot's cells, saying so when a restart came after them."""
    if not restarts:
        return found
    for f in found:
        f.text = f"Before the first restart: {f.text}"
        f.numbers["before_restart_at"] = restarts[0].at
    return found


def _restarts(found: Sequence[Restart]) -> List[Finding]:
    """Each restart in the window (:func:`zfsmon.analysis.restart.restarts`), said by :func:`restart_text`."""
    out = []
    for r in found:
        moments = {f"the restart: samples resumed after {duration(r.down_s)} down": r.at}
        if r.rebuilt and r.rebuild_s is not None:
            moments["the L2ARC rebuild done" if r.rebuild_ok else "the L2ARC rebuild stopped growing"] = \
                r.at + r.rebuild_s
        if r.back_90_s is not None:
            moments["TPS back to 90% of its plateau after the restart"] = r.at + r.back_90_s
        out.append(Finding("restart", restart_text(r), asdict(r), moments))
    return out


def restart_figures(samples: Sequence[Sample], events: Sequence[Event] = (), step: Optional[float] = None
                    ) -> List[Restart]:
    """Each restart's figures on the grid :func:`analyze` would use: what ``bench/`` prints and compares."""
    series = series_from_samples(samples)
    _step, grid, cells = _on_grid(series, step, None, None)
    return restart.restarts(samples, events, grid, cells.get(TPS))


#: the steps a long window's grid is coarsened to (seconds)
COARSE_STEPS = (2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0)


def choose_step(series: Dict[str, List[Point]], span: Optional[float] = None) -> float:
    """The coarsest typical reporting interval among the series (a finer grid would be mostly empty), coarsened
    to the next of :data:`COARSE_STEPS` when ``span`` seconds would need more than :data:`MAX_CELLS` cells."""
    steps = []
    for pts in series.values():
        ts = sorted({p[0] for p in pts})
        gaps = [b - a for a, b in zip(ts, ts[1:]) if b > a]
        if len(gaps) >= 2:
            steps.append(median(gaps))
    tps = series.get(TPS)
    if tps and len(tps[0]) > 2:  # run summaries: a cell per run would hide everything else
        steps = [s for s in steps if s <= max(p[2] for p in tps)] or steps
    step = max(1.0, round(max(steps), 3)) if steps else 10.0
    return step if span is None else coarser(step, span)


def coarser(step: float, span: float) -> float:
    """``step``, or the next of :data:`COARSE_STEPS` (else whole hours) when ``span`` seconds would need more than
    :data:`MAX_CELLS` cells of it."""
    if span / step <= MAX_CELLS:
        return step
    need = span / MAX_CELLS
    return next((s for s in COARSE_STEPS if s >= need), math.ceil(need / 3600.0) * 3600.0)


def fold_step(interval: Optional[float], span: Optional[float], step: Optional[float] = None) -> Optional[float]:
    """The step a window's readings are folded to as they are read (:mod:`zfsmon.analysis.coarsen`), or None.

    ``interval``: the recording's reporting interval; ``span``: the window's seconds; ``step``: a grid step the
    user chose. Folded only when the grid is coarser than the readings (a long window, or a coarse ``--step``):
    then every reading would only be averaged into its cell."""
    if not interval or interval <= 0:
        return None
    grid = step if step else (coarser(interval, span) if span else interval)
    return grid if grid >= 1.5 * interval else None


def _on_grid(series: Dict[str, List[Point]], step: Optional[float], start: Optional[float], end: Optional[float]
             ) -> Tuple[float, List[float], Dict[str, Cells]]:
    """The series on one grid: ``step`` (else :func:`choose_step` for the seconds the grid will cover), its times,
    each series' cells."""
    if not step:
        got = bounds(series, start, end)
        step = choose_step(series, got[1] - got[0] if got else None)
    grid, cells = align_all(series, step, start, end)
    return step, grid, cells


def analyze(samples: Sequence[Sample], events: Sequence[Event] = (), step: Optional[float] = None,
            start: Optional[float] = None, end: Optional[float] = None, decay_threshold: float = 0.2,
            max_lag: Optional[int] = None, health: Optional[Sequence[Sample]] = None) -> Report:
    """Everything findings can say about the samples in [start, end]. ``health``: the ``status`` source's
    readings, unfolded, where ``samples`` were read without them (folded, or of :data:`KINDS` only); else the
    incidents are looked for in ``samples``."""
    window = [s for s in samples if (start is None or s.ts >= start) and (end is None or s.ts <= end)]
    series = series_from_samples(window)
    counts = {k: len(v) for k, v in series.items()}
    runs = len({e.data.get("run") for e in events if e.kind == EventKind.RUN_END
                and (start is None or e.ts >= start) and (end is None or e.ts <= end)})
    sweep = _fio_runs(window) + _qd_sweep(window)
    window_events = [e for e in events if (start is None or e.ts >= start) and (end is None or e.ts <= end)]
    hw = [s for s in health if (start is None or s.ts >= start) and (end is None or s.ts <= end)] \
        if health is not None else window
    work = [s for s in window if s.entity.kind == Kind.WORKLOAD] if health is not None else []
    if not series:
        told = sweep + _incidents([*hw, *work], window_events)
        if told:
            return Report(min(s.ts for s in window), max(s.ts for s in window), step or 0.0, counts,
                          sweep + _vdev_perf(window) + told[len(sweep):], runs)
        return Report(start, end, step or 0.0, counts, [Finding("data", "No workload or ZFS samples in this window.")],
                      runs)
    step, grid, cells = _on_grid(series, step, start, end)
    findings: List[Finding] = []
    fio = any(s.entity.kind == Kind.WORKLOAD and names.fio_job_direction(s.entity.name) for s in window)
    missing = [w for n, w in ((TPS, "TPS (pgbench)"), (L2_SIZE, "L2ARC"), (ARC_HIT, "ARC"),
                              (DATA_READS, "data-disk reads (zpool iostat)"), (PG_HIT, "pg_stat_database"))
               if n not in series and not (fio and n in (TPS, PG_HIT))]
    if missing:
        findings.append(Finding("data", "Not in this window: " + ", ".join(missing) + ".", {"missing": missing}))
    lag = max_lag if max_lag is not None else max(0, min(10, len(grid) // 4))
    found = restart.restarts(window, events, grid, cells.get(TPS))
    # with restarts in the window the warm-up, the L2ARC's fill and the disk reads are the first boot's (a
    # reboot's cold start is the restart finding's to tell): the cells before the first restart
    upto = bisect.bisect_left(grid, found[0].at) if found else len(grid)
    first = {name: col[:upto] for name, col in cells.items()}
    warm = (_warmup(grid[:upto], first[TPS]) if TPS in cells else
            _warmup(grid[:upto], first[IOPS], "IOPS") if IOPS in cells else [])
    findings += _before_restart(warm, found)
    findings += _restarts(found)
    if L2_SIZE in cells:
        findings += _before_restart(_l2_fill(grid[:upto], first[L2_SIZE]), found)
    if DATA_READS in cells:
        findings += _before_restart(_disk_reads(grid[:upto], first[DATA_READS], first.get(CACHE_READS)), found)
    findings += _correlations(cells, step, lag)
    findings += _warmup_correlations(grid, cells, step, warm)
    if TPS in cells:
        findings += _decay(grid, cells[TPS], decay_threshold)
    findings += _read_path(cells)
    findings += _goose(window)
    findings += sweep
    findings += _vdev_perf(window)
    findings += _cache_advice(window)
    findings += _incidents([*hw, *work], window_events)
    t_lo = grid[0] if grid else start
    t_hi = (grid[-1] + step) if grid else end
    return Report(t_lo, t_hi, step, counts, findings, runs)

