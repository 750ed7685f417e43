"""Recordings as files for spreadsheets and pandas: tidy CSV (one per entity kind, or one long file) and JSON lines.

A view: it reads samples (from a Recording, or from a parser for ``zfsmon
parse``) and writes text; it runs nothing. Columns are documented in
docs/export.md. Every row carries ISO-8601 UTC time and epoch seconds; counters
come with their delta and per-second rate (over the real elapsed time, empty
after a reset); vdevs and leaves carry their role at that moment. Text cells a
spreadsheet would run as a formula, header cells included (metric names come
from the input), are neutralised with a leading quote, and control characters
in them are shown as escapes (``\x1b``), so no cell can drive a terminal.
Files are written whole or not at all (:mod:`zfsmon.outfile`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from zfsmon import metrics
from zfsmon.analysis import qdsweep, vdevperf
from zfsmon.analysis.downsample import Bucket, downsample
from zfsmon.analysis.rates import Deriver
from zfsmon.errors import neutralise
from zfsmon.model import Entity, Event, Kind, Sample
from zfsmon.names import fio_job_direction
from zfsmon.outfile import atomic
from zfsmon.units import FLOAT_EXACT

#: which CSV file each entity kind goes to (vdevs and their leaves share one, with a kind column)
KIND_FILE: Dict[Kind, str] = {
    Kind.POOL: "pool", Kind.VDEV: "vdev", Kind.LEAF: "vdev", Kind.ARC: "arc", Kind.L2ARC: "l2arc",
    Kind.ZIL: "zil", Kind.ZIO: "zio", Kind.DATASET: "dataset", Kind.DEVICE: "device", Kind.WORKLOAD: "workload",
    Kind.TRACE: "trace",
}
ID_COLUMNS = ["time", "epoch", "kind", "pool", "name", "role", "parent", "source", "interval", "since_boot"]
LONG_COLUMNS = ID_COLUMNS + ["metric", "counter", "value", "delta", "per_s", "min", "max", "samples"]
EVENT_COLUMNS = ["time", "epoch", "kind", "source", "entity", "text", "data"]
def iso(ts: float) -> str:
    """ISO-8601 UTC with milliseconds; a time no calendar holds (a damaged value) is shown as its number."""
    try:
        return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return f"(impossible time {ts!r})"


def num(v: Optional[float]) -> str:
    """Numbers as written: integers without a fraction, floats in their shortest exact form."""
    if v is None:
        return ""
    if isinstance(v, int):
        return str(v)
    if v != v:  # NaN
        return "NaN"
    if v.is_integer() and abs(v) < FLOAT_EXACT:  # a larger float stands for many integers: shown as a float
        return str(int(v))
    return repr(v)


class Cell(NamedTuple):
    """One metric of one row."""

    metric: str
    counter: bool
    value: float
    delta: Optional[float] = None
    per_s: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None


@dataclass
class Row:
    """One entity at one time (a reading, or a downsampled bucket)."""

    ts: float
    sample: Sample  # for entity/source/interval/since_boot
    cells: List[Cell]
    samples: Optional[int] = None  # readings in the bucket (downsampled rows only)
    interval: Optional[float] = None


def rows(samples: Iterable[Sample], every: Optional[float] = None) -> Iterator[Row]:
    """Raw readings with deltas and rates, or ``every``-second buckets (see zfsmon.analysis.downsample)."""
    if every:
        yield from bucket_rows(downsample(samples, every))
        return
    deriver = Deriver()  # the sampler's derivation, run over the recorded readings
    # which metrics are counters, per (kind, metric names): looked up once, not per value
    plans: Dict[tuple, Tuple[List[Tuple[str, bool]], bool]] = {}
    for s in samples:
        m = s.metrics
        pk = (s.entity.kind, tuple(m))
        plan = plans.get(pk)
        if plan is None:
            cols = [(n, metrics.is_counter(s.entity.kind, n)) for n in sorted(m)]
            plan = plans[pk] = (cols, any(c for _, c in cols))
        cols, has_counters = plan
        d = deriver.update(s)[0] if has_counters else None
        if d is None:
            cells = [Cell(n, c, m[n]) for n, c in cols]
        else:
            dd, rr = d.deltas, d.rates
            cells = [Cell(n, True, m[n], dd.get(n), rr.get(n)) if c else Cell(n, False, m[n]) for n, c in cols]
        yield Row(s.ts, s, cells, None, s.interval)


def bucket_rows(buckets: Iterable[Bucket]) -> Iterator[Row]:
    """Downsampled rows: a counter's last value, delta and rate, a gauge's mean with min and max."""
    for b in buckets:
        cells = [Cell(n, True, c.last, c.delta if c.has_delta else None, c.per_s)
                 for n, c in b.counters.items()]
        cells += [Cell(n, False, g.mean, None, None, g.min, g.max) for n, g in b.gauges.items()]
        cells.sort(key=lambda c: c.metric)
        yield Row(b.ts, Sample(b.ts, b.entity, {}, b.every, False, b.source), cells, b.n, b.every)


class _IdCells:
    """The identifying cells of a row. Rows of one reading share a time and an entity keeps its description
    for many rows: both are formatted once."""

    def __init__(self) -> None:
        self._ts: Optional[float] = None
        self._time: List[str] = []
        self._ents: Dict[tuple, List[str]] = {}

    def __call__(self, r: Row) -> List[str]:
        if r.ts != self._ts:
            self._ts, self._time = r.ts, [iso(r.ts), num(r.ts)]
        s = r.sample
        key = (s.entity, s.source, r.interval, s.since_boot)
        ent = self._ents.get(key)
        if ent is None:
            e = s.entity
            ent = self._ents[key] = [e.kind.value, neutralise(e.pool), neutralise(e.name),
                                     e.role.value if e.role else "", neutralise(e.parent), neutralise(s.source),
                                     num(r.interval), "1" if s.since_boot else "0"]
            if len(self._ents) > 100_000:  # intervals that vary every reading: do not grow without bound
                self._ents.clear()
        return self._time + ent


def wide_columns(metric_kinds: Iterable[Tuple[Kind, str]], downsampled: bool) -> Dict[str, List[str]]:
    """Per CSV file, its metric columns: ``m`` (+ ``m_delta``, ``m_per_s`` for counters; ``m_min``,
    ``m_max`` for downsampled gauges)."""
    by_file: Dict[str, Dict[str, bool]] = {}
    for kind, name in metric_kinds:
        by_file.setdefault(KIND_FILE[kind], {})[name] = by_file.get(KIND_FILE[kind], {}).get(name, False) or \
            metrics.is_counter(kind, name)
    out: Dict[str, List[str]] = {}
    for f, names in by_file.items():
        cols: List[str] = []
        for n in sorted(names):
            if names[n]:
                cols += [n, f"{n}_delta", f"{n}_per_s"]
            elif downsampled:
                cols += [n, f"{n}_min", f"{n}_max"]
            else:
                cols.append(n)
        out[f] = cols
    return out


class WideCSV:
    """One CSV file per entity kind under a directory; each file's columns are known before the first row.

    Each file is written beside its final name and renamed there by :meth:`close`; :meth:`abort` (or an
    exception while opening) leaves no file behind."""

    def __init__(self, directory: str, columns: Dict[str, List[str]], downsampled: bool) -> None:
        self.directory = directory
        self.downsampled = downsampled
        self._files: Dict[str, IO[str]] = {}
        self._writers: Dict[str, Tuple[object, Dict[str, Tuple[int, int, int]], int]] = {}
        self.counts: Dict[str, int] = {}
        self._ids = _IdCells()
        self._stack = contextlib.ExitStack()
        try:
            for f, cols in columns.items():
                self._open(f, cols)
        except BaseException:
            self.abort()
            raise

    def _open(self, f: str, cols: List[str]) -> None:
        fh = self._stack.enter_context(atomic(os.path.join(self.directory, f"{f}.csv")))
        self._files[f] = fh
        w = csv.writer(fh)
        head = ID_COLUMNS + (["samples"] if self.downsampled else []) + cols
        w.writerow([neutralise(h) for h in head])
        index = {c: i for i, c in enumerate(head)}
        # metric -> (its column, then delta and rate (counters) or min and max (downsampled gauges))
        slots = {c: (i, index.get(f"{c}_delta", index.get(f"{c}_min", -1)),
                     index.get(f"{c}_per_s", index.get(f"{c}_max", -1)))
                 for c, i in index.items() if i >= len(ID_COLUMNS) and c != "samples"}
        self._writers[f] = (w, slots, len(head))
        self.counts[f] = 0

    def write(self, r: Row) -> None:
        f = KIND_FILE[r.sample.entity.kind]
        if f not in self._writers:  # a kind a live recorder started after the columns were fixed
            return
        w, slots, width = self._writers[f]
        line = self._ids(r) + [""] * (width - len(ID_COLUMNS))
        if self.downsampled:
            line[len(ID_COLUMNS)] = num(r.samples)
        for c in r.cells:
            slot = slots.get(c.metric)
            if slot is None:
                continue
            v = c.value
            line[slot[0]] = str(v) if type(v) is int else num(v)
            if c.counter:
                if c.delta is not None:
                    line[slot[1]] = num(c.delta)
                    line[slot[2]] = num(c.per_s)
            elif self.downsampled:  # a gauge's extremes are readings: mostly integers
                lo, hi = c.min, c.max
                line[slot[1]] = str(lo) if type(lo) is int else num(lo)
                line[slot[2]] = str(hi) if type(hi) is int else num(hi)
        w.writerow(line)  # type: ignore[attr-defined]
        self.counts[f] += 1

    def close(self) -> List[str]:
        """Finish every file (flushed, synced, renamed into place); their paths."""
        self._stack.close()
        return [os.path.join(self.directory, f"{f}.csv") for f in self._files]

    def abort(self) -> None:
        """Remove every file being written; earlier files of the same names stay as they were."""
        try:
            raise RuntimeError("export aborted")
        except RuntimeError as exc:
            self._stack.__exit__(type(exc), exc, exc.__traceback__)


def write_long(out: IO[str], rows_: Iterable[Row]) -> int:
    """One line per value: time, entity, metric, value (+ delta, rate, min, max, samples)."""
    w = csv.writer(out)
    w.writerow([neutralise(c) for c in LONG_COLUMNS])
    n = 0
    id_cells = _IdCells()
    for r in rows_:
        ids = id_cells(r)
        for c in r.cells:
            w.writerow(ids + [neutralise(c.metric), "1" if c.counter else "0", num(c.value), num(c.delta),
                              num(c.per_s), num(c.min), num(c.max), num(r.samples)])
            n += 1
    return n


def write_events(out: IO[str], events: Iterable[Event]) -> int:
    w = csv.writer(out)
    w.writerow([neutralise(c) for c in EVENT_COLUMNS])
    n = 0
    for ev in events:
        w.writerow([iso(ev.ts), num(ev.ts), ev.kind.value, neutralise(ev.source), neutralise(ev.entity),
                    neutralise(ev.text), neutralise(json.dumps(dict(ev.data), sort_keys=True, default=str))
                    if ev.data else ""])
        n += 1
    return n


#: the recording's metadata in the CSV export (meta.csv), these keys first, in this order
META_FIRST = ("host", "platform", "zfs_flavour", "zfs_version", "zfs_userland", "interval", "argv", "zfsmon_version",
              "created")
META_COLUMNS = ["key", "value"]


def write_meta(out: IO[str], meta: Mapping[str, str]) -> int:
    """``key,value`` rows: where and how the recording was made (host, platform, ZFS flavour and versions,
    interval, command). A key an older recording lacks is written empty, so the columns a reader looks for
    are always there."""
    w = csv.writer(out)
    w.writerow(META_COLUMNS)
    keys = list(META_FIRST) + sorted(k for k in meta if k not in META_FIRST)
    for k in keys:
        w.writerow([neutralise(k), neutralise(str(meta.get(k, "")))])
    return len(keys)


def _json_num(v: Optional[float]) -> Optional[float]:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def row_json(r: Row) -> str:
    e = r.sample.entity
    obj: Dict[str, object] = {
        "type": "sample", "time": iso(r.ts), "epoch": r.ts, "kind": e.kind.value, "pool": e.pool, "name": e.name,
        "role": e.role.value if e.role else None, "parent": e.parent, "source": r.sample.source,
        "interval": r.interval, "since_boot": r.sample.since_boot,
        "values": {c.metric: _json_num(c.value) for c in r.cells},
    }
    deltas = {c.metric: _json_num(c.delta) for c in r.cells if c.counter and c.delta is not None}
    if deltas:
        obj["delta"] = deltas
        obj["per_s"] = {c.metric: _json_num(c.per_s) for c in r.cells if c.counter and c.per_s is not None}
    if r.samples is not None:
        obj["samples"] = r.samples
        obj["min"] = {c.metric: _json_num(c.min) for c in r.cells if c.min is not None}
        obj["max"] = {c.metric: _json_num(c.max) for c in r.cells if c.max is not None}
    return json.dumps(obj, separators=(",", ":"))


def event_json(ev: Event) -> str:
    return json.dumps({"type": "event", "time": iso(ev.ts), "epoch": ev.ts, "kind": ev.kind.value,
                       "source": ev.source, "entity": ev.entity, "text": ev.text, "data": dict(ev.data)},
                      separators=(",", ":"), default=str)


def write_jsonl(out: IO[str], rows_: Iterable[Row], events: Sequence[Event]) -> Tuple[int, int]:
    """Samples and events merged in time order, one JSON object per line."""
    evs = sorted(events, key=lambda e: e.ts)
    i = n = 0
    for r in rows_:
        while i < len(evs) and evs[i].ts <= r.ts:
            out.write(event_json(evs[i]) + "\n")
            i += 1
        out.write(row_json(r) + "\n")
        n += 1
    for ev in evs[i:]:
        out.write(event_json(ev) + "\n")
    return n, len(evs)


def to_text(rows_: Iterable[Row]) -> str:
    """Long CSV as a string (for small outputs and tests)."""
    buf = io.StringIO()
    write_long(buf, rows_)
    return buf.getvalue()


# ------------------------------------------------------------------------ fio: the sweep and the vdev roles' figures

#: what a directory export adds when the recording has fio samples (the analysis' tables over the export's window)
FIO_FILES = ("fio_steps.csv", "vdev_roles.csv", "vdev_latency.csv", "vdev_latency_buckets.csv")
STEP_COLUMNS = ["depth", "jobs", "start", "end", "start_epoch", "end_epoch", "seconds", "ios", "iops", "lat_mean_ms"]
STEP_COLUMNS += [f"clat_{p}_ms" for p in qdsweep.PCTS] + ["clat_max_ms", "in_flight", "little_ratio", "knee", "peak"]
ROLE_COLUMNS = ["role", "devices", "top_level", "read_ops", "write_ops", "busiest_read_per_device_s",
                "busiest_write_per_device_s", "capacity_b", "peak_iops", "mean_iops", "iops_per_gb",
                "fio_peak_iops_per_gb", "l2arc_hits", "l2arc_misses"]
LATENCY_COLUMNS = ["role", "op", "source", "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms"]
BUCKET_COLUMNS = ["role", "op", "source", "low_ns", "high_ns", "count"]
#: step_windows' columns that repeat fio's own (in the step columns already)
_FIO_SIDE = {"depth", "fio_iops", "fio_p50_ms", "fio_p99_ms"}


def has_fio(entities: Iterable[Entity]) -> bool:
    return any(e.kind == Kind.WORKLOAD and fio_job_direction(e.name) for e in entities)


def _flag(on: bool, known: bool) -> str:
    return ("1" if on else "0") if known else ""


def write_steps(out: IO[str], steps: Sequence[qdsweep.Step], sweep: Optional[qdsweep.Sweep],
                vdev_rows: Sequence[Mapping[str, object]] = ()) -> int:
    """One row per queue depth (:mod:`zfsmon.analysis.qdsweep`): fio's IOPS, latency and percentiles (the worst
    direction's, then each direction's), Little's law, the knee and the peak (empty without a sweep), then what the
    vdev roles did in that step's time (:func:`zfsmon.analysis.vdevperf.step_windows`)."""
    directions = sorted({d for s in steps for d in (*s.by_direction, *s.by_ios)})
    per_dir = [(d, f"{d}_ios") for d in directions] + [(d, f"{d}_clat_{p}_ms") for d in directions
                                                      for p in qdsweep.PCTS]
    side = sorted({k for r in vdev_rows for k in r} - _FIO_SIDE)
    by_depth = {r.get("depth"): r for r in vdev_rows}
    w = csv.writer(out)
    w.writerow([neutralise(c) for c in STEP_COLUMNS + [c for _d, c in per_dir] + side])
    knee = sweep.knee.depth if sweep is not None and sweep.knee is not None else None
    for s in steps:
        row = [num(s.depth), neutralise(" ".join(s.jobs)), iso(s.t0) if s.t0 is not None else "",
               iso(s.t1) if s.t1 is not None else "", num(s.t0), num(s.t1), num(s.seconds), num(s.ios), num(s.iops),
               num(s.lat_mean_ms)] + [num(s.pct_ms.get(p)) for p in qdsweep.PCTS]
        row += [num(s.max_ms), num(s.in_flight), num(s.little_ratio), _flag(s.depth == knee, sweep is not None),
                _flag(sweep is not None and s is sweep.peak, sweep is not None)]
        for d, c in per_dir:
            row.append(num(s.by_ios.get(d)) if c.endswith("_ios") else
                       num(s.by_direction.get(d, {}).get(c[len(d) + len("_clat_"):-len("_ms")])))
        vr = by_depth.get(s.depth, {})
        row += [num(vr.get(k)) if isinstance(vr.get(k), (int, float)) else "" for k in side]  # type: ignore[arg-type]
        w.writerow(row)
    return len(steps)


