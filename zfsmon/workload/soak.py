"""Run a pgbench soak and turn its output into records, as a collector the sampler polls beside the ZFS sources.

Two shapes, both what sysadmins already do by hand:

* ``loop``: ``pgbench -T 58 ...; sleep 2`` over and over (each run's summary
  is recorded; a run that dies is reported and the loop goes on);
* ``continuous``: one long pgbench run.

Either way pgbench runs with ``-P N --progress-timestamp`` (``N`` 1 unless the
user gave ``--progress``): a TPS point every N seconds, stamped by pgbench
itself, so the dashboard's TPS is live and not once per run.

Every line pgbench prints is also appended to a plain log file (the classic
``| tee soak.log``), so the soak can be read, or re-imported with ``zfsmon
attach --from-start``, without zfsmon. The argv builders are pure; the
collector runs pgbench in its own process group in a background thread.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Dict, List, Mapping, Optional, Sequence

from zfsmon import outfile
from zfsmon.defaults import SOAK_CONTINUOUS, SOAK_LOOP
from zfsmon.model import Event, EventKind, Record
from zfsmon.names import PGBENCH
from zfsmon.queues import drain
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import terminate_group
from zfsmon.sources.pgbench.source import init_size_estimate
from zfsmon.sources.pgbench.text import PgbenchTextParser

LOOP, CONTINUOUS = SOAK_LOOP, SOAK_CONTINUOUS
#: pgbench's -T when a continuous soak runs until interrupted (pgbench needs a number; we stop it ourselves)
FOREVER_S = 365 * 86400
#: pgbench's -P when the user gave none: TPS every second, in loop mode too
PROGRESS_S = 1
#: after this many runs in a row end without a summary, the soak gives up (database gone, bad options)
MAX_FAILED_RUNS = 3


@dataclass
class SoakPlan:
    """What to run. ``pgbench_args`` pass through untouched (``-c 30 -j 10 -N`` ...)."""

    mode: str = LOOP
    run_seconds: int = 58  # loop: -T of each run
    pause: float = 2.0  # loop: seconds between runs
    progress: Optional[int] = None  # -P (default: PROGRESS_S)
    total: Optional[float] = None  # seconds of soak; None = until stopped
    pgbench_args: Sequence[str] = ()
    dbname: Optional[str] = None  # last on the command line: a conninfo without its password (None: PGDATABASE)
    tee: Optional[str] = None
    aggregate_interval: Optional[int] = None  # continuous: --log --aggregate-interval
    log_prefix: Optional[str] = None
    pgbench: str = "pgbench"
    env: Mapping[str, str] = field(default_factory=dict)

    def progress_every(self) -> int:
        """pgbench's -P: the user's, else every second (a loop's summaries alone come once a run)."""
        return self.progress if self.progress else PROGRESS_S


def tee_log_for(recording: str) -> str:
    """Where a soak tees pgbench's output by default: beside its recording, ``NAME.pgbench.log``."""
    return os.path.splitext(recording)[0] + ".pgbench.log"


def run_argv(plan: SoakPlan, seconds: int) -> List[str]:
    """The pgbench command line of one run lasting ``seconds``."""
    argv = [plan.pgbench, "-T", str(int(seconds))]
    argv += ["-P", str(plan.progress_every()), "--progress-timestamp"]
    if plan.mode == CONTINUOUS and plan.aggregate_interval:
        argv += ["--log", f"--aggregate-interval={plan.aggregate_interval}"]
        if plan.log_prefix:
            argv += [f"--log-prefix={plan.log_prefix}"]
    argv += list(plan.pgbench_args)
    if plan.dbname:
        argv.append(plan.dbname)
    return argv


def init_argv(pgbench: str, scale: int, dbname: Optional[str], extra: Sequence[str] = ()) -> List[str]:
    argv = [pgbench, "-i", "-s", str(int(scale)), "-q", *extra]
    return argv + ([dbname] if dbname else [])


def init_message(scale: int) -> str:
    rows = scale * 100_000
    size = init_size_estimate(scale)
    return (f"initialising pgbench scale {scale}: {rows:,} rows in pgbench_accounts, about "
            f"{size / 1e6:,.0f} MB on disk (tables and indexes; WAL comes on top)")


def next_run_seconds(plan: SoakPlan, now: float, deadline: Optional[float]) -> int:
    """How long the next run may last; 0 = the soak is over."""
    want = plan.run_seconds if plan.mode == LOOP else FOREVER_S
    if deadline is None:
        return want
    left = int(deadline - now)
    return min(want, left) if left >= 1 else 0


class SoakCollector(Collector):
    """Runs the plan in a thread; ``poll`` hands over the records of the lines printed since."""

    name = PGBENCH

    def __init__(self, plan: SoakPlan, clock: Clock = time.time, echo: Optional[IO[str]] = None) -> None:
        super().__init__(clock)
        self.plan = plan
        self.parser = PgbenchTextParser(source=self.name)
        self.echo = echo
        self._q: queue.Queue[Record] = queue.Queue()
        self._stop = threading.Event()
        self.finished = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._proc: Optional[subprocess.Popen] = None
        self._tee: Optional[IO[str]] = None
        self.runs_started = 0
        self.lines = 0

    # lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        if self.plan.tee:
            self._tee = outfile.open_append(self.plan.tee)
        self._thread = threading.Thread(target=self._work, name="zfsmon-soak", daemon=True)
        self._thread.start()

    def poll(self) -> List[Record]:
        return drain(self._q)

    def stop(self) -> None:
        self._stop.set()
        self._terminate()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._tee is not None:
            self._tee.close()
            self._tee = None

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    # the work ------------------------------------------------------------------------------------------------
    def _env(self) -> Dict[str, str]:
        return {**os.environ, **dict(self.plan.env)}

    def _work(self) -> None:
        deadline = self.clock() + self.plan.total if self.plan.total else None
        failures = 0
        try:
            while not self._stop.is_set():
                secs = next_run_seconds(self.plan, self.clock(), deadline)
                if secs <= 0:
                    break
                before = len(self.parser.summaries)
                rc = self._one_run(run_argv(self.plan, secs))
                if self._stop.is_set():
                    break
                if len(self.parser.summaries) == before and rc != 0:
                    failures += 1
                    if failures >= MAX_FAILED_RUNS:
                        self._q.put(self._error(f"pgbench: {failures} runs in a row failed; soak stopped"))
                        break
                else:
                    failures = 0
                if self.plan.mode == CONTINUOUS and rc == 0:
                    break
                if self._stop.wait(self.plan.pause if self.plan.mode == LOOP and failures == 0 else
                                   min(30.0, 2.0 ** failures)):
                    break
        finally:
            for r in self.parser.flush(self.clock()):
                self._q.put(r)
            for r in self.parser.close_run(self.clock(), "soak stopped"):
                self._q.put(r)
            self.finished.set()

    def _one_run(self, argv: List[str]) -> int:
        self.runs_started += 1
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    text=True, bufsize=1, env=self._env(), start_new_session=True,
                                    cwd=os.path.dirname(self.plan.log_prefix) if self.plan.log_prefix and
                                    os.path.dirname(self.plan.log_prefix) else None)
        except OSError as exc:
            self._q.put(self._error(f"pgbench: cannot run {argv[0]}: {exc.strerror or exc}"))
            return 127
        self._proc = proc
        assert proc.stdout is not None
        last = ""
        for line in proc.stdout:
            ts = self.clock()
            self.lines += 1
            if self._tee is not None:
                self._tee.write(line)
                self._tee.flush()
            if self.echo is not None:
                self.echo.write(line)
                self.echo.flush()
            if line.strip():
                last = line.strip()
            try:
                for r in self.parser.feed(line.rstrip("\n"), ts):
                    self._q.put(r)
            except Exception as exc:  # ParseError and anything a line could trigger: the soak goes on
                self._q.put(self._error(f"pgbench: {exc}"))
        rc = proc.wait()
        self._proc = None
        if rc != 0 and not self._stop.is_set():
            self._q.put(self._error(f"pgbench exited with status {rc}: {last[:200]}"))
            for r in self.parser.close_run(self.clock(), f"pgbench exited with status {rc}"):
                self._q.put(r)
        return rc

    def _terminate(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        terminate_group(proc, ((signal.SIGINT, 3.0), (signal.SIGTERM, 3.0)))

    def info_event(self, text: str) -> None:
        self._q.put(Event(self.clock(), EventKind.INFO, text, source=self.name))
