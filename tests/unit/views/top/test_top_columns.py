"""A table row of the dashboard's panels (``panels._columns``): made in one go, it is the Text that appending the
cells one by one (rich's ``append_text``) makes, cut and aligned the same way."""

from __future__ import annotations

from typing import List

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from zfsmon.views.top.panels import _columns

_STYLES = ["", "bold", "red", "dim italic"]
_CELL = st.tuples(st.text(alphabet="ab 0.%\u00b5\u4e2d", max_size=10), st.sampled_from(_STYLES),
                  st.lists(st.tuples(st.integers(0, 10), st.integers(0, 10), st.sampled_from(_STYLES[1:])),
                           max_size=2))


def _cell(plain: str, style: str, marks) -> Text:
    t = Text(plain, style=style)
    for a, b, s in marks:
        t.stylize(s, a, b)
    return t


def _appended(cells: List[Text], first: int, widths: List[int], style: str) -> Text:
    """The row as the cells appended one at a time (the way _columns made it before)."""
    out = Text(style=style)
    head = cells[0]
    head.truncate(first, overflow="ellipsis", pad=True)
    out.append_text(head)
    for c, w in zip(cells[1:], widths):
        n = c.cell_len
        if n > w:
            c.truncate(w, overflow="ellipsis")
            n = c.cell_len
        out.append(" " * (w - n + 1))
        out.append_text(c)
    return out


@settings(max_examples=300, deadline=None)
@given(cells=st.lists(_CELL, min_size=1, max_size=8), first=st.integers(0, 14),
       widths=st.lists(st.integers(1, 8), max_size=9), style=st.sampled_from(_STYLES))
def test_a_row_is_the_cells_appended_one_by_one(cells, first, widths, style):
    got = _columns([_cell(*c) for c in cells], first, widths, style)
    want = _appended([_cell(*c) for c in cells], first, widths, style)
    assert got == want and got.style == want.style
    assert got.cell_len == want.cell_len


def test_a_row_of_the_tree_cuts_and_aligns_its_cells():
    row = _columns([Text("mirror-0", style="bold"), Text("1.2K"), Text("123456789", style="red")], 6, [5, 6], "")
    assert row.plain == "mirro\u2026  1.2K 12345\u2026"
    assert [(s.start, s.end, s.style) for s in row.spans] == [(0, 6, "bold"), (13, 19, "red")]
