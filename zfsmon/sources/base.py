"""What every collector promises, and the ways they get their text.

A collector never raises out of :meth:`Collector.poll`: a failing command, a
missing kstat or a vanished pool becomes an ``error`` :class:`Event` and the
collector keeps going, so one broken source never stops the others.
"""

from __future__ import annotations

import abc
import threading
import time
from queue import Queue
from typing import Callable, List, Optional

from zfsmon.model import Event, EventKind, ParseError, Record
from zfsmon.queues import drain

Clock = Callable[[], float]
#: seconds a stop waits for a reading in flight (a command of :class:`PeriodicCollector`; its records then count)
STOP_WAIT_S = 3.0


class Collector(abc.ABC):
    """Yields timestamped records. ``poll`` is cheap, and non-blocking unless :attr:`reads_in_poll` says so."""

    #: short source name used in events, recordings and ``zfsmon record SOURCES``
    name: str = "?"
    #: ``poll`` reads the system itself (a kstat file, a short command), and a read can block without end (a
    #: wedged FUSE daemon): the sampler then polls it on a worker thread of its own, with a deadline
    reads_in_poll: bool = False

    def __init__(self, clock: Clock = time.time) -> None:
        self.clock = clock
        self.last_error: Optional[str] = None
        self.last_ok: Optional[float] = None

    def start(self) -> None:
        """Begin collecting (spawn the persistent child, take a baseline)."""
        return None

    @abc.abstractmethod
    def poll(self) -> List[Record]:
        """Everything new since the last call."""

    def stop(self) -> None:
        """Stop children and release resources; safe to call twice."""
        return None

    # helpers for subclasses -------------------------------------------------
    def _error(self, message: str) -> Event:
        """Record an error once per distinct message, so a dead source doesn't flood the log."""
        repeat = message == self.last_error
        self.last_error = message
        ev = Event(self.clock(), EventKind.ERROR, message, source=self.name)
        return ev if not repeat else Event(ev.ts, EventKind.ERROR, message, source=self.name, data={"repeat": True})

    def _ok(self) -> None:
        self.last_ok = self.clock()
        self.last_error = None

    def __enter__(self) -> Collector:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PolledCollector(Collector):
    """Reads a file or kstat each poll and hands the text to a pure parser."""

    reads_in_poll = True

    def read_text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    @abc.abstractmethod
    def parse(self, text: str, ts: float) -> List[Record]:
        """The pure parser, bound to this source."""

    def poll(self) -> List[Record]:
        ts = self.clock()
        try:
            text = self.read_text()
            records = self.parse(text, ts)
        except (OSError, ParseError) as exc:
            return [self._error(f"{self.name}: {exc}")]
        self._ok()
        return records


class PeriodicCollector(Collector):
    """Reads in its own thread every ``every`` seconds (:meth:`read_once`); :meth:`poll` hands over what it read.

    For a one-shot command run every few seconds or minutes (``zpool status``, ``zpool get``): a run that hangs
    (a suspended pool) delays only this source, never the sampler.
    """

    #: the reading thread's name (what ``ps -T`` and a debugger show)
    thread_name = "zfsmon-periodic"

    def __init__(self, every: float, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.every = every
        self._q: Queue = Queue()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @abc.abstractmethod
    def read_once(self) -> List[Record]:
        """One reading: its records, a failure as an error event (never an exception)."""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for rec in self.read_once():
                self._q.put(rec)
            self._wait()

    def _wait(self) -> None:
        """Until the next reading (``every`` seconds; a subclass may wait otherwise), or until stopped."""
        self._stop.wait(self.every)

    def poll(self) -> List[Record]:
        return drain(self._q)

    def stop(self) -> None:
        """Stop reading; a command still running after :data:`STOP_WAIT_S` (a wedged daemon) is left to the
        collector's daemonic thread: a stop never waits for its timeout."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_WAIT_S)
            self._thread = None
