"""A panel drawn line by line (Textual's line API): what the vdev tree and the side panels are shown with.

A ``Static`` turns its whole text into screen lines whenever it changes, although a 64-leaf pool's tree is
80 lines and a 160x50 screen shows 47 of them. Here only the lines on screen are rendered, a line that did
not change keeps its rendering, and a refresh repaints just the lines that changed: what Textual's own
``Log`` widget does. A line's rendering is kept with the style it was made in, and that style is worked out once
per pass over the screen (it walks every ancestor's styles), not once per line.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from zfsmon.views.top.fmt import inert


class Lines(Widget):
    """Lines of rich text, one screen line each (cut at the panel's width, never wrapped), control characters
    shown as escapes (:func:`~zfsmon.views.top.fmt.inert`)."""

    DEFAULT_CSS = "Lines { height: auto; }"

    def __init__(self, *, id: str, classes: str = "") -> None:  # noqa: A002 (Textual's own keyword)
        super().__init__(id=id, classes=classes)
        self.texts: List[Text] = []
        self._strips: Dict[int, Tuple[Style, Strip]] = {}  # line -> the style it was rendered in, its strip
        self._width = -1
        self._pass_style: Optional[Style] = None  # the widget's style during a pass (render_lines)

    def set_lines(self, texts: Iterable[Text]) -> None:
        """Show ``texts``; repaint only the lines that changed, lay out again only if the count did."""
        texts = [inert(t) for t in texts]
        old, self.texts = self.texts, texts
        if len(texts) != len(old):
            self._strips.clear()
            self.refresh(layout=True)
            return
        width = self.size.width
        changed = [Region(0, y, width, 1) for y, (a, b) in enumerate(zip(old, texts)) if a != b]
        for region in changed:
            self._strips.pop(region.y, None)
        if changed:  # one call for them all: each call marks the widget and its screen dirty anew
            self.refresh(*changed)

    @property
    def plain(self) -> str:
        return "\n".join(t.plain for t in self.texts)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.texts)

    def render_lines(self, crop: Region) -> List[Strip]:
        """One pass over the lines on screen, with the widget's style worked out once for all of them."""
        self._pass_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._pass_style = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width != self._width:
            self._strips.clear()
            self._width = width
        style = self._pass_style
        if style is None:
            style = self.rich_style
        if y >= len(self.texts):
            return Strip.blank(width, style)
        kept = self._strips.get(y)
        if kept is not None and kept[0] == style:
            return kept[1]
        strip = _strip(self.texts[y], style, width, self.app.console)
        self._strips[y] = (style, strip)
        return strip


def _strip(line: Text, style: Style, width: int, console: Console) -> Strip:
    """``line`` on ``style``, exactly ``width`` cells: what ``Strip(rendered).crop_extend(0, width, style)``
    gives, made as one Strip when the line fits (as the panels cut their lines, it does)."""
    segments = _segments(line, style, console)
    n = line.cell_len
    if n > width:
        return Strip(segments, n).crop(0, width)
    if n < width:
        segments.append(Segment(" " * (width - n), style))
    return Strip(segments, width)


def _segments(line: Text, style: Style, console: Console) -> List[Segment]:
    """The segments rich renders ``line`` into with ``style`` put beneath its spans (``stylize_before``).

    The panels' lines are cells appended one after another: spans in order, none overlapping. Those are cut here in
    one walk, a span's style laid on the line's (rich's own render keeps a stack of open spans and sorts their
    boundaries, most of a line's drawing); anything else is left to rich."""
    text, spans = line.plain, line.spans
    n = len(text)
    if not spans and (not style or not n):
        return [Segment(text)]  # rich draws a line without spans plain, its own style unused (and ``style``
        # is not put beneath an empty line)
    get_style = console.get_style
    under = get_style(line.style, default=Style.null())
    if style:
        under = under + style
    out: List[Segment] = []
    pos = 0
    for sp in spans:
        if sp.start < pos or sp.end > n or sp.end < sp.start:  # not cells one after another: rich's own way
            text_copy = line.copy()
            text_copy.stylize_before(style)
            return list(text_copy.render(console))
        if sp.start > pos:
            out.append(Segment(text[pos:sp.start], under))
        if sp.end > sp.start:
            out.append(Segment(text[sp.start:sp.end], under + get_style(sp.style, default=Style.null())))
        pos = sp.end
    if pos < n:
        out.append(Segment(text[pos:], under))
    return out
