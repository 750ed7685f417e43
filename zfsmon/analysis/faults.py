"""A fault's figures from a recording: what zfsmon saw while it lasted, what it cost, how soon all was back.

The fault matrices (the lab's tests/lab/test_faults_lab.py, kernel OpenZFS's bench/bench_guest_faults.py) cause
faults one after another under a recorder and write each one's window down. Given the recording's samples and
events and those windows, this says per fault: the events in its window (the words a user reads), the leaves'
error counts, states that were not ONLINE, slow I/Os and the scan (scrub or resilver) seen, the longest gap
between the pool's intervals around it, the recovery (the first interval after its end), and the workload's
operations per second before and during it. Pure: the caller reads the recording.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from zfsmon.analysis.incidents import is_device, leaf_parents, workload_ops
from zfsmon.analysis.rates import RateDeriver
from zfsmon.metrics.health import ERROR_WORDS, HEALTHY_STATES, SCAN_FUNCTIONS, SCAN_STATES, STATE_NAMES
from zfsmon.model import Event, Kind, Sample

#: a 2**64 wrap or a counter read against the wrong baseline shows up as a rate far beyond any machine's
ABSURD = 1e13
#: metric names whose recorded values are rates or sizes, never below 0
RATE_SUFFIXES = ("_ops", "_bw", "_bytes", "_per_s")
#: seconds after a fault's end that still belong to it (events of the recovery, a restart's back-off)
AFTER = 30.0
#: seconds before a fault that give the workload's rate it is compared with
BEFORE = 60.0
_FUNCTION_NAMES = {v: k for k, v in SCAN_FUNCTIONS.items()}
_STATE_NAMES = {v: k for k, v in SCAN_STATES.items()}


@dataclass(frozen=True)
class Window:
    """One fault: its row's name, start and end (epoch seconds), and the marks written inside it."""

    row: str
    start: float
    end: float
    marks: Tuple[Tuple[str, float], ...] = ()


def parse_steps(text: str) -> List[Window]:
    """A matrix's ``steps.tsv`` (``EPOCH<TAB>ROW<TAB>WHAT`` lines: ``start``, ``end``, anything else a mark) as
    windows, in order. A row started and not ended is left out; lines that do not read are skipped."""
    open_: Dict[str, Tuple[float, List[Tuple[str, float]]]] = {}
    out: List[Window] = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        try:
            ts = float(parts[0])
        except ValueError:
            continue
        if not math.isfinite(ts):
            continue
        row, what = parts[1], parts[2]
        if what == "start":
            open_[row] = (ts, [])
        elif what == "end" and row in open_:
            start, marks = open_.pop(row)
            out.append(Window(row, start, ts, tuple(marks)))
        elif row in open_:
            open_[row][1].append((what, ts))
        else:  # a mark of its own (the baseline's end, the recorder's stop) belongs to the window it is in
            for r in open_.values():
                r[1].append((f"{row} {what}", ts))
    return out


def bad_rates(samples: Iterable[Sample]) -> List[Tuple[str, str, float, float]]:
    """(entity, metric, value, time) of every number a rate view would show that is negative, NaN or absurd:
    recorded rates and sizes, and the rates of counters as a reader takes them (per entity and source, in time
    order)."""
    bad: List[Tuple[str, str, float, float]] = []
    rd = RateDeriver()
    for s in sorted(samples, key=lambda s: s.ts):
        if s.since_boot:
            continue
        for k, v in s.metrics.items():
            if isinstance(v, (int, float)) and k.endswith(RATE_SUFFIXES) and not 0 <= v < ABSURD:
                bad.append((s.entity.key, k, float(v), s.ts))
        d, _ = rd.update(s)
        if d is not None:
            bad.extend((s.entity.key, k, v, s.ts) for k, v in d.rates.items() if not 0 <= v < ABSURD)
    return bad


@dataclass
class FaultFigures:
    """What the recording holds about one fault (:func:`figures`)."""

    row: str
    start: float
    end: float
    events: List[str] = field(default_factory=list)
    #: device (leaf, or one-disk top-level vdev) -> the most read/write/checksum errors `zpool status` counted on
    #: it in the window
    leaf_errors: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: entity (pool, vdev, leaf) -> the states other than ONLINE it was seen in
    states: Dict[str, List[str]] = field(default_factory=dict)
    #: leaf -> slow I/Os counted in the window (the counter's growth)
    slow_ios: Dict[str, int] = field(default_factory=dict)
    #: leaf -> 1 where it sat out reads in the window (OpenZFS 2.4 raidz/dRAID)
    sat_out: List[str] = field(default_factory=list)
    #: the scan seen in the window: function, the last state, the most progress, the bytes repaired
    scan: Dict[str, Any] = field(default_factory=dict)
    longest_gap_s: Optional[float] = None
    recovery_s: Optional[float] = None
    workload_ops_before: Optional[float] = None
    workload_ops_during: Optional[float] = None

    def as_dict(self) -> Dict[str, Any]:
        return {"row": self.row, "start": self.start, "end": self.end, "seconds": round(self.end - self.start, 1),
                "events": self.events, "leaf_errors": self.leaf_errors, "states": self.states,
                "slow_ios": self.slow_ios, "sat_out": self.sat_out, "scan": self.scan,
                "longest_gap_s": self.longest_gap_s, "recovery_s": self.recovery_s,
                "workload_ops_before": self.workload_ops_before, "workload_ops_during": self.workload_ops_during}


