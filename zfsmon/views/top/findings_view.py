"""The findings view (``f``): every finding of the window whole, wrapped to the screen, with the numbers behind it
and the moments it speaks of, each a place to jump to.

The findings panel gives each finding one line, cut at its width; a finding is often a paragraph (the goose-egg
one names every leaf and ends with its advice). Here each is a wrapped paragraph, then its ``numbers`` (what
``zfsmon analyze --json`` gives) as indented lines, then its ``moments`` (:class:`zfsmon.analysis.findings.Finding`):
in replay, ``enter`` on one moves the cursor there (as ``[``/``]`` do to an event); live, it says when that was.
Names in a finding come from the input: every line is a ``Text`` (never markup) with control characters escaped
(:func:`zfsmon.views.top.fmt.inert`).
"""

from __future__ import annotations

import time
from typing import Iterator, List, Mapping, Optional, Sequence, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from zfsmon import units
from zfsmon.analysis.findings import Finding, Report, duration
from zfsmon.errors import printable
from zfsmon.views.top import fmt

#: a finding's numbers shown at most in this many lines (a 256-leaf pool's per-leaf tallies; ``zfsmon analyze
#: --json`` has them all)
MAX_NUMBER_LINES = 40
#: nested numbers deeper than this are summarised, not walked
MAX_DEPTH = 4

KEYS_LIVE = "↑/↓ pgup/pgdn scroll  n/N next/previous moment  enter: when was it  esc/q/f close"
KEYS_REPLAY = "↑/↓ pgup/pgdn scroll  n/N next/previous moment  enter: jump there  esc/q/f close"


def stamp(ts: float) -> str:
    """An epoch time as the header shows the replay cursor's (UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


def _scalar(key: str, v: object) -> str:
    """A number as a reader wants it: sizes and durations in words beside the exact figure."""
    if v is None:
        return units.MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        exact = f"{v:,.0f}" if v.is_integer() or abs(v) >= 1000 else f"{v:.4g}"
        if key.endswith("_b") and abs(v) >= 1024:
            return f"{units.human_size(v)} ({exact})"
        if key.endswith("_b_per_s") and abs(v) >= 1024:
            return f"{units.human_size(v)}/s ({exact})"
        if key.endswith("_s") and not key.endswith("_per_s") and abs(v) >= 120:
            return f"{duration(v)} ({exact})"
        return exact
    return printable(v)


def number_lines(numbers: Mapping[str, object], depth: int = 0) -> Iterator[str]:
    """``numbers`` as indented ``key: value`` lines, nested dicts under their key, a list of dicts a line per item.
    Keys may be names from the input (leaves, fio jobs): shown through :func:`printable`."""
    pad = "  " * depth
    for key, v in numbers.items():
        k = printable(key)
        if isinstance(v, Mapping):
            if depth >= MAX_DEPTH:
                yield f"{pad}{k}: {len(v)} entries"
                continue
            yield f"{pad}{k}:"
            yield from number_lines(v, depth + 1)
        elif isinstance(v, (list, tuple)):
            if all(not isinstance(x, (Mapping, list, tuple)) for x in v):
                yield f"{pad}{k}: " + (", ".join(_scalar(k, x) for x in v) or units.MISSING)
                continue
            yield f"{pad}{k}:"
            for x in v:
                if isinstance(x, Mapping):
                    yield f"{pad}  - " + ", ".join(f"{printable(a)} {_scalar(str(a), b)}" for a, b in x.items()
                                                  if not isinstance(b, (Mapping, list, tuple)))
                else:
                    yield f"{pad}  - {_scalar(k, x)}"
        else:
            yield f"{pad}{k}: {_scalar(k, v)}"


def capped(lines: Iterator[str], limit: int = MAX_NUMBER_LINES) -> List[str]:
    """The first ``limit`` lines, and how many more there were (the rest is counted, not kept)."""
    out: List[str] = []
    more = 0
    for line in lines:
        if len(out) < limit:
            out.append(line)
        else:
            more += 1
    if more:
        out.append(f"... {more} more lines (zfsmon analyze --json has them all)")
    return out


def moments(report: Report) -> List[Tuple[Finding, str, float]]:
    """Every finding's moments in report order: (finding, words, epoch seconds)."""
    return [(f, words, ts) for f in report.findings for words, ts in f.moments.items()]


class Moment(Static, can_focus=True):
    """A moment a finding speaks of: chosen with ``n``/``N`` (or a click), ``enter`` jumps there."""

    DEFAULT_CSS = "Moment { padding: 0 0 0 2; } Moment:focus { text-style: reverse bold; }"

    def __init__(self, words: str, ts: float, line: Text) -> None:
        super().__init__(fmt.inert(line), classes="moment")
        self.words, self.ts = words, ts

    def on_click(self) -> None:
        screen = self.screen
        if isinstance(screen, FindingsScreen):
            screen.select(self)
            screen.choose(self)


