"""The line-by-line panel the vdev tree is drawn with: only lines on screen are rendered, a changed line alone is
rendered again, and what is shown is the text given (Textual's pilot, headless)."""

from __future__ import annotations

import asyncio
from typing import List

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from zfsmon.views.top.lines import Lines


class Counting(Lines):
    def __init__(self) -> None:
        super().__init__(id="tree")
        self.rendered: List[int] = []

    def render_line(self, y: int):
        if y < len(self.texts) and y not in self._strips:
            self.rendered.append(y)
        return super().render_line(y)


class Box(App):
    CSS = "#box { height: 10; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="box"):
            yield Counting()


def _screen(app: App) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


def test_only_lines_on_screen_and_lines_that_changed_are_rendered():
    async def go():
        app = Box()
        async with app.run_test(size=(60, 12)) as pilot:
            w = app.query_one(Counting)
            texts = [Text(f"row {i:3d}", style="bold" if i % 2 else "") for i in range(100)]
            w.set_lines(texts)
            await pilot.pause()
            await pilot.pause()
            assert w.size.height == 100  # laid out for every line: the box scrolls over them
            assert w.rendered and max(w.rendered) < 12  # only what the 10-line box shows (and no more)
            assert "row   0" in _screen(app) and "row  50" not in _screen(app)
            w.rendered.clear()
            w.set_lines([*texts[:3], Text("row   3 changed"), *texts[4:]])
            await pilot.pause()
            await pilot.pause()
            assert w.rendered == [3]
            assert "row   3 changed" in _screen(app)
            app.query_one("#box", VerticalScroll).scroll_to(y=50, animate=False)
            await pilot.pause()
            await pilot.pause()
            assert "row  50" in _screen(app) and "row   0" not in _screen(app)
            assert w.plain.splitlines()[3] == "row   3 changed"
            w.set_lines(texts[:5])  # fewer lines: laid out again
            await pilot.pause()
            await pilot.pause()
            assert w.size.height == 5
    asyncio.run(go())
