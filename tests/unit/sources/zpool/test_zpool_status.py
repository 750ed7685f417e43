"""`zpool status` trees (roles and parents for zpool iostat), on what the lab's zfs-fuse printed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from zfsmon.model import Entity, Kind, ParseError, Role
from zfsmon.sources.zpool.status import Topology, TreeBuilder, parse_status, read_topology

STATUS = (TEST_DATA / "zfsfuse" / "zpool_status_ziocap.txt").read_text()
NO_CACHE = (TEST_DATA / "zfsfuse" / "zpool_status_ziocap_cache-removed.txt").read_text()


def test_lab_tree_with_sections():
    topo = parse_status(STATUS, "zpool status ziocap")
    assert topo.pools == ["ziocap"]
    got = {(e.name, e.kind, e.role, e.parent) for e in topo.of_pool("ziocap")}
    assert got == {
        ("mirror-0", Kind.VDEV, Role.DATA, "ziocap"), ("loop1", Kind.LEAF, Role.DATA, "mirror-0"),
        ("loop2", Kind.LEAF, Role.DATA, "mirror-0"), ("mirror-1", Kind.VDEV, Role.DATA, "ziocap"),
        ("loop3", Kind.LEAF, Role.DATA, "mirror-1"), ("loop4", Kind.LEAF, Role.DATA, "mirror-1"),
        ("loop5", Kind.VDEV, Role.LOG, "ziocap"), ("loop6", Kind.VDEV, Role.CACHE, "ziocap"),
    }


def test_cache_removed_and_merge_replaces_a_pools_tree():
    topo = parse_status(STATUS)
    topo.merge(parse_status(NO_CACHE))
    assert topo.lookup("ziocap", "loop6") is None and topo.lookup("ziocap", "loop5").role == Role.LOG


def test_two_pools_in_one_output():
    other = STATUS.replace("ziocap", "zother").replace("loop", "sd")
    topo = parse_status(STATUS + "\n" + other)
    assert topo.pools == ["ziocap", "zother"]
    assert topo.lookup("zother", "sd5").role == Role.LOG and topo.find_pool("sd6") == "zother"
    assert topo.find_pool("/dev/loop6") == "ziocap"


def test_tree_builder_numbers_old_unindexed_vdevs_like_modern_zfs():
    b = TreeBuilder("tank")
    names = [b.add("mirror", 1).name, b.add("sda", 2).name, b.add("raidz", 1).name, b.add("sdb", 2).name]
    b.section("logs")
    names.append(b.add("mirror", 1).name)
    b.section("cache")
    cache = b.add("sdz", 1)
    assert names == ["mirror-0", "sda", "raidz1-1", "sdb", "mirror-2"]
    assert cache == Entity(Kind.VDEV, "sdz", "tank", Role.CACHE, "tank")


def test_errors_name_the_problem():
    with pytest.raises(ParseError, match="no `pool:`"):
        parse_status("cannot open 'x': no such pool\n")
    with pytest.raises(ParseError, match="no config table"):
        parse_status(STATUS.split("config:")[0])
    with pytest.raises(ParseError, match="unknown section"):
        parse_status(STATUS.replace("\tlogs", "\tbogus"))


def test_a_missing_command_is_an_oserror():
    with pytest.raises(OSError):
        read_topology(["ziocap"], zpool="/nonexistent/zpool")


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 1), st.lists(st.tuples(st.floats(0, 1), st.characters()), max_size=5))
def test_truncated_or_corrupted_status_raises_only_parse_error(frac, edits):
    chars = list(STATUS[: int(len(STATUS) * frac)])
    for pos, ch in edits:
        if chars:
            chars[min(int(pos * len(chars)), len(chars) - 1)] = ch
    try:
        assert isinstance(parse_status("".join(chars)), Topology)
    except ParseError:
        pass
