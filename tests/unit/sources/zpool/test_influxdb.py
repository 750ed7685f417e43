"""zpool_influxdb's line protocol (tests/data/openzfs-2.4/zpool_influxdb.txt, a real capture) and the
zpool-influxdb source built on it: structure, exact counters, per-bucket histograms, two-snapshot derivation,
hostile and damaged input, and the execd collector against a child that answers each newline."""

from __future__ import annotations

import re
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from tests.conftest import TEST_DATA, wait_until
from zfsmon.host import Check, Host
from zfsmon.metrics.latency import LAT_BUCKETS
from zfsmon.model import Kind, ParseError, Role, Sample
from zfsmon.sources import registry
from zfsmon.sources.zpool import influxdb_collector
from zfsmon.sources.zpool.influxdb import (
    LAT_FIELDS,
    InfluxParser,
    derive,
    entities,
    histogram_delta,
    latency_sample,
    leaf_name,
    parse_point,
    parse_snapshots,
)
from zfsmon.sources.zpool.influxdb_collector import InfluxdbCollector, InfluxStreamParser
from zfsmon.sources.zpool.iostat import parse_text
from zfsmon.sources.zpool.latency import histogram_records
from zfsmon.sources.zpool.status import parse_status

D24 = TEST_DATA / "openzfs-2.4"
TEXT = (D24 / "zpool_influxdb.txt").read_text()
TOPO = parse_status((D24 / "zpool-status.txt").read_text())
TS = 1796151541502689528


def _edit(text: str, match: str, field: str, add: int, dt_ns: int = 0) -> str:
    """The capture with ``field`` of every line containing ``match`` raised by ``add`` and every time moved on
    by ``dt_ns``: a second pass of the same pool, made from the real one."""
    out = []
    for line in text.splitlines():
        if match in line:
            line = re.sub(rf"([ ,]{field}=)(\d+)u", lambda m: f"{m.group(1)}{int(m.group(2)) + add}u", line)
        if dt_ns:
            head, ts = line.rsplit(" ", 1)
            line = f"{head} {int(ts) + dt_ns}"
        out.append(line)
    return "\n".join(out) + "\n"


# --- structure and values of the real capture -----------------------------------------------------------------

def test_capture_is_one_pool_with_its_vdev_tree_and_time():
    [snap] = parse_snapshots(TEXT)
    assert snap.pool == "zguest" and snap.ts_ns == TS
    assert list(snap.vdevs) == ["root", "root/mirror-0", "root/mirror-0/disk-0", "root/mirror-0/disk-1",
                                "root/mirror-1", "root/mirror-1/disk-0", "root/mirror-1/disk-1", "root/disk-2"]
    assert snap.vdevs["root/mirror-0/disk-0"].path == "/dev/disk/by-id/virtio-data0-part1"
    assert snap.vdevs["root/mirror-0"].path is None and snap.vdevs["root"].state == "ONLINE"


def test_entities_with_the_same_runs_topology_log_is_a_top_level_log_vdev_and_no_cache():
    [snap] = parse_snapshots(TEXT)
    got = {(e.kind, e.name, e.role, e.parent) for e in entities(snap, TOPO).values()}
    assert got == {
        (Kind.POOL, "zguest", None, ""),
        (Kind.VDEV, "mirror-0", Role.DATA, "zguest"), (Kind.VDEV, "mirror-1", Role.DATA, "zguest"),
        (Kind.LEAF, "virtio-data0", Role.DATA, "mirror-0"), (Kind.LEAF, "virtio-data1", Role.DATA, "mirror-0"),
        (Kind.LEAF, "virtio-data2", Role.DATA, "mirror-1"), (Kind.LEAF, "virtio-data3", Role.DATA, "mirror-1"),
        (Kind.VDEV, "virtio-log0", Role.LOG, "zguest"),
    }
    # zpool status knows the L2ARC; zpool_influxdb never prints it (it walks the vdev tree's children only)
    assert TOPO.lookup("zguest", "virtio-cache0") is not None
    assert "virtio-cache0" not in {e.name for e in entities(snap, TOPO).values()}


