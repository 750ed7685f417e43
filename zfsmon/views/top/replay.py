"""The time cursor of ``zfsmon replay``: which part of a recording the dashboard shows, read on demand.

Only the window ending at the cursor is read (``Recording.samples(start=...,
end=...)``, with one window of margin each side kept in memory so that steps
do not read again), so a 24-hour recording opens as fast as a one-minute one. Moving
forward by less than a window feeds just the new slice into the same
:class:`~zfsmon.views.top.state.TopState`. Stepping back cannot undo a feed, and
rebuilding a window costs more than a key press may wait on a pool of many leaves, so the states around the cursor
are kept (for windows up to :data:`KEEP_WINDOW_S`): a step back that finds none
builds the state :data:`BACK_STRIDE` intervals earlier and steps forward to the
cursor, keeping a copy at each step, and the steps back after it take those.
The dashboard asks for those states while the cursor rests
(:meth:`ReplayCursor.prepare_back`), so the first step back after a rest is as
quick as the next ones. Other moves rebuild.
"""

from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

from zfsmon.errors import UserError
from zfsmon.metrics.health import EVENT_ERRORS, EVENT_HEALTH, EVENT_SCAN
from zfsmon.model import Event, EventKind, Sample
from zfsmon.store import Recording
from zfsmon.views.top.state import TopState

#: events `[` and `]` jump between (info lines such as "recording started" are not worth a stop), and the info
#: events of a health change, a leaf's errors and a scrub's/resilver's start and end (:func:`is_jump`)
JUMP_KINDS = (EventKind.MARK, EventKind.RUN_START, EventKind.RUN_END, EventKind.ERROR, EventKind.TOPOLOGY,
              EventKind.RESET)
INCIDENT_KEYS = (EVENT_HEALTH, EVENT_ERRORS, EVENT_SCAN)


def is_jump(e: Event) -> bool:
    """A stop for `[`/`]`: an event of JUMP_KINDS, a pool or device changing state ("virtio-data0 REMOVED (was
    ONLINE)"), a leaf's errors counted or cleared, a scan starting or ending: the moments of an incident."""
    return e.kind in JUMP_KINDS or (e.kind == EventKind.INFO and any(k in e.data for k in INCIDENT_KEYS))
#: replay speeds: seconds of recording per second of wall clock
SPEEDS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
#: a step back with no kept state builds the one this many intervals earlier, keeping every state on the way
BACK_STRIDE = 30
#: states kept around the cursor at most (each holds its window's containers: ~0.5 MB for 64 leaves)
KEEP_STATES = 2 * BACK_STRIDE + 2
#: states are kept for windows up to this long: a state's copy grows with its window (a 24-hour window's
#: sparkline series hold 86,400 points each), and a longer window is stepped through less finely anyway
KEEP_WINDOW_S = 900.0


def _at(ts: float) -> int:
    """A cursor time as a key: cursors reached by different sums of intervals differ in the last bits."""
    return round(ts * 1e6)


