"""The time cursor of ``zfsmon replay``: which part of a recording the dashboard shows, read on demand.

Only the window ending at the cursor is read (``Recording.samples(start=...,
end=...)``, with one window of margin each side kept in memory so that steps
do not read again), so a 24-hour recording opens as fast as a one-minute one. Moving
forward by less than a window feeds just the new slice into the same
:class:`~zfsmon.views.top.state.TopState`; any other move rebuilds it.
"""

from __future__ import annotations

import bisect
from typing import List, Optional, Tuple

from zfsmon.errors import UserError
from zfsmon.model import Event, EventKind, Sample
from zfsmon.store import Recording
from zfsmon.views.top.state import TopState

#: events `[` and `]` jump between (info lines such as "recording started" are not worth a stop)
JUMP_KINDS = (EventKind.MARK, EventKind.RUN_START, EventKind.RUN_END, EventKind.ERROR, EventKind.TOPOLOGY,
              EventKind.RESET)
#: replay speeds: seconds of recording per second of wall clock
SPEEDS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)


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
        self.jumps: List[Event] = [e for e in recording.events(kinds=JUMP_KINDS)]
        self._jump_ts = [e.ts for e in self.jumps]
        self._block: Tuple[float, float, List[Sample], List[float]] = (0.0, -1.0, [], [])
        self.state = self._build()

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

    def _build(self) -> TopState:
        state = TopState(self.window_s, keep_s=self.window_s, interval=self.interval)
        # one interval before the window, so counters have a previous reading to make a rate from
        self._feed_range(state, self.cursor - self.window_s - self.interval * 1.5, self.cursor)
        state.now = self.cursor
        return state

    def move_to(self, ts: float) -> TopState:
        ts = min(max(ts, self.start), self.end)
        prev = self.cursor
        self.cursor = ts
        if prev < ts <= prev + self.window_s:
            self._feed_range(self.state, prev + 1e-6, ts)
            self.state.now = ts
        elif ts != prev:
            self.state = self._build()
        return self.state

    def set_window(self, window_s: float) -> TopState:
        self.window_s = window_s
        self.state = self._build()
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