def test_entities_without_topology_name_leaves_as_zpool_does_but_cannot_know_the_log_role():
    [snap] = parse_snapshots(TEXT)
    ents = entities(snap)
    assert ents["root/mirror-1/disk-1"].name == "virtio-data3" and ents["root/mirror-1/disk-1"].parent == "mirror-1"
    assert (ents["root/disk-2"].kind, ents["root/disk-2"].name, ents["root/disk-2"].role) == \
        (Kind.VDEV, "virtio-log0", Role.DATA)


def test_the_same_entities_as_the_text_path_of_the_same_run_less_the_cache():
    text = parse_text((D24 / "zpool-iostat-vlpTu.txt").read_text(), "t", 2.0, flags="lp", topology=TOPO)
    text_tree = {(s.entity.kind, s.entity.name, s.entity.role, s.entity.parent) for s in text}
    [snap] = parse_snapshots(TEXT)
    ours = {(e.kind, e.name, e.role, e.parent) for e in entities(snap, TOPO).values()}
    assert text_tree - ours == {(Kind.VDEV, "virtio-cache0", Role.CACHE, "zguest")} and ours <= text_tree


def test_counters_are_exact_ints():
    [snap] = parse_snapshots(TEXT)
    leaf = snap.vdevs["root/mirror-0/disk-0"].counters
    assert (leaf["read_ops"], leaf["read_bytes"], leaf["write_ops"], leaf["write_bytes"]) == \
        (1706, 13975552, 3717, 163110912)
    root = snap.vdevs["root"].counters
    assert (root["alloc"], root["free"], root["size"]) == (161239040, 1852026880, 2013265920)
    assert all(type(v) is int for v in root.values())


def test_latency_histograms_per_bucket_from_2us_to_the_clamped_last():
    [snap] = parse_snapshots(TEXT)
    sync_read = snap.vdevs["root"].latency["sync_read"]
    assert sorted(sync_read) == list(range(10, 37))  # le=0.000001 (2^10 ns, holding 0..10) .. +Inf (bucket 36)
    assert (sync_read[10], sync_read[11], sync_read[12], sync_read[13], sync_read[36]) == (4, 4, 4823, 1669, 0)
    assert snap.vdevs["root/mirror-0/disk-0"].latency["total_read"][17] == 478  # le=0.000131
    assert sorted(snap.vdevs["root"].sizes["sync_read_ind"]) == list(range(9, 25))  # le=512 .. +Inf


def test_queues_only_for_the_root():
    [snap] = parse_snapshots(TEXT)
    assert snap.vdevs["root"].queues["sync_r_active"] == 0 and len(snap.vdevs["root"].queues) == 12
    assert all(not v.queues for tag, v in snap.vdevs.items() if tag != "root")


def _summed(text: str) -> str:
    """What --sum-histogram-buckets prints for the same pass: each histogram bucket holds the ones below."""
    totals: Dict[tuple, int] = {}
    out = []
    for line in text.splitlines():
        if line.startswith(("zpool_latency,", "zpool_io_size,")):
            head, fields, ts = line.split(" ")
            series = re.sub(r",le=[^,]*", "", head)
            new = []
            for kv in fields.split(","):
                k, v = kv.split("=")
                totals[(series, k)] = totals.get((series, k), 0) + int(v[:-1])
                new.append(f"{k}={totals[(series, k)]}u")
            line = f"{head} {','.join(new)} {ts}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_summed_buckets_are_stored_per_bucket_all_the_same():
    [plain] = parse_snapshots(TEXT)
    [summed] = parse_snapshots(_summed(TEXT), summed=True)
    assert summed.vdevs["root/mirror-1"].latency == plain.vdevs["root/mirror-1"].latency
    assert summed.vdevs["root"].sizes == plain.vdevs["root"].sizes


# --- two snapshots -> the zpool source's samples -------------------------------------------------------------

