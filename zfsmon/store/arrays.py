"""A recording's chunk columns as numpy arrays: what the readers of a long recording whole decode (``export
--every``, ``analyze`` and ``report`` on a folded window, replay's whole-run timeline).

A compacted chunk stores a metric's 256 readings as fixed-width differences with their bytes regrouped by
significance (:mod:`zfsmon.store.codec`). numpy undoes that in a few calls per column (regroup, view, running
sum), where the list decoder makes a Python number per value; a caller then reduces the array's slices
(``numpy.add.reduceat``) instead of summing Python lists bucket by bucket. The recorder never imports this
module: it writes lists.

A column comes back as an ``int64`` array when it holds integers and as a ``float64`` array when it was stored
as thousandths (each element the float ``n / 1000``, exactly what the list decoder gives; where that is an
integer the list decoder gives an ``int`` of the same value). A column numpy cannot hold exactly (values past
2**53 stored as thousandths, running sums past int64) and a packed column come back as the list decoder's list.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from zfsmon.model import Column, Kind, SampleBlock
from zfsmon.store import codec
from zfsmon.store.reader import Recording
from zfsmon.units import FLOAT_EXACT

#: the stored differences are little-endian whatever the host (the encoder swaps on a big-endian one)
_DTYPES: Dict[int, np.dtype[Any]] = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"),
                                     8: np.dtype("<i8")}
#: a column's values, and the sum of any of them, stay inside int64 when n times the sum of its differences' sizes
#: does (checked as floats, where the widths and n allow otherwise)
_INT64_SAFE = float(2 ** 62)


def decode_column(data: bytes, n: int) -> Column:
    """One metric's column of a chunk: an array (see the module's text) or, where numpy cannot be exact, the
    list :func:`zfsmon.store.codec.decode_column` gives. ValueError on a damaged column, as the list decoder."""
    flag = data[0] if data else 0
    w = flag & 0x0F
    dtype = _DTYPES.get(w)
    if flag == codec._PACKED or dtype is None or flag & ~(0x0F | codec._SCALED) or len(data) != 1 + n * w:
        return codec.decode_column(data, n)
    diffs = np.frombuffer(data, np.uint8, count=n * w, offset=1).reshape(w, n).T.copy().view(dtype).ravel()
    if 8 * w - 1 + 2 * n.bit_length() >= 62 and float(np.abs(diffs.astype(np.float64)).sum()) * n >= _INT64_SAFE:
        return codec.decode_column(data, n)  # a value, or a sum of a bucket's values, might not fit int64
    vals = np.cumsum(diffs, dtype=np.int64)
    if flag & codec._SCALED:
        if n and int(np.abs(vals).max()) >= FLOAT_EXACT:
            return codec.decode_column(data, n)
        return vals / 1000
    return vals


def blocks(rec: Recording, streams: Optional[Sequence[int]] = None, start: Optional[float] = None,
           end: Optional[float] = None, metrics: Optional[Callable[[Kind, str], bool]] = None
           ) -> Iterator[List[SampleBlock]]:
    """:meth:`Recording.blocks`, its compacted chunks' columns decoded as arrays (the head's rows, not yet
    compacted, stay lists)."""
    return rec.blocks(streams, start, end, metrics, column=decode_column)
