"""ARC and L2ARC metrics: the raw arcstats we know, what zfsmon derives from them, and arcstat's columns.

Raw statistics keep their kstat names on the ``arc`` entity; ``l2_*``
statistics go to the ``l2arc`` entity without the ``l2_`` prefix
(``l2_hits`` -> ``l2arc`` ``hits``). Names differ across ZFS versions: every
row here is optional, a reader exposes what the kernel has, and a statistic
missing from this table passes through under its raw name as a gauge (never
differentiated), which the collector says once (:mod:`zfsmon.sources.fields`).
So the table must list every *counter* we know of, and lists every statistic
of the captures (OpenZFS 2.4, 2.3, 2.1, ZoL 0.6, FreeBSD 14, illumos).

``ARCSTAT_COLUMNS`` is the column table of ``zfsmon arcstat`` (modelled on
OpenZFS ``cmd/arcstat``: same column names where they exist there, so
``-f hit%,l2hit%`` means what it means there); it also tells the parser of
captured ``arcstat`` output which metric each column is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from zfsmon.metrics.kstats import ARCSTATS
from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_ARC = (Kind.ARC,)
_L2 = (Kind.L2ARC,)


def _raw(name: str, unit: str, kind: str, help: str, kstat: str = "", l2: bool = False) -> MetricSpec:
    """A statistic read from arcstats. ``kstat`` is the kernel's name when it differs from ``name``."""
    k = kstat or name
    return MetricSpec(name, unit, kind, help, _L2 if l2 else _ARC, ARCSTATS.where(k))


def _l2(name: str, unit: str, kind: str, help: str) -> MetricSpec:
    return _raw(name, unit, kind, help, kstat=f"l2_{name}", l2=True)


def _derived(name: str, unit: str, help: str, kinds: Tuple[Kind, ...] = _ARC) -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, help, kinds)


_ACCESS_CLASSES = {
    "demand_data": "demand data",
    "demand_metadata": "demand metadata",
    "prefetch_data": "prefetch data",
    "prefetch_metadata": "prefetch metadata",
}

