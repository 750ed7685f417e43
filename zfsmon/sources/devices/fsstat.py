"""illumos ``fsstat``: file-level operations per file-system type or mount point (the VFS view of ZFS).

``fsstat zfs 5`` tells what applications asked of ZFS (reads, writes, lookups)
next to what the disks did. Each row ends with the entity (``zfs``, ``/``,
``/export/home``); numbers are "smart numbers" of at most 5 characters,
1024-based (``2.86M`` is 3000000), read with :mod:`zfsmon.units`.

The first row of an entity counts everything since the module was loaded or
the file system mounted; later rows count one interval. The parser adds them
up, so every sample carries cumulative counters, like the Linux objset kstat
(the since-load row is only a baseline; its rounding cancels out of deltas).
When the child restarts the sums restart too and the rate layer reports a
counter reset.

Read: the default report, ``-a`` (attributes), ``-n`` (naming) — the layouts
the captured samples show. ``-i``, ``-v`` and ``-f`` have no captured sample
and raise ParseError. Entities are ``Kind.DATASET`` named after the row label
with no pool (an fstype or mount point is not a dataset name).
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.host import Check, Host, probe_tool
from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector, StreamParser
from zfsmon.sources.devices.illumos_iostat import printed_ts
from zfsmon.sources.spec import Source, TextKind
from zfsmon.units import parse_count

#: the ``source`` of the records
RECORD_SOURCE = "fsstat"

#: the two-line default header, column by column -> metric
DEFAULT_COLUMNS: Dict[Tuple[str, str], str] = {
    ("new", "file"): "files_created", ("name", "remov"): "names_removed", ("name", "chng"): "names_changed",
    ("attr", "get"): "attr_gets", ("attr", "set"): "attr_sets", ("lookup", "ops"): "lookups",
    ("rddir", "ops"): "readdirs", ("read", "ops"): "reads", ("read", "bytes"): "read_bytes",
    ("write", "ops"): "writes", ("write", "bytes"): "write_bytes",
}
#: one-line headers (-a, -n), keyed by their first column
SINGLE_HEADERS: Dict[str, Dict[str, str]] = {
    "getattr": {"getattr": "getattr_calls", "setattr": "setattr_calls", "getsec": "getsec_calls",
                "setsec": "setsec_calls"},
    "lookup": {"lookup": "lookups", "creat": "creates", "remov": "removes", "link": "links", "renam": "renames",
               "mkdir": "mkdirs", "rmdir": "rmdirs", "rddir": "readdirs", "symlnk": "symlinks",
               "rdlnk": "readlinks"},
}


def _is_number(tok: str) -> bool:
    return tok[:1].isascii() and tok[:1].isdigit()


class FsstatParser(StreamParser):
    """Incremental ``fsstat [-a|-n] {fstype|path}... [INTERVAL]`` reader: one sample per row."""

    def __init__(self, interval: Optional[float] = None, where: str = "fsstat", source: str = RECORD_SOURCE) -> None:
        self.interval = interval
        self.where = where
        self.source = source
        self._metrics: Optional[List[str]] = None
        self._first_half: Optional[List[str]] = None  # line one of the default header, waiting for line two
        self._totals: Dict[str, Dict[str, float]] = {}
        self._pending_ts: Optional[float] = None

    def feed(self, line: str, ts: float) -> List[Record]:
        no, s, parts = self._next_line(line)
        if not parts:
            return []
        if self._first_half is not None:
            return self._second_header_line(parts, no, s)
        if s.startswith("<<") and s.endswith(">>"):  # "<<mount point no longer available: /x>>"
            return [self._state_change(s[2:-2].strip(), ts)]
        stamp = printed_ts(s)
        if stamp is not None:
            self._pending_ts = stamp
            return []
        if not _is_number(parts[0]):
            return self._header(parts, no, s)
        if self._metrics is None:
            raise ParseError(self.where, no, "numbers before any fsstat header", s)
        return [self._row(s, no, ts)]

    def _header(self, parts: List[str], no: int, s: str) -> List[Record]:
        if parts[0] in SINGLE_HEADERS:
            table = SINGLE_HEADERS[parts[0]]
            if set(parts) - set(table) or len(set(parts)) != len(parts):
                raise ParseError(self.where, no, "unknown fsstat columns", s)
            self._metrics = [table[p] for p in parts]
            return []
        if parts[0] == "new":
            self._first_half = parts
            return []
        raise ParseError(self.where, no, "unknown fsstat header (read: default, -a, -n)", s)

    def _second_header_line(self, parts: List[str], no: int, s: str) -> List[Record]:
        top, self._first_half = self._first_half or [], None
        if len(parts) != len(top) or any((a, b) not in DEFAULT_COLUMNS for a, b in zip(top, parts)):
            raise ParseError(self.where, no, "second header line does not match the default fsstat report", s)
        self._metrics = [DEFAULT_COLUMNS[(a, b)] for a, b in zip(top, parts)]
        return []

    def _row(self, s: str, no: int, ts: float) -> Sample:
        assert self._metrics is not None
        n = len(self._metrics)
        fields = s.split(None, n)
        if len(fields) != n + 1 or not fields[n].strip():
            raise ParseError(self.where, no, f"expected {n} numbers and a name", s)
        label = fields[n].strip()
        try:
            values = [parse_count(f) for f in fields[:n]]
        except ValueError as exc:
            raise ParseError(self.where, no, str(exc), s) from None
        first = label not in self._totals
        totals = self._totals.setdefault(label, {})
        for metric, v in zip(self._metrics, values):
            totals[metric] = totals.get(metric, 0.0) + v
        when = self._pending_ts if self._pending_ts is not None else ts
        return Sample(when, Entity(Kind.DATASET, label), dict(totals),
                      interval=None if first else self.interval, since_boot=first, source=self.source)

    def _state_change(self, text: str, ts: float) -> Event:
        label = text.rsplit(":", 1)[-1].strip()
        self._totals.pop(label, None)  # if it comes back, its first row is a new since-mount baseline
        return Event(ts, EventKind.TOPOLOGY, f"fsstat: {text}", source=self.source,
                     entity=Entity(Kind.DATASET, label).key)

    def flush(self, ts: float) -> List[Record]:
        """End of stream: the next child starts from since-boot rows again, so the sums restart."""
        self._totals.clear()
        self._metrics = None
        self._first_half = None
        self._pending_ts = None
        return []


def parse_fsstat(text: str, ts: float, interval: Optional[float] = None, where: str = "fsstat",
                 source: str = RECORD_SOURCE) -> List[Record]:
    """A whole capture. Without ``-T``, rows of the k-th report of an entity are placed at ``ts + k * interval``."""
    parser = FsstatParser(interval, where, source)
    out: List[Record] = []
    seen: Dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        k = 0
        if parts and _is_number(parts[0]) and parser._metrics is not None:
            label = line.split(None, len(parser._metrics))[-1].strip()
            k = seen.get(label, 0)
            seen[label] = k + 1
        out.extend(parser.feed(line, ts + k * (interval or 0.0)))
    if parser._metrics is None:
        raise ParseError(where, None, "no fsstat header")
    return out


class FsstatCollector(StreamCollector):
    """One persistent ``fsstat [-a|-n] TARGETS INTERVAL`` (default targets: the ``zfs`` fstype)."""

    def __init__(self, targets: Sequence[str] = ("zfs",), interval: float = 5.0, mode: str = "",
                 clock: Clock = time.time) -> None:
        if mode not in ("", "-a", "-n"):
            raise ValueError(f"fsstat mode {mode!r} is not read (use '', '-a' or '-n')")
        ival = max(1, int(round(interval)))
        argv = ["fsstat", *([mode] if mode else []), *targets, str(ival)]
        super().__init__(argv, FsstatParser(float(ival), " ".join(argv)), RECORD_SOURCE, clock)

# --- the source ------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: the ``fsstat`` command (illumos/Solaris)."""
    return probe_tool("fsstat", ["fsstat", "-h"], "source", "fsstat is illumos/Solaris only")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return FsstatCollector(("zfs",), interval)


def looks_like(text: str) -> bool:
    """One of fsstat's headers (the two-line default, ``-a``'s or ``-n``'s) on the first lines."""
    lines = [ln.split() for ln in text.splitlines()[:6] if ln.strip()]
    for i, parts in enumerate(lines):
        if parts[:1] and parts[0] in SINGLE_HEADERS and all(p in SINGLE_HEADERS[parts[0]] for p in parts):
            return True
        if i + 1 < len(lines) and len(parts) == len(lines[i + 1]) and parts and all(
                k in DEFAULT_COLUMNS for k in zip(parts, lines[i + 1])):
            return True
    return False


def _parse_capture(text: str, source: str, interval: Optional[float]) -> List[Record]:
    return parse_fsstat(text, 0.0, interval, where=source)


SOURCE = Source(name=RECORD_SOURCE, help="per-filesystem-type operations (illumos fsstat zfs)", order=80,
                check=check_host, collector=_collector, family="dataset",
                kinds=(TextKind("fsstat", "illumos/Solaris `fsstat [-a|-n] {fstype|path}... [INTERVAL]` output",
                                looks_like, _parse_capture, "fsstat zfs 5 | tee fsstat.log", interval_rows=True),),
                feeds=(Kind.DATASET,))
