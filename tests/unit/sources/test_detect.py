"""Format detection for `zfsmon import` / `zfsmon parse`, on every genuine capture we have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from zfsmon.model import ParseError, Sample
from zfsmon.sources import detect
from zfsmon.sources.spec import ParseOptions

#: fixture folder -> the kind every file in it must be detected as (None: must not be taken for any kind)
EXPECTED = {"zpool_iostat": "zpool-iostat", "arcstats": "arcstats", "arcstat_tools": "arcstat",
            "pgbench": "pgbench", "kstat_misc": None, "illumos_fsstat_iostat": None}
#: none left: `-H` rows (no header) are detected by their shape since issue 12
UNDETECTABLE: set = set()

ALL = [p for d in EXPECTED for p in fixture_files(d)]
#: our own captures from the OpenZFS guest (tests/data/openzfs-*): every `zpool iostat` variant, -H included
OWN = sorted(TEST_DATA.glob("openzfs-*/zpool-iostat-*.txt"))
#: files of the "no kind" folders that have a kind of their own: (folder, part of the name, kind). A rule
#: applies once its kind exists (kinds are added by their sources; until then the file has none)
OWN_KIND_RULES = [
    ("kstat_misc", re.compile(r"_iostats\.txt$"), "iostats-kstat"),
    ("kstat_misc", re.compile(r"_txgs(_TRUNCATED-first6rows)?\.txt$"), "txgs-kstat"),
    ("kstat_misc", re.compile(r"_objset-[0-9a-fx]+\.txt$"), "objset-kstat"),
    ("kstat_misc", re.compile(r"_zfs_zil\.txt$"), "zil-kstat"),
    ("kstat_misc", re.compile(r"_io\.txt$"), "pool-io-kstat"),
    ("illumos_fsstat_iostat", re.compile(r"__iostat_-x"), "iostat-xn"),
    ("illumos_fsstat_iostat", re.compile(r"__fsstat_"), "fsstat"),
]


def _expected(path: Path):
    for folder, name, kind in OWN_KIND_RULES:
        if path.parent.name == folder and name.search(path.name) and kind in detect.KINDS:
            return kind
    return EXPECTED[path.parent.name]


@pytest.mark.parametrize("path", ALL, ids=fixture_ids(ALL))
def test_every_capture_is_detected_as_its_kind(path: Path):
    want = None if path.name in UNDETECTABLE else _expected(path)
    got = detect.detect(path.read_text())
    assert (got.name if got else None) == want


@pytest.mark.parametrize("path", OWN, ids=[f"{p.parent.name}/{p.name}" for p in OWN])
def test_own_iostat_captures_are_detected_headerless_ones_included(path: Path):
    assert detect.detect(path.read_text()).name == "zpool-iostat"


def test_headerless_sniff_wants_known_column_counts_and_a_pool_name():
    row = (TEST_DATA / "openzfs-2.3" / "zpool-iostat-vHp.txt").read_text().splitlines()[0]
    sniff = detect.get("zpool-iostat").sniff
    assert sniff(row + "\n")
    assert not sniff(row + "\t7\n")  # 7 values: no -H column set has that many
    assert not sniff("0" + row + "\n")  # a name cannot start with a digit (/proc/diskstats, pgbench logs)
    assert not sniff(row.replace("\t", " x ", 1) + "\n")


@pytest.mark.parametrize("path", [p for p in ALL if EXPECTED[p.parent.name] and p.name not in UNDETECTABLE],
                         ids=fixture_ids([p for p in ALL if EXPECTED[p.parent.name] and p.name not in UNDETECTABLE]))
def test_detected_kind_parses_or_says_why(path: Path):
    """Detection hands the text to the right parser: it yields samples or a ParseError naming the file."""
    try:
        recs = detect.parse(path.read_text(), path.name, interval=5.0)
    except ParseError as exc:
        assert path.name in str(exc)
        return
    assert any(isinstance(r, Sample) for r in recs)


def test_linux_arcstats_values_come_through(fixtures):
    text = (fixtures / "arcstats" / "linux-openzfs-2.3__proc_spl_kstat_zfs_arcstats.txt").read_text()
    recs = detect.parse(text, "a.txt")
    arc = next(r for r in recs if isinstance(r, Sample) and r.entity.name == "arc")
    assert arc.metrics["hits"] == 33266704081 and arc.metrics["misses"] == 30882817
    assert detect.is_relative(recs)  # snaptime is seconds since boot, not a date


def test_freebsd_sysctl_loop_splits_into_dumps(fixtures):
    one = (fixtures / "arcstats" / "freebsd-14.0-RC2__sysctl_kstat.zfs.misc.arcstats.txt").read_text()
    recs = detect.parse(one + one, "loop.txt", interval=10.0)
    arcs = [r for r in recs if isinstance(r, Sample) and r.entity.name == "arc"]
    assert [r.ts for r in arcs] == [0.0, 10.0] and arcs[0].metrics == arcs[1].metrics


def test_unknown_kind_and_unknown_text():
    with pytest.raises(KeyError):
        detect.get("nope")
    with pytest.raises(ParseError, match="not a format zfsmon knows"):
        detect.parse("just some words\n", "x.txt")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_random_text_never_breaks_detection(text):
    kind = detect.detect(text)
    if kind is not None:
        try:
            kind.read(text, "random", None, ParseOptions(flags="lqy"))
        except ParseError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([p for p in ALL if EXPECTED[p.parent.name]] + OWN or [None]), st.integers(0, 4000), st.data())
def test_truncated_or_corrupted_captures_raise_only_parse_error(path, cut, data):
    if path is None:
        return
    text = path.read_text()[:cut]
    if text and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(text) - 1))
        text = text[:i] + data.draw(st.sampled_from(["-", "x", "\n", "99999999999", " "])) + text[i + 1:]
    kind = detect.detect(text)
    if kind is not None:
        try:
            kind.read(text, path.name, 5.0, ParseOptions())
        except ParseError:
            pass