def _second() -> str:
    """2 s later: virtio-data0 read 50 ops / 409600 bytes more, the pool 100 writes; the pool's total_read
    latency got 30 I/Os in bucket 17 (le=0.000131) and its sync_read 6 in the first bucket (le=0.000001)."""
    t = _edit(TEXT, "path=/dev/disk/by-id/virtio-data0-part1,vdev=root/mirror-0/disk-0 alloc", "read_ops", 50,
              2_000_000_000)
    t = _edit(t, "path=/dev/disk/by-id/virtio-data0-part1,vdev=root/mirror-0/disk-0 alloc", "read_bytes", 409600)
    t = _edit(t, "zpool_stats,name=zguest,state=ONLINE,vdev=root ", "write_ops", 100)
    t = _edit(t, "zpool_latency,le=0.000131,name=zguest,vdev=root ", "total_read", 30)
    return _edit(t, "zpool_latency,le=0.000001,name=zguest,vdev=root ", "sync_read", 6)


def test_two_snapshots_give_rates_per_second_over_the_elapsed_time():
    [old] = parse_snapshots(TEXT)
    [new] = parse_snapshots(_second())
    by = {s.entity.name: s for s in derive(new, old, TOPO)}
    leaf = by["virtio-data0"]
    assert leaf.interval == 2.0 and leaf.ts == pytest.approx((TS + 2_000_000_000) / 1e9)
    assert (leaf.metrics["read_ops"], leaf.metrics["read_bw"], leaf.metrics["write_ops"]) == (25.0, 204800.0, 0.0)
    assert by["zguest"].metrics["write_ops"] == 50.0 and by["virtio-data1"].metrics["read_ops"] == 0.0
    # the -l averages of the deltas, each I/O at its bucket's midpoint as zpool iostat -l takes it
    assert by["zguest"].metrics["total_wait_read"] == (1 << 17) + (1 << 16)
    assert by["zguest"].metrics["syncq_wait_read"] == (1 << 10) + (1 << 9)
    assert "total_wait_write" not in by["zguest"].metrics  # no write completed: `-` in zpool iostat -l
    assert by["virtio-log0"].entity.role == Role.LOG and all(s.source == "zpool" for s in by.values())


def test_samples_carry_the_text_paths_metric_names_less_what_zpool_influxdb_lacks():
    text = parse_text((D24 / "zpool-iostat-vlq.txt").read_text(), "t", 2.0, flags="lq", topology=TOPO)
    text_pool = next(s for s in text if s.entity.kind == Kind.POOL and not s.since_boot)
    text_p = parse_text((D24 / "zpool-iostat-vlpTu.txt").read_text(), "t", 2.0, flags="lp", topology=TOPO)
    text_leaf = next(s for s in text_p if s.entity.name == "virtio-data0" and not s.since_boot)  # -p: alloc 0
    [old] = parse_snapshots(_edit(TEXT, "zpool_latency,", "total_write", 1))
    [new] = parse_snapshots(_edit(_edit(TEXT, "zpool_latency,", "total_write", 2, 1_000_000_000),
                                  "zpool_latency,", "sync_read", 1))
    ours = {s.entity.name: set(s.metrics) for s in derive(new, old, TOPO)}
    assert ours["zguest"] <= set(text_pool.metrics) | {"scrub_wait", "trim_wait", "rebuild_wait"}
    # zpool_influxdb prints no trim queue; leaves get no queues at all (the root's only)
    assert set(text_pool.metrics) - ours["zguest"] <= {"trimq_write_pend", "trimq_write_activ",
                                                       "total_wait_read", "disk_wait_read", "disk_wait_write",
                                                       "asyncq_wait_read", "asyncq_wait_write", "syncq_wait_write"}
    assert not {m for m in ours["virtio-data0"] if m.endswith(("_pend", "_activ"))}
    assert {"read_ops", "write_ops", "read_bw", "write_bw", "alloc", "free"} <= ours["virtio-data0"] & \
        set(text_leaf.metrics)


