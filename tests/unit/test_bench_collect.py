"""bench/bench_collect.py's breakdown: a zfs-fuse folder's poll split into its read and its parse, and bpftrace's
FUSE request counts read by opcode."""

from __future__ import annotations

import pytest

from bench.bench_collect import PerSource, fuse_op_counts
from tests.conftest import fixture_files
from zfsmon.engine import Sampler
from zfsmon.model import Kind, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.kstat import text as kstat_text

ARC_FILES = fixture_files("arcstats")

#: what `bpftrace -q -B line -e FUSE_COUNT PID` printed on the lab, its first line and what SIGINT made it print
#: (every source sampled, 10 ticks)
BPFTRACE_OUT = "ready\n\n\n@requests[3]: 11\n@requests[1]: 23\n@requests[18]: 530\n@requests[14]: 531\n@requests[15]: 531\n"


def test_bpftrace_counts_are_read_by_opcode_name():
    assert fuse_op_counts(BPFTRACE_OUT) == {"GETATTR": 11, "LOOKUP": 23, "RELEASE": 530, "OPEN": 531, "READ": 531}
    assert fuse_op_counts("@requests[99]: 3\n@other[14]: 5\nAttaching 2 probes...\n") == {"opcode 99": 3}


def test_a_kstat_folder_poll_is_split_into_its_read_and_its_parse(tmp_path, fixtures):
    src = [p for p in ARC_FILES if "zol-0.6.5" in p.name][0]
    d = tmp_path / "arcstats"
    d.mkdir()
    for name, v in kstat_text.parse_proc_table(src.read_text()).values.items():
        (d / name).write_text(f"{int(v)}\n")
    got = []
    s = Sampler([arcstats.FuseArcstatsCollector(str(d))], 1.0, sinks=[got.extend])
    per = PerSource(s)
    for _ in range(200):  # enough reads for the thread clock to see both parts
        s.tick()
    s.stop()
    arc = [r for r in got if isinstance(r, Sample) and r.entity.kind == Kind.ARC]
    assert len(arc) == 201 and arc[-1].metrics["hits"] > 0  # the wrapped read still gives every statistic
    parts = per.parts()
    read = parts[("arcstats", "read: user")] + parts[("arcstats", "read: system")]
    assert ("arcstats", "poll") not in parts and read > 0 and parts[("arcstats", "parse")] > 0
    assert read + parts[("arcstats", "parse")] == pytest.approx(per.cpu[("arcstats", "poll")])
    assert ("sampler", "derive") in parts
