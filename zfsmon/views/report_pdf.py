"""The post-mortem report: a recording drawn as panels (PDF, PNG or HTML) with the findings in words.

Two halves. :func:`build` turns a recording window into :class:`ReportData`
(sections of panels of lines, events, findings): pure numbers, no plotting,
so tests can check every value against what went in. :func:`render` draws
that with matplotlib's Agg backend (no display needed). Every time panel
shares the window's time axis (UTC) so a dip in TPS lines up with the vdev
that was busy then; pgbench runs are shaded, marks, topology changes, counter
resets and errors are vertical lines.

Counters (ARC hits/misses, ZIL kstats) are turned into rates and ratios by
:mod:`zfsmon.analysis.arc`, and the findings come from
:func:`zfsmon.analysis.findings.analyze`: the same code as ``zfsmon analyze``
and the dashboard, so one window gives one answer. The report only reads the
recording through :class:`zfsmon.store.Recording`.
"""

from __future__ import annotations

import base64
import html
import io
import os
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from zfsmon import names
from zfsmon.analysis import qdsweep, vdevperf
from zfsmon.analysis.findings import (
    LATENCY,
    TPS,
    analyze,
    duration,
    fold_step,
    reads_metric,
    series_from_samples,
)
from zfsmon.analysis.rates import derive_samples
from zfsmon.errors import plot_text
from zfsmon.model import Event, EventKind, Kind, Role, Sample
from zfsmon.outfile import atomic
from zfsmon.store import Recording, platform_of, zfs_of
from zfsmon.units import human_size
from zfsmon.views.csv_export import iso
from zfsmon.views.window import read_health, read_window

#: at most this many points per line are drawn (bucket means beyond it): a 4 h soak at 1 s stays readable
MAX_POINTS = 2000
#: roles in the order their vdev panels appear
ROLE_ORDER = (Role.DATA, Role.LOG, Role.CACHE, Role.SPECIAL, Role.DEDUP, Role.SPARE)
FORMATS = (".pdf", ".png", ".html")


@dataclass
class Line:
    label: str
    ts: List[float]
    values: List[float]
    spans: Optional[List[float]] = None  # a value describing [ts - span, ts] (a run summary) is drawn as a bar


@dataclass
class Panel:
    title: str
    unit: str  # "ops/s", "%", "B", "B/s", "ms", "tps", "IOPS", "I/Os"
    lines: List[Line] = field(default_factory=list)
    empty_note: str = "no data in this window"
    #: "" for the window's time axis (a line's ``ts`` are epoch seconds); else the x axis' label and a line's
    #: ``ts`` are its x values (queue depth, latency in ms)
    x_label: str = ""
    log_x: int = 0  # the x axis' log base (0: linear)
    log_y: bool = False
    marks: List[Tuple[float, str]] = field(default_factory=list)  # vertical lines on an x axis: (x, label)
    #: histogram: a line's ``ts`` are its buckets' low edges, ``spans`` their widths, ``values`` % of the operations
    histogram: bool = False

    def line(self, label: str) -> Optional[Line]:
        return next((ln for ln in self.lines if ln.label == label), None)


@dataclass
class Section:
    title: str
    panels: List[Panel]


@dataclass
class ReportData:
    path: str
    meta: Dict[str, str]
    start: float
    end: float
    sections: List[Section]
    events: List[Event]
    findings: List[str]
    entity_counts: Dict[str, int]
    #: (epoch s, short label) of each restart ``analyze`` found (a reboot inside the recording): a line on every panel
    restarts: List[Tuple[float, str]] = field(default_factory=list)

    def panel(self, title: str) -> Optional[Panel]:
        return next((p for s in self.sections for p in s.panels if p.title == title), None)

    def summary_lines(self) -> List[str]:
        """The header of the report: what was recorded where and when, and what happened."""
        m = self.meta
        out = [f"zfsmon post-mortem report: {os.path.basename(self.path)}",
               f"host {m.get('host', '?')} ({platform_of(m)}; ZFS {zfs_of(m)}), recorded by {m.get('argv', '?')}",
               f"window {iso(self.start)} .. {iso(self.end)} ({self.end - self.start:.0f} s)",
               "entities: " + ", ".join(f"{n} {k}" for k, n in sorted(self.entity_counts.items())),
               ]
        counts: Dict[str, int] = {}
        for e in self.events:
            counts[e.kind.value] = counts.get(e.kind.value, 0) + 1
        out.append("events: " + (", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"))
        out.append(f"panels: green shading = {EventKind.RUN_START.value}..{EventKind.RUN_END.value} of a workload "
                   "run; purple dashed = mark; orange dotted = topology change; grey dotted = counter reset; "
                   "red = source error; black = a restart (a reboot: the findings' restart line); a gap in a line = "
                   "nothing read")
        return out