def write_roles(out: IO[str], vp: vdevperf.VdevPerf) -> int:
    """One row per vdev role: operations, the busiest interval per device, capacity, IOPS per GB; on the data row
    fio's peak IOPS per GB of the data vdevs, on the cache row the L2ARC's hits and misses (arcstats)."""
    w = csv.writer(out)
    w.writerow(ROLE_COLUMNS)
    peak = vp.fio_peak_iops
    for role in vdevperf.ROLES:
        st = vp.roles.get(role)
        if st is None:
            continue
        cache, data = role == "cache", role == "data"
        w.writerow([role, st.devices, st.top_level, num(st.read_ops), num(st.write_ops),
                    num(st.busiest_read_per_device_s), num(st.busiest_write_per_device_s), num(st.capacity_b),
                    num(st.peak_iops), num(st.mean_iops), num(st.iops_per_gb),
                    num(peak / (st.capacity_b / vdevperf.GB)) if data and peak is not None and st.capacity_b else "",
                    num(vp.l2_hits) if cache else "", num(vp.l2_misses) if cache else ""])
    return len(vp.roles)


def write_role_latency(out: IO[str], vp: vdevperf.VdevPerf) -> int:
    """One row per (role, operation): where its latency came from, how many operations, mean and percentiles."""
    w = csv.writer(out)
    w.writerow(LATENCY_COLUMNS)
    for d in vp.latency:
        w.writerow([d.role, d.op, neutralise(d.source), num(d.count), num(d.mean_ms), num(d.p50_ms), num(d.p90_ms),
                    num(d.p99_ms)])
    return len(vp.latency)


