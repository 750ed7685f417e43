"""The way of an L2ARC hit (docs/architecture.md): the arcstats file, read and split by the kstat reader, derived once
on the sampler's thread, handed to the dashboard, shown by the ARC panel's fold.

The derivation takes a reading's counters from the metrics table's per-kind set (:data:`zfsmon.metrics.COUNTERS`,
gathered when the table is loaded): it calls nothing of the metrics module per reading, so that module is a
declaration the path reads, not a step the value passes through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, NoReturn

import pytest

from zfsmon import metrics
from zfsmon.analysis.rates import Deriver
from zfsmon.engine.sampler import Sampler
from zfsmon.model import Kind, Sample, derived_of, joined
from zfsmon.sources.kstat import arcstats
from zfsmon.views.top.app import LiveFeed
from zfsmon.views.top.state import TopState

CAP = Path(__file__).resolve().parents[1] / "data" / "openzfs-2.3"  # the 2.3 guest's arcstats, before and after
BEFORE, AFTER = (CAP / "arcstats.before").read_text(), (CAP / "arcstats.after").read_text()


def _stat(text: str, name: str) -> float:
    """A statistic's value read off the capture's own line (``name  type  value``)."""
    return float(next(ln.split()[2] for ln in text.splitlines() if ln.split()[:1] == [name]))


@pytest.fixture
def no_table_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every function of the metrics module raises: a reading that is derived calls none of them."""
    def refused(*_args: object, **_kw: object) -> NoReturn:
        raise AssertionError("the derivation called the metrics module")
    for name in ("is_counter", "counter_names", "lookup", "specs_for"):
        monkeypatch.setattr(metrics, name, refused)
    yield


def _l2arc(samples: List[Sample]) -> Sample:
    return next(s for s in samples if s.entity.kind == Kind.L2ARC)


def test_deriving_a_reading_calls_nothing_of_the_metrics_module(no_table_calls: None) -> None:
    before, after = arcstats.parse_linux(BEFORE, 100.0), arcstats.parse_linux(AFTER, 110.0)
    deriver = Deriver()
    assert deriver.update(_l2arc(before)) == (None, [])  # a first reading: a baseline, no figures
    d, events = deriver.update(_l2arc(after))
    assert events == [] and d is not None and d.elapsed == 10.0
    hits = _stat(AFTER, "l2_hits") - _stat(BEFORE, "l2_hits")
    misses = _stat(AFTER, "l2_misses") - _stat(BEFORE, "l2_misses")
    assert misses > 0 and d.deltas["hits"] == hits and d.deltas["misses"] == misses
    assert d.metrics["reads_per_s"] == (hits + misses) / 10.0
    assert d.metrics["hit_pct"] == 100.0 * hits / (hits + misses)
    # the gauges stay out of the deltas: only the table's counters are differenced
    assert "size" in after[1].metrics and "size" not in d.deltas and "asize" not in d.deltas


def test_an_l2arc_hit_from_the_kstat_file_to_the_arc_panel(no_table_calls: None, tmp_path: Path) -> None:
    """The whole path, live: the file read on the source's worker, the sampler's tick, the dashboard's queue,
    the state, the fold's values; the metrics module is called nowhere on it."""
    path = tmp_path / "arcstats"
    now = [100.0]
    collector = arcstats.READER.linux_collector(str(path), clock=lambda: now[0])
    feed = LiveFeed()
    sampler = Sampler([collector], 10.0, sinks=[feed.sink], clock=lambda: now[0])
    state = TopState(window_s=300.0)
    path.write_text(BEFORE)
    sampler.tick()
    state.feed(joined(feed.drain_batches()))
    boot = state.arc()
    assert boot["since_boot"] == 1.0  # one reading: the ratios since boot
    assert boot["l2_reads"] == _stat(BEFORE, "l2_hits") + _stat(BEFORE, "l2_misses")
    now[0] = 110.0
    path.write_text(AFTER)
    sampler.tick()
    batches = feed.drain_batches()
    assert len(batches) == 1 and [d.sample.entity.kind for d in derived_of(batches[0]) or []].count(Kind.L2ARC) == 1
    state.feed(batches[0])
    got = state.arc()
    hits = _stat(AFTER, "l2_hits") - _stat(BEFORE, "l2_hits")
    misses = _stat(AFTER, "l2_misses") - _stat(BEFORE, "l2_misses")
    assert got["since_boot"] == 0.0
    assert got["l2_hit_pct"] == 100.0 * hits / (hits + misses)
    assert got["l2_reads"] == pytest.approx(hits + misses)
    assert got["l2_size"] == _stat(AFTER, "l2_asize")
    sampler.stop()
