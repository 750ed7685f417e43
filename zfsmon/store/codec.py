"""Packs one sample's values into a few bytes, losslessly.

Why not one row per value: SQLite spends ~10 bytes of row overhead per row,
more than the value itself. A sample's values go into one BLOB instead, in the
order of an interned *layout* (the list of metric ids), each as a zigzag
varint with a 2-bit tag:

- tag 0: an integer (counters, byte counts, ``zpool iostat -p`` numbers);
  integral floats below 2**53 are stored this way and read back as ``int`` (a larger one is a float: it
  stands for many integers, so it stays one);
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
import sys
import zlib
from array import array
from itertools import accumulate
from typing import Callable, List, Optional, Sequence, Tuple, cast

from zfsmon.model import Column
from zfsmon.store import schema
from zfsmon.units import FLOAT_EXACT

_DOUBLE = struct.Struct("<d")
_EXACT = FLOAT_EXACT  # larger integral floats are not exact integers
#: integers of a magnitude below this are stored exactly (uint64 and int64 kstats, and every integer of up to the
#: 40 digits a parser reads: :data:`zfsmon.units.MAX_DIGITS`)
INT_LIMIT = 2 ** 136
#: bits of the longest varint a stored number takes: a head row's delta of two such integers, zigzagged and tagged
_VARINT_BITS = 140
#: bytes of the longest stored number: that varint, or a tag and a double
_VALUE_MAX = max(-(-_VARINT_BITS // 7), 9)


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
            z = _zigzag(int(v)) << 2
            if z >> _VARINT_BITS:
                raise ValueError(f"an integer of {int(v).bit_length()} bits is beyond what a recording holds")
            _varint(out, z)
            continue
        v = float(v)
        if abs(v) < _EXACT:  # a larger one (all are integral) stands for many integers: it stays a float
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
                if shift >= _VARINT_BITS:
                    raise ValueError("a value longer than any stored number")
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


def normalise(values: Sequence[float]) -> List[float]:
    """What :func:`unpack` will return for ``values``: integral floats become ints; an integer beyond
    :data:`INT_LIMIT` (no parser reads one) becomes the float nearest it."""
    return [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < _EXACT else
            _beyond(v) if isinstance(v, int) and abs(v) >= INT_LIMIT else v for v in values]


def _beyond(v: int) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def encode_row(values: List[float], base: Optional[List[float]], counters: Sequence[bool]) -> bytes:
    """A row's bytes: deltas at counter positions when every counter is an integer here and in ``base``
    (the previous row of the stream, normalised), else absolute values."""
    if base is not None and len(base) == len(values) and any(counters):
        out: List[float] = []
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


# --------------------------------------------------------------------------- chunks (schema 3)
# A chunk holds one stream's rows of one block of tick ids, column by column: the tick offsets within the block,
# the rows' own intervals (rare), then each metric's values. A column of integers (or of numbers that are exact
# multiples of 1/1000) is stored as the differences between neighbours, at the narrowest fixed width that holds
# them, with its bytes regrouped by significance (all low bytes, then all second bytes, ...: slowly changing
# counters become long runs of zeros); any other column is packed as above. The whole is compressed with zlib.
# Fixed widths decode with ``array`` and ``itertools.accumulate``, in C, not a byte at a time in Python.

CHUNK_ZLIB = 1  #: a chunk blob's first byte: its format
_WIDTHS = ((1, "b"), (2, "h"), (4, "i"), (8, "q"))
_CODES = dict(_WIDTHS)
_PACKED = 0
_SCALED = 0x10  #: flag of a column stored as n/1000
_BIG = sys.byteorder == "big"


def _section(out: bytearray, data: bytes) -> None:
    _varint(out, len(data))
    out += data


def _read_varint(buf: bytes, i: int) -> Tuple[int, int]:
    z = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated chunk")
        b = buf[i]
        i += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return z, i
        shift += 7
        if shift >= _VARINT_BITS:
            raise ValueError("damaged chunk: a length longer than any chunk")


def chunk_bound(rows: int, width: int) -> int:
    """The most bytes a chunk of ``rows`` samples of ``width`` metrics inflates to: its header and offsets, two
    interval sections, ``width`` columns, each value at its widest (:data:`_VALUE_MAX`), each section's length."""
    return (width + 4) * _VALUE_MAX * (rows + 2)


def _scaled(col: Sequence[float]) -> Optional[List[int]]:
    """``col`` as integers (x1 when all are ints, x1000 when all are exact thousandths), or None."""
    if all(type(v) is int for v in col):
        return list(col)  # type: ignore[arg-type]
    out = []
    for v in col:
        if type(v) is int:
            out.append(v * 1000)
        elif type(v) is float and math.isfinite(v) and abs(v) < _EXACT:
            n = round(v * 1000)
            if n / 1000 != v or n % 1000 == 0:  # integral floats are ints after normalise(): keep them apart
                return None
            out.append(n)
        else:
            return None
    return out


def _encode_column(col: Sequence[float]) -> bytes:
    ints = _scaled(col)
    if ints is not None and ints:
        deltas = [ints[0]] + [b - a for a, b in zip(ints, ints[1:])]
        big = max(max(deltas), -min(deltas))
        for w, code in _WIDTHS:
            if big < 1 << (8 * w - 1):
                arr = array(code, deltas)
                if _BIG:
                    arr.byteswap()
                raw = arr.tobytes()
                flag = w | (0 if all(type(v) is int for v in col) else _SCALED)
                return bytes((flag,)) + b"".join(raw[k::w] for k in range(w))
    return bytes((_PACKED,)) + pack(col)


