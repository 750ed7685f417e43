"""Machine-wide locks (flock on a file): one lab change, one guest, one guest image build at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Iterator


@contextlib.contextmanager
def held(path: Path, timeout: float, poll: float, busy: Callable[[int], Exception]) -> Iterator[int]:
    """Hold an exclusive lock on ``path``, waiting up to ``timeout`` seconds; yields the lock file's descriptor.

    When the lock is still taken after ``timeout``, raises ``busy(fd)`` (the caller says who holds it and why).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy(fd) from None
                time.sleep(poll)
        yield fd
    finally:
        os.close(fd)