def write_latency_buckets(out: IO[str], vp: vdevperf.VdevPerf) -> int:
    """The distributions themselves: one row per (role, operation, bucket), bounds in ns (high exclusive)."""
    w = csv.writer(out)
    w.writerow(BUCKET_COLUMNS)
    n = 0
    for d in vp.latency:
        for lo, hi, count in d.buckets:
            w.writerow([d.role, d.op, neutralise(d.source), num(lo), num(hi), num(count)])
            n += 1
    return n


def write_fio_tables(directory: str, samples: Sequence[Sample]) -> Dict[str, int]:
    """The fio tables of a directory export (file -> rows); none without fio samples, the vdev ones only with
    ``zpool iostat`` rows of a role. Each file written whole or not at all."""
    sweep = qdsweep.sweep(samples)
    steps = sweep.steps if sweep is not None else qdsweep.steps_from_samples(samples)
    if not steps:
        return {}
    counts: Dict[str, int] = {}
    with atomic(os.path.join(directory, "fio_steps.csv")) as fh:
        counts["fio_steps.csv"] = write_steps(fh, steps, sweep, vdevperf.step_windows(samples, steps))
    vp = vdevperf.vdev_perf(samples)
    if vp is not None:
        for name, writer in (("vdev_roles.csv", write_roles), ("vdev_latency.csv", write_role_latency),
                             ("vdev_latency_buckets.csv", write_latency_buckets)):
            with atomic(os.path.join(directory, name)) as fh:
                counts[name] = writer(fh, vp)
    return counts
