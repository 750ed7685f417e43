"""Argument types shared by the subcommands (argparse ``type=`` callables): counts, numbers, durations, times.

The one place numeric command-line arguments are checked: every number is finite and within its bounds
(a count is a whole number above zero, a duration is positive and at most :data:`MAX_SECONDS`, a time is a
date a recording can hold), so a wrong value is one line and exit 2 before anything starts.
"""

from __future__ import annotations

import argparse
import math
import re
from datetime import datetime, timezone
from typing import Callable, Optional, Tuple

from zfsmon.model import TS_MAX, TS_MIN, valid_ts

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DUR = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(s|m|min|h|d|)\s*$")
#: the longest duration or interval accepted: ten years (longer is a typo, and overflows timers)
MAX_SECONDS = 10 * 366 * 86400.0
#: the largest count accepted (intervals to run, lags to try, events to list)
MAX_COUNT = 10 ** 9


def whole(lo: int = 1, hi: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: a whole number from ``lo`` to ``hi``."""
    def parse(text: str) -> int:
        t = text.strip()
        if not re.fullmatch(r"[-+]?\d{1,30}", t):
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
        v = int(t)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(_range_text(text, lo, hi))
        return v
    parse.__name__ = "whole number"
    return parse


def number(lo: float = 0.0, hi: float = MAX_SECONDS, lo_open: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number above ``lo`` (or from ``lo`` with ``lo_open=False``) up to ``hi``."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(v) or (v <= lo if lo_open else v < lo) or v > hi:
            raise argparse.ArgumentTypeError(_range_text(text, lo, hi, lo_open))
        return v
    parse.__name__ = "number"
    return parse


def _range_text(text: str, lo: float, hi: float, lo_open: bool = False) -> str:
    def f(v: float) -> str:
        return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"
    if lo_open:
        return f"must be above {f(lo)} and at most {f(hi)}: {text!r}"
    return f"must be from {f(lo)} to {f(hi)}: {text!r}"


#: a count or size: a whole number above zero
positive_int = whole(1, MAX_COUNT)
#: a TCP port
port = whole(1, 65535)


def seconds(text: str) -> float:
    """``10``, ``10s``, ``1m``, ``4h``, ``2d``, ``1.5h`` -> seconds (> 0)."""
    m = _DUR.match(text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 10s, 1m, 4h, 2d)")
    v = float(m.group(1)) * _UNITS[m.group(2)]
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    if not v <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"too long: {text!r} (at most {MAX_SECONDS / 86400:g} days)")
    return v


class When:
    """A point in time as typed: absolute (ISO-8601 / epoch) or relative to a recording's start (+D) or end (-D)."""

    def __init__(self, text: str) -> None:
        self.text = text
        t = text.strip()
        self.anchor: Optional[str] = None
        self.value = 0.0
        if t[:1] in "+-" and _DUR.match(t[1:].lower()):
            self.anchor = "start" if t[0] == "+" else "end"
            self.value = seconds(t[1:])
            return
        try:
            self.value = float(t)
        except ValueError:
            try:
                dt = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
                if dt.tzinfo is None:
                    dt = dt.replace(tzinfo=timezone.utc)
                self.value = dt.timestamp()
            except (ValueError, OverflowError):
                raise argparse.ArgumentTypeError(
                    f"not a time: {text!r} (ISO-8601 like 2024-05-01T12:00:00Z, epoch seconds, +10m from the "
                    f"start or -10m before the end)") from None
        if not valid_ts(self.value):
            raise argparse.ArgumentTypeError(f"not a possible time: {text!r} (epoch seconds from {TS_MIN:.0f} to "
                                             f"{TS_MAX:.0f}, years 1 to 9999)")

    def resolve(self, span: Optional[Tuple[float, float]]) -> float:
        if self.anchor is None or span is None:
            return self.value
        return span[0] + self.value if self.anchor == "start" else span[1] - self.value