RAW_ARC: List[MetricSpec] = [
    _raw("hits", "ops", COUNTER, "ARC accesses satisfied from memory"),
    _raw("iohits", "ops", COUNTER, "accesses that found the block already being read (OpenZFS 2.2+)"),
    _raw("misses", "ops", COUNTER, "ARC accesses that had to read from the pool"),
    *[s for cls, words in _ACCESS_CLASSES.items() for s in (
        _raw(f"{cls}_hits", "ops", COUNTER, f"{words} accesses that hit"),
        _raw(f"{cls}_iohits", "ops", COUNTER, f"{words} accesses that found the read in flight (2.2+)"),
        _raw(f"{cls}_misses", "ops", COUNTER, f"{words} accesses that missed"),
    )],
    _raw("mru_hits", "ops", COUNTER, "hits in the most-recently-used list"),
    _raw("mru_ghost_hits", "ops", COUNTER, "hits in the MRU ghost list (evicted too early from MRU)"),
    _raw("mfu_hits", "ops", COUNTER, "hits in the most-frequently-used list"),
    _raw("mfu_ghost_hits", "ops", COUNTER, "hits in the MFU ghost list (evicted too early from MFU)"),
    _raw("uncached_hits", "ops", COUNTER, "hits on uncached (primarycache=none/metadata) buffers (2.2+)"),
    _raw("deleted", "count", COUNTER, "buffers evicted from the ARC"),
    _raw("recycle_miss", "count", COUNTER, "failed buffer recycles (before ZoL 0.6.5)"),
    _raw("mutex_miss", "count", COUNTER, "evictions skipped because a hash lock was held"),
    _raw("access_skip", "count", COUNTER, "buffer accesses skipped while a header was locked"),
    _raw("evict_skip", "count", COUNTER, "buffers skipped during eviction"),
    _raw("evict_not_enough", "count", COUNTER, "eviction passes that could not free enough"),
    _raw("evict_l2_cached", "B", COUNTER, "bytes evicted that were also in the L2ARC"),
    _raw("evict_l2_eligible", "B", COUNTER, "bytes evicted that could have gone to the L2ARC"),
    _raw("evict_l2_eligible_mfu", "B", COUNTER, "L2-eligible bytes evicted from MFU"),
    _raw("evict_l2_eligible_mru", "B", COUNTER, "L2-eligible bytes evicted from MRU"),
    _raw("evict_l2_ineligible", "B", COUNTER, "bytes evicted that could not go to the L2ARC"),
    _raw("evict_l2_skip", "count", COUNTER, "evictions skipped because the L2ARC was writing"),
    _raw("hash_collisions", "count", COUNTER, "ARC hash table collisions"),
    _raw("duplicate_reads", "count", COUNTER, "reads of a block already being read (illumos)"),
    _raw("memory_throttle_count", "count", COUNTER, "writes throttled because memory ran short"),
    _raw("memory_direct_count", "count", COUNTER, "direct memory reclaims by the ARC (Linux)"),
    _raw("memory_indirect_count", "count", COUNTER, "indirect memory reclaims by the ARC (Linux)"),
    _raw("arc_prune", "count", COUNTER, "requests to prune the VFS caches"),
    _raw("demand_hit_predictive_prefetch", "ops", COUNTER, "demand hits on blocks a predictive prefetch read"),
    _raw("demand_iohit_predictive_prefetch", "ops", COUNTER, "demand io-hits on predictive prefetches (2.2+)"),
    _raw("demand_hit_prescient_prefetch", "ops", COUNTER, "demand hits on prescient prefetches"),
    _raw("demand_iohit_prescient_prefetch", "ops", COUNTER, "demand io-hits on prescient prefetches (2.2+)"),
    _raw("predictive_prefetch", "ops", COUNTER, "predictive prefetches issued (2.2+)"),
    _raw("prescient_prefetch", "ops", COUNTER, "prescient prefetches issued (2.2+)"),
    _raw("async_upgrade_sync", "ops", COUNTER, "async reads upgraded to sync by a demand read"),
    _raw("size", "B", GAUGE, "current ARC size"),
    _raw("c", "B", GAUGE, "ARC target size"),
    _raw("c_min", "B", GAUGE, "minimum ARC target size"),
    _raw("c_max", "B", GAUGE, "maximum ARC target size"),
    _raw("p", "B", GAUGE, "MRU target size (before OpenZFS 2.2)"),
    _raw("data_size", "B", GAUGE, "ARC bytes holding file data"),
    _raw("metadata_size", "B", GAUGE, "ARC bytes holding metadata"),
    _raw("hdr_size", "B", GAUGE, "ARC bytes used by headers"),
    _raw("other_size", "B", GAUGE, "ARC bytes used by dbufs, dnodes and bonus buffers"),
    _raw("mru_size", "B", GAUGE, "bytes in the MRU list"),
    _raw("mfu_size", "B", GAUGE, "bytes in the MFU list"),
    _raw("mru_ghost_size", "B", GAUGE, "bytes described by the MRU ghost list"),
    _raw("mfu_ghost_size", "B", GAUGE, "bytes described by the MFU ghost list"),
    _raw("arc_meta_used", "B", GAUGE, "ARC bytes used for metadata (all kinds)"),
    _raw("arc_meta_limit", "B", GAUGE, "ARC metadata limit (before 2.2)"),
    _raw("arc_meta_max", "B", GAUGE, "most ARC bytes metadata has used (high-water mark of arc_meta_used; before 2.2)"),
    _raw("arc_meta_min", "B", GAUGE, "ARC bytes of metadata below which data is evicted first (ZoL 0.6.5 to 2.1)"),
    _raw("meta_size", "B", GAUGE, "ARC bytes holding metadata (ZoL 0.6.4; metadata_size later)"),
    *[_raw(f"{state}_evict_{what}", "B", GAUGE, f"evictable bytes of {what} in the {words} (ZoL 0.6.4; "
           f"{state}_evictable_{what} later)")
      for state, words in (("anon", "anonymous buffers"), ("mru", "MRU list"), ("mru_ghost", "MRU ghost list"),
                           ("mfu", "MFU list"), ("mfu_ghost", "MFU ghost list"))
      for what in ("data", "metadata")],
    _raw("duplicate_buffers", "count", GAUGE, "buffers holding a copy of a block another buffer holds (illumos, "
         "ZoL 0.6)"),
    _raw("duplicate_buffers_size", "B", GAUGE, "bytes of those duplicate buffers (illumos, ZoL 0.6)"),
    _raw("arc_no_grow", "count", GAUGE, "1 while the ARC may not grow (memory pressure)"),
    _raw("arc_need_free", "B", GAUGE, "bytes the ARC is asked to free"),
    _raw("arc_sys_free", "B", GAUGE, "memory the ARC tries to leave free"),
    _raw("memory_all_bytes", "B", GAUGE, "memory the ARC considers in total"),
    _raw("memory_free_bytes", "B", GAUGE, "free memory as the ARC sees it"),
    _raw("memory_available_bytes", "B", GAUGE, "memory available to the ARC (may be negative)"),
    _raw("abd_chunk_waste_size", "B", GAUGE, "bytes wasted by ABD chunk rounding"),
    _raw("hash_elements", "count", GAUGE, "buffers in the ARC hash table"),
    _raw("hash_elements_max", "count", GAUGE, "high-water mark of hash_elements"),
    _raw("compressed_size", "B", GAUGE, "compressed bytes of data in the ARC"),
    _raw("uncompressed_size", "B", GAUGE, "what the ARC's compressed data would take uncompressed"),
    _raw("overhead_size", "B", GAUGE, "ARC bytes of buffers in flight (overhead, not cached data)"),
    _raw("dbuf_size", "B", GAUGE, "ARC bytes used by dbuf_t structures"),
    _raw("dnode_size", "B", GAUGE, "ARC bytes used by dnodes"),
    _raw("bonus_size", "B", GAUGE, "ARC bytes used by bonus buffers"),
    _raw("anon_size", "B", GAUGE, "bytes of anonymous (dirty, not yet written) buffers"),
    _raw("uncached_size", "B", GAUGE, "bytes of uncached buffers waiting to be evicted (2.2+)"),
    _raw("anon_data", "B", GAUGE, "bytes of data in anonymous (dirty, not yet written) buffers"),
    _raw("anon_metadata", "B", GAUGE, "bytes of metadata in anonymous (dirty, not yet written) buffers"),
    _raw("anon_evictable_data", "B", GAUGE, "bytes of evictable data in anonymous (dirty, not yet written) buffers"),
    _raw("anon_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in anonymous (dirty, not yet written) buffers"),
    _raw("mru_data", "B", GAUGE, "bytes of data in the MRU list"),
    _raw("mru_metadata", "B", GAUGE, "bytes of metadata in the MRU list"),
    _raw("mru_evictable_data", "B", GAUGE, "bytes of evictable data in the MRU list"),
    _raw("mru_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in the MRU list"),
    _raw("mru_ghost_data", "B", GAUGE, "bytes of data in the MRU ghost list"),
    _raw("mru_ghost_metadata", "B", GAUGE, "bytes of metadata in the MRU ghost list"),
    _raw("mru_ghost_evictable_data", "B", GAUGE, "bytes of evictable data in the MRU ghost list"),
    _raw("mru_ghost_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in the MRU ghost list"),
    _raw("mfu_data", "B", GAUGE, "bytes of data in the MFU list"),
    _raw("mfu_metadata", "B", GAUGE, "bytes of metadata in the MFU list"),
    _raw("mfu_evictable_data", "B", GAUGE, "bytes of evictable data in the MFU list"),
    _raw("mfu_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in the MFU list"),
    _raw("mfu_ghost_data", "B", GAUGE, "bytes of data in the MFU ghost list"),
    _raw("mfu_ghost_metadata", "B", GAUGE, "bytes of metadata in the MFU ghost list"),
    _raw("mfu_ghost_evictable_data", "B", GAUGE, "bytes of evictable data in the MFU ghost list"),
    _raw("mfu_ghost_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in the MFU ghost list"),
    _raw("uncached_data", "B", GAUGE, "bytes of data in uncached buffers (2.2+)"),
    _raw("uncached_metadata", "B", GAUGE, "bytes of metadata in uncached buffers (2.2+)"),
    _raw("uncached_evictable_data", "B", GAUGE, "bytes of evictable data in uncached buffers (2.2+)"),
    _raw("uncached_evictable_metadata", "B", GAUGE, "bytes of evictable metadata in uncached buffers (2.2+)"),
    _raw("hash_chains", "count", GAUGE, "hash table chains longer than one buffer"),
    _raw("hash_chain_max", "count", GAUGE, "longest hash table chain seen"),
    _raw("meta", "count", GAUGE, "metadata share of the ARC target (fixed point, of 2^32; 2.2+)"),
    _raw("pd", "count", GAUGE, "MRU share of the data target (fixed point, of 2^32; 2.2+)"),
    _raw("pm", "count", GAUGE, "MRU share of the metadata target (fixed point, of 2^32; 2.2+)"),
    _raw("arc_tempreserve", "B", GAUGE, "bytes reserved for transactions being assigned"),
    _raw("arc_loaned_bytes", "B", GAUGE, "ARC bytes loaned out (zero-copy writes)"),
    _raw("arc_dnode_limit", "B", GAUGE, "limit on ARC bytes used by dnodes"),
    _raw("arc_raw_size", "B", GAUGE, "ARC bytes held raw (encrypted, not decrypted)"),
    _raw("cached_only_in_progress", "count", GAUGE, "1 while the ARC evicts to honour primarycache changes"),
]

