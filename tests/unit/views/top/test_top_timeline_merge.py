"""Two timelines made one (:meth:`Timeline.merge`): live ``top`` writing on into a recording after a reboot reads
the earlier run(s) into a timeline of their own and merges it into the live one. The sums must be those of one
timeline fed every record, whatever the two widths were and however far the union has to be coarsened."""

from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Tuple

import pytest

from tests.conftest import TEST_DATA, gunzip
from zfsmon import names
from zfsmon.analysis.restart import is_resumed
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.store import Recorder, Recording
from zfsmon.views.top import timeline

RESTARTS = TEST_DATA / "openzfs-2.3" / "warmup" / "soak-restarts.zfsmon.gz"
T0 = 1_767_225_600.0
PGBENCH = Entity(Kind.WORKLOAD, names.PGBENCH)


def _batches(records: List[Record]) -> List[List[Record]]:
    """The records as the sampler hands them over: one batch per reading's time."""
    return [list(g) for _ts, g in itertools.groupby(sorted(records, key=lambda r: r.ts), key=lambda r: r.ts)]


def _fed(records: List[Record], max_buckets: int = timeline.MAX_BUCKETS, floor: Optional[float] = None
         ) -> timeline.Timeline:
    """A live timeline fed ``records``; ``floor``: when the process opened the recording it writes on into (the
    app sets it: a run summary reaches back to then, not only to the first reading)."""
    tl = timeline.Timeline(max_buckets=max_buckets)
    tl.floor = floor
    for batch in _batches(records):
        tl.feed(batch)
    return tl


def _sums(tl: timeline.Timeline) -> Dict[Tuple[int, str], Tuple[float, float]]:
    return {(i, part): (t, n) for i, b in tl.buckets.items() for part, (t, n) in b.items()}


def _assert_same(merged: timeline.Timeline, whole: timeline.Timeline) -> None:
    assert merged.every == whole.every
    got, want = _sums(merged), _sums(whole)
    assert got.keys() == want.keys()
    for key, (t, n) in want.items():
        assert got[key] == (pytest.approx(t, rel=1e-9), pytest.approx(n, rel=1e-9)), key
    assert (merged.first, merged.last) == (whole.first, whole.last)
    assert [(e.ts, e.text) for e in merged.events] == [(e.ts, e.text) for e in whole.events]
    assert merged.split_pools == whole.split_pools


@pytest.fixture(scope="module")
def restarts(tmp_path_factory) -> Tuple[List[Record], float]:
    """The real soak resumed twice after reboots (PROVENANCE.md there): its records, and when the last boot's
    recorder opened the file (the cut a live ``top`` of that boot makes)."""
    path = gunzip(RESTARTS, tmp_path_factory.mktemp("restarts"))
    with Recording.open(path) as rec:
        records: List[Record] = [*rec.samples(), *rec.events()]
    cut = max(r.ts for r in records if isinstance(r, Event) and is_resumed(r))
    return records, cut


def test_the_earlier_runs_merged_into_the_last_boots_timeline_are_one_timeline_fed_everything(restarts) -> None:
    records, cut = restarts
    earlier, live = _fed([r for r in records if r.ts < cut]), _fed([r for r in records if r.ts >= cut], floor=cut)
    whole = _fed(records)
    # the widths differ (the earlier boots span ~15 minutes, the last one ~4), and their union needs wider still
    assert live.every < earlier.every < whole.every, (live.every, earlier.every, whole.every)
    before = live.version
    live.merge(earlier)
    _assert_same(live, whole)
    assert live.earlier and live.version > before
    assert len([e for e in live.events if is_resumed(e)]) == 2  # both reboots' R
    assert timeline.rows(live, *live.span(), 100) == timeline.rows(whole, *whole.span(), 100)


def test_a_finer_earlier_part_is_brought_to_the_live_width(restarts) -> None:
    """The other way round: the part merged in has the narrower buckets (a short earlier run, a long live one)."""
    records, cut = restarts
    first_resume = min(r.ts for r in records if isinstance(r, Event) and is_resumed(r))
    earlier = _fed([r for r in records if r.ts < first_resume], max_buckets=512)
    live = _fed([r for r in records if r.ts >= first_resume], max_buckets=64, floor=first_resume)
    whole = _fed(records, max_buckets=64)
    assert earlier.every < live.every
    snapshot = _sums(earlier), earlier.every
    live.merge(earlier)
    _assert_same(live, whole)
    assert (_sums(earlier), earlier.every) == snapshot  # the part merged in is left as it was


