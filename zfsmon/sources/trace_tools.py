"""Output of the stock tracing tools, read as ``trace`` entities: an incident captured without zfsmon replays in it.

Parse-only (``zfsmon parse``/``import``); zfsmon's own scripts speak the trace
protocol (:mod:`zfsmon.trace.protocol`). Three shapes:

* bcc power-of-two histograms (:func:`parse_bcc_hist`): ``zfsdist``,
  ``biolatency``, ``ext4dist`` and the other ``*dist`` tools print a
  ``usecs|msecs|nsecs : count distribution`` header and ``LOW -> HIGH :
  COUNT |***|`` rows, per section (``operation = 'read'``, ``disk = 'sda'``,
  ``flags = Sync-Write``), each interval after a ``HH:MM:SS`` line with ``-T``
  or an interval argument.
* bcc ``zfsslower`` (and ``ext4slower`` ...) event lines (:func:`parse_fsslower`):
  ``TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME`` columns, or the ``-j`` CSV
  (``ENDTIME_us,...``): each line is a slow-operation event, as the protocol's
  ``slow`` lines are.
* bpftrace's ``hist()``/``lhist()`` maps printed at exit or by ``print(@m)``
  (:func:`parse_bpftrace_hist`): ``@name[key]:`` then ``[LO, HI)  COUNT |@@@|``
  rows, blocks after a ``HH:MM:SS`` line when the script printed ``time()``.

Each histogram becomes one sample of a ``trace`` entity (the tool's subject:
``zfs`` for zfsdist, the disk or ``block`` for biolatency, the map's name for
bpftrace) with, per operation (the section, the map key): ``OP_ops``,
``OP_ops_s`` when the interval is known, and the buckets as
``OP_bucket_LO_HI`` (count of values with ``LO <= v < HI``). When the unit is a
time (bcc's header; a bpftrace map named ``usecs``/``ns``/``ms``...), bucket
bounds are ns and ``OP_lat_p50_ns``/``p95``/``p99``/``OP_lat_max_ns`` are
interpolated inside the buckets (the max is the top bucket's upper bound);
otherwise the bounds keep the tool's unit and the percentiles are
``OP_p50``... Times printed as ``HH:MM:SS`` carry no date: they are offsets
from the capture day's midnight, placed on the clock by ``zfsmon import``.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.spec import Source, TextKind
from zfsmon.units import whole

#: the ``source`` of the records (as the trace collector's ``trace:NAME``)
SOURCE_PREFIX = "trace:"
_UNIT_NS = {"nsecs": 1.0, "usecs": 1e3, "msecs": 1e6, "secs": 1e9,
            "ns": 1.0, "us": 1e3, "ms": 1e6, "nsec": 1.0, "usec": 1e3, "msec": 1e6}
PERCENTILES = ((50, 0.50), (95, 0.95), (99, 0.99))

#: (low, high exclusive, count)
Bucket = Tuple[float, float, int]


def percentile(buckets: Sequence[Bucket], q: float) -> float:
    """The q-quantile, interpolated linearly inside its bucket (buckets sorted by ``low``)."""
    total = sum(n for _lo, _hi, n in buckets)
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0
    for lo, hi, n in buckets:
        if n and seen + n >= rank:
            return lo + (hi - lo) * max(rank - seen, 0.0) / n
        seen += n
    return buckets[-1][1]


def hist_metrics(op: str, buckets: Sequence[Bucket], scale: Optional[float], seconds: Optional[float]
                 ) -> Dict[str, float]:
    """Per-op metrics of one histogram; ``scale``: ns per unit of a time histogram, None for other values."""
    rows = sorted(b for b in buckets if b[2] > 0)
    n = sum(c for _lo, _hi, c in rows)
    out: Dict[str, float] = {f"{op}_ops": float(n)}
    if seconds:
        out[f"{op}_ops_s"] = n / seconds
    k = scale or 1.0
    for lo, hi, c in rows:
        out[f"{op}_bucket_{_num(lo * k)}_{_num(hi * k)}"] = float(c)
    if n:
        name = (lambda p: f"{op}_lat_{p}_ns") if scale else (lambda p: f"{op}_{p}")
        for pct, q in PERCENTILES:
            out[name(f"p{pct}")] = percentile(rows, q) * k
        out[name("max")] = rows[-1][1] * k
    return out


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}".replace(".", "p").replace("-", "m")


def _op_name(text: str) -> str:
    """A section value as a metric prefix: ``'read'`` -> ``read``, ``Sync-Write`` -> ``sync_write``."""
    s = re.sub(r"[^0-9a-z]+", "_", text.strip().strip("'\"").lower()).strip("_")
    return s or "all"


_HHMMSS = re.compile(r"^(\d\d):(\d\d):(\d\d):?$")


class _Clock:
    """Time-of-day lines of one capture as offsets from the capture day's midnight (midnight wraps forward)."""

    def __init__(self) -> None:
        self.day = 0.0
        self.last: Optional[float] = None

    def stamp(self, line: str) -> Optional[float]:
        m = _HHMMSS.match(line.strip())
        if not m:
            return None
        tod = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        if self.last is not None and tod < self.last:
            self.day += 86400.0
        self.last = tod
        return self.day + tod


