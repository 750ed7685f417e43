"""The trace protocol parser on every script's recorded output (tests/data/trace, see its README)."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, TEST_DATA
from zfsmon.model import Event, EventKind, Kind, ParseError, Role, Sample
from zfsmon.sources.zpool.status import parse_status
from zfsmon.trace import catalog, protocol
from zfsmon.trace.histogram import is_bucket
from zfsmon.trace.protocol import TraceParser, parse_text
from zfsmon.trace.resolve import Names

DATA = TEST_DATA / "trace"
OUTPUTS = sorted(DATA.glob("*.out"))
LAT_OUTPUTS = [p for p in OUTPUTS if "@lat[" in p.read_text()]
_LAT = re.compile(r"^@lat\[(.+), (\w+), (\d+)\]: (\d+)$")


def _naive_counts(path: Path) -> Dict[Tuple[int, str, str], int]:
    """(interval index, entity token, op) -> ops, summed straight from the @lat lines: an independent reader.

    With ``totals=1`` in the header each bucket line is a total since the start: its interval's part is the
    difference from the same bucket's line before."""
    out: Dict[Tuple[int, str, str], int] = {}
    last: Dict[Tuple[str, str, str], int] = {}
    totals = False
    idx = -1
    for line in path.read_text().splitlines():
        if line.startswith("zfsmon-trace "):
            totals, last = "totals=1" in line.split(), {}
        if line.startswith("interval "):
            idx += 1
        m = _LAT.match(line)
        if m:
            n = int(m.group(4))
            if totals:
                bucket = (m.group(1), m.group(2), m.group(3))
                n, last[bucket] = n - last.get(bucket, 0), n
            key = (idx, m.group(1), m.group(2))
            if n:
                out[key] = out.get(key, 0) + n
    return out


def _samples(recs) -> List[Sample]:
    return [r for r in recs if isinstance(r, Sample)]


def _names(fds: bool) -> Names:
    devices = dict(line.split() for line in (DATA / "blklat.devices").read_text().splitlines())
    fdmap = dict(line.split(None, 1) for line in (DATA / "fusevdevlat_syscalls.fds").read_text().splitlines())
    return Names(topology=parse_status((DATA / "lab.zpool_status").read_text()), devices=devices,
                 fds=fdmap if fds else {})


def test_every_script_has_a_recorded_output():
    stems = {p.name.split(".")[0] + "." + p.name.split(".")[1] for p in OUTPUTS}
    scripts = {f"{p.stem}.bt" for p in (REPO / "bpftrace").glob("*.bt")} | {
        f"{p.stem}.d" for p in (REPO / "dtrace").glob("*.d")}
    assert scripts and scripts <= stems, scripts - stems


def _trace_name(path: Path) -> str:
    """The trace a recorded output belongs to: its script's stem, or for a variant (arc_kprobe.bt) its trace's."""
    stem = path.name.split(".")[0]
    return next((v.name for v in catalog.variant_specs() if any(Path(f).stem == stem for f in v.files.values())),
                stem)


@pytest.mark.parametrize("path", OUTPUTS, ids=[p.name for p in OUTPUTS])
def test_recorded_output_parses_with_monotonic_percentiles(path: Path):
    recs = parse_text(path.read_text(), source=path.name)
    samples = _samples(recs)
    assert samples, "no samples"
    for s in samples:
        assert s.entity.kind == Kind.TRACE and s.interval and s.interval > 0
        assert s.source == f"trace:{_trace_name(path)}"
        for op in [k[:-4] for k in s.metrics if k.endswith("_ops") and f"{k[:-4]}_lat_p50_ns" in s.metrics]:
            m = s.metrics
            assert 0 < m[f"{op}_lat_p50_ns"] <= m[f"{op}_lat_p95_ns"] <= m[f"{op}_lat_p99_ns"] <= m[f"{op}_lat_max_ns"]
            assert m[f"{op}_ops_s"] == pytest.approx(m[f"{op}_ops"] / s.interval)
            hist_total = sum(v for k, v in m.items() if k.startswith(f"{op}_hist_"))
            assert hist_total == m[f"{op}_ops"]
            assert all(is_bucket(int(k.rsplit("_", 1)[1])) for k in m if k.startswith(f"{op}_hist_"))


