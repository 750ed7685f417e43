"""A collector's polls on a thread of its own, so that a read stuck in the kernel holds that thread only.

A kstat read can block without end: on zfs-fuse every kstat is a FUSE request, and a wedged daemon leaves the
reader in state D, where no signal reaches it. The sampler hands each collector that reads in its poll
(:attr:`~zfsmon.sources.base.Collector.reads_in_poll`) to one :class:`ReadWorker`, asks it for a poll each
tick and waits for the answer until a deadline; what a late or stuck read means (a stale source) is the
sampler's to say. One worker per collector, reused every tick: at most one poll in flight per collector, so a
stuck read is never started again beside itself and threads do not pile up. Workers are daemonic and never
joined, so a run ends even while one of them is stuck.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional, Sequence, Set, Tuple

from zfsmon.model import Event, EventKind, Record
from zfsmon.sources.base import Clock, Collector

#: seconds a read may take (or the interval, if longer) before its source is reported stale: long enough that a
#: read which is only slow (a `zpool status` on a loaded two-core box, a guest under emulation) is not taken for a
#: stuck one; the other sources wait that long once, at the tick the read sticks, and never again while it is stuck
READ_DEADLINE_S = 10.0


def deadline_for(interval: float) -> float:
    """The seconds a read has at a sampling ``interval``: :data:`READ_DEADLINE_S`, or the interval if longer."""
    return max(READ_DEADLINE_S, float(interval))


def guarded_poll(collector: Collector, clock: Clock) -> List[Record]:
    """``collector.poll()``; an exception (the contract says poll never raises) becomes an error event."""
    try:
        return collector.poll()
    except Exception as exc:
        name = collector.name
        return [Event(clock(), EventKind.ERROR, f"{name}: {type(exc).__name__}: {exc}", source=name)]


class ReadWorker:
    """One collector's :meth:`~zfsmon.sources.base.Collector.poll`, run on request on a daemon thread."""

    def __init__(self, collector: Collector, clock: Clock = time.time) -> None:
        self.collector = collector
        self.clock = clock
        #: the poll in flight missed its deadline: the sampler has reported the source stale
        self.overdue = False
        #: clock() of the newest figures (a sample) this collector's polls gave in time, None before any
        self.figures_at: Optional[float] = None
        self._cond = threading.Condition()
        self._asked = False  # a poll asked and not yet begun
        self._since: Optional[float] = None  # time.monotonic() when the poll in flight (or done, untaken) was asked
        self._result: Optional[List[Record]] = None  # a poll's records, not yet taken
        self._took = 0.0
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    @property
    def in_flight(self) -> bool:
        """A poll was asked and has not returned."""
        with self._cond:
            return self._since is not None and self._result is None

    def in_flight_for(self) -> float:
        """Seconds the poll in flight has been running (0 when none is)."""
        with self._cond:
            return time.monotonic() - self._since if self._since is not None and self._result is None else 0.0

    def ask(self) -> None:
        """Start a poll, unless one is in flight or its records are not taken yet (then nothing)."""
        with self._cond:
            if self._closed or self._since is not None:
                return
            self._since = time.monotonic()
            self._asked = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"zfsmon-read-{self.collector.name}",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def take(self, until: float) -> Optional[Tuple[List[Record], float]]:
        """The records of the poll asked and the seconds it took, waiting for them until ``until``
        (``time.monotonic()``); None while it is still in flight (or when none was asked)."""
        with self._cond:
            while self._result is None:
                left = until - time.monotonic()
                if self._since is None or left <= 0:
                    return None
                self._cond.wait(left)
            out = (self._result, self._took)
            self._result, self._since = None, None
            return out

    def close(self) -> None:
        """Let the thread end once it is idle (a stuck one ends with the process); never waits for it."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._asked and not self._closed:
                    self._cond.wait()
                if not self._asked:
                    return
                self._asked = False
                since = self._since
            recs = guarded_poll(self.collector, self.clock)
            with self._cond:
                self._took = time.monotonic() - (since if since is not None else time.monotonic())
                self._result = recs
                self._cond.notify_all()


class StuckRead(Exception):
    """A required collector's read missed its deadline: the command cannot go on without it."""


class DeadlinePolls:
    """A one-shot command's polls (``arcstat``, ``iostat``'s device column), each reading collector's on its own
    :class:`ReadWorker` and held to a deadline: a stuck read of a ``required`` collector raises
    :class:`StuckRead`; any other is said once and left out (its last values stand) until it returns."""

    def __init__(self, collectors: Sequence[Collector], deadline_s: float,
                 required: Sequence[Collector] = ()) -> None:
        self.collectors = list(collectors)
        self.deadline_s = deadline_s
        self.required = {id(c) for c in required}
        self.workers: Dict[int, ReadWorker] = {id(c): ReadWorker(c) for c in self.collectors if c.reads_in_poll}
        self.stuck: Set[int] = set()  # the collectors whose read is stuck, said once

    def poll(self, errors: List[str]) -> List[List[Record]]:
        """Every collector's records of this tick (one list each, in order); a stuck one's line goes to ``errors``."""
        out: List[List[Record]] = []
        for c in self.collectors:
            w = self.workers.get(id(c))
            if w is None:
                out.append(c.poll())
            else:
                w.ask()
        until = time.monotonic() + self.deadline_s
        for c in self.collectors:
            w = self.workers.get(id(c))
            if w is None:
                continue
            got = w.take(time.monotonic() if id(c) in self.stuck else until)
            if got is not None:
                self.stuck.discard(id(c))
                out.append(got[0])
            elif id(c) in self.required:
                raise StuckRead(f"the {c.name} read has not returned in {self.deadline_s:.0f} s: it is stuck in "
                                "the kernel (a wedged zfs-fuse daemon?)")
            elif id(c) not in self.stuck:
                self.stuck.add(id(c))
                errors.append(f"{c.name}: its read has not returned in {self.deadline_s:.0f} s (stuck in the "
                              "kernel?): left out until it does")
        return out

    def close(self) -> None:
        """Let the workers end (a stuck one ends with the process)."""
        for w in self.workers.values():
            w.close()
