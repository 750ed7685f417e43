"""The ``vdevprops`` source: ``zpool get -p all POOL all-vdevs`` of the OpenZFS 2.4.4 guest (tests/data/openzfs-2.4)."""

from __future__ import annotations

import re
import shutil
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, wait_until
from tests.unit import vdevprops_data as slow
from tests.unit.mangle import variants
from zfsmon import metrics
from zfsmon.host import Host
from zfsmon.model import Entity, EventKind, Kind, ParseError, Role, Sample
from zfsmon.sources import detect, registry
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool import vdev_props
from zfsmon.sources.zpool.status import parse_status
from zfsmon.sources.zpool.vdev_props import entities, parse_listing, samples

D24 = TEST_DATA / "openzfs-2.4"
TEXT = (D24 / "zpool-get-all-vdevs.txt").read_text()
STATUS = (D24 / "zpool-status.txt").read_text()
STATUS_JSON = (D24 / "zpool-status-j-flat-int.json").read_text()
SOURCE = "zpool get -p all zguest all-vdevs"


def _by_name(recs):
    return {s.entity.name: s for s in recs if isinstance(s, Sample)}


def _pool_props(name: str) -> str:
    """A property of the pool from the same guest's `zpool get -p all zguest` (the pool's own listing)."""
    [value] = [ln.split()[2] for ln in (D24 / "zpool-get-all.txt").read_text().splitlines()
               if ln.split()[:2] == ["zguest", name]]
    return value


# --- the capture ----------------------------------------------------------------------------------------------

def test_the_capture_is_one_pool_with_root_0_first():
    listing = parse_listing(TEXT, SOURCE)
    assert listing.pool == "zguest"
    assert [v.name for v in listing.vdevs] == ["root-0", "mirror-0", "virtio-data0", "virtio-data1", "mirror-1",
                                               "virtio-data2", "virtio-data3", "virtio-log0"]
    assert "virtio-cache0" not in {v.name for v in listing.vdevs}  # all-vdevs leaves the L2ARC device out
    assert len(listing.vdevs[0].props) == 51 and len(listing.vdevs[-1].props) == 52  # + allocation_bias
    assert listing.vdevs[2].kernel_name() == "/dev/disk/by-id/virtio-data0-part1"
    assert listing.vdevs[1].kernel_name() == "mirror-0"


def test_entities_are_those_zpool_status_gives_the_same_pool():
    """Kind, role and parent of every vdev as `zpool status` (text and -j) of the same guest has them, so the
    dashboard's tree and the exporter's labels merge the two sources' samples."""
    listing = parse_listing(TEXT, SOURCE)
    derived = entities(listing)
    for text in (STATUS, STATUS_JSON):
        [pool] = zpool_health.parse_any(text, "status")
        status = {row.entity.name: row.entity for row in pool.vdevs}
        assert {derived[n].name: derived[n] for n in derived} == {
            n: e for n, e in status.items() if n != "virtio-cache0"}
    assert derived["root-0"] == Entity(Kind.POOL, "zguest", "zguest")
    assert derived["virtio-log0"] == Entity(Kind.VDEV, "virtio-log0", "zguest", Role.LOG, "zguest")
    assert derived["virtio-data3"] == Entity(Kind.LEAF, "virtio-data3", "zguest", Role.DATA, "mirror-1")
    assert entities(listing, parse_status(STATUS)) == derived


def test_values_of_the_capture():
    got = _by_name(samples(parse_listing(TEXT, SOURCE), 5.0))
    assert set(got) == {"zguest", "mirror-0", "virtio-data0", "virtio-data1", "mirror-1", "virtio-data2",
                        "virtio-data3", "virtio-log0"}
    pool = got["zguest"].metrics
    assert pool == {"size": 2013265920.0, "capacity": 8.0, "failfast": 1.0, "slow_io_events": 1.0}
    # the pool's root vdev says what the pool's own properties say (no log space in either)
    assert pool["size"] == float(_pool_props("size")) and pool["capacity"] == float(_pool_props("capacity"))
    assert got["mirror-0"].metrics == {"size": 1006632960.0, "capacity": 7.0, "trim_errors": 0.0,
                                       "initialize_errors": 0.0, "allocating": 1.0, "failfast": 1.0,
                                       "slow_io_events": 1.0}
    assert got["mirror-0"].metrics["size"] + got["mirror-1"].metrics["size"] == pool["size"]
    assert got["virtio-log0"].metrics["capacity"] == 13.0 and got["virtio-log0"].metrics["size"] == 503316480.0
    assert got["virtio-log0"].metrics["trim_support"] == 1.0  # a single-disk top-level vdev is a leaf to ZFS
    assert got["virtio-data2"].metrics == {"trim_errors": 0.0, "initialize_errors": 0.0, "failfast": 1.0,
                                           "trim_support": 1.0, "slow_io_events": 1.0}
    assert all(s.ts == 5.0 and s.source == "vdevprops" and s.interval is None for s in got.values())