def _tps(start: float, seconds: int, tps: float) -> List[Record]:
    return [Sample(start + i, PGBENCH, {"tps": tps}, interval=1.0) for i in range(seconds)]


def test_coarsening_past_max_buckets_keeps_the_live_bucket_open() -> None:
    """Each part fits in 16 one-second buckets, the union (40 s apart) does not: the merge doubles the width until
    it fits, the sums stay, and the live side's filling bucket is still the one left out of the drawing."""
    earlier = _fed(_tps(T0, 10, 100.0), max_buckets=16)
    live = _fed(_tps(T0 + 40, 10, 40.0), max_buckets=16)
    assert earlier.every == live.every == 1.0
    live.merge(earlier)
    assert live.every == 4.0  # (T0 + 49) // 4 - T0 // 4 = 12 < 16; with 2 s buckets 24
    total = sum(t for b in live.buckets.values() for part, (t, _n) in b.items() if part == "tps")
    count = sum(n for b in live.buckets.values() for part, (_t, n) in b.items() if part == "tps")
    assert (total, count) == (10 * 100.0 + 10 * 40.0, 20.0)
    assert live._open == int((T0 + 49) // 4.0)
    drawn = [i for i, _v in live.series("tps", closed_only=True)]
    assert max(drawn) < live._open and min(drawn) == int(T0 // 4.0)


def test_a_merge_before_any_live_reading_has_no_open_bucket() -> None:
    """The earlier runs can arrive before the first live batch: every bucket merged in is complete and drawn, also
    once the union is coarsened (100 one-second buckets into a timeline of at most 16: 8 s buckets)."""
    earlier = _fed(_tps(T0, 100, 100.0))
    earlier._open = None  # as read_timeline leaves it
    live = timeline.Timeline(max_buckets=16)
    live.merge(earlier)
    assert live.every == 8.0 and live._open is None
    drawn = live.series("tps", closed_only=True)
    assert len(drawn) == len(live.buckets) == 13 and {v for _i, v in drawn} == {100.0}
    live.feed(_tps(T0 + 100, 1, 40.0))
    assert live._open == int((T0 + 100) // 8.0) and len(live.series("tps", closed_only=True)) == 12


def test_widths_not_a_power_of_two_apart_are_refused() -> None:
    with pytest.raises(ValueError, match="power of two"):
        timeline.Timeline(2.0).merge(timeline.Timeline(3.0))


def _session(path: str, opened: float, start: float, seconds: int, tps: float) -> None:
    with Recorder(path, {"argv": "zfsmon top --soak"}, clock=lambda: opened) as rec:
        for batch in _batches(_tps(start, seconds, tps)):
            rec.write(batch)


def test_read_timeline_before_a_cut_reads_only_what_came_earlier(tmp_path) -> None:
    """``read_timeline(path, before=cut)``: the readings and events earlier than the cut, none at or after it."""
    path = str(tmp_path / "soak.zfsmon")
    _session(path, T0 - 1, T0, 300, 100.0)
    cut = T0 + 599.0
    _session(path, cut, T0 + 600, 100, 40.0)
    tl = timeline.read_timeline(path, before=cut)
    assert (tl.first, tl.last) == (T0, T0 + 299)
    tps = [acc for b in tl.buckets.values() for part, acc in b.items() if part == "tps"]
    assert sum(n for _t, n in tps) == 300 and sum(t for t, _n in tps) == 300 * 100.0
    assert tl.events == []  # the second session's "recording resumed" is at the cut: the live side has it
    assert timeline.read_timeline(path, before=T0).buckets == {}  # nothing earlier than the first reading
    again = timeline.read_timeline(path, before=cut + 2.0)
    assert [e.ts for e in again.events if is_resumed(e)] == [cut] and again.last == T0 + 600  # not the one at the cut
    live = _fed([Event(cut, EventKind.INFO, names.RECORDING_RESUMED + ": zfsmon top --soak", source="record"),
                 *_tps(T0 + 600, 100, 40.0)])
    live.merge(tl)
    whole = timeline.read_timeline(path)
    while live.every < whole.every:
        live._halve()
    assert live.every == whole.every
    assert _sums(live).keys() == _sums(whole).keys()
    for key, (t, n) in _sums(whole).items():
        assert _sums(live)[key] == (pytest.approx(t), pytest.approx(n)), key
