"""Handing records between threads: every reader thread queues, every consumer drains without waiting."""

from __future__ import annotations

import queue
from typing import List, TypeVar, Union

T = TypeVar("T")


def drain(q: Union[queue.Queue[T], queue.SimpleQueue[T]]) -> List[T]:
    """Everything a reader thread has queued so far, without waiting."""
    out: List[T] = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
