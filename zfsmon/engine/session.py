"""One run of the sampler: the loop `record`, `top`, `soak`, `attach` and `exporter` share.

Sources -> :class:`~zfsmon.engine.sampler.Sampler` -> sinks: the recording (if
any), then the sinks passed in (a dashboard's feed, the exporter's latest
values). A session stops on SIGTERM/SIGINT (handled on the main thread only,
restored afterwards), after a duration, when the workload says it is done
(``done``), when asked (:meth:`Session.stop`), and, in the blocking mode, when
the recording fails (a full disk): the failure is kept in the outcome and told
to the other sinks as an error event. A read stuck in the kernel never holds a
stop up (the sampler does not wait for it): the outcome names it. Its cleanup callbacks (stopping a lab
PostgreSQL cluster, an HTTP server) run exactly once, on every way out.

Two modes, because a terminal dashboard must own the main thread:

* blocking, :meth:`Session.run` (record, soak, attach, exporter): the sampler
  runs in the calling thread; without collectors it just waits (an exporter
  serving a recording);
* background, :meth:`Session.start` (top): the sampler runs in a thread while
  the caller runs its screen; ``on_end`` is called when the run ends by itself
  (a signal, the duration, ``done``); :meth:`Session.close` ends it from the
  caller. A full disk stops the recording there, not the sampling: the screen
  still has something to show.

Marks (top's ``m`` key) are written under the same lock as the sampler's
writes.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from zfsmon import outfile
from zfsmon.engine.sampler import Sampler, Sink
from zfsmon.host import recording_meta
from zfsmon.model import Event, EventKind, Record
from zfsmon.sources.base import Collector
from zfsmon.store import Recorder, RecordingError

#: the signals that end a run
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

Progress = Callable[[int, int], None]


@dataclass
class Outcome:
    """What a run left: intervals recorded, samples and events written, why recording stopped (if it did), and
    the sources whose read was stuck at the end (one line each; the run ended without waiting for them)."""

    intervals: int
    samples: int
    events: int
    failure: Optional[str]
    stuck: Tuple[str, ...] = ()


#: a file to be written: its directory must exist and it must not be a directory (one line, before anything starts)
check_output_path = outfile.check_target


def tty_progress(out: str) -> Progress:
    """A progress line on standard error, rewritten each interval, when it is a terminal."""
    def show(ticks: int, samples: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{out}: {ticks} intervals, {samples} samples", end="", file=sys.stderr)
    return show


class Session:
    """Collectors, an optional recording and sinks, sampled until something says stop; see the module's text.

    Use it as a context manager, so that whatever happens between creating it and running it (preparing a
    database, opening the recording) the collectors are stopped and the cleanups run::

        with Session(interval, collectors, sinks=[feed.sink]) as session:
            session.add_cleanup(target.stop)
            session.record_into(path, meta)
            outcome = session.run(duration=600)
    """

    def __init__(self, interval: float, collectors: Sequence[Collector] = (), sinks: Sequence[Sink] = (),
                 progress: Optional[Progress] = None) -> None:
        self.interval = interval
        self.collectors: List[Collector] = list(collectors)
        self.sinks: List[Sink] = list(sinks)
        self.progress = progress
        self.recorder: Optional[Recorder] = None
        self.failure: Optional[str] = None
        self.intervals = 0
        self.sampler: Optional[Sampler] = None
        self._lock = threading.Lock()  # the recorder: the sampler's writes, marks and close
        self._recording = False  # a recorder is open and has not failed
        self._stop = threading.Event()
        self._closing = False
        self._outcome: Optional[Outcome] = None
        self._background = False
        self._begun = False
        self._sampled = False  # the sampler's run has returned (its collectors are stopped)
        self._threads: List[threading.Thread] = []
        self._cleanups: List[Callable[[], None]] = []
        self._old_handlers: Dict[int, object] = {}

    # setting up --------------------------------------------------------------------------------------------
    def add_cleanup(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once when the session closes (last first), whichever way it ends."""
        self._cleanups.append(fn)

    def record_into(self, path: str, meta: Mapping[str, object]) -> Recorder:
        """Open (or append to) the recording ``path``; the sampler's records go there first.

        Every recording says where it was made: this host's name, platform, ZFS flavour and versions
        (:func:`zfsmon.host.recording_meta`) are stored unless ``meta`` gives them.

        A missing directory or a directory given as ``path`` is a one-line UserError; a file that cannot be
        a recording is a RecordingError (a UserError too)."""
        check_output_path(path)
        self.recorder = Recorder(path, {**recording_meta(), **dict(meta)})
        self._recording = True
        return self.recorder

    # running ----------------------------------------------------------------------------------------------------
    def run(self, duration: Optional[float] = None, done: Optional[threading.Event] = None) -> Outcome:
        """Sample in this thread until a signal, ``duration``, ``done``, :meth:`stop` or a failed recording;
        then close. Without collectors, only wait for one of those."""
        self._begin(done, None)
        try:
            self._sample(duration)
        finally:
            outcome = self.close()
        return outcome

    def start(self, duration: Optional[float] = None, done: Optional[threading.Event] = None,
              on_end: Optional[Callable[[], None]] = None) -> None:
        """Sample in a background thread and return; ``on_end`` (from another thread) when the run ends by itself
        (a signal, ``duration``, ``done``), never after :meth:`close` was called. Call :meth:`close` at the end."""
        self._background = True
        self._begin(done, on_end)

        def sample() -> None:
            try:
                self._sample(duration)
            finally:
                self._stop.set()  # ended by itself (duration): the watcher tells on_end

        self._spawn(sample, "zfsmon-sampler")

    def stop(self) -> None:
        """Ask the run to end (thread-safe; what the signal handlers do)."""
        self._stop.set()

    def mark(self, text: str) -> None:
        """A user's note in the recording, now. RuntimeError when nothing is being recorded."""
        with self._lock:
            if self.recorder is None or not self._recording:
                raise RuntimeError("not recording")
            self.recorder.mark(text)

    def close(self) -> Outcome:
        """Stop sampling, close the recording, restore the signal handlers, run the cleanups. Safe twice."""
        if self._outcome is not None:
            return self._outcome
        self._closing = True
        self._stop.set()
        try:
            for t in self._threads:
                if t is not threading.current_thread():
                    t.join(timeout=self.interval + 5)
            if self.sampler is not None:
                if not self._sampled:  # a sampler thread that did not finish in time: stop its collectors here
                    self.sampler.stop()
            else:
                for c in self.collectors:  # never started; stopping is safe anyway (a constructed child)
                    try:
                        c.stop()
                    except Exception:
                        pass
        finally:
            with self._lock:
                self._recording = False
                if self.recorder is not None:
                    self.recorder.close()
            self._restore_signals()
            rec = self.recorder
            self._outcome = Outcome(self.intervals, rec.samples_written if rec else 0,
                                    rec.events_written if rec else 0, self.failure,
                                    tuple(self.sampler.stuck()) if self.sampler is not None else ())
            self._run_cleanups()
        return self._outcome

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # inside ------------------------------------------------------------------------------------------------------
    def _begin(self, done: Optional[threading.Event], on_end: Optional[Callable[[], None]]) -> None:
        if self._begun or self._outcome is not None:
            raise RuntimeError("a session runs once")
        self._begun = True
        if threading.current_thread() is threading.main_thread():  # Python delivers signals there only
            for s in STOP_SIGNALS:
                self._old_handlers[s] = signal.signal(s, self._on_signal)
        if done is not None or on_end is not None:
            self._spawn(lambda: self._watch(done, on_end), "zfsmon-session-watch")
        if self.collectors:
            sinks: List[Sink] = ([self._recorder_sink()] if self.recorder is not None else []) + self.sinks
            self.sampler = Sampler(self.collectors, self.interval, sinks=sinks)

    def _sample(self, duration: Optional[float]) -> None:
        """Sample until a stop (the sampler's own run stops the collectors and delivers the last records)."""
        try:
            if self.sampler is not None:
                self.sampler.run(duration=duration, stop_event=self._stop)
            else:
                self._stop.wait(duration)
        finally:
            self._sampled = True

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _on_signal(self, _signum: int, _frame: object) -> None:
        self._stop.set()

    def _watch(self, done: Optional[threading.Event], on_end: Optional[Callable[[], None]]) -> None:
        """Turn ``done`` into a stop; tell ``on_end`` when the run ended by itself."""
        while not self._stop.wait(0.5 if done is not None else None):
            if done is not None and done.is_set():
                self._stop.set()
        if on_end is not None and not self._closing:
            try:
                on_end()
            except Exception:  # a screen that is already gone
                pass

    def _recorder_sink(self) -> Sink:
        rec = self.recorder
        assert rec is not None

        def recorder(records: List[Record]) -> None:
            with self._lock:
                if not self._recording:
                    return
                try:
                    rec.write(records)
                except RecordingError as exc:
                    self._recording = False
                    failure: Optional[str] = str(exc)
                else:
                    failure = None
                    self.intervals += 1
            if failure is not None:
                self._failed(failure)
            elif self.progress is not None:
                self.progress(self.intervals, rec.samples_written)

        return recorder

    def _failed(self, failure: str) -> None:
        """The recording stopped (a full disk): keep why, tell the other sinks; blocking runs end here."""
        self.failure = failure
        if not self._background:
            self._stop.set()
        err: List[Record] = [Event(time.time(), EventKind.ERROR, f"recording stopped: {failure}", source="record")]
        for sink in self.sinks:
            try:
                sink(err)
            except Exception:
                pass

    def _restore_signals(self) -> None:
        for s, h in self._old_handlers.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        self._old_handlers.clear()

    def _run_cleanups(self) -> None:
        cleanups, self._cleanups = self._cleanups[::-1], []
        first: Optional[BaseException] = None
        for fn in cleanups:
            try:
                fn()
            except BaseException as exc:  # the others still run; the first failure is raised after them
                first = first or exc
        if first is not None:
            raise first
