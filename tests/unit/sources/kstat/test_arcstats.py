"""arcstats readers on the genuine captures: Linux (ZoL 0.6.4 ... OpenZFS 2.3), FreeBSD 14, illumos; zfs-fuse files."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from zfsmon import metrics
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.kstat import text as kstat_text

ARC_FILES = fixture_files("arcstats")


def _parse(path: Path, ts: float = 100.0):
    text = path.read_text()
    if path.name.startswith("linux"):
        return arcstats.parse_linux(text, ts, where=path.name)
    if path.name.startswith("freebsd"):
        return arcstats.parse_freebsd(text, ts, where=path.name)
    if path.name.startswith("illumos"):
        return arcstats.parse_illumos(text, ts, where=path.name)
    raise AssertionError(f"no reader for fixture {path.name}")


def _by_kind(records):
    return {s.entity.kind: s for s in records if isinstance(s, Sample)}


def _said(records):
    """The info events a poll carries (what its field watch says)."""
    return [r.text for r in records if isinstance(r, Event) and r.kind == EventKind.INFO]


def _stat_rows(path: Path) -> int:
    """Statistic lines in the file, counted independently of the parser."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    if path.name.startswith("linux"):
        return len(lines) - 2  # header + "name type data"
    if path.name.startswith("illumos"):
        return len([ln for ln in lines if ln.split("\t")[0].split(":")[-1] not in ("class", "crtime", "snaptime")])
    return len(lines)


def test_fixtures_present(fixtures):
    assert len(ARC_FILES) >= 6


@pytest.mark.parametrize("path", ARC_FILES, ids=fixture_ids(ARC_FILES))
def test_every_capture_gives_a_plausible_model(path, fixtures):
    samples = _parse(path)
    kinds = _by_kind(samples)
    assert all(isinstance(s, Sample) and s.ts == 100.0 for s in samples)
    arc = kinds[Kind.ARC]
    assert arc.entity.key == "arc:arc"
    # every statistic lands somewhere: ARC + L2ARC metrics = statistic rows of the file
    total = sum(len(s.metrics) for s in samples)
    assert total == _stat_rows(path)
    assert not any(k.startswith("l2_") for k in arc.metrics)
    assert "c" in arc.metrics and "c_max" in arc.metrics
    if "TRUNCATED" not in path.name:
        for key in ("hits", "misses", "size", "c_min", "mru_hits", "mfu_hits", "demand_data_hits",
                    "prefetch_metadata_misses", "memory_throttle_count"):
            assert key in arc.metrics, key
        l2 = kinds[Kind.L2ARC]
        assert l2.entity.key == "l2arc:l2arc"
        for key in ("hits", "misses", "size", "read_bytes", "write_bytes"):
            assert key in l2.metrics, key
        assert arc.metrics["size"] > 0 and arc.metrics["c_min"] <= arc.metrics["c_max"]  # size may overshoot c_max
        assert arc.metrics["hits"] >= arc.metrics["mru_hits"]
    if path.name.startswith("linux"):
        table = kstat_text.parse_proc_table(path.read_text())
        assert table.header is not None and table.header.ndata == total


def _one(name: str):
    hits = [p for p in ARC_FILES if name in p.name]
    assert len(hits) == 1, name
    return _by_kind(_parse(hits[0]))


def test_linux_openzfs_2_3_values(fixtures):
    k = _one("linux-openzfs-2.3")
    arc, l2 = k[Kind.ARC].metrics, k[Kind.L2ARC].metrics
    assert arc["hits"] == 33266704081
    assert arc["iohits"] == 1992434
    assert arc["misses"] == 30882817
    assert arc["demand_metadata_iohits"] == 352462
    assert arc["evict_l2_eligible_mfu"] == 597042593792
    assert "asize" in l2 and "size" in l2
    assert len(arc) + len(l2) == 147


def test_linux_openzfs_2_1_values(fixtures):
    k = _one("linux-openzfs-2.1")
    arc, l2 = k[Kind.ARC].metrics, k[Kind.L2ARC].metrics
    assert arc["hits"] == 174896434
    assert arc["prefetch_data_misses"] == 15607210
    assert arc["p"] == 25715246144
    assert arc["memory_available_bytes"] < arc["memory_all_bytes"]
    assert "iohits" not in arc  # 2.1 has none
    assert set(l2) >= {"mru_asize", "bufc_data_asize", "asize"}