# ------------------------------------------------------------------------------------------- recording -> data

def _append(lines: Dict[str, Line], label: str, ts: float, value: float) -> None:
    ln = lines.get(label)
    if ln is None:
        ln = lines[label] = Line(label, [], [])
    ln.ts.append(ts)
    ln.values.append(float(value))


def _vdev_section(samples: Sequence[Sample]) -> Section:
    """Per top-level vdev read/write ops per second, one pair of panels per role present."""
    by_role: Dict[Role, Tuple[Dict[str, Line], Dict[str, Line]]] = {}
    for s in samples:
        e = s.entity
        if e.kind != Kind.VDEV or s.since_boot or e.role is None:
            continue
        reads, writes = by_role.setdefault(e.role, ({}, {}))
        label = f"{e.pool}/{e.name}"
        if "read_ops" in s.metrics:
            _append(reads, label, s.ts, s.metrics["read_ops"])
        if "write_ops" in s.metrics:
            _append(writes, label, s.ts, s.metrics["write_ops"])
    panels: List[Panel] = []
    for role in ROLE_ORDER:
        if role not in by_role:
            continue
        reads, writes = by_role[role]
        panels.append(Panel(f"{role.value} vdevs: read ops/s", "ops/s", list(reads.values())))
        panels.append(Panel(f"{role.value} vdevs: write ops/s", "ops/s", list(writes.values())))
    if not panels:
        panels = [Panel("vdevs: read ops/s", "ops/s", empty_note="no zpool iostat interval rows in this window")]
    return Section("Per-vdev I/O by role (zpool iostat)", panels)


def _gauge_lines(samples: Sequence[Sample], kind: Kind, metrics: Sequence[Tuple[str, str]]) -> List[Line]:
    """(metric, label) series of one entity kind, as recorded (levels, or percentages a tool computed)."""
    lines: Dict[str, Line] = {}
    for s in samples:
        if s.entity.kind != kind or s.since_boot:
            continue
        for m, label in metrics:
            if m in s.metrics:
                _append(lines, label, s.ts, s.metrics[m])
    return [lines[label] for _, label in metrics if label in lines]


def _hit_lines(raw: Sequence[Sample], derived: Sequence[Sample], kind: Kind, what: Sequence[Tuple[str, str]]
               ) -> List[Line]:
    """Hit % from counters where the recording has them, else as a tool (arcstat) recorded it."""
    from_counters = _gauge_lines(derived, kind, what)
    recorded = _gauge_lines(raw, kind, what)
    if from_counters:
        for ln in recorded:
            ln.label += " (as a tool computed it)"
    return from_counters + recorded


def _arc_section(samples: Sequence[Sample], derived: Dict[Kind, List[Sample]]) -> Section:
    hit = Panel("ARC hit %", "%", _hit_lines(samples, derived[Kind.ARC], Kind.ARC,
                                             (("hit_pct", "all"), ("demand_data_hit_pct", "demand data"),
                                              ("demand_metadata_hit_pct", "demand metadata"))))
    size = Panel("ARC size vs target c", "B", _gauge_lines(samples, Kind.ARC, (("size", "size"), ("c", "c"),
                                                                               ("c_max", "c_max"))))
    return Section("ARC", [hit, size])