def test_what_other_sources_own_or_the_kernel_never_fills_is_left_out():
    """One value, one name: errors and slow I/Os are the status source's, alloc/free and I/O rates zpool
    iostat's; `fragmentation` (0% on every vdev here, 10 for the pool) is not read; unset thresholds (`-`) and
    leaves' `allocating` (`-`) have no value."""
    listing = parse_listing(TEXT, SOURCE)
    got = samples(listing, 0.0)
    names = {m for s in got for m in s.metrics}
    assert not names & {"read_errors", "write_errors", "checksum_errors", "slow_ios", "allocated", "free",
                        "read_ops", "write_bytes", "state", "fragmentation", "checksum_n", "io_t", "slow_io_n"}
    assert _pool_props("fragmentation") == "10" and {v.get("fragmentation") for v in listing.vdevs} == {"0%"}
    assert all("allocating" not in s.metrics for s in got if s.entity.kind == Kind.LEAF)
    # every metric it gives has a row in the metrics table for that entity kind
    assert all(metrics.lookup(s.entity.kind, m) is not None for s in got for m in s.metrics)


def test_a_raidz_leaf_sitting_out_lands_on_the_leaf_zpool_status_names():
    """The raidz1 pool of the slow-leaf capture (tests/data/openzfs-2.4/slow): `sit_out` on each raidz leaf (on for
    the delayed vdev.9 only), `autosit` on the raidz vdev, the leaves' parent the name zpool status gives
    (`raidz1-0`), not the kernel's `raidz-0` the listing's `parent` property says."""
    assert "/var/tmp/zslow/vdev.9  parent             raidz-0" in slow.LISTING
    for text, bad in ((slow.BEFORE, 0.0), (slow.LISTING, 1.0)):
        got = _by_name(samples(parse_listing(text, SOURCE, slow.POOL), 0.0))
        leaves = {n: s for n, s in got.items() if s.entity.kind == Kind.LEAF}
        assert len(leaves) == 10 and {s.entity.parent for s in leaves.values()} == {"raidz1-0"}
        assert {n: s.metrics["sit_out"] for n, s in leaves.items()} == {
            f"/var/tmp/zslow/vdev.{i}": (bad if i == 9 else 0.0) for i in range(10)}
        assert got["raidz1-0"].metrics["autosit"] == 1.0 and got["raidz1-0"].entity.kind == Kind.VDEV
        assert "autosit" not in got[slow.POOL].metrics and got[slow.POOL].entity.kind == Kind.POOL
        [pool] = zpool_health.parse_any(slow.STATUS, "status")
        status = {row.entity.name: row.entity for row in pool.vdevs}
        for name in ("raidz1-0", slow.BAD, slow.GOOD):
            assert got[name].entity == status[name]  # parent raidz1-0, as zpool status has it


def test_the_header_less_listing_reads_as_the_aligned_one():
    """`zpool get -H -p` (tab separated, no header: what the collector runs, a name with a space in it one field)
    of the same pool, before the delay: detected as the same kind, the same samples as the aligned listing."""
    h = (slow.SLOW / "zpool-get-all-vdevs-raidz-H.txt").read_text()
    assert h.startswith("root-0\tcapacity\t39\t-\n")
    assert detect.detect(h).name == "zpool-get-vdevs"
    got = samples(parse_listing(h, SOURCE, slow.POOL), 0.0)
    assert len(got) == 12 and {s.entity.key: s.metrics for s in got} == {
        s.entity.key: s.metrics for s in samples(parse_listing(slow.BEFORE, SOURCE, slow.POOL), 0.0)}
    spaced = h.replace("/var/tmp/zslow/vdev.3", "/var/tmp/z slow/vdev 3")
    names = {s.entity.name for s in samples(parse_listing(spaced, SOURCE, slow.POOL), 0.0)}
    assert "/var/tmp/z slow/vdev 3" in names
    with pytest.raises(ParseError, match=r"x:2: a row needs NAME PROPERTY VALUE SOURCE \(tab-separated"):
        parse_listing(h.replace("root-0\tstate\t7\t-", "root-0\tstate\t7"), "x")


