"""A persistent child that stops printing (SIGSTOPped, blocked) is reported, killed and restarted."""

from __future__ import annotations

import os
import signal
from typing import List

from tests.conftest import wait_until
from zfsmon.model import Event, EventKind, Record
from zfsmon.sources.child import StreamCollector, StreamParser


class _Lines(StreamParser):
    def feed(self, line: str, ts: float) -> List[Record]:
        return []


def test_a_stopped_child_is_reported_killed_and_restarted():
    col = StreamCollector(["sh", "-c", "echo started; sleep 300"], _Lines(), "demo")
    col.hang_after = 0.5
    col.restart_delays = (0.1,)
    seen: List[Record] = []
    col.start()
    try:
        first = col._proc
        assert first is not None
        os.kill(first.pid, signal.SIGSTOP)

        def restarted() -> bool:
            seen.extend(col.poll())
            return any(isinstance(r, Event) and r.kind == EventKind.INFO and "restarting" in r.text for r in seen)
        wait_until(restarted, 30, "the hung child replaced", step=0.1)
        hung = [r.text for r in seen if isinstance(r, Event) and r.kind == EventKind.ERROR]
        assert any("printed nothing for" in t and "hung" in t for t in hung), hung
        assert first.poll() is not None and col._proc is not first and col._proc.poll() is None
    finally:
        col.stop()


def test_without_hang_after_a_quiet_child_is_left_alone():
    col = StreamCollector(["sleep", "300"], _Lines(), "demo")
    col.start()
    try:
        assert col.poll() == [] and col._proc is not None and col._proc.poll() is None
    finally:
        col.stop()
