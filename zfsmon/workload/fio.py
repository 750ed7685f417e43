"""Run fio (a job file or a preset) and turn its JSON output into records, as a collector beside the ZFS sources.

fio runs as ``fio JOB --output-format=json+ --status-interval=N``: every N
seconds it prints one cumulative JSON document, and one at the end; the
parser (:class:`zfsmon.sources.fio.json_output.FioJsonStreamParser`) turns each into
per-interval samples per job and direction. Everything fio prints on stdout
is also appended to a plain file (``NAME.fio.json`` beside the recording), so
``zfsmon import`` or ``zfsmon parse`` can read it again without zfsmon having
run. fio's stderr goes to ``NAME.fio.json.stderr``; when fio exits with an
error, its last stderr line becomes an ERROR event (one line) and the ZFS
recording is kept.

Presets (:func:`preset_jobfile`): the classic 8 KiB tests, random read,
random write and 70/30 mixed, each as one step or as a **concurrency sweep**
over 1, 2, 4, ... 64 outstanding I/Os. The sweep raises ``numjobs`` with the
``psync`` engine (one synchronous I/O in flight per job, ``group_reporting``
so each step is one entity), not ``iodepth`` with ``libaio``: libaio only
keeps several I/Os in flight with ``direct=1`` (buffered libaio submits
synchronously), and O_DIRECT is what ZFS before 2.3 and zfs-fuse either
refuse or ignore, so an iodepth sweep on ZFS would measure depth 1 seven
times. numjobs puts real concurrency on the file system on every platform;
the steps are ``stonewall``/``new_group`` jobs named ``qd<N>``.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, List, Optional, Sequence, Tuple

from zfsmon import lab as labmod
from zfsmon import outfile
from zfsmon.defaults import FIO_PRESETS, FIO_SWEEP_SUFFIX, fio_preset_names
from zfsmon.errors import UserError
from zfsmon.model import Event, EventKind, Record
from zfsmon.names import FIO
from zfsmon.queues import drain
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import terminate_group
from zfsmon.sources.fio.json_output import FioJsonStreamParser

#: the depths of a sweep (outstanding I/Os: psync jobs)
SWEEP_DEPTHS: Tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: preset -> (fio rw=, extra options); ``<preset>-sweep`` runs it at every depth of SWEEP_DEPTHS
PRESETS = FIO_PRESETS
SWEEP_SUFFIX = FIO_SWEEP_SUFFIX
#: what fio prints when a signal ends it (fio 3.33 then exits 128)
TERMINATING = re.compile(r"fio: terminating on signal \d+$")
preset_names = fio_preset_names


@dataclass(frozen=True)
class PresetPlan:
    """Where and how long a preset runs: ``directory`` holds fio's file ``zfsmon-fio.<preset>``."""

    directory: str
    size: str = "256M"
    runtime_s: int = 10  # per step
    depth: int = 1  # a single step's outstanding I/Os (numjobs)
    block_size: str = "8k"


def preset_jobfile(name: str, plan: PresetPlan) -> str:
    """The job file text of preset ``name`` (see :func:`preset_names`). Raises KeyError for an unknown name."""
    sweep = name.endswith(SWEEP_SUFFIX)
    base = name[: -len(SWEEP_SUFFIX)] if sweep else name
    rw, extra = PRESETS[base]
    lines = ["[global]", f"directory={plan.directory}", f"filename=zfsmon-fio.{base}", f"size={plan.size}",
             f"bs={plan.block_size}", f"rw={rw}", *extra, "ioengine=psync", "time_based",
             f"runtime={plan.runtime_s}", "group_reporting", ""]
    for depth in (SWEEP_DEPTHS if sweep else (plan.depth,)):
        lines += [f"[qd{depth}]", "stonewall", "new_group", f"numjobs={depth}", ""]
    return "\n".join(lines)


def lab_directory(pool: str) -> str:
    """The lab pool's mounted dataset, where a preset's file goes with ``--lab``. Raises UserError."""
    info = labmod.info(pool)
    if info is None:
        raise UserError(f"no lab named {pool} is up (start one with `zfsmon lab up --pool {pool}`)")
    if not os.path.ismount(info.mountpoint):
        raise UserError(f"lab dataset {info.dataset} is not mounted at {info.mountpoint}")
    return info.mountpoint


