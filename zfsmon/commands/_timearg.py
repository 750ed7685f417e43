"""Argument types shared by the subcommands (argparse ``type=`` callables): counts, durations, times."""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timezone
from typing import Optional, Tuple

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DUR = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(s|m|min|h|d|)\s*$")


def positive_int(text: str) -> int:
    """A count or size: a whole number above zero."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def seconds(text: str) -> float:
    """``10``, ``10s``, ``1m``, ``4h``, ``2d``, ``1.5h`` -> seconds (> 0)."""
    m = _DUR.match(text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 10s, 1m, 4h, 2d)")
    v = float(m.group(1)) * _UNITS[m.group(2)]
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
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
            return
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a time: {text!r} (ISO-8601 like 2024-05-01T12:00:00Z, epoch seconds, +10m from the start "
                f"or -10m before the end)") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        self.value = dt.timestamp()

    def resolve(self, span: Optional[Tuple[float, float]]) -> float:
        if self.anchor is None or span is None:
            return self.value
        return span[0] + self.value if self.anchor == "start" else span[1] - self.value
