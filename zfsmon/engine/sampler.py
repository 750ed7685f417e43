"""The sampler: polls every collector once per interval and hands the records to sinks.

Sources -> (this) -> sinks (the recorder, a live view's buffer, the exporter).
Each sample is derived here, once (:class:`~zfsmon.analysis.rates.Deriver`: its
counters' rates, its kind's ratios, a reset event when a counter went back),
and each tick is handed to the sinks as a :class:`~zfsmon.model.Tick`:
the raw records (what the recorder writes, as read) with those derived values.
One slow or hung source shows up as stale data, never as a frozen loop:
persistent children do their waiting in their own threads, and a collector
that reads in its poll (a kstat file, a short command) is polled on its own
worker thread (:mod:`~zfsmon.engine.reads`) and waited for until a deadline.
A read that misses it leaves its source stale: an error event says so, with
the age of its last figures; the tick goes on with the others; that read is
not started again while it is stuck; when it returns, an event says so, its
figures are left out (when they were taken is not known: anywhere in the time
it was stuck), and the next tick polls it afresh. Stopping never waits for a
stuck read. A sink that fails is reported once and the others go on.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from zfsmon.analysis.rates import Deriver
from zfsmon.engine.reads import ReadWorker, deadline_for, guarded_poll
from zfsmon.model import Derived, Event, EventKind, Record, Sample, Tick
from zfsmon.sources.base import Collector

Sink = Callable[[List[Record]], None]



class Sampler:
    def __init__(self, collectors: Sequence[Collector], interval: float, sinks: Iterable[Sink] = (),
                 clock: Callable[[], float] = time.time, read_deadline: Optional[float] = None) -> None:
        """``read_deadline``: seconds a collector that reads in its poll has to answer each tick (default
        :func:`~zfsmon.engine.reads.deadline_for` the interval)."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.collectors = list(collectors)
        self.interval = float(interval)
        self.read_deadline = float(read_deadline) if read_deadline is not None else deadline_for(self.interval)
        self.sinks: List[Sink] = list(sinks)
        self.clock = clock
        #: each sample's derived values, taken once here for every sink (restarted when the clock steps)
        self.deriver = Deriver()
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = False
        self._failed_sinks: set = set()
        self._last_tick: Optional[Tuple[float, float]] = None  # (clock(), time.monotonic()) at the last tick
        #: collector index -> its worker, for the collectors that read in their poll
        self._workers: Dict[int, ReadWorker] = {i: ReadWorker(c, clock) for i, c in enumerate(self.collectors)
                                                if c.reads_in_poll}

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
        """Stop the collectors and deliver a last tick; a collector whose read is stuck is left alone (stopping
        it could block as well, and its worker still uses it): the process's end takes its thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval + self.read_deadline + 5)
        for i, c in enumerate(self.collectors):
            w = self._workers.get(i)
            if w is not None and w.in_flight:
                continue
            try:
                c.stop()
            except Exception:
                pass
        # whatever arrived while stopping is still delivered: recorded data is never dropped
        self.tick()
        for w in self._workers.values():
            w.close()

    def stuck(self) -> List[str]:
        """A line for each source whose read is in flight past its deadline, saying for how long."""
        return [f"{w.collector.name}: a read has not returned for {w.in_flight_for():.0f} s (stuck kernel read?)"
                for w in self._workers.values() if w.overdue and w.in_flight]

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # one round ------------------------------------------------------------------------------------------------
    def tick(self) -> Tick:
        """Poll every collector once; deliver (and return) the records with their samples' derived values."""
        out = Tick(self._clock_step())
        derived: List[Derived] = out.derived
        due = time.monotonic() + self.read_deadline
        for w in self._workers.values():  # every read at once: they wait for the same deadline
            w.ask()
        for i, c in enumerate(self.collectors):
            worker = self._workers.get(i)
            recs = guarded_poll(c, self.clock) if worker is None else self._read(worker, due)
            for r in recs:
                out.append(r)
                if isinstance(r, Sample) and not r.since_boot:
                    d, resets = self.deriver.update(r)
                    out.extend(resets)
                    if d is not None:
                        derived.append(d)
        self.ticks += 1
        if out:
            self._deliver(out)
        return out

    def _read(self, w: ReadWorker, due: float) -> List[Record]:
        """A worker's records for this tick: its poll's, or the event that it is stale, or that it is back."""
        name = w.collector.name
        got = w.take(due if not w.overdue else 0.0)  # a stuck read is not waited for again
        if got is None:
            if w.overdue or not w.in_flight:
                return []
            w.overdue = True
            now = self.clock()
            age = (f"its last figures are {now - w.figures_at:.0f} s old" if w.figures_at is not None
                   else "it has given no figures yet")
            return [Event(now, EventKind.ERROR, f"{name}: read did not return within {self.read_deadline:g} s "
                          f"(stuck kernel read?); {age}", source=name, data={"stale": True})]
        recs, took = got
        if w.overdue:
            w.overdue = False
            kept: List[Record] = [r for r in recs if isinstance(r, Event)]
            return [Event(self.clock(), EventKind.INFO, f"{name}: the read returned after {took:.0f} s; its "
                          "figures are left out (when they were taken is not known), sampling resumes",
                          source=name)] + kept
        stamps = [r.ts for r in recs if isinstance(r, Sample)]
        if stamps:
            w.figures_at = max(stamps)
        return recs

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
        self.deriver = Deriver()
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
                    err: List[Record] = [Event(self.clock(), EventKind.ERROR, f"sink {getattr(sink, '__name__', sink)!s}: {exc}")]
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
