"""What every panel shares: the view options, its heading and status line, lines cut at its width, table rows.

Pure functions of (state, options, size): the widgets in :mod:`zfsmon.views.top.app` only place them. Every panel
starts with its heading line, so a panel that has nothing (a source missing or failing) still says what it is and
why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from rich.text import Span, Text

from zfsmon.views import thresholds
from zfsmon.views.top import fmt
from zfsmon.views.top.state import TopState

HEADING = "bold reverse"
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