@pytest.mark.parametrize("path", LAT_OUTPUTS, ids=[p.name for p in LAT_OUTPUTS])
def test_op_counts_equal_a_naive_sum_of_the_buckets(path: Path):
    parser = TraceParser(path.name)
    per_interval: List[List[Sample]] = []
    for line in path.read_text().splitlines():
        recs = parser.feed(line, 0.0)
        if line == "end":
            per_interval.append(_samples(recs))
    naive = _naive_counts(path)
    assert naive
    for (idx, token, op), n in naive.items():
        name = f"{int(token) >> 20}:{int(token) & 0xFFFFF}" if parser.entity_kind == "devt" else (
            f"fd{token}" if parser.entity_kind == "fd" else token)
        got = [s.metrics[f"{op}_ops"] for s in per_interval[idx] if s.entity.name == name]
        assert got == [n], (idx, token, op)


def test_blklat_capture_resolves_lab_devices_to_vdevs_and_roles():
    recs = parse_text((DATA / "blklat.bt.out").read_text(), resolve=_names(fds=False))
    by_name: Dict[str, List[Sample]] = {}
    for s in _samples(recs):
        by_name.setdefault(s.entity.name, []).append(s)
    for leaf in ("loop19", "loop20", "loop21", "loop22"):
        ent = by_name[leaf][0].entity
        assert (ent.pool, ent.role) == ("ztrcap", Role.DATA) and ent.parent.startswith("mirror-")
        assert sum(s.metrics.get("read_ops", 0) for s in by_name[leaf]) > 0
    assert by_name["loop24"][0].entity.role == Role.CACHE
    assert by_name["vda"][0].entity.pool == ""  # the root disk is not a vdev
    # the mirror's histogram is exactly the sum of its two leaves', interval by interval
    for s in by_name["mirror-0"]:
        leaves = [x for x in by_name["loop19"] + by_name["loop20"] if x.ts == s.ts]
        for op in ("read", "write"):
            if f"{op}_ops" in s.metrics:
                assert s.metrics[f"{op}_ops"] == sum(x.metrics.get(f"{op}_ops", 0) for x in leaves)
                assert s.metrics[f"{op}_lat_max_ns"] == max(x.metrics.get(f"{op}_lat_max_ns", 0) for x in leaves)


def test_fusevdevlat_capture_has_every_data_vdev_and_the_cache_device():
    recs = parse_text((DATA / "fusevdevlat_syscalls.bt.out").read_text(), resolve=_names(fds=True))
    reads: Dict[Tuple[str, object], float] = {}
    for s in _samples(recs):
        reads[(s.entity.name, s.entity.role)] = reads.get((s.entity.name, s.entity.role), 0) + s.metrics.get("read_ops", 0)
    for leaf in ("loop19", "loop20", "loop21", "loop22"):
        assert reads[(leaf, Role.DATA)] > 0
    assert reads[("loop24", Role.CACHE)] > reads[("loop19", Role.DATA)]  # the L2ARC served most reads
    assert reads[("mirror-0", Role.DATA)] == reads[("loop19", Role.DATA)] + reads[("loop20", Role.DATA)]
    slow = [r for r in recs if isinstance(r, Event)]
    assert slow and all(e.kind == EventKind.INFO and e.data["slow"] for e in slow)
    assert slow[0].entity == "trace:ztrcap/loop24" and slow[0].data["lat_ns"] == 3417103.0
    assert "3.4 ms on loop24 [cache]" in slow[0].text


def test_fusevdevlat_uprobe_capture_has_reads_per_leaf_and_the_slog_flushes():
    """The uprobe script (libc syscall()/fsync) on lab zcap36: reads on every data leaf and the L2ARC, and the
    300 O_DSYNC writes' ZIL commits as writes and exactly 300 flushes on the log device."""
    fdmap = dict(line.split(None, 1) for line in (DATA / "fusevdevlat.fds").read_text().splitlines())
    names = Names(topology=parse_status((DATA / "fusevdevlat.zpool_status").read_text()), fds=fdmap)
    recs = parse_text((DATA / "fusevdevlat.bt.out").read_text(), resolve=names)
    ops: Dict[Tuple[str, object, str, str], float] = {}
    for s in _samples(recs):
        for op in ("read", "write", "flush"):
            key = (s.entity.pool, s.entity.name, s.entity.role, op)
            ops[key] = ops.get(key, 0) + s.metrics.get(f"{op}_ops", 0)
    leaves = {"loop6": "mirror-0", "loop7": "mirror-0", "loop8": "mirror-1", "loop9": "mirror-1"}
    for leaf, parent in leaves.items():
        assert ops[("zcap36", leaf, Role.DATA, "read")] > 500
        assert next(s for s in _samples(recs) if s.entity.name == leaf).entity.parent == parent
    assert ops[("zcap36", "mirror-0", Role.DATA, "read")] == ops[("zcap36", "loop6", Role.DATA, "read")] + ops[
        ("zcap36", "loop7", Role.DATA, "read")] == 818 + 733
    assert ops[("zcap36", "loop11", Role.CACHE, "read")] == 319
    assert ops[("zcap36", "loop10", Role.LOG, "flush")] == 300  # one fsync per O_DSYNC write
    assert ops[("zcap36", "loop10", Role.LOG, "write")] == 301
    slow = [r for r in recs if isinstance(r, Event)]
    flush = next(e for e in slow if e.data["op"] == "flush")
    assert flush.entity == "trace:zcap36/loop10" and flush.data["lat_ns"] == 3234683.0
    assert "on loop10 [log]" in flush.text


