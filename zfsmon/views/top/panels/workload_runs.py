"""The workload: pgbench's TPS, latency and PostgreSQL's buffer hits, and fio's jobs with their latency bands."""

from __future__ import annotations

from typing import List

from rich.text import Text

from zfsmon.model import EventKind, Kind
from zfsmon.views.top import fmt
from zfsmon.views.top.folds import FioRow, WorkloadFold
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _lines, heading, register, status_lines
from zfsmon.views.top.state import TopState


def workload(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    fold = state.fold(WorkloadFold)
    w, fio = fold.values(state), fold.rows(state)
    parts: List[Text] = [heading("workload", width)]
    status = status_lines(state, "workload", opts)
    pgbench = not (w.get("tps") is None and w.get("run_tps") is None and w.get("pg_hit_pct") is None)
    if not pgbench and not fio:
        parts.extend(status or [Text("no workload (--soak/--attach)", style="dim")])
        return _lines(parts, width)
    parts.extend(status)
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
        pg.append_text(fmt.colored(w.get("pg_hit_pct"), "%", "pg_hit_pct", raw, opts.theme))
        if w.get("pg_hit_pct") is not None:
            pg.append(f" of {fmt.num(w.get('pg_blocks'), 'ops', raw)}")  # the blocks asked for in the interval
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


def _render(f: Frame) -> Text:
    return workload(f.state, f.opts, f.width, f.compact)


PANEL = register(Panel("workload", "Workload", (Kind.WORKLOAD,), _render, fold=WorkloadFold))
