"""Unit parsing and formatting: every number zpool iostat printed in the captures reads back and prints the same."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files
from zfsmon.units import (
    human_count,
    human_ns,
    human_size,
    is_missing,
    parse_count,
    parse_duration_ns,
    parse_size,
)

K = 1024.0


def test_sizes():
    assert parse_size("242G") == 242 * K ** 3
    assert parse_size("77.3K") == pytest.approx(77.3 * K)
    assert parse_size("1.34T") == pytest.approx(1.34 * K ** 4)
    assert parse_size("309") == 309.0 and parse_size("309B") == 309.0
    assert parse_size("1483556872192") == 1483556872192.0  # -p
    for bad in ("-", "", "1.2X", "K", "1..2K"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_durations_and_counts():
    assert parse_duration_ns("953ns") == 953.0
    assert parse_duration_ns("874us") == 874e3
    assert parse_duration_ns("32ms") == 32e6
    assert parse_duration_ns("2s") == 2e9
    assert parse_duration_ns("12345") == 12345.0  # -p prints ns
    assert parse_count("4.44K") == pytest.approx(4.44 * K)  # ZFS counts are 1024-based too
    with pytest.raises(ValueError):
        parse_duration_ns("3 days")
    with pytest.raises(ValueError):
        parse_count("3ms")
    assert is_missing("-") and is_missing(" ") and not is_missing("0")


def test_formatting_follows_zfs_nicenum():
    assert human_size(0) == "0" and human_size(512) == "512" and human_size(1024) == "1K"
    assert human_size(79155) == "77.3K" and human_size(5120) == "5K"
    assert human_size(None) == "-"
    assert human_ns(953) == "953ns" and human_ns(1_500_000) == "1ms"  # times are floored, never decimals
    assert human_ns(0) == "-" and human_ns(None) == "-"
    assert human_count(4546) == "4.44K"


def _printed_values():
    """(token, kind) for every humanised value in the zpool iostat captures (not the -p ones)."""
    out = []
    paths = [p for p in fixture_files("zpool_iostat") if "-pH" not in p.name]
    paths += sorted((TEST_DATA / "zfsfuse").glob("zpool_iostat*.txt"))
    for p in paths:
        for line in p.read_text().splitlines():
            toks = line.split()
            if len(toks) < 2 or not all(re.match(r"^(-|\d+(\.\d+)?[A-Za-z]{0,2})$", t) for t in toks[1:]):
                continue
            for t in toks[1:]:
                if t != "-":
                    out.append(t)
    return sorted(set(out))


def test_every_printed_value_round_trips():
    """What zpool printed, read and printed again, is the same text: one formatter, matching ZFS's."""
    tokens = _printed_values()
    assert len(tokens) > 300
    for t in tokens:
        if t.endswith("s"):
            assert human_ns(parse_duration_ns(t)) == t
        elif re.match(r"^\d+\.0+[KMGT]$", t):  # "11.0M": a value just off the exact multiple
            assert human_size(parse_size(t) + 1) == t, t
        else:
            assert human_size(parse_size(t)) == t, t


@given(st.integers(min_value=0, max_value=2 ** 62))
def test_human_size_reads_back_within_its_precision(n):
    text = human_size(n)
    assert len(text) <= 5 or text.isdigit() or text[-1] == "E"
    assert parse_size(text) == pytest.approx(n, rel=0.01, abs=0.5)