def decode_column(data: bytes, n: int) -> List[float]:
    """One metric's column of a chunk (``n`` values) as numbers: ints, or floats where they were stored so."""
    flag = data[0]
    if flag == _PACKED:
        vals = unpack(data[1:])
    else:
        w = flag & 0x0F
        code = _CODES.get(w)
        if code is None or len(data) != 1 + n * w:
            raise ValueError("damaged chunk column")
        buf = bytearray(n * w)
        for k in range(w):
            buf[k::w] = data[1 + k * n:1 + (k + 1) * n]
        arr = array(code, bytes(buf))
        if _BIG:
            arr.byteswap()
        vals = list(accumulate(arr))
        if flag & _SCALED:
            vals = [v // 1000 if v % 1000 == 0 else v / 1000 for v in vals]
    if len(vals) != n:
        raise ValueError("damaged chunk column")
    return vals


def encode_chunk(offsets: Sequence[int], ivs: Sequence[Optional[float]], rows: Sequence[Sequence[float]],
                 width: int, level: int = 6) -> bytes:
    """One stream's rows of one block: tick offsets in the block, each row's own interval (None: the stream's)
    and its normalised values (``width`` of them per row)."""
    n = len(offsets)
    body = bytearray()
    with_iv = [(i, v) for i, v in enumerate(ivs) if v is not None]
    _section(body, pack([n, width, len(with_iv)]))
    _section(body, _encode_column(offsets))
    if with_iv:
        _section(body, pack([i for i, _ in with_iv]))
        _section(body, pack([v for _, v in with_iv]))
    for col in zip(*rows) if n else ():
        _section(body, _encode_column(col))
    return bytes((CHUNK_ZLIB,)) + zlib.compress(bytes(body), level)


def decode_chunk(blob: bytes, width: int, rows: int = schema.CHUNK_TICKS
                 ) -> Tuple[List[int], List[Optional[float]], List[tuple]]:
    """Inverse of :func:`encode_chunk`: (offsets, intervals, rows as tuples). ValueError if damaged."""
    offsets, ivs, cols = decode_chunk_columns(blob, width, rows)
    return offsets, ivs, list(zip(*cols)) if cols else [()] * len(offsets)


def decode_chunk_columns(blob: bytes, width: int, rows: int = schema.CHUNK_TICKS,
                         keep: Optional[Sequence[int]] = None,
                         column: Optional[Callable[[bytes, int], Column]] = None
                         ) -> Tuple[List[int], List[Optional[float]], List[Column]]:
    """Like :func:`decode_chunk`, but the values as they are stored: one list per metric (what a column-wise
    reader such as downsampling wants, without building a tuple per sample). ``width``: the columns the chunk must
    hold; ``rows``: the samples its row says it holds (both bound what it may inflate to: :func:`chunk_bound`);
    ``keep``: only these columns are decoded and returned (a reader that wants a few metrics of many);
    ``column(data, n)``: decodes one metric's column instead of :func:`decode_column` (an array decoder:
    :mod:`zfsmon.store.arrays`)."""
    if not blob or blob[0] != CHUNK_ZLIB:
        raise ValueError("unknown chunk format")
    if not 0 <= rows <= schema.CHUNK_TICKS:
        raise ValueError(f"damaged chunk: {rows} samples in a block of {schema.CHUNK_TICKS} ticks")
    bound = chunk_bound(rows, width)
    inflate = zlib.decompressobj()
    try:
        body = inflate.decompress(blob[1:], bound + 1)
    except zlib.error as exc:
        raise ValueError(f"damaged chunk ({exc})") from None
    if len(body) > bound or inflate.unconsumed_tail:
        raise ValueError(f"damaged chunk: it inflates past the {bound} bytes {rows} samples of {width} metrics take")
    if not inflate.eof:
        raise ValueError("damaged chunk (incomplete or truncated stream)")
    sections = []
    i = 0
    while i < len(body):
        size, i = _read_varint(body, i)
        if i + size > len(body):
            raise ValueError("truncated chunk")
        sections.append(body[i:i + size])
        i += size
    head = unpack(sections[0]) if sections else []
    if len(head) != 3 or not all(type(x) is int and x >= 0 for x in head):
        raise ValueError("damaged chunk header")
    n, held, k = map(int, head)  # ints: checked above
    if held != width:
        raise ValueError(f"damaged chunk: {held} columns for {width} metrics")
    want = 2 + (2 if k else 0) + (held if n else 0)
    if len(sections) != want:
        raise ValueError("damaged chunk: wrong number of columns")
    # the recorder writes tick offsets as ints; a damaged column's other numbers miss the tick table, as any
    # wrong offset does (a reader's damage)
    offsets = cast(List[int], decode_column(sections[1], n))
    ivs: List[Optional[float]] = [None] * n
    if k:
        where, what = cast(List[int], unpack(sections[2])), unpack(sections[3])  # positions: written as ints
        if len(where) != k or len(what) != k:
            raise ValueError("damaged chunk intervals")
        for j, v in zip(where, what):
            ivs[j] = float(v)  # an index out of range raises IndexError, a fraction TypeError: damage
    values = sections[want - held:] if n else []
    dec = column or decode_column
    cols = [dec(s, n) for s in values] if keep is None else [dec(values[j], n) for j in keep]
    return offsets, ivs, cols
