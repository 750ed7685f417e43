"""analyze reads only the kinds of entity findings use (``findings.KINDS``) and, of a ``zpool iostat`` row, only
the metrics they use (``findings.reads_metric``): on real real_recordings, leaving the rest out of the read changes
nothing in the report; the PDF report's pages read what they draw and findings use (``report_pdf.report_reads``),
and are what a read of everything gives."""

from __future__ import annotations

import pytest

from zfsmon.analysis import findings
from zfsmon.model import Kind
from zfsmon.store import Recording
from zfsmon.views import report_pdf


def test_the_kinds_and_metrics_left_out_are_in_the_recordings(real_recordings):
    left_out, unread = set(), set()
    for path in real_recordings.values():
        with Recording.open(path) as rec:
            for s in rec.samples():
                if s.entity.kind not in findings.KINDS:
                    left_out.add(s.entity.kind)
                unread |= {(s.entity.kind, n) for n in s.metrics if not findings.reads_metric(s.entity.kind, n)}
    # else the next test compares a report with itself
    assert left_out
    assert {n for k, n in unread if k == Kind.LEAF} >= {"read_bw", "write_bw", "lat_disk_wait_read_1ms"}


@pytest.mark.parametrize("name", ["ceiling", "l2arc", "slog", "guest", "v2"])
def test_a_report_from_its_kinds_alone_is_the_whole_recordings(real_recordings, name):
    with Recording.open(real_recordings[name]) as rec:
        every = list(rec.samples())
        mine = list(rec.samples(kinds=findings.KINDS, metrics=findings.reads_metric))
        events = rec.events()
    assert len(mine) < len(every)
    assert sum(len(s.metrics) for s in mine) < sum(len(s.metrics) for s in every if s.entity.kind in findings.KINDS)
    whole, reduced = findings.analyze(every, events), findings.analyze(mine, events)
    assert reduced.as_dict() == whole.as_dict()
    assert reduced.findings


def test_a_reduced_read_is_each_sample_with_the_others_left_out(real_recordings):
    with Recording.open(real_recordings["guest"]) as rec:
        every = list(rec.samples())
        mine = list(rec.samples(metrics=findings.reads_metric))
    assert len(mine) == len(every)
    for a, b in zip(every, mine):
        assert (a.ts, a.entity, a.interval, a.since_boot, a.source) == (b.ts, b.entity, b.interval, b.since_boot,
                                                                        b.source)
        assert b.metrics == {n: v for n, v in a.metrics.items() if findings.reads_metric(a.entity.kind, n)}
        assert list(b.metrics) == [n for n in a.metrics if n in b.metrics]  # in the stream's order


@pytest.mark.parametrize("name", ["ceiling", "l2arc", "slog", "guest", "v2"])
def test_the_reports_pages_from_the_reduced_read_are_the_whole_recordings(real_recordings, name):
    with Recording.open(real_recordings[name]) as rec:
        whole, reduced = report_pdf.build(rec, metrics=None), report_pdf.build(rec)
    assert reduced.sections == whole.sections
    assert reduced.findings == whole.findings and reduced.findings
    assert any(ln.ts for sec in reduced.sections for p in sec.panels for ln in p.lines)
