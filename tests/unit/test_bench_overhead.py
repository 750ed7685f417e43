"""The switched A/B of bench/bench_overhead.py: which block a progress report belongs to, and how blocks pair."""

from __future__ import annotations

import pytest

from bench.bench_overhead import Block, abba, block_tps, fuse_line, paired_losses


def test_abba_pairs_hold_one_block_of_each_state_and_alternate_which_comes_first():
    states = [abba(k) for k in range(8)]
    assert states == [False, True, True, False, False, True, True, False]


def test_a_report_counts_only_when_the_second_it_covers_lies_wholly_in_the_block():
    # pgbench --progress-timestamp: a report stamped t covers (t-1, t]
    progress = [(100.0, 1.0), (101.0, 10.0), (102.0, 20.0), (103.0, 30.0), (104.5, 99.0)]
    assert block_tps(Block(True, 100.0, 103.0), progress) == pytest.approx(20.0)  # 101, 102, 103
    assert block_tps(Block(True, 100.5, 103.0), progress) == pytest.approx(25.0)  # 102, 103
    assert block_tps(Block(True, 104.0, 104.4), progress) is None


def test_paired_losses_compare_neighbours_whichever_comes_first():
    progress = [(float(t), 100.0 if t < 10 else 200.0) for t in range(1, 21)]
    blocks = [Block(False, 0.0, 5.0), Block(True, 5.0, 10.0),  # 100 vs 100: no loss
              Block(True, 10.0, 15.0), Block(False, 15.0, 20.0)]  # 200 vs 200, the on block first
    progress = [(t, 90.0 if 5 < t <= 10 else tps) for t, tps in progress]
    progress = [(t, 150.0 if 10 < t <= 15 else tps) for t, tps in progress]
    assert paired_losses(blocks, progress) == pytest.approx([10.0, 25.0])


def test_a_pair_of_two_blocks_of_one_state_is_refused():
    with pytest.raises(ValueError):
        paired_losses([Block(False, 0, 1), Block(False, 1, 2)], [(1.0, 1.0), (2.0, 1.0)])


def test_a_pair_with_an_empty_block_is_left_out():
    progress = [(1.0, 100.0), (2.0, 80.0)]
    blocks = [Block(False, 0.0, 1.0), Block(True, 1.0, 2.0), Block(True, 2.0, 3.0), Block(False, 3.0, 4.0)]
    assert paired_losses(blocks, progress) == pytest.approx([20.0])


def test_zfs_fuse_cpu_is_compared_within_each_pair_and_left_out_when_not_measured():
    blocks = [Block(False, 0, 1, 10.0), Block(True, 1, 2, 13.0), Block(True, 2, 3, 12.0), Block(False, 3, 4, 11.0),
              Block(False, 4, 5, 9.0), Block(True, 5, 6, float("nan"))]  # the last pair: not measured
    line = fuse_line(blocks)
    assert "median 10.50 without, 12.50 with" in line and "difference +2.00" in line  # pairs +3, +1
    assert fuse_line([Block(False, 0, 1), Block(True, 1, 2)]) == ""
