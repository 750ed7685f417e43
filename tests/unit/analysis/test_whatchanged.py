"""What changed between a window and the one before it, on the issue-14 acceptance recordings (zfs-fuse lab)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zfsmon.analysis import whatchanged
from zfsmon.cli import main
from zfsmon.model import Entity, Kind, Role, Sample
from zfsmon.store import Recording


@pytest.fixture(scope="module")
def ceiling(fio_lab_recordings) -> Path:
    return Path(fio_lab_recordings["ceiling"])


def test_the_sweep_starting_moves_the_data_disks_reads_most(ceiling):
    with Recording.open(str(ceiling)) as rec:
        lo, _hi = rec.time_range()
        samples = list(rec.samples())
    # seconds 0-6: fio lays its file out (writes); 6-12: the sweep's first depths read from the disks
    ch = whatchanged.compare(samples, lo + 6, lo + 12)
    moved = {c.what: c for c in ch.moved()}
    for leaf in ("loop6", "loop7", "loop8", "loop9"):
        c = moved[f"zf14acc/{leaf} (data) reads/s"]
        assert c.before == 0 and 40 < c.after < 130 and c.group == "vdev"  # the throttle: 100 per disk
    top = ch.moved()[:8]
    assert all(c.group == "vdev" for c in top) and [c.score for c in top] == sorted((c.score for c in top),
                                                                                    reverse=True)
    assert ch.text().startswith("What changed in the window (6 s) against the 6 s before it: 23 figures moved "
                                "(21 vdev, 2 arc); most: zf14acc/loop6 (data) read p99 55 us -> 93.8 ms")


def test_hit_ratios_move_by_points_and_small_moves_are_left_out():
    def arc(ts, hits, misses):
        return Sample(ts, Entity(Kind.ARC, "arc"), {"hits": hits, "misses": misses}, interval=1.0)

    def leaf(ts, r):
        return Sample(ts, Entity(Kind.LEAF, "d0", "p", Role.DATA, "mirror-0"), {"read_ops": r}, interval=1.0)

    samples = [arc(t, 90 * t, 10 * t) for t in range(0, 11)] + [arc(10 + t, 900 + 50 * t, 100 + 50 * t)
                                                                 for t in range(1, 11)]
    samples += [leaf(t, 100.0) for t in range(1, 21)] + [leaf(t, 110.0) for t in range(21, 22)]
    ch = whatchanged.compare(samples, 10.5, 20.5)
    (hit,) = [c for c in ch.changes if c.what == "ARC hit"]
    assert (hit.before, hit.after, hit.unit) == (90.0, 50.0, "%") and hit.score == pytest.approx(40 / 25)
    assert [c.what for c in ch.moved()] == ["ARC hit"]  # the disk's 100 -> 100 reads/s did not move
    assert "ARC hit 90.0% -> 50.0% (-40.0 points)" in ch.text()


def test_analyze_changed_on_the_command_line(ceiling, capsys):
    assert main(["analyze", "--json", "--changed", "--start", "+6s", "--end", "+12s", str(ceiling)]) == 0
    out = json.loads(capsys.readouterr().out)
    (f,) = [f for f in out["findings"] if f["topic"] == "what_changed"]
    assert f["numbers"]["window"][1] - f["numbers"]["window"][0] == pytest.approx(6)
    assert any(c["what"] == "zf14acc/loop6 (data) reads/s" for c in f["numbers"]["changes"])
    # without --start/--end: the second half against the first
    assert main(["analyze", "--changed", str(ceiling)]) == 0
    assert "What changed in the window (20 s) against the 20 s before it" in capsys.readouterr().out
