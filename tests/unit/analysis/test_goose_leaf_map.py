"""Goose eggs in the analysis and the dashboard on a pool named by /dev/disk/by-id: the device's leaf, not its name.

The OpenZFS 2.3 guest (tests/data/openzfs-2.3) names its leaves ``virtio-data0``..; the kernel counts ``vdb``..
No naming rule links the two; the live diskstats collector does (:func:`zfsmon.sources.devices.diskstats.leaf_of_device`:
each device entity's ``parent`` is the leaf it is). Built as tests/unit/analysis/test_goose_leaf_join.py builds it: the
guest's ``/proc/diskstats`` counters (its exporter's scrape) read by the collector with the guest's topology and
by-id links, beside the guest's own ``zpool iostat -vy zguest 2 2`` (two 2 s intervals; the second writes 35-44
ops/s to each data leaf). The device counters stay as captured (the device layer saw nothing: a goose egg on every
busy leaf), or ``vdb`` counts the 35 writes/s of ``virtio-data0`` (not a goose egg there; still on the others).
``zfsmon analyze`` (through a recording) and the dashboard's state must say so; without the leaf (a recording
made before the collector named it) they have no device for any leaf, as before.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Dict, List

import pytest

from tests.unit.analysis.test_goose_leaf_join import (
    DATA_LEAVES,
    GUEST,
    GUEST_MAP,
    _guest_diskstats,
    _resolver,
)
from zfsmon.analysis import findings, goose, goose_window
from zfsmon.commands.iostat import DeviceView
from zfsmon.model import Entity, Kind, Record, Sample
from zfsmon.sources.devices import diskstats
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recorder, Recording
from zfsmon.views.top.state import TopState

T0 = 1000.0  # the first report of zpool-iostat-vy.txt ends here, the second at T0 + 2
#: virtio-data0's ops/s in the second interval (zpool-iostat-vy.txt: 0 reads, 35 writes)
DATA0_OPS = 35.0


def _writes_plus(text: str, device: str, n: int) -> str:
    """/proc/diskstats with ``n`` more completed writes on ``device`` (field 8: writes)."""
    out = []
    for line in text.splitlines():
        tok = line.split()
        if tok[2] == device:
            tok[7] = str(int(tok[7]) + n)
        out.append(" ".join(tok))
    return "\n".join(out) + "\n"


def _records(tmp_path: Path, vdb_moves: bool) -> List[Record]:
    """The guest's zpool iostat intervals, and its diskstats read at each report's end (and the first's start)."""
    leaves = zpool_iostat.parse_text((GUEST / "zpool-iostat-vy.txt").read_text(), interval=2.0, start_ts=T0,
                                     first_since_boot=False)
    path = tmp_path / "diskstats"
    now = [T0 - 2]
    col = diskstats.DiskstatsCollector(path=str(path), clock=lambda: now[0],
                                       topology=lambda: parse_status((GUEST / "zpool-status.txt").read_text()),
                                       resolve=_resolver(tmp_path))
    text, devices = _guest_diskstats(), []
    for i, ts in enumerate((T0 - 2, T0, T0 + 2)):
        now[0] = ts
        writes = int(DATA0_OPS * 2) if vdb_moves and i == 2 else 0  # the second interval's 35 writes/s
        text = _writes_plus(text, "vdb", writes)
        path.write_text(text)
        devices += col.poll()
    assert all(isinstance(r, Sample) for r in devices) and {r.ts for r in devices} == {T0 - 2, T0, T0 + 2}
    assert {r.entity.name: r.entity.parent for r in devices if r.entity.parent} == GUEST_MAP
    return sorted([*leaves, *devices], key=lambda r: r.ts)


def _without_leaf(records: List[Record]) -> List[Record]:
    """As recorded before the collector named each device's leaf."""
    return [dataclasses.replace(r, entity=dataclasses.replace(r.entity, parent=""))
            if isinstance(r, Sample) and r.entity.kind == Kind.DEVICE else r for r in records]


def _recorded(tmp_path: Path, records: List[Record]) -> List[Sample]:
    path = tmp_path / "guest.zfsmon"
    with Recorder(str(path), {"interval": "2"}) as rec:
        rec.write(records)
    with Recording.open(str(path)) as r:
        return list(r.samples())


def test_leaf_devices_rules(tmp_path) -> None:
    """The device that names a leaf is its device (a partition then its disk); else the name rules, as before."""
    resolve = _resolver(tmp_path)
    whole = diskstats.leaf_of_device(parse_status((GUEST / "zpool-status.txt").read_text()), resolve)
    parts = diskstats.leaf_of_device(parse_status((GUEST / "zpool-status-P.txt").read_text()), resolve)
    known = {"vda": "", "vda1": "", "vdb1": "", "loop0": "", **{d: "" for d in GUEST_MAP}}
    got = goose.leaf_devices([*DATA_LEAVES, "virtio-log0"], {**known, **whole})
    assert got == {"virtio-data0": ["vdb"], "virtio-data1": ["vdc"], "virtio-data2": ["vdd"],
                   "virtio-data3": ["vde"], "virtio-log0": ["vdf"]}
    # zpool status -P: the partitions ZFS opened carry the leaf; their disks count the same I/O (some kernels only
    # there), so they follow
    p0 = "/dev/disk/by-id/virtio-data0-part1"
    assert goose.leaf_devices([p0], {**known, "vdb1": "", **parts}) == {p0: ["vdb1", "vdb"]}
    # no device says which leaf it is: the name rules alone find nothing for by-id names (the old answer) ...
    assert goose.leaf_devices(DATA_LEAVES, known) == {leaf: [] for leaf in DATA_LEAVES}
    # ... and still match the lab's loop devices, a partition then its disk, and illumos names
    assert goose.leaf_devices(["/dev/loop0", "vda1", "c0t1d0"], {**known, "c0t1d0s0": ""}) == {
        "/dev/loop0": ["loop0"], "vda1": ["vda1", "vda"], "c0t1d0": ["c0t1d0s0"]}
    # a device that says it is another leaf is never that leaf's by name
    assert goose.leaf_devices(["vdb", "vdb1"], {**known, **whole}) == {"vdb": [], "vdb1": ["vdb1"]}


@pytest.mark.parametrize("vdb_moves", [False, True], ids=["vdb-still", "vdb-moves"])
def test_analyze_names_the_by_id_leaf_a_goose_egg(tmp_path, vdb_moves) -> None:
    samples = _recorded(tmp_path, _records(tmp_path, vdb_moves))
    assert {s.entity.name: s.entity.parent for s in samples if s.entity.kind == Kind.DEVICE and s.entity.parent} \
        == GUEST_MAP  # the recording keeps each device's leaf
    summary = goose_window.summarize_window(samples)
    assert summary is not None
    eggs = summary.eggs()
    # first interval: data leaves idle (0 ops/s), the log (2 writes/s) and cache (3 writes/s) on still devices
    assert summary.per_leaf["virtio-log0"] == summary.per_leaf["virtio-cache0"] == {goose.GOOSE_EGG: 2}
    assert {leaf: summary.per_leaf[leaf].get(goose.IDLE) for leaf in DATA_LEAVES} == dict.fromkeys(DATA_LEAVES, 1)
    if vdb_moves:
        assert eggs["virtio-data0"] == 0 and summary.per_leaf["virtio-data0"][goose.NOT_GOOSE_EGG] == 1
        assert [eggs[leaf] for leaf in DATA_LEAVES[1:]] == [1, 1, 1]
    else:
        assert [eggs[leaf] for leaf in DATA_LEAVES] == [1, 1, 1, 1]
        worst = summary.worst["virtio-data0"]
        assert (worst.device, worst.zfs_ops, worst.device_ops) == ("vdb", DATA0_OPS, 0.0)
        # the window words only its worst intervals: the sentence is judge's for the same numbers
        [alone] = goose.judge({"virtio-data0": DATA0_OPS}, {"vdb": 0.0}, {"virtio-data0": ["vdb"]})
        assert worst == alone
    report = findings.analyze(samples, start=T0 - 2, end=T0 + 2)
    [finding] = [f for f in report.findings if f.topic == "goose_eggs"]
    assert finding.text.startswith("Goose eggs: ")
    assert ("virtio-data0 in 1 of 1 busy intervals (e.g. ZFS 35 ops/s, device 0 ops/s)" in finding.text) \
        is not vdb_moves
    assert "virtio-data1 in 1 of 1 busy intervals (e.g. ZFS 36 ops/s, device 0 ops/s)" in finding.text
    assert finding.numbers["per_leaf"] == summary.per_leaf


def test_a_recording_from_before_the_leaf_label_knows_no_device_for_by_id_leaves(tmp_path) -> None:
    samples = _recorded(tmp_path, _without_leaf(_records(tmp_path, vdb_moves=False)))
    summary = goose_window.summarize_window(samples)
    assert summary is not None and summary.eggs() == dict.fromkeys([*DATA_LEAVES, "virtio-log0", "virtio-cache0"], 0)
    assert all(t == {goose.UNKNOWN: 2} for t in summary.per_leaf.values())  # both intervals: no device found
    assert summary.text().startswith("Goose eggs: nothing to judge")


def _top(records: List[Record]) -> Dict[str, goose.Verdict]:
    st = TopState(window_s=300)
    for ts in sorted({r.ts for r in records}):  # as live: one poll's records at a time
        st.feed([r for r in records if r.ts == ts])
    rows = {r.name: r for r in st.tree("zguest") if r.kind in ("leaf", "vdev")}
    for leaf, v in st.verdicts.items():  # the tree shows each verdict on its leaf's row
        assert (rows[leaf[1]].verdict, rows[leaf[1]].device) == (v.verdict, v.device)
    assert {v.leaf for v in st.goose_eggs()} == {leaf for (_p, leaf), v in st.verdicts.items()
                                                  if v.verdict == goose.GOOSE_EGG}
    return {leaf: v for (_pool, leaf), v in st.verdicts.items()}


def test_top_names_the_by_id_leaf_a_goose_egg_only_while_its_device_is_still(tmp_path) -> None:
    for sub in "abc":
        (tmp_path / sub).mkdir()
    still = _top(_records(tmp_path / "a", vdb_moves=False))
    assert {leaf: (v.verdict, v.device) for leaf, v in still.items()} == {
        "virtio-data0": (goose.GOOSE_EGG, "vdb"), "virtio-data1": (goose.GOOSE_EGG, "vdc"),
        "virtio-data2": (goose.GOOSE_EGG, "vdd"), "virtio-data3": (goose.GOOSE_EGG, "vde"),
        "virtio-log0": (goose.GOOSE_EGG, "vdf"), "virtio-cache0": (goose.GOOSE_EGG, "vdg")}
    assert (still["virtio-data0"].zfs_ops, still["virtio-data0"].device_ops) == (DATA0_OPS, 0.0)
    moving = _top(_records(tmp_path / "b", vdb_moves=True))
    v0 = moving["virtio-data0"]
    assert (v0.verdict, v0.device, v0.zfs_ops, v0.device_ops) == (goose.NOT_GOOSE_EGG, "vdb", DATA0_OPS, DATA0_OPS)
    assert all(moving[leaf].verdict == goose.GOOSE_EGG for leaf in DATA_LEAVES[1:])
    unlabelled = _top(_without_leaf(_records(tmp_path / "c", vdb_moves=False)))
    assert {v.verdict for v in unlabelled.values()} == {goose.UNKNOWN}  # by name alone: none found, as before


def test_the_lab_loop_leaves_still_match_by_name() -> None:
    """zfs-fuse's pools on /dev/loopN (no leaf label: the collector of a recording made without zpool status)."""
    loop = Entity(Kind.LEAF, "/dev/loop3", "lab", None, "mirror-0")
    dev = Entity(Kind.DEVICE, "loop3")
    recs: List[Record] = [Sample(T0, loop, {"read_ops": 100.0, "write_ops": 0.0}, 2.0),
                          Sample(T0 - 2, dev, {"reads": 0.0, "writes": 0.0}),
                          Sample(T0, dev, {"reads": 200.0, "writes": 0.0})]
    summary = goose_window.summarize_window(recs)
    assert summary is not None and summary.per_leaf == {"/dev/loop3": {goose.NOT_GOOSE_EGG: 1}}
    st = TopState()
    st.feed(recs)
    [v] = st.verdicts.values()
    assert (v.leaf, v.verdict, v.device, v.device_ops) == ("/dev/loop3", goose.NOT_GOOSE_EGG, "loop3", 100.0)


def test_iostat_device_column_finds_the_by_id_leafs_device(tmp_path) -> None:
    """`zfsmon iostat`'s device column (and its goose eggs) by the same rule: virtio-data0 reads vdb's ops/s."""
    path = tmp_path / "diskstats"
    now = [T0]
    col = diskstats.DiskstatsCollector(path=str(path), clock=lambda: now[0],
                                       topology=lambda: parse_status((GUEST / "zpool-status.txt").read_text()),
                                       resolve=_resolver(tmp_path))
    view = DeviceView(col)
    text = _guest_diskstats()
    path.write_text(text)
    view.refresh()
    now[0] += 2
    path.write_text(_writes_plus(text, "vdb", int(DATA0_OPS * 2)))
    view.refresh()
    assert [view(leaf) for leaf in DATA_LEAVES] == [DATA0_OPS, 0.0, 0.0, 0.0]
    assert view("virtio-nothere") is None
