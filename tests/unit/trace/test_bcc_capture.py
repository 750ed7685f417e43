"""The bcc backend's real output from the OpenZFS 2.3 guest (tests/data/openzfs-2.3/bcc, PROVENANCE.md there):
its structure, its numbers against fio's own op counts and the zil kstat, bpftrace's zfsslower.bt run beside it,
and the printer reproducing its lines from the same map contents."""

from __future__ import annotations

import json
import re
from typing import Dict, List, Tuple

import pytest

from tests.conftest import TEST_DATA
from zfsmon.model import Event, EventKind, Role, Sample
from zfsmon.sources.zpool.status import parse_status
from zfsmon.trace.bcc_format import block
from zfsmon.trace.bcc_program import NAME_INDEX, TRACES
from zfsmon.trace.protocol import TraceParser
from zfsmon.trace.resolve import Names, mounted_filesystems

DATA = TEST_DATA / "openzfs-2.3" / "bcc"
OUT = DATA / "bcc-all.out"
_MAP = re.compile(r"^@(\w+)\[(.+)\]: (\d+)$")


def _parse(path=OUT, names=None) -> List:
    parser = TraceParser("trace:bcc", names)
    out: List = []
    for line in path.read_text().splitlines():
        out.extend(parser.feed(line, 0.0))
    return out


def _names() -> Names:
    devices = dict(reversed(line.split()) for line in (DATA / "block-devs.txt").read_text().splitlines())
    return Names(topology=parse_status((DATA / "zpool-status-L.txt").read_text()), devices=devices,
                 mounts=mounted_filesystems(str(DATA / "mountinfo.txt")))


def _dataset_dev() -> str:
    """The dev_t token of zguest/db (fio's dataset) as the kernel reports s_dev: major << 20 | minor."""
    for majmin, (_mnt, fstype, source) in mounted_filesystems(str(DATA / "mountinfo.txt")).items():
        if fstype == "zfs" and source == "zguest/db":
            major, minor = (int(x) for x in majmin.split(":"))
            return str(major << 20 | minor)
    raise AssertionError("zguest/db not in mountinfo")


def _fio() -> Dict[str, int]:
    job = json.loads((DATA / "fio.json").read_text())["jobs"][0]
    return {"read": job["read"]["total_ios"], "write": job["write"]["total_ios"], "sync": job["sync"]["total_ios"]}


def _totals(path, script: str, dev: str) -> Dict[str, int]:
    """Sum of @count[DEV, NAME] and of the @lat buckets per op over every block of `script` (independent reader)."""
    out: Dict[str, int] = {}
    current = ""
    for line in path.read_text().splitlines():
        if line.startswith("zfsmon-trace "):
            current = line.split()[2]
        m = _MAP.match(line)
        if not m or current != script:
            continue
        keys = m.group(2).split(", ")
        if keys[0] != dev:
            continue
        if m.group(1) == "count":
            out[keys[1]] = out.get(keys[1], 0) + int(m.group(3))
        elif m.group(1) == "lat":
            out[f"{keys[1]}_ops"] = out.get(f"{keys[1]}_ops", 0) + int(m.group(3))
    return out


def test_stream_structure_one_program_three_traces_and_arc_refused():
    lines = OUT.read_text().splitlines()
    ready = [ln for ln in lines if ln.startswith("# zfsmon-bcc ready:")]
    assert len(ready) == 1
    assert "probes attached for blklat,zfsslower,zil" in ready[0] and "not traced: arc" in ready[0]
    headers = [ln for ln in lines if ln.startswith("zfsmon-trace ")]
    assert headers[0] == "zfsmon-trace 1 arc entity=name interval=5"
    assert set(headers) == {"zfsmon-trace 1 arc entity=name interval=5",
                            "zfsmon-trace 1 blklat entity=devt interval=5 slow_ms=100",
                            "zfsmon-trace 1 zfsslower entity=devt interval=5 slow_ms=100",
                            "zfsmon-trace 1 zil entity=name interval=5 slow_ms=100"}
    errors = [r for r in _parse() if isinstance(r, Event) and r.kind == EventKind.ERROR]
    assert [e.text for e in errors] == ["arc: arc: tracepoint zfs:zfs_arc__hit is absent on this kernel (the OpenZFS "
                                        "module is loaded but has no tracepoints: built without them, as Debian's "
                                        "zfs-dkms is)"]
    # each tick: blklat, zfsslower, zil blocks in that order, all with the tick's EPOCH
    ticks: Dict[str, List[str]] = {}
    current = ""
    for ln in lines:
        if ln.startswith("zfsmon-trace "):
            current = ln.split()[2]
        elif ln.startswith("interval "):
            assert ln.endswith(" 5")
            ticks.setdefault(ln.split()[1], []).append(current)
    assert len(ticks) >= 8
    assert all(scripts == ["blklat", "zfsslower", "zil"] for scripts in ticks.values())