def test_zol_0_6_4_and_0_6_5_values(fixtures):
    k4 = _one("linux-zol-0.6.4")
    assert k4[Kind.ARC].metrics["hits"] == 5968846374
    assert k4[Kind.ARC].metrics["recycle_miss"] == 481222994
    assert k4[Kind.ARC].metrics["c"] == 16381258376
    assert "cdata_free_on_write" in k4[Kind.L2ARC].metrics
    k5 = _one("linux-zol-0.6.5")
    assert k5[Kind.ARC].metrics["hits"] == 8772612
    assert k5[Kind.ARC].metrics["c_max"] == 8367976448
    assert k5[Kind.ARC].metrics["size"] == 1603939792
    assert len(k5[Kind.ARC].metrics) + len(k5[Kind.L2ARC].metrics) == 91


def test_freebsd_14_values(fixtures):
    k = _one("freebsd-14.0")
    arc, l2 = k[Kind.ARC].metrics, k[Kind.L2ARC].metrics
    assert arc["hits"] == 1473806
    assert arc["iohits"] == 2530
    assert arc["c"] == 176014976
    assert arc["size"] == 137512848
    assert arc["demand_data_iohits"] == 128
    assert l2["asize"] == 0 and l2["hits"] == 0
    assert len(arc) + len(l2) == 148


def test_illumos_truncated_capture_values(fixtures):
    k = _one("illumos-2015")
    arc = k[Kind.ARC].metrics
    assert Kind.L2ARC not in k  # the capture stops before any l2_* statistic
    assert arc["c"] == 10150301696
    assert arc["c_min"] == 1268787712
    assert arc["demand_data_hits"] == 204922
    assert arc["demand_metadata_misses"] == 34908
    assert "class" not in arc and "crtime" not in arc  # kstat pseudo-statistics are not metrics
    assert len(arc) == 25


def test_illumos_stream_blocks_repeat(fixtures):
    """`kstat -p ... INTERVAL` prints the whole kstat again each interval, with or without a blank line."""
    path = [p for p in ARC_FILES if p.name.startswith("illumos")][0]
    text = path.read_text()
    for joined in (text + text, text + "\n" + text, "1437100000\n" + text + "1437100005\n" + text):
        samples = arcstats.parse_illumos(joined, 50.0, interval=5.0)
        assert [s.entity.kind for s in samples] == [Kind.ARC, Kind.ARC]
        assert samples[0].metrics == samples[1].metrics
        if joined.startswith("1437"):  # `-T u` timestamps win
            assert [s.ts for s in samples] == [1437100000.0, 1437100005.0]
        else:
            assert [s.ts for s in samples] == [50.0, 55.0]


def test_illumos_stream_parser_stamps_blocks_with_their_first_line(fixtures):
    path = [p for p in ARC_FILES if p.name.startswith("illumos")][0]
    lines = path.read_text().splitlines()
    coll = arcstats.IllumosArcstatsCollector(5)
    parser = coll.parser
    out = []
    for i, ln in enumerate(lines):
        out += parser.feed(ln, 1000.0 + i * 0.001)
    assert out == []  # the block is still open
    out += parser.feed(lines[0], 1005.0)  # the next interval begins
    assert len(out) == 1 and out[0].ts == 1000.0 and out[0].metrics["c"] == 10150301696
    with pytest.raises(ParseError, match="no ARC statistics"):  # a block cut after one line says so
        parser.flush(1010.0)
    assert coll.argv == ["kstat", "-p", "zfs:0:arcstats", "5"]


def test_illumos_line_cut_mid_way_is_a_parse_error(fixtures):
    path = [p for p in ARC_FILES if p.name.startswith("illumos")][0]
    text = path.read_text() + "zfs:0:arcstats:hash_cha"  # how the original excerpt ended
    with pytest.raises(ParseError) as ei:
        arcstats.parse_illumos(text, 0.0, where=path.name)
    assert ei.value.line_no == 28 and path.name in str(ei.value)