class FindingsScreen(ModalScreen):
    """Every finding of ``report``, whole. ``origin``: the recording's start (replay: a moment is also said as its
    offset into the recording, as the header says the cursor's), None live; ``now``: the time live (a moment is
    said as its age). Dismissed with the chosen moment's (words, ts) in replay, None otherwise."""

    DEFAULT_CSS = """
    FindingsScreen { align: center middle; }
    #findings-view { width: 100%; height: 100%; background: $panel; }
    #findings-title { height: auto; background: $boost; text-style: bold; }
    #findings-body { height: 1fr; scrollbar-size-vertical: 1; }
    .finding { margin: 1 0 0 0; }
    .numbers { padding: 0 0 0 2; color: $text-muted; }
    #findings-keys { height: 1; background: $boost; }
    """
    BINDINGS = [
        Binding("escape,q,f", "close", "close", show=False),
        Binding("n", "moment(1)", "next moment", show=False),
        Binding("N", "moment(-1)", "previous moment", show=False),
        Binding("enter", "choose", "jump there", show=False),
    ]

    def __init__(self, report: Report, origin: Optional[float] = None, now: Optional[float] = None) -> None:
        super().__init__()
        self.report = report
        self.origin, self.now = origin, now
        self.live = origin is None
        #: the chosen moment's place among :meth:`shown_moments`, kept here: focus moves a moment later, and keys
        #: that come faster (a held ``n``) must each go one further
        self.at: Optional[int] = None

    def moment_line(self, words: str, ts: float) -> Text:
        """``-> 2026-11-27 10:23:05Z (01:35:02 into the recording): TPS reached 90% of the plateau``."""
        if self.origin is not None:
            where = f"{fmt.clock(ts - self.origin)} into the recording"
        elif self.now is not None:
            where = f"{fmt.age(max(0.0, self.now - ts))} ago"
        else:
            where = ""
        t = Text("-> ", style="bold")
        t.append(stamp(ts), style="bold")
        t.append(f" ({where}): " if where else ": ")
        t.append(printable(words))
        return t

    def heading(self) -> Text:
        r = self.report
        t = Text("Findings", style="bold")
        if r.start is not None and r.end is not None:
            t.append(f" over {duration(r.end - r.start)}: {stamp(r.start)} to {stamp(r.end)}")
        t.append(f"  ({len(r.findings)} findings, {len(moments(r))} moments)")
        return t

    def compose(self) -> ComposeResult:
        with Vertical(id="findings-view"):
            yield Static(fmt.inert(self.heading()), id="findings-title")
            with VerticalScroll(id="findings-body"):
                for i, f in enumerate(self.report.findings):
                    yield Static(fmt.inert(Text(f"{i + 1}. {printable(f.text)}")), classes="finding")
                    nums = capped(number_lines(f.numbers))
                    if nums:
                        yield Static(fmt.inert(Text("\n".join(nums))), classes="numbers")
                    for words, ts in f.moments.items():
                        yield Moment(words, ts, self.moment_line(words, ts))
            yield Static(Text(KEYS_LIVE if self.live else KEYS_REPLAY, no_wrap=True, overflow="ellipsis"),
                         id="findings-keys")

    def on_mount(self) -> None:
        self.query_one("#findings-body", VerticalScroll).focus()

    def shown_moments(self) -> Sequence[Moment]:
        return list(self.query(Moment))

    def action_moment(self, direction: int) -> None:
        """Focus the next (1) or previous (-1) moment, scrolled into view."""
        ms = self.shown_moments()
        if not ms:
            self.app.notify("no finding here speaks of a moment", markup=False)
            return
        i = self.at if self.at is not None else (-1 if direction > 0 else 0)
        self.select(ms[(i + direction) % len(ms)])

    def select(self, m: Moment) -> None:
        """``m`` becomes the chosen moment, focused and scrolled into view."""
        self.at = self.shown_moments().index(m)
        m.focus()
        m.scroll_visible(animate=False)

    def action_choose(self) -> None:
        """``enter``: the chosen moment, if any."""
        ms = self.shown_moments()
        if self.at is None or not ms:
            self.app.notify("choose a moment first (n / N)", markup=False)
            return
        self.choose(ms[self.at])

    def choose(self, m: Moment) -> None:
        """Replay: back to the dashboard with the cursor to go to; live: say when it was."""
        if self.live:
            self.app.notify(self.moment_line(m.words, m.ts).plain[3:], markup=False)
            return
        self.dismiss((m.words, m.ts))

    def action_close(self) -> None:
        self.dismiss(None)