def check_jobfile(path: str) -> None:
    """A job file fio can open: one clear line (UserError) before anything starts when it cannot."""
    if not os.path.exists(path):
        raise UserError(f"fio job file {path} does not exist")
    if not os.path.isfile(path):
        raise UserError(f"fio job file {path} is not a regular file")
    if not os.access(path, os.R_OK):
        raise UserError(f"fio job file {path} is not readable")


def run_argv(jobfile: str, status_interval: float, fio: str = "fio") -> List[str]:
    """fio's command line: json+ (histogram bins: per-interval percentiles) with a status document every interval."""
    return [fio, jobfile, "--output-format=json+", f"--status-interval={max(1, int(round(status_interval)))}"]


def output_for(recording: str) -> str:
    """Where fio's JSON goes by default: beside the recording, ``NAME.fio.json``."""
    return os.path.splitext(recording)[0] + ".fio.json"


class FioCollector(Collector):
    """Runs fio once in a thread; ``poll`` hands over the records of the documents it printed since."""

    name = FIO

    def __init__(self, argv: Sequence[str], output: Optional[str] = None, clock: Clock = time.time,
                 cwd: Optional[str] = None) -> None:
        super().__init__(clock)
        self.argv = list(argv)
        self.output = output
        self.cwd = cwd
        self.parser = FioJsonStreamParser(source=self.name)
        self._q: queue.Queue[Record] = queue.Queue()
        self._stop = threading.Event()
        self.finished = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._proc: Optional[subprocess.Popen] = None
        self.returncode: Optional[int] = None
        #: fio ended with a non-zero status because zfsmon stopped it (the recording's end): not a failure
        self.stopped = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="zfsmon-fio", daemon=True)
            self._thread.start()

    def poll(self) -> List[Record]:
        return drain(self._q)

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            terminate_group(proc, ((signal.SIGINT, 5.0), (signal.SIGTERM, 3.0)))
        if self._thread is not None:
            self._thread.join(timeout=20)

    @property
    def documents(self) -> int:
        return self.parser.documents

    def _work(self) -> None:
        tee: Optional[IO[str]] = None
        try:
            if self.output:
                try:
                    tee = outfile.open_append(self.output)
                except UserError as exc:
                    self._q.put(self._error(f"fio: {exc}"))
                    return
            with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
                try:
                    proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                            text=True, bufsize=1, start_new_session=True, cwd=self.cwd)
                except OSError as exc:
                    self._q.put(self._error(f"fio: cannot run {self.argv[0]}: {exc.strerror or exc}"))
                    return
                self._proc = proc
                assert proc.stdout is not None
                for line in proc.stdout:
                    if tee is not None:
                        tee.write(line)
                        tee.flush()
                    try:
                        for r in self.parser.feed(line.rstrip("\n"), self.clock()):
                            self._q.put(self._ours(r))
                    except Exception as exc:  # a document that breaks the parser: the recording goes on
                        self._q.put(self._error(f"fio: {exc}"))
                self.returncode = rc = proc.wait()
                self.stopped = rc != 0 and self._stop.is_set()
                for r in self.parser.flush(self.clock()):
                    self._q.put(r)
                if rc != 0 and not self._stop.is_set():
                    err.seek(0)
                    said = [ln.strip() for ln in err.read().splitlines() if ln.strip()]
                    why = said[-1][:300] if said else "no message"
                    self._q.put(self._error(f"fio exited with status {rc}: {why}"))
        finally:
            if tee is not None:
                tee.close()
            self.finished.set()

    def _ours(self, r: Record) -> Record:
        """fio's "fio: terminating on signal 2" after zfsmon stopped it is the stop it was asked for, not an error."""
        if (self._stop.is_set() and isinstance(r, Event) and r.kind == EventKind.ERROR
                and TERMINATING.match(r.text)):
            return Event(r.ts, EventKind.INFO, f"fio stopped ({r.text.removeprefix('fio: ')})", r.source, r.entity,
                         r.data)
        return r

    def info_event(self, text: str) -> None:
        self._q.put(Event(self.clock(), EventKind.INFO, text, source=self.name))
