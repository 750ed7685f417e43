"""`zpool iostat` parsing: every shared capture, exact values per format family, zfs-fuse captures, robustness."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from tests.unit.mangle import drop_or_repeat
from zfsmon import metrics
from zfsmon.model import Event, EventKind, Kind, ParseError, Role, Sample
from zfsmon.sources.zpool.iostat import ZpoolIostatParser, parse_text
from zfsmon.sources.zpool.iostat_collector import iostat_argv
from zfsmon.sources.zpool.iostat_columns import RECORD_SOURCE, parse_header, scripted_header
from zfsmon.sources.zpool.probe import ProbeResult, decide, is_usage_error, probe_flags
from zfsmon.sources.zpool.status import parse_status

K, M, G, T = 1024.0, 1024.0 ** 2, 1024.0 ** 3, 1024.0 ** 4
MS, US = 1e6, 1e3
FILES = fixture_files("zpool_iostat")
ZFSFUSE = TEST_DATA / "zfsfuse"
_VALUE = re.compile(r"^(-|\d+(\.\d+)?[A-Za-z]{0,2})$")


def _skip_first(path: Path) -> bool:
    """The captures made with -y have no since-import report (the file name carries the command)."""
    return "_-y_" in path.name or "-vly" in path.name


def _parse(path: Path, interval=10.0, **kw) -> List:
    return parse_text(path.read_text(), path.name, interval, first_since_boot=not _skip_first(path), **kw)


def _samples(records) -> List[Sample]:
    return [r for r in records if isinstance(r, Sample)]


def _one(part: str) -> Path:
    [p] = [p for p in FILES if part in p.name]
    return p


# --- what a deliberately naive reader sees in a file, to check the parser against -------------------------

def _naive_rows(text: str):
    """(name, values, depth) of every data row; section headings and histogram rows left out."""
    rows = []
    histo = False
    for line in text.splitlines():
        toks = line.split()
        if len(toks) >= 2 and toks[0] in ("req_size", "latency"):
            histo = True
        if histo or len(toks) < 2 or not all(_VALUE.match(t) for t in toks[1:]):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        if depth == 0 and toks[0] in ("logs", "log", "cache", "spares", "special", "dedup") and \
                set(toks[1:]) == {"-"}:
            continue
        rows.append((toks[0], toks[1:], depth))
    return rows


#: per-file facts read by eye: pools, vdev/leaf names -> role, and -c script columns to ignore
EXPECT: Dict[str, dict] = {
    "freebsd-openzfs2.x": dict(pools={"august"}, ents={"ada0p3.eli": "data", "gpt/cache-august": "cache",
                                                       "gpt/duracell": "cache"}),
    "centos7-openzfs2.1.5": dict(pools={"DDD"}, ents={}),
    "-l_hdd": dict(pools={"data"}, ents={}),
    "-l_ssd": dict(pools={"data"}, ents={}),
    "-r_with-trim": dict(pools={"data"}, ents={}),
    "-vly_pool": dict(pools={"storage-temp"}, ents={"sde": "data"}),
    "-pH_1_5": dict(pools={"zpool"}, ents={}),
    "-vl_30_5": dict(pools={"testpool"}, ents={"raidz1-0": "data", "sda1": "data", "sde1": "data"}),
    "-vl_pool_raidz1": dict(pools={"teststore"}, ents={"raidz1-0": "data", "sdd1": "data"}),
    "0.6.3": dict(pools={"tank-copy"}, ents={"mirror-0": "data", "wwn-5000c5002e38e0eb": "data",
                                              "wwn-5000c500301004bf": "log"}),
    "0.6.4": dict(pools={"backup"}, ents={}),
    "-y_-q_pool": dict(pools={"data1"}, ents={}),
    "long-poolname": dict(pools={"dummy", "dummy-very-very-long-zpool-name"}, ents={}),
    "0.7dev": dict(pools={"mypool"}, ents={}),
    "0.8.2-el8": dict(pools={"fs01"}, ents={}),
    "macos-o3x__zpool_iostat.txt": dict(pools={"zhgstera6", "zint500", "zsam53"}, ents={}),
    "macos-o3x__zpool_iostat_-v": dict(pools={"zhgstera6", "zint500", "zsam53"},
                                       ents={"726060ALE614-K8JAPRGN:10": "data", "ST3500418AS-5VMSTSSX:5": "data"}),
    "-vc_size": dict(pools={"rpool"}, ents={"sda1": "data"}, script_cols=1),
}


def _expect(path: Path) -> dict:
    hits = [v for k, v in EXPECT.items() if k in path.name]
    return hits[0] if len(hits) == 1 else {}


@pytest.mark.parametrize("path", FILES, ids=fixture_ids(FILES))
def test_every_capture_parses_into_a_plausible_model(path: Path, fixtures):
    text = path.read_text()
    records = _parse(path)
    samples = _samples(records)
    assert samples, "no samples"
    histogram = any(ln.split()[:1] in (["req_size"], ["latency"]) for ln in text.splitlines())
    for s in samples:
        assert s.source == RECORD_SOURCE  # the source's one name, whatever the file is called
        assert re.match(r"^[A-Za-z][A-Za-z0-9_.:-]*$", s.entity.pool)
        assert any(ln.startswith(s.entity.pool) for ln in text.splitlines()), s.entity.pool
        for name in s.metrics:
            assert metrics.lookup(s.entity.kind, name) is not None or name.startswith("lat_"), name
        if s.entity.kind == Kind.POOL:
            assert s.entity.role is None and s.entity.name == s.entity.pool
        else:
            assert isinstance(s.entity.role, Role) and s.entity.parent
            assert s.entity.name in text.split() or re.sub(r"-\d+$", "", s.entity.name) in text.split()
    if histogram:
        tables = sum(1 for ln in text.splitlines() if ln.split()[:1] in (["req_size"], ["latency"]))
        assert len(samples) == tables
        buckets = sum(1 for ln in text.splitlines() if re.match(r"^\d+[KMG]?\s", ln))
        cols = len([ln for ln in text.splitlines() if ln.split()[:1] == ["req_size"]][0].split()) - 1
        assert sum(len(s.metrics) for s in samples) == buckets * cols
        return
    rows = _naive_rows(text)
    assert len(samples) == len(rows), "one sample per row"
    script = _expect(path).get("script_cols", 0)
    for s, (name, values, depth) in zip(samples, rows):
        assert s.entity.name == name or s.entity.name.startswith(name + "-") or name in ("mirror", "raidz")
        assert (s.entity.kind == Kind.POOL) == (depth == 0)
        real = values[:len(values) - script] if script and len(values) > 6 else values
        assert len(s.metrics) == sum(1 for v in real if v != "-"), "field count"
    exp = _expect(path)
    if exp:
        assert {s.entity.pool for s in samples} == exp["pools"]
        roles = {s.entity.name: s.entity.role.value for s in samples if s.entity.role}
        for name, role in exp["ents"].items():
            assert roles.get(name) == role, name


def test_every_shared_capture_has_expectations():
    """New captures get the generic checks automatically; this reminds us to add their exact facts."""
    missing = [p.name for p in FILES if not _expect(p)]
    assert not missing, f"add to EXPECT: {missing}"


# --- exact values, by format family ------------------------------------------------------------------------

def test_classic_old_header_rows_are_interval_reports(fixtures):
    s = _samples(_parse(_one("0.6.4"), interval=1.0))
    assert [x.since_boot for x in s] == [True, False, False]
    assert [x.interval for x in s] == [None, 1.0, 1.0]
    assert [x.ts for x in s] == [0.0, 1.0, 2.0]
    assert s[0].metrics == {"alloc": 34.1 * T, "free": 1.11 * T, "read_ops": 0.0, "write_ops": 18.0,
                            "read_bw": 510.0, "write_bw": 266 * K}
    assert s[2].metrics["write_bw"] == 0.0
    c = _samples(_parse(_one("centos7")))
    assert c[1].metrics == {"alloc": 37.9 * T, "free": 70.9 * T, "read_ops": 0.0, "write_ops": 30.0,
                            "read_bw": 0.0, "write_bw": 60.1 * K}


def test_long_pool_name_pushing_columns_is_read_by_whitespace(fixtures):
    s = _samples(_parse(_one("long-poolname")))
    assert [x.entity.name for x in s] == ["dummy", "dummy-very-very-long-zpool-name"]
    assert s[1].metrics == {"alloc": 152 * K, "free": 1.97 * G, "read_ops": 0.0, "write_ops": 1.0,
                            "read_bw": 144.0, "write_bw": 13.1 * K}
    assert all(x.since_boot for x in s)  # both pools belong to the one report


def test_verbose_tree_with_logs_section_and_old_mirror_name(fixtures):
    s = {x.entity.name: x for x in _samples(_parse(_one("0.6.3")))}
    mirror = s["mirror-0"]
    assert (mirror.entity.kind, mirror.entity.parent, mirror.entity.role) == (Kind.VDEV, "tank-copy", Role.DATA)
    assert mirror.metrics["write_ops"] == 4.09 * K
    leaf = s["wwn-5000c5002e3aa680"]
    assert (leaf.entity.kind, leaf.entity.parent) == (Kind.LEAF, "mirror-0")
    assert leaf.metrics == {"read_ops": 73.0, "write_ops": 287.0, "read_bw": 590 * K, "write_bw": 32.0 * M}
    assert "alloc" not in leaf.metrics  # '-' is absent, not 0
    slog = s["wwn-5000c500301004bf"]
    assert (slog.entity.kind, slog.entity.role, slog.entity.parent) == (Kind.VDEV, Role.LOG, "tank-copy")
    assert slog.metrics["alloc"] == 78.2 * M and slog.metrics["write_bw"] == 37.2 * M


def test_cache_section_and_two_reports(fixtures):
    s = _samples(_parse(_one("freebsd-openzfs2.x"), interval=15.0))
    assert len(s) == 8
    second = {x.entity.name: x for x in s[4:]}
    assert all(not x.since_boot and x.interval == 15.0 for x in s[4:])
    assert second["august"].metrics["write_bw"] == 134 * K
    assert second["august"].metrics["read_bw"] == 12.3 * K
    cache = second["gpt/duracell"]
    assert (cache.entity.kind, cache.entity.role) == (Kind.VDEV, Role.CACHE)
    assert cache.metrics["alloc"] == 14.7 * G and cache.metrics["free"] == 739 * M


def test_several_pools_verbose_with_separators_between_them(fixtures):
    s = _samples(_parse(_one("macos-o3x__zpool_iostat_-v")))
    assert [x.entity.kind for x in s] == [Kind.POOL, Kind.VDEV] * 3
    assert s[5].entity.name == "Portable_SSD_T5-S49WNP0N120517B:8" and s[5].entity.parent == "zsam53"
    assert s[5].metrics["read_bw"] == 14.7 * K and s[5].metrics["write_bw"] == 74.4 * K
    assert all(x.since_boot for x in s)


def test_latency_columns_of_0_8(fixtures):
    hdd = _samples(_parse(_one("-l_hdd")))[0].metrics
    assert hdd["total_wait_read"] == 4 * MS and hdd["total_wait_write"] == 24 * MS
    assert hdd["syncq_wait_read"] == 874 * US and hdd["syncq_wait_write"] == 2 * US
    assert hdd["scrub_wait"] == 36 * MS
    assert "trim_wait" not in hdd and "rebuild_wait" not in hdd
    ssd = _samples(_parse(_one("-l_ssd")))[0].metrics
    assert ssd["disk_wait_write"] == 358 * US and ssd["asyncq_wait_write"] == 1 * MS
    assert ssd["write_bw"] == 2.05 * M


def test_latency_with_sub_microsecond_values_and_repeated_headers(fixtures):
    s = _samples(_parse(_one("-vl_30_5"), interval=30.0))
    assert len(s) == 35 and sum(x.since_boot for x in s) == 7
    by = {(x.ts, x.entity.name): x for x in s}
    assert sorted({x.ts for x in s}) == [0.0, 30.0, 60.0, 90.0, 120.0]
    sdb = by[(0.0, "sdb1")].metrics
    assert sdb["syncq_wait_write"] == 953.0 and sdb["write_bw"] == 19.3 * M
    sda = by[(30.0, "sda1")].metrics
    assert "total_wait_read" not in sda and sda["total_wait_write"] == 4 * MS  # '-' = no reads
    assert by[(120.0, "raidz1-0")].metrics["write_bw"] == 132 * M


def test_rebuild_wait_column_and_skipped_first_report(fixtures):
    s = _samples(_parse(_one("-vly"), interval=5.0))
    assert all(not x.since_boot and x.interval == 5.0 for x in s)
    m = s[1].metrics
    assert s[1].entity.name == "sde" and m["write_bw"] == 148 * M and m["asyncq_wait_write"] == 82 * MS
    assert "rebuild_wait" not in m and "total_wait_read" not in m and len(m) == 10


def test_queue_columns_of_0_7_and_0_8(fixtures):
    q7 = _samples(_parse(_one("-y_-q_pool")))
    assert q7[1].metrics["asyncq_read_activ"] == 41.0 and q7[1].metrics["read_bw"] == 837 * M
    assert "trimq_write_pend" not in q7[0].metrics and len(q7[0].metrics) == 16
    q8 = _samples(_parse(_one("0.8.2-el8")))
    assert [x.since_boot for x in q8] == [True, False, False]
    assert q8[0].metrics["asyncq_write_pend"] == 112.0 and q8[0].metrics["asyncq_write_activ"] == 10.0
    assert q8[1].metrics["syncq_read_activ"] == 12.0 and q8[1].metrics["trimq_write_pend"] == 0.0
    assert q8[1].metrics["write_bw"] == 1.28 * M


def test_scripted_parsable_rows_are_exact(fixtures):
    s = _samples(_parse(_one("-pH_1_5"), interval=1.0))
    assert len(s) == 5 and s[0].since_boot and not s[1].since_boot
    assert s[0].metrics == {"alloc": 1483556872192.0, "free": 509307953152.0, "read_ops": 64.0, "write_ops": 12.0,
                            "read_bw": 281656.0, "write_bw": 308598.0}
    assert s[2].metrics["write_bw"] == 6364099.0 and s[4].metrics["read_bw"] == 416897.0


def test_request_size_histograms(fixtures):
    [trim] = _samples(_parse(_one("-r_with-trim")))
    assert trim.entity.kind == Kind.POOL and trim.since_boot
    assert trim.metrics["rq_sync_read_ind_4k"] == 108 * K
    assert trim.metrics["rq_async_write_ind_4k"] == 1.98 * M
    assert trim.metrics["rq_async_write_agg_128k"] == 94.7 * K
    assert trim.metrics["rq_trim_agg_16m"] == 0.0 and len(trim.metrics) == 16 * 12
    [old] = _samples(_parse(_one("0.7dev")))
    assert old.metrics["rq_async_write_ind_512"] == 530.0 and old.metrics["rq_async_write_agg_8m"] == 811.0
    assert "rq_trim_ind_512" not in old.metrics


def test_script_columns_are_ignored(fixtures):
    s = _samples(_parse(_one("-vc_size")))
    assert s[1].metrics == {"alloc": 14.6 * G, "free": 54.9 * G, "read_ops": 4.0, "write_ops": 55.0,
                            "read_bw": 250 * K, "write_bw": 2.69 * M}


# --- zfs-fuse, captured on the lab ------------------------------------------------------------------------

def _zfsfuse(name: str) -> str:
    return (ZFSFUSE / name).read_text()


def _topology():
    return parse_status(_zfsfuse("zpool_status_ziocap.txt"))


def test_zfsfuse_status_gives_the_roles_iostat_cannot():
    topo = _topology()
    assert topo.pools == ["ziocap"]
    slog = topo.lookup("ziocap", "loop5")
    assert slog is not None and (slog.kind, slog.role, slog.parent) == (Kind.VDEV, Role.LOG, "ziocap")
    assert topo.lookup("ziocap", "/dev/loop6").role == Role.CACHE  # matched by basename
    assert topo.lookup("ziocap", "loop3").parent == "mirror-1"


def test_zfsfuse_verbose_report_without_logs_heading():
    plain = {x.entity.name: x for x in _samples(parse_text(_zfsfuse("zpool_iostat_-v_ziocap.txt")))}
    assert set(plain) == {"ziocap", "mirror-0", "mirror-1", "loop1", "loop2", "loop3", "loop4", "loop5", "loop6"}
    assert plain["loop5"].entity.role == Role.DATA  # what iostat alone can say
    merged = {x.entity.name: x for x in _samples(parse_text(_zfsfuse("zpool_iostat_-v_ziocap.txt"),
                                                            topology=_topology()))}
    assert merged["loop5"].entity.role == Role.LOG and merged["loop6"].entity.role == Role.CACHE
    assert merged["loop5"].metrics == {"alloc": 0.0, "free": 59.5 * M, "read_ops": 0.0, "write_ops": 4.0,
                                       "read_bw": 5.47 * K, "write_bw": 335 * K}
    assert merged["loop2"].entity.parent == "mirror-0" and merged["loop4"].entity.parent == "mirror-1"
    assert merged["ziocap"].metrics["write_bw"] == 669 * K and merged["loop1"].metrics["read_bw"] == 34.7 * K


def test_zfsfuse_unix_timestamps_are_the_sample_times():
    s = _samples(parse_text(_zfsfuse("zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt"), interval=1.0))
    assert sorted({x.ts for x in s}) == [1795332271.0, 1795332272.0, 1795332273.0, 1795332274.0]
    by = {(x.ts, x.entity.name): x.metrics for x in s}
    assert by[(1795332272.0, "mirror-0")]["write_ops"] == 1.53 * K
    assert by[(1795332272.0, "loop1")] == {"read_ops": 0.0, "write_ops": 384.0, "read_bw": 64 * K,
                                           "write_bw": 11.4 * M}
    assert by[(1795332273.0, "loop6")]["write_bw"] == 20.2 * M


def test_zfsfuse_date_timestamps():
    s = _samples(parse_text(_zfsfuse("zpool_iostat_-T_d_ziocap_1_3.txt"), interval=1.0))
    assert [x.ts for x in s] == [1795332281.0, 1795332282.0, 1795332283.0]  # 'UTC' printed: read as UTC
    assert s[0].since_boot and s[0].metrics["write_ops"] == 165.0 and s[1].metrics["write_ops"] == 0.0


def test_cache_removed_and_added_back_is_two_topology_events():
    recs = parse_text(_zfsfuse("zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt"), interval=1.0,
                      topology=_topology())
    events = [r for r in recs if isinstance(r, Event)]
    assert [(e.kind, e.ts, e.data["removed"], e.data["added"]) for e in events] == [
        (EventKind.TOPOLOGY, 3.0, ["loop6"], []), (EventKind.TOPOLOGY, 6.0, [], ["loop6"])]
    assert events[0].entity == "pool:ziocap/ziocap"
    back = [x for x in _samples(recs) if x.ts == 6.0 and x.entity.name == "loop6"][0]
    assert back.entity.role == Role.CACHE and back.metrics["write_ops"] == 262.0


def test_exported_pool_leaves_an_empty_report_not_an_error():
    recs = parse_text(_zfsfuse("zpool_iostat_-v_ziocap_1_6_pool-exported.txt"), interval=1.0)
    assert len(_samples(recs)) == 18 and not [r for r in recs if isinstance(r, Event)]


def test_topology_provider_is_asked_again_only_when_rows_change():
    asked = []

    def provider(pool):
        asked.append(pool)
        return _topology()

    p = ZpoolIostatParser(interval=1.0, topology_provider=provider)
    for line in _zfsfuse("zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt").splitlines():
        p.feed(line, 0.0)
    p.flush(0.0)
    assert asked == ["ziocap"] * 3  # first report, cache gone, cache back


# --- streaming --------------------------------------------------------------------------------------------

def test_stream_emits_each_pool_when_its_separator_arrives(fixtures):
    p = ZpoolIostatParser(interval=15.0)
    lines = _one("freebsd-openzfs2.x").read_text().splitlines()
    out = [p.feed(line, 100.0 + i) for i, line in enumerate(lines)]
    assert [len(o) for o in out[:9]] == [0] * 8 + [4]  # all four rows at the closing separator
    assert {r.ts for r in out[8]} == {100.0}  # the report's first line
    assert p.flush(200.0) == [] and sum(len(o) for o in out) == 8


def test_non_verbose_stream_is_emitted_without_waiting_once_known(fixtures):
    p = ZpoolIostatParser(interval=1.0)
    lines = _one("0.6.4").read_text().splitlines()
    out = [p.feed(line, float(i)) for i, line in enumerate(lines)]
    # row 1 waits for row 2 (it could have had vdev rows); from then on each row is emitted as it comes
    assert [len(o) for o in out] == [0, 0, 0, 0, 2, 1]
    assert p.flush(9.0) == []


def test_garbage_line_is_a_parse_error_naming_source_and_line():
    p = ZpoolIostatParser("zpool iostat -v tank 5")
    p.feed("              capacity     operations     bandwidth", 0.0)
    with pytest.raises(ParseError) as exc:
        p.feed("cannot open 'tank': no such pool", 0.0)
    assert exc.value.line_no == 2 and exc.value.source == "zpool iostat -v tank 5"
    with pytest.raises(ParseError):
        parse_text("tank  1.2X  3  4  5  6  7\n")


def test_headerless_column_sets_by_count_and_flags():
    assert [c.metric for c in scripted_header(6).columns][-1] == "write_bw"
    assert [c.metric for c in scripted_header(6 + 11, "l").columns][-1] == "rebuild_wait"
    assert [c.metric for c in scripted_header(6 + 10, "q").columns][-1] == "scrubq_read_activ"
    assert [c.metric for c in scripted_header(6 + 10, "l").columns][-1] == "trim_wait"
    with pytest.raises(ParseError, match="ambiguous"):
        scripted_header(16)
    with pytest.raises(ParseError, match="no known"):
        scripted_header(7)


def test_header_pairs_groups_with_sub_columns():
    h = parse_header("              capacity     operations     bandwidth    total_wait  scrub",
                     "pool        alloc   free   read  write   read  write   read  write   wait")
    assert [c.metric for c in h.columns] == ["alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw",
                                             "total_wait_read", "total_wait_write", "scrub_wait"]
    old = parse_header("               capacity     operations    bandwidth",
                       "pool         used  avail   read  write   read  write")
    assert [c.metric for c in old.columns][:2] == ["alloc", "free"]


def test_argv():
    assert iostat_argv(["tank"], 5.0, ["-T", "u", "-l"]) == ["zpool", "iostat", "-T", "u", "-l", "-v", "tank", "5"]
    assert iostat_argv([], None) == ["zpool", "iostat", "-v"]


# --- the flag probe, on what zfs-fuse really answered -------------------------------------------------------

def _probe_capture(key: str) -> ProbeResult:
    d = ZFSFUSE / "probe"
    return ProbeResult(int((d / f"{key}.rc").read_text()), (d / f"{key}.stdout").read_text(),
                       (d / f"{key}.stderr").read_text())


def test_probe_on_zfsfuse_keeps_only_timestamps():
    results = {("" if k == "base" else k): _probe_capture(k) for k in ("base", "T", "l", "q", "lq", "p", "H", "y")}
    assert is_usage_error(results["l"]) and not is_usage_error(results["T"])
    flags = decide(results)
    assert flags.accepted == frozenset({"T"}) and not flags.problem
    assert flags.argv() == ["-T", "u"]


def test_probe_when_zpool_itself_fails():
    down = ProbeResult(1, "", "connect: No such file or directory\nPlease make sure that the zfs-fuse daemon is "
                              "running.\ninternal error: failed to initialize ZFS library\n")
    flags = decide({"": down, "l": down})
    assert flags.argv() == [] and "initialize ZFS library" in flags.problem
    rich = decide({"": ProbeResult(0), "l": ProbeResult(0), "q": ProbeResult(0), "lq": ProbeResult(0),
                   "p": ProbeResult(0), "T": ProbeResult(0)})
    assert rich.argv() == ["-T", "u", "-l", "-q", "-p"]


#: a stand-in zpool giving zfs-fuse's captured answer to each probe; it answers only once every probe of
#: $WANT has started (it gives up after 3 s: "started alone"), and under "-l" it hangs when $HANG is set
_STAND_IN = """#!/bin/sh
shift
case "$*" in
  "") key=base ;; "-T u") key=T ;; "-l") key=l ;; "-q") key=q ;; "-l -q") key=lq ;; "-p") key=p ;;
  "-H") key=H ;; "-y 1 1") key=y ;; *) exit 98 ;;