def _l2arc_section(samples: Sequence[Sample], derived: Dict[Kind, List[Sample]]) -> Section:
    size = Panel("L2ARC size", "B", _gauge_lines(samples, Kind.L2ARC, (("size", "size (logical)"),
                                                                        ("asize", "asize (allocated)"))))
    hit = Panel("L2ARC hit %", "%", _hit_lines(samples, derived[Kind.L2ARC], Kind.L2ARC, (("hit_pct", "hit %"),)))
    return Section("L2ARC", [size, hit])


def _zil_section(samples: Sequence[Sample], derived: Dict[Kind, List[Sample]]) -> Section:
    has_kstat = any(s.entity.kind == Kind.ZIL for s in samples)
    commits = Panel("ZIL commits and log writes/s (zil kstat)", "ops/s",
                    _gauge_lines(derived[Kind.ZIL], Kind.ZIL,
                                 (("commits_per_s", "commits"), ("slog_itx_per_s", "log blocks to SLOG"),
                                  ("normal_itx_per_s", "log blocks to main pool"))),
                    empty_note="ZIL kstat read, but no rate: fewer than two readings, or its counters reset"
                    if has_kstat else "no ZIL kstat in this window (zfs-fuse has none): see the SLOG panel")
    lines: Dict[str, Line] = {}
    for s in samples:
        e = s.entity
        if e.kind == Kind.VDEV and e.role == Role.LOG and not s.since_boot and "write_bw" in s.metrics:
            _append(lines, f"{e.pool}/{e.name}", s.ts, s.metrics["write_bw"])
    slog = Panel("SLOG (log vdev) write bandwidth", "B/s", list(lines.values()),
                 empty_note="no log vdev in this window")
    return Section("ZIL / SLOG", [commits, slog])


def _workload_section(samples: Sequence[Sample]) -> Section:
    series = series_from_samples(s for s in samples if s.entity.kind == Kind.WORKLOAD)
    panels = []
    for name, title, unit in ((TPS, "workload TPS", "tps"), (LATENCY, "workload latency (average)", "ms")):
        pts = series.get(name, [])
        spans = [float(p[2]) for p in pts] if pts and len(pts[0]) > 2 else None
        lines = [Line(names.PGBENCH, [p[0] for p in pts], [p[1] for p in pts], spans)] if pts else []
        panels.append(Panel(title, unit, lines, empty_note="no workload (pgbench) samples in this window"))
    return Section("Workload (pgbench)", panels)


