"""Each panel of the dashboard as a rich renderable built from :class:`~zfsmon.views.top.state.TopState`.

Pure functions of (state, options, size): the widgets in :mod:`zfsmon.views.top.app`
only place them. Every panel starts with its heading line, so a panel that
has nothing (a source missing or failing) still says what it is and why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

from rich.text import Span, Text

from zfsmon.analysis import goose
from zfsmon.analysis.findings import DRIVERS
from zfsmon.model import EventKind
from zfsmon.views import thresholds
from zfsmon.views.top import fmt
from zfsmon.views.top import timeline as tl_mod
from zfsmon.views.top.state import FioRow, TopState, TreeRow, unhealthy

HEADING = "bold reverse"
DRIVER_WORDS = dict(DRIVERS)
TITLES = {"vdevs": "Vdevs", "arc": "ARC / L2ARC", "zil": "ZIL / SLOG", "workload": "Workload",
          "readpath": "Read path", "findings": "Findings", "timeline": "Timeline"}


@dataclass
class ViewOptions:
    raw: bool = False
    totals: bool = False
    sort: str = "name"
    collapsed: bool = False
    filter: str = ""
    pool: str = ""
    interval: float = 1.0
    now: Optional[float] = None  # wall clock for staleness (live); None = the state's own time (replay)


def heading(area: str, width: int, extra: str = "") -> Text:
    t = Text(f" {TITLES[area]} ", style=HEADING)
    if extra and len(TITLES[area]) + len(extra) + 3 <= width:
        t.append(" " + extra, style="dim")
    return t


def status_line(state: TopState, area: str, opts: ViewOptions) -> Optional[Text]:
    """A source's error, or how stale its data is: the panel says so instead of freezing."""
    st = state.staleness(area)
    now = opts.now if opts.now is not None else state.now
    lag = st.stale_lag(now, opts.interval)
    if st.error is not None:
        # the rows under it still hold the last figures: say how old they are (before the error, which may be cut)
        age = f"stale: last data {fmt.age(lag)} ago; " if lag is not None else ""
        return Text(f"{age}error: {st.error.text}", style="bold red")
    if st.last is None:
        return Text("no data from this source", style="dim")
    if lag is not None:
        return Text(f"stale: last data {fmt.age(lag)} ago", style=thresholds.style("stale", lag / st.every(opts.interval)))
    return None


def _fit(parts: List[Text], width: int) -> List[Text]:
    """Lines cut at the panel's width, never wrapped."""
    for p in parts:
        p.no_wrap, p.overflow = True, "ellipsis"
        if p.cell_len > width:
            p.truncate(width, overflow="ellipsis")
    return parts


def _lines(parts: List[Text], width: int) -> Text:
    """One Text per panel, lines cut at the panel's width (cheap for Textual to measure and draw)."""
    out = Text("\n").join(_fit(parts, width))
    out.no_wrap, out.overflow = True, "ellipsis"
    return out


def _columns(cells: List[Text], first: int, widths: List[int], style: str = "") -> Text:
    """A table row as one line: the first cell left-aligned in ``first`` columns, the others right-aligned.

    The cells are the caller's fresh ones and are cut in place (copying them was a tenth of the tree's text: ~800
    cells per refresh at 64 leaves); one object given as several empty cells is never cut. The row is made in one
    go, its text joined and its spans laid out, as ``Text.append_text`` one cell at a time would make it. A cell's
    control characters (a vdev's name is the input's) are shown as escapes before it is cut to its column
    (:func:`~zfsmon.views.top.fmt.inert`), so that the columns stay aligned."""
    parts: List[str] = []
    spans: List[Span] = []
    pos = 0
    cells = [fmt.inert(c) for c in cells]
    cells[0].truncate(first, overflow="ellipsis", pad=True)
    for i, (c, w) in enumerate(zip(cells, [0, *widths])):
        if i:  # a right-aligned cell: cut to its column, blanks before it
            n = c.cell_len
            if n > w:
                c.truncate(w, overflow="ellipsis")
                n = c.cell_len
            parts.append(" " * (w - n + 1))
            pos += w - n + 1
        plain = c.plain
        if c.style:
            spans.append(Span(pos, pos + len(plain), c.style))
        if c.spans:
            spans.extend(Span(pos + a, pos + b, st) for a, b, st in c.spans)
        parts.append(plain)
        pos += len(plain)
    return Text("".join(parts), style=style, spans=spans)


