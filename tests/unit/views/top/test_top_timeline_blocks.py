"""The timeline fed column-wise (replay's read: a store block of an entity's readings at a time, numpy sums per
bucket) holds what feeding the same readings one by one holds: the buckets, their counts, the L2ARC's hits and
misses with a counter reset, and the merging of buckets when a run outgrows the panel."""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zfsmon import names
from zfsmon.model import Entity, Kind, Role
from zfsmon.views.top import timeline

PGBENCH = Entity(Kind.WORKLOAD, names.PGBENCH)
L2 = Entity(Kind.L2ARC, "l2arc")
POOL = Entity(Kind.POOL, "tank", "tank")
VDEV = Entity(Kind.VDEV, "mirror-0", "tank", Role.DATA, "tank")

Reading = Tuple[float, Entity, Dict[str, float]]


def _same(a: timeline.Timeline, b: timeline.Timeline) -> None:
    assert (a.every, a.first, a.last, a._l2) == (b.every, b.first, b.last, b._l2)
    assert sorted(a.buckets) == sorted(b.buckets)
    for i, parts in a.buckets.items():
        assert parts.keys() == b.buckets[i].keys(), i
        for part, (total, n) in parts.items():
            assert n == b.buckets[i][part][1], (i, part)
            assert total == pytest.approx(b.buckets[i][part][0], rel=1e-12, abs=1e-9), (i, part)


def _blocks(readings: List[Reading], size: int, arrays: bool) -> List[Tuple[List[float], Entity, dict]]:
    """Consecutive readings of one entity and layout, at most ``size`` at a time, as columns."""
    out: List[Tuple[List[float], Entity, dict]] = []
    for ts, e, m in readings:
        if out and out[-1][1] == e and out[-1][2].keys() == m.keys() and len(out[-1][0]) < size:
            out[-1][0].append(ts)
            for k, v in m.items():
                out[-1][2][k].append(v)
        else:
            out.append(([ts], e, {k: [v] for k, v in m.items()}))
    if arrays:
        out = [(t, e, {k: np.asarray(v) for k, v in m.items()}) for t, e, m in out]
    return out


def _readings(draw_tps, draw_l2, draw_reads, start: float) -> List[Reading]:
    out: List[Reading] = []
    hits = misses = 1_000
    for k, (tps, (dh, dm, reset), reads) in enumerate(zip(draw_tps, draw_l2, draw_reads)):
        ts = start + k * 1.0
        out.append((ts, PGBENCH, {"tps": tps}))
        hits, misses = (dh, dm) if reset else (hits + dh, misses + dm)  # a reset: back near zero
        out.append((ts, L2, {"hits": hits, "misses": misses, "asize": 10 ** 9 + k}))
        out.append((ts, POOL, {"read_ops": reads}))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0, 5000, allow_nan=False), min_size=1, max_size=300),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400)), min_size=1, max_size=300),
       st.lists(st.integers(0, 300), min_size=1, max_size=300),
       st.integers(1, 64), st.sampled_from([1.0, 4.0, 64.0]), st.sampled_from([4, 256]), st.booleans(),
       st.integers(0, 299))
def test_blocks_fill_the_buckets_readings_fill(tps, l2, reads, size, every, max_buckets, arrays, reset_at):
    readings = _readings(tps, [(a, b, i == reset_at) for i, (a, b) in enumerate(l2)], reads, 1_700_000_003.0)
    one = timeline.Timeline(every, max_buckets)
    for ts, e, m in readings:
        one.sample(ts, e, m)
    cols = timeline.Timeline(every, max_buckets)
    by_entity: Dict[Entity, List[Reading]] = {}
    for r in readings:  # a store block holds one stream's readings: an entity at a time, in time order
        by_entity.setdefault(r[1], []).append(r)
    for e in (PGBENCH, L2, POOL):
        for ts, ent, m in _blocks(by_entity.get(e, []), size, arrays):
            cols.sample_block(ts, ent, m)
    if max_buckets == 256 and every == 1.0 and len(tps) > 256:
        assert cols.every > 1.0  # the run outgrew the panel: buckets merged on the way
    _same(cols, one)


def test_a_reset_of_the_l2arc_counters_costs_one_interval_and_never_a_negative_count():
    rows = [(100.0 + k, L2, {"hits": h, "misses": m, "size": 5}) for k, (h, m) in
            enumerate([(10, 5), (20, 9), (30, 12), (2, 1), (7, 3), (9, 4)])]
    one, cols = timeline.Timeline(), timeline.Timeline()
    for ts, e, m in rows:
        one.sample(ts, e, m)
    cols.sample_block([ts for ts, _e, _m in rows[:4]], L2, {k: np.asarray([m[k] for _t, _e, m in rows[:4]])
                                                             for k in ("hits", "misses", "size")})
    cols.sample_block([ts for ts, _e, _m in rows[4:]], L2, {k: [m[k] for _t, _e, m in rows[4:]]
                                                             for k in ("hits", "misses", "size")})
    _same(cols, one)
    got = sorted((i, b["l2_hits"][0], b["l2_misses"][0]) for i, b in cols.buckets.items() if "l2_hits" in b)
    assert got == [(101, 10.0, 4.0), (102, 10.0, 3.0), (104, 5.0, 2.0), (105, 2.0, 1.0)]
    assert type(cols._l2[0]) is int  # the last counters as Python numbers, as sample() keeps them


def test_a_data_vdev_of_a_split_pool_and_fio():
    tl, one = timeline.Timeline(2.0), timeline.Timeline(2.0)
    fio = Entity(Kind.WORKLOAD, "fio:randread")
    rows = [(10.0 + k, VDEV, {"read_ops": 3 * k}) for k in range(7)] + [(10.0 + k, fio, {"ios": 100 + k})
                                                                          for k in range(7)]
    for ts, e, m in rows:
        one.sample(ts, e, m)
    for ts, e, m in _blocks(rows, 256, True):
        tl.sample_block(ts, e, m)
    _same(tl, one)
    assert tl.series("iops") and tl.series("reads")


@pytest.mark.parametrize("size", [1, 7, 256])
def test_a_run_that_outgrows_the_panel_merges_buckets_on_the_way(size):
    readings = _readings([float(k % 97) for k in range(3000)], [(k % 5, 1, k == 1500) for k in range(3000)],
                         [k % 13 for k in range(3000)], 1_700_000_000.5)
    one, cols = timeline.Timeline(), timeline.Timeline()
    for ts, e, m in readings:
        one.sample(ts, e, m)
    for e in (PGBENCH, L2, POOL):
        for ts, ent, m in _blocks([r for r in readings if r[1] == e], size, True):
            cols.sample_block(ts, ent, m)
    assert cols.every == 16.0 and len(cols.buckets) <= timeline.MAX_BUCKETS
    _same(cols, one)