def test_d_examples_carry_counts_and_slow_lines():
    recs = parse_text((DATA / "zfsslower.d.out").read_text())
    first = [s for s in _samples(recs) if s.entity.name == "/tank/pg"][0]
    assert first.metrics["op_fsync"] == 37 and first.metrics["op_read"] == first.metrics["read_ops"]
    ev = [r for r in recs if isinstance(r, Event)][0]
    assert ev.data["op"] == "read" and ev.data["bytes"] == 8192 and "file=/tank/pg/base/16384/2619" in ev.text
    arc = [s for s in _samples(parse_text((DATA / "arc.d.out").read_text())) if s.entity.name == "arc"]
    assert [s.metrics["demand_data_hits"] for s in arc] == [41230, 42130]


# --- bad input: a clear ParseError naming the line --------------------------------------------------------

@pytest.mark.parametrize("text,line_no,words", [
    ("interval 1 1\nend\n", 1, "header"),
    ("zfsmon-trace 2 x\n", 1, "version 2"),
    ("zfsmon-trace 1 x entity=disk\n", 1, "entity kind"),
    ("zfsmon-trace 1 x\n@lat[a, read, 5]: 1\n", 2, "outside an interval"),
    ("zfsmon-trace 1 x\ninterval 1 1\n@lat[a, read, 1281]: 1\n", 3, "not a histogram bucket"),
    ("zfsmon-trace 1 x\ninterval 1 1\n@lat[a, read]: 1\n", 3, "needs 3 keys"),
    ("zfsmon-trace 1 x\ninterval 1 1\n@hist[a, read, 4]: 1\n", 3, "unknown map"),
    ("zfsmon-trace 1 x\ninterval 1 1\ninterval 2 1\n", 3, "no `end`"),
    ("zfsmon-trace 1 x\nend\n", 2, "without `interval`"),
    ("zfsmon-trace 1 x entity=devt\ninterval 1 1\n@max[sda, read]: 1\n", 3, "device number"),
    ("zfsmon-trace 1 x\ninterval nan 1\n", 2, "out of range"),
    ("zfsmon-trace 1 x\nslow 1 a read\n", 2, "`slow` needs"),
    ("zfsmon-trace 1 x\nhello world\n", 2, "unknown line"),
])
def test_bad_input_is_a_parse_error_with_its_line(text: str, line_no: int, words: str):
    with pytest.raises(ParseError) as exc:
        parse_text(text, source="t.out")
    assert exc.value.line_no == line_no and words in str(exc.value)


def test_noise_and_restart_headers_are_tolerated():
    text = ("Attaching 5 probes...\nzfsmon-trace 1 x\ninterval 5 1\n@count[arc, hits]: 3\nend\n\n"
            "zfsmon-trace 1 x\ninterval 6 1\n@count[arc, hits]: 4\nend\nerror pid 12 went away\n")
    recs = parse_text(text)
    assert [s.metrics["hits"] for s in _samples(recs)] == [3, 4]
    assert recs[-1].kind == EventKind.ERROR and "pid 12 went away" in recs[-1].text


def test_truncated_interval_is_dropped_and_the_next_one_parses():
    p = TraceParser("t")
    p.feed("zfsmon-trace 1 x", 0.0)
    p.feed("interval 5 1", 0.0)
    p.feed("@count[arc, hits]: 3", 0.0)
    with pytest.raises(ParseError):
        p.feed("interval 6 1", 0.0)
    p.feed("@count[arc, hits]: 4", 0.0)
    recs = p.feed("end", 0.0)
    assert [s.metrics["hits"] for s in _samples(recs)] == [4] and recs[0].ts == 6.0