def test_not_arcstats_is_rejected(fixtures):
    zf = [p for p in fixture_files("kstat_misc") if "zfetchstats" in p.name and p.name.startswith("linux")][0]
    with pytest.raises(ParseError, match="no ARC statistics"):
        arcstats.parse_linux(zf.read_text(), 0.0)
    with pytest.raises(ParseError):
        arcstats.parse_freebsd("", 0.0)


def _fuse_dir(tmp_path: Path, source: Path) -> Path:
    """A directory laid out like zfs-fuse's /zfs-kstat/zfs/arcstats: one `value\\n` file per statistic."""
    d = tmp_path / "arcstats"
    d.mkdir()
    for name, v in kstat_text.parse_proc_table(source.read_text()).values.items():
        (d / name).write_text(f"{int(v)}\n")
    return d


def test_fuse_directory_collector(tmp_path, fixtures):
    src = [p for p in ARC_FILES if "zol-0.6.5" in p.name][0]
    d = _fuse_dir(tmp_path, src)
    (d / "odd").write_text("data type 9 not handled\n")  # what zfs-fuse prints for non-integer kstats
    c = arcstats.FuseArcstatsCollector(str(d), clock=lambda: 10.0)
    recs = c.poll()
    k = _by_kind(recs)
    assert k[Kind.ARC].ts == 10.0
    assert k[Kind.ARC].metrics["hits"] == 8772612 and k[Kind.L2ARC].metrics["size"] == 0
    assert "odd" not in k[Kind.ARC].metrics
    (d / "hits").write_text("garbage\nmore\n")
    bad = c.poll()
    assert len(bad) == 1 and isinstance(bad[0], Event) and bad[0].kind == EventKind.ERROR
    gone = arcstats.FuseArcstatsCollector(str(tmp_path / "nope"))
    ev = gone.poll()
    assert len(ev) == 1 and ev[0].kind == EventKind.ERROR and "nope" in ev[0].text


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_fuse_collector_follows_statistics_that_come_and_go(tmp_path, fixtures, monkeypatch):
    """The statistics are held between polls and read afresh each poll; the periodic listing picks up ones that
    came or went, and one that cannot be opened any more (a restarted daemon) forces a listing at once. Each
    statistic that came or went is said once, as it is seen."""
    src = [p for p in ARC_FILES if "zol-0.6.5" in p.name][0]
    d = _fuse_dir(tmp_path, src)
    (d / "subdir").mkdir()  # not a statistic
    fds = _open_fds()
    c = arcstats.FuseArcstatsCollector(str(d), clock=lambda: 10.0)
    assert _by_kind(c.poll())[Kind.ARC].metrics["hits"] == 8772612
    (d / "hits").write_text("43\n")  # a value is read afresh each poll (zfs-fuse renders it at each open)
    assert _by_kind(c.poll())[Kind.ARC].metrics["hits"] == 43
    (d / "hits").unlink()
    (d / "l2_new").write_text("7\n")
    said = []
    for _ in range(c.RELIST_EVERY):  # until the listing: the held statistic is still read, the new one not yet
        recs = c.poll()
        said += _said(recs)
        m = _by_kind(recs)[Kind.ARC].metrics
        if "hits" not in m:
            break
        assert m["hits"] == 43
    assert said == ["arcstats: 1 statistic zfsmon has no row for, recorded as a gauge: l2arc new"]
    recs = c.poll()
    assert "hits" not in m and "misses" in m and _by_kind(recs)[Kind.L2ARC].metrics["new"] == 7
    # gone from two readings in a row: said once (one torn read is not a removal), then never again
    assert _said(recs) == ["arcstats: 1 statistic an earlier reading had is gone (the module reloaded? another "
                           "version?); the others are read on: arc hits"]
    assert not _said(c.poll())
    real = kstat_text._read_small

    def gone(path, size=kstat_text.READ_MAX):  # what a held statistic of a daemon that went away gives
        raise OSError(errno.ENOTCONN, os.strerror(errno.ENOTCONN), path)

    monkeypatch.setattr(kstat_text, "_read_small", gone)
    ev = c.poll()
    assert len(ev) == 1 and ev[0].kind == EventKind.ERROR and "not connected" in ev[0].text
    monkeypatch.setattr(kstat_text, "_read_small", real)
    (d / "l2_back").write_text("9\n")  # the daemon back: listed at once, not RELIST_EVERY polls later
    assert _by_kind(c.poll())[Kind.L2ARC].metrics["back"] == 9
    d.rename(tmp_path / "away")  # the directory vanishes (a file system mounted over it): an error at once
    ev = c.poll()
    assert len(ev) == 1 and ev[0].kind == EventKind.ERROR
    (tmp_path / "away").rename(d)
    assert _by_kind(c.poll())[Kind.L2ARC].metrics["back"] == 9
    d.rename(tmp_path / "old")  # another directory in its place (a new mount): listed at once, not the old one read
    _fuse_dir(tmp_path, src)
    m = _by_kind(c.poll())
    assert m[Kind.ARC].metrics["hits"] == 8772612 and "back" not in m[Kind.L2ARC].metrics
    c.stop()
    c.stop()
    assert _open_fds() == fds, "the held statistics were not let go"


