"""illumos `iostat -xn` family: every captured variant, exact values, streaming, bad input."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from tests.unit.mangle import drain, variants
from zfsmon import metrics
from zfsmon.model import Kind, ParseError
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.devices import illumos_iostat as io

FILES = [p for p in fixture_files("illumos_fsstat_iostat") if "iostat" in p.name]


def _one(part):
    [p] = [x for x in FILES if part in x.name]
    return p.read_text()


def _rows(text):
    """Independent count: lines whose last token is a name and all others numbers, inside device sections."""
    n = 0
    for ln in text.splitlines():
        parts = ln.split()
        if len(parts) > 5 and all(p.replace(".", "", 1).isdigit() for p in parts[:-1]) \
                and not parts[-1].replace(".", "", 1).isdigit():
            n += 1
    return n


@pytest.mark.parametrize("path", FILES, ids=fixture_ids(FILES))
def test_every_iostat_capture(path, fixtures):
    text = path.read_text()
    samples = io.parse_iostat(text, 100.0, 5.0, path.name)
    assert len(samples) == _rows(text) > 0
    for s in samples:
        assert s.entity.kind == Kind.DEVICE
        assert {"read_ops", "write_ops", "read_bw", "write_bw", "busy_pct"} <= set(s.metrics)
        assert all(v >= 0 for v in s.metrics.values())
        assert all(metrics.lookup(Kind.DEVICE, k) is not None for k in s.metrics)
        assert s.metrics["busy_pct"] <= 100


def test_xnze_with_errors(fixtures):
    d = {s.entity.name: s for s in io.parse_iostat(_one("-xnze"), 100.0)}
    assert list(d) == ["lofi1", "ramdisk1", "c0t0d0", "c0t1d0"]
    c = d["c0t1d0"].metrics  # " 1.5  33.9  146.0 1062.6  0.0  0.0    0.0    1.2  0  1   0   0   0   0 c0t1d0"
    assert c["read_ops"] == 1.5 and c["write_ops"] == 33.9
    assert c["read_bw"] == pytest.approx(146.0 * 1024) and c["write_bw"] == pytest.approx(1062.6 * 1024)
    assert c["active_svc_ns"] == pytest.approx(1.2e6) and c["busy_pct"] == 1
    assert c["hard_errors"] == 0 and metrics.is_counter(Kind.DEVICE, "hard_errors")
    assert d["lofi1"].metrics["wait_svc_ns"] == pytest.approx(0.3e6)
    assert all(s.since_boot and s.ts == 100.0 for s in d.values())


def test_xcnCXTdz_two_timed_reports_with_cpu(fixtures):
    samples = io.parse_iostat(_one("-xcnCXTdz"), 100.0, 5.0)
    assert [s.entity.name for s in samples] == ["c0", "c12", "d10"] * 2
    t0 = time.mktime(time.strptime("Mon Nov 24 14:58:36 2003", "%a %b %d %H:%M:%S %Y"))
    assert [s.ts for s in samples] == [t0] * 3 + [t0 + 5] * 3  # printed times win over the caller's
    assert [s.since_boot for s in samples] == [True] * 3 + [False] * 3
    assert samples[3].interval == 5.0 and samples[0].interval is None
    c12 = samples[1].metrics  # "666.3  814.8 12577.6 17591.1 91.3  82.3   61.6   55.6   0   2    c12"
    assert c12["read_ops"] == 666.3 and c12["wait_queue"] == 91.3 and c12["active_queue"] == 82.3
    assert c12["write_bw"] == pytest.approx(17591.1 * 1024)  # the doc's "kw" column
    d10 = samples[5].metrics  # "106.5   81.3  3393.2  1948.6 0.0    5.7    0.0   30.1   0  99    d10"
    assert d10["busy_pct"] == 99 and d10["active_svc_ns"] == pytest.approx(30.1e6)


def test_xnp_partitions_and_nfs(fixtures):
    d = {s.entity.name: s.metrics for s in io.parse_iostat(_one("-xnp"), 1.0)}
    assert list(d) == ["c0t0d0", "c0t0d0s0", "c0t0d0s1", "fuji:/export/home/user3"]
    assert d["c0t0d0s0"]["read_bw"] == pytest.approx(9.0 * 1024) and d["c0t0d0"]["active_svc_ns"] == 36.9e6
    [sd1] = io.parse_iostat(_one("-xn_sd1"), 1.0)
    assert sd1.entity.name == "c8t1d0" and all(v == 0 for v in sd1.metrics.values())


def test_stream_parser_timestamps_by_arrival(fixtures):
    p = io.IostatParser(interval=1.0)
    out = []
    for i, line in enumerate(_one("-xnze").splitlines()):
        out += p.feed(line, 50.0 + i)
    assert [s.ts for s in out] == [50.0] * 4  # the report's time is when its title arrived
    assert p.flush(99.0) == []


def test_plain_x_layout_is_refused():
    text = " extended device statistics\ndevice    r/s  w/s   kr/s   kw/s wait actv  svc_t  %w  %b\nsd0 0.0 0.0 0.0 0.0 0 0 0 0 0\n"
    with pytest.raises(ParseError, match="device"):
        io.parse_iostat(text, 1.0)


def test_row_width_mismatch(fixtures):
    lines = _one("-xnp").splitlines()
    lines[2] = lines[2].rsplit(None, 2)[0] + " c0t0d0"
    with pytest.raises(ParseError, match="columns"):
        io.parse_iostat("\n".join(lines), 1.0)
    with pytest.raises(ParseError, match="no `extended"):
        io.parse_iostat("", 1.0)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FILES), st.data())
def test_mangled_input_only_raises_parse_error(path, data):
    for variant in variants(path.read_text(), data):
        try:
            io.parse_iostat(variant, 1.0, 5.0)
        except ParseError:
            pass


def test_stream_collector_with_a_real_child(fixtures):
    """The collector path end to end: a real process streams a capture into the parser; restarts re-baseline."""
    [path] = [p for p in FILES if "-xcnCXTdz" in p.name]
    c = StreamCollector(["cat", str(path)], io.IostatParser(5.0), "iostat")
    c.start()
    try:
        recs = drain(c, 6)
        deadline = time.time() + 10
        while time.time() < deadline and c.parser.reports:  # the reader thread flushes after the last line
            time.sleep(0.05)
    finally:
        c.stop()
    samples = [r for r in recs if hasattr(r, "metrics")]
    assert [s.entity.name for s in samples] == ["c0", "c12", "d10"] * 2
    assert [s.since_boot for s in samples] == [True] * 3 + [False] * 3
    assert c.parser.reports == 0  # flushed at end of stream: the next child starts with a since-boot report
