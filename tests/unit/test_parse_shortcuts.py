"""The parsers' plain-digit shortcuts read exactly what their general paths read.

Collecting on OpenZFS parses hundreds of plain integers per second (``zpool iostat -w``'s buckets, kstats,
txgs, /proc/diskstats); each parser tells a line of plain digits in a few C calls and takes the general,
value-by-value path only for anything else. These tests hold the two paths to the same answer, including
where the general path refuses the text.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from zfsmon.model import ParseError
from zfsmon.sources.devices import diskstats
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.kstat import txgs
from zfsmon.sources.zpool.iostat_columns import parse_header
from zfsmon.sources.zpool.iostat_histogram import HistogramTable, bucket_label
from zfsmon.units import MAX_DIGITS, _split, exact, parse_count, parse_size, whole

ASCII_DIGITS = st.text("0123456789", min_size=1, max_size=MAX_DIGITS + 5)
#: what a value column of zpool or a kstat may hold, plain digits most often
TOKENS = st.one_of(ASCII_DIGITS, st.sampled_from(["-", "5.50K", "1.2M", "0.0", "12x", "٣", "1e3", "nan"]))


@given(ASCII_DIGITS)
def test_counts_and_sizes_of_plain_digits_read_as_the_general_path_reads_them(t):
    for fn in (parse_count, parse_size):
        if len(t) > MAX_DIGITS:
            with pytest.raises(ValueError):
                fn(t)
        else:
            assert fn(t) == _split(t, "count")[0] == float(int(t))


@given(ASCII_DIGITS)
def test_a_plain_kstat_number_is_its_exact_integer(t):
    if len(t) > MAX_DIGITS:
        with pytest.raises(ValueError):
            kstat_text.to_number(t)
    else:
        assert kstat_text.to_number(t) == exact(whole(t)) and type(kstat_text.to_number(t)) is type(exact(whole(t)))


def _proc_text(rows: List[Tuple[str, int, str]], sep: str) -> str:
    body = "".join(f"{n}{sep}{t}{sep}{v}\n" for n, t, v in rows)
    return f"13 1 0x01 {len(rows)} {len(rows) * 40} 1 2\nname{sep}type{sep}data\n{body}"


def _reference(rows: List[Tuple[str, int, str]]) -> Tuple[Dict[str, float], Dict[str, str]]:
    """What the row regex and the general number reader make of the rows (the parser before its shortcut)."""
    values: Dict[str, float] = {}
    strings: Dict[str, str] = {}
    for n, t, v in rows:
        if t in (0, 7):
            strings[n] = v
        else:
            num = kstat_text.to_number(v) if not v.isdigit() or not v.isascii() else exact(whole(v))
            if num is None:
                raise ParseError("ref", None, "not a number")
            values[n] = num
    return values, strings


@settings(max_examples=200)
@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True), st.sampled_from([0, 1, 3, 4, 7]),
                          TOKENS), min_size=1, max_size=12, unique_by=lambda r: r[0]),
       st.sampled_from([" ", "    ", "\t"]))
def test_named_kstat_rows_read_as_the_row_pattern_reads_them(rows, sep):
    text = _proc_text(rows, sep)
    try:
        want = _reference(rows)
    except (ParseError, ValueError):
        with pytest.raises(ParseError):
            kstat_text.parse_proc_table(text)
        return
    got = kstat_text.parse_proc_table(text)
    assert (got.values, got.strings) == want
    for n, t, _v in rows:
        assert re.match(kstat_text._ROW_RE, f"{n}{sep}{t}{sep}{_v}")  # every row also matched the pattern


def test_named_kstat_rows_the_shortcut_leaves_to_the_pattern():
    """A string value with spaces, and an empty one, are more or fewer than three tokens: the pattern reads them."""
    text = "5 1 0x01 3 120 1 2\nname type data\nname 7 pool zguest/db\nempty 7\nhits 4 12\n"
    t = kstat_text.parse_proc_table(text)
    assert t.strings == {"name": "pool zguest/db", "empty": ""} and t.values == {"hits": 12.0}


def _latency_header():
    lines = (TEST_DATA / "openzfs-2.3" / "run2" / "zpool-iostat-wpyvTu.txt").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("zguest") and "total_wait" in ln)
    return parse_header(lines[i], lines[i + 1])


@settings(max_examples=200)
@given(st.sampled_from(["1ns", "131us", "2ms", "17s", "137s", "1024"]), st.data())
def test_histogram_rows_read_value_by_value_or_at_once_alike(label, data):
    header = _latency_header()
    values = data.draw(st.lists(TOKENS, min_size=len(header.columns), max_size=len(header.columns)))
    bucket = bucket_label(header.histogram or "", label)
    want: Dict[str, float] = {}
    try:
        for col, raw in zip(header.columns, values):
            if raw != "-":
                want[f"{col.metric}_{bucket}"] = col.parse(raw)
    except ValueError:
        with pytest.raises(ValueError):
            HistogramTable(header).add_row([label, *values], "", "t", 1)
        return
    table = HistogramTable(header)
    table.add_row([label, *values], "", "t", 1)
    assert table.values == want


def _txg_line(tokens: List[str]) -> str:
    return "txg birth state ndirty nread nwritten reads writes otime qtime wtime stime\n" + " ".join(tokens) + "\n"


@settings(max_examples=200)
@given(st.lists(TOKENS, min_size=11, max_size=11), st.sampled_from(["C", "S", "O", "CC", "1", "é"]))
def test_txg_rows_read_at_once_or_refused_as_before(nums, state):
    tokens = nums[:2] + [state] + nums[2:]
    ok = all(t.isascii() and t.isdigit() and len(t) <= MAX_DIGITS for t in nums) and len(state) == 1 \
        and state.isalpha()
    if not ok:
        with pytest.raises(ParseError):
            txgs.parse_txgs(_txg_line(tokens))
        return
    (row,) = txgs.parse_txgs(_txg_line(tokens))
    numeric = [c for c in txgs.TXG_COLUMNS if c != "state"]
    assert row.state == state and row.values == {c: int(t) for c, t in zip(numeric, nums)}
    assert (row.txg, row.birth) == (int(nums[0]), int(nums[1]))


@settings(max_examples=200)
@given(st.lists(TOKENS, min_size=17, max_size=17))
def test_diskstats_lines_read_at_once_or_refused_as_before(vals):
    line = "259 0 nvme0n1 " + " ".join(vals) + "\n"
    if not all(t.isascii() and t.isdigit() and len(t) <= MAX_DIGITS for t in vals):
        with pytest.raises(ParseError):
            diskstats.parse_diskstats(line, 1.0)
        return
    (s,) = diskstats.parse_diskstats(line, 1.0)
    assert s.metrics == {m: float(int(t) * scale) for (m, scale), t in zip(diskstats._FIELDS, vals)}