def test_torn_fuse_values_are_read_again_or_left_out(tmp_path, monkeypatch):
    """zfs-fuse cuts a value short when it gains a digit between lookup and read (seen on the lab:
    l2_hits read as b'100000'); such a read lacks its newline, so it is retried, then dropped."""
    d = tmp_path / "arcstats"
    d.mkdir()
    for name, text in (("c", "64\n"), ("c_max", "64\n"), ("l2_hits", "1000000\n"), ("hits", "9\n")):
        (d / name).write_text(text)
    real = kstat_text._read_small
    torn = {"l2_hits": [b"100000"]}  # once torn, then whole
    paths = []

    def flaky(path, size=kstat_text.READ_MAX):
        name = os.path.basename(os.readlink(path) if path.startswith(kstat_text.PROC_FD) else path)
        if name == "l2_hits":
            paths.append(path)
        left = torn.get(name)
        return left.pop() if left else real(path, size)

    monkeypatch.setattr(kstat_text, "_read_small", flaky)
    stats = kstat_text.StatDir(str(d))
    assert stats.read()["l2_hits"] == "1000000\n"
    # read through its held descriptor, then again by name: a lookup gives the file its new length
    assert [p.startswith(kstat_text.PROC_FD) for p in paths] == [True, False] and paths[1] == str(d / "l2_hits")
    (d / "hits").write_text("12")  # torn on every try: no value rather than a wrong one
    got = stats.read()
    assert "hits" not in got and got["c"] == "64\n"
    stats.close()


def test_a_held_statistic_is_read_for_the_length_of_its_last_value(tmp_path, monkeypatch):
    """Each read asks for the length of the statistic's last whole value (on zfs-fuse a read reaching past the
    file's length costs a getattr request more); a value that grew comes back cut short, so it is read again by
    name and in full, as is one that is not a number; one that shrank comes back whole; after an empty file, and
    after a listing, the next read asks in full."""
    d = tmp_path / "arcstats"
    d.mkdir()
    for name, text in (("c", "64\n"), ("c_max", "64\n"), ("hits", "9\n")):
        (d / name).write_text(text)
    real = kstat_text._read_small
    asked = []

    def seen(path, size=kstat_text.READ_MAX):
        held = path.startswith(kstat_text.PROC_FD)
        if os.path.basename(os.readlink(path) if held else path) == "hits":
            asked.append(("held" if held else "by name", size))
        return real(path, size)

    monkeypatch.setattr(kstat_text, "_read_small", seen)
    stats = kstat_text.StatDir(str(d))

    def hits():
        asked.clear()
        return stats.read()["hits"], list(asked)

    full = kstat_text.READ_MAX
    assert hits() == ("9\n", [("held", full)])
    assert hits() == ("9\n", [("held", 2)])
    (d / "hits").write_text("12\n")  # gained a digit: the read of 2 bytes lacks its newline
    assert hits() == ("12\n", [("held", 2), ("by name", full)])
    assert hits() == ("12\n", [("held", 3)])
    (d / "hits").write_text("7\n")  # lost one: whole, shorter than asked
    assert hits() == ("7\n", [("held", 3)])
    assert hits() == ("7\n", [("held", 2)])
    (d / "hits").write_text("x\nmore\n")  # of the asked length, but not a number: read again in full
    assert hits() == ("x\nmore\n", [("held", 2), ("by name", full)])
    (d / "hits").write_text("data type 9 not handled\n")  # text (zfs-fuse's non-integers): in full each time
    assert hits() == ("data type 9 not handled\n", [("held", full)])
    assert hits() == ("data type 9 not handled\n", [("held", full)])
    (d / "hits").write_text("")
    assert stats.read()["hits"] == ""
    assert hits() == ("", [("held", full)])
    (d / "hits").write_text("123456\n")
    assert hits() == ("123456\n", [("held", full)])
    stats.close()
    (d / "hits").write_text("5\n")  # a listing starts afresh: in full again
    assert hits() == ("5\n", [("held", full)])
    stats.close()