esac
echo $$ > "$MARKS/$key"
if [ "$key" = l ] && [ -n "$HANG" ]; then exec sleep 600; fi
n=0
while [ "$(ls "$MARKS" | wc -l)" -lt "$WANT" ]; do
  n=$((n + 1)); if [ $n -gt 60 ]; then echo "started alone" >&2; exit 99; fi
  sleep 0.05
done
cat "$PROBE/$key.stdout"; cat "$PROBE/$key.stderr" >&2; exit "$(cat "$PROBE/$key.rc")"
"""


def _stand_in(tmp_path: Path, monkeypatch, want: int, hang: bool = False) -> Path:
    zpool = tmp_path / "zpool"
    zpool.write_text(_STAND_IN)
    zpool.chmod(0o755)
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("MARKS", str(tmp_path / "marks"))
    monkeypatch.setenv("PROBE", str(ZFSFUSE / "probe"))
    monkeypatch.setenv("WANT", str(want))
    monkeypatch.setenv("HANG", "1" if hang else "")
    return zpool


def test_the_probes_run_side_by_side(tmp_path, monkeypatch):
    """Each probe is mostly a process start: one after another they held `zfsmon iostat`'s first report back by
    a tenth of a second. This stand-in answers only when all eight are running at once."""
    flags = probe_flags(str(_stand_in(tmp_path, monkeypatch, want=8)))
    assert not flags.problem and flags.accepted == frozenset({"T"})  # what zfs-fuse's answers say, as above


def test_a_probe_past_the_timeout_is_killed_and_refused(tmp_path, monkeypatch):
    zpool = _stand_in(tmp_path, monkeypatch, want=0, hang=True)
    flags = probe_flags(str(zpool), timeout=1.0, keys=("", "T", "l"))
    assert not flags.problem and flags.accepted == frozenset({"T"})
    pid = int((tmp_path / "marks" / "l").read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left sleeping
        os.kill(pid, 0)


def test_a_missing_zpool_is_the_problem_said():
    flags = probe_flags("/nonexistent/zpool")
    assert flags.problem == "/nonexistent/zpool: command not found" and flags.argv() == []


# --- robustness -------------------------------------------------------------------------------------------

_ALL_TEXT = ([p.read_text() for p in FILES] + [p.read_text() for p in sorted(ZFSFUSE.glob("*.txt"))]
             + [p.read_text() for p in sorted(TEST_DATA.glob("openzfs-*/zpool-iostat-*.txt"))])


def _parse_or_parse_error(text: str) -> None:
    try:
        parse_text(text, "prop", 5.0)
    except ParseError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab-0123456789.KMGTnsu \t\n:/")), max_size=400))
def test_random_text_raises_only_parse_error(text):
    _parse_or_parse_error(text)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(_ALL_TEXT) - 1), st.floats(0, 1))
def test_truncated_captures_raise_only_parse_error(i, frac):
    text = _ALL_TEXT[i]
    _parse_or_parse_error(text[: int(len(text) * frac)])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(_ALL_TEXT) - 1), st.lists(st.tuples(st.floats(0, 1), st.characters()), max_size=6))
def test_corrupted_captures_raise_only_parse_error(i, edits):
    chars = list(_ALL_TEXT[i])
    for frac, ch in edits:
        if chars:
            chars[min(int(frac * len(chars)), len(chars) - 1)] = ch
    _parse_or_parse_error("".join(chars))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(_ALL_TEXT) - 1), st.lists(st.integers(0, 200), max_size=5))
def test_lines_dropped_or_repeated_raise_only_parse_error(i, picks):
    _parse_or_parse_error(drop_or_repeat(_ALL_TEXT[i], picks))
