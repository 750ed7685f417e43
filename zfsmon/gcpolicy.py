"""CPython's cyclic garbage collector, run less often where zfsmon's heap makes its default cost show.

zfsmon makes many small objects that reference counting frees and that are never cyclic garbage: a Sample per
reading, its dict of metrics, tuples of points, the rich ``Text`` of a panel. At the interpreter's default young
threshold (700 new container objects) the collector examines them again and again, and now and then walks the
whole heap: a large share of ``zfsmon analyze``'s CPU on a long recording, and of each 1 Hz refresh of the
dashboard on a large pool (docs/performance-journal.md, "Long soaks" and "Dashboard"). Cyclic garbage is still
collected, later.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

#: the young-generation threshold while a batch command (analyze, report, export) or the dashboard runs
YOUNG_THRESHOLD = 100_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The young threshold raised to :data:`YOUNG_THRESHOLD` inside, put back after, also when the body fails (a
    test runs commands and apps one after the other in one process)."""
    old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