def pool_ticks(samples: Iterable[Sample], pool: str) -> List[float]:
    """The times of the pool's own intervals (`zpool iostat`'s pool row), the first report since boot left out."""
    return sorted({s.ts for s in samples
                   if s.entity.kind == Kind.POOL and s.entity.name == pool and not s.since_boot
                   and s.source == "zpool"})


def figures(samples: Sequence[Sample], events: Sequence[Event], window: Window, pool: str,
            ticks: Optional[Sequence[float]] = None) -> FaultFigures:
    """One fault's figures. ``samples`` in time order; ``ticks``: :func:`pool_ticks` (computed when not given)."""
    lo, hi = window.start, window.end
    f = FaultFigures(window.row, lo, hi)
    f.events = [f"{e.kind.value}: {e.text}" for e in events if lo - 2 <= e.ts <= hi + AFTER]
    slow_first: Dict[str, float] = {}
    slow_last: Dict[str, float] = {}
    parents = leaf_parents(samples)
    for s in samples:
        if not lo <= s.ts <= hi + AFTER or s.since_boot:
            continue
        e, m = s.entity, s.metrics
        name = e.name if e.kind == Kind.POOL else f"{e.pool}/{e.name}"
        state = m.get("state")
        if isinstance(state, (int, float)) and e.kind in (Kind.POOL, Kind.VDEV, Kind.LEAF):
            word = STATE_NAMES.get(int(state), str(state))
            if word not in HEALTHY_STATES:
                seen = f.states.setdefault(name, [])
                if word not in seen:
                    seen.append(word)
        if is_device(e, parents):
            for k in ERROR_WORDS:
                v = m.get(k)
                if isinstance(v, (int, float)) and v > 0:
                    errs = f.leaf_errors.setdefault(name, {})
                    errs[k] = max(errs.get(k, 0), int(v))
            v = m.get("slow_ios")
            if isinstance(v, (int, float)):
                slow_first.setdefault(name, float(v))
                slow_last[name] = float(v)
            if m.get("sit_out") == 1 and name not in f.sat_out:
                f.sat_out.append(name)
        if e.kind == Kind.POOL and e.name == pool and "scan_function" in m:
            _scan(f.scan, m)
    f.slow_ios = {k: int(slow_last[k] - slow_first[k]) for k in slow_last if slow_last[k] > slow_first[k]}
    t = list(ticks) if ticks is not None else pool_ticks(samples, pool)
    around = [x for x in t if lo - AFTER <= x <= hi + AFTER]
    gaps = [b - a for a, b in zip(around, around[1:])]
    f.longest_gap_s = round(max(gaps), 1) if gaps else None
    after = [x for x in t if x > hi]
    f.recovery_s = round(after[0] - hi, 1) if after else None
    f.workload_ops_before = workload_ops(samples, lo - BEFORE, lo)
    f.workload_ops_during = workload_ops(samples, lo, hi)
    return f


def _scan(scan: Dict[str, Any], m: Mapping[str, float]) -> None:
    fn = _FUNCTION_NAMES.get(int(m["scan_function"]), "?")
    if fn == "NONE":
        return
    scan["function"] = fn
    st = m.get("scan_state")
    if isinstance(st, (int, float)):
        scan["state"] = _STATE_NAMES.get(int(st), str(st))
    for k in ("scan_progress_pct", "scan_processed_bytes", "scan_errors", "scan_issued_bytes"):
        v = m.get(k)
        if isinstance(v, (int, float)):
            scan[k] = max(scan.get(k, 0), v)


def matrix_summary(samples: Iterable[Sample], events: Iterable[Event], steps: str, pool: str = "zguest"
                   ) -> Dict[str, Any]:
    """Every window's figures, the offending rates of the whole recording and its span."""
    ss = sorted(samples, key=lambda s: s.ts)
    evs = sorted(events, key=lambda e: e.ts)
    ticks = pool_ticks(ss, pool)
    rows = [figures(ss, evs, w, pool, ticks).as_dict() for w in parse_steps(steps)]
    return {"pool": pool, "rows": rows, "bad_rates": bad_rates(ss)[:20],
            "span": [ticks[0], ticks[-1]] if ticks else None, "intervals": len(ticks)}
