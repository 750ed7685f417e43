"""The bcc backend's maps -> protocol lines: exactly the bpftrace scripts' lines for the same data, and back
through zfsmon's own parser with the same numbers (no bcc needed: a snapshot is plain tuples)."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

from tests.conftest import TEST_DATA
from zfsmon.model import Event, EventKind, Sample
from zfsmon.trace.bcc_collector import BccParser
from zfsmon.trace.bcc_format import Printer, SlowEvent, Snapshot, block, header, slow_line
from zfsmon.trace.bcc_program import NAME_INDEX, TRACES
from zfsmon.trace.protocol import TraceParser, parse_text

_MAP = re.compile(r"^@(\w+)\[(.+)\]: (\d+)$")


def _bt_intervals(text: str) -> List[Tuple[str, List[str]]]:
    """(interval line, its map lines) of a bpftrace output."""
    out: List[Tuple[str, List[str]]] = []
    for line in text.splitlines():
        if line.startswith("interval "):
            out.append((line, []))
        elif line.startswith("@") and out:
            out[-1][1].append(line)
    return out


def _snapshot_of(trace_name: str, map_lines: List[str]) -> Snapshot:
    """The snapshot the kernel maps would hold for these bpftrace lines (the inverse of bcc_format.block)."""
    t = TRACES[trace_name]
    snap: Snapshot = {}
    for line in map_lines:
        m = _MAP.match(line)
        assert m, line
        keys = m.group(2).split(", ")
        ent = int(keys[0]) if t.entity == "devt" else t.entities.index(keys[0])
        key: Tuple[int, ...] = (t.tid, NAME_INDEX[keys[1]], ent)
        if m.group(1) == "lat":
            key += (int(keys[2]),)
        snap.setdefault(m.group(1), []).append((key, int(m.group(3))))
    return snap


def test_blklat_blocks_equal_bpftrace_s_own_capture():
    """tests/data/trace/blklat.bt.out is real bpftrace output from the lab: the same maps, printed by bcc_format,
    are the same lines (bpftrace's order inside a map is its own; the parser takes any order)."""
    text = (TEST_DATA / "trace" / "blklat.bt.out").read_text()
    first = text.splitlines()[0]
    assert first == header(TRACES["blklat"], 1, 3)
    intervals = _bt_intervals(text)
    assert len(intervals) >= 3
    for interval_line, lines in intervals:
        epoch = float(interval_line.split()[1])
        mine = block(TRACES["blklat"], _snapshot_of("blklat", lines), epoch, 1)
        assert mine[0] == interval_line and mine[-1] == "end"
        assert sorted(mine[1:-1]) == sorted(lines)
    slows = [ln for ln in text.splitlines() if ln.startswith("slow ")]
    assert slows
    for ln in slows:
        _, epoch, dev, op, ns, nbytes, detail = ln.split(" ", 6)
        ev = SlowEvent(0, TRACES["blklat"].tid, NAME_INDEX[op], int(dev), int(ns), int(nbytes),
                       extra=int(detail.split("=")[1]))
        assert slow_line(TRACES["blklat"], ev, float(epoch)) == ln


def _zfsslower_arc_zil_snapshot() -> Snapshot:
    """A snapshot made by hand, of the shape one 5 s interval of the guest has (the capture test uses real ones)."""
    zs, arc, zil = TRACES["zfsslower"].tid, TRACES["arc"].tid, TRACES["zil"].tid
    dev = 98  # 0:98, the dataset's anonymous device
    rd, wr = NAME_INDEX["read"], NAME_INDEX["write"]
    return {
        "lat": [((zs, rd, dev, 12288), 40), ((zs, rd, dev, 1572864), 3), ((zs, wr, dev, 229376), 17),
                ((zil, NAME_INDEX["commit"], 0, 6291456), 2)],
        "max": [((zs, rd, dev), 1600000), ((zs, wr, dev), 262143), ((zil, NAME_INDEX["commit"], 0), 7000000)],
        "sum": [((zs, rd, dev), 5127000), ((zs, wr, dev), 4100000), ((zil, NAME_INDEX["commit"], 0), 13000000)],
        "bytes": [((zs, rd, dev), 43 * 8192), ((zs, wr, dev), 17 * 8192),
                  ((arc, NAME_INDEX["feed"], 1), 1048576)],
        "count": [((zs, NAME_INDEX["op_read"], dev), 43), ((zs, NAME_INDEX["op_write"], dev), 17),
                  ((zs, NAME_INDEX["op_fsync"], dev), 1),
                  ((arc, NAME_INDEX["demand_data_hits"], 0), 412), ((arc, NAME_INDEX["demand_metadata_hits"], 0), 90),
                  ((arc, NAME_INDEX["demand_data_misses"], 0), 31), ((arc, NAME_INDEX["prefetch_data_misses"], 0), 4),
                  ((arc, NAME_INDEX["feed_writes"], 1), 3), ((zil, NAME_INDEX["commits"], 0), 2)],
    }


def test_several_traces_in_one_stream_round_trip_through_zfsmon_s_parser():
    printer = Printer(("zfsslower", "arc", "zil"), 5, 100)
    lines = printer.headers()
    assert lines == ["zfsmon-trace 1 zfsslower entity=devt interval=5 slow_ms=100",
                     "zfsmon-trace 1 arc entity=name interval=5",
                     "zfsmon-trace 1 zil entity=name interval=5 slow_ms=100"]
    lines += printer.interval_lines(_zfsslower_arc_zil_snapshot(), 1795460000.25)
    # a slow zfsslower op after zil's block: its header comes again first
    lines += printer.slow_lines(SlowEvent(0, TRACES["zfsslower"].tid, NAME_INDEX["write"], 98, 812000000,
                                          67108864, pid=4242, comm="dd", file="slow.dat"), 1795460001.5)
    text = "\n".join(lines) + "\n"
    assert text.count("zfsmon-trace 1 zfsslower") == 3 and text.count("\nend\n") == 3
    recs = parse_text(text, "trace:bcc")
    samples = {(s.source, s.entity.name): s for s in recs if isinstance(s, Sample)}
    assert set(samples) == {("trace:zfsslower", "0:98"), ("trace:arc", "arc"), ("trace:arc", "l2arc"),
                            ("trace:zil", "zil")}
    assert {s.ts for s in samples.values()} == {1795460000.25}  # one tick: one table in zfsmon trace
    fs = samples[("trace:zfsslower", "0:98")].metrics
    assert fs["read_ops"] == 43 and fs["op_read"] == 43 and fs["write_ops"] == 17 and fs["op_fsync"] == 1
    assert fs["read_bytes"] == 43 * 8192 and fs["read_lat_max_ns"] == 1600000
    assert abs(fs["read_lat_mean_ns"] - 5127000 / 43) < 1e-6
    assert fs["read_hist_12288"] == 40 and fs["read_hist_1572864"] == 3
    assert fs["read_ops_s"] == 43 / 5
    arc = samples[("trace:arc", "arc")].metrics
    assert arc == {"demand_data_hits": 412, "demand_metadata_hits": 90, "demand_data_misses": 31,
                   "prefetch_data_misses": 4}
    l2 = samples[("trace:arc", "l2arc")].metrics
    assert l2 == {"feed_writes": 3, "feed_bytes": 1048576}
    zil = samples[("trace:zil", "zil")].metrics
    assert zil["commit_ops"] == 2 and zil["commits"] == 2 and zil["commit_lat_max_ns"] == 7000000
    slow = [r for r in recs if isinstance(r, Event)]
    assert len(slow) == 1 and slow[0].data["slow"] and slow[0].data["op"] == "write"
    assert slow[0].data["lat_ns"] == 812000000 and slow[0].data["bytes"] == 67108864
    assert slow[0].data["detail"] == "pid=4242 comm=dd file=slow.dat" and slow[0].ts == 1795460001.5


def test_one_trace_prints_its_header_once_like_bpftrace():
    printer = Printer(("zil",), 1, 0)
    lines = printer.headers()
    for i in range(3):
        lines += printer.interval_lines({}, 1795460000.0 + i)
    assert lines[0] == "zfsmon-trace 1 zil entity=name interval=1 slow_ms=0"
    assert sum(ln.startswith("zfsmon-trace") for ln in lines) == 1
    assert lines[1:4] == ["interval 1795460000.000000 1", "end", "interval 1795460001.000000 1"]
    parser = TraceParser("trace:zil")
    for ln in lines:
        assert parser.feed(ln, 0.0) == []  # idle intervals have no map lines and no samples
    assert parser.intervals == 3


def test_slow_details_are_one_token_each():
    t = TRACES["zfsslower"]
    line = slow_line(t, SlowEvent(0, t.tid, NAME_INDEX["read"], 98, 5, 0, pid=1, comm="my proc", file=""), 1.0)
    assert line == "slow 1.000000 98 read 5 0 pid=1 comm=my?proc file=?"
    zil = TRACES["zil"]
    assert slow_line(zil, SlowEvent(0, zil.tid, NAME_INDEX["commit"], 0, 9, 0, pid=7, comm="pg"), 2.0) == \
        "slow 2.000000 zil commit 9 0 pid=7 comm=pg"


def test_ready_comment_is_an_info_event_and_otherwise_ignored():
    line = "# zfsmon-bcc ready: 17 probes attached for blklat,zfsslower,arc,zil (compiled in 512.3 s)"
    parser = BccParser("trace:bcc")
    recs = parser.feed(line, 5.0)
    assert len(recs) == 1 and recs[0].kind == EventKind.INFO and parser.ready
    assert recs[0].text == "bcc ready: 17 probes attached for blklat,zfsslower,arc,zil (compiled in 512.3 s)"
    assert TraceParser("trace:x").feed(line, 5.0) == []


def test_maps_of_unselected_traces_are_not_printed():
    snap: Dict = _zfsslower_arc_zil_snapshot()
    lines = Printer(("arc",), 5).interval_lines(snap, 1.0)
    assert lines[0].startswith("zfsmon-trace 1 arc") and not any("0:98" in ln or "98," in ln for ln in lines)
    assert "@count[arc, demand_data_hits]: 412" in lines and "@bytes[l2arc, feed]: 1048576" in lines
