"""illumos/Solaris ``iostat -xn`` (and ``-xnz``, ``-xnze``, ``-xnp``, ``-xcnCXTdz``): the device view.

Each report starts with an ``extended device statistics`` title, then a column
line ending in ``device``, then one row per device (``-z`` leaves out idle
ones: an absent device means zero activity). Values are per-second averages
over the interval that iostat computed, hence gauges; ``-e`` error columns are
totals since boot, hence counters. The first report averages since boot and
is marked ``since_boot``. ``-c`` interleaves a cpu block and ``-T u|d`` a
timestamp line before each report; both are recognised.

Only the ``-n`` (descriptive names, device last) layout is read: that is what
the captures show and what the collector runs. Plain ``-x`` (device first,
``svc_t``) raises ParseError: no captured sample of it was available.
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

from zfsmon.host import Check, Host, probe_tool
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector, StreamParser
from zfsmon.sources.kstat.text import _DATE_RE, _EPOCH_RE
from zfsmon.sources.spec import Source, TextKind

#: the ``source`` of the records
RECORD_SOURCE = "iostat"
TITLE = "extended device statistics"

#: column -> (metric, scale to our unit)
COLUMNS: Dict[str, tuple] = {
    "r/s": ("read_ops", 1.0), "w/s": ("write_ops", 1.0),
    "kr/s": ("read_bw", 1024.0), "kw/s": ("write_bw", 1024.0),
    "kw": ("write_bw", 1024.0),  # the man page's Example 1 prints "kw": a typo in Sun's docs, same column
    "wait": ("wait_queue", 1.0), "actv": ("active_queue", 1.0),
    "wsvc_t": ("wait_svc_ns", 1e6), "asvc_t": ("active_svc_ns", 1e6),
    "%w": ("wait_pct", 1.0), "%b": ("busy_pct", 1.0),
    "s/w": ("soft_errors", 1.0), "h/w": ("hard_errors", 1.0), "trn": ("transport_errors", 1.0),
    "tot": ("total_errors", 1.0),
}
_CPU_WORDS = {"tty", "cpu"}


def printed_ts(line: str) -> Optional[float]:
    """The epoch of a ``-T u`` (seconds) or ``-T d`` (local ``date`` format) line; None if it is neither."""
    s = line.strip()
    if _EPOCH_RE.match(s):
        return float(s)
    if _DATE_RE.match(s):
        parts = s.split()
        if len(parts) == 6:  # a zone name: drop it, the date is the host's local time either way
            parts.pop(4)
        try:
            return time.mktime(time.strptime(" ".join(parts), "%a %b %d %H:%M:%S %Y"))
        except (ValueError, OverflowError):
            return None
    return None


def _number(tok: str) -> Optional[float]:
    try:
        v = float(tok)
    except ValueError:
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


class IostatParser(StreamParser):
    """Incremental ``iostat -xn`` reader: one device sample per row, as the row arrives."""

    def __init__(self, interval: Optional[float] = None, where: str = "iostat -xn", source: str = RECORD_SOURCE) -> None:
        self.interval = interval
        self.where = where
        self.source = source
        self.reports = 0  # titles seen
        self._cols: Optional[List[str]] = None
        self._expect_header = False
        self._cpu_lines = 0  # cpu block lines still to skip
        self._pending_ts: Optional[float] = None
        self._report_ts: Optional[float] = None

    def feed(self, line: str, ts: float) -> List[Record]:
        no, s, parts = self._next_line(line)
        if not parts:
            return []
        if self._cpu_lines:
            self._cpu_lines -= 1
            if self._cpu_lines == 0 and not all(_number(p) is not None for p in parts):
                raise ParseError(self.where, no, "expected the cpu values", s)
            return []
        stamp = printed_ts(s)
        if stamp is not None:
            self._pending_ts = stamp
            return []
        if TITLE in s:
            self.reports += 1
            self._report_ts = self._pending_ts if self._pending_ts is not None else ts
            self._pending_ts = None
            self._expect_header = True
            return []
        if set(parts) <= _CPU_WORDS:
            self._cpu_lines = 2  # its column line and its values
            return []
        if self._expect_header:
            return self._header(parts, no, s)
        if self._cols is None or self._report_ts is None:
            raise ParseError(self.where, no, f"data before the `{TITLE}` header", s)
        return [self._row(parts, no, s)]

    def _header(self, parts: List[str], no: int, s: str) -> List[Record]:
        if parts[-1] != "device":
            raise ParseError(self.where, no, "expected a column line ending in `device` (iostat -xn)", s)
        unknown = [c for c in parts[:-1] if c not in COLUMNS]
        if unknown:
            raise ParseError(self.where, no, f"unknown iostat column(s) {', '.join(unknown)}", s)
        self._cols = parts
        self._expect_header = False
        return []

    def _row(self, parts: List[str], no: int, s: str) -> Sample:
        assert self._cols is not None and self._report_ts is not None
        if len(parts) != len(self._cols):
            raise ParseError(self.where, no, f"{len(self._cols)} columns but {len(parts)} values", s)
        metrics: Dict[str, float] = {}
        for col, tok in zip(self._cols[:-1], parts[:-1]):
            v = _number(tok)
            if v is None:
                raise ParseError(self.where, no, f"{col} is not a number", s)
            name, scale = COLUMNS[col]
            metrics[name] = v * scale
        first = self.reports == 1
        return Sample(self._report_ts, Entity(Kind.DEVICE, parts[-1]), metrics,
                      interval=None if first else self.interval, since_boot=first, source=self.source)


    def flush(self, ts: float) -> List[Record]:
        """End of stream: a restarted child's first report averages since boot again."""
        self.reports = 0
        self._cols = None
        self._expect_header = False
        self._cpu_lines = 0
        self._pending_ts = self._report_ts = None
        return []