def _timed(blocks: List[Tuple[Optional[float], Dict[Tuple[str, str], List[Bucket]]]], interval: Optional[float]
           ) -> List[Tuple[float, Optional[float], Dict[Tuple[str, str], List[Bucket]]]]:
    """(ts, interval seconds, histograms) per block: printed times, else block *i* at ``i * interval``."""
    out = []
    prev: Optional[float] = None
    for i, (stamp, hists) in enumerate(blocks):
        ts = stamp if stamp is not None else i * (interval or 0.0)
        ival = interval if interval is not None else (ts - prev if stamp is not None and prev is not None
                                                      and ts > prev else None)
        out.append((ts, ival, hists))
        prev = ts if stamp is not None else None
    return out


def _samples(blocks, interval: Optional[float], scale_of, tool: str) -> List[Record]:
    out: List[Record] = []
    for ts, ival, hists in _timed(blocks, interval):
        per: Dict[str, Dict[str, float]] = {}
        for (ent, op), buckets in hists.items():
            per.setdefault(ent, {}).update(hist_metrics(op, buckets, scale_of(ent, op), ival))
        for ent, metrics in per.items():
            out.append(Sample(ts, Entity(Kind.TRACE, ent), metrics, interval=ival, source=SOURCE_PREFIX + tool))
    return out


# --- bcc *dist / biolatency ---------------------------------------------------------------------------------

_BCC_HEAD = re.compile(r"^\s*(\w+)\s+: count\s+distribution\s*$")
_BCC_ROW = re.compile(r"^\s*(\d+) -> (\d+)\s+: (\d+)\s+\|[*+ ]*\|?\s*$")
_BCC_SECTION = re.compile(r"^(?:Bucket )?(\w[\w ]*?) = (.*)$")
_BCC_NOISE = re.compile(r"^(Tracing .*|\^C|Detaching\.*|Hit Ctrl-C to end\.?)$")
#: the tool named by a section header, for the entity
_SECTION_ENTITY = {"operation": "zfs", "disk": None, "ptr": None, "flags": "block"}


