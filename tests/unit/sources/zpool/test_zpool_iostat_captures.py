"""`zpool iostat` formats that do not print the vdev tree, read from our own OpenZFS 2.1 and 2.3 captures
(tests/data/openzfs-*, PROVENANCE.md gives each file's command): exact values AND the exact entity tree.

The guest's pool `zguest` (PROVENANCE.md): mirror-0 (virtio-data0, virtio-data1), mirror-1 (virtio-data2,
virtio-data3), SLOG virtio-log0, L2ARC virtio-cache0.  Issue 12 items 1-5.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Set, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from tests.unit.mangle import drop_or_repeat
from zfsmon.model import Event, EventKind, ParseError, Record, Role, Sample
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool.iostat import read_capture
from zfsmon.sources.zpool.iostat_tree import assign_sections, guess_topology

K, M, G = 1024.0, 1024.0 ** 2, 1024.0 ** 3
V21, V23 = TEST_DATA / "openzfs-2.1", TEST_DATA / "openzfs-2.3"

#: (kind, name, role, parent) of every entity of one report, as `zpool status` of the guest lists them
TREE: Set[Tuple[str, str, Optional[str], str]] = {
    ("pool", "zguest", None, ""),
    ("vdev", "mirror-0", "data", "zguest"), ("leaf", "virtio-data0", "data", "mirror-0"),
    ("leaf", "virtio-data1", "data", "mirror-0"),
    ("vdev", "mirror-1", "data", "zguest"), ("leaf", "virtio-data2", "data", "mirror-1"),
    ("leaf", "virtio-data3", "data", "mirror-1"),
    ("vdev", "virtio-log0", "log", "zguest"), ("vdev", "virtio-cache0", "cache", "zguest"),
}


def _read(path: Path, options: Optional[ParseOptions] = None, interval: float = 2.0) -> List[Record]:
    return read_capture(path.read_text(), path.name, interval, options or ParseOptions())


def _samples(records: Sequence[Record]) -> List[Sample]:
    return [r for r in records if isinstance(r, Sample)]


def _notes(records: Sequence[Record]) -> List[str]:
    return [r.data["note"] for r in records if isinstance(r, Event) and r.kind == EventKind.INFO
            and "note" in r.data]


def _tree(samples: Sequence[Sample]) -> Set[Tuple[str, str, Optional[str], str]]:
    return {(s.entity.kind.value, s.entity.name, s.entity.role.value if s.entity.role else None, s.entity.parent)
            for s in samples}


def _by_name(samples: Sequence[Sample], report: int = 0) -> dict:
    """Samples of report N by entity name (every report has one sample per entity)."""
    n = len(TREE)
    return {s.entity.name: s for s in samples[report * n:(report + 1) * n]}


# --- item 1: -H / -Hp (with -l, -q) with -v ---------------------------------------------------------------

@pytest.mark.parametrize("path", [d / f"zpool-iostat-{v}.txt" for d in (V21, V23) for v in ("vH", "vHp", "vHpl",
                                                                                            "vHplq")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_headerless_verbose_rows_rebuild_the_tree_and_say_it_was_guessed(path: Path):
    recs = _read(path)
    s = _samples(recs)
    assert len(s) == 2 * len(TREE)
    assert _tree(s[:len(TREE)]) == TREE and _tree(s[len(TREE):]) == TREE
    assert [x.since_boot for x in (s[0], s[len(TREE)])] == [True, False]
    [note] = [n for n in _notes(recs) if "tree guessed" in n]
    assert "pool zguest" in note and "log, cache" in note and "--topology" in note


def test_headerless_values_2_3_human_units():
    s = _samples(_read(V23 / "zpool-iostat-vH.txt"))
    r0, r1 = _by_name(s, 0), _by_name(s, 1)
    # `virtio-log0	1.70M	478M	0	12	2.29K	830K`
    assert r0["virtio-log0"].metrics == {"alloc": 1.70 * M, "free": 478 * M, "read_ops": 0.0, "write_ops": 12.0,
                                         "read_bw": 2.29 * K, "write_bw": 830 * K}
    # `virtio-data0	-	-	10	22	89.7K	438K`: a leaf has no capacity
    assert r0["virtio-data0"].metrics == {"read_ops": 10.0, "write_ops": 22.0, "read_bw": 89.7 * K,
                                          "write_bw": 438 * K}
    # second report: `virtio-cache0	94.2M	915M	0	3	0	185K`
    assert r1["virtio-cache0"].metrics == {"alloc": 94.2 * M, "free": 915 * M, "read_ops": 0.0, "write_ops": 3.0,
                                           "read_bw": 0.0, "write_bw": 185 * K}
    assert r1["virtio-cache0"].interval == 2.0 and r1["zguest"].ts == 2.0


def test_headerless_exact_values_2_3_with_latency_and_queues():
    s = _samples(_read(V23 / "zpool-iostat-vHplq.txt"))
    r0 = _by_name(s, 0)
    m = r0["virtio-log0"].metrics
    # `virtio-log0	1892352	501424128	0	11	2270	827805	15728640	898945	12133522	881754	1815113	19293	-	...`
    assert (m["alloc"], m["free"], m["write_ops"], m["read_bw"], m["write_bw"]) == (1892352, 501424128, 11, 2270,
                                                                                     827805)
    assert (m["total_wait_read"], m["total_wait_write"], m["disk_wait_read"], m["disk_wait_write"]) == \
        (15728640, 898945, 12133522, 881754)
    assert (m["syncq_wait_read"], m["syncq_wait_write"]) == (1815113, 19293) and "asyncq_wait_read" not in m
    assert "scrub_wait" not in m and "trim_wait" not in m and "rebuild_wait" not in m
    assert m["syncq_read_pend"] == 0 and m["trimq_write_activ"] == 0 and m["rebuildq_write_activ"] == 0
    assert r0["zguest"].metrics["asyncq_write_pend"] == 12 and r0["zguest"].metrics["asyncq_write_activ"] == 4
    assert r0["mirror-0"].metrics["asyncq_write_activ"] == 3


# --- item 3: -Hp -l on 2.1: 16 values (-l of 0.8-2.1 or -q of 0.7) ----------------------------------------

def test_2_1_latency_rows_of_16_values_are_inferred_from_their_values():
    recs = _read(V21 / "zpool-iostat-vHpl.txt")
    s = _samples(recs)
    assert _tree(s[:len(TREE)]) == TREE
    # `zguest	107413504	1905852416	27	48	232738	1531959	838550	8383277	798386	4681208	18015	40024
    #  17554	4331407	4201267	-`
    assert _by_name(s)["zguest"].metrics == {
        "alloc": 107413504, "free": 1905852416, "read_ops": 27, "write_ops": 48, "read_bw": 232738,
        "write_bw": 1531959, "total_wait_read": 838550, "total_wait_write": 8383277, "disk_wait_read": 798386,
        "disk_wait_write": 4681208, "syncq_wait_read": 18015, "syncq_wait_write": 40024,
        "asyncq_wait_read": 17554, "asyncq_wait_write": 4331407, "scrub_wait": 4201267}
    assert any("16 values read as `zpool iostat -H -l`" in n for n in _notes(recs))


def test_2_1_latency_rows_said_with_flags_need_no_inference():
    recs = _read(V21 / "zpool-iostat-vHpl.txt", ParseOptions(flags="vHpl"))
    assert not any("16 values" in n for n in _notes(recs))
    assert _by_name(_samples(recs))["virtio-cache0"].metrics["asyncq_wait_write"] == 671950


def test_16_values_that_cannot_tell_ask_for_the_flags():
    """Zero rows of 16 values (no unit, no `-`, nothing large): -l or -q cannot be told; the error names the option."""
    name, *values = (V21 / "zpool-iostat-vHpl.txt").read_text().splitlines()[13].split("\t")
    assert name == "virtio-data0" and set(values) == {"0", "-"}  # the 2nd report: idle, so `0` and `-` only
    zeros = "\t".join([name] + ["0" for _ in values])  # without the `-` that only latencies print
    with pytest.raises(ParseError, match="--iostat-flags l"):
        read_capture(zeros + "\n", "z.txt", 2.0, ParseOptions())
    [s] = _samples(read_capture(zeros + "\n", "z.txt", 2.0, ParseOptions(flags="q")))
    assert s.metrics["scrubq_read_activ"] == 0 and "total_wait_read" not in s.metrics


# --- the tree from a zpool status beside the capture, or from this host -----------------------------------

def test_status_beside_the_capture_is_the_authority_and_is_named():
    status = (V23 / "zpool-status.txt").read_text()
    recs = _read(V23 / "zpool-iostat-vHp.txt", ParseOptions(beside=(("zpool-status.txt", status),)))
    assert _tree(_samples(recs)[:len(TREE)]) == TREE
    assert _notes(recs) == ["pool zguest: roles and parents from zpool-status.txt"]


def test_status_of_another_pool_beside_it_is_not_used():
    other = (V23 / "zpool-status.txt").read_text().replace("zguest", "tank")
    recs = _read(V23 / "zpool-iostat-vH.txt", ParseOptions(beside=(("tank.txt", other),)))
    assert any("tree guessed" in n for n in _notes(recs))


def test_this_hosts_pool_is_used_only_when_it_has_every_device():
    status = (V21 / "zpool-status.txt").read_text()
    asked: List[Sequence[str]] = []

    def host(argv: Sequence[str]) -> Optional[str]:
        asked.append(list(argv))
        return status

    recs = _read(V21 / "zpool-iostat-vH.txt", ParseOptions(host_text=host))
    assert asked == [["zpool", "status", "zguest"]]
    assert _notes(recs) == ["pool zguest: roles and parents from zpool status on this host"]
    assert _tree(_samples(recs)[:len(TREE)]) == TREE
    # a live pool of the same name without the log device is a different pool: the text's own tree wins
    lacking = "\n".join(ln for ln in status.splitlines() if "virtio-log0" not in ln)
    recs = _read(V21 / "zpool-iostat-vH.txt", ParseOptions(host_text=lambda argv: lacking))
    assert any("tree guessed" in n for n in _notes(recs))
    assert _tree(_samples(recs)[:len(TREE)]) == TREE


def test_plain_H_rows_of_one_pool_stay_one_pool_per_report(fixtures):
    path = fixtures / "zpool_iostat" / "linux-proxmox-pbs-openzfs2.1__zpool_iostat_pool_-pH_1_5_tabs-expanded.txt"
    recs = read_capture(path.read_text(), path.name, 1.0, ParseOptions())
    s = _samples(recs)
    assert [x.entity.key for x in s] == ["pool:zpool/zpool"] * 5 and not _notes(recs)
    assert s[2].metrics["write_bw"] == 6364099.0


# --- item 4: -w and -r histograms with -v ---------------------------------------------------------------

@pytest.mark.parametrize("path", [d / f"zpool-iostat-{v}.txt" for d in (V21, V23) for v in ("vw", "vr")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_histograms_put_leaves_under_their_mirror_and_give_log_and_cache_their_roles(path: Path):
    recs = _read(path)
    s = _samples(recs)
    assert len(s) == 2 * len(TREE)
    assert _tree(s[:len(TREE)]) == TREE and _tree(s[len(TREE):]) == TREE
    assert any("histogram tables" in n and "log, cache" in n for n in _notes(recs))


def test_latency_histogram_values_of_the_log_device_2_1():
    log = _by_name(_samples(_read(V21 / "zpool-iostat-vw.txt")))["virtio-log0"]
    # rows `8us  0 0 0 0 3 236 0 0 0 0` and `1ms  1 886 1 872 0 0 0 0 0 0` of its table
    assert (log.metrics["lat_syncq_wait_read_8us"], log.metrics["lat_syncq_wait_write_8us"]) == (3, 236)
    assert (log.metrics["lat_total_wait_read_1ms"], log.metrics["lat_total_wait_write_1ms"],
            log.metrics["lat_disk_wait_write_1ms"]) == (1, 886, 872)
    assert log.metrics["lat_trim_1ms"] == 0 and log.since_boot


def test_request_size_histogram_values_2_3():
    s = _by_name(_samples(_read(V23 / "zpool-iostat-vr.txt")))
    # mirror-0 `8K  4.26K 0 6 0 0 0 4.78K 136 ...`; virtio-data0 `8K  2.15K 0 3 0 0 0 2.34K 66 ...`
    assert s["mirror-0"].metrics["rq_sync_read_ind_8k"] == 4.26 * K
    assert s["mirror-0"].metrics["rq_async_write_agg_8k"] == 136
    assert s["virtio-data0"].metrics["rq_sync_read_ind_8k"] == 2.15 * K
    assert s["virtio-log0"].metrics["rq_sync_write_ind_64k"] == 2.38 * K


def test_status_beside_histograms_gives_the_same_tree_without_a_guess():
    status = (V21 / "zpool-status.txt").read_text()
    recs = _read(V21 / "zpool-iostat-vw.txt", ParseOptions(beside=(("st", status),)))
    assert _tree(_samples(recs)[:len(TREE)]) == TREE and _notes(recs) == ["pool zguest: roles and parents from st"]


# --- item 5: -y -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("directory", [V21, V23], ids=["2.1", "2.3"])
def test_y_said_makes_the_first_report_an_interval(directory: Path):
    path = directory / "zpool-iostat-vy.txt"
    plain = _samples(_read(path))
    said = _samples(_read(path, ParseOptions(flags="vy")))
    assert plain[0].since_boot and plain[0].interval is None
    assert not said[0].since_boot and said[0].interval == 2.0
    assert [x.metrics for x in said] == [x.metrics for x in plain]
    assert _tree(said[:len(TREE)]) == TREE


def test_y_detected_from_a_time_stamp_with_no_rows():
    """`zpool iostat -y -T u` prints the skipped since-import iteration's stamp and nothing else (zpool_main.c:
    the stamp is printed before the `skip` test). The capture is our -v -T u one with that stamp in front."""
    text = (V23 / "zpool-iostat-vTu.txt").read_text()
    first = int(text.split()[0])
    recs = read_capture(f"{first - 2}\n" + text, "y.txt", 2.0, ParseOptions())
    s = _samples(recs)
    assert [x.ts for x in (s[0], s[len(TREE)])] == [first, first + 2]
    assert not any(x.since_boot for x in s) and s[0].interval == 2.0
    assert any("`zpool iostat -y`" in n for n in _notes(recs))
    # without the extra stamp the first report is the since-import one, as zpool prints it
    assert _samples(read_capture(text, "t.txt", 2.0, ParseOptions()))[0].since_boot


def test_y_detected_on_a_real_y_T_capture():
    """The guest's own `zpool iostat -vy -T u zguest 2 2` (run2/PROVENANCE.md): a lone stamp, then two interval
    reports. Both reports are intervals, the first at the second stamp, with the whole tree and its values."""
    path = V23 / "run2" / "zpool-iostat-vyTu.txt"
    recs = _read(path)
    s = _samples(recs)
    assert [x.ts for x in (s[0], s[len(TREE)])] == [1795466465, 1795466467] and len(s) == 2 * len(TREE)
    assert not any(x.since_boot for x in s) and {x.interval for x in s} == {2.0}
    assert any("`zpool iostat -y`" in n for n in _notes(recs))
    assert _tree(s[:len(TREE)]) == TREE and _tree(s[len(TREE):]) == TREE
    second = {x.entity.name: x.metrics for x in s[len(TREE):]}
    assert second["virtio-data0"]["write_ops"] == 23 and second["virtio-data0"]["write_bw"] == 578 * K
    assert second["virtio-log0"]["write_ops"] == 2 and second["virtio-cache0"]["write_bw"] == 138 * K


def test_two_pools_in_one_headerless_report_are_told_apart_by_the_vdev_index():
    """Two pools: zpool's scripted output prints each pool's rows with nothing between them (print_iostat adds
    a separator only without -H). Built from our two real captures, the 2.1 pool renamed `zother`."""
    a = (V23 / "zpool-iostat-vHp.txt").read_text().splitlines()
    b = [ln.replace("zguest", "zother") for ln in (V21 / "zpool-iostat-vHp.txt").read_text().splitlines()]
    half_a, half_b = len(a) // 2, len(b) // 2
    text = "\n".join(a[:half_a] + b[:half_b] + a[half_a:] + b[half_b:]) + "\n"
    recs = read_capture(text, "two.txt", 2.0, ParseOptions())
    s = _samples(recs)
    first = s[:2 * len(TREE)]
    assert {x.entity.pool for x in first} == {"zguest", "zother"} and len(s) == 4 * len(TREE)
    assert _tree([x for x in first if x.entity.pool == "zguest"]) == TREE
    other = {(k, n.replace("zguest", "zother"), r, p.replace("zguest", "zother")) for k, n, r, p in TREE}
    assert _tree([x for x in first if x.entity.pool == "zother"]) == other
    assert sum("tree guessed" in n for n in _notes(recs)) == 2


# --- the section-role rules on their own -----------------------------------------------------------------

def test_section_roles_follow_zpools_order_and_what_the_capacity_says():
    assert assign_sections(2, [None, None], [False, False]) == [Role.LOG, Role.CACHE]
    assert assign_sections(1, [True], [True]) == [Role.SPECIAL]
    assert assign_sections(2, [False, True], [False, True]) == [Role.LOG, Role.SPECIAL]
    assert assign_sections(1, [None], [True]) == [Role.LOG]  # a mirror cannot be a cache section
    assert assign_sections(3, [False, True, False], [False, False, False]) == [Role.LOG, Role.SPECIAL, Role.CACHE]


def test_nothing_to_guess_in_texts_that_print_their_tree():
    for name in ("zpool-iostat-v.txt", "zpool-iostat-vlq.txt", "zpool-iostat-w.txt", "zpool-iostat-r.txt"):
        assert guess_topology((V23 / name).read_text()) is None, name


# --- bad input: the -H kinds mangled raise ParseError only -------------------------------------------------

_H_TEXT = [(d / f"zpool-iostat-{v}.txt").read_text() for d in (V21, V23)
           for v in ("vH", "vHp", "vHpl", "vHplq", "vw", "vr")]


def _read_or_parse_error(text: str, flags: str = "") -> None:
    try:
        read_capture(text, "mangled", 2.0, ParseOptions(flags=flags))
    except ParseError:
        pass


def test_a_histogram_count_that_is_not_one_is_a_parse_error_not_a_crash():
    """Found by the test below: the tree guess read counts before the parser could say where one is bad."""
    text = (V23 / "zpool-iostat-vw.txt").read_text().replace("6.45K", "6.45x", 1)
    with pytest.raises(ParseError, match="6.45x"):
        read_capture(text, "bad.txt", 2.0, ParseOptions())


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(_H_TEXT) - 1), st.lists(st.tuples(st.floats(0, 1), st.sampled_from(
    ["\t", "-", "0", "99999999999", "\n", "", " ", "x", "1.5K", "mirror-9"])), max_size=6), st.sampled_from(
    ["", "l", "q", "lq", "y"]))
def test_mangled_headerless_and_histogram_captures_raise_only_parse_error(i, edits, flags):
    chars = list(_H_TEXT[i])
    for frac, ch in edits:
        if chars:
            chars[min(int(frac * len(chars)), len(chars) - 1)] = ch
    _read_or_parse_error("".join(chars), flags)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(_H_TEXT) - 1), st.lists(st.integers(0, 400), max_size=5))
def test_headerless_lines_dropped_or_repeated_raise_only_parse_error(i, picks):
    _read_or_parse_error(drop_or_repeat(_H_TEXT[i], picks))