def parse_iostat(text: str, ts: float, interval: Optional[float] = None, where: str = "iostat -xn",
                 source: str = RECORD_SOURCE) -> List[Sample]:
    """A whole capture. Reports without a printed time are placed at ``ts + k * interval``."""
    parser = IostatParser(interval, where, source)
    out: List[Sample] = []
    for line in text.splitlines():
        for rec in parser.feed(line, ts + parser.reports * (interval or 0.0)):  # used by a title line only
            assert isinstance(rec, Sample)
            out.append(rec)
    if parser.reports == 0:
        raise ParseError(where, None, f"no `{TITLE}` report")
    return out


class IostatCollector(StreamCollector):
    """One persistent ``iostat -xn INTERVAL`` (``-z`` optional: smaller, but idle disks then vanish)."""

    def __init__(self, interval: float = 5.0, skip_idle: bool = False, clock: Clock = time.time) -> None:
        ival = max(1, int(round(interval)))
        argv = ["iostat", "-xnz" if skip_idle else "-xn", str(ival)]
        super().__init__(argv, IostatParser(float(ival), " ".join(argv)), RECORD_SOURCE, clock)

# --- the source ------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: ``iostat`` on illumos/Solaris (Linux's iostat is another program; Linux has diskstats)."""
    if host.system != "SunOS":
        return Check("iostat", False, "illumos iostat -xn is read on illumos/Solaris only (Linux uses /proc/diskstats)")
    return probe_tool("iostat", ["iostat", "-V"], "source", "iostat not found")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return IostatCollector(interval)


def looks_like(text: str) -> bool:
    """An ``extended device statistics`` title followed by a column line ending in ``device`` (the -n layout)."""
    lines = [ln for ln in text.splitlines()[:12] if ln.strip()]
    for i, ln in enumerate(lines[:-1]):
        if TITLE in ln:
            return lines[i + 1].split()[-1:] == ["device"]
    return False


def _parse_capture(text: str, source: str, interval: Optional[float]) -> List[Record]:
    return list(parse_iostat(text, 0.0, interval, where=source))


SOURCE = Source(name=RECORD_SOURCE, help="block-device view (illumos iostat -xn), for goose eggs", order=70,
                kinds=(TextKind("iostat-xn", "illumos/Solaris `iostat -xn` (-z, -e, -p, -c, -T u|d) output", looks_like,
                                _parse_capture, "iostat -xn 5 | tee iostat.log", interval_rows=True),),
                check=check_host, collector=_collector, family="device", feeds=(Kind.DEVICE,))
