"""What every collector promises, and the two ways they get their text.

A collector never raises out of :meth:`Collector.poll`: a failing command, a
missing kstat or a vanished pool becomes an ``error`` :class:`Event` and the
collector keeps going, so one broken source never stops the others.
"""

from __future__ import annotations

import abc
import time
from typing import Callable, List, Optional

from zfsmon.model import Event, EventKind, ParseError, Record

Clock = Callable[[], float]


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
