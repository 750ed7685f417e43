"""The read path panel's fold: each interval's read counts of PostgreSQL's buffers, the ARC and the L2ARC."""

from __future__ import annotations

from collections import deque
from typing import ClassVar, Deque, Dict, Optional, Tuple

from zfsmon import names
from zfsmon.analysis import readpath
from zfsmon.model import Kind, Sample
from zfsmon.views.top.folds.base import Derivation, Fold


class ReadFold(Fold):
    id: ClassVar[str] = "readpath"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.ARC, Kind.L2ARC, Kind.WORKLOAD)

    def __init__(self) -> None:
        super().__init__()
        #: per-interval read counts: (ts, {pg_blks_hit, pg_blks_read, arc_hits, arc_misses, l2_hits})
        self.reads: Deque[Tuple[float, Dict[str, float]]] = deque()
        #: the newest interval's counts, each from its own source's newest interval
        self.now: Dict[str, float] = {}

    def feed(self, s: Sample, derived: Derivation) -> None:
        kind = s.entity.kind
        if derived is None:
            return
        if kind in (Kind.ARC, Kind.L2ARC):
            m, elapsed = derived.metrics, derived.elapsed
            if kind == Kind.ARC and "hits_per_s" in m and "misses_per_s" in m and elapsed > 0:
                self._count(s.ts, {"arc_hits": m["hits_per_s"] * elapsed, "arc_misses": m["misses_per_s"] * elapsed})
            elif kind == Kind.L2ARC and "hits_per_s" in m and elapsed > 0:
                self._count(s.ts, {"l2_hits": m["hits_per_s"] * elapsed})
        elif kind == Kind.WORKLOAD and s.entity.name.startswith(names.PGSTAT_PREFIX):
            pg = readpath.pg_buffers(derived.deltas, derived.elapsed)
            if pg is not None:
                self._count(s.ts, {"pg_blks_hit": pg["blks_hit"], "pg_blks_read": pg["blks_read"]})

    def _count(self, ts: float, counts: Dict[str, float]) -> None:
        self.now.update(counts)
        self.reads.append((ts, counts))

    def trim(self, lo: float) -> None:
        super().trim(lo)
        while self.reads and self.reads[0][0] < lo:
            self.reads.popleft()

    def shares(self, lo: float) -> Tuple[Optional[readpath.ReadPath], Optional[readpath.ReadPath]]:
        """(last interval, since ``lo``) shares of reads answered by PostgreSQL buffers, ARC, L2ARC, disks."""
        def of(d: Dict[str, float]) -> Optional[readpath.ReadPath]:
            return readpath.shares(d.get("pg_blks_hit"), d.get("pg_blks_read"), d.get("arc_hits"),
                                   d.get("arc_misses"), d.get("l2_hits"))

        sums: Dict[str, float] = {}
        for ts, d in self.reads:
            if ts >= lo:
                for k, v in d.items():
                    sums[k] = sums.get(k, 0.0) + v
        return of(self.now), of(sums)