def test_latency_samples_in_the_latency_sources_form():
    [old] = parse_snapshots(TEXT)
    [new] = parse_snapshots(_second())
    ents = entities(new, TOPO)
    s = latency_sample(ents["root"], new.ts, 2.0, histogram_delta(new.vdevs["root"], old.vdevs["root"], dense=True), "x")
    assert s is not None and s.interval == 2.0
    assert s.metrics["lat_total_wait_read_262us"] == 30.0 and s.metrics["lat_syncq_wait_read_2us"] == 6.0
    assert "lat_syncq_wait_read_1us" not in s.metrics  # folded into 2us by zpool_influxdb
    assert {k.rsplit("_", 1)[1] for k in s.metrics} == set(LAT_BUCKETS[10:])
    assert sum(s.metrics.values()) == 36.0


def test_a_vdev_new_in_the_second_pass_waits_for_the_next_and_time_must_move():
    [old] = parse_snapshots(TEXT.replace("vdev=root/disk-2", "vdev=root/disk-9"))
    [new] = parse_snapshots(_second())
    assert "virtio-log0" not in {s.entity.name for s in derive(new, old, TOPO)}
    assert derive(old, old) == []


# --- names ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path,known,name", [
    ("/dev/disk/by-id/virtio-data0-part1", (), "virtio-data0"),  # a whole-disk vdev: partition 1
    ("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3", (), "wwn-0x5000c500a1b2c3d4-part3"),  # a partition given
    ("/dev/sdb1", (), "sdb"), ("/dev/nvme0n1p1", (), "nvme0n1"), ("/dev/sdb1", ("sdb1",), "sdb1"),
    ("/var/tmp/file0", (), "/var/tmp/file0"),  # a file vdev: zpool shows its path
    ("/dev/mapper/crypt-a", ("mapper/crypt-a",), "mapper/crypt-a"),
])
def test_leaf_name(path, known, name):
    assert leaf_name(path, known) == name


def test_raidz_is_named_as_zpool_status_names_it():
    text = TEXT.replace("root/mirror-0", "root/raidz-0")
    topo = parse_status((D24 / "zpool-status.txt").read_text().replace("mirror-0", "raidz2-0"))
    [snap] = parse_snapshots(text)
    ents = entities(snap, topo)
    assert ents["root/raidz-0"].name == "raidz2-0" and ents["root/raidz-0/disk-0"].parent == "raidz2-0"


# --- hostile and damaged input --------------------------------------------------------------------------------

def test_escaped_names_are_read_back_and_never_interpreted():
    line = (r"zpool_stats,name=p,state=ONLINE,path=/dev/disk/by-id/a\,b\=c\ d\\e-part1,vdev=root/disk-0 "
            r"alloc=1u,free=2u,read_ops=3u 5")
    p = parse_point(line)
    assert p.tags["path"] == "/dev/disk/by-id/a,b=c d\\e-part1" and p.fields == {"alloc": 1, "free": 2,
                                                                                  "read_ops": 3}
    assert leaf_name(p.tags["path"]) == "a,b=c d\\e"
    hostile = TEXT.replace("path=/dev/disk/by-id/virtio-data0-part1",
                           r"path=/dev/disk/by-id/$(reboot)\ \;rm\,x\=1-part1")
    [snap] = parse_snapshots(hostile)
    assert entities(snap)["root/mirror-0/disk-0"].name == "$(reboot) \\;rm,x=1"


