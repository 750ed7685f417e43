"""Column-wise downsampling (``export --every``) on real recordings: the lab's (zfs-fuse), the OpenZFS 2.3
guest's, and a schema-2 file; it must give what reading the samples one by one gives."""

from __future__ import annotations

import math
from collections import Counter
from typing import List

import pytest

from zfsmon.analysis.downsample import Bucket, downsample, downsample_blocks
from zfsmon.analysis.findings import reads_metric
from zfsmon.model import Entity, Kind, Sample
from zfsmon.store import Recorder, Recording, arrays

NAMES = ["ceiling", "l2arc", "slog", "guest", "v2"]


def _same(a: Bucket, b: Bucket) -> None:
    assert (a.ts, a.every, a.entity, a.source, a.n) == (b.ts, b.every, b.entity, b.source, b.n)
    assert list(a.counters) == list(b.counters) and list(a.gauges) == list(b.gauges)
    for name, c in a.counters.items():
        d = b.counters[name]
        assert (c.last, c.has_delta) == (d.last, d.has_delta), name
        assert math.isclose(c.delta, d.delta, rel_tol=1e-12, abs_tol=1e-9), name
        assert math.isclose(c.elapsed, d.elapsed, rel_tol=1e-12), name
    for name, g in a.gauges.items():
        h = b.gauges[name]
        assert (g.n, g.min, g.max) == (h.n, h.min, h.max), name
        assert math.isclose(g.total, h.total, rel_tol=1e-12, abs_tol=1e-9), name


@pytest.mark.parametrize("name", NAMES)
def test_blocks_hold_every_sample_as_columns(real_recordings, name):
    with Recording.open(real_recordings[name]) as rec:
        want = sorted(((s.ts, s.entity.key, s.source, s.entity, tuple(s.metrics.items()), s.since_boot)
                       for s in rec.samples()), key=lambda x: x[:3] + (x[4],))
        got = []
        for group in rec.blocks():
            for sb in group:
                assert len(sb.cols) == len(sb.names) and all(len(c) == len(sb.ts) for c in sb.cols)
                assert sb.ts == sorted(sb.ts)  # one stream's readings in time order
                for i in range(len(sb.ts)):
                    s = sb.sample(i)
                    got.append((s.ts, s.entity.key, s.source, s.entity, tuple(s.metrics.items()), s.since_boot))
        assert sorted(got, key=lambda x: x[:3] + (x[4],)) == want
        assert len(want) > 500


@pytest.mark.parametrize("name", NAMES)
def test_blocks_with_a_metrics_filter_hold_what_samples_do_with_their_intervals(real_recordings, name):
    """What a folded analyze reads: some metrics of a zpool iostat row (the rest of a chunk is not decoded), and
    each reading's interval."""
    def rows(samples):
        return sorted(((s.ts, s.entity.key, s.source, s.entity, tuple(s.metrics.items()), s.since_boot, s.interval)
                       for s in samples), key=lambda x: x[:3] + (x[4],))

    with Recording.open(real_recordings[name]) as rec:
        want = rows(rec.samples(metrics=reads_metric))
        got = rows(sb.sample(i) for group in rec.blocks(metrics=reads_metric) for sb in group
                   for i in range(len(sb.ts)))
        assert got == want and any(iv is not None for *_x, iv in got)
        whole = sum(len(sb.names) for group in rec.blocks() for sb in group)
        kept = sum(len(sb.names) for group in rec.blocks(metrics=reads_metric) for sb in group)
        if name == "guest":  # its rows hold the -l, -q and -w columns: most are left out
            assert kept < whole / 2


def test_blocks_of_a_window_and_of_some_entities(real_recordings):
    with Recording.open(real_recordings["guest"]) as rec:
        t0, t1 = rec.time_range()
        start, end = t0 + 40, t0 + 100
        keys = ["leaf:zguest/virtio-data0", "pool:zguest/zguest"]
        want = sorted((s.ts, s.entity.key, s.source) for s in rec.samples(entity_keys=keys, start=start, end=end))
        got = sorted((t, sb.entity.key, sb.source) for group in rec.blocks(rec.select_streams(keys), start, end)
                     for sb in group for t in sb.ts)
        assert got == want and {k for _t, k, _s in got} == set(keys)
        assert min(t for t, _k, _s in got) >= start and max(t for t, _k, _s in got) <= end


def _blocks(rec: Recording, how: str):
    """The recording's blocks with lists for columns, or its chunks' columns as numpy arrays (export's read)."""
    return rec.blocks() if how == "lists" else arrays.blocks(rec)


@pytest.mark.parametrize("how", ["lists", "arrays"])
@pytest.mark.parametrize("every", [1, 7, 60])
@pytest.mark.parametrize("name", NAMES + ["soak"])
def test_column_wise_equals_reading_by_reading(real_recordings, lab_soak_file, name, every, how):
    with Recording.open(lab_soak_file if name == "soak" else real_recordings[name]) as rec:
        fast = list(downsample_blocks(_blocks(rec, how), every))
        slow = list(downsample(rec.samples(), every))
        assert len(fast) == len(slow) > 0
        for a, b in zip(fast, slow):
            _same(a, b)
        # in time order, each entity and source once per bucket, every reading (but first reports) counted
        order = [(b.ts, b.entity.kind.value, b.entity.key, b.source) for b in fast]
        assert order == sorted(order) and len(set(order)) == len(order)
        n = Counter()
        for b in fast:
            n[(b.entity.key, b.source)] += b.n
        assert n == Counter((s.entity.key, s.source) for s in rec.samples() if not s.since_boot)