class ReplayCursor:
    def __init__(self, recording: Recording, window_s: float) -> None:
        rng = recording.time_range()
        if rng is None:
            raise UserError(f"{recording.path}: the recording holds no samples yet; nothing to replay")
        self.rec = recording
        self.start, self.end = rng
        self.interval = float(recording.nominal_interval() or 1.0)
        self.window_s = float(window_s)
        self.cursor = self.end
        self.speed_index = 0
        self.playing = False
        self.jumps: List[Event] = [e for e in recording.events(kinds=(*JUMP_KINDS, EventKind.INFO)) if is_jump(e)]
        self._jump_ts = [e.ts for e in self.jumps]
        self._block: Tuple[float, float, List[Sample], List[float]] = (0.0, -1.0, [], [])
        #: states at other cursor times, not to be fed again (see the module's docstring)
        self._kept: Dict[int, TopState] = {}
        self.state = self._build(self.cursor)

    # ---------------------------------------------------------------------------------------------- reading
    def _samples(self, lo: float, hi: float) -> List[Sample]:
        """Samples in [lo, hi] from an in-memory block read around the cursor (steps back then cost no reading)."""
        b_lo, b_hi, samples, ts = self._block
        if not (b_lo <= lo and hi <= b_hi):
            margin = self.window_s
            b_lo, b_hi = lo - margin, hi + margin
            samples = list(self.rec.samples(start=b_lo, end=b_hi))
            samples.sort(key=lambda s: s.ts)
            ts = [s.ts for s in samples]
            self._block = (b_lo, b_hi, samples, ts)
        return samples[bisect.bisect_left(ts, lo):bisect.bisect_right(ts, hi)]

    def _feed_range(self, state: TopState, lo: float, hi: float) -> None:
        state.feed([*self._samples(lo, hi), *self.rec.events(lo, hi)])

    def _build(self, at: float) -> TopState:
        state = TopState(self.window_s, keep_s=self.window_s, interval=self.interval)
        # one interval before the window, so counters have a previous reading to make a rate from
        self._feed_range(state, at - self.window_s - self.interval * 1.5, at)
        state.now = at
        return state

    def _forward(self, state: TopState, frm: float, to: float) -> None:
        self._feed_range(state, frm + 1e-6, to)
        state.now = to

    def _keep(self, ts: float, state: TopState) -> None:
        if self.window_s > KEEP_WINDOW_S:
            return
        self._kept[_at(ts)] = state
        while len(self._kept) > KEEP_STATES:  # the farthest from the cursor goes first
            del self._kept[max(self._kept, key=lambda k: abs(k - _at(self.cursor)))]

    def _build_back(self, ts: float) -> TopState:
        """The state at ``ts`` (a step back), built from up to :data:`BACK_STRIDE` intervals earlier, keeping the
        states on the way: the next steps back take them instead of building again."""
        n = max(0, min(BACK_STRIDE, int((ts - self.start) / self.interval)))
        points = [ts - j * self.interval for j in range(n, 0, -1)]
        state = self._build(points[0] if points else ts)
        for here, nxt in zip(points, [*points[1:], ts]):
            self._keep(here, state.copy())
            self._forward(state, here, nxt)
        return state

    def move_to(self, ts: float) -> TopState:
        ts = min(max(ts, self.start), self.end)
        prev = self.cursor
        if ts == prev:
            return self.state
        self.cursor = ts
        kept = self._kept.pop(_at(ts), None)
        if kept is not None:
            self._keep(prev, self.state)  # left as it was: still the state at prev
            self.state = kept
        elif prev < ts <= prev + self.window_s:
            self._forward(self.state, prev, ts)
        elif ts < prev <= ts + self.window_s and self.window_s <= KEEP_WINDOW_S:
            self._keep(prev, self.state)
            self.state = self._build_back(ts)
        else:
            self.state = self._build(ts)
        return self.state

    def prepare_back(self) -> bool:
        """Build and keep the states behind the cursor that a step back would have to build (the slow part of a
        step: docs/performance.md, "Long soaks"): for the dashboard to call while the cursor rests. False when there is nothing to do: they are
        kept already, the cursor is at the start, or the window is too long to keep states for."""
        back = self.cursor - self.interval
        if self.window_s > KEEP_WINDOW_S or back < self.start or self.back_ready():
            return False
        self._keep(back, self._build_back(back))
        return True

    def back_ready(self) -> bool:
        """A step back would take a kept state (no building)."""
        return _at(self.cursor - self.interval) in self._kept

    def set_window(self, window_s: float) -> TopState:
        self.window_s = window_s
        self._kept.clear()
        self.state = self._build(self.cursor)
        return self.state

    # ---------------------------------------------------------------------------------------------- moves
    def step(self, n: int) -> TopState:
        return self.move_to(self.cursor + n * self.interval)

    def jump(self, direction: int) -> Optional[Event]:
        """To the next (1) or previous (-1) event; returns it, or None if there is none that way."""
        if direction > 0:
            i = bisect.bisect_right(self._jump_ts, self.cursor + 1e-6)
            ev = self.jumps[i] if i < len(self.jumps) else None
        else:
            i = bisect.bisect_left(self._jump_ts, self.cursor - 1e-6) - 1
            ev = self.jumps[i] if i >= 0 else None
        if ev is not None:
            self.move_to(ev.ts)
        return ev

    @property
    def speed(self) -> float:
        return SPEEDS[self.speed_index]

    def faster(self, up: bool) -> float:
        self.speed_index = min(len(SPEEDS) - 1, self.speed_index + 1) if up else max(0, self.speed_index - 1)
        return self.speed