def parse_bcc_hist(text: str, where: str = "bcc", interval: Optional[float] = None, tool: str = "") -> List[Record]:
    """bcc's log2 histograms (zfsdist, biolatency [-D|-F] [-m] [-T] [INTERVAL [COUNT]]) -> trace samples."""
    clock = _Clock()
    blocks: List[Tuple[Optional[float], Dict[Tuple[str, str], List[Bucket]]]] = []
    units: Dict[Tuple[str, str], str] = {}
    section: Optional[Tuple[str, str]] = None  # (header word, value)
    current: Optional[List[Bucket]] = None
    fs = "zfs" if re.search(r"^Tracing ZFS", text, re.M) else ("block" if re.search(r"^Tracing block", text, re.M)
                                                                  else tool or "bcc")
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            current = None
            continue
        if _BCC_NOISE.match(s):
            continue
        stamp = clock.stamp(s)
        if stamp is not None:
            blocks.append((stamp, {}))
            section, current = None, None
            continue
        m = _BCC_SECTION.match(s)
        if m and current is None:
            section = (m.group(1).split()[-1], m.group(2))
            continue
        m = _BCC_HEAD.match(line)
        if m:
            if not blocks or (blocks[-1][0] is None and _key(section, fs) in blocks[-1][1]):
                blocks.append((None, {}))  # an interval run without -T: a new block when a histogram comes round
            key = _key(section, fs)
            if m.group(1) not in _UNIT_NS:
                raise ParseError(where, no, f"unknown histogram unit {m.group(1)!r} (usecs, msecs, nsecs)", line)
            units[key] = m.group(1)
            current = blocks[-1][1].setdefault(key, [])
            continue
        m = _BCC_ROW.match(line)
        if m and current is not None:
            try:
                lo, hi, n = whole(m.group(1)), whole(m.group(2)), whole(m.group(3))
            except ValueError as e:
                raise ParseError(where, no, str(e), line) from None
            if hi < lo:
                raise ParseError(where, no, "bucket's high end below its low end", line)
            current.append((float(lo), float(hi + 1), n))
            continue
        raise ParseError(where, no, "not a line of a bcc histogram (`LOW -> HIGH : COUNT |***|`)", line)
    if not any(b for _t, hists in blocks for b in hists.values()):
        raise ParseError(where, None, "no bcc histogram (`usecs : count distribution` and its rows)")
    name = tool or ("zfsdist" if fs == "zfs" else "biolatency" if fs == "block" else "bcc")
    return _samples(blocks, interval, lambda ent, op: _UNIT_NS[units[(ent, op)]], name)


def _key(section: Optional[Tuple[str, str]], fs: str) -> Tuple[str, str]:
    """(entity, op) of a histogram under ``section``: zfsdist's operations are ops of ``zfs``; biolatency -D's
    disks are entities (op ``io``); -F's flags are ops of ``block``; no section: ``io`` of the tool's subject."""
    if section is None:
        return fs, "io"
    word, value = section
    if word in ("disk", "ptr"):
        return value.strip().strip("'\"").lstrip("b'") or fs, "io"
    return (_SECTION_ENTITY.get(word) or fs), _op_name(value)


def looks_like_bcc_hist(text: str) -> bool:
    return any(_BCC_HEAD.match(ln) and ln.split()[0] in _UNIT_NS for ln in text.splitlines()[:40])


# --- bcc zfsslower / ext4slower ... ----------------------------------------------------------------------------

_SLOWER_HEAD = ["TIME", "COMM", "PID", "T", "BYTES", "OFF_KB", "LAT(ms)", "FILENAME"]
_SLOWER_CSV = "ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE"
_OPS = {"R": "read", "W": "write", "O": "open", "S": "fsync", "F": "fsync"}


def parse_fsslower(text: str, where: str = "zfsslower", tool: str = "") -> List[Record]:
    """``zfsslower [-j] [MS]`` (or ext4slower/xfsslower/nfsslower) lines -> slow-operation events.

    Times: ``HH:MM:SS`` of the day (relative, as in :class:`_Clock`) or, with
    ``-j``, microseconds since boot (relative too).
    """
    clock = _Clock()
    out: List[Record] = []
    fs = "zfs" if re.search(r"^Tracing ZFS", text, re.M) else "fs"
    name = tool or ("zfsslower" if fs == "zfs" else "fsslower")
    ent = Entity(Kind.TRACE, fs)
    csv = False
    header = False
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or _BCC_NOISE.match(s):
            continue
        if s.split() == _SLOWER_HEAD:
            header, csv = True, False
            continue
        if s == _SLOWER_CSV:
            header, csv = True, True
            continue
        if not header:
            raise ParseError(where, no, "expected the `TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME` header", line)
        if csv:
            parts = s.split(",", 7)
            if len(parts) != 8:
                raise ParseError(where, no, "expected 8 comma-separated fields", line)
            end_us, comm, pid, op, nbytes, off, lat_us, fname = parts
            ts_lat = _ints(where, no, line, end_us, lat_us, nbytes, off, pid)
            ts, lat_ns = ts_lat[0] / 1e6, ts_lat[1] * 1e3
            off_kb = ts_lat[3] / 1024
        else:
            parts = s.split(None, 7)
            if len(parts) < 7:
                raise ParseError(where, no, "expected TIME COMM PID T BYTES OFF_KB LAT(ms) [FILENAME]", line)
            tod, comm, pid, op, nbytes, off, lat = parts[:7]
            fname = parts[7] if len(parts) > 7 else ""
            stamp = clock.stamp(tod)
            if stamp is None:
                raise ParseError(where, no, f"bad time {tod!r}", line)
            _ints(where, no, line, pid, nbytes, off)
            try:
                lat_ns = float(lat) * 1e6
            except ValueError:
                raise ParseError(where, no, f"latency {lat!r} is not a number", line) from None
            if not 0 <= lat_ns < float("inf"):
                raise ParseError(where, no, "latency out of range", line)
            ts, off_kb = stamp, int(off)
        opname = _OPS.get(op, op.lower())
        detail = f"pid={pid} comm={comm} file={fname} off_kb={off_kb:g}"
        out.append(Event(ts, EventKind.INFO, f"slow {opname} {lat_ns / 1e6:.1f} ms on {ent.label()} ({detail})",
                         source=SOURCE_PREFIX + name, entity=ent.key,
                         data={"op": opname, "lat_ns": lat_ns, "bytes": float(nbytes), "detail": detail,
                               "slow": True}))
    if not header:
        raise ParseError(where, None, "no zfsslower header")
    return per_second(out) + out


