"""A panel drawn line by line (Textual's line API): what the vdev tree and the side panels are shown with.

A ``Static`` turns its whole text into screen lines whenever it changes, although a 64-leaf pool's tree is
80 lines and a 160x50 screen shows 47 of them. Here only the lines on screen are rendered, a line that did
not change keeps its rendering, and a refresh repaints just the lines that changed: what Textual's own
``Log`` widget does. A line's rendering is kept with the style it was made in, and that style is worked out once
per pass over the screen (it walks every ancestor's styles), not once per line.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget


class Lines(Widget):
    """Lines of rich text, one screen line each (cut at the panel's width, never wrapped)."""

    DEFAULT_CSS = "Lines { height: auto; }"

    def __init__(self, *, id: str, classes: str = "") -> None:  # noqa: A002 (Textual's own keyword)
        super().__init__(id=id, classes=classes)
        self.texts: List[Text] = []
        self._strips: Dict[int, Tuple[Style, Strip]] = {}  # line -> the style it was rendered in, its strip
        self._width = -1
        self._pass_style: Optional[Style] = None  # the widget's style during a pass (render_lines)

    def set_lines(self, texts: List[Text]) -> None:
        """Show ``texts``; repaint only the lines that changed, lay out again only if the count did."""
        old, self.texts = self.texts, texts
        if len(texts) != len(old):
            self._strips.clear()
            self.refresh(layout=True)
            return
        for y, (a, b) in enumerate(zip(old, texts)):
            if a != b:
                self._strips.pop(y, None)
                self.refresh(Region(0, y, self.size.width, 1))

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
    text = line.copy()
    text.no_wrap = True
    text.stylize_before(style)
    segments = list(text.render(console))
    n = text.cell_len
    if n > width:
        return Strip(segments, n).crop(0, width)
    if n < width:
        segments.append(Segment(" " * (width - n), style))
    return Strip(segments, width)
