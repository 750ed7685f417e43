"""Chunk columns decoded as numpy arrays (zfsmon.store.arrays) hold what the list decoder gives, value for value:
on every column of the real recordings that have chunks (the OpenZFS 2.3 guest's, the 100-minute lab soak) and on
columns hypothesis makes at the edges numpy cannot hold (sums past int64, thousandths past 2**53)."""

from __future__ import annotations

import zlib
from typing import List, Sequence, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zfsmon.model import Kind, Sample
from zfsmon.store import Recorder, Recording, arrays, codec


def _columns(path: str) -> List[Tuple[bytes, int]]:
    """Every metric column (and tick offsets column) of every chunk of a recording, as stored."""
    out = []
    with Recording.open(path) as rec:
        for (blob,) in rec._db.execute("SELECT data FROM chunk"):
            body = zlib.decompress(blob[1:])
            i, sections = 0, []
            while i < len(body):
                size, i = codec._read_varint(body, i)
                sections.append(body[i:i + size])
                i += size
            n, _width, k = codec.unpack(sections[0])
            out += [(s, n) for s in [sections[1]] + sections[2 + (2 if k else 0):]]
    return out


def _same(got: Sequence[float], want: List[float]) -> None:
    """Equal value for value; an int64 array holds ints, a float64 array the list's floats (or its ints' values)."""
    if isinstance(got, np.ndarray):
        assert got.dtype in (np.int64, np.float64) and got.shape == (len(want),)
        vals = got.tolist()
        if got.dtype == np.int64:
            assert all(type(v) is int for v in want)
        else:
            assert all(type(v) is float or (type(v) is int and float(v).is_integer()) for v in want)
        assert vals == want
    else:
        assert got == want and [type(v) for v in got] == [type(v) for v in want]


@pytest.mark.parametrize("which", ["guest", "soak"])
def test_every_chunk_column_of_real_recordings_decodes_to_the_lists_values(real_recordings, lab_soak_file, which):
    path = real_recordings["guest"] if which == "guest" else lab_soak_file
    cols = _columns(path)
    assert len(cols) > 5000
    flags = {data[0] for data, _n in cols}
    assert {0x01, 0x02, 0x04, 0x08, 0x18} <= flags  # widths 1-8, thousandths at width 8, and packed ones (0)
    as_arrays = 0
    for data, n in cols:
        got = arrays.decode_column(data, n)
        _same(got, codec.decode_column(data, n))
        as_arrays += isinstance(got, np.ndarray)
    fixed = sum(1 for data, _n in cols if data[0] != 0)
    assert as_arrays == fixed  # every fixed-width column of these became an array: none is near a limit


_INT = st.one_of(st.integers(-300, 300), st.integers(-2 ** 40, 2 ** 40), st.integers(-2 ** 63 + 1, 2 ** 63 - 1))
_MILLI = st.integers(-2 ** 55, 2 ** 55).filter(lambda n: n % 1000 != 0).map(lambda n: n / 1000)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_INT, _MILLI), min_size=1, max_size=256))
def test_any_column_decodes_to_the_lists_values(values):
    """Including deltas that fit 8 bytes whose running sum or whose bucket sums would not fit int64, and
    thousandths past float64's exact integers: those come back as the list decoder's list."""
    col = codec.normalise(values)
    data = codec._encode_column(col)
    want = codec.decode_column(data, len(col))
    assert want == col
    got = arrays.decode_column(data, len(col))
    _same(got, want)
    if isinstance(got, np.ndarray) and got.dtype == np.int64:  # any sum of its values fits int64
        assert sum(abs(v) for v in want) < 2 ** 63


def test_columns_at_the_limits_fall_back_to_lists():
    big = [2 ** 62, 2 ** 62 + 1, 2 ** 62 + 2]  # differences fit 8 bytes, a bucket's sum would not fit int64
    data = codec._encode_column(big)
    assert data[0] == 8 and isinstance(arrays.decode_column(data, 3), list)
    milli = [2 ** 53 / 1000 + 0.5, 1.5]  # thousandths past 2**53: not exact as float64 arithmetic
    data = codec._encode_column(codec.normalise(milli))
    assert data[0] & 0x10 and isinstance(arrays.decode_column(data, 2), list)
    small = [1.5, 2, 2.25]
    got = arrays.decode_column(codec._encode_column(codec.normalise(small)), 3)
    assert isinstance(got, np.ndarray) and got.tolist() == [1.5, 2.0, 2.25]
    with pytest.raises(ValueError):
        arrays.decode_column(codec._encode_column(small)[:-1], 3)  # damaged: as the list decoder


@pytest.mark.parametrize("window", [(None, None), (40, 100), (7, 333), (100, None)])
def test_blocks_as_arrays_hold_what_blocks_hold(real_recordings, window):
    """The guest's recording, whole and cut inside chunks (its tick times go back 17 times: a cut may keep
    readings that are not one slice), by entity too."""
    with Recording.open(real_recordings["guest"]) as rec:
        t0, _t1 = rec.time_range()
        start, end = (None if w is None else t0 + w for w in window)
        for streams in (None, rec.select_streams(["leaf:zguest/virtio-data0", "arc"])):
            a = [sb for g in arrays.blocks(rec, streams, start, end) for sb in g]
            b = [sb for g in rec.blocks(streams, start, end) for sb in g]
            assert len(a) == len(b) > 0
            seen = 0
            for x, y in zip(a, b):
                assert (x.ts, x.names, x.entities, x.source, x.intervals) == (y.ts, y.names, y.entities, y.source,
                                                                              y.intervals)
                for c, d in zip(x.cols, y.cols):
                    _same(c, d)
                    seen += isinstance(c, np.ndarray)
            assert seen > 0


def test_a_window_across_a_clock_step_keeps_the_arrays_readings(real_recordings, tmp_path):
    """A clock stepped back 200 s inside a compacted block: a window then keeps readings of the block that are
    not one slice (the array is indexed by the kept positions, as the lists are)."""
    with Recording.open(real_recordings["guest"]) as rec:
        real = [s for s in rec.samples(kinds=[Kind.ARC]) if s.source == "arcstats"]
    path = str(tmp_path / "step.zfsmon")
    t0 = 1_800_000_000.0
    with Recorder(path, {"host": "h", "interval": 1}) as w:
        for i in range(600):
            s = real[i % len(real)]
            w.write([Sample(t0 + i - (200 if i >= 300 else 0), s.entity, dict(s.metrics), 1.0, source=s.source)])
    with Recording.open(path) as rec:
        assert rec._db.execute("SELECT count(*) FROM chunk").fetchone()[0] >= 2
        a = [sb for g in arrays.blocks(rec, None, t0 + 260, t0 + 280) for sb in g]
        b = [sb for g in rec.blocks(None, t0 + 260, t0 + 280) for sb in g]
    assert [x.ts for x in a] == [y.ts for y in b] and any(x.ts != sorted(x.ts) for x in a)
    arrays_seen = 0
    for x, y in zip(a, b):
        for c, d in zip(x.cols, y.cols):
            _same(c, d)
            arrays_seen += isinstance(c, np.ndarray)
    assert arrays_seen > 10