def per_second(events: Sequence[Record]) -> List[Record]:
    """Slow-operation events summed per second (the text format's resolution): ``OP_slow_ops``,
    ``OP_slow_bytes`` and ``OP_slow_lat_max_ns`` samples of the events' entity, one per second with any."""
    acc: Dict[Tuple[float, str, str], Dict[str, float]] = {}
    for ev in events:
        if not isinstance(ev, Event) or not ev.data.get("slow"):
            continue
        sec = float(int(ev.ts))
        op = str(ev.data["op"])
        m = acc.setdefault((sec, ev.entity, ev.source), {})
        m[f"{op}_slow_ops"] = m.get(f"{op}_slow_ops", 0.0) + 1
        m[f"{op}_slow_bytes"] = m.get(f"{op}_slow_bytes", 0.0) + float(ev.data["bytes"])  # type: ignore[arg-type]
        lat = float(ev.data["lat_ns"])  # type: ignore[arg-type]
        m[f"{op}_slow_lat_max_ns"] = max(m.get(f"{op}_slow_lat_max_ns", 0.0), lat)
    return [Sample(sec, Entity(Kind.TRACE, key.split(":", 1)[1]), m, interval=1.0, source=src)
            for (sec, key, src), m in sorted(acc.items(), key=lambda kv: kv[0][0])]


def _ints(where: str, no: int, line: str, *toks: str) -> List[int]:
    try:
        vals = [int(t) for t in toks]
    except ValueError:
        raise ParseError(where, no, "expected whole numbers in the number columns", line) from None
    if any(v < 0 for v in vals):
        raise ParseError(where, no, "negative value", line)
    return vals


def looks_like_fsslower(text: str) -> bool:
    head = [ln.strip() for ln in text.splitlines()[:5] if ln.strip()]
    return any(ln.split() == _SLOWER_HEAD or ln == _SLOWER_CSV for ln in head)


# --- bpftrace hist() / lhist() maps ----------------------------------------------------------------------------

_BT_MAP = re.compile(r"^@(\w*)(?:\[(.*)\])?:\s*$")
_BT_ROW = re.compile(r"^(\(\.\.\., ([^)\]]+)\)|\[([^,\]]+)(?:, ([^)\]]+))?[)\]]|\[([^,\]]+), \.\.\.\))\s+(\d+)\s*"
                     r"\|[@ ]*\|\s*$")
_BT_NOISE = re.compile(r"^Attaching \d+ probes?\.\.\.$")
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}


def _bt_value(tok: str, where: str, no: int, line: str) -> float:
    m = re.match(r"^(-?\d{1,40})([KMGTPE]?)$", tok.strip())
    if not m:
        raise ParseError(where, no, f"bad bucket bound {tok!r}", line)
    return float(int(m.group(1)) * _SUFFIX[m.group(2)])


