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

import re
from typing import Dict, List, Optional, Tuple

from zfsmon.metrics.arc import ARCSTAT_COLUMNS, BYTES, COUNT, PERCENT, TIME
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources.spec import Source, TextKind
from zfsmon.units import parse_size

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

def _metric_of(col: str) -> Tuple[Kind, str, str]:
    """(entity kind, metric name, value format) for an arcstat column; unknown columns keep their name."""
    c = ARCSTAT_COLUMNS.get(col)
    if c is None:
        return Kind.ARC, col, COUNT
    return c.kind, c.metric, c.fmt


def parse_arcstat(text: str, ts: float = 0.0, source: str = "arcstat", where: str = "arcstat",
                  interval: Optional[float] = None) -> List[Sample]:
    """Rows of arcstat output -> samples (one per entity per row), with ``interval`` set when known.

    Row time: with a ``time`` column, ``ts`` is taken as the start of the day
    the capture was made (the tool prints no date; midnight wraps forward);
    without one, row *i* is at ``ts + i * interval`` (``interval`` 1 s if not
    given, and then no sample claims an interval).
    """
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
            if not any(t in ARCSTAT_COLUMNS for t in toks) or len(set(toks)) != len(toks):
                raise ParseError(where, no, "expected an arcstat header of column names", line)
            header = toks
            continue
        if toks == header:  # arcstat repeats its header on a terminal
            continue
        if len(toks) != len(header):
            raise ParseError(where, no, f"{len(header)} columns in the header but {len(toks)} values", line)
        values: Dict[Kind, Dict[str, float]] = {}
        row_ts: Optional[float] = None
        for col, tok in zip(header, toks):
            kind, metric, fmt = _metric_of(col)
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
        raise ParseError(where, None, "no arcstat header")
    return out


# --- arc_summary reports -----------------------------------------------------------------------------

_SIZE_UNITS = {"bytes": 1.0, "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3, "tib": 1024.0 ** 4,
               "pib": 1024.0 ** 5, "eib": 1024.0 ** 6}
_LABEL_RE = re.compile(r"^(\s*)([A-Za-z0-9][^:]*?):(?:\s+(.*))?$")
_PCT_RE = re.compile(r"^~?\d+(?:\.\d+)?\s?%$|^~?\d+:\d+$")

# (context words, label) -> (kind, metric, "size" | "count"). Context = section + sub-heading, lower case.
_SUMMARY_MAP: List[Tuple[str, str, Kind, str, str]] = [
    ("arc", "memory throttle count", Kind.ARC, "memory_throttle_count", "count"),
    ("arc", "arc size (current)", Kind.ARC, "size", "size"),
    ("arc", "arc size", Kind.ARC, "size", "size"),
    ("arc", "target size (adaptive)", Kind.ARC, "c", "size"),
    ("arc", "target size", Kind.ARC, "c", "size"),
    ("arc", "min size (hard limit)", Kind.ARC, "c_min", "size"),
    ("arc", "max size (high water)", Kind.ARC, "c_max", "size"),
    ("arc", "most frequently used (mfu) cache size", Kind.ARC, "mfu_size", "size"),
    ("arc", "most recently used (mru) cache size", Kind.ARC, "mru_size", "size"),
    ("arc", "deleted", Kind.ARC, "deleted", "count"),
    ("arc", "recycle misses", Kind.ARC, "recycle_miss", "count"),
    ("arc", "mutex misses", Kind.ARC, "mutex_miss", "count"),
    ("arc", "evict skips", Kind.ARC, "evict_skip", "count"),
    ("arc", "eviction skips", Kind.ARC, "evict_skip", "count"),
    ("arc", "cache hit ratio", Kind.ARC, "hits", "count"),
    ("arc", "cache miss ratio", Kind.ARC, "misses", "count"),
    ("hits by cache", "most frequently used (mfu)", Kind.ARC, "mfu_hits", "count"),
    ("hits by cache", "most recently used (mru)", Kind.ARC, "mru_hits", "count"),
    ("hits by cache", "most frequently used (mfu) ghost", Kind.ARC, "mfu_ghost_hits", "count"),
    ("hits by cache", "most recently used (mru) ghost", Kind.ARC, "mru_ghost_hits", "count"),
    ("hits by cache", "most frequently used", Kind.ARC, "mfu_hits", "count"),
    ("hits by cache", "most recently used", Kind.ARC, "mru_hits", "count"),
    ("hits by cache", "most frequently used ghost", Kind.ARC, "mfu_ghost_hits", "count"),
    ("hits by cache", "most recently used ghost", Kind.ARC, "mru_ghost_hits", "count"),
    *[(f"{hm} by data type", cls.replace("_", " "), Kind.ARC, f"{cls}_{hm}", "count")
      for hm in ("hits", "misses")
      for cls in ("demand_data", "prefetch_data", "demand_metadata", "prefetch_metadata")],
    ("l2", "l2 arc size", Kind.L2ARC, "size", "size"),
    ("l2", "l2arc size (adaptive)", Kind.L2ARC, "size", "size"),
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
    ("zil", "zil committed transactions", Kind.ZIL, "itx_count", "count"),
    ("zil", "commit requests", Kind.ZIL, "commit_count", "count"),
    ("zil", "flushes to stable storage", Kind.ZIL, "commit_writer_count", "count"),
    ("zil", "transactions to slog storage pool", Kind.ZIL, "itx_metaslab_slog", "both"),
    ("zil", "transactions to non-slog storage pool", Kind.ZIL, "itx_metaslab_normal", "both"),
]


