"""The line-by-line panel the vdev tree is drawn with: only lines on screen are rendered, a changed line alone is
rendered again, and what is shown is the text given (Textual's pilot, headless)."""

from __future__ import annotations

import asyncio
from typing import List

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.style import Style
from rich.text import Span, Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.strip import Strip

from zfsmon.views.top.lines import Lines, _segments, _strip


class Counting(Lines):
    def __init__(self) -> None:
        super().__init__(id="tree")
        self.rendered: List[int] = []

    def render_line(self, y: int):
        kept = self._strips.get(y)
        if y < len(self.texts) and (kept is None or kept[0] != (self._pass_style or self.rich_style)):
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


_STYLES = ["", "bold", "red", "reverse green", "dim italic", "on blue"]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.tuples(st.text(alphabet="ab 0.%|\u2581\u2588\u4e2d\u00e9", max_size=12),
                                st.sampled_from(_STYLES)), max_size=8),
       base=st.sampled_from(_STYLES), width=st.integers(0, 40))
def test_a_line_is_the_strip_textual_would_make_cut_or_padded_to_the_width(parts, base, width):
    """The one-Strip rendering equals Textual's way (render, then crop_extend to the width on the widget's
    style): the same segments and cells, a line shorter or longer than the panel and wide characters included."""
    console = Console(width=200, color_system="truecolor")
    line = Text()
    for text, style in parts:
        line.append(text, style=style or None)
    style = Style.parse(base) if base else Style()
    t = line.copy()
    t.no_wrap = True
    t.stylize_before(style)
    want = Strip(t.render(console)).crop_extend(0, width, style)
    got = _strip(line, style, width, console)
    assert got == want and got.cell_length == want.cell_length == width
    assert line == Text.assemble(*[(x, s or None) for x, s in parts])  # the panel's text is left as it was


@settings(max_examples=300, deadline=None)
@given(plain=st.text(alphabet="ab 0.%|\u2581\u4e2d", max_size=16), own=st.sampled_from(_STYLES),
       marks=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20), st.sampled_from(_STYLES[1:])), max_size=5),
       base=st.sampled_from(_STYLES))
def test_a_lines_segments_are_richs_whatever_its_spans(plain, own, marks, base):
    """The one-walk cut (``_segments``) gives rich's segments for a line with its own style and spans in any order,
    overlapping or empty (all but spans in order and apart are left to rich; rich itself fails on spans past the
    text, so none is made here)."""
    console = Console(width=200, color_system="truecolor")
    line = Text(plain, style=own)
    for a, b, style in marks:
        line.stylize(style, a, b)
    line.spans.extend(Span(a, b, style) for a, b, style in marks[:1] if a < b <= len(plain))  # out of order
    style = Style.parse(base) if base else Style()
    t = line.copy()
    t.stylize_before(style)
    assert _segments(line, style, console) == list(t.render(console))


def test_a_line_is_rendered_again_when_the_widgets_style_changes():
    """A kept line is drawn in the style it was made in: a new background (a theme, a class on the panel) gets
    every line again, not only the ones whose text changed."""
    async def go():
        app = Box()
        async with app.run_test(size=(60, 12)) as pilot:
            w = app.query_one(Counting)
            w.set_lines([Text(f"row {i}") for i in range(5)])
            await pilot.pause()
            await pilot.pause()
            before = w.rich_style
            w.rendered.clear()
            w.styles.background = "red"
            await pilot.pause()
            await pilot.pause()
            assert w.rich_style != before
            assert sorted(set(w.rendered)) == [0, 1, 2, 3, 4]
            assert {seg.style.bgcolor.triplet for seg in w._strips[0][1]} == {(255, 0, 0)}
    asyncio.run(go())
