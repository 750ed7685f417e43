"""The panels' folds (zfsmon/views/top/folds/): every panel that keeps state of its own declares its fold, every
state makes one of each and feeds it the interval samples of its kinds, and a copied state's folds are its own.
On the committed recordings of the OpenZFS 2.3 guest and the lab's fio run (real sources, real cadence)."""

from __future__ import annotations

from typing import ClassVar, List, Tuple

import pytest

from zfsmon.model import Derived, Kind, Sample
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top import state as state_mod
from zfsmon.views.top.folds import FOLDS, Derivation, Fold, WorkloadFold
from zfsmon.views.top.panels.base import Panel, register
from zfsmon.views.top.state import TopState


def _records(path: str) -> list:
    with Recording.open(path) as rec:
        return sorted([*rec.samples(), *rec.events()], key=lambda r: r.ts)


def test_the_states_folds_are_the_panels_own():
    declared = [p.fold for p in panels.PANELS if p.fold is not None]
    assert declared == list(FOLDS), "FOLDS lists each panel's fold, in the panels' screen order"
    st = TopState()
    assert {k: type(f) for k, f in st.folds.items()} == {p.id: p.fold for p in panels.PANELS if p.fold}
    assert all(st.fold(f) is st.folds[f.id] for f in FOLDS)


def test_a_panel_cannot_declare_another_panels_fold():
    with pytest.raises(ValueError, match="fold of panel workload"):
        register(Panel("not-workload", "x", (Kind.WORKLOAD,), lambda f: None, fold=WorkloadFold))  # type: ignore
    assert "not-workload" not in panels.base.DECLARED


class _Seen(Fold):
    """Records what it is fed."""

    id: ClassVar[str] = "seen"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.ARC, Kind.L2ARC)

    def __init__(self) -> None:
        super().__init__()
        self.fed: List[Tuple[Sample, Derivation]] = []

    def feed(self, s: Sample, derived: Derivation) -> None:
        self.fed.append((s, derived))


def test_a_fold_is_fed_each_interval_sample_of_its_kinds_once(real_recordings, monkeypatch):
    monkeypatch.setattr(state_mod, "FOLDS", (*FOLDS, _Seen))
    recs = _records(real_recordings["guest"])
    st = TopState(window_s=3600.0)
    for i in range(0, len(recs), 97):  # batches of any size, as the sampler hands them
        st.feed(recs[i:i + 97])
    fed = st.fold(_Seen).fed
    want = [r for r in recs if isinstance(r, Sample) and r.entity.kind in _Seen.kinds and not r.since_boot]
    assert want, "the guest's recording has ARC and L2ARC samples"
    assert sorted((s.ts, s.entity.key) for s, _ in fed) == sorted((s.ts, s.entity.key) for s in want)
    # the state derived each before its folds saw it: the interval's rates, from the second reading of each on
    rated = [(s, d) for s, d in fed if d is not None]
    assert len(rated) >= len(fed) - 2  # the first reading of the ARC and of the L2ARC has no interval
    assert all(isinstance(d, Derived) and d.sample is s and d.elapsed > 0 and "reads_per_s" in d.metrics
               for s, d in rated)


def test_a_copied_states_folds_are_its_own(real_recordings):
    recs = _records(real_recordings["ceiling"])  # the lab's fio run: the workload fold's series and latencies
    half = len(recs) // 2
    st = TopState(window_s=120.0)
    st.feed(recs[:half])
    before = {k: list(q) for k, q in st.series.items()}
    fio_before = {k: list(q) for k, q in st.fold(WorkloadFold).fio.items()}
    assert any(m == "iops" for _, m in before) and fio_before, "the lab's fio run has fio intervals"
    cp = st.copy()
    cp.feed(recs[half:])
    assert {k: list(q) for k, q in st.series.items()} == before
    assert {k: list(q) for k, q in st.fold(WorkloadFold).fio.items()} == fio_before
    whole = TopState(window_s=120.0)
    whole.feed(recs[:half])
    whole.feed(recs[half:])
    assert {k: list(q) for k, q in cp.series.items()} == {k: list(q) for k, q in whole.series.items()}
    assert cp.fio() == whole.fio() and cp.read_path() == whole.read_path()
