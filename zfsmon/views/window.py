"""A recording's window as analyze and the report read it: every reading, or folded to the grid's step as read;
and its health readings, never folded.

One place for the choice (``analyze``'s window and its ``--changed`` windows, the PDF report): a window too long
for a grid cell per reading is folded as the store yields its column blocks, chunks as numpy arrays
(:mod:`zfsmon.analysis.coarsen`, :mod:`zfsmon.store.arrays`),
so a week of one-second readings is never held whole; a shorter one is read a Sample per reading.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional

from zfsmon.analysis import incidents
from zfsmon.analysis.coarsen import coarsen_blocks
from zfsmon.model import Kind, Sample
from zfsmon.store import Recording, arrays


def read_window(rec: Recording, start: Optional[float], end: Optional[float], every: Optional[float],
                kinds: Optional[Iterable[Kind]] = None,
                metrics: Optional[Callable[[Kind, str], bool]] = None) -> List[Sample]:
    """The window's samples (of ``kinds``, with the ``metrics`` kept), folded to steps of ``every`` seconds when
    given (``findings.fold_step`` says when), else every reading in recording order."""
    if every:
        streams = rec.select_streams(kinds=kinds) if kinds is not None else None
        return coarsen_blocks(arrays.blocks(rec, streams, start, end, metrics), every)
    return list(rec.samples(kinds=kinds, start=start, end=end, metrics=metrics))


def read_health(rec: Recording, start: Optional[float], end: Optional[float]) -> List[Sample]:
    """The window's health readings (``zpool status``: pools', vdevs' and leaves' states and error counts) as they
    were, never folded (a state is not a mean): what the incidents are found in. Few: one every 10-60 s per entity."""
    return list(rec.samples(kinds=(Kind.POOL, Kind.VDEV, Kind.LEAF), start=start, end=end,
                            sources=(incidents.STATUS,)))
