"""The ``txgs`` source: the per-pool txg ring read into counters, on the guest's and the shared captures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from tests.unit.mangle import variants
from zfsmon import metrics
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.detect import detect
from zfsmon.sources.kstat import txgs

G23 = TEST_DATA / "openzfs-2.3" / "kstat" / "zguest.txgs"
G21 = TEST_DATA / "openzfs-2.1" / "kstat" / "zguest.txgs"
SHARED = [p for p in fixture_files("kstat_misc") if "_txgs" in p.name]


def _rows(path, lo=0, hi=10**12):
    return [r for r in txgs.parse_txgs(path.read_text(), path.name) if lo <= r.txg <= hi]


def test_guest_captures_parse_with_states():
    rows = _rows(G23)
    assert [r.txg for r in rows] == list(range(41, 96))
    assert {r.state for r in rows[:-1]} == {"C"} and rows[-1].state == "O"
    r54 = next(r for r in rows if r.txg == 54)
    assert r54.values["ndirty"] == 15351808 and r54.values["nwritten"] == 29843456 and r54.values["stime"] == 895400380
    assert r54.done_ns == 200675910270 + 5119232910 + 20120 + 5343320 + 895400380
    old = _rows(G21)
    assert len(old) == 77 and old[0].txg == 41 and old[-1].txg == 117 and old[-1].state == "O"


def test_counter_counts_each_committed_txg_once():
    c = txgs.TxgCounter("zguest")
    [base] = c.update(_rows(G23, hi=53), 10.0)
    assert base.metrics["txgs_synced"] == 0 and base.metrics["txg_committed"] == 53
    assert "txg_sync_max_ns" not in base.metrics and base.entity.key == "pool:zguest/zguest"
    [s] = c.update(_rows(G23, hi=58), 15.0)
    # txgs 54..58 of the capture, summed by hand from the text
    assert s.metrics["txgs_synced"] == 5 and s.metrics["txg_committed"] == 58
    assert s.metrics["txg_sync_time_ns"] == 6791265350 and s.metrics["txg_sync_max_ns"] == 1838278610
    assert s.metrics["txg_written_synced_bytes"] == 309624832 and s.metrics["txg_dirty_synced_bytes"] == 151478272
    assert s.metrics["txg_writes_synced"] == 13852 and s.metrics["txg_wait_time_ns"] == 7668550
    [again] = c.update(_rows(G23, hi=58), 20.0)  # the same ring read again: nothing new
    assert again.metrics["txgs_synced"] == 5 and "txg_sync_max_ns" not in again.metrics
    # the whole capture: 59..94 are new; the open txg 95 is not counted
    [full] = c.update(_rows(G23), 25.0)
    assert full.metrics["txgs_synced"] == 5 + 36 and full.metrics["txg_committed"] == 94
    assert full.metrics["txgs_unseen"] == 0
    for name in full.metrics:
        assert metrics.lookup(Kind.POOL, name) is not None, name
    assert metrics.is_counter(Kind.POOL, "txg_sync_time_ns") and not metrics.is_counter(Kind.POOL, "txg_sync_max_ns")


def test_ring_overrun_is_counted_unseen_and_going_back_is_a_reset():
    c = txgs.TxgCounter("zguest")
    c.update(_rows(G23, hi=45), 1.0)
    [s] = c.update(_rows(G23, lo=60), 2.0)  # 46..59 left the ring before this read
    assert s.metrics["txgs_unseen"] == 14 and s.metrics["txgs_synced"] == 35
    recs = c.update(_rows(G21, hi=50), 3.0)  # a pool re-created under the same name: txg 50 < 94
    ev = [r for r in recs if isinstance(r, Event)]
    assert len(ev) == 1 and ev[0].kind == EventKind.RESET and "94 to 50" in ev[0].text
    [after] = [r for r in recs if isinstance(r, Sample)]
    assert after.metrics["txgs_synced"] == 35 and after.metrics["txg_committed"] == 50
    [more] = c.update(_rows(G21, hi=52), 4.0)
    assert more.metrics["txgs_synced"] == 37


def test_only_open_txgs_give_nothing():
    rows = [r for r in _rows(G23) if r.state == "O"]
    assert txgs.TxgCounter("zguest").update(rows, 1.0) == []


def test_collector_reads_every_pool(tmp_path):
    root = tmp_path / "zfs"
    (root / "zguest").mkdir(parents=True)
    (root / "old").mkdir()
    ring = G23.read_text().splitlines()
    (root / "zguest" / "txgs").write_text("\n".join(ring[:15]) + "\n")  # header + txgs 41..54
    (root / "old" / "txgs").write_text(G21.read_text())
    (root / "arcstats").write_text("a file, not a pool")
    t = [100.0]
    c = txgs.TxgsCollector(str(root), clock=lambda: t[0])
    first = c.poll()
    assert sorted(s.entity.name for s in first) == ["old", "zguest"]
    (root / "zguest" / "txgs").write_text(G23.read_text())
    t[0] = 105.0
    second = {s.entity.name: s for s in c.poll()}
    assert second["zguest"].metrics["txgs_synced"] == 94 - 54 and second["zguest"].ts == 105.0
    assert second["old"].metrics["txgs_synced"] == 0
    (root / "zguest" / "txgs").write_text("txg birth\n1 2\n")
    bad = c.poll()
    assert any(isinstance(r, Event) and r.kind == EventKind.ERROR and "zguest/txgs" in r.text for r in bad)
    assert any(isinstance(r, Sample) and r.entity.name == "old" for r in bad)
    gone = txgs.TxgsCollector(str(root), pools=["nope"], clock=lambda: 1.0).poll()
    assert len(gone) == 1 and "nope" in gone[0].text


@pytest.mark.parametrize("path", SHARED, ids=fixture_ids(SHARED))
def test_shared_captures(path, fixtures):
    rows = txgs.parse_txgs(path.read_text(), path.name)
    assert rows and all(r.state in "OQWSC" for r in rows)
    recs = txgs.parse_text(path.read_text(), "tank.txgs")
    done = [r for r in rows if r.state == "C"]
    assert recs[-1].metrics["txgs_synced"] == len(done) - 1  # the oldest is the baseline
    assert recs[-1].metrics["txg_sync_time_ns"] == sum(r.values["stime"] for r in done[1:])


def test_saved_text_kind_and_detection():
    recs = txgs.parse_text(G23.read_text(), "zguest.txgs")
    assert len(recs) == 54 and all(r.entity.name == "zguest" for r in recs)
    assert [r.ts for r in recs] == sorted(r.ts for r in recs) and recs[0].ts < 1e8  # seconds since boot
    assert recs[-1].metrics["txgs_synced"] == 53
    assert detect(G23.read_text()).name == "txgs-kstat"
    with pytest.raises(ParseError):
        txgs.parse_text("\n".join(G23.read_text().splitlines()[:1] + G23.read_text().splitlines()[-1:]), "x.txgs")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([G23, G21]), st.data())
def test_mangled_input_only_raises_parse_error(path, data):
    for variant in variants(path.read_text(), data):
        try:
            c = txgs.TxgCounter("p")
            c.update(txgs.parse_txgs(variant), 1.0)
        except ParseError:
            pass


def _parsed(text, known=None):
    """The rows of a read, or the error it raises (its line and text), as comparable values."""
    try:
        return [(r.txg, r.birth, r.state, dict(r.values)) for r in txgs.parse_txgs(text, "t", known)]
    except ParseError as exc:
        return ("error", str(exc))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([G23, G21]), st.data())
def test_known_rows_of_the_last_read_give_what_parsing_afresh_gives(path, data):
    """The collector keeps the last read's rows by line; on any sequence of reads of a ring (windows that move
    on, lines that change state, mangled reads) every read gives what parsing it afresh gives, errors included,
    and the kept rows are only the last good read's."""
    lines = path.read_text().splitlines()
    head, body = lines[:1], lines[1:]
    known = {}
    for _ in range(data.draw(st.integers(1, 6))):
        lo = data.draw(st.integers(0, len(body) - 1))
        hi = data.draw(st.integers(lo + 1, len(body)))
        window = body[lo:hi]
        if data.draw(st.booleans()):  # the newest line as it was while still open, then committed
            k = data.draw(st.integers(0, len(window) - 1))
            window = window[:k] + [window[k].replace(" C ", " S ", 1)] + window[k + 1:]
        text = "\n".join(head + window) + "\n"
        if data.draw(st.integers(0, 4)) == 0:
            text = next(iter(variants(text, data)), text)
        before = dict(known)
        got = _parsed(text, known)
        assert got == _parsed(text)
        if isinstance(got, tuple):
            assert known == before  # a read that failed leaves the last good one
        else:
            assert len(known) <= len(window) and all(known[ln].txg == row[0] for ln, row in
                                                      zip([ln for ln in text.splitlines()[1:] if ln.split()], got))


def test_the_collector_parses_only_the_new_lines_of_its_ring(tmp_path, monkeypatch):
    root = tmp_path / "zfs"
    (root / "zguest").mkdir(parents=True)
    ring = G23.read_text().splitlines()
    (root / "zguest" / "txgs").write_text("\n".join(ring[:15]) + "\n")  # header + txgs 41..54
    c = txgs.TxgsCollector(str(root), clock=lambda: 1.0)
    c.poll()
    made = []
    real = txgs.TxgRow
    monkeypatch.setattr(txgs, "TxgRow", lambda *a: made.append(a[0]) or real(*a))
    (root / "zguest" / "txgs").write_text("\n".join(ring[:1] + ring[5:17]) + "\n")  # 45..56: two new
    (s,) = c.poll()
    assert made == [55, 56] and s.metrics["txgs_synced"] == 2
