"""illumos `fsstat`: default (-F), -a with intervals, -n; smart numbers; cumulative sums; bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from tests.unit.mangle import drain, variants
from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.devices import fsstat

FILES = [p for p in fixture_files("illumos_fsstat_iostat") if "fsstat" in p.name]
K, M, G = 1024.0, 1024.0**2, 1024.0**3


def _one(part):
    [p] = [x for x in FILES if part in x.name]
    return p.read_text()


def _samples(text, **kw):
    return [r for r in fsstat.parse_fsstat(text, 100.0, **kw) if isinstance(r, Sample)]


@pytest.mark.parametrize("path", FILES, ids=fixture_ids(FILES))
def test_every_fsstat_capture(path, fixtures):
    text = path.read_text()
    samples = _samples(text, interval=3.0)
    data_rows = [ln for ln in text.splitlines() if ln.split() and ln.split()[0][0].isdigit()]
    assert len(samples) == len(data_rows) > 0
    for s in samples:
        assert s.entity.kind == Kind.DATASET and s.entity.pool == ""
        assert s.entity.name == s.entity.name.strip() and s.entity.name
        for k in s.metrics:
            assert metrics.is_counter(Kind.DATASET, k), k


def test_default_report_values(fixtures):
    d = {s.entity.name: s.metrics for s in _samples(_one("-F"))}
    assert list(d) == ["ufs", "proc", "nfs", "zfs", "lofs", "tmpfs", "mntfs", "nfs3", "nfs4"]
    # "    10     8     2    86     9     98    15   413  103M 8.43K 1.05G zfs"
    z = d["zfs"]
    assert (z["files_created"], z["names_removed"], z["names_changed"]) == (10, 8, 2)
    assert (z["attr_gets"], z["attr_sets"], z["lookups"], z["readdirs"], z["reads"]) == (86, 9, 98, 15, 413)
    assert z["read_bytes"] == 103 * M and z["writes"] == pytest.approx(8.43 * K)
    assert z["write_bytes"] == pytest.approx(1.05 * G)
    # "  313K  214K 38.5K 2.16M 56.2K  8.36M 52.8K 19.7M 39.9G 18.8M 39.1G ufs"
    assert d["ufs"]["lookups"] == pytest.approx(8.36 * M) and d["ufs"]["read_bytes"] == pytest.approx(39.9 * G)
    assert all(v == 0 for v in d["nfs"].values())


def test_attribute_report_sums_intervals(fixtures):
    samples = _samples(_one("-a_ufs"), interval=3.0)
    assert [s.entity.name for s in samples] == ["ufs", "/", "/export/home"] * 4
    home = [s for s in samples if s.entity.name == "/export/home"]
    # since-mount row, then three 3-second intervals: 11.3K, +1.03K, +361, +711 getattr calls
    assert [s.since_boot for s in home] == [True, False, False, False]
    assert [s.ts for s in home] == [100.0, 103.0, 106.0, 109.0]
    assert home[0].metrics["getattr_calls"] == pytest.approx(11.3 * K)
    assert home[3].metrics["getattr_calls"] == pytest.approx(11.3 * K + 1.03 * K + 361 + 711)
    assert home[3].metrics["getsec_calls"] == 198 + 1 + 2 + 1
    # the rate layer turns the sums back into the interval's calls per second
    rd = RateDeriver()
    rd.update(home[0])
    d, _ = rd.update(home[1])
    assert d.rates["getattr_calls"] == pytest.approx(1.03 * K / 3) and d.rates["setattr_calls"] == 927 / 3


def test_naming_report(fixtures):
    d = {s.entity.name: s.metrics for s in _samples(_one("-n_ufs"))}
    assert list(d) == ["ufs", "nfs", "nfs3", "nfs4", "tmpfs"]
    # "18.3K      3     5     0     0     0     0 1.03K      2   346 nfs3"
    assert d["nfs3"]["lookups"] == pytest.approx(18.3 * K) and d["nfs3"]["readdirs"] == pytest.approx(1.03 * K)
    assert (d["nfs3"]["creates"], d["nfs3"]["removes"], d["nfs3"]["symlinks"], d["nfs3"]["readlinks"]) == \
        (3, 5, 2, 346)
    assert d["tmpfs"]["mkdirs"] == 4 and d["ufs"]["readlinks"] == pytest.approx(330 * K)


def test_repeated_header_and_state_change(fixtures):
    lines = _one("-a_ufs").splitlines()
    text = "\n".join(lines[:4] + [lines[0], "<<mount point no longer available: /export/home>>"] + lines[4:6])
    recs = fsstat.parse_fsstat(text, 1.0, 3.0)
    [ev] = [r for r in recs if isinstance(r, Event)]
    assert ev.kind == EventKind.TOPOLOGY and ev.entity == "dataset:/export/home"
    assert [r.entity.name for r in recs if isinstance(r, Sample)] == ["ufs", "/", "/export/home", "ufs", "/"]


def test_restart_resets_the_sums(fixtures):
    p = fsstat.FsstatParser(3.0)
    text = _one("-a_ufs").splitlines()
    first = [r for ln in text[:4] for r in p.feed(ln, 1.0)]
    p.flush(2.0)  # the child ended; a new one prints since-boot rows again
    again = [r for ln in text[:4] for r in p.feed(ln, 3.0)]
    assert [s.metrics for s in again] == [s.metrics for s in first] and all(s.since_boot for s in again)


def test_unknown_layouts_are_refused():
    with pytest.raises(ParseError, match="unknown fsstat header"):
        fsstat.parse_fsstat("Mountpoint: /\n operation  #ops  bytes\n      open 8.54K\n", 1.0)
    with pytest.raises(ParseError, match="second header line"):
        fsstat.parse_fsstat(" new  name\n file ops\n 1 2 zfs\n", 1.0)
    with pytest.raises(ParseError, match="before any"):
        fsstat.parse_fsstat("1 2 3 zfs\n", 1.0)
    with pytest.raises(ValueError):
        fsstat.FsstatCollector(mode="-i")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FILES), st.data())
def test_mangled_input_only_raises_parse_error(fixtures, path, data):
    for variant in variants(path.read_text(), data):
        try:
            fsstat.parse_fsstat(variant, 1.0, 3.0)
        except ParseError:
            pass


def test_stream_collector_with_a_real_child(fixtures):
    """A real process streams the -a capture; the collector yields the summed rows, then the child ends."""
    [path] = [p for p in FILES if "-a_ufs" in p.name]
    c = StreamCollector(["cat", str(path)], fsstat.FsstatParser(3.0), "fsstat")
    c.start()
    try:
        recs = drain(c, 12)
    finally:
        c.stop()
    samples = [r for r in recs if isinstance(r, Sample)]
    assert len(samples) == 12 and samples[-1].entity.name == "/export/home"
    assert samples[-1].metrics["setattr_calls"] == pytest.approx(9.6 * K + 927 + 317 + 631)
