"""Linux ``iostat -x`` (sysstat) output: the block-device view of an old incident, for ``zfsmon parse``/``import``.

Parse-only: the live Linux device view is ``/proc/diskstats``
(:mod:`zfsmon.sources.devices.diskstats`); this reads what people saved from
sysstat's ``iostat -x [-d] [-t] INTERVAL``. Each report is an optional ``-t``
time line (``11/23/26 19:24:49`` in the C locale, ISO 8601 with
``S_TIME_FORMAT=ISO``), an optional ``avg-cpu`` block, then a ``Device`` column
line and one row per device. Values are per-second averages iostat computed
over the interval (gauges); the first report averages since boot and is
marked ``since_boot``.

Columns are sysstat 12's (``r/s rkB/s rrqm/s %rrqm r_await rareq-sz`` and the
same for writes, discards and flushes, ``aqu-sz``, ``%util``), the only
layout a capture was available for (tests/data/linux-host/PROVENANCE.md).
A header with columns not in :data:`COLUMNS` is read for the ones it knows
and says which it left out; one with mostly unknown columns is refused.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Dict, List, Optional, Tuple

from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.spec import Source, TextKind

#: the ``source`` of the records
RECORD_SOURCE = "iostat-x"

#: sysstat column -> (metric on the device entity, scale to zfsmon's unit: bytes, ns)
COLUMNS: Dict[str, Tuple[str, float]] = {
    "r/s": ("read_ops", 1.0), "rkB/s": ("read_bw", 1024.0), "rrqm/s": ("read_merges_per_s", 1.0),
    "%rrqm": ("read_merged_pct", 1.0), "r_await": ("read_await_ns", 1e6), "rareq-sz": ("read_req_bytes", 1024.0),
    "w/s": ("write_ops", 1.0), "wkB/s": ("write_bw", 1024.0), "wrqm/s": ("write_merges_per_s", 1.0),
    "%wrqm": ("write_merged_pct", 1.0), "w_await": ("write_await_ns", 1e6), "wareq-sz": ("write_req_bytes", 1024.0),
    "d/s": ("discard_ops", 1.0), "dkB/s": ("discard_bw", 1024.0), "drqm/s": ("discard_merges_per_s", 1.0),
    "%drqm": ("discard_merged_pct", 1.0), "d_await": ("discard_await_ns", 1e6),
    "dareq-sz": ("discard_req_bytes", 1024.0),
    "f/s": ("flush_ops", 1.0), "f_await": ("flush_await_ns", 1e6),
    "aqu-sz": ("queue_len", 1.0), "%util": ("busy_pct", 1.0),
}

_BANNER = re.compile(r"^Linux \S+ \(.*\)\s+\S+\s+_\S+_\s+\(\d+ CPU\)\s*$")
_US_TIME = re.compile(r"^\d\d/\d\d/\d\d(\d\d)? \d\d:\d\d:\d\d( [AP]M)?$")
_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d([+-]\d{4}|Z)?$")


def printed_ts(line: str) -> Optional[float]:
    """The epoch of a ``-t`` line: ISO 8601 (with its zone) or the C locale's ``MM/DD/YY HH:MM:SS`` (local time)."""
    s = line.strip()
    if _ISO_TIME.match(s):
        try:
            if s[-5] in "+-" or s.endswith("Z"):
                return datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z").timestamp()
            return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))
        except (ValueError, OverflowError):
            return None
    if _US_TIME.match(s):
        fmt = ("%m/%d/%Y" if len(s.split()[0]) == 10 else "%m/%d/%y") + (" %I:%M:%S %p" if s.endswith("M")
                                                                         else " %H:%M:%S")
        try:
            return time.mktime(time.strptime(s, fmt))
        except (ValueError, OverflowError):
            return None
    return None