RAW_L2ARC: List[MetricSpec] = [
    _l2("hits", "ops", COUNTER, "ARC misses satisfied by the L2ARC (cache device)"),
    _l2("misses", "ops", COUNTER, "ARC misses the L2ARC could not satisfy"),
    _l2("read_bytes", "B", COUNTER, "bytes read from cache devices"),
    _l2("write_bytes", "B", COUNTER, "bytes written to cache devices"),
    _l2("feeds", "count", COUNTER, "L2ARC feed thread passes"),
    _l2("rw_clash", "count", COUNTER, "reads that collided with a write in progress"),
    _l2("writes_sent", "count", COUNTER, "write I/Os issued to cache devices"),
    _l2("writes_done", "count", COUNTER, "write I/Os to cache devices completed"),
    _l2("writes_error", "count", COUNTER, "write I/Os to cache devices that failed"),
    _l2("writes_hdr_miss", "count", COUNTER, "buffers skipped for a missing header (old ZFS)"),
    _l2("writes_lock_retry", "count", COUNTER, "writes retried for a held lock"),
    _l2("evict_lock_retry", "count", COUNTER, "evictions retried for a held lock"),
    _l2("evict_reading", "count", COUNTER, "evictions of buffers being read"),
    _l2("evict_l1cached", "count", COUNTER, "evictions of buffers still in the ARC"),
    _l2("free_on_write", "count", COUNTER, "buffers freed while being written"),
    _l2("cdata_free_on_write", "count", COUNTER, "compressed buffers freed while written (ZoL 0.6)"),
    _l2("abort_lowmem", "count", COUNTER, "feeds aborted for low memory"),
    _l2("cksum_bad", "count", COUNTER, "reads that failed the checksum"),
    _l2("io_error", "count", COUNTER, "reads that failed with an I/O error"),
    _l2("compress_successes", "count", COUNTER, "buffers compressed for the L2ARC (ZoL 0.6)"),
    _l2("compress_zeros", "count", COUNTER, "all-zero buffers not written (ZoL 0.6)"),
    _l2("compress_failures", "count", COUNTER, "buffers that did not compress (ZoL 0.6)"),
    _l2("log_blk_writes", "count", COUNTER, "persistent L2ARC log blocks written (what a rebuild reads back)"),
    _l2("rebuild_success", "count", COUNTER, "persistent L2ARC rebuilds of a cache device that restored log blocks"),
    _l2("rebuild_bufs", "count", COUNTER, "log entries (buffers) read by L2ARC rebuilds since the module loaded"),
    _l2("rebuild_bufs_precached", "count", COUNTER, "log entries a rebuild found already in the ARC (not restored)"),
    _l2("rebuild_log_blks", "count", COUNTER, "log blocks L2ARC rebuilds read and restored"),
    _l2("rebuild_unsupported", "count", COUNTER, "rebuilds refused: device header in an unsupported format or corrupt"),
    _l2("rebuild_io_errors", "count", COUNTER, "rebuilds stopped by an I/O error reading a log block"),
    _l2("rebuild_dh_errors", "count", COUNTER, "rebuilds stopped by an I/O error reading the device header"),
    _l2("rebuild_cksum_lb_errors", "count", COUNTER, "log blocks a rebuild could not restore (checksum errors)"),
    _l2("rebuild_lowmem", "count", COUNTER, "rebuilds aborted for low system memory"),
    _l2("rebuild_size", "B", COUNTER, "logical bytes L2ARC rebuilds restored since the module loaded"),
    _l2("rebuild_asize", "B", COUNTER, "aligned bytes L2ARC rebuilds restored since the module loaded"),
    _l2("ndev", "count", GAUGE, "L2ARC devices (OpenZFS 2.4+): cache devices attached, across all pools"),
    _l2("size", "B", GAUGE, "logical (uncompressed) bytes held by the L2ARC"),
    _l2("asize", "B", GAUGE, "allocated bytes on the cache devices (absent on old ZFS)"),
    _l2("hdr_size", "B", GAUGE, "ARC memory used by L2ARC headers"),
    _l2("mfu_asize", "B", GAUGE, "allocated L2ARC bytes from MFU"),
    _l2("mru_asize", "B", GAUGE, "allocated L2ARC bytes from MRU"),
    _l2("prefetch_asize", "B", GAUGE, "allocated L2ARC bytes from prefetches"),
    _l2("bufc_data_asize", "B", GAUGE, "allocated L2ARC bytes holding data"),
    _l2("bufc_metadata_asize", "B", GAUGE, "allocated L2ARC bytes holding metadata"),
    _l2("log_blk_count", "count", GAUGE, "persistent L2ARC log blocks present on the cache devices"),
    _l2("log_blk_asize", "B", GAUGE, "aligned bytes of the persistent L2ARC log blocks on the cache devices"),
    _l2("log_blk_avg_asize", "B", GAUGE, "moving average of a log block's aligned size (set by writes and rebuilds)"),
    _l2("data_to_meta_ratio", "count", GAUGE, "L2ARC data bytes per byte of log-block metadata"),
]