# ------------------------------------------------------------------------------------------------ vdev tree
def tree(state: TopState, opts: ViewOptions, width: int) -> Text:
    return _lines(tree_lines(state, opts, width), width)


def tree_lines(state: TopState, opts: ViewOptions, width: int, shown: Optional[range] = None) -> List[Text]:
    """The vdev tree's lines (the dashboard draws them one by one: :mod:`zfsmon.views.top.lines`).

    ``shown``: the lines on screen (the tree's box is scrolled); a row outside them is a blank line, so the tree
    keeps its height (and its box its scroll range) while a pool of hundreds of leaves costs only its screenful of
    rows, the dashboard drawing them again when the box scrolls."""
    pool = opts.pool
    mode = "totals" if opts.totals else "rates"
    extra = f"{pool}  sort:{opts.sort}  {mode}" + (f"  filter:{opts.filter}" if opts.filter else "") + \
        ("  collapsed" if opts.collapsed else "")
    parts: List[Text] = [heading("vdevs", width, extra)]
    status = status_line(state, "vdevs", opts)
    if status is not None:
        parts.append(status)
    rows = state.tree(pool, opts.sort, opts.collapsed, opts.filter, opts.totals) if pool else []
    if not rows:
        if status is None:
            parts.append(Text("no pool seen yet", style="dim"))
        return _fit(parts, width)
    wide = width >= 110
    heads = ["ops" if opts.totals else "r/s", "w" if opts.totals else "w/s", "rB" if opts.totals else "rB/s",
             "wB" if opts.totals else "wB/s"]
    heads += ["rlat", "wlat", "queue", "dev ops", "dev lat", ""] if wide else ["lat", "dev", ""]
    widths = [6, 6, 6, 6] + ([6, 6, 5, 7, 7, 5] if wide else [5, 5, 5])
    name_w = max(10, width - sum(widths) - len(widths))
    parts.append(_columns([Text("vdev")] + [Text(h) for h in heads], name_w, widths, "bold"))
    for i, r in enumerate(rows, len(parts)):
        parts.append(_columns(_tree_cells(r, opts, wide), name_w, widths) if shown is None or i in shown else Text())
    eggs = [r for r in rows if r.verdict == goose.GOOSE_EGG]
    if eggs and wide:
        parts.append(Text(f"GOOSE: {eggs[0].why}", style="yellow", overflow="ellipsis", no_wrap=True))
    return _fit(parts, width)


def _tree_cells(r: TreeRow, opts: ViewOptions, wide: bool) -> List[Text]:
    indent = "  " * r.depth
    if r.kind == "role":
        name = Text(f"{'  ' * (r.depth - 1)}{r.name}", style="bold underline")
        n = 9 if wide else 7
        return [name] + [Text("")] * n
    style = "bold" if r.kind in ("pool", "vdev") else ""
    name = Text(indent[:-2] + r.name if r.depth else r.name, style=style)
    if r.since_boot:
        name.append("*", style="dim")
    if unhealthy(r.state):
        name.append(f" {r.state}", style="bold red")
    m = r.metrics
    raw = opts.raw
    cells = [Text(fmt.num(m.get("read_ops"), "ops", raw)), Text(fmt.num(m.get("write_ops"), "ops", raw)),
             Text(fmt.num(m.get("read_bw"), "B", raw)), Text(fmt.num(m.get("write_bw"), "B", raw))]
    rl, wl = m.get("total_wait_read"), m.get("total_wait_write")
    if wide:
        cells += [fmt.colored(rl, "ns", "latency", raw), fmt.colored(wl, "ns", "latency", raw)]
        pend = [v for k, v in m.items() if k.endswith("_pend")]
        cells.append(fmt.colored(sum(pend), "ops", "queue", raw) if pend else Text("-"))
        cells += [Text(fmt.num(r.device_ops, "ops", raw)) if r.device else Text(""),
                  fmt.colored(r.device_lat_ns, "ns", "latency", raw) if r.device else Text("")]
    else:
        lat = max((x for x in (rl, wl) if x is not None), default=None)
        cells.append(fmt.colored(lat, "ns", "latency", raw))
        cells.append(Text(fmt.num(r.device_ops, "ops", raw)) if r.device else Text(""))
    if r.verdict == goose.GOOSE_EGG:
        cells.append(Text("GOOSE" if wide else "G!", style=thresholds.GOOSE_STYLE))
    elif wide and r.device:
        cells.append(Text(r.device, style="dim"))
    else:
        cells.append(Text(""))
    return [name] + cells