@pytest.mark.parametrize("bad", [
    "zpool_stats,name=zguest,vdev=root alloc=1u",  # no time
    "zpool_stats,name=zguest,vdev=root alloc=x1u 5",  # not a number
    "zpool_stats,name=zguest,vdev=root alloc=1u 5x",  # not a time
    "zpool_stats,name=zguest,vdev=root alloc 5",  # a field without a value
    "zpool_stats,name=zguest,vdev root alloc=1u 5",  # a tag without a value
    "zpool_stats,name=zguest,vdev=root alloc=nan 5",
    "zpool_stats,name=zguest,vdev=../etc alloc=1u 5",  # not below root
    "zpool_stats,vdev=root alloc=1u 5",  # no pool
    ",name=zguest,vdev=root alloc=1u 5",  # no measurement
    "zpool_stats,name=zguest,vdev=root alloc=1" + "0" * 5000 + "u 5",
])
def test_a_bad_line_is_one_line_of_error_and_the_next_pool_still_parses(bad):
    parser = InfluxParser()
    with pytest.raises(ParseError) as err:
        parser.feed(bad)
        raise AssertionError("no error")
    assert "\n" not in str(err.value) and len(str(err.value)) < 400
    got = [s for s in map(parser.feed, TEXT.splitlines()) if s is not None]
    assert [s.pool for s in got] == ["zguest"]


def test_a_damaged_line_in_a_pool_drops_that_sample_with_one_error_then_parsing_goes_on():
    lines = TEXT.splitlines()
    broken = lines[:20] + [f"zpool_latency,le=0.0000015,name=zguest,vdev=root total_read=1u {TS}"] + lines[21:]
    parser = InfluxParser()
    errors: List[str] = []
    snaps = []
    for line in broken + _second().splitlines():
        try:
            s = parser.feed(line)
        except ParseError as exc:
            errors.append(str(exc))
            continue
        if s is not None:
            snaps.append(s)
    assert len(errors) == 1 and "le='0.0000015'" in errors[0]
    assert [s.ts_ns for s in snaps] == [TS + 2_000_000_000]


def test_a_pool_whose_lines_did_not_end_is_said_once():
    lines = TEXT.splitlines()
    with pytest.raises(ParseError, match="did not end with zpool_vdev_queue"):
        parse_snapshots("\n".join(lines[:100]))
    parser = InfluxParser()
    for line in lines[:100]:
        parser.feed(line)
    with pytest.raises(ParseError, match="pool zguest: its lines did not end"):
        for line in _second().splitlines():
            parser.feed(line)


def test_a_line_of_another_pool_inside_a_pools_lines():
    lines = TEXT.splitlines()
    mixed = lines[:5] + [lines[5].replace("name=zguest", "name=other")] + lines[6:]
    with pytest.raises(ParseError, match="another pool or time"):
        parse_snapshots("\n".join(mixed))


def test_histogram_buckets_must_rise():
    lines = TEXT.splitlines()
    i = next(n for n, line in enumerate(lines) if "le=0.000004" in line)
    swapped = lines[:i - 1] + [lines[i], lines[i - 1]] + lines[i + 1:]
    with pytest.raises(ParseError, match="not above the one before"):
        parse_snapshots("\n".join(swapped))


# --- the stream parser and the collector ----------------------------------------------------------------------

def test_stream_parser_baseline_then_samples_and_histograms_every_ten_seconds():
    p = InfluxStreamParser(histogram_every=10.0, topology=lambda pool: TOPO)
    passes = [TEXT] + [_edit(TEXT, "vdev=root/mirror-0/disk-0 alloc", "read_ops", 5 * k, k * 5_000_000_000)
                       for k in (1, 2)]
    out: List[List[Sample]] = []
    for text in passes:
        recs: List[Sample] = []
        for line in text.splitlines():
            recs.extend(r for r in p.feed(line, 0.0) if isinstance(r, Sample))
        out.append(recs)
    assert out[0] == []  # the first pass is a baseline
    assert {s.entity.name for s in out[1]} == {"zguest", "mirror-0", "mirror-1", "virtio-data0", "virtio-data1",
                                               "virtio-data2", "virtio-data3", "virtio-log0"}
    assert next(s for s in out[1] if s.entity.name == "virtio-data0").metrics["read_ops"] == 1.0
    lat = [s for s in out[2] if any(k.startswith("lat_") for k in s.metrics)]
    assert len(lat) == 8 and all(s.interval == 10.0 and s.source == "zpool-influxdb" for s in lat)
    assert next(s for s in out[2] if s.entity.name == "virtio-data0" and "read_ops" in s.metrics
                ).metrics["read_ops"] == 1.0


