"""The workload panel's fold: pgbench's TPS and latency (per second, or per run's summary), PostgreSQL's buffer
hit rate, and each fio job's IOPS and latency percentiles."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar, Deque, Dict, List, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis import readpath
from zfsmon.model import EventKind, Kind, Sample
from zfsmon.views.top.folds.base import Derivation, Fold, StateView

#: fio's completion-latency percentiles the workload panel draws as a band (metric ``clat_<p>_ms``)
FIO_PCTS: Tuple[str, ...] = ("p50", "p90", "p99", "p999", "max")


@dataclass
class FioRow:
    """One fio job and direction over the window: IOPS now and its series, latency percentiles as a band.

    The band's percentiles are, each, the I/O-weighted median of the window's intervals' own percentiles (the
    rule of :mod:`zfsmon.analysis.qdsweep`: fio's per-interval percentiles cannot be merged exactly without its
    histograms, and a median is not moved by one bad second as a mean is); ``max`` is the window's largest.
    """

    job: str
    direction: str
    key: str  # the entity key (its series: ``spark(key, "iops")``)
    iops: Optional[float]  # the newest interval's
    last: float  # ts of the newest sample
    intervals: int  # intervals with I/O in the window (what the band is made of)
    pct_ms: Dict[str, float] = field(default_factory=dict)  # FIO_PCTS -> ms


class WorkloadFold(Fold):
    id: ClassVar[str] = "workload"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.WORKLOAD,)

    def __init__(self) -> None:
        super().__init__()
        #: per fio entity: (ts, I/Os, {percentile: ms}) of each interval with I/O
        self.fio: Dict[str, Deque[Tuple[float, float, Dict[str, float]]]] = {}
        #: the PostgreSQL blocks asked for in the newest interval (hit + read): what pg_hit_pct is of
        self.pg_blocks: Optional[float] = None

    def feed(self, s: Sample, derived: Derivation) -> None:
        name = s.entity.name
        if name == names.PGBENCH:
            for m in ("tps", "latency_avg_ms"):
                if m in s.metrics:
                    self.push("workload", m, s.ts, s.metrics[m])
        elif name == names.PGBENCH_RUN:  # a run's summary: the only numbers of a loop soak without -P
            for m, series in (("tps", "run_tps"), ("latency_avg_ms", "run_latency_ms")):
                if m in s.metrics:
                    self.push("workload", series, s.ts, s.metrics[m])
        elif names.fio_job_direction(name) is not None:
            key = s.entity.key
            if "iops" in s.metrics:
                self.push(key, "iops", s.ts, s.metrics["iops"])
            ios = s.metrics.get("ios", 0.0)
            pcts = {p: s.metrics[f"clat_{p}_ms"] for p in FIO_PCTS if f"clat_{p}_ms" in s.metrics}
            if ios > 0 and pcts:
                self.fio.setdefault(key, deque()).append((s.ts, ios, pcts))
        elif derived is not None and name.startswith(names.PGSTAT_PREFIX):
            pg = readpath.pg_buffers(derived.deltas, derived.elapsed)
            if pg is not None and "hit_pct" in pg:
                self.push("workload", "pg_hit_pct", s.ts, pg["hit_pct"])
            if pg is not None:
                self.pg_blocks = pg["blks_hit"] + pg["blks_read"]  # what the newest pg_hit_pct is of

    def trim(self, lo: float) -> None:
        super().trim(lo)
        for f in self.fio.values():
            while f and f[0][0] < lo:
                f.popleft()

    def values(self, view: StateView) -> Dict[str, Optional[float]]:
        """pgbench's newest TPS and latency (per second and per run), PostgreSQL's hit rate, runs ended in the
        window."""
        out: Dict[str, Optional[float]] = {}
        for m in ("tps", "latency_avg_ms", "pg_hit_pct", "run_tps", "run_latency_ms"):
            q = self.series.get(("workload", m))
            out[m] = q[-1][1] if q else None
        out["pg_blocks"] = self.pg_blocks
        out["runs"] = float(len(view.window_events((EventKind.RUN_END,))))
        return out

    def rows(self, view: StateView) -> List[FioRow]:
        """Each fio job and direction with a sample in the window, in the order they first appeared."""
        lo, _ = view.window()
        rows: List[FioRow] = []
        for key, e in view.entities.items():
            jd = names.fio_job_direction(e.name) if e.kind == Kind.WORKLOAD else None
            if jd is None:
                continue
            q = self.series.get((key, "iops"))
            if not q or q[-1][0] < lo:
                continue
            ivs = [x for x in self.fio.get(key, ()) if x[0] >= lo]
            pct: Dict[str, float] = {}
            for p in FIO_PCTS:
                pairs = [(v[p], ios) for _, ios, v in ivs if p in v]
                if pairs:
                    pct[p] = max(v for v, _ in pairs) if p == "max" else weighted_median(pairs)
            rows.append(FioRow(jd[0], jd[1], key, q[-1][1], q[-1][0], len(ivs), pct))
        return rows


def weighted_median(pairs: Sequence[Tuple[float, float]]) -> float:
    """The value where the running weight of (value, weight) pairs, in order of value, reaches half of all."""
    ordered = sorted(pairs)
    half = sum(w for _, w in ordered) / 2
    run = 0.0
    for value, weight in ordered:
        run += weight
        if run >= half:
            return value
    return ordered[-1][0]
