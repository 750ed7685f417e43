"""The ARC / L2ARC panel's fold: the hit-rate, size and L2ARC feed series; its values from the newest readings."""

from __future__ import annotations

from typing import ClassVar, Dict, Optional, Tuple

from zfsmon.analysis import arc
from zfsmon.model import Kind, Sample
from zfsmon.views.top.folds.base import Derivation, Fold, StateView

#: the ARC's hit rates kept as series (and shown as its values)
ARC_SERIES = ("hit_pct", "demand_data_hit_pct", "demand_metadata_hit_pct", "prefetch_hit_pct")


def reads_of(hit_pct: str) -> str:
    """The accesses an ARC hit ratio is of: ``hit_pct`` -> ``reads``, ``demand_data_hit_pct`` ->
    ``demand_data_reads`` (:func:`zfsmon.analysis.arc.derive_arc`'s names, without ``_per_s``)."""
    return hit_pct[:-len("hit_pct")] + "reads"


class ArcFold(Fold):
    id: ClassVar[str] = "arc"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.ARC, Kind.L2ARC)

    def __init__(self) -> None:
        super().__init__()
        #: the seconds the ARC's and L2ARC's newest derived figures are over (their counts: rate x this)
        self.elapsed: Dict[str, float] = {}

    def feed(self, s: Sample, derived: Derivation) -> None:
        m = derived.metrics if derived is not None else None
        if derived is not None:
            self.elapsed[s.entity.key] = derived.elapsed
        if s.entity.kind == Kind.ARC:
            for name in ARC_SERIES:
                if m is not None and name in m:
                    self.push("arc", name, s.ts, m[name])
            if "size" in s.metrics:
                self.push("arc", "size", s.ts, s.metrics["size"])
        elif s.entity.kind == Kind.L2ARC:
            for name in ("hit_pct", "write_bytes_per_s", "read_bytes_per_s"):
                if m is not None and name in m:
                    self.push("l2arc", name, s.ts, m[name])
            size = s.metrics.get("asize", s.metrics.get("size"))
            if size is not None:
                self.push("l2arc", "size", s.ts, size)

    def values(self, view: StateView) -> Dict[str, Optional[float]]:
        """ARC/L2ARC numbers: interval hit % if two readings exist, else since-boot % from the counters
        (both from :mod:`zfsmon.analysis.arc`, as every other view computes them), each with the accesses it is of
        (``reads``, ``demand_data_reads``, ..., ``l2_reads``: in the interval, or since boot); ``l2_ndev``: the
        L2ARC's devices, where the kernel counts them (OpenZFS 2.4+)."""
        out: Dict[str, Optional[float]] = {}
        raw = view.newest("arc:arc")
        d = view.derived.get("arc:arc", {})
        if raw is not None:
            for k in ("size", "c", "c_max"):
                out[k] = raw.metrics.get(k)
        elapsed = self.elapsed.get("arc:arc", 0.0)
        for k in ARC_SERIES:
            out[k] = d.get(k)
            rate = d.get(reads_of(k) + "_per_s")
            out[reads_of(k)] = rate * elapsed if rate is not None else None
        out["since_boot"] = 0.0
        if not d and raw is not None:
            out["since_boot"] = 1.0
            boot = arc.since_boot(Kind.ARC, raw.metrics)
            reads = arc.since_boot_reads(Kind.ARC, raw.metrics)
            for k in ARC_SERIES:
                out[k] = boot.get(k)
                out[reads_of(k)] = reads.get(reads_of(k))
        l2 = view.newest("l2arc:l2arc")
        ld = view.derived.get("l2arc:l2arc", {})
        if l2 is not None:
            out["l2_size"] = l2.metrics.get("asize", l2.metrics.get("size"))
            out["l2_hit_pct"] = ld.get("hit_pct") if ld else arc.since_boot(Kind.L2ARC, l2.metrics).get("hit_pct")
            rate = ld.get("reads_per_s")
            out["l2_reads"] = (rate * self.elapsed.get("l2arc:l2arc", 0.0) if rate is not None else None) if ld \
                else arc.since_boot_reads(Kind.L2ARC, l2.metrics).get("reads")
            out["l2_write_bps"] = ld.get("write_bytes_per_s")
            out["l2_read_bps"] = ld.get("read_bytes_per_s")
            out["l2_ndev"] = l2.metrics.get("ndev")  # OpenZFS 2.4+: the cache devices of all pools
        return out