def test_linux_collector_reads_file_and_reports_missing(tmp_path, fixtures):
    src = [p for p in ARC_FILES if "openzfs-2.3" in p.name][0]
    f = tmp_path / "arcstats"
    f.write_text(src.read_text())
    recs = arcstats.LinuxArcstatsCollector(str(f), clock=lambda: 5.0).poll()
    assert _by_kind(recs)[Kind.ARC].metrics["iohits"] == 1992434
    f.write_text(src.read_text()[:200])  # a torn read
    ev = arcstats.LinuxArcstatsCollector(str(f)).poll()
    assert ev and all(isinstance(e, Event) and e.kind == EventKind.ERROR for e in ev)
    os.unlink(f)
    ev = arcstats.LinuxArcstatsCollector(str(f)).poll()
    assert len(ev) == 1 and ev[0].kind == EventKind.ERROR


def test_freebsd_collector_without_sysctl_is_an_error_event():
    c = arcstats.FreeBSDArcstatsCollector()
    c.argv = ["/nonexistent/sysctl", "-q", "kstat.zfs.misc.arcstats"]
    ev = c.poll()
    assert len(ev) == 1 and ev[0].kind == EventKind.ERROR


def test_counters_and_gauges_are_classified(fixtures):
    assert metrics.is_counter(Kind.ARC, "hits")
    assert metrics.is_counter(Kind.ARC, "iohits")
    assert metrics.is_counter(Kind.L2ARC, "hits")
    assert metrics.is_counter(Kind.L2ARC, "read_bytes")
    for gauge in ("size", "c", "c_max", "arc_meta_used"):
        assert not metrics.is_counter(Kind.ARC, gauge)
    for gauge in ("size", "asize"):
        assert not metrics.is_counter(Kind.L2ARC, gauge)
    assert not metrics.is_counter(Kind.ARC, "anon_evictable_data")  # unknown -> gauge


def test_host_detection_picks_by_what_exists(tmp_path):
    f = tmp_path / "arcstats"
    f.write_text("")
    linux = arcstats.collector_for_host(linux_path=str(f), platform="linux")
    assert isinstance(linux, kstat_text.KstatFileCollector) and linux.path == str(f)
    assert isinstance(arcstats.collector_for_host(linux_path=str(tmp_path / "x"), fuse_dir=str(tmp_path),
                                                  platform="linux"), arcstats.FuseArcstatsCollector)
    assert arcstats.collector_for_host(linux_path="/nonexistent", fuse_dir="/nonexistent", platform="linux") is None
    bsd = arcstats.collector_for_host(platform="freebsd14")
    assert isinstance(bsd, kstat_text.CommandCollector) and bsd.argv == ["sysctl", "-q", "kstat.zfs.misc.arcstats"]
    sun = arcstats.collector_for_host(interval=10, platform="sunos5")
    assert sun.argv == ["kstat", "-p", "zfs:0:arcstats", "10"]


# --- robustness -------------------------------------------------------------------------------------------

