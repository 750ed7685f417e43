"""The timeline: the whole run in coarse buckets, one row per series, with run boundaries, marks and the cursor."""

from __future__ import annotations

import time
from typing import List, Optional, Tuple

from rich.text import Text

from zfsmon.analysis.restart import is_resumed
from zfsmon.model import EventKind, Kind
from zfsmon.views.top import fmt
from zfsmon.views.top import timeline as tl_mod
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _lines, heading, register

TIMELINE_LABEL = 13
TIMELINE_RIGHT = 19


def timeline(tl: Optional[tl_mod.Timeline], cursor: Optional[float], opts: ViewOptions, width: int,
             live: bool, extent: Optional[Tuple[float, float]] = None, window_s: float = 0.0,
             reading_earlier: bool = False) -> Text:
    """The whole run: one row per series (blocks scaled from 0, or 0..100 %, to the row's max, shown at its right),
    then an axis with run boundaries (``|``; ``┃`` in the window), marks (``M``), where the recording was resumed
    by another process (``R``: after a reboot, the findings say what the restart cost), the cursor (``▲``) and the window
    the other panels show (``━``, the ``window_s`` before the cursor, or before the end live), and the time at both
    ends.
    ``extent``: the time the row spans (replay: the recording's first to last reading), else the buckets'.
    The heading says when the buckets hold the recording's earlier run(s) (live ``top`` writing on into a
    recording: :meth:`~zfsmon.views.top.timeline.Timeline.merge`), or, ``reading_earlier``, that they are being
    read."""
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
    held = " incl. earlier run(s)" if tl.earlier else ""
    note = f"whole run {fmt.clock(end - start)}{held}, {fmt.window(tl.every)} buckets"
    parts.append(heading("timeline", width, note + (", reading earlier run(s)..." if reading_earlier else "")))
    if end <= start:
        parts.append(Text("collecting the first bucket...", style="dim"))
        return _lines(parts, width)

    def cell(ts: float) -> int:
        return min(w - 1, max(0, int((ts - start) / (end - start) * w)))

    events = {cell(e.ts): e for e in tl.events if start <= e.ts <= end + tl.every}
    # a user's marks are coloured, in the rows and on the axis; run boundaries are only the axis's "|" (a loop soak
    # has one in nearly every cell: coloured, they made the rows one colour)
    marks = [i for i, e in events.items() if e.kind == EventKind.MARK]
    # (from the events themselves: a run boundary in the same cell must not hide a resume)
    resumed = sorted({cell(e.ts) for e in tl.events if is_resumed(e) and start <= e.ts <= end + tl.every})
    at = cell(cursor) if cursor is not None else None
    for name, label, unit, fixed, vals in tl_mod.rows(tl, start, end, w, closed_only=live):
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
        top = max(present)
        right = f" max {fmt.num(top, unit, opts.raw)}"
        counts = tl.count_cells(name, start, end, w, closed_only=live)
        if counts is not None:  # the reads behind the ratio's highest cell
            right += f" of {fmt.num(counts[vals.index(top)], 'ops', opts.raw)}"
        line.append(f"{right:>{TIMELINE_RIGHT + 1}.{TIMELINE_RIGHT + 1}}", style="dim")
        parts.append(line)
    if len(parts) == 1:
        parts.append(Text("no TPS, L2ARC or data vdev reads recorded", style="dim"))
    ticks = ["─"] * w
    if window_s > 0:
        upto = cursor if cursor is not None else end
        for i in range(cell(upto - window_s), cell(upto) + 1):
            ticks[i] = "━"
    for i in events:  # in the window, heavy as its line is: both stay visible where every cell has a boundary
        ticks[i] = "┃" if ticks[i] == "━" else "|"
    for i in marks:
        ticks[i] = "M"
    for i in resumed:
        ticks[i] = "R"
    if at is not None:
        ticks[at] = "▲"
    axis = Text(" " * TIMELINE_LABEL)
    axis.append("".join(ticks), style="dim")
    for i in marks:
        axis.stylize("bold magenta", TIMELINE_LABEL + i, TIMELINE_LABEL + i + 1)
    for i in resumed:
        axis.stylize("bold", TIMELINE_LABEL + i, TIMELINE_LABEL + i + 1)
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


def _render(f: Frame) -> Text:
    x = f.extra
    return timeline(x.get("timeline"), x.get("cursor"), f.opts, f.width, bool(x.get("live")), x.get("extent"),
                    float(x.get("window_s", 0.0)), bool(x.get("reading_earlier")))


#: TPS (or fio's IOPS), the L2ARC and the data vdevs' reads over the whole run
PANEL = register(Panel("timeline", "Timeline", (Kind.WORKLOAD, Kind.L2ARC, Kind.POOL, Kind.VDEV), _render,
                       place="timeline"))