def _bt_unit(name: str) -> Optional[float]:
    """ns per unit when the map's name says it holds times (``usecs``, ``lat_ns``, ``ms``), else None."""
    for part in reversed(re.split(r"[_\W]+", name.lower())):
        if part in _UNIT_NS:
            return _UNIT_NS[part]
    return None


def parse_bpftrace_hist(text: str, where: str = "bpftrace", interval: Optional[float] = None) -> List[Record]:
    """bpftrace ``hist()``/``lhist()`` maps -> trace samples (entity: the map's name, op: its key)."""
    clock = _Clock()
    blocks: List[Tuple[Optional[float], Dict[Tuple[str, str], List[Bucket]]]] = []
    current: Optional[List[Bucket]] = None
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            current = None
            continue
        if _BT_NOISE.match(s):
            continue
        stamp = clock.stamp(s)
        if stamp is not None:
            blocks.append((stamp, {}))
            current = None
            continue
        m = _BT_MAP.match(s)
        if m:
            key = (m.group(1) or "bpftrace", _op_name(m.group(2)) if m.group(2) is not None else "all")
            if not blocks or key in blocks[-1][1]:
                blocks.append((None, {}))
            current = blocks[-1][1].setdefault(key, [])
            continue
        m = _BT_ROW.match(s)
        if m and current is not None:
            try:
                n = whole(m.group(6))
            except ValueError as e:
                raise ParseError(where, no, str(e), line) from None
            if m.group(2) is not None:  # (..., HI): values below the first bound
                hi = _bt_value(m.group(2), where, no, line)
                current.append((min(hi, 0.0), hi, n))
            elif m.group(5) is not None:  # [LO, ...): values at or above the last bound
                lo = _bt_value(m.group(5), where, no, line)
                current.append((lo, lo, n))
            else:
                lo = _bt_value(m.group(3), where, no, line)
                hi = _bt_value(m.group(4), where, no, line) if m.group(4) is not None else lo + 1
                if hi <= lo:
                    raise ParseError(where, no, "bucket's high end not above its low end", line)
                current.append((lo, hi, n))
            continue
        raise ParseError(where, no, "not a line of a bpftrace histogram (`@map:` then `[LO, HI)  COUNT |@@|`)",
                         line)
    if not any(b for _t, hists in blocks for b in hists.values()):
        raise ParseError(where, None, "no bpftrace histogram (`@map:` and `[LO, HI)` rows)")
    return _samples(blocks, interval, lambda ent, op: _bt_unit(ent), "bpftrace")


def looks_like_bpftrace_hist(text: str) -> bool:
    lines = [ln.strip() for ln in text.splitlines()[:40] if ln.strip()]
    return any(_BT_MAP.match(a) and _BT_ROW.match(b) for a, b in zip(lines, lines[1:]))


# --- the source ----------------------------------------------------------------------------------------------

SOURCE = Source(
    name="trace-tools", help="saved output of stock tracing tools (bcc zfsdist/biolatency/zfsslower, bpftrace hist)",
    order=85,
    kinds=(
        TextKind("bcc-hist", "bcc log2 histograms: zfsdist, biolatency [-D|-F] [-m] [-T], other *dist tools",
                 looks_like_bcc_hist, lambda text, source, interval: parse_bcc_hist(text, source, interval),
                 "zfsdist-bpfcc -T 10 | tee zfsdist.log"),
        TextKind("bcc-slower", "bcc zfsslower (ext4slower, ...) lines, or their -j CSV: slow operations as events",
                 looks_like_fsslower, lambda text, source, interval: parse_fsslower(text, source),
                 "zfsslower-bpfcc 10 | tee zfsslower.log"),
        TextKind("bpftrace-hist", "bpftrace hist()/lhist() maps as printed at exit or by print(@map)",
                 looks_like_bpftrace_hist, lambda text, source, interval: parse_bpftrace_hist(text, source, interval),
                 "bpftrace -e 'tracepoint:block:block_rq_complete { @ = hist(args->nr_sector); }' > hist.txt"),
    ),
    family="trace",
    feeds=(Kind.TRACE,),
)