_PARSERS = [
    lambda t: arcstats.parse_linux(t, 0.0),
    lambda t: arcstats.parse_freebsd(t, 0.0),
    lambda t: arcstats.parse_illumos(t, 0.0),
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("0123456789 \t\n:.-_abcdefghijklmnopqrstuvwxyzx")), max_size=400))
def test_random_text_raises_only_parse_error(text):
    for parse in _PARSERS:
        try:
            parse(text)
        except ParseError:
            pass


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_truncated_or_corrupted_captures_raise_only_parse_error(data, fixtures):
    path = data.draw(st.sampled_from(ARC_FILES))
    text = path.read_text()
    cut = data.draw(st.integers(0, len(text)))
    mutated = text[:cut]
    if data.draw(st.booleans()):
        pos = data.draw(st.integers(0, max(0, len(mutated) - 1)))
        mutated = mutated[:pos] + data.draw(st.text(max_size=5)) + mutated[pos + 1:]
    for parse in _PARSERS:
        try:
            parse(mutated)
        except ParseError:
            pass


@settings(max_examples=200)
@given(files=st.dictionaries(st.text(min_size=0, max_size=12), st.text(max_size=30), max_size=8))
def test_random_stat_files_raise_only_parse_error(files):
    try:
        arcstats.parse_stat_files(files, 0.0)
    except ParseError:
        pass


# --- the shared kstat text formats, on the zfetch / vdev_cache captures -------------------------------------

MISC = fixture_files("kstat_misc")
NAMED = [p for p in MISC if any(k in p.name for k in ("zfetchstats", "vdev_cache_stats", "_zil"))]


@pytest.mark.parametrize("path", NAMED, ids=fixture_ids(NAMED))
def test_misc_named_kstats_read_generically(path, fixtures):
    text = path.read_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if path.name.startswith("freebsd"):
        prefix = lines[0].rsplit(".", 1)[0].split(":")[0] + "."
        table = kstat_text.parse_sysctl(text, prefix)
        assert table.rows == len(lines)
    else:
        table = kstat_text.parse_proc_table(text)
        assert table.header is not None and table.header.ndata == table.rows == len(lines) - 2
    assert table.strings == {}
    assert all(v >= 0 for v in table.values.values())


def test_misc_kstat_values(fixtures):
    def one(part):
        return [p for p in MISC if part in p.name][0].read_text()

    z = kstat_text.parse_proc_table(one("linux-zol-0.6.4__proc_spl_kstat_zfs_zfetchstats"))
    assert z.values["hits"] == 7812959060 and z.values["bogus_streams"] == 0
    assert z.header.kid == 3 and z.header.snaptime_ns == 12081656848148208
    f = kstat_text.parse_sysctl(one("freebsd-14.0-RC2__sysctl_kstat.zfs.misc.zfetchstats"),
                                "kstat.zfs.misc.zfetchstats.")
    assert f.values == {"io_active": 0, "io_issued": 2197, "max_streams": 9411, "misses": 14538, "hits": 6439}
    v = kstat_text.parse_sysctl(one("vdev_cache_stats.txt"), "kstat.zfs.misc.vdev_cache_stats.")
    assert v.values["hits"] == 465583 and v.values["delegations"] == 6952
    vl = kstat_text.parse_proc_table(one("linux-zol-0.7__proc_spl_kstat_zfs_vdev_cache_stats"))
    assert vl.values == {"delegations": 40, "hits": 0, "misses": 0}


def test_generic_reader_handles_io_strings_and_spaced_names(fixtures):
    io = kstat_text.parse_proc_table([p for p in MISC if "zol-0.7__proc_spl_kstat_zfs_pool1_io" in p.name][0]
                                     .read_text())
    assert io.header.ks_type == 3 and io.values["nread"] == 1884160 and io.values["rcnt"] == 0 and io.rows == 12
    obj = kstat_text.parse_proc_table([p for p in MISC if "objset-0x40b" in p.name][0].read_text())
    assert obj.strings == {"dataset_name": "zroot-nas/00040b"} and obj.values["writes"] == 159078094
    hist = kstat_text.parse_proc_table([p for p in MISC if "dmu_tx_assign" in p.name][0].read_text())
    assert hist.values["512 ns"] == 1 and hist.values["16384 ns"] == 2 and hist.rows == 16
