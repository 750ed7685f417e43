"""The incidents in a recording: which device failed, when, for how long, what ZFS did about it, what it cost.

Read from the ``status`` source's readings (``zpool status``: each pool's, vdev's and leaf's state and error
counts) and the workload's: a device's (a leaf's, or a one-disk top-level vdev's: a SLOG, a cache device) incident
opens at the first reading where it is not healthy (REMOVED,
FAULTED, UNAVAIL, OFFLINE, DEGRADED) or where its READ/WRITE/CKSUM counts grew, and closes at the first reading
after that where it is healthy and they did not grow (a `zpool clear` zeroing them is no growth). A pool that is
unhealthy while none of its leaves is (SUSPENDED with its leaves still shown ONLINE) is an incident of its own.
Beside each: the pool's states meanwhile, the errors counted, the scrubs and resilvers that started or ended in
it (and a resilver within :data:`SCAN_AFTER_S` seconds of its end), and the workload's operations per second during it against
the minute before. Pure: the caller reads the recording.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from zfsmon.metrics.health import ERROR_WORDS, EVENT_SCAN, HEALTHY_STATES, STATE_NAMES
from zfsmon.model import Entity, Event, Kind, Sample

#: seconds before an incident that give the workload's rate it is compared with
BEFORE_S = 60.0
#: seconds after an incident's end in which a resilver (the one that follows a disk put back) still belongs to it
SCAN_AFTER_S = 120.0
#: the source whose readings hold the states
STATUS = "status"


@dataclass
class Incident:
    """One device's (or pool's) time out of health (:func:`incidents`)."""

    pool: str
    device: str  # the leaf (or a top-level vdev of one disk: a SLOG, a cache device), or the pool itself
    kind: Kind
    role: Optional[str]
    parent: Optional[str]
    start: float
    #: the first healthy reading after it; None: not over when the recording ended
    end: Optional[float]
    last_seen: float  # the last reading in it
    states: List[str] = field(default_factory=list)
    pool_states: List[str] = field(default_factory=list)
    #: read/write/checksum errors counted during it (the counts' growth)
    errors: Dict[str, int] = field(default_factory=dict)
    scans: List[str] = field(default_factory=list)
    ops_before: Optional[float] = None
    ops_during: Optional[float] = None

    @property
    def seconds(self) -> float:
        return (self.end if self.end is not None else self.last_seen) - self.start

    def as_dict(self) -> Dict[str, object]:
        return {"pool": self.pool, "device": self.device, "kind": self.kind.value, "role": self.role,
                "parent": self.parent, "start": self.start, "end": self.end, "seconds": round(self.seconds, 1),
                "states": self.states, "pool_states": self.pool_states, "errors": self.errors, "scans": self.scans,
                "ops_before": self.ops_before, "ops_during": self.ops_during}


def workload_ops(samples: Sequence[Sample], lo: float, hi: float) -> Optional[float]:
    """The workload's operations per second in [lo, hi): fio's jobs and directions (or pgbench's TPS) summed per
    report, averaged over the reports (fio's whole-run results left out)."""
    per_ts: Dict[float, float] = {}
    for s in samples:
        if s.entity.kind != Kind.WORKLOAD or not lo <= s.ts < hi or s.entity.name.startswith("fio-run:"):
            continue
        v = s.metrics.get("iops", s.metrics.get("tps"))
        if isinstance(v, (int, float)) and math.isfinite(v):
            per_ts[round(s.ts)] = per_ts.get(round(s.ts), 0.0) + float(v)
    vals = list(per_ts.values())
    return round(sum(vals) / len(vals), 1) if vals else None


def leaf_parents(samples: Iterable[Sample]) -> Set[Tuple[Optional[str], Optional[str]]]:
    """(pool, vdev) of every vdev that has leaves (a mirror, a raidz): the vdevs that are not devices."""
    return {(s.entity.pool, s.entity.parent) for s in samples if s.entity.kind == Kind.LEAF}


def is_device(e: Entity, parents: Set[Tuple[Optional[str], Optional[str]]]) -> bool:
    """A leaf, or a top-level vdev that is one disk (a SLOG, a cache device, a pool of one disk): not a mirror or
    raidz (``parents``: :func:`leaf_parents`)."""
    return e.kind == Kind.LEAF or (e.kind == Kind.VDEV and (e.pool, e.name) not in parents)


def _word(v: object) -> Optional[str]:
    return STATE_NAMES.get(int(v)) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _errors(m: Mapping[str, float]) -> Dict[str, float]:
    return {k: float(m[k]) for k in ERROR_WORDS if isinstance(m.get(k), (int, float))}


def _grew(now: Mapping[str, float], was: Optional[Mapping[str, float]]) -> Dict[str, int]:
    """How much each count grew since the reading before (a drop is a `zpool clear`: no growth)."""
    if was is None:
        return {k: int(v) for k, v in now.items() if v > 0}
    return {k: int(v - was[k]) for k, v in now.items() if k in was and v > was[k]}


def _leaf_incidents(readings: Sequence[Sample]) -> List[Incident]:
    out: List[Incident] = []
    cur: Optional[Incident] = None
    prev: Optional[Dict[str, float]] = None
    for s in readings:
        state = _word(s.metrics.get("state"))
        errs = _errors(s.metrics)
        grew = _grew(errs, prev)
        prev = errs
        bad = (state is not None and state not in HEALTHY_STATES) or bool(grew)
        if bad:
            if cur is None:
                e = s.entity
                cur = Incident(e.pool or "", e.name, e.kind, e.role.value if e.role else None, e.parent, s.ts, None,
                               s.ts)
                out.append(cur)
            cur.last_seen = s.ts
            if state is not None and state not in HEALTHY_STATES and state not in cur.states:
                cur.states.append(state)
            for k, n in grew.items():
                cur.errors[k] = cur.errors.get(k, 0) + n
        elif cur is not None:
            cur.end = s.ts
            cur = None
    return out


def _pool_incidents(readings: Sequence[Sample], leaves: Sequence[Incident]) -> List[Incident]:
    """The pool's own unhealthy spells that no leaf incident of it overlaps."""
    out: List[Incident] = []
    cur: Optional[Incident] = None
    for s in readings:
        state = _word(s.metrics.get("state"))
        if state is not None and state not in HEALTHY_STATES:
            if cur is None:
                cur = Incident(s.entity.name, s.entity.name, Kind.POOL, None, None, s.ts, None, s.ts)
                out.append(cur)
            cur.last_seen = s.ts
            if state not in cur.states:
                cur.states.append(state)
        elif cur is not None:
            cur.end = s.ts
            cur = None
    return [p for p in out if not any(_overlaps(p, leaf) for leaf in leaves if leaf.pool == p.pool)]


def _overlaps(a: Incident, b: Incident) -> bool:
    a_end = a.end if a.end is not None else math.inf
    b_end = b.end if b.end is not None else math.inf
    return a.start < b_end and b.start < a_end


def incidents(samples: Sequence[Sample], events: Sequence[Event] = ()) -> List[Incident]:
    """Every incident in the samples, in time order (samples in any order)."""
    status = sorted((s for s in samples if s.source == STATUS and not s.since_boot
                     and s.entity.kind in (Kind.POOL, Kind.VDEV, Kind.LEAF)), key=lambda s: s.ts)
    parents = leaf_parents(status)
    by_leaf: Dict[str, List[Sample]] = {}
    by_pool: Dict[str, List[Sample]] = {}  # by the pool's name
    for s in status:
        if s.entity.kind == Kind.POOL:
            by_pool.setdefault(s.entity.name, []).append(s)
        elif is_device(s.entity, parents):
            by_leaf.setdefault(s.entity.key, []).append(s)
    leaves = [i for rs in by_leaf.values() for i in _leaf_incidents(rs)]
    found = leaves + [i for rs in by_pool.values() for i in _pool_incidents(rs, leaves)]
    work = sorted((s for s in samples if s.entity.kind == Kind.WORKLOAD), key=lambda s: s.ts)
    scans = [e for e in events if EVENT_SCAN in e.data]
    for inc in found:
        hi = inc.end if inc.end is not None else math.inf
        for s in by_pool.get(inc.pool, []):
            word = _word(s.metrics.get("state"))
            if inc.start <= s.ts < hi and word is not None and word not in HEALTHY_STATES \
                    and word not in inc.pool_states:
                inc.pool_states.append(word)
        # a scan during it, or the resilver that follows it (a scrub started later is another matter)
        inc.scans = [e.text for e in scans if e.text.startswith(f"pool {inc.pool}:")
                     and inc.start <= e.ts <= hi + (SCAN_AFTER_S if e.data.get(EVENT_SCAN) == "RESILVER" else 0.0)]
        inc.ops_before = workload_ops(work, inc.start - BEFORE_S, inc.start)
        inc.ops_during = workload_ops(work, inc.start, hi if inc.end is not None else inc.last_seen + 1e-6)
    return sorted(found, key=lambda i: (i.start, i.pool, i.device))


def error_words(counts: Mapping[str, int]) -> str:
    """``{"read_errors": 206}`` -> "206 read errors"; several: "206 read, 3 checksum errors"."""
    said = [f"{n:,} {ERROR_WORDS[k]}" for k, n in counts.items() if n]
    return (", ".join(said) + " errors") if said else ""


def change(before: Optional[float], during: Optional[float]) -> Optional[float]:
    """The relative change from ``before`` to ``during`` (-0.25: a quarter less), None without both."""
    if before is None or during is None or before <= 0:
        return None
    return during / before - 1.0