def _fake_influxdb(tmp_path: Path) -> str:
    """A zpool_influxdb --execd stand-in: per newline, the real capture with virtio-data0's reads 10 higher and
    the time 1 s later than the pass before (so rates are exact whatever the machine's speed); EOF ends it."""
    script = tmp_path / "zpool_influxdb"
    script.write_text(f"""#!{sys.executable}
import re, sys
text = open({str(D24 / "zpool_influxdb.txt")!r}).read()
k = 0
for _ in sys.stdin:
    out = []
    for line in text.splitlines():
        if "vdev=root/mirror-0/disk-0 alloc" in line:
            line = re.sub(r",read_ops=(\\d+)u", lambda m: ",read_ops=%du" % (int(m.group(1)) + 10 * k), line)
        head, ts = line.rsplit(" ", 1)
        out.append("%s %d" % (head, int(ts) + k * 1000000000))
    sys.stdout.write("\\n".join(out) + "\\n")
    sys.stdout.flush()
    k += 1
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    zpool = tmp_path / "zpool"
    zpool.write_text(f"#!/bin/sh\ncat {D24 / 'zpool-status.txt'}\n")
    zpool.chmod(zpool.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_collector_asks_one_pass_per_interval_and_reads_it_whole(tmp_path):
    binary = _fake_influxdb(tmp_path)
    c = InfluxdbCollector(["zguest"], interval=0.2, binary=binary, zpool=str(tmp_path / "zpool"))
    assert c.argv == [binary, "--execd", "zguest"]
    got: List[Sample] = []

    def leaf_samples() -> List[Sample]:
        got.extend(r for r in c.poll() if isinstance(r, Sample))
        return [s for s in got if s.entity.name == "virtio-data0" and "read_ops" in s.metrics][1:]

    c.start()
    try:
        [second, *_] = wait_until(leaf_samples, 30, "two passes of virtio-data0")
    finally:
        c.stop()
    assert second.metrics["read_ops"] == 10.0 and second.interval == 1.0
    assert second.entity.parent == "mirror-0" and second.source == "zpool-influxdb"
    assert next(s for s in got if s.entity.name == "virtio-log0").entity.role == Role.LOG
    assert c._proc is None


def test_collector_of_several_pools_reads_every_pool_and_keeps_those():
    c = InfluxdbCollector(["a", "b"], interval=1.0, binary="/bin/false")
    assert c.argv == ["/bin/false", "--execd"]
    p = InfluxStreamParser(pools=["other"])
    assert [r for line in TEXT.splitlines() + _second().splitlines() for r in p.feed(line, 0.0)] == []


def _with_check(ok: bool) -> Callable[[Host], Check]:
    return lambda host: Check("zpool-influxdb", ok, "test")


def test_only_when_named():
    host = Host("Linux", "t", "t", "none", "")
    src = replace(influxdb_collector.SOURCE, check=_with_check(True))
    assert influxdb_collector.SOURCE.default is False
    assert registry.build_collectors(host, 5.0, sources=[src]) == ([], [])
    made, _ = registry.build_collectors(host, 5.0, names=["zpool-influxdb"], sources=[src])
    assert [type(c) for c in made] == [InfluxdbCollector]
    assert registry.record("zpool-influxdb") is influxdb_collector.SOURCE


# --- OpenZFS 2.3 (tests/data/openzfs-2.3/influxdb: one guest run, its PROVENANCE.md) ---------------------------

D23 = TEST_DATA / "openzfs-2.3" / "influxdb"


@pytest.mark.parametrize("name,summed", [("zpool_influxdb.txt", False), ("zpool_influxdb-s.txt", True)])
def test_23_captures_plain_and_summed(name, summed):
    [snap] = parse_snapshots((D23 / name).read_text(), name, summed=summed)
    topo = parse_status((D23 / "influx-status.txt").read_text())
    assert {(e.kind, e.name, e.role) for e in entities(snap, topo).values()} == {
        (Kind.POOL, "zguest", None), (Kind.VDEV, "mirror-0", Role.DATA), (Kind.VDEV, "mirror-1", Role.DATA),
        *((Kind.LEAF, f"virtio-data{i}", Role.DATA) for i in range(4)), (Kind.VDEV, "virtio-log0", Role.LOG)}
    lat = snap.vdevs["root"].latency
    assert set(lat) >= {"total_read", "total_write", "disk_read", "disk_write", "sync_read", "sync_write",
                        "async_read", "async_write", "scrub", "trim", "rebuild"}
    assert all(sorted(b) == list(range(10, 37)) and min(b.values()) >= 0 for b in lat.values())
    assert snap.vdevs["root/mirror-0/disk-0"].counters["read_ops"] == 2203


def test_23_summed_capture_reads_as_plain_counts_taken_moments_later():
    """Taken one after the other under load: per bucket, the summed capture's counts (unsummed) are never
    below the plain one's and their totals match the next pass."""
    [plain] = parse_snapshots((D23 / "zpool_influxdb.txt").read_text())
    [summed] = parse_snapshots((D23 / "zpool_influxdb-s.txt").read_text(), summed=True)
    assert summed.ts_ns > plain.ts_ns
    for tag, v in plain.vdevs.items():
        later = summed.vdevs[tag].latency
        for fld, buckets in v.latency.items():
            assert all(later[fld][j] >= n for j, n in buckets.items()), (tag, fld)


def test_23_histograms_at_a_quiet_edge_equal_zpool_iostat_w_per_bucket():
    """Read right after each other with nothing moving: every bucket equal, the first (le=0.000001) holding
    zpool iostat -w's 1ns..2us."""
    [snap] = parse_snapshots((D23 / "influx-after.txt").read_text())
    topo = parse_status((D23 / "influx-status.txt").read_text())
    ents = entities(snap, topo)
    text = {s.entity.name: s.metrics for s in histogram_records((D23 / "influx-iostat-w-after.txt").read_text(),
                                                                pools=["zguest"], topology=topo)}
    assert set(text) - {e.name for e in ents.values()} == {"virtio-cache0"}
    compared = 0
    for tag, v in snap.vdevs.items():
        t = text[ents[tag].name]
        for fld, buckets in v.latency.items():
            prefix = LAT_FIELDS.get(fld)
            if prefix is None:
                continue
            assert buckets[10] == sum(t[f"{prefix}_{LAT_BUCKETS[j]}"] for j in range(11))
            assert all(buckets[j] == t[f"{prefix}_{LAT_BUCKETS[j]}"] for j in range(11, 37)), (tag, fld)
            compared += 1
    assert compared == 8 * 11


def test_23_span_totals_equal_the_text_paths_rates():
    """Counter deltas between the quiet edges against `zpool iostat -vpq zguest 24 2`'s report over the span."""
    [before] = parse_snapshots((D23 / "influx-before.txt").read_text())
    [after] = parse_snapshots((D23 / "influx-after.txt").read_text())
    topo = parse_status((D23 / "influx-status.txt").read_text())
    text = {s.entity.name: s.metrics for s in parse_text((D23 / "influx-iostat-vpq.txt").read_text(), "vpq", 24.0,
                                                         flags="qp", topology=topo) if not s.since_boot}
    by = {s.entity.name: s for s in derive(after, before, topo)}
    assert set(text) - set(by) == {"virtio-cache0"}
    for name, s in by.items():
        for metric in ("write_ops", "write_bw", "read_ops", "read_bw"):
            total = s.metrics[metric] * s.interval
            assert abs(text[name][metric] * 24 - total) <= 24 + 0.05 * total, (name, metric)
    assert round(by["zguest"].metrics["write_ops"] * by["zguest"].interval) == 6974
    assert by["zguest"].metrics["syncq_read_pend"] == text["zguest"]["syncq_read_pend"] == 0.0
