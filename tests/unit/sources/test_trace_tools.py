"""Stock tracing tools' output as trace entities (issue 12 item 11): bpftrace histograms captured on this host
(tests/data/linux-host/PROVENANCE.md) and bcc's zfsdist / biolatency / zfsslower from bcc's example files
(tests/data/bcc-examples/PROVENANCE.md: no bcc capture of our own yet)."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA
from zfsmon.model import Event, Kind, ParseError, Sample
from zfsmon.sources import detect, trace_tools

HOST = TEST_DATA / "linux-host"
BCC = TEST_DATA / "bcc-examples"
US = 1000.0
MS = 1e6


def _read(path, interval=None):
    text = path.read_text()
    kind = detect.detect(text)
    recs = kind.parse(text, path.name, interval)
    return kind.name, [r for r in recs if isinstance(r, Sample)], [r for r in recs if isinstance(r, Event)]


def test_bpftrace_hist_of_sector_counts():
    kind, [s], _ = _read(HOST / "bpftrace-hist-nr_sector.txt")
    assert kind == "bpftrace-hist"
    assert (s.entity.kind, s.entity.name, s.source, s.ts, s.interval) == (Kind.TRACE, "bpftrace", "trace:bpftrace",
                                                                          0.0, None)
    # `@ = hist(args->nr_sector)`: not a time, so bounds stay in the map's unit and no _lat_ names
    assert s.metrics == {"all_ops": 21018, "all_bucket_0_1": 6000, "all_bucket_8_16": 8529, "all_bucket_16_32": 9,
                         "all_bucket_128_256": 6480, "all_max": 256,
                         "all_p50": pytest.approx(8 + 8 * (10509 - 6000) / 8529),
                         "all_p95": pytest.approx(128 + 128 * (0.95 * 21018 - 14538) / 6480),
                         "all_p99": pytest.approx(128 + 128 * (0.99 * 21018 - 14538) / 6480)}


def test_bpftrace_keyed_latency_hist():
    _, [s], _ = _read(HOST / "bpftrace-hist-usecs-by-rwbs.txt")
    assert s.entity.name == "usecs"  # the map's name; its keys (rwbs flags) are the ops
    ops = sorted(k[:-4] for k in s.metrics if k.endswith("_ops"))
    assert ops == ["ds", "ra", "rm", "rs", "w", "ws", "wsm"]
    assert s.metrics["ws_ops"] == 670 + 2824 + 2453 + 109 + 1
    assert s.metrics["ws_bucket_16000_32000"] == 670 and s.metrics["ws_bucket_256000_512000"] == 1
    assert s.metrics["ds_bucket_1024000_2048000"] == 3  # "[1K, 2K)" usecs: 1024-based suffixes
    assert s.metrics["w_lat_max_ns"] == 256 * US and s.metrics["w_lat_p50_ns"] == 192 * US
    assert s.metrics["rs_lat_p50_ns"] == pytest.approx((64 + 64 * 2000 / 3548) * US)


def test_bpftrace_interval_blocks():
    _, samples, _ = _read(HOST / "bpftrace-hist-usecs-interval.txt")
    assert [(s.ts, s.interval) for s in samples] == [(19 * 3600 + 16 * 60 + 18, 1.0), (19 * 3600 + 16 * 60 + 19, 1.0)]
    assert samples[0].metrics["all_ops"] == 3 and samples[0].metrics["all_ops_s"] == 3
    assert samples[1].metrics["all_bucket_256000_512000"] == 249 and samples[1].metrics["all_ops"] == 352


def test_zfsdist():
    kind, [s], _ = _read(BCC / "zfsdist.txt")
    assert kind == "bcc-hist"
    assert (s.entity.kind, s.entity.name, s.source) == (Kind.TRACE, "zfs", "trace:zfsdist")
    assert sorted(k[:-4] for k in s.metrics if k.endswith("_ops")) == ["open", "read", "write"]
    assert s.metrics["read_ops"] == 4479 + 1028 + 14 + 1 + 2 + 6 + 1 + 1256 + 9 + 1 + 2
    assert s.metrics["read_bucket_4000_8000"] == 4479 and s.metrics["read_bucket_512000_1024000"] == 1256
    assert s.metrics["write_bucket_131072000_262144000"] == 1 and s.metrics["write_lat_max_ns"] == 262144 * US
    assert s.metrics["open_ops"] == 2 and s.metrics["open_lat_p50_ns"] == 3 * US  # "2 -> 3": [2, 4) us


def test_zfsdist_interval_run():
    _, samples, _ = _read(BCC / "zfsdist-1-5.txt")
    assert [s.ts for s in samples] == [6 * 3600 + 55 * 60 + t for t in (41, 42, 43, 44, 45)]
    assert [s.interval for s in samples] == [None, 1.0, 1.0, 1.0, 1.0]
    assert [s.metrics["read_ops"] for s in samples] == [6528, 15189, 82954, 85467, 80816]
    assert samples[1].metrics["read_ops_s"] == 15189


def test_biolatency_per_disk_flags_and_msecs():
    _, samples, _ = _read(BCC / "biolatency-D.txt")
    assert [(s.entity.kind, s.entity.name) for s in samples] == [(Kind.TRACE, d) for d in ("xvdb", "xvdc", "xvda1")]
    assert samples[2].metrics["io_ops"] == 18 + 67 + 35 + 71 + 65 + 65 + 20 + 7
    assert samples[2].metrics["io_bucket_32768000_65536000"] == 7
    _, [s], _ = _read(BCC / "biolatency-Fm.txt")
    assert s.entity.name == "block"
    assert {"read_ops", "sync_write_ops", "flush_ops", "metadata_read_ops",
            "forcedunitaccess_metadata_sync_write_ops"} <= set(s.metrics)
    assert s.metrics["read_bucket_2000000_4000000"] == 519 and s.metrics["flush_ops"] == 2
    _, samples, _ = _read(BCC / "biolatency-mT-1-5.txt", interval=1.0)
    assert [s.metrics["io_ops"] for s in samples] == [103, 392, 381, 794, 596]
    assert samples[3].metrics["io_bucket_0_2000000"] == 522  # "|****...+|": a truncated bar
    assert samples[0].metrics["io_lat_max_ns"] == 128 * MS and samples[0].interval == 1.0


def test_zfsslower_events_and_per_second_counts():
    kind, samples, events = _read(BCC / "zfsslower.txt")
    assert kind == "bcc-slower" and len(events) == 13
    ev = events[2]
    assert (ev.ts, ev.entity, ev.source) == (6 * 3600 + 31 * 60 + 35, "trace:zfs", "trace:zfsslower")
    assert ev.data == {"op": "write", "lat_ns": pytest.approx(519.66 * MS), "bytes": 131072.0, "slow": True,
                       "detail": "pid=25686 comm=dd file=data1 off_kb=78720"}
    assert ev.text == "slow write 519.7 ms on zfs (pid=25686 comm=dd file=data1 off_kb=78720)"
    assert [(s.ts - 6 * 3600 - 31 * 60, s.metrics["write_slow_ops"]) for s in samples] == [
        (28, 1), (34, 1), (35, 3), (36, 3), (37, 3), (38, 2)]
    assert samples[2].metrics["write_slow_lat_max_ns"] == pytest.approx(519.66 * MS)
    _, samples, events = _read(BCC / "zfsslower-j-1.txt")
    assert len(events) == 21 and events[0].ts == 252305.490911 and events[0].data["lat_ns"] == 1156 * US
    assert events[0].data["detail"] == "pid=17922 comm=randread.pl file=data1 off_kb=159616"
    assert [s.metrics["read_slow_ops"] for s in samples] == [21]


def test_mangled_lines_are_refused():
    text = (BCC / "zfsdist.txt").read_text()
    with pytest.raises(ParseError, match=r"zd:8: not a line of a bcc histogram"):
        trace_tools.parse_bcc_hist(text.replace("4479     |", "4479 x   |"), "zd")
    text = (HOST / "bpftrace-hist-nr_sector.txt").read_text()
    with pytest.raises(ParseError, match="bad bucket bound"):
        trace_tools.parse_bpftrace_hist(text.replace("[8, 16)", "[8, 1x)"), "bt")
    with pytest.raises(ParseError, match="no bpftrace histogram"):
        trace_tools.parse_bpftrace_hist("Attaching 1 probe...\n", "bt")
