"""analyze reads only the kinds of entity findings use (``findings.KINDS``): on real recordings, leaving the
others out of the read changes nothing in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from tests.conftest import TEST_DATA, gunzip
from zfsmon.analysis import findings
from zfsmon.store import Recording

GUEST = TEST_DATA / "openzfs-2.3" / "recording" / "rec.zfsmon.gz"
V2 = TEST_DATA / "store" / "v2-300ticks.zfsmon.gz"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, fio_lab_recordings) -> Dict[str, str]:
    d = Path(tmp_path_factory.mktemp("analyze-kinds"))
    return {**fio_lab_recordings, "guest": gunzip(GUEST, d), "v2": gunzip(V2, d)}


def test_the_kinds_left_out_are_in_the_recordings(recordings):
    left_out = set()
    for path in recordings.values():
        with Recording.open(path) as rec:
            left_out |= {s.entity.kind for s in rec.samples()} - findings.KINDS
    assert left_out  # else the next test compares a report with itself


@pytest.mark.parametrize("name", ["ceiling", "l2arc", "slog", "guest", "v2"])
def test_a_report_from_its_kinds_alone_is_the_whole_recordings(recordings, name):
    with Recording.open(recordings[name]) as rec:
        every = list(rec.samples())
        mine = list(rec.samples(kinds=findings.KINDS))
        events = rec.events()
    assert len(mine) < len(every)
    whole, reduced = findings.analyze(every, events), findings.analyze(mine, events)
    assert reduced.as_dict() == whole.as_dict()
    assert reduced.findings