#: fio's completion-latency percentiles drawn against queue depth: (qdsweep's key, label)
DEPTH_PCTS = (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"))
DEPTH_AXIS = "queue depth (I/Os outstanding: iodepth x numjobs)"
LATENCY_AXIS = "latency (ms)"
_DIRECTIONS = ("read", "write", "trim")


def _ms_text(v: Optional[float]) -> str:
    if v is None:
        return "?"
    return f"{v * 1000:.0f} us" if v < 1 else f"{v:.1f} ms"


def _knee_marks(sw: Optional[qdsweep.Sweep]) -> List[Tuple[float, str]]:
    return [(sw.knee.depth, f"knee: depth {sw.knee.depth:g}")] if sw is not None and sw.knee is not None else []


def _directions(steps: Sequence[qdsweep.Step]) -> List[str]:
    seen = {d for s in steps for d in s.by_direction}
    return [d for d in _DIRECTIONS if d in seen] + sorted(seen - set(_DIRECTIONS))


def _points(label: str, pts: Sequence[Tuple[float, Optional[float]]]) -> Optional[Line]:
    kept = [(x, float(y)) for x, y in pts if y is not None]
    return Line(label, [x for x, _ in kept], [y for _, y in kept]) if kept else None


def _sweep_section(steps: Sequence[qdsweep.Step], sw: Optional[qdsweep.Sweep]) -> Section:
    """IOPS, Little's-law product and each direction's p50/p99/p99.9 against queue depth, the knee marked: the
    numbers of :mod:`zfsmon.analysis.qdsweep`, as ``zfsmon analyze`` states them (topic qd_sweep)."""
    marks = _knee_marks(sw)
    depths = [s.depth for s in steps]
    little = _points("IOPS x mean latency", [(s.depth, s.in_flight) for s in steps])
    panels = [Panel("IOPS vs queue depth", "IOPS", [Line("IOPS (all directions)", depths, [s.iops for s in steps])],
                    x_label=DEPTH_AXIS, log_x=2, marks=marks),
              Panel("I/Os in flight vs queue depth (Little's law)", "I/Os",
                    [little, Line("queue depth (a full queue)", depths, depths)] if little else [],
                    empty_note="fio recorded no mean latency", x_label=DEPTH_AXIS, log_x=2, marks=marks)]
    for d in _directions(steps):
        lines = [ln for ln in (_points(label, [(s.depth, s.by_direction.get(d, {}).get(key)) for s in steps])
                               for key, label in DEPTH_PCTS) if ln is not None]
        panels.append(Panel(f"{d} completion latency vs queue depth (fio)", "ms", lines,
                            empty_note="fio recorded no percentiles", x_label=DEPTH_AXIS, log_x=2, log_y=True,
                            marks=marks))
    note = "" if sw is not None else (f" ({len(steps)} depth{'s' if len(steps) != 1 else ''}: not a sweep, "
                                      f"no knee; a sweep needs {qdsweep.MIN_DEPTHS})")
    return Section("fio: IOPS vs queue depth" + note, panels)


def _histogram_line(d: vdevperf.LatDist) -> Line:
    """A role's distribution as drawn: each bucket (ms) with its share of the role's operations (%)."""
    total = sum(n for _lo, _hi, n in d.buckets)
    return Line(f"{d.role} ({d.source}): p50 {_ms_text(d.p50_ms)}, p99 {_ms_text(d.p99_ms)}, {d.count:,.0f} ops",
                [lo / 1e6 for lo, _hi, _n in d.buckets], [100.0 * n / total for _lo, _hi, n in d.buckets],
                [(hi - lo) / 1e6 for lo, hi, _n in d.buckets])


def _role_latency_section(vp: Optional[vdevperf.VdevPerf], rows: Sequence[Mapping[str, Optional[float]]],
                          steps: Sequence[qdsweep.Step], sw: Optional[qdsweep.Sweep]) -> Section:
    """Per operation: each vdev role's latency distribution (:mod:`zfsmon.analysis.vdevperf`), then its p50/p99
    per queue depth beside fio's own (the qd_sweep finding's per-step rows): where the time went."""
    dists = vp.latency if vp is not None else []
    panels: List[Panel] = []
    for op in vdevperf.LAT_OPS:
        mine = [d for d in dists if d.op == op]
        if not mine:
            continue
        means = [d.text() for d in mine if not d.buckets]
        panels.append(Panel(f"{op} latency per vdev role (% of the role's {op} operations per bucket)", "%",
                            [_histogram_line(d) for d in mine if d.buckets], x_label=LATENCY_AXIS, log_x=10,
                            histogram=True, empty_note="only averages recorded: " + "; ".join(means)))
    for op in ("read", "write"):
        lines = [ln for ln in (_points(f"fio {op} {label}", [(s.depth, s.by_direction.get(op, {}).get(key))
                                                             for s in steps])
                               for key, label in (("p50", "p50"), ("p99", "p99"))) if ln is not None]
        devs = [ln for ln in (_points(f"{role} {op} {q}", [(float(r["depth"] or 0.0), r.get(f"{role}_{op}_{q}_ms"))
                                                           for r in rows])  # a row's depth: always set
                              for role in vdevperf.ROLES for q in ("p50", "p99")) if ln is not None]
        if lines and devs:  # fio did this operation and the devices' latency is known
            panels.append(Panel(f"{op} p50/p99 per queue depth: fio against each vdev role", "ms", lines + devs,
                                x_label=DEPTH_AXIS, log_x=2, log_y=True, marks=_knee_marks(sw)))
    if not panels:
        panels = [Panel("latency per vdev role", "ms", x_label=LATENCY_AXIS,
                        empty_note="no per-vdev latency in this window (it needs a trace's histograms, "
                        "zpool iostat -w, or -l)")]
    return Section("Latency per vdev role, beside fio's", panels)


def fio_sections(samples: Sequence[Sample]) -> List[Section]:
    """The two fio pages (none without fio samples): IOPS and latency against queue depth, and the vdev roles'
    latency beside fio's."""
    steps = qdsweep.steps_from_samples(samples)
    if not steps:
        return []
    sw = qdsweep.sweep([s for s in samples if s.entity.kind == Kind.WORKLOAD])  # its steps: those above
    steps = sw.steps if sw is not None else steps
    return [_sweep_section(steps, sw),
            _role_latency_section(vdevperf.vdev_perf(samples), vdevperf.step_windows(samples, steps), steps, sw)]


#: what the report's own pages read of a ``zpool iostat`` row beside what findings read: the per-vdev operations,
#: and a vdev's write bandwidth (the SLOG panel)
ROW_METRICS = frozenset({"read_ops", "write_ops"})


def report_reads(kind: Kind, name: str) -> bool:
    """Whether the report reads metric ``name`` of an entity of ``kind``: every metric of the kstats and the
    workload, of a ``zpool iostat`` row what its pages and findings use (not the queue and other latency
    columns a long OpenZFS window is mostly made of)."""
    return reads_metric(kind, name) or name in ROW_METRICS or (kind is Kind.VDEV and name == "write_bw")


def build(rec: Recording, start: Optional[float] = None, end: Optional[float] = None,
          metrics: Optional[Callable[[Kind, str], bool]] = report_reads) -> ReportData:
    """Everything the report shows for [start, end] of a recording (default: all of it); ``metrics``: which
    metrics of a sample are read (None: all)."""
    span = rec.time_range()
    if span is None:
        raise ValueError("the recording holds no samples")
    lo = span[0] if start is None else max(start, span[0])
    hi = span[1] if end is None else min(end, span[1])
    if hi < lo:
        raise ValueError(f"the window {iso(lo)} .. {iso(hi)} holds no samples (recording: {iso(span[0])} .. "
                         f"{iso(span[1])})")
    # a window too long for a cell per reading is folded to analyze's coarser step as it is read (a week of
    # one-second readings must fit in memory); the pages are drawn from at most MAX_POINTS points anyway
    every = fold_step(rec.nominal_interval(), hi - lo)
    samples = read_window(rec, lo, hi, every, metrics=metrics)
    events = rec.events(lo, hi)
    derived = derive_samples(samples)
    sections = [_vdev_section(samples), _arc_section(samples, derived), _l2arc_section(samples, derived),
                _zil_section(samples, derived), _workload_section(samples)] + fio_sections(samples)
    report = analyze(samples, events, step=every, start=lo, end=hi, health=read_health(rec, lo, hi))
    findings = [f.text for f in report.findings]
    if every:
        findings.insert(0, f"Readings folded to {duration(every)} steps as they were read (a window of "
                        f"{duration(hi - lo)}): the vdevs' busiest interval and goose eggs are per step.")
    counts: Dict[str, int] = {}
    for e in rec.topology(at=hi):
        label = f"{e.role.value} {e.kind.value}" if e.role else e.kind.value
        counts[label] = counts.get(label, 0) + 1
    restarts = [(float(at), restart_label(f.numbers)) for f in report.topic("restart")
                if isinstance(at := f.numbers.get("at"), (int, float))]
    return ReportData(rec.path, dict(rec.meta), lo, hi, sections, events, findings, counts, restarts)


def restart_label(numbers: Mapping[str, object]) -> str:
    """A restart's few words on the panels: whether the L2ARC was rebuilt, and when TPS was back."""
    size, back = numbers.get("rebuilt_bytes"), numbers.get("back_90_s")
    rebuilt = bool(numbers.get("rebuild_ok")) and isinstance(size, (int, float)) and size > 0
    what = f"restart: L2ARC rebuilt {human_size(float(size))}" if rebuilt and isinstance(size, (int, float)) \
        else "restart: L2ARC empty"
    return what + (f", TPS back in {duration(float(back))}" if isinstance(back, (int, float)) else "")


# --------------------------------------------------------------------------------------------------- drawing

def thin(ts: Sequence[float], values: Sequence[float], max_points: int = MAX_POINTS
         ) -> Tuple[List[float], List[float]]:
    """Bucket means, so a long recording draws as fast as a short one (peaks narrower than a bucket soften)."""
    n = len(ts)
    if n <= max_points:
        return list(ts), list(values)
    per = -(-n // max_points)
    out_t, out_v = [], []
    for i in range(0, n, per):
        chunk_t, chunk_v = ts[i:i + per], values[i:i + per]
        out_t.append(sum(chunk_t) / len(chunk_t))
        out_v.append(sum(chunk_v) / len(chunk_v))
    return out_t, out_v


def break_gaps(ts: Sequence[float], values: Sequence[float], least_s: float = 30.0
               ) -> Tuple[List[float], List[float]]:
    """A NaN between two points further apart than ``least_s`` and 5 times the usual step, so a line is not drawn
    across the time nothing was read (a reboot), as if it had been."""
    if len(ts) < 3:
        return list(ts), list(values)
    steps = sorted(b - a for a, b in zip(ts, ts[1:]))
    gap = max(least_s, 5.0 * steps[len(steps) // 2])
    out_t, out_v = [ts[0]], [values[0]]
    for i in range(1, len(ts)):
        if ts[i] - ts[i - 1] > gap:
            out_t.append((ts[i] + ts[i - 1]) / 2.0)
            out_v.append(float("nan"))
        out_t.append(ts[i])
        out_v.append(values[i])
    return out_t, out_v


def _dt(ts: Sequence[float]) -> List[datetime]:
    return [datetime.fromtimestamp(t, tz=timezone.utc) for t in ts]


_EVENT_STYLE = {EventKind.MARK: ("tab:purple", "--"), EventKind.TOPOLOGY: ("tab:orange", ":"),
                EventKind.RESET: ("tab:gray", ":"), EventKind.ERROR: ("tab:red", "-")}


def run_spans(events: Sequence[Event], start: float, end: float) -> List[Tuple[float, float, str]]:
    """(from, to, label) of each workload run; a run still open at the end of the window ends there."""
    spans, open_at = [], {}
    for e in events:
        run = e.data.get("run", "") if isinstance(e.data, dict) else ""
        if e.kind == EventKind.RUN_START:
            open_at[run] = e.ts
        elif e.kind == EventKind.RUN_END:
            spans.append((open_at.pop(run, start), e.ts, f"run {run}" if run != "" else "run"))
    spans += [(t, end, f"run {run}" if run != "" else "run") for run, t in open_at.items()]
    return sorted(spans)


def _draw_events(ax, data: ReportData, label_marks: bool) -> None:
    for i, (a, b, label) in enumerate(run_spans(data.events, data.start, data.end)):
        ax.axvspan(*_dt([a, b]), color="tab:green", alpha=0.08, lw=0)
        if label_marks and i < 20:
            ax.text(_dt([a])[0], 1.0, plot_text(label), transform=ax.get_xaxis_transform(), fontsize=6, va="top",
                    color="tab:green")
    marks = 0
    for e in data.events:
        style = _EVENT_STYLE.get(e.kind)
        if style is None:
            continue
        ax.axvline(_dt([e.ts])[0], color=style[0], ls=style[1], lw=0.8, alpha=0.8)
        if label_marks and e.kind == EventKind.MARK and marks < 15:
            marks += 1
            ax.text(_dt([e.ts])[0], 0.02, plot_text(" " + e.text[:40]), transform=ax.get_xaxis_transform(), fontsize=6,
                    rotation=90, va="bottom", color=style[0])
    for at, label in data.restarts[:10]:
        ax.axvline(_dt([at])[0], color="black", ls="-", lw=1.0, alpha=0.9)
        if label_marks:
            ax.text(_dt([at])[0], 0.98, plot_text(" " + label), transform=ax.get_xaxis_transform(), fontsize=6,
                    rotation=90, va="top", color="black")


def _format_y(ax, unit: str) -> None:
    from matplotlib.ticker import FuncFormatter

    if unit in ("B", "B/s"):
        suffix = "/s" if unit == "B/s" else ""
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: human_size(v) + suffix))
    ax.set_ylabel(unit, fontsize=7)


def _stairs(ln: Line) -> Tuple[List[float], List[float]]:
    """A histogram line as (edges, heights) for ``Axes.stairs``: a gap between buckets is a zero step."""
    edges: List[float] = []
    heights: List[float] = []
    for lo, width, v in zip(ln.ts, ln.spans or [], ln.values):
        hi = lo + width
        lo = lo if lo > 0 else hi / 2  # a bucket from 0 on a log axis
        if not edges:
            edges.append(lo)
        elif lo > edges[-1]:
            heights.append(0.0)
            edges.append(lo)
        heights.append(v)
        edges.append(max(hi, edges[-1]))
    return edges, heights


def _draw_xy_panel(ax, panel: Panel) -> None:
    """A panel on its own x axis (queue depth, latency): points joined by lines, or histograms as steps."""
    from matplotlib.ticker import FuncFormatter

    ax.set_title(plot_text(panel.title), fontsize=9, loc="left")
    ax.tick_params(labelsize=7)
    if panel.log_x:
        ax.set_xscale("log", base=panel.log_x)
        if panel.log_x == 2:
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    for ln in panel.lines:
        if panel.histogram:
            edges, heights = _stairs(ln)
            ax.stairs(heights, edges, label=plot_text(ln.label), fill=True, alpha=0.35)
        else:
            ax.plot(ln.ts, ln.values, lw=1, marker="o", ms=3, label=plot_text(ln.label))
    if not panel.lines:
        ax.text(0.5, 0.5, plot_text(panel.empty_note), transform=ax.transAxes, ha="center", va="center", fontsize=8,
                color="gray", wrap=True)
    for x, label in panel.marks:
        ax.axvline(x, color="tab:red", ls="--", lw=0.8)
        ax.text(x, 0.98, plot_text(" " + label), transform=ax.get_xaxis_transform(), fontsize=7, va="top", color="tab:red")
    if panel.log_y and panel.lines:
        ax.set_yscale("log")
    elif panel.lines:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(plot_text(panel.x_label), fontsize=7)
    _format_y(ax, panel.unit)
    ax.grid(True, which="both" if panel.log_y else "major", lw=0.3, alpha=0.5)
    if panel.lines:
        ax.legend(fontsize=6, loc="best", ncol=1 if panel.histogram else min(3, len(panel.lines)))


def draw_panel(ax, panel: Panel, data: ReportData) -> None:
    import matplotlib.dates as mdates

    if panel.x_label:
        _draw_xy_panel(ax, panel)
        return
    ax.set_title(plot_text(panel.title), fontsize=9, loc="left")
    ax.tick_params(labelsize=7)
    for ln in panel.lines:
        if ln.spans:
            segs = [(_dt([t - sp])[0], _dt([t])[0], v) for t, v, sp in zip(ln.ts, ln.values, ln.spans)]
            ax.hlines([v for *_, v in segs], [a for a, _, _ in segs], [b for _, b, _ in segs], lw=2,
                      label=plot_text(ln.label))
        else:
            t, v = break_gaps(*thin(ln.ts, ln.values))
            ax.plot(_dt(t), v, lw=1, marker="." if len(t) < 30 else None, ms=3, label=plot_text(ln.label))
    if not panel.lines:
        ax.text(0.5, 0.5, plot_text(panel.empty_note), transform=ax.transAxes, ha="center", va="center", fontsize=8,
                color="gray")
    _draw_events(ax, data, label_marks=True)
    ax.set_xlim(*_dt([data.start, data.end]) if data.end > data.start else _dt([data.start - 1, data.end + 1]))
    if panel.unit == "%":
        ax.set_ylim(0, 100.5)
    elif panel.lines:
        ax.set_ylim(bottom=0)
    _format_y(ax, panel.unit)
    loc = mdates.AutoDateLocator(tz=timezone.utc)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=timezone.utc))
    ax.grid(True, lw=0.3, alpha=0.5)
    if panel.lines:
        ax.legend(fontsize=6, loc="upper right", ncol=min(4, len(panel.lines)))


