"""The dashboard application: lays out the panels, handles keys, and pulls records without ever waiting for them.

Live mode: the sampler (another thread) hands record batches to
:meth:`LiveFeed.sink`; a timer here drains them, so a slow or hung source
only makes its panel stale. Replay mode: a :class:`ReplayCursor` reads the
window at the cursor from the recording. Marks go to an ``on_mark`` callable
(the recorder, in ``zfsmon top``): this module writes no recording itself.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Callable, Deque, Iterable, List, Optional, Sequence, Tuple

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.filter import LineFilter, Monochrome, NoColor
from textual.geometry import Size
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from zfsmon import gcpolicy, outfile
from zfsmon.errors import UserError, printable
from zfsmon.model import Event, EventKind, Record, Tick, joined
from zfsmon.queues import drain
from zfsmon.views import csv_export as export
from zfsmon.views import thresholds
from zfsmon.views.top import fmt, panels
from zfsmon.views.top.findings_view import FindingsScreen, stamp
from zfsmon.views.top.lines import Lines
from zfsmon.views.top.replay import ReplayCursor
from zfsmon.views.top.state import SORTS, WINDOWS, TopState
from zfsmon.views.top.timeline import Timeline, read_timeline

#: below this the screen says so instead of drawing a garbled dashboard: at 80x24 every panel's heading and lines
#: fit (the vdev tree keeps four rows, the side grid its six lines a cell); narrower, the side cells cut the ARC's
#: sizes and the hit ratios' counts, lower, the tree has no rows left
MIN_SIZE = (80, 24)
#: below this width the side panels go under the tree in a compact grid
NARROW = 120
#: live batches (one per sampler tick) held back while paused, the oldest let go first (they are recorded anyway):
#: a pause of 15 minutes at a 1 s interval keeps every one
MAX_HELD = 900
#: and records held at most, whatever the pool's size: what a pause holds in memory, about 125 MB at the 625 bytes
#: a record of bench_top's pool takes (its 64 leaves make 143 records a tick, so MAX_HELD binds: 15 minutes; 256
#: leaves make ~530, 6 minutes)
MAX_HELD_RECORDS = 200_000
FINDINGS_EVERY_S = 30.0
#: live, the findings take at most this share of one core: a run that took 0.45 s of CPU comes every 45 s instead
#: of 30, so a large pool's findings cannot crowd out the drawing (docs/performance.md, "Dashboard", gives a 64-leaf
#: run's cost; the goose-egg line is judged every interval regardless)
FINDINGS_CPU_SHARE = 0.01


def findings_every(cpu_s: float) -> float:
    """Seconds between live findings runs when a run takes ``cpu_s`` of CPU: :data:`FINDINGS_EVERY_S`, or longer
    where that pace would take more than :data:`FINDINGS_CPU_SHARE` of a core."""
    return max(FINDINGS_EVERY_S, cpu_s / FINDINGS_CPU_SHARE)


@dataclass(frozen=True)
class Key:
    keys: str  # Textual key names, comma separated
    shown: str  # as the help screen shows it
    action: str
    help: str
    modes: str = "live,replay"
    title: str = ""  # its name in the command palette ("": not there, as a second key for one action)


KEYS: List[Key] = [
    Key("q", "q", "quit", "quit (the recording is closed cleanly)", title="Quit"),
    Key("p", "p", "pause", "pause/resume the display (live: recording goes on; replay: play/stop)",
        title="Pause / resume (replay: play / stop)"),
    Key("space,m", "space / m", "mark", "mark an event, with a note, into the recording", "live", "Mark"),
    Key("tab", "tab", "next_pool", "next pool", title="Next pool"),
    Key("plus,equals_sign", "+", "window(1)", "longer time window", title="Window longer"),
    Key("minus", "-", "window(-1)", "shorter time window", title="Window shorter"),
    Key("r", "r", "totals", "vdev tree: rates (per second) vs totals over the window", title="Rates / totals"),
    Key("x", "x", "raw", "raw values vs humanized (K/M/G, µs/ms)", title="Raw / humanized values"),
    Key("s", "s", "sort", "sort vdevs: name, ops, bandwidth, latency", title="Sort vdevs"),
    Key("c", "c", "collapse", "collapse/expand leaves under their vdevs", title="Collapse / expand leaves"),
    Key("up", "up/down", "scroll_tree(-1)", "scroll the vdev tree (pgup/pgdn: a page)", title="Scroll the tree up"),
    Key("down", "down", "scroll_tree(1)", "scroll the vdev tree down", title="Scroll the tree down"),
    Key("pageup", "pgup", "scroll_tree(-10)", "scroll the vdev tree a page up"),
    Key("pagedown", "pgdn", "scroll_tree(10)", "scroll the vdev tree a page down"),
    Key("f", "f", "findings", "findings whole: wrapped, their numbers, their moments (replay: enter jumps there)",
        title="Findings, whole"),
    Key("e", "e", "export", "export the visible window to CSV", title="Export the window to CSV"),
    Key("slash", "/", "filter", "filter vdevs by name (empty: all)", title="Filter vdevs"),
    Key("t", "t", "theme", "colours: default (green/yellow/red) vs colour-blind safe (blue/orange/vermillion)",
        title="Theme: colour-blind safe / default"),
    Key("question_mark", "?", "help", "this help", title="Help: keys and colours"),
    Key("left", "left", "step(-1)", "step back one interval", "replay", "Step back"),
    Key("right", "right", "step(1)", "step forward one interval", "replay", "Step forward"),
    Key("left_square_bracket", "[", "jump(-1)", "previous event (mark, run, error, health change, scan)", "replay", "Previous event"),
    Key("right_square_bracket", "]", "jump(1)", "next event", "replay", "Next event"),
    Key("home", "home", "home", "start of the recording", "replay", "Start of the recording"),
    Key("end", "end", "end", "end of the recording", "replay", "End of the recording"),
    Key("greater_than_sign", ">", "speed(1)", "play faster", "replay", "Play faster"),
    Key("less_than_sign", "<", "speed(-1)", "play slower", "replay", "Play slower"),
]


#: tab is Textual's focus key unless the binding has priority
BINDINGS: List[BindingType] = [Binding(key, k.action, k.help, show=False, priority=key == "tab")
                               for k in KEYS for key in k.keys.split(",")]


#: the command palette's key (Textual's binding), as the help and the key bar show it
PALETTE_KEY = "ctrl+p"


def help_text(mode: str) -> Text:
    t = Text("zfsmon top: keys\n\n", style="bold")
    for k in KEYS:
        if mode in k.modes.split(","):
            t.append(f"  {k.shown:<10}", style="bold")
            t.append(f"{k.help}\n")
    t.append(f"  {PALETTE_KEY:<10}", style="bold")
    t.append("command palette: every action above by name\n")
    t.append("\nValues: a trailing ! is warn, !! crit (also in colour: default green/yellow/red, t for "
             "blue/orange/vermillion; none with NO_COLOR; docs/dashboard.md). A ratio shows what it is of: "
             "99.2% of 3.1M. GOOSE/G!: the device says ~0 while ZFS moves data.\n"
             "* after a name: since-import averages (no interval report yet).\nPress any key to close.",
             style="dim")
    return t


def palette_commands(mode: str, run: Callable[[str], object]) -> List[SystemCommand]:
    """The command palette's entries: each action of ``mode`` with a title, by name, with its key in the help;
    ``run`` runs an action string (``App.run_action``)."""
    return [SystemCommand(k.title, f"{k.shown}: {k.help}", partial(run, k.action)) for k in KEYS
            if k.title and mode in k.modes.split(",")]


class LiveFeed:
    """The hand-over point between the sampler thread and the app: a queue, drained by a timer. Each batch keeps
    the derived values the sampler took (:class:`~zfsmon.model.Tick`): the dashboard derives none."""

    def __init__(self) -> None:
        self.q: queue.SimpleQueue[List[Record]] = queue.SimpleQueue()

    def sink(self, records: List[Record]) -> None:
        self.q.put(Tick(records, records.derived) if isinstance(records, Tick) else list(records))

    def drain_batches(self) -> List[List[Record]]:
        """The batches handed over since the last drain, each as the sampler gave it (one per tick)."""
        return drain(self.q)


class HelpScreen(ModalScreen):
    DEFAULT_CSS = "HelpScreen { align: center middle; } #help { width: 76; height: auto; max-height: 90%; " \
                  "border: round $accent; background: $panel; padding: 0 1; }"

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def compose(self) -> ComposeResult:
        yield VerticalScroll(Static(help_text(self.mode), id="help-text"), id="help")

    def on_key(self, event) -> None:
        event.stop()
        self.dismiss(None)


class AskScreen(ModalScreen):
    """One line of input (a mark's note, a filter)."""

    DEFAULT_CSS = "AskScreen { align: center middle; } #ask { width: 60; height: 5; border: round $accent; " \
                  "background: $panel; }"

    def __init__(self, prompt: str, value: str = "") -> None:
        super().__init__()
        self.prompt, self.value = prompt, value

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Static(self.prompt)
            yield Input(value=self.value, id="ask-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def on_key(self, event) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(None)


class TopApp(App):
    BINDINGS = BINDINGS
    CSS = """
    Screen { layout: vertical; }
    #header { height: 2; }
    #body { height: 1fr; layout: horizontal; }
    #treebox { width: 3fr; height: 100%; scrollbar-size-vertical: 1; }
    #side { width: 2fr; height: 100%; }
    .panel { height: auto; margin: 0 0 1 0; }
    #timeline { height: auto; margin: 1 0 0 0; }
    #body.narrow { layout: vertical; }
    #body.narrow #treebox { width: 100%; height: 1fr; }
    #body.narrow #side { width: 100%; height: 12; layout: grid; grid-size: 3 2; grid-gutter: 0 1; }
    #body.narrow .panel { height: 6; margin: 0; }
    #body.narrow #findings { column-span: 2; }
    #keys { height: 1; background: $boost; }
    #header, #keys { text-wrap: nowrap; text-overflow: ellipsis; }
    #toosmall { height: 1fr; content-align: center middle; display: none; }
    """

    def __init__(self, state: TopState, info: panels.HeaderInfo, interval: float,
                 feed: Optional[LiveFeed] = None, replay: Optional[ReplayCursor] = None,
                 on_mark: Optional[Callable[[str], None]] = None, export_dir: str = ".",
                 clock: Callable[[], float] = time.time, theme: str = thresholds.DEFAULT_THEME,
                 earlier: Optional[Tuple[str, float]] = None) -> None:
        """``earlier``: live, (a recording this process writes on into, the moment it opened it): the readings and
        events the file held from before then are read into the timeline (:meth:`_read_earlier`)."""
        super().__init__()
        self.state = replay.state if replay is not None else state
        self.info = info
        self.feed = feed
        self.replay = replay
        self.on_mark = on_mark
        self.export_dir = export_dir
        self.clock = clock
        if theme not in thresholds.THEMES:
            raise UserError(f"unknown theme {theme!r}: one of {', '.join(thresholds.THEMES)}")
        self.opts = panels.ViewOptions(interval=interval, theme=theme)
        self.paused = False
        self._tree_w = 0  # the tree's width at the last redraw (a scroll draws it again at that width)
        #: batches held while paused (:data:`MAX_HELD`, :data:`MAX_HELD_RECORDS`), and the records in them
        self.held: Deque[List[Record]] = deque()
        self._held_records = 0
        self._held_dropped = False  # a batch was let go in this pause (said once)
        self.report = None
        self._report_at = 0.0
        self.exports: List[str] = []
        self.marks: List[str] = []
        self.redraws = 0
        self._laid_out: Optional[Size] = None
        self._settle_until = 0.0
        self._findings_busy = False
        self._findings_cpu = 0.0  # the last run's CPU seconds (its thread's)
        #: the window (:meth:`_window_key`) whose findings ``report`` holds
        self._report_key: Optional[tuple] = None
        self._shown: dict = {}
        self._findings_lines = 0
        #: the whole run in coarse buckets: live, fed with the records; replay, read from the recording in a worker
        self.timeline: Optional[Timeline] = Timeline() if replay is None else None
        self.earlier = earlier if replay is None else None
        if self.timeline is not None and self.earlier is not None:
            # a run summary of this process reaches back to when it opened the recording, not only to its first
            # reading: as far as replay's would (the earlier runs' readings end before then)
            self.timeline.floor = self.earlier[1]
        self._reading_earlier = False  # the earlier run(s) are being read (the timeline's heading says so)
        self._timeline_key: Optional[tuple] = None
        self._frozen = False  # the heap left out of the cyclic collector's passes (_freeze_heap)
        self._gc = contextlib.ExitStack()  # fewer collections while the app runs (on_mount)

    # ---------------------------------------------------------------------------------------------- setup
    def get_line_filters(self) -> Sequence[LineFilter]:
        """With ``NO_COLOR`` set, no colour at all: Textual itself only turns the colours to greys (``Monochrome``),
        which still sends colour escapes. The meaning stays: marks (``!``, ``!!``), words, bold and reverse."""
        filters = super().get_line_filters()
        if not self.no_color:
            return filters
        return [f for f in filters if not isinstance(f, Monochrome)] + [_NO_COLOR]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """zfsmon's actions, by name (:func:`palette_commands`), instead of Textual's own (its theme changes
        only its widgets' colours; its screenshot writes a file in the current directory)."""
        return palette_commands("replay" if self.replay is not None else "live", self.run_action)

    def check_action(self, action: str, parameters: tuple) -> Optional[bool]:
        """Keys of the other mode do nothing (mark in replay, cursor keys live)."""
        mode = "replay" if self.replay is not None else "live"
        for k in KEYS:
            if k.action.split("(")[0] == action:
                return mode in k.modes.split(",")
        return True

    def compose(self) -> ComposeResult:
        """The panels of the registry (:data:`panels.PANELS`): the header on top, the tree and the timeline under
        it in the tree's box, the side panels in their column."""
        placed = {place: [p for p in panels.PANELS if p.place == place] for place in ("header", "tree", "timeline")}
        for p in placed["header"]:
            yield Static(id=p.widget_id)
        yield Static(id="toosmall")
        with Horizontal(id="body"):
            with VerticalScroll(id="treebox"):
                for p in placed["tree"]:
                    yield Lines(id=p.widget_id)
                for p in placed["timeline"]:
                    yield Static(id=p.widget_id)
            with VerticalScroll(id="side"):
                for p in panels.SIDE:
                    yield Lines(id=p.widget_id, classes="panel")
        yield Static(id="keys")

    def on_mount(self) -> None:
        # the keys are the app's: a scrolled box with focus would take home/end/pgup/pgdn for itself (the tree
        # scrolls with up/down/pgup/pgdn through the app's actions, and the mouse wheel needs no focus)
        for box in self.query(VerticalScroll):
            box.can_focus = False
        # a refresh makes thousands of short-lived objects (rich Text, points, findings' tuples): at the default
        # young threshold the collector runs several times a second and now and then walks the whole heap, a cost
        # on every refresh for garbage reference counting frees anyway (docs/performance.md, "Dashboard"); put
        # back on unmount
        self._gc.enter_context(gcpolicy.fewer_collections())
        self.watch(self.query_one("#treebox"), "scroll_y", self._tree_scrolled, init=False)
        self._layout()
        self.set_interval(0.25, self._pump)
        self.set_interval(1.0, self.redraw)
        if self.replay is not None:
            self._read_timeline(self.replay.rec.path)
        elif self.earlier is not None:
            self._read_earlier(*self.earlier)
        self.redraw()

    def _read_timeline(self, path: str) -> None:
        """The recording's whole-run timeline, read once in a worker thread (its own connection to the file)."""
        def work() -> None:
            try:
                tl, err = read_timeline(path), None
            except Exception as exc:  # a damaged recording must not end the dashboard: the panel says so
                tl, err = None, exc
            self.call_from_thread(self._timeline_read, tl, err)

        self.run_worker(work, thread=True, group="timeline")

    def _timeline_read(self, tl: Optional[Timeline], err: Optional[Exception]) -> None:
        if err is not None:
            self.say(f"timeline unavailable: {type(err).__name__}: {err}", severity="warning")
            tl = Timeline()
        self.timeline = tl
        self._freeze_heap()
        if self._panels_mounted():
            self.redraw()

    def _read_earlier(self, path: str, before: float) -> None:
        """Live, writing on into a recording that held readings: its earlier run(s) (the readings and events before
        ``before``, when this process opened it; its own are fed live, so none is counted twice) read once in a
        worker thread, with its own read-only connection beside the recorder's, and merged into the timeline."""
        self._reading_earlier = True

        def work() -> None:
            try:
                tl, err = read_timeline(path, before=before), None
            except Exception as exc:  # a damaged recording must not end the dashboard: the live timeline goes on
                tl, err = None, exc
            self.call_from_thread(self._earlier_read, tl, err)

        self.run_worker(work, thread=True, group="timeline")

    def _earlier_read(self, tl: Optional[Timeline], err: Optional[Exception]) -> None:
        self._reading_earlier = False
        if err is not None:
            self.say(f"earlier runs of the recording not shown: {type(err).__name__}: {err}", severity="warning")
        elif tl is not None and self.timeline is not None:
            self.timeline.merge(tl)
        if self._panels_mounted():
            self.redraw()

    def _freeze_heap(self) -> None:
        """Replay holds a large heap for its whole life (the states kept around the cursor, the whole-run
        timeline). A full collection of the cyclic collector walks all of it, tens of milliseconds on a week-long
        recording, and would now and then land in a key press, doubling that step. Once the timeline is read it
        is collected once and left out of later collections (``gc.freeze``; reference counting still frees it:
        docs/performance.md, "Long soaks"); :meth:`on_unmount` puts it back."""
        gc.collect()
        gc.freeze()
        self._frozen = True

    def on_unmount(self) -> None:
        self._gc.close()
        if self._frozen:
            gc.unfreeze()
            self._frozen = False

    def on_resize(self, _event) -> None:
        if self._panels_mounted():
            self._layout()
            self.redraw()

    def _layout(self) -> None:
        self._laid_out = self.size
        self._shown = {}
        self._findings_lines = 0
        self._timeline_key = None
        w, h = self.size
        small = w < MIN_SIZE[0] or h < MIN_SIZE[1]
        self.query_one("#body").set_class(w < NARROW, "narrow")
        for other in (*(f"#{p.widget_id}" for p in panels.PANELS if p.place == "header"), "#body", "#keys"):
            self.query_one(other).display = not small  # the message alone, centred
        self.query_one("#toosmall").display = small
        if small:
            self.query_one("#toosmall", Static).update(Text(
                f"terminal too small: {w}x{h}, needs {MIN_SIZE[0]}x{MIN_SIZE[1]}\nenlarge the window (q quits)",
                style="bold", justify="center"))

    # ---------------------------------------------------------------------------------------------- data
    def _panels_mounted(self) -> bool:
        """False while the app shuts down: its timers, a findings worker and a late resize can still fire after
        the panels are gone. The callbacks are synchronous, so a check at their start holds for their run. Both
        of the screen's top widgets are asked: they are removed one at a time (a resize once found #body there
        and #toosmall gone)."""
        try:
            self.query_one("#body")
            self.query_one("#toosmall")
        except NoMatches:
            return False
        return True

    def _pump(self) -> None:
        if not self._panels_mounted():
            return
        if self.size != self._laid_out:  # a resize: lay out again (the app gets no Resize of its own)
            self._layout()
            self.redraw()
        if self.feed is not None:
            batches = self.feed.drain_batches()
            recs = joined(batches)  # with the derived values the sampler took
            if self.paused:
                self._hold(batches)
            elif recs:
                self.state.feed(recs)
                self._feed_timeline(recs)
                self._choose_pool()
        elif self.replay is not None and self.replay.playing:
            before = self.replay.cursor
            self.state = self.replay.move_to(before + 0.25 * self.replay.speed)
            if self.replay.cursor >= self.replay.end:
                self.replay.playing = False
            self._settle_until = time.monotonic() + 0.4
            self.redraw()
        elif self.replay is not None and time.monotonic() >= self._settle_until:
            self.replay.prepare_back()  # the cursor rests: the next step back finds its state ready

    def _hold(self, batches: List[List[Record]]) -> None:
        """Batches that came while paused, kept whole for the resume; beyond the bounds the oldest are let go (the
        view loses them, the recording does not), and a notification says so once."""
        for b in batches:
            if b:
                self.held.append(b)
                self._held_records += len(b)
        while len(self.held) > 1 and (len(self.held) > MAX_HELD or self._held_records > MAX_HELD_RECORDS):
            self._held_records -= len(self.held.popleft())
            if not self._held_dropped:
                self._held_dropped = True
                self.say("paused long: the oldest records are let go from the view (the recording keeps them)",
                         severity="warning")

    def _feed_timeline(self, records: List[Record]) -> None:
        if self.replay is None and self.timeline is not None:
            self.timeline.feed(records)

    def _choose_pool(self) -> None:
        pools = self.state.pools()
        if pools and self.opts.pool not in pools:
            self.opts.pool = pools[0]

    def _findings(self):
        """The last findings report; a new one is computed in a worker thread when due (it can take a second)."""
        now = self.clock()
        if self.paused and self.report is not None:
            return self.report
        if self.replay is not None and time.monotonic() < self._settle_until:
            return self.report  # the cursor is moving: keep the last findings until it rests
        # the same window gives the same findings (and a run costs a large pool a good part of a second): a replay
        # cursor at rest, or a live window no record came to since the last run, is not analysed again
        new = self.report is None or self._report_key != self._window_key()
        if new and (self.replay is not None or self.report is None or now - self._report_at >= self.findings_every()):
            self._start_findings(now)
        return self.report

    def findings_every(self) -> float:
        """Seconds between live findings runs, by the last run's CPU (:func:`findings_every`)."""
        return findings_every(self._findings_cpu)

    def _window_key(self) -> tuple:
        """What a window's findings depend on: the cursor's time (replay) or the records fed so far (live), and the
        window's length."""
        return (self.state.now if self.replay is not None else self.state.fed), self.state.window_s

    def _start_findings(self, now: float) -> None:
        if self._findings_busy:
            return
        self._findings_busy = True
        self._report_at = now
        job, key = self.state.findings_job(), self._window_key()

        def work() -> None:
            cpu = time.thread_time()
            try:
                report, err = job(), None
            except Exception as exc:  # analysis is another module: a bug there must not end the dashboard
                report, err = None, exc
            self.call_from_thread(self._findings_done, report, key, err, time.thread_time() - cpu)

        self.run_worker(work, thread=True, group="findings")

    def _findings_done(self, report, key: tuple, err: Optional[Exception], cpu: float) -> None:
        self._findings_busy = False
        self._findings_cpu = cpu
        if not self._panels_mounted():
            return
        if err is not None:
            self.say(f"findings unavailable: {type(err).__name__}: {err}", severity="warning")
            return
        self.report, self._report_key = report, key
        if not self.paused and self.size.width >= MIN_SIZE[0] and self.size.height >= MIN_SIZE[1]:
            narrow = self.size.width < NARROW
            p = panels.panel("findings")
            side_w = self._width(f"#{panels.SIDE[0].widget_id}", 30)
            self._put(p.widget_id, p.render(panels.Frame(self.state, self.opts, side_w * p.span if narrow else side_w,
                                                         narrow, report)))

    # ---------------------------------------------------------------------------------------------- drawing
    def redraw(self) -> None:
        if not self._panels_mounted():
            return
        if self.paused and self.redraws and self.replay is None:
            self._draw_header()
            return
        self.redraws += 1
        self._choose_pool()
        w, h = self.size
        if w < MIN_SIZE[0] or h < MIN_SIZE[1]:
            return
        narrow = w < NARROW
        self.opts.now = None if self.replay is not None else self.clock()
        self._draw_header()
        # the widgets' real widths once laid out (minus a scrollbar), else what the CSS will give them
        tree_w = self._width("#treebox", w if narrow else max(40, w * 3 // 5 - 2))
        side_w = self._width(f"#{panels.SIDE[0].widget_id}", max(20, (w - 2) // 3) if narrow else max(30, w * 2 // 5 - 2))
        self._tree_w = tree_w
        self._draw_tree()
        self._draw_timeline(tree_w)
        report = self._findings()
        for p in panels.SIDE:
            width = side_w * p.span if narrow else side_w
            self._put(p.widget_id, p.render(panels.Frame(self.state, self.opts, width, narrow, report)))
        # the keys that find the others first: a narrow screen cuts the line's end
        keys = "? help  ^p cmds  q quit  p pause  m mark  tab pool  +/- window  f findings  r rates/totals  e export  / filter"
        if self.replay is not None:
            keys = ("? help  ^p cmds  q quit  p play  ←/→ step  [/] events  f findings  home/end  </> speed  +/- window  "
                    "e export")
        self._put("keys", Text(keys, no_wrap=True, overflow="ellipsis"))

    def _draw_tree(self) -> None:
        """The tree's rows on screen (and a line either side); the box scrolling draws it again
        (:meth:`_tree_scrolled`)."""
        box = self.query_one("#treebox", VerticalScroll)
        h = box.scrollable_content_region.height
        y = int(box.scroll_y)
        shown = range(y - 1, y + h + 1) if h > 0 else None
        self.query_one(f"#{panels.panel('vdevs').widget_id}", Lines).set_lines(
            panels.tree_lines(self.state, self.opts, self._tree_w, shown))

    def _tree_scrolled(self) -> None:
        if self._panels_mounted() and self._tree_w:
            self._draw_tree()

    def _draw_timeline(self, width: int) -> None:
        """Only when its buckets, its events, the width or the cursor's second changed: not every refresh."""
        tl = self.timeline
        cursor = self.replay.cursor if self.replay is not None else None
        key = (id(tl), tl.version if tl is not None else -1, tl.every if tl is not None else 0.0, width,
               None if cursor is None else int(cursor), self.opts.raw, self.state.window_s, self._reading_earlier)
        if key == self._timeline_key:
            return
        self._timeline_key = key
        extent = (self.replay.start, self.replay.end) if self.replay is not None else None
        p = panels.panel("timeline")
        self._put(p.widget_id, p.render(panels.Frame(self.state, self.opts, width, extra={
            "timeline": tl, "cursor": cursor, "live": self.replay is None, "extent": extent,
            "window_s": self.state.window_s, "reading_earlier": self._reading_earlier})))

    def _width(self, selector: str, guess: int) -> int:
        got = self.query_one(selector).size.width
        return max(10, got - 1) if got > 0 else guess

    def _put(self, name: str, text: Text) -> None:
        """Update a panel only if it changed; re-lay the screen out only if its height changed (that is costly)."""
        lines = text.plain.count("\n")
        if name == "findings":
            # the side column's last panel keeps its tallest height (blank lines below): a line that comes and
            # goes every second (a goose egg flickering) would otherwise re-lay the whole screen out each time
            # (a third of a refresh's CPU at 160x50); _layout (on resize) forgets it
            if lines < self._findings_lines:
                text = text + Text("\n" * (self._findings_lines - lines))
                lines = self._findings_lines
            self._findings_lines = lines
        old = self._shown.get(name)
        if old is not None and old == text:
            return
        w = self.query_one(f"#{name}")
        if isinstance(w, Lines):  # lays itself out again when its line count changes
            w.set_lines(text.split("\n", allow_blank=True))
        elif isinstance(w, Static):
            w.update(fmt.inert(text), layout=old is None or old.plain.count("\n") != lines)
        self._shown[name] = text

    def _draw_header(self) -> None:
        note = ""
        if self.replay is not None:
            r = self.replay
            note = (f"at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(r.cursor))}Z "
                    f"({panels.fmt.clock(r.cursor - r.start)}/{panels.fmt.clock(r.end - r.start)}) "
                    f"{'▶' if r.playing else '❚❚'} x{r.speed:g}  ")
        p = panels.panel("header")
        t = p.render(panels.Frame(self.state, self.opts, self.size.width, extra={
            "info": self.info, "paused": self.paused, "replay_note": note}))
        t.no_wrap, t.overflow = True, "ellipsis"
        w = self.query_one(f"#{p.widget_id}")
        rows = t.plain.count("\n") + 1  # its lines, cut at the screen's width (an error line comes and goes)
        if w.styles.height is None or w.styles.height.value != rows:
            w.styles.height = rows
        self._put(p.widget_id, t)

    def say(self, message: str, severity: SeverityLevel = "information") -> None:
        """A notification: ``message`` quotes the input (an event's text, a mark, a file's name), so it is shown as
        it is, never parsed as markup (which raises MarkupError on ``[/]`` in a topology event), control characters
        shown as escapes."""
        self.notify(printable(message), severity=severity, markup=False)

    # ---------------------------------------------------------------------------------------------- actions
    def action_pause(self) -> None:
        if self.replay is not None:
            self.replay.playing = not self.replay.playing
            self.redraw()
            return
        self.paused = not self.paused
        if not self.paused and self.held:
            recs = joined(self.held)
            self.held, self._held_records, self._held_dropped = deque(), 0, False
            self.state.feed(recs)
            self._feed_timeline(recs)
        self.redraws = 0 if not self.paused else self.redraws
        self.redraw()

    def action_mark(self) -> None:
        self.push_screen(AskScreen("Mark: a note for this moment (enter to save, esc to cancel)"), self._marked)

    def _marked(self, text: Optional[str]) -> None:
        if text is None:
            return
        text = text.strip() or "mark"
        ts = self.clock()
        self.marks.append(text)
        self.state.feed([Event(ts, EventKind.MARK, text, source="user")])
        self._feed_timeline([Event(ts, EventKind.MARK, text, source="user")])
        if self.on_mark is None:
            self.say("not recording: the mark is shown but not saved", severity="warning")
            return
        on_mark = self.on_mark

        def write() -> None:  # in a thread: a slow disk must not freeze the screen
            try:
                on_mark(text)
            except Exception as exc:  # a full disk must not kill the dashboard
                self.call_from_thread(self.say, f"mark not saved: {exc}", severity="error")
            else:
                self.call_from_thread(self.say, f"marked: {text}")

        self.run_worker(write, thread=True, exclusive=False, group="marks")

    def action_next_pool(self) -> None:
        pools = self.state.pools()
        if pools:
            i = pools.index(self.opts.pool) if self.opts.pool in pools else -1
            self.opts.pool = pools[(i + 1) % len(pools)]
        self.redraw()

    def action_window(self, direction: int) -> None:
        cur = self.state.window_s
        if direction > 0:
            new = next((w for w in WINDOWS if w > cur), WINDOWS[-1])
        else:
            new = next((w for w in reversed(WINDOWS) if w < cur), WINDOWS[0])
        if self.replay is not None:
            self.state = self.replay.set_window(new)
        else:
            self.state.window_s = new
            self.state.keep_s = max(self.state.keep_s, new)
        self.report = None
        self.redraw()

    def action_scroll_tree(self, lines: int) -> None:
        box = self.query_one("#treebox", VerticalScroll)
        box.scroll_relative(y=lines, animate=False)

    def action_totals(self) -> None:
        self.opts.totals = not self.opts.totals
        self.redraw()

    def action_raw(self) -> None:
        self.opts.raw = not self.opts.raw
        self.redraw()

    def action_sort(self) -> None:
        self.opts.sort = SORTS[(SORTS.index(self.opts.sort) + 1) % len(SORTS)]
        self.redraw()

    def action_collapse(self) -> None:
        self.opts.collapsed = not self.opts.collapsed
        self.redraw()

    def action_filter(self) -> None:
        def done(text: Optional[str]) -> None:
            if text is not None:
                self.opts.filter = text.strip()
                self.redraw()
        self.push_screen(AskScreen("Filter vdevs by name (empty: show all)", self.opts.filter), done)

    def action_theme(self) -> None:
        names = list(thresholds.THEMES)
        self.opts.theme = names[(names.index(self.opts.theme) + 1) % len(names)]
        self._shown = {}  # every panel again, in the new colours
        self._timeline_key = None
        self.redraw()
        self.say(f"theme: {self.opts.theme}")

    def action_findings(self) -> None:
        """The findings view over the last report (:mod:`zfsmon.views.top.findings_view`)."""
        if self.report is None:
            self.say("the findings of this window are still being worked out: try again in a moment")
            return
        origin = self.replay.start if self.replay is not None else None
        self.push_screen(FindingsScreen(self.report, origin, None if self.replay is not None else self.clock()),
                         self._findings_chosen)

    def _findings_chosen(self, chosen: Optional[tuple]) -> None:
        """Replay: the cursor to the moment chosen in the findings view."""
        if chosen is None or self.replay is None:
            return
        words, ts = chosen
        self.replay.move_to(ts)
        self._moved()
        self.say(f"{stamp(ts)}: {words}")

    def on_click(self, event: events.Click) -> None:
        """A click on the findings panel opens the findings view."""
        if event.widget is not None and event.widget.id == panels.panel("findings").widget_id:
            self.action_findings()

    def action_help(self) -> None:
        self.push_screen(HelpScreen("replay" if self.replay is not None else "live"))

    def action_export(self) -> None:
        """The window is copied now; the files are written in a worker thread (a slow disk must not freeze the
        screen) and the result is a notification."""
        job = export_job(self.state, self.export_dir, self.clock())

        def write() -> None:
            try:
                path = job()
            except UserError as exc:
                self.call_from_thread(self.say, f"export failed: {exc}", "error")
            else:
                self.call_from_thread(self._exported, path)

        self.run_worker(write, thread=True, exclusive=False, group="export")

    def _exported(self, path: str) -> None:
        self.exports.append(path)
        self.say(f"exported {path}")  # the directory's name comes from the input

    # replay ------------------------------------------------------------------------------------------
    def _moved(self) -> None:
        assert self.replay is not None
        self.state = self.replay.state
        self._settle_until = time.monotonic() + 0.4  # findings follow once the cursor rests (1 s timer)
        self.redraw()

    def action_step(self, n: int) -> None:
        if self.replay is not None:
            self.replay.step(n)
            self._moved()

    def action_jump(self, direction: int) -> None:
        if self.replay is not None:
            ev = self.replay.jump(direction)
            if ev is None:
                self.say("no more events that way")
            else:
                self.say(f"{ev.kind.value}: {ev.text}")
            self._moved()

    def action_home(self) -> None:
        if self.replay is not None:
            self.replay.move_to(self.replay.start)
            self._moved()

    def action_end(self) -> None:
        if self.replay is not None:
            self.replay.move_to(self.replay.end)
            self._moved()

    def action_speed(self, direction: int) -> None:
        if self.replay is not None:
            self.replay.faster(direction > 0)
            self.redraw()


#: no colour: every segment's colours the terminal's default (``NO_COLOR``)
_NO_COLOR = NoColor()


def export_job(state: TopState, directory: str, now: float) -> Callable[[], str]:
    """The window's samples as a long CSV (``zfsmon export`` columns), events beside it, as a call that may run
    in another thread (the window is copied now); it returns the CSV's path.

    The names come from the time, so anyone can predict them: each file is linked in only under a name nothing
    has yet (:func:`zfsmon.outfile.atomic` with ``replace=False``; a planted link, dangling or not, is such a
    thing), and the pair moves on to the next free ``-N`` when either name is taken."""
    samples, events = state.window_samples(), state.window_events()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    base = os.path.join(directory, f"zfsmon-top-{stamp}")

    def write() -> str:
        for n in range(1, 10_000):
            path = base + (f"-{n}" if n > 1 else "") + ".csv"
            ev_path = path[:-4] + ".events.csv"
            if os.path.lexists(path) or os.path.lexists(ev_path):
                continue
            try:
                with outfile.atomic(ev_path, replace=False) as fh:
                    export.write_events(fh, events)
            except outfile.Taken:
                continue
            try:
                with outfile.atomic(path, replace=False) as fh:
                    export.write_long(fh, export.rows(samples))
            except outfile.Taken:
                os.unlink(ev_path)  # the events file this call linked in a moment ago
                continue
            return path
        raise UserError(f"{base}.csv: every name up to -9999 is taken")
    return write
