"""The timeline's ratio row says how many reads its ratio is of: the L2 hit % row's highest cell, with the L2ARC
lookups (hits and misses) in that cell beside it, so a 100 % over 3 reads does not pass for one over millions."""

from __future__ import annotations

from zfsmon.model import Entity, Kind
from zfsmon.views.top import panels, timeline

L2 = Entity(Kind.L2ARC, "l2arc")
T0 = 1_795_000_000.0


def _tl(deltas):
    """A timeline of 1 s L2ARC readings whose counters move by each (hits, misses) in turn."""
    tl = timeline.Timeline()
    hits = misses = 0
    tl.sample(T0, L2, {"hits": hits, "misses": misses, "size": 1})
    for k, (dh, dm) in enumerate(deltas, 1):
        hits, misses = hits + dh, misses + dm
        tl.sample(T0 + k, L2, {"hits": hits, "misses": misses, "size": 1})
    return tl


def _l2_row(tl, width=120):
    text = panels.timeline(tl, None, panels.ViewOptions(), width, live=False).plain
    return next(line for line in text.splitlines() if line.startswith("L2 hit %"))


def test_the_highest_hit_ratio_is_shown_with_the_few_reads_it_is_of():
    # 20 s of 3 lookups a second, all hits; then 20 s of 100,000 a second, half of them hits
    tl = _tl([(3, 0)] * 20 + [(50_000, 50_000)] * 20)
    row = _l2_row(tl)
    assert row.rstrip().endswith("max 100.0% of 3"), row


def test_the_count_is_the_sum_over_the_buckets_of_the_highest_cell():
    # 200 one-second buckets drawn in fewer cells: each cell sums the lookups of the buckets it overlaps
    tl = _tl([(7, 1)] * 100 + [(1, 1)] * 100)
    start, end = tl.span()
    width = 60
    w = width - panels.TIMELINE_LABEL - panels.TIMELINE_RIGHT - 1
    vals = tl.cells("l2_hit", start, end, w)
    counts = tl.count_cells("l2_hit", start, end, w)
    assert counts is not None and len(counts) == w
    top = vals.index(max(v for v in vals if v is not None))
    per_cell = 200 / w  # a cell overlaps this many buckets, give or take the one at each edge
    assert 8 * int(per_cell) <= counts[top] <= 8 * (int(per_cell) + 2) and counts[top] % 8 == 0, (counts[top], w)
    assert sum(c for c in counts if c is not None) >= 100 * 8 + 99 * 2  # every bucket counted at least once
    assert f"max 87.5% of {counts[top]:.0f}" in _l2_row(tl, width)


def test_rows_that_are_not_ratios_have_no_count():
    tl = _tl([(3, 1)] * 5)
    start, end = tl.span()
    assert tl.count_cells("l2_size", start, end, 10) is None
    assert " of " not in next(line for line in panels.timeline(tl, None, panels.ViewOptions(), 120, live=False)
                              .plain.splitlines() if line.startswith("L2 size"))
