"""Packs one sample's values into a few bytes, losslessly.

Why not one row per value: SQLite spends ~10 bytes of row overhead per row,
more than the value itself. A sample's values go into one BLOB instead, in the
order of an interned *layout* (the list of metric ids), each as a zigzag
varint with a 2-bit tag:

- tag 0: an integer (counters, byte counts, ``zpool iostat -p`` numbers);
  integral floats are stored this way and read back as ``int``;
- tag 1: a float that is exactly ``n / 1000`` (``12.3``, ``0.125``);
- tag 3: a float that is exactly ``n / 1000000``;
- tag 2: any other float (NaN, inf, ``1/3``): 8 raw bytes follow.

Typical kstat and ``zpool iostat`` values take 1-5 bytes instead of 8.

A stored row (schema 2) starts with one flag byte: :data:`ABSOLUTE`, or
:data:`DELTA` when its counters are stored as the increase since the previous
row of the same stream (cumulative kstat counters of a long-running host are
10-11 digits; their per-second increase is 1-3 bytes). :func:`encode_row`
decides, :func:`decode_row` undoes it.
"""

from __future__ import annotations

import math
import struct
from typing import List, Optional, Sequence

_DOUBLE = struct.Struct("<d")


def _zigzag(n: int) -> int:
    return n << 1 if n >= 0 else ((-n) << 1) - 1


def _unzigzag(z: int) -> int:
    return z >> 1 if not z & 1 else -((z + 1) >> 1)


def _varint(out: bytearray, z: int) -> None:
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def pack(values: Sequence[float]) -> bytes:
    """Encode numbers (int or float) so that :func:`unpack` returns equal numbers."""
    out = bytearray()
    for v in values:
        if isinstance(v, int):  # bool is an int: stored as 0/1
            _varint(out, _zigzag(int(v)) << 2)
            continue
        v = float(v)
        if math.isfinite(v):
            if v.is_integer():
                _varint(out, _zigzag(int(v)) << 2)
                continue
            n = round(v * 1000)
            if n / 1000 == v:
                _varint(out, (_zigzag(n) << 2) | 1)
                continue
            n = round(v * 1000000)
            if n / 1000000 == v:
                _varint(out, (_zigzag(n) << 2) | 3)
                continue
        out.append(2)
        out += _DOUBLE.pack(v)
    return bytes(out)


def unpack(blob: bytes) -> List[float]:
    """Decode a :func:`pack` result. Raises ValueError on a damaged blob."""
    vals: List[float] = []
    i = 0
    end = len(blob)
    while i < end:
        b = blob[i]
        i += 1
        if b < 0x80:
            z = b
        else:
            z = b & 0x7F
            shift = 7
            while True:
                if i >= end:
                    raise ValueError("truncated value")
                b = blob[i]
                i += 1
                z |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
        tag = z & 3
        if tag == 2:
            if i + 8 > end:
                raise ValueError("truncated double")
            vals.append(_DOUBLE.unpack_from(blob, i)[0])
            i += 8
            continue
        n = _unzigzag(z >> 2)
        vals.append(n if tag == 0 else n / 1000 if tag == 1 else n / 1000000)
    return vals


ABSOLUTE = 0
DELTA = 1
_EXACT = 2 ** 53  # larger integral floats are not exact integers


def normalise(values: Sequence[float]) -> List[float]:
    """What :func:`unpack` will return for ``values``: integral floats become ints."""
    return [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < _EXACT else v for v in values]


def encode_row(values: List[float], base: Optional[List[float]], counters: Sequence[bool]) -> bytes:
    """A row's bytes: deltas at counter positions when every counter is an integer here and in ``base``
    (the previous row of the stream, normalised), else absolute values."""
    if base is not None and len(base) == len(values) and any(counters):
        out = []
        for v, b, c in zip(values, base, counters):
            if c:
                if type(v) is not int or type(b) is not int:
                    break
                out.append(v - b)
            else:
                out.append(v)
        else:
            return bytes((DELTA,)) + pack(out)
    return bytes((ABSOLUTE,)) + pack(values)


def decode_row(blob: bytes, base: Optional[List[float]], counters: Sequence[bool]) -> List[float]:
    """Inverse of :func:`encode_row`; ``base`` is the previous decoded row of the stream."""
    if not blob:
        raise ValueError("empty row")
    vals = unpack(blob[1:])
    if blob[0] == ABSOLUTE:
        return vals
    if blob[0] != DELTA:
        raise ValueError(f"unknown row flag {blob[0]}")
    if base is None or len(base) != len(vals):
        raise ValueError("delta row without the row it follows")
    return [v + b if c else v for v, b, c in zip(vals, base, counters)]