def test_late_zpool_readings_land_in_their_bucket(real_recordings):
    """The guest's ``zpool iostat -T u`` rows carry whole seconds and come after the kstats read at x.2 s: tick
    times go back 17 times in this recording. Before, a bucket closed by a kstat reading was opened again by
    the late zpool row: 31 entities had two partial 7 s rows for one bucket."""
    with Recording.open(real_recordings["guest"]) as rec:
        ts = [t for _i, t in rec._db.execute("SELECT id, ts FROM tick ORDER BY id")]
        assert sum(b < a for a, b in zip(ts, ts[1:])) == 17
        for rows in (list(downsample_blocks(rec.blocks(), 7)), list(downsample(rec.samples(), 7))):
            keys = [(b.ts, b.entity.key, b.source) for b in rows]
            assert len(keys) == len(set(keys))
            leaf = [b for b in rows if b.entity.key == "leaf:zguest/virtio-data0" and b.source == "zpool iostat"]
            assert sorted({b.n for b in leaf}) == [1, 2]  # 5 s readings in 7 s buckets


def test_a_pools_counters_from_three_sources_get_rates(real_recordings):
    """iostats, txgs and status counters of one pool, each derived against its own previous reading."""
    with Recording.open(real_recordings["guest"]) as rec:
        raw = [s for s in rec.samples(entity_keys=["pool:zguest/zguest"]) if s.source == "iostats"]
        rows = [b for b in downsample_blocks(rec.blocks(), 60)
                if b.entity.key == "pool:zguest/zguest" and b.source == "iostats"]
        assert {b.source for b in downsample_blocks(rec.blocks(), 60) if b.entity.kind == Kind.POOL} >= {
            "iostats", "txgs", "status"}
    mid = max(rows[1:], key=lambda b: b.counters["arc_read_count"].delta)  # the fio window's minute
    inside = [s for s in raw if mid.ts <= s.ts < mid.ts + 60]
    before = [s for s in raw if s.ts < mid.ts][-1]
    c = mid.counters["arc_read_count"]
    assert c.delta == inside[-1].metrics["arc_read_count"] - before.metrics["arc_read_count"] > 0
    assert c.elapsed == pytest.approx(inside[-1].ts - before.ts)
    assert c.per_s == pytest.approx(c.delta / c.elapsed)


def _arc_run(guest: str) -> List[Sample]:
    with Recording.open(guest) as rec:
        return [s for s in rec.samples(kinds=[Kind.ARC]) if s.source == "arcstats"]


def test_a_counter_reset_inside_a_compacted_block(real_recordings, tmp_path):
    """The guest's ARC readings, replayed one per second for 700 s with a restart at 400 s (every counter back
    to its first reading's value): written through the recorder so they are compacted into chunks."""
    real = _arc_run(real_recordings["guest"])
    assert len(real) >= 30
    path = str(tmp_path / "reset.zfsmon")
    t0 = 1_800_000_000.0
    first = real[0].metrics
    with Recorder(path, {"host": "h", "interval": 1}) as rec:
        for i in range(700):
            s = real[i % len(real)]
            if i >= 400:  # after the restart: the first reading's counters again, growing as before
                s = real[(i - 400) % len(real)]
            rec.write([Sample(t0 + i, s.entity, dict(s.metrics), 1.0, source=s.source)])
    with Recording.open(path) as rec:
        assert rec._db.execute("SELECT count(*) FROM chunk").fetchone()[0] >= 2
        fast = list(downsample_blocks(rec.blocks(), 60))
        slow = list(downsample(rec.samples(), 60))
        as_arrays = list(downsample_blocks(arrays.blocks(rec), 60))
    assert len(fast) == len(slow) == len(as_arrays) == 12
    for a, b, c in zip(fast, slow, as_arrays):
        _same(a, b)
        _same(c, b)
    hits = [b.counters["hits"] for b in fast]
    assert all(h.delta >= 0 for h in hits)  # wrap-arounds of the replay and the restart: never negative
    assert fast[6].n == 60 and first["hits"] <= hits[6].last


def test_samples_and_blocks_downsample_the_same_entity_description(real_recordings):
    """A leaf's role and parent in a bucket are those of its last reading (the guest's leaves were briefly
    reported removed and back: the topology changes inside the recording)."""
    with Recording.open(real_recordings["guest"]) as rec:
        assert len(rec.topology_changes()) > 40
        for b in downsample_blocks(rec.blocks(), 60):
            if b.entity.kind == Kind.LEAF:
                assert isinstance(b.entity, Entity) and b.entity.parent in ("mirror-0", "mirror-1", "")
