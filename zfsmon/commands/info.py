"""`zfsmon info` at work; its manual and options are :mod:`zfsmon.commands.options.info`."""

from __future__ import annotations

import argparse
import json
from collections import Counter, deque
from typing import Any, Deque, Dict, List, Optional, TypedDict

from zfsmon import names
from zfsmon.analysis.findings import fio_run_text, fio_runs
from zfsmon.errors import printable
from zfsmon.model import EventKind, Kind, Sample
from zfsmon.store import Recording, platform_of, zfs_of
from zfsmon.views.csv_export import iso

#: the most fio results info lists, the last ones (a sweep has one per step and direction; a recording that holds
#: more, however many, costs no more memory)
MAX_FIO_RUNS = 100


class PoolShape(TypedDict):
    """A pool's top-level vdevs per role and its leaf count."""

    vdevs: Dict[str, int]
    leaves: int


class FioResults(TypedDict):
    fio_runs: List[Dict[str, Any]]  # :func:`zfsmon.analysis.findings.fio_runs`, each with its ``time``
    fio_runs_left_out: int


class RecordingInfo(FioResults):
    """What ``info`` says of a recording: ``--json`` prints it as it is, :func:`render` as lines."""

    file: str
    bytes: int
    schema: int
    meta: Dict[str, str]
    start: Optional[str]
    end: Optional[str]
    start_epoch: Optional[float]
    end_epoch: Optional[float]
    duration_s: float
    interval_s: float
    samples: int
    values: int
    bytes_per_value: Optional[float]
    entities: Dict[str, int]
    pools: Dict[str, PoolShape]
    topology_changes: int
    events: Dict[str, int]
    recent_events: List[Dict[str, str]]


def _fio_results(rec: Recording) -> FioResults:
    """fio's own whole-run figures per job and direction (``fio-run:`` entities), as ``analyze`` reads them."""
    keys = [e.key for e in rec.entities()
            if e.kind == Kind.WORKLOAD and names.fio_job_direction(e.name, names.FIO_RUN_PREFIX)]
    last: Deque[Sample] = deque(maxlen=MAX_FIO_RUNS)
    seen = 0
    if keys:
        for s in rec.samples(entity_keys=keys):
            seen += 1
            last.append(s)
    runs = [{**r, "time": iso(r["ts"])} for r in fio_runs(last)]
    return {"fio_runs": runs, "fio_runs_left_out": max(0, seen - MAX_FIO_RUNS)}


def describe(rec: Recording, last_events: int = 10) -> RecordingInfo:
    span = rec.time_range()
    counts = rec.counts()
    values = rec.value_count()
    size = rec.size_bytes()
    pools: Dict[str, PoolShape] = {}
    for e in rec.topology():
        if e.kind == Kind.POOL:
            pools.setdefault(e.name, {"vdevs": {}, "leaves": 0})
        elif e.kind in (Kind.VDEV, Kind.LEAF) and e.pool:
            p = pools.setdefault(e.pool, {"vdevs": {}, "leaves": 0})
            if e.kind == Kind.VDEV:
                role = e.role.value if e.role else "data"
                p["vdevs"][role] = p["vdevs"].get(role, 0) + 1
            else:
                p["leaves"] += 1
    events = rec.events()
    by_kind = Counter(ev.kind.value for ev in events)
    notable = [ev for ev in events if ev.kind in (EventKind.MARK, EventKind.ERROR, EventKind.TOPOLOGY,
                                                   EventKind.RESET, EventKind.RUN_START, EventKind.RUN_END)]
    kinds = Counter(e.kind.value for e in rec.entities())
    return {
        "file": rec.path, "bytes": size, "schema": rec.version,
        "meta": rec.meta,
        "start": iso(span[0]) if span else None, "end": iso(span[1]) if span else None,
        "start_epoch": span[0] if span else None, "end_epoch": span[1] if span else None,
        "duration_s": (span[1] - span[0]) if span else 0.0, "interval_s": rec.nominal_interval() or 0.0,
        "samples": counts["samples"], "values": values,
        "bytes_per_value": round(size / values, 2) if values else None,
        "entities": dict(kinds), "pools": pools, **_fio_results(rec),
        "topology_changes": by_kind.get("topology", 0),
        "events": dict(by_kind),
        "recent_events": [{"time": iso(ev.ts), "kind": ev.kind.value, "text": ev.text}
                          for ev in notable[-last_events:]] if last_events > 0 else [],
    }


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _human_duration(s: float) -> str:
    s = int(round(s))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d}d"] if d else []
    return " ".join(parts + [f"{h:02d}:{m:02d}:{s:02d}"])


def render(info: RecordingInfo) -> List[str]:
    meta = info["meta"]
    out = [f"file:       {info['file']} ({_human_bytes(info['bytes'])}"
           + (f", {info['bytes_per_value']} bytes/value)" if info["bytes_per_value"] else ")")]
    out.append(f"host:       {meta.get('host', '?')}")
    out.append(f"platform:   {platform_of(meta)}")
    out.append(f"zfs:        {zfs_of(meta)}")
    if meta.get("argv"):
        out.append(f"command:    {meta['argv']}  (zfsmon {meta.get('zfsmon_version', '?')})")
    if meta.get("imported_from"):
        out.append(f"imported:   {meta['imported_from']}")
    if info["start"]:
        out.append(f"time:       {info['start']} .. {info['end']} ({_human_duration(info['duration_s'])})")
    else:
        out.append("time:       no samples")
    if info["interval_s"]:
        out.append(f"interval:   {info['interval_s']:g} s")
    ents = ", ".join(f"{n} {k}" for k, n in sorted(info["entities"].items()))
    out.append(f"samples:    {info['samples']} ({info['values']} values) of {ents or 'no entities'}")
    for pool, p in sorted(info["pools"].items()):
        vd = ", ".join(f"{n} {r}" for r, n in sorted(p["vdevs"].items()))
        out.append(f"pool:       {pool}: vdevs {vd or '-'}; {p['leaves']} leaves")
    if info["fio_runs_left_out"]:
        out.append(f"fio run:    the last {MAX_FIO_RUNS} results of "
                   f"{MAX_FIO_RUNS + info['fio_runs_left_out']}")
    for run in info["fio_runs"]:
        out.append(f"fio run:    {fio_run_text(run)}")
    out.append(f"topology:   {info['topology_changes']} changes")
    evs = ", ".join(f"{n} {k}" for k, n in sorted(info["events"].items()))
    out.append(f"events:     {evs or 'none'}")
    for ev in info["recent_events"]:
        out.append(f"  {ev['time']}  {ev['kind']:<8} {ev['text']}")
    return out


def run(args: argparse.Namespace) -> int:
    with Recording.open(args.file) as rec:
        info = describe(rec, args.events)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
    else:
        print("\n".join(printable(line) for line in render(info)))  # names and texts come from the file
    return 0
