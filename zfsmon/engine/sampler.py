"""The sampler: polls every collector once per interval and hands the records to sinks.

Sources -> (this) -> sinks (the recorder, a live view's buffer, the exporter).
Polling is cheap by contract (persistent children do the waiting in their own
threads), so one slow or hung source shows up as stale data, never as a
frozen loop. A sink that fails is reported once and the others go on.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Record, Sample
from zfsmon.sources.base import Collector

Sink = Callable[[List[Record]], None]


class Sampler:
    def __init__(self, collectors: Sequence[Collector], interval: float, sinks: Iterable[Sink] = (),
                 clock: Callable[[], float] = time.time) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.collectors = list(collectors)
        self.interval = float(interval)
        self.sinks: List[Sink] = list(sinks)
        self.clock = clock
        self.rates = RateDeriver()
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = False
        self._failed_sinks: set = set()
        self._last_tick: Optional[Tuple[float, float]] = None  # (clock(), time.monotonic()) at the last tick

    # lifecycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for c in self.collectors:
            try:
                c.start()
            except Exception as exc:  # a collector that cannot start is an event, not a crash
                self._deliver([Event(self.clock(), EventKind.ERROR, f"{c.name}: cannot start: {exc}", source=c.name)])

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval + 5)
        for c in self.collectors:
            try:
                c.stop()
            except Exception:
                pass
        # whatever arrived while stopping is still delivered: recorded data is never dropped
        self.tick()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # one round ------------------------------------------------------------------------------------------------
    def tick(self) -> List[Record]:
        out: List[Record] = self._clock_step()
        for c in self.collectors:
            try:
                recs = c.poll()
            except Exception as exc:  # contract says poll never raises; guard anyway
                recs = [Event(self.clock(), EventKind.ERROR, f"{c.name}: {type(exc).__name__}: {exc}", source=c.name)]
            for r in recs:
                out.append(r)
                if isinstance(r, Sample) and not r.since_boot:
                    out.extend(self.rates.resets(r))
        self.ticks += 1
        if out:
            self._deliver(out)
        return out

    def _clock_step(self) -> List[Record]:
        """An event when the wall clock moved other than the monotonic one (stepped by NTP, by hand): times on
        either side of it are not comparable, and rates are taken afresh after it (never across it)."""
        wall, mono = self.clock(), time.monotonic()
        last, self._last_tick = self._last_tick, (wall, mono)
        if last is None:
            return []
        step = (wall - last[0]) - (mono - last[1])
        if abs(step) <= max(2.0, self.interval):
            return []
        self.rates = RateDeriver()
        return [Event(wall, EventKind.INFO, f"the clock stepped {'back' if step < 0 else 'forward'} by {abs(step):.0f} s"
                      "; times across this point are not comparable, rates start afresh", source="clock",
                      data={"step_s": round(step, 3)})]

    def _deliver(self, records: List[Record]) -> None:
        for sink in self.sinks:
            try:
                sink(records)
            except Exception as exc:
                key = id(sink)
                if key not in self._failed_sinks:
                    self._failed_sinks.add(key)
                    err = [Event(self.clock(), EventKind.ERROR, f"sink {getattr(sink, '__name__', sink)!s}: {exc}")]
                    for other in self.sinks:
                        if other is not sink:
                            try:
                                other(err)
                            except Exception:
                                pass

    def run(self, duration: Optional[float] = None, stop_event: Optional[threading.Event] = None) -> None:
        """Tick on a fixed schedule (no drift) until duration elapses or a stop is asked."""
        self.start()
        t0 = time.monotonic()
        n = 0
        try:
            while not self._stop.is_set() and not (stop_event is not None and stop_event.is_set()):
                n += 1
                due = t0 + n * self.interval
                if duration is not None and due - t0 > duration + 1e-6:
                    break
                while True:
                    left = due - time.monotonic()
                    if left <= 0 or self._stop.is_set() or (stop_event is not None and stop_event.is_set()):
                        break
                    self._stop.wait(min(left, 0.2))
                if self._stop.is_set() or (stop_event is not None and stop_event.is_set()):
                    break
                self.tick()
        finally:
            self.stop()

    def run_in_thread(self, duration: Optional[float] = None) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, kwargs={"duration": duration}, name="zfsmon-sampler",
                                        daemon=True)
        self._thread.start()
        return self._thread