def _summary_values(rest: str) -> Tuple[Optional[float], Optional[float]]:
    """(bytes, count) from what follows a label: ``51.89% 257.38 MiB``, ``98.1 % 106.5M``, ``8.3 GiB 182.8k``."""
    toks = [t for t in rest.replace("\t", " ").split() if not (t.startswith("(") and t.endswith(")"))]
    # drop percentages ("98.1 %", "51.89%") and ratios ("16:1", "~8:1")
    kept: List[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if i + 1 < len(toks) and toks[i + 1] == "%":
            i += 2
            continue
        if _PCT_RE.match(t):
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
            size = float(t) * _SIZE_UNITS[unit]
            j += 2
            continue
        count = parse_decimal_count(t)
        j += 1
    return size, count


def _lookup(context: str, label: str) -> Optional[Tuple[Kind, str, str]]:
    for ctx, lab, kind, metric, how in _SUMMARY_MAP:
        if lab == label and ctx in context:
            return kind, metric, how
    return None


def parse_arc_summary(text: str, ts: float = 0.0, source: str = "arc_summary",
                      where: str = "arc_summary") -> List[Sample]:
    """An ``arc_summary`` / ``arc_summary.pl`` report -> since-boot ``arc`` (+``l2arc``, ``zil``) samples."""
    if "ARC" not in text or not re.search(r"^ZFS Subsystem Report", text, re.M):
        raise ParseError(where, None, "not an arc_summary report (no 'ZFS Subsystem Report' line)")
    section = ""
    sub = ""
    values: Dict[Kind, Dict[str, float]] = {}
    in_tunables = False
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or set(line.strip()) == {"-"}:
            continue
        m = _LABEL_RE.match(line)
        if not m:
            continue  # free text (uname, uptime) and name=value tunables
        indent, label, rest = m.group(1), m.group(2).strip().lower(), (m.group(3) or "").strip()
        if not indent:
            section, sub = label, ""
            in_tunables = "tunable" in label or "porting layer" in label
        elif not rest or rest.endswith(":"):
            sub = label
            continue
        if in_tunables:
            continue
        hit = _lookup(f"{section} / {sub}", label)
        if hit is None:
            continue
        kind, metric, how = hit
        try:
            size, count = _summary_values(rest)
        except ValueError as exc:
            raise ParseError(where, no, f"{label}: {exc}", line) from None
        got = values.setdefault(kind, {})
        if how == "size" and size is not None:
            got.setdefault(metric, size)
        elif how == "count" and count is not None:
            got.setdefault(metric, count)
        elif how == "both":
            if size is not None:
                got.setdefault(f"{metric}_bytes", size)
            if count is not None:
                got.setdefault(f"{metric}_count", count)
    if not values.get(Kind.ARC):
        raise ParseError(where, None, "arc_summary report without ARC figures")
    return [Sample(ts, _ENTITIES[k], v, since_boot=True, source=source) for k, v in values.items() if v]


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


def _parse_capture(text: str, source: str, interval: Optional[float]) -> List[Record]:
    return list(parse(text, 0.0, source="arcstat", where=source))


SOURCE = Source(
    name="arcstat", help="saved output of the arcstat / arc_summary tools", order=30,
    kinds=(TextKind("arcstat", "arcstat / arcstat.py / arc_summary tool output", looks_like, _parse_capture,
                    "arcstat 5 | tee arcstat.log"),),
    family="arc",
)
