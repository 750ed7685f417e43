"""The dashboard's sparklines: a window's points averaged into cells and drawn as blocks (fmt.sparkline).

The replay bench checks that the points behind a sparkline are the recording's (bench_top.check_window, at day 7 of
a week); these check the drawing of a line from its points.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from zfsmon.views.top.fmt import BLOCKS, runs, sparkline


def test_points_are_averaged_into_their_cells_and_scaled_between_the_extremes():
    # 4 cells over [0, 40): two points in the first cell (mean 1), none in the second, one each in the last two
    # the means 1, -, 8, 4 between 1 and 8: the bottom block, a blank, the top one, and (4 - 1) / 7 of the way up
    line = sparkline([(0.0, 0.0), (5.0, 2.0), (25.0, 8.0), (39.0, 4.0)], 4, 0.0, 40.0)
    assert line.plain == BLOCKS[0] + " " + BLOCKS[7] + BLOCKS[3]


def test_fixed_bounds_and_a_flat_line():
    # a hit rate drawn between 0 and 100 whatever the window holds
    assert sparkline([(0.0, 50.0), (1.0, 100.0)], 2, 0.0, 2.0, lo=0, hi=100).plain == BLOCKS[3] + BLOCKS[7]
    assert sparkline([(t, 7.0) for t in range(10)], 5, 0.0, 10.0).plain == BLOCKS[0] * 5
    assert sparkline([], 6, 0.0, 10.0).plain == " " * 6


def test_a_point_at_the_end_of_the_window_is_in_the_last_cell_and_points_outside_are_left_out():
    line = sparkline([(-1.0, 100.0), (0.0, 1.0), (10.0, 2.0), (11.0, 100.0)], 2, 0.0, 10.0)
    assert line.plain == BLOCKS[0] + BLOCKS[7]


def test_a_run_boundary_is_marked():
    line = sparkline([(0.0, 1.0), (9.0, 2.0)], 10, 0.0, 10.0, marks=[5.0])
    assert line.plain[5] == "|"  # no point in that cell: the mark itself
    spans = [(s.start, s.end, str(s.style)) for s in line.spans if "magenta" in str(s.style)]
    assert [(a, b) for a, b, _ in spans] == [(5, 6)]


@given(st.lists(st.tuples(st.floats(0, 299.999), st.floats(-1e6, 1e6)), max_size=200),
       st.integers(1, 120))
def test_always_the_width_asked_and_only_blocks_or_blanks(points, width):
    line = sparkline(points, width, 0.0, 300.0)
    assert len(line.plain) == width
    assert set(line.plain) <= set(BLOCKS) | {" "}
    assert (line.plain.strip() == "") == (not points)


@given(st.lists(st.tuples(st.sampled_from("ab|\u2581"), st.sampled_from(["cyan", "bold magenta", "dim"])),
                max_size=60))
def test_cells_are_drawn_in_their_styles_with_a_span_per_run(cells):
    """A sparkline's (or latency band's) cells, one span per run of one style: each cell keeps its style, and two
    neighbouring spans never share one (a span per cell was a segment per cell to draw)."""
    line = runs([c for c, _ in cells], [s for _, s in cells])
    assert line.plain == "".join(c for c, _ in cells)
    assert [str(line.get_style_at_offset(Console(), i)) for i in range(len(cells))] == [s for _, s in cells]
    assert all(a.end == b.start and a.style != b.style for a, b in zip(line.spans, line.spans[1:]))
    assert sum(s.end - s.start for s in line.spans) == len(cells)
