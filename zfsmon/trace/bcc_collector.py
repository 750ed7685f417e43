"""The bcc backend as a collector: ``python3 -m zfsmon.trace.bcc_tool`` as a child, its protocol parsed.

Like the bpftrace collector (same process group, SIGINT/SIGTERM/SIGKILL on stop, PR_SET_PDEATHSIG, same
parser and name tables), but one child runs SEVERAL traces in one BPF program, so that its clang compile
(about a minute under the OpenZFS guest's emulation) is paid once. Its ``# zfsmon-bcc ready: ...`` comment
becomes an INFO event, so ``zfsmon trace --backend bcc`` says when the probes are attached.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import List, Optional, Sequence

from zfsmon import host
from zfsmon.model import Event, EventKind, Record
from zfsmon.sources.base import Clock
from zfsmon.sources.child import StreamCollector
from zfsmon.trace import bcc_program
from zfsmon.trace.collector import TraceCollector
from zfsmon.trace.protocol import Resolver, TraceParser
from zfsmon.trace.resolve import Names

READY = "# zfsmon-bcc ready:"
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


class BccParser(TraceParser):
    """The trace protocol, plus the runner's ready comment as an INFO event (the plain parser ignores it)."""

    def __init__(self, source: str, resolve: Optional[Resolver] = None) -> None:
        super().__init__(source, resolve)
        self.ready = False

    def feed(self, line: str, ts: float) -> List[Record]:
        text = line.strip()
        if text.startswith(READY):
            self.line_no += 1
            self.ready = True
            return [Event(ts, EventKind.INFO, f"bcc {text[len('# zfsmon-bcc '):]}", source=self.source)]
        return super().feed(line, ts)


def bcc_argv(selection: Sequence[str], interval: int, slow_ms: int = 0, python: str = sys.executable) -> List[str]:
    """The child's command line (pure)."""
    return [python, "-m", "zfsmon.trace.bcc_tool", ",".join(selection), str(int(interval)), str(int(slow_ms))]


def bcc_problem(selection: Sequence[str]) -> Optional[str]:
    """Why the bcc backend cannot run these traces here (root, bcc, headers, kprobes, ZFS module), or None."""
    facts = host.bcc_facts()
    problem = facts.problem()
    if problem:
        return problem
    # a trace this kernel cannot serve is skipped by the runner with an `error` line; refuse only when none can run
    blocked = bcc_program.unavailable(selection, {tp: {} for tp in bcc_program.tracepoints(selection)},
                                      facts.kprobes, facts.zfs_module)
    if len(blocked) == len(selection):
        return "; ".join(f"{name} {why}" for name, why in blocked.items())
    return None


class BccCollector(TraceCollector):
    """``BccCollector(["zfsslower", "arc", "vdevlat"], 5)``: several traces, one bcc program, one child."""

    def __init__(self, names: Sequence[str], interval: int = 1, slow_ms: int = 0, pools: tuple = (),
                 clock: Clock = time.time) -> None:
        self.selection = bcc_program.select(names)
        self.family = "bcc"
        self.spec = None
        self.pid = None
        self.pools = tuple(pools)
        self.names = Names(refresh=self._refresh_names)
        self.interval = max(1, int(interval))
        self.slow_ms = slow_ms
        self.tracer = None
        self._gone = ""
        self._preflight_failed = False
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        label = "+".join(self.selection)
        StreamCollector.__init__(self, bcc_argv(self.selection, self.interval, slow_ms),
                                 BccParser(f"trace:{label}", self.names), f"trace:bcc:{label}", clock, env=env)

    def preflight(self) -> Optional[str]:
        return bcc_problem(self.selection)

    def intervals(self) -> int:
        """Intervals reported so far: each interval has one block per selected trace."""
        done = self.parser.intervals if isinstance(self.parser, TraceParser) else 0
        return done // len(self.selection)

    def _spawn(self) -> None:
        self._gone = ""
        StreamCollector._spawn(self)
