"""Helpers shared by parser tests: mangled variants of a real capture, and draining a streaming collector."""

from __future__ import annotations

import time
from typing import List

from hypothesis import strategies as st

from zfsmon.model import Record, Sample


def variants(text: str, data: st.DataObject) -> List[str]:
    """A truncated capture, one with junk spliced in at a random place, and junk alone."""
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(max_size=20))
    return [text[:cut], text[:cut] + junk + text[cut:], junk]


def drop_or_repeat(text: str, picks: List[int]) -> str:
    """The capture with lines dropped (odd picks) or repeated (even picks), each pick a line number modulo."""
    lines = text.splitlines()
    for k in picks:
        if lines:
            j = k % len(lines)
            if k % 2:
                del lines[j]
            else:
                lines.insert(j, lines[j])
    return "\n".join(lines)


def drain(collector, samples: int, timeout: float = 10.0) -> List[Record]:
    """Poll a started collector until it has yielded ``samples`` samples (or ``timeout`` passed)."""
    deadline = time.time() + timeout
    out: List[Record] = []
    while time.time() < deadline and sum(isinstance(r, Sample) for r in out) < samples:
        out += collector.poll()
        time.sleep(0.05)
    return out
