"""A number no counter can hold (Python's int() stops at 4,300 digits) is the parser's ParseError, per kind.

``zfsmon parse``/``import`` also turn a stray ValueError into one line, which keeps the user's promise but
would hide a parser that never checked: so the kinds whose parsers call int() themselves are checked here
directly, on real captures with one value made 4,301 digits long.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zfsmon.model import ParseError
from zfsmon.sources import detect
from zfsmon.units import MAX_DIGITS, whole

DATA = Path(__file__).resolve().parents[1] / "data"
HUGE = "9" * 4301

# (kind, capture, a regex whose first group is a number in that capture)
CASES = [
    ("diskstats", DATA / "linux-host/diskstats-loop.txt", r"^\s*\d+\s+\d+\s+\S+\s+(\d+)"),
    ("txgs-kstat", DATA / "openzfs-2.3/kstat/zguest.txgs", r"^(\d+)\s"),
    ("bpftrace-hist", DATA / "linux-host/bpftrace-hist-nr_sector.txt", r"\)\s+(\d+)\s+\|"),
]


@pytest.mark.parametrize("kind,path,pattern", CASES, ids=[c[0] for c in CASES])
def test_a_4301_digit_value_is_a_parse_error(kind: str, path: Path, pattern: str) -> None:
    text = path.read_text()
    assert detect.get(kind).parse(text, path.name, None), "the capture itself parses"
    m = re.search(pattern, text, re.MULTILINE)
    assert m, f"no number to damage in {path}"
    damaged = text[:m.start(1)] + HUGE + text[m.end(1):]
    with pytest.raises(ParseError):
        detect.get(kind).parse(damaged, path.name, None)


def test_whole_reads_counters_and_refuses_damage() -> None:
    assert whole("18446744073709551615") == 2**64 - 1
    assert whole("-12") == -12
    with pytest.raises(ValueError, match="digits"):
        whole("1" * (MAX_DIGITS + 1))