_RATIO_PARTS = (("hits", "hit"), ("iohits", "iohit"), ("misses", "miss"))
_GROUPS = {
    "": "all ARC",
    "demand_": "demand",
    "demand_data_": "demand data",
    "demand_metadata_": "demand metadata",
    "prefetch_": "prefetch (data+metadata)",
    "prefetch_data_": "prefetch data",
    "prefetch_metadata_": "prefetch metadata",
    "metadata_": "metadata (demand+prefetch)",
}


def _group_specs() -> List[MetricSpec]:
    out: List[MetricSpec] = []
    for pre, words in _GROUPS.items():
        out.append(_derived(f"{pre}reads_per_s", "ops/s", f"{words} accesses per second (hits+iohits+misses)"))
        for part, short in _RATIO_PARTS:
            out.append(_derived(f"{pre}{part}_per_s", "ops/s", f"{words} {part} per second"))
            out.append(_derived(f"{pre}{short}_pct", "%", f"{words} {part} as a share of {words} accesses"))
    return out


DERIVED_ARC: List[MetricSpec] = [
    *_group_specs(),
    _derived("mru_hits_per_s", "ops/s", "MRU hits per second"),
    _derived("mfu_hits_per_s", "ops/s", "MFU hits per second"),
    _derived("mru_ghost_hits_per_s", "ops/s", "MRU ghost hits per second (ARC too small for recency)"),
    _derived("mfu_ghost_hits_per_s", "ops/s", "MFU ghost hits per second (ARC too small for frequency)"),
    _derived("uncached_hits_per_s", "ops/s", "uncached-buffer hits per second"),
    _derived("deleted_per_s", "ops/s", "ARC evictions per second"),
    _derived("mutex_miss_per_s", "ops/s", "evictions skipped on a held lock, per second"),
    _derived("evict_skip_per_s", "ops/s", "buffers skipped during eviction, per second"),
    _derived("memory_throttle_per_s", "ops/s", "memory throttles per second"),
    _derived("memory_direct_per_s", "ops/s", "direct reclaims per second"),
    _derived("memory_indirect_per_s", "ops/s", "indirect reclaims per second"),
    _derived("size_pct_of_c", "%", "ARC size as a share of its target c"),
    _derived("size_pct_of_c_max", "%", "ARC size as a share of c_max"),
    _derived("can_grow", "count", "1 while the ARC may grow (0 = arc_no_grow set)"),
]

