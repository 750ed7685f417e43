"""What every panel shares: its declaration (:class:`Panel`), the view options, its heading and status lines,
lines cut at its width, table rows.

A panel module declares ``PANEL = register(Panel(...))``: its id and title, the entity kinds it shows (the sources
it shows are those whose ``SOURCE`` record feeds these kinds: :func:`sources_of`) and how it renders a
:class:`Frame`. Renders are pure functions of (state, options, size): the widgets in :mod:`zfsmon.views.top.app`
only place them. Every panel starts with its heading line, so a panel that has nothing (a source missing or
failing) still says what it is and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

from rich.text import Span, Text

from zfsmon.model import Event, Kind
from zfsmon.sources import registry
from zfsmon.views import thresholds
from zfsmon.views.top import fmt
from zfsmon.views.top.folds import Fold
from zfsmon.views.top.state import TopState

HEADING = "bold reverse"


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
    theme: str = thresholds.DEFAULT_THEME  # the levels' colours (:data:`zfsmon.views.thresholds.THEMES`)


@dataclass
class Frame:
    """What a panel is drawn from: the state and the view's options, the panel's width, whether it is in the narrow
    layout's grid (``compact``), and what the app holds beside the state (the findings report, the whole-run
    timeline and the replay cursor, the header's facts)."""

    state: TopState
    opts: ViewOptions
    width: int
    compact: bool = False
    report: Any = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One panel: ``id`` (its widget's id is ``widget``, or the id), ``title`` (its heading), the entity ``kinds``
    it shows, and ``render`` (a :class:`Frame` to its text); ``dated_by``, which of them say how old its figures
    are; ``fold``, the class of what it keeps of the samples beyond the state's shared part (its series, its
    per-interval counts: :mod:`zfsmon.views.top.folds`), which every state makes one of and feeds, and its render
    reads with ``state.fold(...)``. ``place``: ``side`` panels are the right column (under the tree, in a grid,
    when narrow: ``span`` cells of it); the app places the others (``tree``, ``timeline``, ``header``) itself."""

    id: str
    title: str
    kinds: Tuple[Kind, ...]
    render: Callable[[Frame], Text]
    place: str = "side"
    span: int = 1
    widget: str = ""
    #: the kinds whose newest sample dates its figures (empty: all of ``kinds``)
    dated_by: Tuple[Kind, ...] = ()
    #: its fold (None: it draws from the state's shared part only)
    fold: Optional[Type[Fold]] = None

    @property
    def widget_id(self) -> str:
        return self.widget or self.id

    @property
    def sources(self) -> Tuple[str, ...]:
        """The sources whose records it shows: those whose ``SOURCE`` record feeds one of its kinds."""
        return sources_of(self.kinds)


#: the names of the sources whose ``SOURCE`` record feeds one of some kinds (:func:`zfsmon.sources.registry.feeding`)
sources_of = registry.feeding


#: every panel declared, by id (each module's ``PANEL``; the package lists them in screen order)
DECLARED: Dict[str, Panel] = {}


def register(panel: Panel) -> Panel:
    """Declare a panel (its module's ``PANEL``); two with one id, or a fold of another panel's id, are an error."""
    if panel.id in DECLARED:
        raise ValueError(f"panel {panel.id} declared twice")
    if panel.fold is not None and panel.fold.id != panel.id:
        raise ValueError(f"panel {panel.id} declares the fold of panel {panel.fold.id}")
    DECLARED[panel.id] = panel
    return panel


def heading(area: str, width: int, extra: str = "") -> Text:
    title = DECLARED[area].title
    t = Text(f" {title} ", style=HEADING)
    if extra and len(title) + len(extra) + 3 <= width:
        t.append(" " + extra, style="dim")
    return t


def error_line(ev: Event, now: Optional[float], prefix: str = "") -> Text:
    """A source's error with its age (before its text, which may be cut at the panel's width)."""
    age = f" {fmt.age(max(0.0, now - ev.ts))} ago" if now is not None else ""
    return Text(f"{prefix}error{age}: {ev.text}", style="bold red")


def status_lines(state: TopState, area: str, opts: ViewOptions) -> List[Text]:
    """Each of the panel's failing sources' errors with its age, or how stale its data is: the panel says so
    instead of freezing."""
    p = DECLARED[area]
    st = state.staleness(p.dated_by or p.kinds, p.sources)
    now = opts.now if opts.now is not None else state.now
    lag = st.stale_lag(now, opts.interval)
    if st.errors:
        # the rows under it still hold the last figures: say how old they are (before the error, which may be cut)
        age = f"stale: last data {fmt.age(lag)} ago; " if lag is not None else ""
        return [error_line(ev, now, age if i == 0 else "") for i, ev in enumerate(st.errors)]
    if st.last is None:
        return [Text("no data from this source", style="dim")]
    if lag is not None:
        return [Text(f"stale: last data {fmt.age(lag)} ago",
                     style=thresholds.style("stale", lag / st.every(opts.interval), opts.theme))]
    return []


def error_lines(state: TopState, area: str, opts: ViewOptions) -> List[Text]:
    """The panel's failing sources' errors, with their ages (nothing about stale or missing data)."""
    p = DECLARED[area]
    if not state.failing(p.sources):
        return []
    return status_lines(state, area, opts)


def status_line(state: TopState, area: str, opts: ViewOptions) -> Optional[Text]:
    """The first of :func:`status_lines` (None: nothing to say)."""
    lines = status_lines(state, area, opts)
    return lines[0] if lines else None


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