def test_a_saved_listing_is_detected_and_read_with_a_zpool_status_beside_it():
    assert detect.detect(TEXT).name == "zpool-get-vdevs"
    assert detect.detect((D24 / "zpool-get-all.txt").read_text()) is None  # the pool's own `zpool get all`
    kind = detect.get("zpool-get-vdevs")
    plain = kind.read(TEXT, "vdevs.txt", None)
    beside = kind.read(TEXT, "vdevs.txt", None, ParseOptions(beside=(("status.txt", STATUS),)))
    [note] = [r for r in beside if not isinstance(r, Sample)]
    assert note.kind == EventKind.INFO and note.data["note"] == "pool zguest: roles and parents from status.txt"
    assert [s.entity for s in beside if isinstance(s, Sample)] == [s.entity for s in plain]
    assert all(r.ts == 0.0 for r in plain)
    assert kind.read(TEXT.replace("\n", "\r\n"), "vdevs.txt", None) == plain  # CRLF line ends read the same


# --- hostile and damaged input ----------------------------------------------------------------------------------

_ROW = "mirror-0  capacity           7                                                    -\n"


@pytest.mark.parametrize("bad,words", [
    ("", "no NAME PROPERTY VALUE SOURCE header"),
    ((D24 / "zpool-get-all.txt").read_text(), "not root-0"),
    (TEXT.replace(_ROW, "mirror-0  capacity  7\n"), "a row needs NAME PROPERTY VALUE SOURCE"),
    (TEXT.replace(_ROW, _ROW.replace("capacity", "CAP\x1b[2J")), "not a property name"),
    (TEXT.replace(_ROW, _ROW.replace(" 7 ", " 7x")), "vdev mirror-0: capacity is not a whole number below 2^64"),
    (TEXT.replace(_ROW, _ROW.replace(" 7 ", " -7")), "not a whole number"),
    (TEXT.replace(_ROW, _ROW.replace(" 7 ", " \u0663")), "not a whole number"),
    (TEXT.replace("mirror-0  failfast           on ", "mirror-0  failfast           yes"), "is not on or off: 'yes'"),
    (TEXT + TEXT.split("\n", 1)[1], "root-0: capacity a second time"),
    (re.sub(r"^mirror-0 ", "my disk ", TEXT, flags=re.M), "vdev my: disk a second time"),
    (re.sub(r"^mirror-0 ", "m\x1b[2J x ", TEXT, flags=re.M), "vdev m\\x1b[2J: x a second time"),
    (TEXT.replace("parent             zguest  ", "parent             z\x1bq     ", 1), "parents z\\x1bq, zguest"),
    (TEXT.replace("parent             mirror-1 ", "parent             nowhere-9"), "nowhere-9"),
    (TEXT.replace("capacity           8      ", "capacity           1" + "0" * 5000), "not a whole number"),
    (TEXT.replace("capacity           8      ", "capacity           18446744073709551616"), "below 2^64"),
])
def test_bad_input_is_one_line_of_error_naming_its_line(bad, words):
    with pytest.raises(ParseError) as err:
        samples(parse_listing(bad, "vdevs.txt", "zguest" if "nowhere" in words else None), 0.0, where="vdevs.txt")
    msg = str(err.value)
    assert words in msg and "\n" not in msg and "\x1b" not in msg and len(msg) < 400, msg
    assert msg.startswith("vdevs.txt")


def test_the_pool_must_be_the_one_asked_for_or_be_told_apart():
    with pytest.raises(ParseError, match="neither the pool tank"):
        parse_listing(TEXT, SOURCE, "tank")
    top_parents = TEXT.replace("parent             zguest  ", "parent             other   ", 1)
    with pytest.raises(ParseError, match="cannot tell the pool: parents other, zguest"):
        parse_listing(top_parents, SOURCE)


def test_names_with_escapes_are_kept_as_they_are_and_never_interpreted():
    hostile = TEXT.replace("virtio-data1 ", "vd\x1b[2J$(reboot) ").replace("virtio-data1-part1", "x\x07-part1")
    got = _by_name(samples(parse_listing(hostile, SOURCE), 0.0))
    ent = got["vd\x1b[2J$(reboot)"].entity
    assert (ent.kind, ent.parent, ent.role) == (Kind.LEAF, "mirror-0", Role.DATA)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([TEXT, slow.LISTING]), st.data())
def test_mangled_input_only_raises_parse_error(text, data):
    for variant in variants(text, data):
        try:
            samples(parse_listing(variant, "x"), 0.0)
        except ParseError:
            pass