DERIVED_L2ARC: List[MetricSpec] = [
    _derived("reads_per_s", "ops/s", "L2ARC lookups per second (hits+misses)", _L2),
    _derived("hits_per_s", "ops/s", "L2ARC hits per second", _L2),
    _derived("misses_per_s", "ops/s", "L2ARC misses per second", _L2),
    _derived("hit_pct", "%", "L2ARC hits as a share of L2ARC lookups", _L2),
    _derived("miss_pct", "%", "L2ARC misses as a share of L2ARC lookups", _L2),
    _derived("read_bytes_per_s", "B/s", "bytes read from cache devices per second", _L2),
    _derived("write_bytes_per_s", "B/s", "bytes written to cache devices per second", _L2),
]

SPECS: List[MetricSpec] = RAW_ARC + RAW_L2ARC + DERIVED_ARC + DERIVED_L2ARC


# --- zfsmon arcstat's columns -------------------------------------------------------------------------

#: how a column's number is shown: a rate or count (K/M suffixes), bytes, bytes/s, a percentage, a clock
COUNT, BYTES, PERCENT, TIME = "count", "bytes", "percent", "time"


@dataclass(frozen=True)
class Column:
    """One ``zfsmon arcstat`` column: which metric of which entity it shows, and how."""

    name: str
    kind: Kind
    metric: str
    fmt: str
    width: int
    help: str


