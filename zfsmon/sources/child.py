"""Run a long-lived command (``zpool iostat -v 5``, ``kstat -p ... 5``, ``fsstat zfs 5``) once and parse its stream.

Spawning ``zpool iostat`` per sample costs a process and loses the kernel's own
interval averaging; one persistent child does neither. A reader thread feeds
lines to an incremental parser; :meth:`StreamCollector.poll` drains what is
ready. If the child dies (pool exported, daemon restarted) it is restarted
with back-off and the failure is reported as an event.
"""

from __future__ import annotations

import abc
import os
import queue
import signal
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from zfsmon.model import Event, EventKind, ParseError, Record
from zfsmon.queues import drain
from zfsmon.sources.base import Clock, Collector


def terminate_group(proc: subprocess.Popen, steps: Sequence[Tuple[int, float]]) -> None:
    """Stop a child started with ``start_new_session=True`` and everything it spawned.

    Each (signal, seconds) step is sent to the whole process group and waited
    for; if none worked, SIGKILL. A group that is already gone is fine.
    """
    for sig, wait in steps:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class StreamParser(abc.ABC):
    """Incremental parser: fed one line at a time, returns complete records as they close."""

    @abc.abstractmethod
    def feed(self, line: str, ts: float) -> List[Record]:
        """``ts`` is when the line arrived; parsers prefer timestamps printed in the stream (``-T``)."""

    def flush(self, ts: float) -> List[Record]:
        """End of stream: emit whatever block is still open (if it is complete enough)."""
        return []

    _line_no = 0

    def _next_line(self, line: str) -> Tuple[int, str, List[str]]:
        """Count one more line: its number (for errors), its text without the line end, and its words."""
        self._line_no += 1
        text = line.rstrip("\r\n")
        return self._line_no, text, text.split()


class StreamCollector(Collector):
    """Owns one child process and one parser."""

    restart_delays = (1.0, 2.0, 5.0, 10.0, 30.0)
    #: seconds without a line from a running child after which it counts as hung and is replaced (None: never)
    hang_after: Optional[float] = None
    #: signals sent to the child's process group on stop, each followed by a wait (s); SIGKILL comes last
    stop_signals: Tuple[Tuple[int, float], ...] = ((signal.SIGTERM, 3.0),)
    #: the child reads requests on its stdin (``zpool_influxdb --execd``: one sample per newline), so it gets a
    #: pipe, kept in ``_proc.stdin``; every other child gets /dev/null
    stdin_pipe = False

    def __init__(self, argv: Sequence[str], parser: StreamParser, name: str, clock: Clock = __import__("time").time,
                 env: Optional[dict] = None) -> None:
        super().__init__(clock)
        self.argv = list(argv)
        self.parser = parser
        self.name = name
        self.env = env
        self._q: queue.Queue[Record] = queue.Queue()
        self._proc: Optional[subprocess.Popen] = None
        self._thread: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        self._failures = 0
        self._next_start = 0.0
        self._last_line = time.monotonic()

    # lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self._stopping.clear()
        self._spawn()

    def _spawn(self) -> None:
        try:
            self._proc = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                stdin=subprocess.PIPE if self.stdin_pipe else subprocess.DEVNULL,
                text=True, bufsize=1, env=self.env, start_new_session=True, **self._popen_extra(),
            )
        except OSError as exc:
            self._q.put(self._error(f"{self.name}: cannot run {self.argv[0]}: {exc.strerror or exc}"))
            self._schedule_restart()
            return
        self._last_line = time.monotonic()
        self._thread = threading.Thread(target=self._pump, args=(self._proc,), name=f"zfsmon-{self.name}", daemon=True)
        self._thread.start()

    def _popen_extra(self) -> Dict[str, Any]:
        """Extra ``Popen`` arguments for subclasses (e.g. a ``preexec_fn`` setting PR_SET_PDEATHSIG)."""
        return {}

    def _exit_reason(self, rc: int, stderr: str) -> str:
        """Why the child ended, in one line; subclasses translate tool-specific errors."""
        err = stderr.strip().splitlines()
        return err[-1] if err else f"exit status {rc}"

    def _pump(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        lineno = 0
        for line in proc.stdout:
            lineno += 1
            self._last_line = time.monotonic()
            ts = self.clock()
            try:
                recs = self.parser.feed(line.rstrip("\n"), ts)
                for rec in recs:
                    self._q.put(rec)
                if recs or self.last_error is not None:  # not per line: a -w interval is hundreds of them
                    self._ok()
            except ParseError as exc:
                self._q.put(self._error(f"{self.name}: {exc}"))
        try:
            for rec in self.parser.flush(self.clock()):
                self._q.put(rec)
        except ParseError as exc:
            self._q.put(self._error(f"{self.name}: {exc}"))
        rc = proc.wait()
        if not self._stopping.is_set():
            why = self._exit_reason(rc, proc.stderr.read() if proc.stderr else "")
            self._q.put(self._error(f"{self.name}: `{' '.join(self.argv)}` ended: {why}"))
            self._schedule_restart()

    def _schedule_restart(self) -> None:
        delay = self.restart_delays[min(self._failures, len(self.restart_delays) - 1)]
        self._failures += 1
        self._next_start = self.clock() + delay

    def poll(self) -> List[Record]:
        out: List[Record] = drain(self._q)
        proc = self._proc
        silent = time.monotonic() - self._last_line
        if (self.hang_after is not None and proc is not None and proc.poll() is None and silent > self.hang_after
                and not self._stopping.is_set()):
            # a hung child (stopped, blocked in the kernel) would leave this source stale for ever: replace it
            out.append(self._error(f"{self.name}: `{' '.join(self.argv)}` printed nothing for {silent:.0f} s "
                                   "(hung?): killing it; it is restarted"))
            self._last_line = time.monotonic()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # SIGKILL also ends a stopped process
            except (ProcessLookupError, PermissionError):
                pass
        if (not self._stopping.is_set() and self._next_start and self.clock() >= self._next_start
                and (self._proc is None or self._proc.poll() is not None)):
            self._next_start = 0.0
            out.append(Event(self.clock(), EventKind.INFO, f"{self.name}: restarting `{' '.join(self.argv)}`",
                             source=self.name))
            self._spawn()
        if any(not isinstance(r, Event) for r in out):  # data flowed again: back-off starts over
            self._failures = 0
        return out

    def stop(self) -> None:
        self._stopping.set()
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        terminate_group(proc, self.stop_signals)
        if self._thread is not None:
            self._thread.join(timeout=2)