def test_zfsslower_counts_equal_fio_s_own_op_counts():
    dev, fio = _dataset_dev(), _fio()
    got = _totals(OUT, "zfsslower", dev)
    # fio's reads and writes, plus dd's one 64 MiB write and the layout's nothing (it ran before the probes)
    assert got["op_read"] == pytest.approx(fio["read"], rel=0.02)
    assert got["op_write"] == pytest.approx(fio["write"] + 1, rel=0.02)
    assert got["read_ops"] == got["op_read"] and got["write_ops"] == got["op_write"]
    assert got["op_fsync"] == pytest.approx(fio["sync"], rel=0.02)
    assert got["op_open"] >= 1


def test_bpftrace_zfsslower_beside_it_counts_the_same_fio_ops():
    dev, fio = _dataset_dev(), _fio()
    bt = _totals(DATA / "bt-zfsslower.out", "zfsslower", dev)
    assert bt["op_read"] == pytest.approx(fio["read"], rel=0.02)
    assert bt["op_write"] == pytest.approx(fio["write"] + 1, rel=0.02)


def test_the_slow_write_made_on_purpose_is_caught():
    slow = [r for r in _parse() if isinstance(r, Event) and r.data.get("slow")]
    dd = [e for e in slow if e.data["bytes"] == 64 << 20]
    assert len(dd) == 1
    assert dd[0].data["op"] == "write" and dd[0].data["lat_ns"] > 100e6
    assert "comm=dd" in dd[0].data["detail"] and "file=slow.dat" in dd[0].data["detail"]
    assert all(e.data["lat_ns"] > 100e6 for e in slow)


def test_zil_commits_equal_the_zil_kstat_delta():
    def kstat(name: str) -> Dict[str, int]:
        rows = [ln.split() for ln in (DATA / name).read_text().splitlines()[2:]]
        return {r[0]: int(r[2]) for r in rows if len(r) == 3}

    delta = kstat("zil.after")["zil_commit_count"] - kstat("zil.before")["zil_commit_count"]
    got = _totals(OUT, "zil", "zil")
    assert delta > 0
    # the traced window holds the kstat window (bcc was ready before the first read, stopped after the last)
    assert got["commits"] >= delta and got["commits"] == pytest.approx(delta, rel=0.05)
    assert got["commit_ops"] == got["commits"]


def test_samples_resolve_to_the_dataset_and_to_vdevs_with_roles():
    samples = [r for r in _parse(names=_names()) if isinstance(r, Sample)]
    by: Dict[Tuple[str, str], Sample] = {(s.source, s.entity.name): s for s in samples}
    assert ("trace:zfsslower", "zguest/db") in by
    roles = {s.entity.name: (s.entity.role, s.entity.parent) for s in samples if s.source == "trace:blklat"}
    assert roles.get("mirror-0", (None,))[0] == Role.DATA and roles.get("mirror-1", (None,))[0] == Role.DATA
    assert any(role == Role.LOG for role, _p in roles.values())
    assert ("trace:zil", "zil") in by


def test_the_printer_reproduces_every_block_from_the_same_map_contents():
    current, blocks = "", []
    for ln in OUT.read_text().splitlines():
        if ln.startswith("zfsmon-trace "):
            current = ln.split()[2]
        elif ln.startswith("interval "):
            blocks.append((current, ln, []))
        elif ln.startswith("@"):
            blocks[-1][2].append(ln)
    assert blocks
    for script, interval_line, lines in blocks:
        t = TRACES[script]
        snap: Dict = {}
        for ln in lines:
            m = _MAP.match(ln)
            keys = m.group(2).split(", ")
            ent = int(keys[0]) if t.entity == "devt" else t.entities.index(keys[0])
            key = (t.tid, NAME_INDEX[keys[1]], ent) + ((int(keys[2]),) if m.group(1) == "lat" else ())
            snap.setdefault(m.group(1), []).append((key, int(m.group(3))))
        mine = block(t, snap, float(interval_line.split()[1]), 5)
        assert mine == [interval_line, *lines, "end"]


def test_the_capture_s_values():
    """The numbers this run measured (PROVENANCE.md): exact equalities with fio and the zil kstat."""
    dev = _dataset_dev()
    assert dev == "41"  # zguest/db is 0:41 in the guest's mountinfo
    got = _totals(OUT, "zfsslower", dev)
    assert (got["op_read"], got["op_write"], got["op_fsync"], got["op_open"]) == (4695, 2113, 452, 2)
    assert _fio() == {"read": 4695, "write": 2112, "sync": 452}
    assert _totals(OUT, "zil", "zil")["commits"] == 452 == 457 - 5  # zil_commit_count after - before
    # bpftrace prints a map and then clears it: events in between are lost (bcc takes entries out atomically)
    bt = _totals(DATA / "bt-zfsslower.out", "zfsslower", dev)
    assert (bt["op_read"], bt["op_write"], bt["op_fsync"]) == (4689, 2110, 451)
    slow = [r for r in _parse() if isinstance(r, Event) and r.data.get("slow")]
    assert [(e.data["op"], int(e.data["lat_ns"]), int(e.data["bytes"])) for e in slow] == [
        ("write", 136986700, 8192), ("write", 1930899810, 67108864)]