# ------------------------------------------------------------------------------------------------ ARC / L2ARC
def arc(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    a = state.arc()
    parts: List[Text] = [heading("arc", width, "since boot" if a.get("since_boot") else "")]
    status = status_line(state, "arc", opts)
    if status is not None:
        parts.append(status)
    if a.get("size") is None and a.get("hit_pct") is None and "l2_size" not in a:
        return _lines(parts, width)
    raw = opts.raw
    lo, hi = state.window()
    spark_w = max(4, width - 16)
    labels = (("hit_pct", "hit"), ("demand_data_hit_pct", "dd"), ("demand_metadata_hit_pct", "dm"),
              ("prefetch_hit_pct", "pf"))
    if compact:
        line = Text("hit ")
        line.append_text(fmt.colored(a.get("hit_pct"), "%", "arc_hit_pct", raw))
        line.append(" ")
        line.append_text(fmt.sparkline(state.spark("arc", "hit_pct"), max(3, width - len(line) - 1), lo, hi, lo=0,
                                       hi=100))
        parts.append(line)
        t = Text()
        for key, lab in labels[1:]:
            t.append(f"{lab} ")
            t.append_text(fmt.colored(a.get(key), "%", "arc_hit_pct", raw))
            t.append(" ")
        t.no_wrap, t.overflow = True, "ellipsis"
        parts.append(t)
    else:
        for key, lab in labels:
            line = Text(f"{lab:<4}")
            val = fmt.colored(a.get(key), "%", "arc_hit_pct", raw)
            val.align("right", 7)
            line.append_text(val)
            line.append(" ")
            line.append_text(fmt.sparkline(state.spark("arc", key), spark_w, lo, hi, lo=0, hi=100))
            parts.append(line)
    parts.append(Text(f"size {fmt.num(a.get('size'), 'B', raw)} / c {fmt.num(a.get('c'), 'B', raw)} / "
                      f"max {fmt.num(a.get('c_max'), 'B', raw)}", overflow="ellipsis", no_wrap=True))
    if state.has_cache_device() is False:
        parts.append(Text("L2ARC: no cache device", style="dim"))
    elif "l2_size" in a:
        l2 = Text("L2 hit ")
        l2.append_text(fmt.colored(a.get("l2_hit_pct"), "%", "l2arc_hit_pct", raw))
        l2.append(f" size {fmt.num(a.get('l2_size'), 'B', raw)} ")
        if not compact:
            l2.append_text(fmt.sparkline(state.spark("l2arc", "size"), max(3, width - len(l2) - 1), lo, hi))
        parts.append(l2)
        parts.append(Text(f"L2 feed {fmt.num(a.get('l2_write_bps'), 'B', raw)}/s read "
                          f"{fmt.num(a.get('l2_read_bps'), 'B', raw)}/s", no_wrap=True, overflow="ellipsis"))
    else:
        parts.append(Text("no L2ARC", style="dim"))
    return _lines(parts, width)


# ------------------------------------------------------------------------------------------------ ZIL / SLOG
def zil(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    z = state.zil()
    parts: List[Text] = [heading("zil", width)]
    status = status_line(state, "zil", opts)
    raw = opts.raw
    if "commits_per_s" in z or "itx_per_s" in z:
        parts.append(Text(f"commits {fmt.num(z.get('commits_per_s'), 'x', raw)}/s", no_wrap=True))
        parts.append(Text(f"sync wr {fmt.num(z.get('itx_per_s'), 'x', raw)}/s", no_wrap=True))
        if not compact:
            lo, hi = state.window()
            parts.append(fmt.sparkline(state.spark("zil", "commits_per_s"), max(4, width - 2), lo, hi))
    elif status is not None and state.staleness("zil").error is not None:
        parts.append(status)
    else:
        parts.append(Text("no ZIL kstat here", style="dim"))
    if "slog_write_ops" in z:
        parts.append(Text(f"SLOG w {fmt.num(z.get('slog_write_ops'), 'ops', raw)}/s "
                          f"{fmt.num(z.get('slog_write_bw'), 'B', raw)}/s", no_wrap=True, overflow="ellipsis"))
        lat = Text("SLOG lat ")
        lat.append_text(fmt.colored(z.get("slog_lat_ns"), "ns", "slog_latency", raw))
        parts.append(lat)
    else:
        parts.append(Text("no SLOG (log vdev)", style="dim"))
    return _lines(parts, width)


# ------------------------------------------------------------------------------------------------ workload
def workload(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    w = state.workload()
    fio = state.fio()
    parts: List[Text] = [heading("workload", width)]
    status = status_line(state, "workload", opts)
    pgbench = not (w.get("tps") is None and w.get("run_tps") is None and w.get("pg_hit_pct") is None)
    if not pgbench and not fio:
        parts.append(status if status is not None else Text("no workload (--soak/--attach)", style="dim"))
        return _lines(parts, width)
    if status is not None:
        parts.append(status)
    raw = opts.raw
    lo, hi = state.window()
    if pgbench:
        marks = [e.ts for e in state.window_events((EventKind.RUN_START, EventKind.RUN_END))]
        tps_key = "tps" if w.get("tps") is not None else "run_tps"
        line = Text(f"{'TPS' if tps_key == 'tps' else 'run'} {fmt.num(w.get(tps_key), 'x', raw):>6} ")
        line.append_text(fmt.sparkline(state.spark("workload", tps_key), max(3, width - len(line) - 1), lo, hi,
                                       marks))
        parts.append(line)
        lat_key = "latency_avg_ms" if tps_key == "tps" else "run_latency_ms"
        line = Text(f"lat {fmt.num(w.get(lat_key), 'ms', raw):>6} ")
        line.append_text(fmt.sparkline(state.spark("workload", lat_key), max(3, width - len(line) - 1), lo, hi,
                                       marks))
        parts.append(line)
        pg = Text("PG buf hit ")
        pg.append_text(fmt.colored(w.get("pg_hit_pct"), "%", "pg_hit_pct", raw))
        if not compact:
            pg.append(" ")
            pg.append_text(fmt.sparkline(state.spark("workload", "pg_hit_pct"), max(3, width - len(pg) - 1), lo,
                                         hi))
        parts.append(pg)
        if not fio:
            parts.append(Text(f"runs ended in window: {int(w.get('runs') or 0)}", style="dim", no_wrap=True))
    if fio:
        parts.extend(fio_rows(state, fio, opts, width, compact, room=FIO_ROWS_COMPACT - 3 * pgbench if compact
                              else FIO_ROWS))
    return _lines(parts, width)


#: fio jobs shown at most (the newest; the others are counted): wide two lines each, compact one
FIO_ROWS = 6
FIO_ROWS_COMPACT = 4


def fio_rows(state: TopState, rows: List[FioRow], opts: ViewOptions, width: int, compact: bool,
             room: int) -> List[Text]:
    """fio jobs: IOPS now and over the window, and the latency band (p50..p99, p99.9, max) on a shared log-ms
    scale; a job whose last interval is over three intervals old (ended) is dimmed."""
    raw = opts.raw
    lo, hi = state.window()
    room = max(1, room)
    shown = sorted(sorted(rows, key=lambda r: r.last)[-room:], key=rows.index)
    scale = fmt.decades([v for r in shown for v in r.pct_ms.values()])
    now = state.now if state.now is not None else 0.0
    out: List[Text] = []
    if not compact:
        head = Text(f"fio IOPS; clat {fmt.ms(10.0 ** scale[0])}..{fmt.ms(10.0 ** scale[1])} log ", style="bold",
                    no_wrap=True, overflow="ellipsis")
        for (ch, style), what in zip(fmt.BAND, ("p50-p99 ", "p99.9 ", "max")):
            head.append(ch, style=style)
            head.append(what, style="dim")
        out.append(head)
    # the numbers beside each band, padded to one width so that every band has the same scale and cells
    nums = {}
    for r in shown:
        p50, p99 = fmt.ms(r.pct_ms.get("p50"), raw), fmt.ms(r.pct_ms.get("p99"), raw)
        nums[r.key] = [f" {p50}/{p99}"] if compact else [f" p50 {p50} p99 {p99}", f" 99.9 {fmt.ms(r.pct_ms.get('p999'), raw)} "
                                                         f"max {fmt.ms(r.pct_ms.get('max'), raw)}"]
    cols = [max(len(n[i]) for n in nums.values()) for i in range(len(next(iter(nums.values()))))]
    if not compact and width - 2 - sum(cols) < 12:
        cols = cols[:1]  # p99.9 and max still show in the band's shading
    for r in shown:
        ended = now - r.last > 3 * max(opts.interval, 1.0)
        text = "".join(n.ljust(c) for n, c in zip(nums[r.key], cols))
        if compact:
            line = Text(f"{r.job + ' ' + r.direction[:1]:<7.7} {fmt.num(r.iops, 'x', raw):>5} ",
                        style="dim" if ended else "")
            if width - 14 - len(text) >= 4:  # narrower than that, a band says nothing: the numbers only
                line.append_text(fmt.band(r.pct_ms, width - 14 - len(text), scale))
            line.append(text)
            out.append(line)
            continue
        line = Text(f"{r.job + ' ' + r.direction:<12.12} {fmt.num(r.iops, 'x', raw):>6} ", style="dim" if ended else "")
        line.append_text(fmt.sparkline(state.spark(r.key, "iops"), max(3, width - len(line) - 1), lo, hi, lo=0))
        out.append(line)
        band = Text("  ")
        band.append_text(fmt.band(r.pct_ms, max(4, width - 2 - len(text)), scale))
        band.append(text, style="dim" if ended else "")
        out.append(band)
    if len(rows) > len(shown):
        out.append(Text(f"+{len(rows) - len(shown)} older fio jobs in the window", style="dim", no_wrap=True))
    return out


# ------------------------------------------------------------------------------------------------ timeline
TIMELINE_LABEL = 13
TIMELINE_RIGHT = 11


def timeline(tl: Optional[tl_mod.Timeline], cursor: Optional[float], opts: ViewOptions, width: int,
             live: bool, extent: Optional[Tuple[float, float]] = None, window_s: float = 0.0) -> Text:
    """The whole run: one row per series (blocks scaled from 0, or 0..100 %, to the row's max, shown at its right),
    then an axis with run boundaries (``|``), marks (``M``), the cursor (``▲``) and the window the other panels
    show (``━``, the ``window_s`` before the cursor, or before the end live), and the time at both ends.
    ``extent``: the time the row spans (replay: the recording's first to last reading), else the buckets'."""
    parts: List[Text] = []
    span = tl.span() if tl is not None else None
    if tl is None or span is None:
        parts.append(heading("timeline", width))
        parts.append(Text("reading the recording..." if tl is None else "no data yet", style="dim"))
        return _lines(parts, width)
    start, end = span if extent is None else (min(extent[0], span[0]), max(extent[1], span[1]))
    if live:  # the filling bucket is left out until it closes
        end -= tl.every
    w = max(4, width - TIMELINE_LABEL - TIMELINE_RIGHT - 1)
    parts.append(heading("timeline", width, f"whole run {fmt.clock(end - start)}, {fmt.window(tl.every)} buckets"))
    if end <= start:
        parts.append(Text("collecting the first bucket...", style="dim"))
        return _lines(parts, width)

    def cell(ts: float) -> int:
        return min(w - 1, max(0, int((ts - start) / (end - start) * w)))

    marks = {cell(e.ts): e for e in tl.events if start <= e.ts <= end + tl.every}
    at = cell(cursor) if cursor is not None else None
    for label, unit, fixed, vals in tl_mod.rows(tl, start, end, w, closed_only=live):
        present = [v for v in vals if v is not None]
        lo, hi = fixed if fixed is not None else (0.0, max(present))
        scale = 7.999 / (hi - lo) if hi > lo else 0.0
        blocks = "".join(" " if v is None else fmt.BLOCKS[max(0, min(7, int((v - lo) * scale)))] for v in vals)
        line = Text(f"{label:<{TIMELINE_LABEL}.{TIMELINE_LABEL}}")
        line.append(blocks, style="cyan")  # one span a row, then the few marked cells: cheap to build and to draw
        for i in marks:
            line.stylize("bold magenta", TIMELINE_LABEL + i, TIMELINE_LABEL + i + 1)
        if at is not None:
            line.stylize("reverse", TIMELINE_LABEL + at, TIMELINE_LABEL + at + 1)
        right = f" max {fmt.num(max(present), unit, opts.raw)}"
        line.append(f"{right:>{TIMELINE_RIGHT + 1}.{TIMELINE_RIGHT + 1}}", style="dim")
        parts.append(line)
    if len(parts) == 1:
        parts.append(Text("no TPS, L2ARC or data vdev reads recorded", style="dim"))
    ticks = ["─"] * w
    if window_s > 0:
        upto = cursor if cursor is not None else end
        for i in range(cell(upto - window_s), cell(upto) + 1):
            ticks[i] = "━"
    for i, ev in marks.items():
        ticks[i] = "M" if ev.kind == EventKind.MARK else "|"
    if at is not None:
        ticks[at] = "▲"
    axis = Text(" " * TIMELINE_LABEL)
    axis.append("".join(ticks), style="dim")
    for i in marks:
        axis.stylize("bold magenta", TIMELINE_LABEL + i, TIMELINE_LABEL + i + 1)
    if at is not None:
        axis.stylize("bold yellow", TIMELINE_LABEL + at, TIMELINE_LABEL + at + 1)
    parts.append(axis)
    left = time.strftime("%H:%M:%S", time.gmtime(start)) + "Z"
    right = ("now " if live else "") + f"+{fmt.clock(end - start)}"
    where = f"cursor +{fmt.clock(cursor - start)}" if cursor is not None and not live else ""
    gap = max(1, w - len(left) - len(right))
    foot = f"{left}{where:^{gap}}{right}" if len(where) + 2 <= gap else f"{left}{' ' * gap}{right}"
    parts.append(Text(" " * TIMELINE_LABEL + foot, style="dim"))
    return _lines(parts, width)


# ------------------------------------------------------------------------------------------------ read path
def read_path(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    now, win = state.read_path()
    parts: List[Text] = [heading("readpath", width)]
    if now is None and win is None:
        parts.append(Text("no ARC/PostgreSQL read counters yet", style="dim"))
        return _lines(parts, width)
    widths = [7, 7]
    parts.append(_columns([Text(""), Text("now"), Text(fmt.window(state.window_s))], 7, widths, "bold"))
    for label, attr in (("PG buf", "pg_buffers"), ("ARC", "arc"), ("L2ARC", "l2arc"), ("disks", "disks")):
        a = getattr(now, attr) if now else None
        b = getattr(win, attr) if win else None
        if a is None and b is None:
            continue
        th = "disk_share_pct" if attr == "disks" else None
        parts.append(_columns([Text(label), fmt.colored(a, "%", th), fmt.colored(b, "%", th)], 7, widths))
    return _lines(parts, width)


# ------------------------------------------------------------------------------------------------ findings
def findings(report, state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    """``report``: a :class:`zfsmon.analysis.findings.Report` (computed by the app every few seconds) or None."""
    verdict = cache_verdict(report, state)
    parts: List[Text] = [heading("findings", width, verdict)]
    eggs = state.goose_eggs()
    if eggs:
        parts.append(Text(f"goose eggs: {', '.join(sorted(v.leaf for v in eggs))}", style=thresholds.GOOSE_STYLE,
                          no_wrap=True, overflow="ellipsis"))
    if report is None:
        parts.append(Text("collecting...", style="dim"))
        return _lines(parts, width)
    for f in report.findings:
        if f.topic == "data":
            continue
        if f.topic == "correlation":
            n = f.numbers
            r, lag = n.get("spearman"), n.get("best_lag_s")
            words = DRIVER_WORDS.get(str(n.get("with")), str(n.get("with")))
            text = f"TPS~{words}: r {r:+.2f}" if isinstance(r, float) else f"TPS~{words}: {n.get('note', '-')}"
            if isinstance(lag, (int, float)) and round(lag):  # whole seconds: the step is a measured ~1.001 s
                text += f" lag {'-' if lag < 0 else '+'}{fmt.age(abs(round(lag)))}"
            parts.append(Text(text, no_wrap=True, overflow="ellipsis"))
        elif f.topic == "warmup_correlation":
            per = f.numbers.get("with") or {}
            rs = sorted(((d["spearman"], w) for w, d in per.items() if isinstance(d, dict)  # type: ignore[union-attr]
                         and isinstance(d.get("spearman"), float)), key=lambda x: -abs(x[0]))
            parts.append(Text("warm-up: TPS~" + ", ".join(f"{DRIVER_WORDS.get(w, w)} {r:+.2f}" for r, w in rs),
                              no_wrap=True, overflow="ellipsis"))
        else:
            parts.append(Text(f.text, no_wrap=compact, overflow="ellipsis"))
    if len(parts) == 1 + bool(eggs):
        parts.append(Text("nothing to say yet", style="dim"))
    return _lines(parts, width)


def cache_verdict(report, state: TopState) -> str:
    """decaying (the findings say TPS fell), warming up (TPS still climbing at the end), warm (a warm-up that
    reached its plateau), steady (TPS without a warm-up); "" without a workload."""
    if report is None:
        return ""
    if report.topic("decay"):
        return "decaying"
    tps = [v for _, v in state.spark("workload", "tps")] or [v for _, v in state.spark("workload", "run_tps")]
    k = max(2, len(tps) // 10)
    if len(tps) >= 2 * k + 2:
        late, before = sorted(tps[-k:])[k // 2], sorted(tps[-2 * k:-k])[k // 2]
        if before > 0 and late > before * 1.05:
            return "warming up"
    warm = report.topic("warmup")
    if warm and "tps_plateau" in warm[0].numbers:
        return "warm"
    if tps:
        return "steady"
    return ""


# ------------------------------------------------------------------------------------------------ header
@dataclass
class HeaderInfo:
    host: str = ""
    platform: str = ""
    zfs: str = ""
    recording: str = ""  # path, or "" for --no-record
    mode: str = "live"  # live | replay
    started: float = 0.0
    serving: str = ""  # HOST:PORT `top --listen` serves /metrics on, or ""


def header(state: TopState, info: HeaderInfo, opts: ViewOptions, width: int, paused: bool,
           replay_note: str = "") -> Text:
    if info.mode == "replay":
        badge, bstyle = "REPLAY", "bold white on blue"
    elif paused:
        badge, bstyle = "PAUSED", "bold black on yellow"
    else:
        badge, bstyle = "LIVE", "bold white on green"
    t = Text()
    t.append(f" {badge} ", style=bstyle)
    t.append(f" {info.host}", style="bold")
    about = f"  {info.platform}  {info.zfs}"
    serving = f"  metrics {info.serving}" if info.serving else ""
    room = width - len(t.plain) - len(serving)
    if serving and len(about) > room:  # the address whole: the platform's text gives way
        about = about[:max(0, room - 1)] + "…"
    t.append(about, style="")
    t.append(serving)
    t.append("\n")
    pools = state.pools()
    shown = " ".join(f"[{p}]" if p == opts.pool else p for p in pools) or "-"
    t.append(f"pools {shown}  ")
    if info.mode == "replay":
        t.append(replay_note)
    else:
        elapsed = (opts.now or time.time()) - info.started if info.started else 0.0
        t.append(f"up {fmt.clock(elapsed)}  ")
    t.append(f"every {opts.interval:g}s  window {fmt.window(state.window_s)}  ")
    rec = info.recording or "not recording"
    room = max(10, width - len(t.plain.split("\n")[-1]) - 5)
    if len(rec) > room:
        rec = "…" + rec[-(room - 1):]
    t.append(f"rec {rec}", style="dim" if not info.recording else "")
    return t
