"""What an interval of ARC, L2ARC and ZIL counters means: hit ratios, rates, sizes against targets.

The one place ARC/L2ARC hit ratios are computed: ``zfsmon analyze`` (findings),
``zfsmon report``, the dashboard and ``zfsmon arcstat`` all take them from here,
so the same window gives the same numbers whichever view asks.

Pure functions over counter deltas (which :class:`zfsmon.analysis.rates.Deriver`
takes once per sample through :class:`zfsmon.analysis.rates.RateDeriver`, so a
counter reset yields a reset event and no numbers, never a negative rate). A reset of any counter of the entity starts a new baseline for all of
them (a restarted kernel module resets everything; a ratio taken across the
restart from counters that happen to have grown past their old values would be
made up). A ratio whose denominator is zero in the interval (no ARC accesses)
is left out rather than shown as 0 %: "no reads" is not "all misses".
A reading without counters (a tool's percentages, arcstat's ``hit%``) is not a
reading of the counters and does not break their chain.

Accesses: OpenZFS 2.2+ counts ``iohits`` (the block was already being read)
apart from ``hits`` and ``misses``; an access is then hits + iohits + misses
(as OpenZFS's own arcstat counts it). Older kernels have no iohits and the
sum is just hits + misses.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

from zfsmon.metrics import COUNTERS, NO_COUNTERS
from zfsmon.model import Kind, Sample

#: derived metric prefix -> the arcstats classes summed into it
ACCESS_GROUPS: Dict[str, Tuple[str, ...]] = {
    "": ("",),
    "demand_": ("demand_data_", "demand_metadata_"),
    "demand_data_": ("demand_data_",),
    "demand_metadata_": ("demand_metadata_",),
    "prefetch_": ("prefetch_data_", "prefetch_metadata_"),
    "prefetch_data_": ("prefetch_data_",),
    "prefetch_metadata_": ("prefetch_metadata_",),
    "metadata_": ("demand_metadata_", "prefetch_metadata_"),
}

_PER_SECOND = {  # counter -> derived per-second metric
    "mru_hits": "mru_hits_per_s",
    "mfu_hits": "mfu_hits_per_s",
    "mru_ghost_hits": "mru_ghost_hits_per_s",
    "mfu_ghost_hits": "mfu_ghost_hits_per_s",
    "uncached_hits": "uncached_hits_per_s",
    "deleted": "deleted_per_s",
    "mutex_miss": "mutex_miss_per_s",
    "evict_skip": "evict_skip_per_s",
    "memory_throttle_count": "memory_throttle_per_s",
    "memory_direct_count": "memory_direct_per_s",
    "memory_indirect_count": "memory_indirect_per_s",
}


def _pct(part: float, whole: float) -> Optional[float]:
    return 100.0 * part / whole if whole > 0 else None


def _put(out: Dict[str, float], name: str, value: Optional[float]) -> None:
    if value is not None:
        out[name] = value


def _group(deltas: Mapping[str, float], classes: Tuple[str, ...], part: str) -> Optional[float]:
    """Sum of ``<class><part>`` over classes; None if any class lacks it (don't report half a sum)."""
    vals = [deltas.get(f"{c}{part}") for c in classes]
    return None if any(v is None for v in vals) else float(sum(v for v in vals if v is not None))


def derive_arc(deltas: Mapping[str, float], elapsed: float, levels: Mapping[str, float]) -> Dict[str, float]:
    """ARC metrics for one interval: ``deltas`` of counters over ``elapsed`` s; ``levels`` = the current sample."""
    out: Dict[str, float] = {}
    for pre, classes in ACCESS_GROUPS.items():
        hits = _group(deltas, classes, "hits")
        misses = _group(deltas, classes, "misses")
        if hits is None or misses is None:
            continue
        iohits = _group(deltas, classes, "iohits")
        reads = hits + misses + (iohits or 0.0)
        out[f"{pre}reads_per_s"] = reads / elapsed
        out[f"{pre}hits_per_s"] = hits / elapsed
        out[f"{pre}misses_per_s"] = misses / elapsed
        _put(out, f"{pre}hit_pct", _pct(hits, reads))
        _put(out, f"{pre}miss_pct", _pct(misses, reads))
        if iohits is not None:
            out[f"{pre}iohits_per_s"] = iohits / elapsed
            _put(out, f"{pre}iohit_pct", _pct(iohits, reads))
    for counter, name in _PER_SECOND.items():
        if counter in deltas:
            out[name] = deltas[counter] / elapsed
    size = levels.get("size")
    if size is not None:
        if levels.get("c"):
            out["size_pct_of_c"] = 100.0 * size / levels["c"]
        if levels.get("c_max"):
            out["size_pct_of_c_max"] = 100.0 * size / levels["c_max"]
    if "arc_no_grow" in levels:
        out["can_grow"] = 0.0 if levels["arc_no_grow"] else 1.0
    return out


def derive_l2arc(deltas: Mapping[str, float], elapsed: float, levels: Mapping[str, float]) -> Dict[str, float]:
    """L2ARC metrics for one interval (names without the ``l2_`` prefix)."""
    out: Dict[str, float] = {}
    if "hits" in deltas and "misses" in deltas:
        h, m = deltas["hits"], deltas["misses"]
        out["reads_per_s"] = (h + m) / elapsed
        out["hits_per_s"] = h / elapsed
        out["misses_per_s"] = m / elapsed
        _put(out, "hit_pct", _pct(h, h + m))
        _put(out, "miss_pct", _pct(m, h + m))
    if "read_bytes" in deltas:
        out["read_bytes_per_s"] = deltas["read_bytes"] / elapsed
    if "write_bytes" in deltas:
        out["write_bytes_per_s"] = deltas["write_bytes"] / elapsed
    return out


_ZIL_RATES = {
    "commit_count": "commits_per_s",
    "commit_writer_count": "commit_writers_per_s",
    "commit_error_count": "commit_errors_per_s",
    "commit_stall_count": "commit_stalls_per_s",
    "itx_count": "itx_per_s",
    "itx_metaslab_slog_count": "slog_itx_per_s",
    "itx_metaslab_slog_bytes": "slog_bytes_per_s",
    "itx_metaslab_normal_count": "normal_itx_per_s",
    "itx_metaslab_normal_bytes": "normal_bytes_per_s",
}
_ITX_BYTES = ("itx_indirect_bytes", "itx_copied_bytes", "itx_needcopy_bytes")


def derive_zil(deltas: Mapping[str, float], elapsed: float, levels: Mapping[str, float]) -> Dict[str, float]:
    """ZIL metrics for one interval (names without the ``zil_`` prefix)."""
    out = {name: deltas[c] / elapsed for c, name in _ZIL_RATES.items() if c in deltas}
    if all(b in deltas for b in _ITX_BYTES):
        out["itx_bytes_per_s"] = sum(deltas[b] for b in _ITX_BYTES) / elapsed
    slog, normal = deltas.get("itx_metaslab_slog_count"), deltas.get("itx_metaslab_normal_count")
    if slog is not None and normal is not None:
        _put(out, "slog_pct", _pct(slog, slog + normal))
    return out


DERIVERS = {Kind.ARC: derive_arc, Kind.L2ARC: derive_l2arc, Kind.ZIL: derive_zil}


def has_counters(sample: Sample) -> bool:
    """Whether a reading holds cumulative counters (kstats), not only levels or a tool's percentages."""
    return not sample.since_boot and not COUNTERS.get(sample.entity.kind, NO_COUNTERS).isdisjoint(sample.metrics)


def since_boot(kind: Kind, counters: Mapping[str, float]) -> Dict[str, float]:
    """Percentages over everything counted since the kernel started: the counters taken as one long interval.

    What a view shows before it has two readings (the rates of that one long
    "interval" mean nothing, so only the ``*_pct`` ratios are kept).
    """
    derive = DERIVERS.get(kind)
    if derive is None:
        return {}
    return {k: v for k, v in derive(counters, 1.0, counters).items() if k.endswith("_pct")}


def since_boot_reads(kind: Kind, counters: Mapping[str, float]) -> Dict[str, float]:
    """The accesses since boot that :func:`since_boot`'s ratios are of (``reads``, ``demand_data_reads``, ...):
    a ratio is shown with its count."""
    derive = DERIVERS.get(kind)
    if derive is None:
        return {}
    return {k[:-len("_per_s")]: v for k, v in derive(counters, 1.0, counters).items() if k.endswith("reads_per_s")}
