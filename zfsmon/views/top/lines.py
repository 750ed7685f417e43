"""A panel drawn line by line (Textual's line API): what the vdev tree and the side panels are shown with.

A ``Static`` turns its whole text into screen lines whenever it changes, although a 64-leaf pool's tree is
80 lines and a 160x50 screen shows 47 of them. Here only the lines on screen are rendered, a line that did
not change keeps its rendering, and a refresh repaints just the lines that changed: what Textual's own
``Log`` widget does.
"""

from __future__ import annotations

from typing import Dict, List

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
        self._strips: Dict[int, Strip] = {}
        self._width = -1

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

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width != self._width:
            self._strips.clear()
            self._width = width
        style = self.rich_style
        if y >= len(self.texts):
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None:
            text = self.texts[y].copy()
            text.no_wrap = True
            text.stylize_before(style)
            strip = self._strips[y] = Strip(text.render(self.app.console)).crop_extend(0, width, style)
        return strip
