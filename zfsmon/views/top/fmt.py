"""Numbers and sparklines for the dashboard's panels: humanized by default, exact with the raw toggle.

Formatting of sizes/counts/times is :mod:`zfsmon.units` (the shapes ZFS
tools print); this only adds the dashboard's choices on top: ``µs`` for
microseconds, a raw mode, percentages, and block-character sparklines.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from rich.text import Span, Text

from zfsmon import units
from zfsmon.errors import printable
from zfsmon.views import thresholds

BLOCKS = "▁▂▃▄▅▆▇█"


def num(value: Optional[float], unit: str, raw: bool = False) -> str:
    """``unit``: ``B`` (bytes, B/s), ``ops`` (counts, ops/s), ``ns`` (times), ``%``, ``ms``, ``x`` (plain)."""
    if value is None:
        return units.MISSING
    if raw:
        return f"{value:.0f}" if float(value).is_integer() or abs(value) >= 1000 else f"{value:.3f}"
    if unit == "B":
        return units.human_size(value)
    if unit == "ops":
        return units.human_count(value)
    if unit == "ns":
        return units.human_ns(value).replace("us", "µs")
    if unit == "ms":
        return units.human_ns(value * 1e6).replace("us", "µs")
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def inert(line: Text) -> Text:
    """``line`` as the dashboard may draw it: a control character in it (names and texts come from the input: the
    ESC of a terminal escape sequence in a vdev's name) shown as its escape (:func:`zfsmon.errors.printable`), the
    spans moved with the text; a panel's line breaks stay. A line without one is returned as it is. Every panel's
    lines and the header pass through here on their way to the screen (:class:`~zfsmon.views.top.lines.Lines`,
    ``TopApp._put``), a table's cells before they are cut (``panels._columns``); a ``Text`` is never parsed as
    markup."""
    plain = line.plain
    if all(printable(part) == part for part in plain.split("\n")):
        return line
    parts = [ch if ch == "\n" else printable(ch) for ch in plain]
    at = [0]
    for p in parts:
        at.append(at[-1] + len(p))
    n = len(plain)
    spans = [Span(at[min(sp.start, n)], at[min(sp.end, n)], sp.style) for sp in line.spans]
    return Text("".join(parts), style=line.style, justify=line.justify, overflow=line.overflow,
                no_wrap=line.no_wrap, end=line.end, tab_size=line.tab_size, spans=spans)


def colored(value: Optional[float], unit: str, threshold: Optional[str], raw: bool = False,
            theme: str = thresholds.DEFAULT_THEME) -> Text:
    """``value`` in the colour of its level in ``theme``, with the level's mark (``!`` warn, ``!!`` crit) after
    it: the colour is never the only sign."""
    text = num(value, unit, raw)
    if not threshold:
        return Text(text)
    return Text(text + thresholds.mark(threshold, value), style=thresholds.style(threshold, value, theme))


def sparkline(points: Sequence[Tuple[float, float]], width: int, start: float, end: float,
              marks: Sequence[float] = (), lo: Optional[float] = None, hi: Optional[float] = None) -> Text:
    """Points over [start, end] averaged into ``width`` cells; cells holding a mark (run boundary) are highlighted."""
    width = max(1, width)
    span = max(end - start, 1e-9)
    sums = [0.0] * width
    counts = [0] * width
    for ts, v in points:
        i = int((ts - start) / span * width)
        if i == width:
            i -= 1
        if 0 <= i < width:
            sums[i] += v
            counts[i] += 1
    cells = [sums[i] / counts[i] if counts[i] else None for i in range(width)]
    present = [c for c in cells if c is not None]
    if not present:
        return Text(" " * width)
    lo = min(present) if lo is None else lo
    hi = max(present) if hi is None else hi
    marked = set()
    for ts in marks:
        i = int((ts - start) / span * width)
        if 0 <= i <= width:
            marked.add(min(i, width - 1))
    chars: List[str] = []
    styles: List[str] = []
    for i, c in enumerate(cells):
        ch = " " if c is None else BLOCKS[0] if hi <= lo else BLOCKS[max(0, min(7, int((c - lo) / (hi - lo) * 7.999)))]
        chars.append("|" if (c is None and i in marked) else ch)
        styles.append("bold magenta" if i in marked else "cyan")
    return runs(chars, styles)


def runs(chars: Sequence[str], styles: Sequence[str]) -> Text:
    """Cells of one character each, a span per run of one style, not per cell: a 5-minute sparkline is 40-70
    cells of mostly one style, and each span is a segment to draw."""
    plain = "".join(chars)
    spans: List[Span] = []
    start = 0
    for i in range(1, len(styles) + 1):
        if i == len(styles) or styles[i] != styles[start]:
            spans.append(Span(start, i, styles[start]))
            start = i
    return Text(plain, spans=spans)


def ms(value: Optional[float], raw: bool = False) -> str:
    """A latency in milliseconds with three significant digits (``units.human_ns`` keeps one: 1.9 ms shows as 1ms)."""
    if value is None or raw:
        return num(value, "ms", raw)
    if value < 1:
        return f"{value * 1000:.0f}µs"
    if value < 1000:
        return f"{value:.3g}ms"
    return f"{value / 1000:.3g}s"


#: the latency band's cells: p50..p99, p99..p99.9, p99.9..max, and the empty scale
BAND = (("█", "cyan"), ("▓", "yellow"), ("░", "red"), ("·", "dim"))


def decades(values: Sequence[float]) -> Tuple[int, int]:
    """The log10 range, in whole decades, that holds ``values`` (milliseconds): the band's shared scale."""
    logs = [math.log10(max(v, 1e-4)) for v in values]
    if not logs:
        return -1, 3
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    return lo, max(hi, lo + 1)


def band(pct_ms: Dict[str, float], width: int, scale: Tuple[int, int]) -> Text:
    """Latency percentiles as a bar on a log-ms scale of ``scale`` decades: p50..p99 solid, to p99.9 and to max
    lighter; a cell is drawn as the most central part of the distribution it holds."""
    width = max(1, width)
    lo, hi = scale
    step = (hi - lo) / width
    edges = [("p50", "p99", 0), ("p99", "p999", 1), ("p999", "max", 2)]
    chars: List[str] = []
    styles: List[str] = []
    for i in range(width):
        a, b = 10 ** (lo + i * step), 10 ** (lo + (i + 1) * step)
        kind = 3
        for p, q, k in edges:
            x, y = pct_ms.get(p), pct_ms.get(q)
            if x is None or y is None:
                continue
            if x < b and y >= a:
                kind = k
                break
        ch, style = BAND[kind]
        chars.append(ch)
        styles.append(style)
    return runs(chars, styles)


def age(seconds: Optional[float]) -> str:
    if seconds is None:
        return "never"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h"


def clock(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def window(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h" if s >= 3600 and s % 3600 == 0 else f"{s // 60}m" if s >= 60 else f"{s}s"