def _c(name: str, kind: Kind, metric: str, fmt: str, help: str, width: int = 0) -> Column:
    return Column(name, kind, metric, fmt, width or max(len(name), 4 if fmt == PERCENT else 5), help)


_PFX = {"": "", "d": "demand_", "dd": "demand_data_", "dm": "demand_metadata_", "p": "prefetch_",
        "pd": "prefetch_data_", "pm": "prefetch_metadata_", "m": "metadata_"}


def _group_columns() -> List[Column]:
    out: List[Column] = []
    for short, pre in _PFX.items():
        words = _GROUPS[pre]
        if short:
            out += [_c(f"{short}read", Kind.ARC, f"{pre}reads_per_s", COUNT, f"{words} accesses per second"),
                    _c(f"{short}hit", Kind.ARC, f"{pre}hits_per_s", COUNT, f"{words} hits per second"),
                    _c(f"{short}ioh", Kind.ARC, f"{pre}iohits_per_s", COUNT, f"{words} iohits per second"),
                    _c(f"{short}mis", Kind.ARC, f"{pre}misses_per_s", COUNT, f"{words} misses per second")]
        else:
            out += [_c("read", Kind.ARC, "reads_per_s", COUNT, "ARC accesses per second"),
                    _c("hits", Kind.ARC, "hits_per_s", COUNT, "ARC hits per second"),
                    _c("iohs", Kind.ARC, "iohits_per_s", COUNT, "ARC iohits per second (2.2+)"),
                    _c("miss", Kind.ARC, "misses_per_s", COUNT, "ARC misses per second")]
        out += [_c(f"{short}h%", Kind.ARC, f"{pre}hit_pct", PERCENT, f"{words} hit percentage"),
                _c(f"{short}i%", Kind.ARC, f"{pre}iohit_pct", PERCENT, f"{words} iohit percentage"),
                _c(f"{short}m%", Kind.ARC, f"{pre}miss_pct", PERCENT, f"{words} miss percentage")]
    # arcstat spells the all-ARC percentages hit% / ioh% / miss%
    ren = {"h%": "hit%", "i%": "ioh%", "m%": "miss%"}
    return [Column(ren.get(c.name, c.name), c.kind, c.metric, c.fmt, max(c.width, len(ren.get(c.name, c.name))),
                   c.help) for c in out]


