"""Which parser reads a captured text: a small registry for ``zfsmon import`` and ``zfsmon parse``.

People keep logs of ``zpool iostat -v 5``, ``cat arcstats`` loops, arcstat and
pgbench output. Each known format is a :class:`TextKind`: a cheap ``sniff``
that looks at the text's shape (headers, key prefixes) and an adapter onto the
format's own pure parser, which is imported only when used. ``detect`` returns
the first kind whose sniff accepts the text, so more specific kinds come first.

Captures without printed times get relative timestamps from their parser
(interval counts, the kstat's monotonic ``snaptime``); :func:`is_relative`
tells callers to place them on the wall clock.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from zfsmon.model import ParseError, Record

Parse = Callable[[str, str, Optional[float]], List[Record]]

#: timestamps below this (1973) are offsets, not epoch times
RELATIVE_BEFORE = 1e8


@dataclass(frozen=True)
class TextKind:
    name: str
    help: str
    sniff: Callable[[str], bool]
    parse: Parse  # (text, source, interval) -> records; raises ParseError

    def __str__(self) -> str:
        return self.name


def _module(name: str):
    try:
        return importlib.import_module(f"zfsmon.sources.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"zfsmon.sources.{name}":
            raise ParseError(name, None, f"the {name} parser is not part of this zfsmon") from None
        raise


def _head(text: str, n: int = 40) -> List[str]:
    return [ln for ln in text.splitlines()[:n] if ln.strip()]


# --- zpool iostat -------------------------------------------------------------------------------------------

_IOSTAT_HEAD = re.compile(r"^\s*(capacity\s+)?operations\s+bandwidth\b")
_IOSTAT_COLS = re.compile(r"^\s*pool\s+(alloc\s+free|used\s+avail)\s+read\s+write")
_IOSTAT_HIST = re.compile(r"^\S+\s+(total_wait|sync_read)\s+\S+")


def _sniff_zpool_iostat(text: str) -> bool:
    return any(_IOSTAT_HEAD.match(ln) or _IOSTAT_COLS.match(ln) or _IOSTAT_HIST.match(ln) for ln in _head(text, 60))


def _parse_zpool_iostat(text: str, source: str, interval: Optional[float]) -> List[Record]:
    return list(_module("zpool_iostat").parse_text(text, source, interval=interval))


# --- arcstats (kstat dumps) ---------------------------------------------------------------------------------

_KSTAT_HEADER = re.compile(r"^\d+ \d+ 0x[0-9a-fA-F]+ \d+ \d+ \d+ \d+\s*$")
_SYSCTL_ARC = "kstat.zfs.misc.arcstats."
_ILLUMOS_ARC = re.compile(r"^zfs:\d+:arcstats:\S+\t")


def _sniff_arcstats(text: str) -> bool:
    head = _head(text, 6)
    if len(head) >= 2 and _KSTAT_HEADER.match(head[0]) and head[1].split() == ["name", "type", "data"]:
        # zfetchstats and vdev_cache_stats have hits/misses too; only arcstats has c_max
        return bool(re.search(r"^c_max\s+\d+\s", text, re.M))
    return any(ln.startswith(_SYSCTL_ARC) or _ILLUMOS_ARC.match(ln) for ln in head)


def _split_linux_dumps(text: str) -> List[str]:
    dumps: List[List[str]] = []
    for line in text.splitlines():
        if _KSTAT_HEADER.match(line):
            dumps.append([])
        if dumps:
            dumps[-1].append(line)
    return ["\n".join(d) + "\n" for d in dumps]


def _split_sysctl_dumps(text: str) -> List[str]:
    """A loop of ``sysctl kstat.zfs.misc.arcstats`` runs: a new dump starts when a name comes round again."""
    dumps: List[List[str]] = [[]]
    seen: set = set()
    for line in text.splitlines():
        name = line.split(":", 1)[0]
        if name in seen:
            dumps.append([])
            seen = set()
        seen.add(name)
        dumps[-1].append(line)
    return ["\n".join(d) + "\n" for d in dumps if d]


def _parse_arcstats(text: str, source: str, interval: Optional[float]) -> List[Record]:
    """One or more dumps. Linux dumps are placed by their kstat snaptime (seconds since boot, relative)."""
    arc = _module("arcstats")
    out: List[Record] = []
    head = _head(text, 6)
    if head and _KSTAT_HEADER.match(head[0]):
        dumps = _split_linux_dumps(text)
        for i, dump in enumerate(dumps):
            snap = int(dump.split("\n", 1)[0].split()[6]) / 1e9
            ts = snap if interval is None else i * interval
            out.extend(arc.parse_linux(dump, ts, source="arcstats", where=f"{source} (dump {i + 1})"))
        return out
    if any(ln.startswith(_SYSCTL_ARC) for ln in head):
        for i, dump in enumerate(_split_sysctl_dumps(text)):
            out.extend(arc.parse_freebsd(dump, i * (interval or 1.0), source="arcstats",
                                         where=f"{source} (dump {i + 1})"))
        return out
    return list(arc.parse_illumos(text, 0.0, source="arcstats", where=source, interval=interval or 1.0))


# --- arcstat / arc_summary tools ----------------------------------------------------------------------------

def _sniff_arcstat_tool(text: str) -> bool:
    head = _head(text, 10)
    if any(re.match(r"^\s*(ZFS Subsystem Report|ARC Summary|ARC summary)", ln) for ln in head):
        return True
    return any(re.search(r"(^|\s)(\w*h%|\w*hit%|miss%|arcsz)(\s|$)", ln) for ln in head[:3])


def _parse_arcstat_tool(text: str, source: str, interval: Optional[float]) -> List[Record]:
    return list(_module("arcstat_tool").parse(text, 0.0, source="arcstat", where=source))


# --- pgbench ------------------------------------------------------------------------------------------------

_PGBENCH_TEXT = re.compile(r"^(transaction type:|progress: \d+(\.\d+)? s, |tps = |pgbench \(\d)", re.M)


def _pgbench_log_kind(text: str) -> Optional[str]:
    pg = _module("pgbench")
    kinds = {pg.detect_log_format(ln) for ln in _head(text, 5)}
    return kinds.pop() if len(kinds) == 1 and kinds <= {"aggregate", "transaction"} else None


def _sniff_pgbench(text: str) -> bool:
    if _PGBENCH_TEXT.search(text[:20000]):
        return True
    try:
        return _pgbench_log_kind(text) is not None
    except ParseError:
        return False


def _parse_pgbench(text: str, source: str, interval: Optional[float]) -> List[Record]:
    pg = _module("pgbench")
    if _pgbench_log_kind(text) is not None:
        return list(pg.parse_log(text, source="pgbench", interval=interval))
    return list(pg.parse_text(text, source="pgbench"))


#: in detection order
KINDS: Dict[str, TextKind] = {k.name: k for k in (
    TextKind("zpool-iostat", "`zpool iostat [-v] [-T u|d] [INTERVAL]` output", _sniff_zpool_iostat,
             _parse_zpool_iostat),
    TextKind("arcstats", "arcstats dumps: Linux /proc/spl/kstat/zfs/arcstats, FreeBSD sysctl, illumos kstat -p",
             _sniff_arcstats, _parse_arcstats),
    TextKind("arcstat", "arcstat / arcstat.py / arc_summary tool output", _sniff_arcstat_tool, _parse_arcstat_tool),
    TextKind("pgbench", "pgbench progress/summary text or its -l / --aggregate-interval logs", _sniff_pgbench,
             _parse_pgbench),
)}


def detect(text: str) -> Optional[TextKind]:
    """The first kind whose sniff accepts the text, or None."""
    for kind in KINDS.values():
        try:
            if kind.sniff(text):
                return kind
        except ParseError:  # a parser module not installed: it cannot be that kind here
            continue
    return None


def get(name: str) -> TextKind:
    key = name.lower().replace("_", "-")
    if key not in KINDS:
        raise KeyError(name)
    return KINDS[key]


def parse(text: str, source: str, kind: Optional[str] = None, interval: Optional[float] = None) -> List[Record]:
    """Detect (or take) the kind and parse. Raises ParseError for an unknown or unreadable text."""
    tk = get(kind) if kind else detect(text)
    if tk is None:
        raise ParseError(source, None, "not a format zfsmon knows (try one of: " + ", ".join(KINDS) + ")")
    return tk.parse(text, source, interval)


def is_relative(records: List[Record]) -> bool:
    """True when the timestamps are offsets (the capture printed no times)."""
    return bool(records) and max(r.ts for r in records) < RELATIVE_BEFORE
