"""The one place where ZFS-style numbers are read and written: ``1.34T``, ``77.3K``, ``953ns``, ``32ms``, ``-``.

ZFS tools print numbers with ``zfs_nicenum``: powers of 1024 with a one-letter
suffix (``K M G T P E``) for bytes *and* counts (ops, queue lengths, histogram
buckets), powers of 1000 with ``ns us ms s`` for times, and ``-`` where there
is nothing to show (no I/O, no capacity for a leaf).  ``-p`` prints the exact
integers instead.  Readers parse with :func:`parse_size` / :func:`parse_count`
/ :func:`parse_duration_ns` (after checking :func:`is_missing`); views format
with :func:`human_size` / :func:`human_count` / :func:`human_ns`, which print
the same shapes ``zpool iostat`` prints, so our tables read like the tool's.

This module lives under ``views`` because formatting is a view concern, but it
does no I/O and sources may import it for parsing.
"""

from __future__ import annotations

import math
import re
from typing import Optional, Sequence

__all__ = ["MISSING", "is_missing", "parse_size", "parse_count", "parse_duration_ns", "human_size",
           "human_count", "human_ns", "human_rate"]

#: what ZFS prints for "no value"
MISSING = "-"

_SIZE_SUFFIXES = "KMGTPE"
_TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_NUM_RE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([A-Za-zµ]*)$")


#: digits a number read from ZFS text may have: a 64-bit counter has 20; longer digit runs are damage, not numbers
MAX_DIGITS = 40


def whole(text: str) -> int:
    """A run of digits (optionally signed) as an int; more than :data:`MAX_DIGITS` digits is a ValueError.

    Python's ``int()`` reads thousands of digits slowly and fails at 4,300 with a
    message about a limit the user never set: damaged input gets a plain error.
    """
    t = text.strip()
    if len(t.lstrip("+-")) > MAX_DIGITS:
        raise ValueError(f"number out of range ({len(t.lstrip('+-'))} digits)")
    return int(t)


#: integers of a smaller magnitude are exact as floats
FLOAT_EXACT = 2 ** 53


def exact(n: int) -> float:
    """An integer read from a capture as the number a metric holds: the float equal to it where a float holds
    it exactly, else the int itself (uint64 kstats such as ``zil_itx_needcopy_bytes 18446744073709537686``):
    never a float that stands for many integers."""
    return float(n) if -FLOAT_EXACT < n < FLOAT_EXACT else n


def plain_int(text: str) -> bool:
    """ASCII digits only, no more than :data:`MAX_DIGITS`: what the parsers read with ``int``/``float`` at once
    (most values of ``-p`` output and kstats), leaving everything else to their general path."""
    return text.isdigit() and text.isascii() and len(text) <= MAX_DIGITS


def plain_ints(tokens: Sequence[str]) -> bool:
    """Every token :func:`plain_int` (a non-empty row), told in a few C calls instead of one test per token."""
    joined = "".join(tokens)
    return joined.isdigit() and joined.isascii() and max(map(len, tokens)) <= MAX_DIGITS


def is_missing(text: str) -> bool:
    """``-`` (and the empty string): the value is absent, which is not the same as 0."""
    return text.strip() in ("", MISSING)


def _split(text: str, what: str) -> tuple[float, str]:
    m = _NUM_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a {what}: {text!r}")
    value = float(m.group(1))
    if len(m.group(1)) > MAX_DIGITS or not math.isfinite(value):
        raise ValueError(f"{what} out of range: {len(m.group(1))} digits")
    return value, m.group(2)


def parse_size(text: str) -> float:
    """``242G`` -> 259846242304.0 bytes (1024-based); ``309``, ``309B`` and exact ``-p`` integers read as-is.

    Raises ValueError for ``-`` and anything that is not a size: callers decide
    what a missing value means (for metrics: absent, never 0).
    """
    if plain_int(text):  # -p's exact integers: most values
        return float(text)
    value, suffix = _split(text, "size")
    suffix = suffix.upper()
    if suffix in ("", "B"):
        return value
    if suffix.endswith("B") or suffix.endswith("I"):  # "KB", "KiB" (other tools)
        suffix = suffix.rstrip("BI") or suffix
    if len(suffix) == 1 and suffix in _SIZE_SUFFIXES:
        return value * 1024.0 ** (_SIZE_SUFFIXES.index(suffix) + 1)
    raise ValueError(f"unknown size suffix in {text!r}")


def parse_count(text: str) -> float:
    """Counts (ops, queue depths, histogram buckets) use the same 1024-based suffixes as sizes in ZFS tools."""
    if plain_int(text):  # a plain count: most values
        return float(text)
    value, suffix = _split(text, "count")
    if suffix == "":
        return value
    if len(suffix) == 1 and suffix.upper() in _SIZE_SUFFIXES:
        return value * 1024.0 ** (_SIZE_SUFFIXES.index(suffix.upper()) + 1)
    raise ValueError(f"unknown count suffix in {text!r}")


def parse_duration_ns(text: str) -> float:
    """``953ns`` / ``874us`` / ``32ms`` / ``2s`` -> nanoseconds; a bare number (``-p`` output) is already ns."""
    value, unit = _split(text, "duration")
    if unit == "":
        return value
    factor = _TIME_UNITS.get(unit)
    if factor is None:
        raise ValueError(f"unknown time unit in {text!r}")
    return value * factor


def _nicenum(value: float, base: int, units: tuple[str, ...], time_format: bool) -> str:
    """zfs_nicenum's rules: exact multiples print whole; otherwise the most decimals that fit in 5 characters."""
    n = int(round(value))
    index = 0
    scaled = n
    while scaled >= base and index < len(units) - 1:
        scaled //= base
        index += 1
    unit = units[index]
    if index == 0 or n % (base ** index) == 0:
        return f"{n // (base ** index)}{unit}"
    val = n / float(base ** index)
    if time_format:  # ZFS floors times and never shows decimals for them
        return f"{int(math.floor(val))}{unit}"
    for digits in (2, 1, 0):
        text = f"{val:.{digits}f}{unit}"
        if len(text) <= 5:
            return text
    return text


def human_size(value: Optional[float]) -> str:
    """Bytes as ``zpool iostat`` shows them: ``512``, ``77.3K``, ``1.34T``; None -> ``-``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if value < 0:
        return "-" + human_size(-value)
    return _nicenum(value, 1024, ("",) + tuple(_SIZE_SUFFIXES), False)


def human_count(value: Optional[float]) -> str:
    """Ops or queue lengths, 1024-based like ZFS (``4.44K`` ops); None -> ``-``."""
    return human_size(value)


def human_rate(value: Optional[float]) -> str:
    """A per-second byte rate; same shape as sizes (``zpool iostat`` prints bandwidth without ``/s``)."""
    return human_size(value)


def human_ns(value: Optional[float]) -> str:
    """Nanoseconds as ``953ns``, ``874us``, ``32ms``, ``2s``; 0 and None print ``-`` as ``zpool iostat -l`` does."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        return MISSING
    return _nicenum(value, 1000, ("ns", "us", "ms", "s"), True)