ARCSTAT_COLUMNS: Dict[str, Column] = {c.name: c for c in [
    Column("time", Kind.ARC, "", TIME, 8, "time of day"),
    *_group_columns(),
    _c("mfu", Kind.ARC, "mfu_hits_per_s", COUNT, "MFU hits per second"),
    _c("mru", Kind.ARC, "mru_hits_per_s", COUNT, "MRU hits per second"),
    _c("mfug", Kind.ARC, "mfu_ghost_hits_per_s", COUNT, "MFU ghost hits per second"),
    _c("mrug", Kind.ARC, "mru_ghost_hits_per_s", COUNT, "MRU ghost hits per second"),
    _c("unc", Kind.ARC, "uncached_hits_per_s", COUNT, "uncached hits per second"),
    _c("eskip", Kind.ARC, "evict_skip_per_s", COUNT, "evict_skip per second"),
    _c("mtxmis", Kind.ARC, "mutex_miss_per_s", COUNT, "mutex_miss per second"),
    _c("dele", Kind.ARC, "deleted_per_s", COUNT, "evictions per second"),
    _c("throt", Kind.ARC, "memory_throttle_per_s", COUNT, "memory throttles per second"),
    _c("arcsz", Kind.ARC, "size", BYTES, "ARC size"),
    _c("size", Kind.ARC, "size", BYTES, "ARC size"),
    _c("c", Kind.ARC, "c", BYTES, "ARC target size"),
    _c("cmax", Kind.ARC, "c_max", BYTES, "ARC maximum target size"),
    _c("sz%c", Kind.ARC, "size_pct_of_c", PERCENT, "ARC size as a share of c"),
    _c("mfusz", Kind.ARC, "mfu_size", BYTES, "MFU size"),
    _c("mrusz", Kind.ARC, "mru_size", BYTES, "MRU size"),
    _c("grow", Kind.ARC, "can_grow", COUNT, "1 when the ARC may grow"),
    _c("need", Kind.ARC, "arc_need_free", BYTES, "bytes the ARC is asked to free"),
    _c("free", Kind.ARC, "memory_free_bytes", BYTES, "free memory as the ARC sees it"),
    _c("avail", Kind.ARC, "memory_available_bytes", BYTES, "memory available to the ARC"),
    _c("waste", Kind.ARC, "abd_chunk_waste_size", BYTES, "ABD chunk waste"),
    _c("l2read", Kind.L2ARC, "reads_per_s", COUNT, "L2ARC lookups per second"),
    _c("l2hits", Kind.L2ARC, "hits_per_s", COUNT, "L2ARC hits per second"),
    _c("l2miss", Kind.L2ARC, "misses_per_s", COUNT, "L2ARC misses per second"),
    _c("l2hit%", Kind.L2ARC, "hit_pct", PERCENT, "L2ARC hit percentage"),
    _c("l2miss%", Kind.L2ARC, "miss_pct", PERCENT, "L2ARC miss percentage"),
    _c("l2bytes", Kind.L2ARC, "read_bytes_per_s", BYTES, "bytes read from L2ARC per second"),
    _c("l2wbytes", Kind.L2ARC, "write_bytes_per_s", BYTES, "bytes written to L2ARC per second"),
    _c("l2size", Kind.L2ARC, "size", BYTES, "L2ARC logical size"),
    _c("l2asize", Kind.L2ARC, "asize", BYTES, "L2ARC allocated size"),
    _c("l2mfu", Kind.L2ARC, "mfu_asize", BYTES, "L2ARC allocated bytes from MFU"),
    _c("l2mru", Kind.L2ARC, "mru_asize", BYTES, "L2ARC allocated bytes from MRU"),
    _c("l2pref", Kind.L2ARC, "prefetch_asize", BYTES, "L2ARC allocated bytes from prefetch"),
    _c("l2data", Kind.L2ARC, "bufc_data_asize", BYTES, "L2ARC allocated bytes of data"),
    _c("l2meta", Kind.L2ARC, "bufc_metadata_asize", BYTES, "L2ARC allocated bytes of metadata"),
    _c("zcmt", Kind.ZIL, "commits_per_s", COUNT, "ZIL commits per second"),
    _c("zwrt", Kind.ZIL, "commit_writers_per_s", COUNT, "ZIL commit writers per second"),
    _c("zitx", Kind.ZIL, "itx_per_s", COUNT, "ZIL intent transactions per second"),
    _c("zitxB", Kind.ZIL, "itx_bytes_per_s", BYTES, "ZIL intent-log bytes per second"),
    _c("zslog", Kind.ZIL, "slog_itx_per_s", COUNT, "ZIL transactions written to a SLOG per second"),
    _c("zslogB", Kind.ZIL, "slog_bytes_per_s", BYTES, "ZIL bytes written to a SLOG per second"),
    _c("znorm", Kind.ZIL, "normal_itx_per_s", COUNT, "ZIL transactions written to the main pool per second"),
    _c("znormB", Kind.ZIL, "normal_bytes_per_s", BYTES, "ZIL bytes written to the main pool per second"),
]}

#: the default columns (OpenZFS 2.2 arcstat's defaults, plus L2ARC and ZIL)
DEFAULT_COLUMNS = ("time", "read", "ddread", "ddh%", "dmread", "dmh%", "pread", "ph%", "size", "c", "avail")
L2_COLUMNS = ("l2read", "l2hit%", "l2bytes", "l2size", "l2asize")
ZIL_COLUMNS = ("zcmt", "zitx", "zslog")
