"""The bcc backend's maps and perf events as zfsmon trace protocol lines (pure; docs/tracing.md).

The program of :mod:`zfsmon.trace.bcc_program` keeps every selected trace in one set of maps keyed by
trace number. Once per interval the runner (:mod:`zfsmon.trace.bcc_tool`) takes the maps' contents out of
the kernel as plain tuples (a :data:`Snapshot`) and these functions print each trace's share exactly as
its bpftrace twin prints it: the same header, ``interval EPOCH SECONDS``, ``@lat[...]`` ... lines and
``end``. Several traces in one stream follow each other block by block, each block (and each ``slow``
line) after its own trace's header whenever the previous header was another trace's: the parser takes a
header as "from here on, lines are this script's" (docs/tracing.md, "Several traces in one stream").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.trace.bcc_program import NAMES, TRACES, BccTrace

#: map name -> [(key, value)]: "lat" keys are (trace, op, ent, lo); the others (trace, op, ent)
Snapshot = Dict[str, List[Tuple[Tuple[int, ...], int]]]
#: the program's map names for the protocol's maps
MAP_NAMES = {"lat": "lat", "max": "maxv", "sum": "sumv", "bytes": "bytesv", "count": "countv"}


def header(trace: BccTrace, interval: int, slow_ms: int) -> str:
    """``zfsmon-trace 1 NAME entity=KIND interval=N [slow_ms=M]``, as the bpftrace script's BEGIN prints it."""
    values = {"interval": int(interval), "slow_ms": int(slow_ms)}
    opts = " ".join(f"{k}={values[k]}" for k in trace.header_opts)
    return f"zfsmon-trace 1 {trace.name} entity={trace.entity} {opts}".rstrip()


def _name(index: int) -> str:
    return NAMES[index] if 0 <= index < len(NAMES) else f"name{index}"


def block(trace: BccTrace, snap: Snapshot, epoch: float, seconds: int) -> List[str]:
    """One ``interval`` ... ``end`` block of one trace from a snapshot of the shared maps."""
    out = [f"interval {epoch:.6f} {int(seconds)}"]
    for proto in trace.maps:
        rows = [(k, v) for k, v in snap.get(proto, []) if k[0] == trace.tid]
        if proto == "lat":
            rows.sort(key=lambda kv: (kv[0][2], kv[0][1], kv[0][3]))
            out += [f"@lat[{trace.entity_token(k[2])}, {_name(k[1])}, {k[3]}]: {v}" for k, v in rows]
        else:
            rows.sort(key=lambda kv: (kv[0][2], kv[0][1]))
            out += [f"@{proto}[{trace.entity_token(k[2])}, {_name(k[1])}]: {v}" for k, v in rows]
    out.append("end")
    return out


def _clean(text: str) -> str:
    """A comm or file name as one token of a slow line's detail (no whitespace, never empty)."""
    return "".join(c if c.isprintable() and not c.isspace() else "?" for c in text) or "?"


@dataclass(frozen=True)
class SlowEvent:
    """One ``struct slow_t`` from the perf buffer, as plain values."""

    ts_ns: int  # bpf_ktime_get_ns() (CLOCK_MONOTONIC)
    trace: int
    op: int
    ent: int
    lat_ns: int
    nbytes: int
    extra: int = 0  # blklat: the sector
    pid: int = 0
    comm: str = ""
    file: str = ""


def slow_line(trace: BccTrace, ev: SlowEvent, epoch: float) -> str:
    """The ``slow`` line its bpftrace twin prints for this event (same detail fields)."""
    head = f"slow {epoch:.6f} {trace.entity_token(ev.ent)} {_name(ev.op)} {ev.lat_ns} {ev.nbytes}"
    if trace.name == "blklat":
        return f"{head} sector={ev.extra}"
    if trace.name == "zfsslower":
        return f"{head} pid={ev.pid} comm={_clean(ev.comm)} file={_clean(ev.file)}"
    return f"{head} pid={ev.pid} comm={_clean(ev.comm)}"


@dataclass
class Printer:
    """Keeps track of the last header printed, so each block and slow line follows its own trace's header."""

    selection: Sequence[str]
    interval: int
    slow_ms: int = 0
    last: Optional[str] = None
    by_tid: Dict[int, BccTrace] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_tid = {TRACES[n].tid: TRACES[n] for n in self.selection}

    def _switch(self, trace: BccTrace) -> List[str]:
        if self.last == trace.name:
            return []
        self.last = trace.name
        return [header(trace, self.interval, self.slow_ms)]

    def headers(self) -> List[str]:
        """Every selected trace's header, once at start (the last one stays current)."""
        out: List[str] = []
        for name in self.selection:
            out += self._switch(TRACES[name])
        return out

    def error_lines(self, name: str, reason: str) -> List[str]:
        """A trace that cannot run here: its header, then an ``error`` line (the parser's ERROR event)."""
        return [*self._switch(TRACES[name]), f"error {name}: {reason}"]

    def interval_lines(self, snap: Snapshot, epoch: float) -> List[str]:
        """Each selected trace's block for one interval, all with the same EPOCH (one table in zfsmon)."""
        out: List[str] = []
        for name in self.selection:
            trace = TRACES[name]
            out += self._switch(trace)
            out += block(trace, snap, epoch, self.interval)
        return out

    def slow_lines(self, ev: SlowEvent, epoch: float) -> List[str]:
        trace = self.by_tid.get(ev.trace)
        if trace is None:
            return []
        return [*self._switch(trace), slow_line(trace, ev, epoch)]