_REAL = (DATA / "fusevdevlat_syscalls.bt.out").read_text().splitlines()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupted_real_output_raises_only_parse_errors(data):
    lines = list(_REAL[: data.draw(st.integers(1, len(_REAL)))])
    for _ in range(data.draw(st.integers(0, 6))):
        i = data.draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        cut = data.draw(st.integers(0, len(line)))
        junk = data.draw(st.text(string.printable, max_size=8))
        lines[i] = line[:cut] + junk + line[cut + data.draw(st.integers(0, 3)):]
    p = TraceParser("fuzz")
    for line in lines:
        try:
            p.feed(line, 0.0)
        except ParseError:
            pass


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=20))
def test_random_text_raises_only_parse_errors(lines):
    p = TraceParser("fuzz")
    for line in ["zfsmon-trace 1 x", "interval 1 1"] + lines + ["end"]:
        try:
            p.feed(line, 0.0)
        except ParseError:
            pass


# --- totals=1: the D scripts print totals since they started, the parser takes each interval's part -----------

_TOTALS = """zfsmon-trace 1 zil entity=name interval=5 slow_ms=0 totals=1
interval 100.0 5
@lat[zguest, commit, 1048576]: 3
@max[zguest, commit]: 1200000
@sum[zguest, commit]: 3300000
@count[zguest, commits]: 3
end
interval 105.0 5
@lat[zguest, commit, 1048576]: 5
@lat[zguest, commit, 2097152]: 1
@max[zguest, commit]: 2500000
@sum[zguest, commit]: 8000000
@count[zguest, commits]: 6
end
interval 110.0 5
@lat[zguest, commit, 1048576]: 5
@lat[zguest, commit, 2097152]: 1
@sum[zguest, commit]: 8000000
@count[zguest, commits]: 6
end
zfsmon-trace 1 zil entity=name interval=5 slow_ms=0 totals=1
interval 120.0 5
@lat[zguest, commit, 1048576]: 1
@sum[zguest, commit]: 1000000
@max[zguest, commit]: 1000000
@count[zguest, commits]: 1
end
"""


def test_totals_become_each_interval_s_part_and_a_restart_starts_again():
    samples = [r for r in parse_text(_TOTALS) if isinstance(r, Sample)]
    assert [s.ts for s in samples] == [100.0, 105.0, 120.0]  # 110: no change, so no sample (an idle interval)
    first, second, restarted = (s.metrics for s in samples)
    assert first["commits"] == 3 and first["commit_ops"] == 3 and first["commit_lat_max_ns"] == 1200000
    assert second["commits"] == 3 and second["commit_ops"] == 3  # 6 - 3, and the buckets 5 - 3 and 1 - 0
    assert second["commit_hist_1048576"] == 2 and second["commit_hist_2097152"] == 1
    assert second["commit_lat_mean_ns"] == pytest.approx((8000000 - 3300000) / 3)
    assert second["commit_lat_max_ns"] == 2500000  # @max is the interval's own
    assert restarted["commits"] == 1 and restarted["commit_ops"] == 1  # a new header: totals from zero


def test_a_total_that_went_down_is_taken_whole():
    text = _TOTALS.split("zfsmon-trace", 2)[1]
    text = "zfsmon-trace" + text.replace("@count[zguest, commits]: 6\nend\ninterval 110.0",
                                         "@count[zguest, commits]: 6\nend\ninterval 107.0 5\n"
                                         "@count[zguest, commits]: 2\nend\ninterval 110.0")
    counts = [r.metrics.get("commits") for r in parse_text(text) if isinstance(r, Sample)]
    assert counts == [3, 3, 2, 4]  # 2 after 6: a restart; then 6 after 2


def test_without_totals_each_interval_is_taken_as_printed():
    text = _TOTALS.replace(" totals=1", "")
    counts = [r.metrics.get("commits") for r in parse_text(text) if isinstance(r, Sample)]
    assert counts == [3, 6, 6, 1]


@pytest.mark.parametrize("option", ["totals=2", "totals=yes", "totals="])
def test_a_bad_totals_option_is_refused(option: str):
    with pytest.raises(ParseError, match="totals must be 0 or 1"):
        parse_text(f"zfsmon-trace 1 zil entity=name interval=5 {option}\n")


def test_totals_keep_a_bounded_number_of_lines(monkeypatch):
    """Each distinct map line's last total is kept; a hostile stream of new keys stops at the bound."""
    monkeypatch.setattr(protocol, "MAX_TOTALS", 3)
    lines = ["zfsmon-trace 1 vdevlat entity=name interval=1 totals=1", "interval 1.0 1"]
    lines += [f"@count[dev{i}, reads]: 1" for i in range(4)]
    with pytest.raises(ParseError, match="more than 3 distinct map lines"):
        parse_text("\n".join(lines))