# --- the collector ------------------------------------------------------------------------------------------

def _fake_zpool(tmp_path, get_rc=0, status_rc=0):
    """A zpool that answers `get` with the capture and `status` with the guest's, logging its arguments."""
    (tmp_path / "get.txt").write_text(TEXT)
    (tmp_path / "status.txt").write_text(STATUS)
    script = tmp_path / "zpool"
    script.write_text(f"""#!/bin/sh
echo "$@" >> {tmp_path}/calls
case "$1" in
  list) echo zguest ;;
  get) [ {get_rc} = 0 ] || {{ echo "cannot open 'all-vdevs': no such pool" >&2; exit {get_rc}; }}
       cat {tmp_path}/get.txt ;;
  status) [ {status_rc} = 0 ] || {{ echo "status refused" >&2; exit {status_rc}; }}
       cat {tmp_path}/status.txt ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _calls(tmp_path):
    return (tmp_path / "calls").read_text().splitlines()


def test_collector_reads_every_pool_in_its_thread_and_zpool_status_once(tmp_path):
    c = vdev_props.VdevPropsCollector(every=0.05, zpool=_fake_zpool(tmp_path))
    with c:
        wait_until(lambda: c.runs >= 3, 30, "three readings")
    got = [r for r in c.poll() if isinstance(r, Sample)]
    assert {s.entity.name for s in got} >= {"zguest", "mirror-0", "virtio-log0"}
    assert {s.entity for s in got if s.entity.name == "virtio-log0"} == {
        Entity(Kind.VDEV, "virtio-log0", "zguest", Role.LOG, "zguest")}
    calls = _calls(tmp_path)
    assert calls[:3] == ["list -H -o name", "get -H -p all zguest all-vdevs", "status zguest"]
    assert calls.count("status zguest") == 1  # the vdevs did not change: their roles are not asked again


def test_collector_failures_are_events_and_roles_fall_back_to_the_listing(tmp_path):
    bad = vdev_props.VdevPropsCollector(["zguest"], zpool=_fake_zpool(tmp_path, get_rc=1))
    [err] = bad.read_once()
    assert err.kind == EventKind.ERROR and "no such pool" in err.text and "\n" not in err.text
    assert bad.read_once()[0].data.get("repeat") is True
    (tmp_path / "b").mkdir()
    c = vdev_props.VdevPropsCollector(["zguest"], zpool=_fake_zpool(tmp_path / "b", status_rc=2))
    recs = c.read_once()
    [info] = [r for r in recs if not isinstance(r, Sample)]
    assert info.kind == EventKind.INFO and "roles and parents from the vdev properties" in info.text
    assert _by_name(recs)["virtio-log0"].entity.role == Role.LOG  # its allocation_bias says so


def _host(flavour, version, tools=""):
    return Host("Linux", "6.12", "h", flavour, version, zfs_userland=tools)


@pytest.mark.parametrize("host,ok,words", [
    (_host("openzfs-kmod", "2.4.4-1~bpo13+1", "zfs-2.4.4-1~bpo13+1"), True, "every 60 s (OpenZFS 2.4.4)"),
    (_host("openzfs-kmod", "2.2.0", "zfs-2.2.0-1"), True, "zpool get -p all POOL all-vdevs"),
    (_host("openzfs-kmod", "2.1.11-1", "zfs-2.1.11-1"), False, "OpenZFS 2.1.11 has no vdev properties"),
    (_host("zfs-fuse", "0.7.0-25+b1 (pool v23)"), False, "zfs-fuse 0.7.0-25+b1 (pool v23) has no vdev properties"),
    (Host("SunOS", "5.11", "h", "illumos", "omnios-r151046"), False, "illumos omnios-r151046 has no vdev"),
    (_host("none", ""), False, "no ZFS on this host"),
])
def test_doctor_says_why(monkeypatch, host, ok, words):
    monkeypatch.setattr(shutil, "which", lambda name: f"/sbin/{name}")
    chk = vdev_props.check_host(host)
    assert chk.ok is ok and words in chk.detail, chk.detail
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert vdev_props.check_host(host).detail == "no zpool command"


def test_the_record_is_found_by_name():
    assert registry.record("vdevprops") is vdev_props.SOURCE
    assert vdev_props.SOURCE.family == "vdevprops" and set(vdev_props.SOURCE.feeds) == {Kind.POOL, Kind.VDEV,
                                                                                       Kind.LEAF}