def _draw_section(fig, section: Section, data: ReportData) -> None:
    n = len(section.panels)
    cols = 2 if n > 1 else 1
    rows = -(-n // cols)
    fig.suptitle(plot_text(section.title), fontsize=11, x=0.01, ha="left")
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, panel in enumerate(section.panels):
        draw_panel(axes[i // cols][i % cols], panel, data)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)


def text_block(data: ReportData) -> str:
    """The summary and the findings as plain text (the report's first page, the HTML's top)."""
    out = data.summary_lines() + ["", "Findings (zfsmon analyze):"]
    out += [f"- {f}" for f in data.findings] or ["- none"]
    return "\n".join(out)


def _wrap(text: str, width: int = 120) -> str:
    return "\n".join(textwrap.fill(line, width, subsequent_indent="  ") if line else "" for line in
                     text.splitlines())


def _page_text(data: ReportData) -> str:
    """:func:`text_block` for a figure: wrapped, each line :func:`~zfsmon.errors.plot_text` (it names the
    recording, its host, its entities and findings: no mathtext)."""
    return "\n".join(plot_text(line) for line in _wrap(text_block(data)).split("\n"))


def _agg(fig):
    """Draw with Agg explicitly: no display, no pyplot state shared with anything else in the process."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    return fig


def _section_rows(section: Section) -> int:
    return -(-len(section.panels) // 2)


def _text_figure(data: ReportData):
    from matplotlib.figure import Figure

    fig = _agg(Figure(figsize=(11.69, 8.27)))
    fig.text(0.03, 0.97, _page_text(data), va="top", ha="left", fontsize=8, family="monospace")
    return fig


def section_figure(section: Section, data: ReportData):
    """One section's page as a matplotlib Figure (Agg): what the PDF and the HTML draw."""
    from matplotlib.figure import Figure

    fig = _agg(Figure(figsize=(11.69, max(3.2, 2.8 * _section_rows(section) + 0.6)), layout="constrained"))
    _draw_section(fig, section, data)
    return fig


@dataclass
class Rendered:
    path: str
    format: str
    pages: int
    panels: List[str]


def render(data: ReportData, out: str) -> Rendered:
    """Write the report to ``out``; the format follows the suffix (.pdf: one page per section, .png: one tall
    image, .html: text plus one inline image per section)."""
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"{out}: unknown report format (use {', '.join(FORMATS)})")
    panels = [p.title for s in data.sections for p in s.panels]
    # written whole or not at all: a temporary file beside ``out``, renamed over it once complete
    with atomic(out, "wb") as fh:
        if ext == ".pdf":
            from matplotlib.backends.backend_pdf import PdfPages

            with PdfPages(fh, metadata={"Title": f"zfsmon report {os.path.basename(data.path)}",
                                        "Creator": "zfsmon"}) as pdf:
                for fig in [_text_figure(data)] + [section_figure(s, data) for s in data.sections]:
                    pdf.savefig(fig)
            return Rendered(out, "pdf", 1 + len(data.sections), panels)
        if ext == ".png":
            _tall_figure(data).savefig(fh, format="png", dpi=100)
            return Rendered(out, "png", 1, panels)
        fh.write(_html(data).encode("utf-8"))
    return Rendered(out, "html", 1, panels)


def _tall_figure(data: ReportData):
    from matplotlib.figure import Figure

    text = _page_text(data)
    text_h = 0.16 * (text.count("\n") + 2)
    heights = [text_h] + [2.8 * _section_rows(s) + 0.6 for s in data.sections]
    fig = _agg(Figure(figsize=(11.69, sum(heights)), layout="constrained"))
    subs = fig.subfigures(len(heights), 1, height_ratios=heights)
    subs[0].text(0.01, 0.98, text, va="top", ha="left", fontsize=8, family="monospace")
    for sub, section in zip(subs[1:], data.sections):
        _draw_section(sub, section, data)
    return fig


def _html(data: ReportData) -> str:
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>zfsmon report {html.escape(os.path.basename(data.path))}</title></head><body>",
             f"<pre>{html.escape(text_block(data))}</pre>"]
    for s in data.sections:
        buf = io.BytesIO()
        section_figure(s, data).savefig(buf, format="png", dpi=90)
        img = base64.b64encode(buf.getvalue()).decode("ascii")
        parts.append(f"<h2>{html.escape(s.title)}</h2><img alt='{html.escape(s.title)}' "
                     f"src='data:image/png;base64,{img}'>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
