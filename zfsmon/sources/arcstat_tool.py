"""Output of the ``arcstat`` / ``arcstat.py`` / ``arcstat.pl`` and ``arc_summary`` tools, for ``zfsmon parse``.

People paste these into issues and keep them in logs; reading them lets
zfsmon put old captures next to its own recordings.

* arcstat column output (:func:`parse_arcstat`): a header of column names,
  then one row per interval with humanised values (``15G``, ``7.2K``,
  ``-177M``). Columns are the per-interval rates and percentages the tool
  computed, so they become GAUGE metrics named as in
  :data:`zfsmon.metrics.arc.ARCSTAT_COLUMNS` (``hit%`` -> ``hit_pct``); a
  column we do not know keeps its own name. The tool scales counts by 1000
  and sizes by 1024.
* arc_summary reports (:func:`parse_arc_summary`): both the Linux
  ``arc_summary`` (OpenZFS 0.8+, aligned columns) and the older FreeBSD
  ``arc_summary.pl`` (tab separated). Their since-boot totals become one
  ``arc`` sample (plus ``l2arc`` and ``zil`` when the report has those
  sections) under the raw kstat names. Linux reports round counts to 4
  digits (``106.5M``), so those values are approximate.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from zfsmon.metrics.arc import ARCSTAT_COLUMNS, BYTES, COUNT, PERCENT, TIME
from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.fields import unknown_text
from zfsmon.sources.spec import Source, TextKind
from zfsmon.units import parse_size

#: the source's name: what the records parsed from these tools' texts carry as ``source``
SOURCE_NAME = "arcstat"

_ENTITIES = {Kind.ARC: Entity(Kind.ARC, "arc"), Kind.L2ARC: Entity(Kind.L2ARC, "l2arc"),
             Kind.ZIL: Entity(Kind.ZIL, "zil")}

_DEC_RE = re.compile(r"^(-?)(\d+(?:\.\d*)?)([KMGTPEZkmgtpez]?)$")
_DEC_SUFFIX = "KMGTPEZ"
_TIME_RE = re.compile(r"^(\d\d):(\d\d):(\d\d)$")


def parse_decimal_count(text: str) -> float:
    """arcstat/arc_summary counts: ``7.2K`` = 7200, ``404.3k``, ``1.2M`` (powers of 1000, unlike ZFS's 1024)."""
    m = _DEC_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a count: {text!r}")
    sign = -1.0 if m.group(1) else 1.0
    exp = _DEC_SUFFIX.index(m.group(3).upper()) + 1 if m.group(3) else 0
    return sign * float(m.group(2)) * 1000.0 ** exp


def _signed_size(text: str) -> float:
    """arcstat prints sizes that can be negative (``avail`` = ``-177M``)."""
    t = text.strip()
    if t.startswith("-") and len(t) > 1:
        return -parse_size(t[1:])
    return parse_size(t)


# --- arcstat column output ---------------------------------------------------------------------------

#: columns of OpenZFS arcstat (2.1 and 2.3 ``arcstat -a``) that zfsmon arcstat does not show; read under their own
#: names. With :data:`ARCSTAT_COLUMNS` they are the known columns a header is checked against.
TOOL_ONLY_COLUMNS = frozenset("""
abdsz abdsz% anoda anoda% anoed anoed% anoem anoem% anome anome% anosz anosz% bonsz bonsz% cmpsz cmpsz% datasz
datasz% datatg datatg% dbusz dbusz% dnosz dnosz% el2cach el2el el2inel el2mfu el2mru el2skip hdrsz hdrsz% l2data%
l2hsz l2hsz% l2meta% l2mfu% l2mru% l2pref% metasz metasz% metatg metatg% mfuda mfuda% mfudt mfudt% mfued mfued%
mfuem mfuem% mfugd mfugm mfugsz mfume mfume% mfumt mfumt% mfusz% mfutg mfutg% mruda mruda% mrudt mrudt% mrued
mrued% mruem mruem% mrugd mrugm mrugsz mrume mrume% mrumt mrumt% mrusz% mrutg mrutg% ovhsz ovhsz% uncda uncda%
unced unced% uncem uncem% uncme uncme% uncsz uncsz% zactive zahead zfuture zhits zissued zmax zmisses zpast
zstride ztotal""".split())


def _metric_of(col: str) -> Tuple[Kind, str, str]:
    """(entity kind, metric name, value format) for an arcstat column; unknown columns keep their name."""
    c = ARCSTAT_COLUMNS.get(col)
    if c is None:
        return Kind.ARC, col, COUNT
    return c.kind, c.metric, c.fmt


def check_header(toks: List[str], known: frozenset[str] | set[str], tool: str, where: str, no: int,
                 line: str) -> List[str]:
    """The header's columns not in ``known``; a ParseError when it is not this tool's header at all.

    A header is the tool's when it has no column twice, at least one known
    column besides ``time``, and at least as many known columns as unknown
    ones (a newer tool's extra columns are read under their own names; a
    zilstat header given as arcstat is refused).
    """
    if len(set(toks)) != len(toks):
        raise ParseError(where, no, f"expected a {tool} header of column names (a column appears twice)", line)
    unknown = [t for t in toks if t not in known]
    n_known = sum(1 for t in toks if t in known and t != "time")
    if not n_known or len(unknown) > n_known:
        shown = ", ".join(unknown[:6]) + (" ..." if len(unknown) > 6 else "")
        raise ParseError(where, no, f"not a header of {tool}: unknown column(s) {shown}", line)
    return unknown


_PCT_PARTS = ("iohit_pct", "hit_pct", "miss_pct")


def _drop_ratios_without_accesses(values: Dict[Kind, Dict[str, float]]) -> None:
    """arcstat prints 0 for a hit/miss % of an interval with no accesses; zfsmon's rule is: no accesses, no ratio.

    A group's accesses are its ``reads`` column, else its hits + misses (+
    iohits); with neither, a group whose printed percentages are all 0 had
    no accesses (with any access, hit % + iohit % + miss % is 100).
    """
    for metrics in values.values():
        groups: Dict[str, List[str]] = {}
        for name in metrics:
            for part in _PCT_PARTS:
                if name.endswith(part):
                    groups.setdefault(name[:-len(part)], []).append(name)
                    break
        none_at_all = metrics.get("reads_per_s") == 0  # no accesses at all: none in any class either
        for pre, pcts in groups.items():
            reads = 0.0 if none_at_all else metrics.get(f"{pre}reads_per_s")
            if reads is None and f"{pre}hits_per_s" in metrics and f"{pre}misses_per_s" in metrics:
                reads = (metrics[f"{pre}hits_per_s"] + metrics[f"{pre}misses_per_s"]
                         + metrics.get(f"{pre}iohits_per_s", 0.0))
            if reads == 0 or (reads is None and len(pcts) >= 2 and all(metrics[p] == 0 for p in pcts)):
                for p in pcts:
                    del metrics[p]


def parse_arcstat(text: str, ts: float = 0.0, source: str = "arcstat", where: str = "arcstat",
                  interval: Optional[float] = None) -> List[Sample]:
    """Rows of arcstat output -> samples (one per entity per row), with ``interval`` set when known.

    Row time: with a ``time`` column, ``ts`` is taken as the start of the day
    the capture was made (the tool prints no date; midnight wraps forward);
    without one, row *i* is at ``ts + i * interval`` (``interval`` 1 s if not
    given, and then no sample claims an interval). A hit/miss percentage of
    an interval without accesses is left out, not stored as 0.
    """
    return _columns(text, ts, source, where, interval, _ARCSTAT_KNOWN, "arcstat", _metric_of)


_ARCSTAT_KNOWN = frozenset(ARCSTAT_COLUMNS) | TOOL_ONLY_COLUMNS


def _columns(text: str, ts: float, source: str, where: str, interval: Optional[float], known: frozenset[str],
             tool: str, metric_of) -> List[Sample]:
    header: Optional[List[str]] = None
    out: List[Sample] = []
    day = ts
    last_tod: Optional[float] = None
    prev_ts: Optional[float] = None
    row_no = 0
    for no, line in enumerate(text.splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        if header is None:
            check_header(toks, known, tool, where, no, line)
            header = toks
            continue
        if toks == header:  # the tools repeat their header on a terminal
            continue
        if len(toks) != len(header):
            raise ParseError(where, no, f"{len(header)} columns in the header but {len(toks)} values", line)
        values: Dict[Kind, Dict[str, float]] = {}
        row_ts: Optional[float] = None
        for col, tok in zip(header, toks):
            kind, metric, fmt = metric_of(col)
            if fmt == TIME:
                m = _TIME_RE.match(tok)
                if not m:
                    raise ParseError(where, no, f"bad time {tok!r}", line)
                tod = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
                if last_tod is not None and tod < last_tod:
                    day += 86400.0
                last_tod = tod
                row_ts = day + tod
                continue
            if tok == "-":
                continue
            try:
                val = _signed_size(tok) if fmt == BYTES else parse_decimal_count(tok)
            except ValueError as exc:
                raise ParseError(where, no, f"column {col}: {exc}", line) from None
            if fmt == PERCENT and not -1e-9 <= val <= 100.0 + 1e-9:
                raise ParseError(where, no, f"column {col}: {tok} is not a percentage", line)
            values.setdefault(kind, {})[metric] = val
        _drop_ratios_without_accesses(values)
        timed = row_ts is not None
        if row_ts is None:
            row_ts = ts + row_no * (interval or 1.0)
        ival = interval if interval is not None else (row_ts - prev_ts if timed and prev_ts is not None else None)
        if ival is not None and ival <= 0:
            ival = None
        for kind, metrics in values.items():
            out.append(Sample(row_ts, _ENTITIES[kind], metrics, interval=ival, source=source))
        prev_ts = row_ts
        row_no += 1
    if header is None:
        raise ParseError(where, None, f"no {tool} header")
    return out


# --- zilstat (OpenZFS 2.2+) -------------------------------------------------------------------------------

#: zilstat column -> (metric on the zil entity, format). With ``/s`` (``zilstat -i N``) a column is a rate and
#: takes the ``_per_s`` name; without, the since-boot total under the zil kstat's name (cmd/zilstat's table).
ZILSTAT_COLUMNS: Dict[str, Tuple[str, str, str]] = {
    "cc": ("commits_per_s", "commit_count", COUNT),
    "cwc": ("commit_writers_per_s", "commit_writer_count", COUNT),
    "cec": ("commit_errors_per_s", "commit_error_count", COUNT),
    "csc": ("commit_stalls_per_s", "commit_stall_count", COUNT),
    "cSc": ("commit_suspends_per_s", "commit_suspend_count", COUNT),
    "ic": ("itx_per_s", "itx_count", COUNT),
    "iic": ("itx_indirect_per_s", "itx_indirect_count", COUNT),
    "iib": ("itx_indirect_bytes_per_s", "itx_indirect_bytes", BYTES),
    "icc": ("itx_copied_per_s", "itx_copied_count", COUNT),
    "icb": ("itx_copied_bytes_per_s", "itx_copied_bytes", BYTES),
    "inc": ("itx_needcopy_per_s", "itx_needcopy_count", COUNT),
    "inb": ("itx_needcopy_bytes_per_s", "itx_needcopy_bytes", BYTES),
    "idc": ("itx_direct_per_s", "itx_direct_count", COUNT),  # copied + needcopy
    "idb": ("itx_direct_bytes_per_s", "itx_direct_bytes", BYTES),
    "iwc": ("itx_write_per_s", "itx_write_count", COUNT),  # indirect + direct
    "iwb": ("itx_write_bytes_per_s", "itx_write_bytes", BYTES),
    "imnc": ("normal_itx_per_s", "itx_metaslab_normal_count", COUNT),
    "imnb": ("normal_bytes_per_s", "itx_metaslab_normal_bytes", BYTES),
    "imnw": ("normal_write_bytes_per_s", "itx_metaslab_normal_write", BYTES),
    "imna": ("normal_alloc_bytes_per_s", "itx_metaslab_normal_alloc", BYTES),
    "imsc": ("slog_itx_per_s", "itx_metaslab_slog_count", COUNT),
    "imsb": ("slog_bytes_per_s", "itx_metaslab_slog_bytes", BYTES),
    "imsw": ("slog_write_bytes_per_s", "itx_metaslab_slog_write", BYTES),
    "imsa": ("slog_alloc_bytes_per_s", "itx_metaslab_slog_alloc", BYTES),
    "imc": ("metaslab_itx_per_s", "itx_metaslab_count", COUNT),
    "imb": ("metaslab_bytes_per_s", "itx_metaslab_bytes", BYTES),
    "imw": ("metaslab_write_bytes_per_s", "itx_metaslab_write", BYTES),
    "ima": ("metaslab_alloc_bytes_per_s", "itx_metaslab_alloc", BYTES),
    "se%": ("space_efficiency_pct", "space_efficiency_pct", PERCENT),
    "sen%": ("normal_space_efficiency_pct", "normal_space_efficiency_pct", PERCENT),
    "ses%": ("slog_space_efficiency_pct", "slog_space_efficiency_pct", PERCENT),
    "te%": ("transfer_efficiency_pct", "transfer_efficiency_pct", PERCENT),
    "ten%": ("normal_transfer_efficiency_pct", "normal_transfer_efficiency_pct", PERCENT),
    "tes%": ("slog_transfer_efficiency_pct", "slog_transfer_efficiency_pct", PERCENT),
}
_ZILSTAT_KNOWN = frozenset(["time"] + [c + s for c in ZILSTAT_COLUMNS for s in ("", "/s")])


def _zilstat_metric(col: str) -> Tuple[Kind, str, str]:
    if col == "time":
        return Kind.ZIL, "", TIME
    rate = col.endswith("/s")
    known = ZILSTAT_COLUMNS.get(col[:-2] if rate else col)
    if known is None:  # a newer zilstat's column: its own name, as arcstat's unknown columns
        return Kind.ZIL, col, COUNT
    per_s, total, fmt = known
    return Kind.ZIL, per_s if rate else total, fmt


def parse_zilstat(text: str, ts: float = 0.0, source: str = "zilstat", where: str = "zilstat",
                  interval: Optional[float] = None) -> List[Sample]:
    """``zilstat [-i INTERVAL]`` (OpenZFS 2.2+), the pool-wide view: one ``zil`` sample per row.

    Rows are timed as in :func:`parse_arcstat`. The per-dataset views
    (``-d``/``-p``: ``pool``/``ds``/``obj`` columns) are refused: no capture
    of them was available to check against.
    """
    head = next((ln.split() for ln in text.splitlines() if ln.strip()), [])
    if any(c in head for c in ("pool", "ds", "obj")):
        raise ParseError(where, 1, "per-dataset zilstat output (-d/-p) is not read; capture `zilstat -i N`")
    samples = _columns(text, ts, source, where, interval, _ZILSTAT_KNOWN, "zilstat", _zilstat_metric)
    rated = any(c.endswith("/s") for c in head)
    return samples if rated else [dataclasses.replace(s, since_boot=True, interval=None) for s in samples]


# --- arc_summary reports -----------------------------------------------------------------------------

_SIZE_UNITS = {"bytes": 1.0, "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3, "tib": 1024.0 ** 4,
               "pib": 1024.0 ** 5, "eib": 1024.0 ** 6}
_LABEL_RE = re.compile(r"^(\s*)([A-Za-z0-9][^:]*?):(?:\s+(.*))?$")
_PCT_RE = re.compile(r"^~?\d+(?:\.\d+)?\s?%$|^~?\d+:\d+$")
#: words a value column can hold instead of a number: a section's health, a ratio arc_summary could not compute
_WORDS = {"healthy", "degraded", "faulted", "n/a", "<"}

#: (kind, metric of the bytes value or None, metric of the count value or None)
_Spec = Tuple[Kind, Optional[str], Optional[str]]
_A, _L, _Z = Kind.ARC, Kind.L2ARC, Kind.ZIL


def _sz(metric: str, kind: Kind = _A) -> _Spec:
    return kind, metric, None


def _n(metric: str, kind: Kind = _A) -> _Spec:
    return kind, None, metric


def _classes(hm: str) -> Dict[str, _Spec]:
    """2.1's "Cache hits/misses by data type" sections: ``Demand data:`` -> ``demand_data_hits``."""
    return {c.replace("_", " "): _n(f"{c}_{hm}") for c in
            ("demand_data", "prefetch_data", "demand_metadata", "prefetch_metadata")}


def _accesses(cls: str) -> Dict[str, _Spec]:
    """2.2+ "ARC <class> accesses" sections: ``Demand data hits:`` / ``I/O hits:`` / ``misses:``."""
    words = cls.replace("_", " ")
    return {f"{words} hits": _n(f"{cls}_hits"), f"{words} i/o hits": _n(f"{cls}_iohits"),
            f"{words} misses": _n(f"{cls}_misses")}


_STATE_HITS = {"most frequently used (mfu)": _n("mfu_hits"), "most recently used (mru)": _n("mru_hits"),
               "most frequently used (mfu) ghost": _n("mfu_ghost_hits"),
               "most recently used (mru) ghost": _n("mru_ghost_hits"), "uncached": _n("uncached_hits")}

#: Linux ``arc_summary`` (OpenZFS 0.8 .. 2.3): section heading -> {label -> where its value goes}. The
#: key "" is the heading line's own value. Labels are lower case without the colon. Every value is the
#: arcstats (or zil kstat) statistic arc_summary printed, read from cmd/arc_summary of 2.1 and 2.3.
_LINUX: Dict[str, Dict[str, _Spec]] = {
    # 2.1
    "arc status": {"memory throttle count": _n("memory_throttle_count"),
                   # 2.2+
                   "total memory size": _sz("memory_all_bytes"), "min target size": _sz("c_min"),
                   "max target size": _sz("c_max"), "target size (adaptive)": _sz("c"),
                   "current size": _sz("size"), "free memory size": _sz("memory_free_bytes"),
                   "available memory size": _sz("memory_available_bytes")},
    "arc size (current)": {"": _sz("size"), "target size (adaptive)": _sz("c"), "min size (hard limit)": _sz("c_min"),
                           "max size (high water)": _sz("c_max"),
                           "most frequently used (mfu) cache size": _sz("mfu_size"),
                           "most recently used (mru) cache size": _sz("mru_size"),
                           "metadata cache size (hard limit)": _sz("arc_meta_limit"),
                           "metadata cache size (current)": _sz("arc_meta_used"),
                           "dnode cache size (hard limit)": _sz("arc_dnode_limit"),
                           "dnode cache size (current)": _sz("dnode_size")},
    "arc structural breakdown (current size)": {
        "": _sz("size"), "compressed size": _sz("compressed_size"), "overhead size": _sz("overhead_size"),
        "bonus size": _sz("bonus_size"), "dnode size": _sz("dnode_size"), "dbuf size": _sz("dbuf_size"),
        "header size": _sz("hdr_size"), "l2 header size": _sz("hdr_size", _L),
        "abd chunk waste size": _sz("abd_chunk_waste_size")},
    "arc types breakdown (compressed + overhead)": {"data size": _sz("data_size"),
                                                    "metadata size": _sz("metadata_size")},
    "arc states breakdown (compressed + overhead)": {
        "anonymous data size": _sz("anon_data"), "anonymous metadata size": _sz("anon_metadata"),
        **{f"{st} {what} size": _sz(f"{st}_{what}") for st in ("mfu", "mru") for what in ("data", "metadata")},
        **{f"{st} evictable {what} size": _sz(f"{st}_evictable_{what}") for st in ("mfu", "mru")
           for what in ("data", "metadata")},
        **{f"{st} ghost {what} size": _sz(f"{st}_ghost_{what}") for st in ("mfu", "mru")
           for what in ("data", "metadata")},
        "uncached data size": _sz("uncached_data"), "uncached metadata size": _sz("uncached_metadata")},
    "arc hash breakdown": {"elements": _n("hash_elements"), "elements max": _n("hash_elements_max"),
                           "elements current": _n("hash_elements"), "collisions": _n("hash_collisions"),
                           "chain max": _n("hash_chain_max"), "chains": _n("hash_chains")},
    "arc misc": {"uncompressed size": _sz("uncompressed_size"), "memory throttles": _n("memory_throttle_count"),
                 "memory direct reclaims": _n("memory_direct_count"),
                 "memory indirect reclaims": _n("memory_indirect_count"),
                 "deleted": _n("deleted"), "mutex misses": _n("mutex_miss"), "eviction skips": _n("evict_skip"),
                 "eviction skips due to l2 writes": _n("evict_l2_skip"),
                 "l2 cached evictions": _sz("evict_l2_cached"), "l2 eligible evictions": _sz("evict_l2_eligible"),
                 "l2 eligible mfu evictions": _sz("evict_l2_eligible_mfu"),
                 "l2 eligible mru evictions": _sz("evict_l2_eligible_mru"),
                 "l2 ineligible evictions": _sz("evict_l2_ineligible")},
    # 2.1
    "arc total accesses (hits + misses)": {"cache hit ratio": _n("hits"), "cache miss ratio": _n("misses")},
    "cache hits by cache type": {**_STATE_HITS, "most frequently used": _n("mfu_hits"),
                                 "most recently used": _n("mru_hits")},
    "cache hits by data type": _classes("hits"),
    "cache misses by data type": _classes("misses"),
    # 2.2+
    "arc total accesses": {"total hits": _n("hits"), "total i/o hits": _n("iohits"), "total misses": _n("misses")},
    **{f"arc {c.replace('_', ' ')} accesses": _accesses(c)
       for c in ("demand_data", "demand_metadata", "prefetch_data", "prefetch_metadata")},
    "arc predictive prefetches": {"": _n("predictive_prefetch"),
                                  "demand hits after predictive": _n("demand_hit_predictive_prefetch"),
                                  "demand i/o hits after predictive": _n("demand_iohit_predictive_prefetch")},
    "arc prescient prefetches": {"": _n("prescient_prefetch"),
                                 "demand hits after prescient": _n("demand_hit_prescient_prefetch"),
                                 "demand i/o hits after prescient": _n("demand_iohit_prescient_prefetch")},
    "arc states hits of all accesses": _STATE_HITS,
    # L2ARC (2.1 and 2.2+)
    "l2arc status": {"low memory aborts": _n("abort_lowmem", _L), "free on write": _n("free_on_write", _L),
                     "r/w clashes": _n("rw_clash", _L), "bad checksums": _n("cksum_bad", _L),
                     "i/o errors": _n("io_error", _L), "read errors": _n("io_error", _L),
                     "write errors": _n("writes_error", _L)},
    "l2arc size (adaptive)": {"": _sz("size", _L), "compressed": _sz("asize", _L), "header size": _sz("hdr_size", _L),
                              "mfu allocated size": _sz("mfu_asize", _L), "mru allocated size": _sz("mru_asize", _L),
                              "prefetch allocated size": _sz("prefetch_asize", _L),
                              "data (buffer content) allocated size": _sz("bufc_data_asize", _L),
                              "metadata (buffer content) allocated size": _sz("bufc_metadata_asize", _L)},
    "l2arc breakdown": {"hit ratio": _n("hits", _L), "miss ratio": _n("misses", _L), "feeds": _n("feeds", _L)},
    "l2arc i/o": {"reads": (_L, "read_bytes", "hits"), "writes": (_L, "write_bytes", "writes_sent")},
    "l2arc writes": {"writes sent": _n("writes_sent", _L), "done ratio": _n("writes_done", _L),
                     "error ratio": _n("writes_error", _L)},
    "l2arc evicts": {"lock retries": _n("evict_lock_retry", _L), "upon reading": _n("evict_reading", _L),
                     "l1 cached": _n("evict_l1cached", _L), "while reading": _n("evict_reading", _L)},
    # ZIL (the zil kstat)
    "zil committed transactions": {"": _n("itx_count", _Z), "commit requests": _n("commit_count", _Z),
                                   "flushes to stable storage": _n("commit_writer_count", _Z),
                                   "transactions to slog storage pool": (_Z, "itx_metaslab_slog_bytes",
                                                                         "itx_metaslab_slog_count"),
                                   "transactions to non-slog storage pool": (_Z, "itx_metaslab_normal_bytes",
                                                                             "itx_metaslab_normal_count")},
}

#: lines arc_summary computes from other values (sums, ratios, targets): known, not statistics
_DERIVED = {
    "arc types breakdown (compressed + overhead)": {""},
    "arc states breakdown (compressed + overhead)": {"", "mfu data target", "mfu metadata target", "mru data target",
                                                     "mru metadata target"},
    "arc total accesses (hits + misses)": {"", "actual hit ratio (mfu + mru hits)", "data demand efficiency",
                                           "data prefetch efficiency"},
    "cache hits by cache type": {"anonymously used"},
    "arc total accesses": {""},
    **{f"arc {c} accesses": {""} for c in ("demand data", "demand metadata", "prefetch data", "prefetch metadata")},
    "arc predictive prefetches": {"never demanded after predictive"},
    "arc prescient prefetches": {"never demanded after prescient"},
    "l2arc breakdown": {""},
}
#: sections of statistics zfsmon reads elsewhere or not at all (zfetchstats, vdev cache, SPL and module tunables)
_OTHER_SECTIONS = ("dmu", "vdev cache", "porting layer", "tunable", "zfs subsystem report", "machine")

#: labels that mean one statistic in whichever section they appear: read even under an unknown heading
_UNIQUE: Dict[str, _Spec] = {}
for _sec in _LINUX.values():
    for _lab, _spec in _sec.items():
        if _lab:
            _UNIQUE.setdefault(_lab, _spec)
_AMBIGUOUS = {lab for lab in _UNIQUE
              if len({sec[lab] for sec in _LINUX.values() if lab in sec}) > 1} | {"hit ratio", "miss ratio"}
for _lab in _AMBIGUOUS:
    _UNIQUE.pop(_lab, None)

# The older FreeBSD ``arc_summary.pl`` (tab separated): (words in section / sub-heading, label) -> statistic.
_PL_MAP: List[Tuple[str, str, Kind, str, str]] = [
    ("arc", "memory throttle count", Kind.ARC, "memory_throttle_count", "count"),
    ("arc", "arc size", Kind.ARC, "size", "size"),
    ("arc", "target size", Kind.ARC, "c", "size"),
    ("arc", "min size (hard limit)", Kind.ARC, "c_min", "size"),
    ("arc", "max size (high water)", Kind.ARC, "c_max", "size"),
    ("arc", "recycle misses", Kind.ARC, "recycle_miss", "count"),
    ("arc", "evict skips", Kind.ARC, "evict_skip", "count"),
    ("arc", "cache hit ratio", Kind.ARC, "hits", "count"),
    ("arc", "cache miss ratio", Kind.ARC, "misses", "count"),
    ("hits by cache", "most frequently used", Kind.ARC, "mfu_hits", "count"),
    ("hits by cache", "most recently used", Kind.ARC, "mru_hits", "count"),
    ("hits by cache", "most frequently used ghost", Kind.ARC, "mfu_ghost_hits", "count"),
    ("hits by cache", "most recently used ghost", Kind.ARC, "mru_ghost_hits", "count"),
    *[(f"{hm} by data type", cls.replace("_", " "), Kind.ARC, f"{cls}_{hm}", "count")
      for hm in ("hits", "misses")
      for cls in ("demand_data", "prefetch_data", "demand_metadata", "prefetch_metadata")],
    ("l2", "l2 arc size", Kind.L2ARC, "size", "size"),
    ("l2", "header size", Kind.L2ARC, "hdr_size", "size"),
    ("l2 arc breakdown", "hit ratio", Kind.L2ARC, "hits", "count"),
    ("l2 arc breakdown", "miss ratio", Kind.L2ARC, "misses", "count"),
    ("l2", "feeds", Kind.L2ARC, "feeds", "count"),
    ("l2", "low memory aborts", Kind.L2ARC, "abort_lowmem", "count"),
    ("l2", "free on write", Kind.L2ARC, "free_on_write", "count"),
    ("l2", "r/w clashes", Kind.L2ARC, "rw_clash", "count"),
    ("l2", "bad checksums", Kind.L2ARC, "cksum_bad", "count"),
    ("l2", "io errors", Kind.L2ARC, "io_error", "count"),
    ("l2", "writes sent", Kind.L2ARC, "writes_sent", "count"),
]


def _summary_values(rest: str) -> Tuple[Optional[float], Optional[float]]:
    """(bytes, count) from what follows a label: ``51.89% 257.38 MiB``, ``98.1 % 106.5M``, ``< 0.1 % 2``,
    ``n/a 0``, ``8.3 GiB 182.8k``. Percentages, ratios and words (HEALTHY, n/a) are not values."""
    toks = [t for t in rest.replace("\t", " ").split() if not (t.startswith("(") and t.endswith(")"))]
    kept: List[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if i + 1 < len(toks) and toks[i + 1] == "%":
            i += 2
            continue
        if _PCT_RE.match(t) or t.lower() in _WORDS:
            i += 1
            continue
        kept.append(t)
        i += 1
    size: Optional[float] = None
    count: Optional[float] = None
    j = 0
    while j < len(kept):
        t = kept[j]
        unit = kept[j + 1].lower() if j + 1 < len(kept) else ""
        if unit in _SIZE_UNITS:
            try:
                size = float(t) * _SIZE_UNITS[unit]
            except ValueError:
                raise ValueError(f"not a size: {t!r}") from None
            j += 2
            continue
        count = parse_decimal_count(t)
        j += 1
    return size, count


def _pl_lookup(context: str, label: str) -> Optional[_Spec]:
    for ctx, lab, kind, metric, how in _PL_MAP:
        if lab == label and ctx in context:
            return (kind, metric, None) if how == "size" else (kind, None, metric)
    return None


@dataclass
class SummaryReading:
    """What :func:`read_arc_summary` made of a report: the samples, and what it could not read."""

    samples: List[Sample]
    values: int
    #: (line number, label) of value lines in statistics sections that no table knows
    unread: List[Tuple[int, str]]

    def notice(self, where: str) -> Optional[str]:
        """One line for the user when lines were not read or the report yielded few values; else None."""
        parts = []
        if self.unread:
            shown = ", ".join(f"{lab!r} (line {no})" for no, lab in self.unread[:5])
            more = f" and {len(self.unread) - 5} more" if len(self.unread) > 5 else ""
            parts.append(f"{len(self.unread)} line(s) not read: {shown}{more}")
        if self.values < FEW_SUMMARY_VALUES:
            parts.append(f"only {self.values} values found (a full report has 50 or more: cut short or mangled?)")
        return f"{where}: arc_summary: {'; '.join(parts)}" if parts else None


#: fewer values than this from an arc_summary report is worth saying (2.1 and 2.3 reports give 70+)
FEW_SUMMARY_VALUES = 20


def read_arc_summary(text: str, ts: float = 0.0, source: str = "arc_summary",
                     where: str = "arc_summary") -> SummaryReading:
    """An ``arc_summary`` / ``arc_summary.pl`` report -> since-boot ``arc`` (+``l2arc``, ``zil``) samples.

    A value line is read by its section's table; under a heading no table
    knows (a stray line, a newer arc_summary) labels that mean one statistic
    anywhere are still read, and the others are listed as not read.
    """
    if "ARC" not in text or not re.search(r"^ZFS Subsystem Report", text, re.M):
        raise ParseError(where, None, "not an arc_summary report (no 'ZFS Subsystem Report' line)")
    tabbed = bool(re.search(r"^\t\S", text, re.M))  # FreeBSD arc_summary.pl
    section = ""
    sub = ""
    values: Dict[Kind, Dict[str, float]] = {}
    unread: List[Tuple[int, str]] = []
    other = True  # before the first section, and in sections zfsmon does not take statistics from
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or set(line.strip()) <= {"-"}:
            continue
        m = _LABEL_RE.match(line)
        if not m:  # free text (uname, uptime), name=value tunables
            if not other and line[:1].isspace() and re.search(r"\d", line):
                unread.append((no, line.strip()[:40]))
            continue
        indent, label, rest = m.group(1), m.group(2).strip().lower(), (m.group(3) or "").strip()
        if not indent:
            if label in _LINUX or label in _DERIVED:
                section, other = label, False
            elif any(w in label for w in _OTHER_SECTIONS):
                section, other = label, True
            elif tabbed:  # arc_summary.pl: kernel memory and such come before the first ARC section
                section, other = label, other and not re.search(r"\b(arc|l2)\b", label)
            elif not section:
                continue  # the report's own header lines
            else:  # no section of a Linux report: a stray line (its section's labels are still read if unique)
                if not other:
                    unread.append((no, label[:40]))
                section = f"?{label}"
                continue
            sub = ""
            label = ""
        elif not rest or rest.endswith(":"):
            sub = label
            continue
        if other:
            continue
        table = _LINUX.get(section)
        spec = table.get(label) if table is not None else None
        if spec is None and table is None and label:
            spec = _UNIQUE.get(label)
        if spec is None and tabbed:
            spec = _pl_lookup(f"{section} / {sub}", label or section)
        if spec is None:
            if label not in _DERIVED.get(section, ()) and re.search(r"\d", rest):
                unread.append((no, (label or section)[:40]))
            continue
        kind, size_metric, count_metric = spec
        try:
            size, count = _summary_values(rest)
        except ValueError as exc:
            raise ParseError(where, no, f"{label or section}: {exc}", line) from None
        got = values.setdefault(kind, {})
        if size_metric and size is not None:
            got.setdefault(size_metric, size)
        if count_metric and count is not None:
            got.setdefault(count_metric, count)
    if not values.get(Kind.ARC):
        raise ParseError(where, None, "arc_summary report without ARC figures")
    samples = [Sample(ts, _ENTITIES[k], v, since_boot=True, source=source) for k, v in values.items() if v]
    return SummaryReading(samples, sum(len(v) for v in values.values()), unread)


def parse_arc_summary(text: str, ts: float = 0.0, source: str = "arc_summary",
                      where: str = "arc_summary") -> List[Sample]:
    """The samples of :func:`read_arc_summary`."""
    return read_arc_summary(text, ts, source, where).samples


def parse(text: str, ts: float = 0.0, source: str = "arcstat", where: str = "arcstat") -> List[Sample]:
    """Either tool's output, recognised by its shape."""
    if re.search(r"^ZFS Subsystem Report", text, re.M):
        return parse_arc_summary(text, ts, source, where)
    return parse_arcstat(text, ts, source, where)


# --- the source (parse-only: `zfsmon arcstat` is zfsmon's own, from the arcstats source) ------------------------

_TOOL_HEAD = re.compile(r"^\s*(ZFS Subsystem Report|ARC Summary|ARC summary)")
_COLUMN_HEAD = re.compile(r"(^|\s)(\w*h%|\w*hit%|miss%|arcsz)(\s|$)")


def looks_like(text: str) -> bool:
    """An arc_summary title, or arcstat column names (``hit%``, ``dh%``, ``miss%``, ``arcsz``) on the first lines."""
    head = [ln for ln in text.splitlines()[:10] if ln.strip()]
    if any(_TOOL_HEAD.match(ln) for ln in head):
        return True
    return any(_COLUMN_HEAD.search(ln) for ln in head[:3])


def _with_note(records: List[Record], text: Optional[str], source: str) -> List[Record]:
    """A note for the user about the capture as a whole: an info event carrying ``note`` (``zfsmon parse`` and
    ``import`` print it), at the capture's first reading."""
    if not text:
        return records
    ts = min((r.ts for r in records), default=0.0)
    return [Event(ts, EventKind.INFO, text, source=source, data={"note": text}), *records]


def _parse_capture(text: str, source: str, interval: Optional[float]) -> List[Record]:
    if re.search(r"^ZFS Subsystem Report", text, re.M):
        reading = read_arc_summary(text, 0.0, source=SOURCE_NAME, where=source)
        return _with_note(list(reading.samples), reading.notice(source), "arcstat")
    records: List[Record] = list(parse_arcstat(text, 0.0, source=SOURCE_NAME, where=source, interval=interval))
    return _with_note(records, _unknown_columns(text, _ARCSTAT_KNOWN, source, "arcstat"), "arcstat")


def _unknown_columns(text: str, known: frozenset[str], source: str, tool: str) -> Optional[str]:
    """The note naming the header's columns the tool's table does not have (read under their own names)."""
    head = next((ln.split() for ln in text.splitlines() if ln.strip()), [])
    unknown = [c for c in head if c not in known]
    return unknown_text(source, unknown, f"{tool} column") if unknown else None


def looks_like_zilstat(text: str) -> bool:
    """zilstat's header: only zilstat column names (``time cc/s ic/s ...``), at least two of them."""
    head = next((ln.split() for ln in text.splitlines()[:5] if ln.strip()), [])
    return (len(head) >= 3 and all(t in _ZILSTAT_KNOWN for t in head)
            and sum(1 for t in head if t != "time") >= 2)


def _parse_zilstat(text: str, source: str, interval: Optional[float]) -> List[Record]:
    records: List[Record] = list(parse_zilstat(text, 0.0, source=SOURCE_NAME, where=source, interval=interval))
    return _with_note(records, _unknown_columns(text, _ZILSTAT_KNOWN, source, "zilstat"), "arcstat")


SOURCE = Source(
    name=SOURCE_NAME, help="saved output of the arcstat / arc_summary / zilstat tools", order=30,
    kinds=(TextKind("zilstat", "zilstat tool output (OpenZFS 2.2+): ZIL commits and itx rates", looks_like_zilstat,
                    _parse_zilstat, "zilstat -i 5 | tee zilstat.log"),
           TextKind("arcstat", "arcstat / arcstat.py output, or an arc_summary report", looks_like, _parse_capture,
                    "arcstat 5 | tee arcstat.log; arc_summary > arc_summary.txt"),),
    family="arc",
    feeds=(Kind.ARC, Kind.L2ARC, Kind.ZIL),
)