def _number(tok: str) -> Optional[float]:
    try:
        v = float(tok.replace(",", "."))  # some locales print decimal commas
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def parse_iostat_x(text: str, ts: float = 0.0, interval: Optional[float] = None, where: str = "iostat -x",
                   source: str = RECORD_SOURCE) -> Tuple[List[Sample], List[str]]:
    """(samples, columns left out). Reports without a ``-t`` line are at ``ts + k * interval``."""
    out: List[Sample] = []
    skipped: List[str] = []
    cols: Optional[List[str]] = None
    reports = 0
    pending: Optional[float] = None
    report_ts = ts
    cpu_values = False
    printed = False
    ival = interval
    for no, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            cols = None  # a report's device rows end at a blank line
            continue
        if cpu_values:
            cpu_values = False
            if not all(_number(p) is not None for p in parts):
                raise ParseError(where, no, "expected the avg-cpu values", line)
            continue
        if _BANNER.match(line):
            continue
        stamp = printed_ts(line)
        if stamp is not None:
            pending = stamp
            continue
        if parts[0] == "avg-cpu:":
            cpu_values = True
            continue
        if parts[0] in ("Device", "Device:"):
            cols = parts[1:]
            known = [c for c in cols if c in COLUMNS]
            unknown = [c for c in cols if c not in COLUMNS]
            if not known or len(unknown) > len(known):
                raise ParseError(where, no, f"not sysstat 12's iostat -x columns: {', '.join(unknown[:6])}", line)
            skipped.extend(c for c in unknown if c not in skipped)
            reports += 1
            prev_ts, prev_printed = report_ts, printed
            printed = pending is not None
            report_ts = pending if pending is not None else ts + (reports - 1) * (interval or 0.0)
            ival = interval if interval is not None else (
                report_ts - prev_ts if printed and prev_printed and report_ts > prev_ts else None)
            pending = None
            continue
        if cols is None:
            raise ParseError(where, no, "expected a `Device` column line before device rows (iostat -x)", line)
        if len(parts) != len(cols) + 1:
            raise ParseError(where, no, f"{len(cols)} columns but {len(parts) - 1} values", line)
        metrics: Dict[str, float] = {}
        for col, tok in zip(cols, parts[1:]):
            v = _number(tok)
            if v is None:
                raise ParseError(where, no, f"{col} is not a number", line)
            if col in COLUMNS:
                name, scale = COLUMNS[col]
                metrics[name] = v * scale
        first = reports == 1
        out.append(Sample(report_ts, Entity(Kind.DEVICE, parts[0]), metrics,
                          interval=None if first else ival, since_boot=first, source=source))
    if reports == 0:
        raise ParseError(where, None, "no `Device` column line (not iostat -x output)")
    return out, skipped


def looks_like(text: str) -> bool:
    """sysstat's banner (``Linux VERSION (host) DATE _ARCH_ (N CPU)``) and a ``Device ... r/s`` column line."""
    lines = [ln for ln in text.splitlines()[:12] if ln.strip()]
    return bool(lines) and bool(_BANNER.match(lines[0])) and any(
        ln.split()[:1] in (["Device"], ["Device:"]) and "r/s" in ln.split() for ln in lines)


def _parse_capture(text: str, source: str, interval: Optional[float]) -> List[Record]:
    samples, skipped = parse_iostat_x(text, 0.0, interval, where=source)
    out: List[Record] = list(samples)
    if skipped:
        note = f"{source}: iostat -x column(s) not read (no capture of them to check): {', '.join(skipped)}"
        out.insert(0, Event(min((s.ts for s in samples), default=0.0), EventKind.INFO, note, source=RECORD_SOURCE,
                            data={"note": note}))
    return out


SOURCE = Source(
    name=RECORD_SOURCE, help="saved Linux `iostat -x` (sysstat) output: the block-device view", order=75,
    kinds=(TextKind("iostat-x", "Linux sysstat `iostat -x` [-d] [-t] output (sysstat 12 columns)", looks_like,
                    _parse_capture, "iostat -x -t 5 | tee iostat-x.log"),),
    family="device",
    feeds=(Kind.DEVICE,),
)
