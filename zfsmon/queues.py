"""Handing records between threads: every reader thread queues, every consumer drains without waiting."""

from __future__ import annotations

import queue
from typing import List, TypeVar

T = TypeVar("T")


def drain(q: queue.Queue[T]) -> List[T]:
    """Everything a reader thread has queued so far, without waiting."""
    out: List[T] = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
