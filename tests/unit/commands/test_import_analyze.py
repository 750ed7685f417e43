"""The README's post-mortem, ``zfsmon import CAPTURE --into X && zfsmon analyze X`` (and ``report``), on real
captures of every kind: the figures stated are the capture's own, computed here from its text independently
of zfsmon's parsers. A capture with printed times says its interval in them (``zpool iostat -T u``: the
stamps); one without times and without ``--interval`` is said to have no interval, not to have done 0 I/O.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.conftest import TEST_DATA
from tests.unit.bad_input import answer, kind_samples
from zfsmon.model import Kind, Sample
from zfsmon.sources import detect
from zfsmon.store import Recording

#: real ``zpool iostat -v -T u INTERVAL`` captures whose first report is since import (no -y)
TIMED = ["openzfs-2.3/beside-iostat-vp.txt", "openzfs-2.1/beside-iostat-vp.txt", "openzfs-2.3/zpool-iostat-vTu.txt",
         "openzfs-2.1/zpool-iostat-vlpTu.txt", "zfsfuse/zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt"]

_STAMP = re.compile(r"^(\d{10})$")
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _count(tok: str) -> float:
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", tok)
    assert m, tok
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def _reports(text: str) -> List[Tuple[int, Dict[str, List[Tuple[float, float]]]]]:
    """Per report: its stamp and, per role, each device's (read ops/s, write ops/s). A device is a row that the
    next row does not indent under; the role is the section (``logs``, ``cache``; before them: data)."""
    out: List[Tuple[int, Dict[str, List[Tuple[float, float]]]]] = []
    rows: List[Tuple[str, int, List[str]]] = []

    def close() -> None:
        if not out:
            return
        for i, (role, depth, cols) in enumerate(rows):
            nxt = rows[i + 1][1] if i + 1 < len(rows) else -1
            if depth > 0 and not nxt > depth and cols[2] != "-":
                out[-1][1].setdefault(role, []).append((_count(cols[2]), _count(cols[3])))
        rows.clear()

    role = "data"
    for line in text.splitlines():
        m = _STAMP.match(line)
        if m:
            close()
            out.append((int(m.group(1)), {}))
            role = "data"
            continue
        parts = line.split()
        if len(parts) < 7 or not re.fullmatch(r"[\d.]+[KMGT]?|-", parts[1]) or line.startswith("-"):
            continue
        if parts[0] in ("logs", "cache", "spares", "special", "dedup") and line[0] != " ":
            role = {"logs": "log"}.get(parts[0], parts[0])
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        rows.append((role if depth else "pool", depth, parts[1:]))
    close()
    return out


def _import(tmp_path: Path, capture: Path, *extra: str) -> Path:
    into = tmp_path / f"{capture.name}.zfsmon"
    a = answer(["import", str(capture), "--into", str(into), *extra])
    assert a.code == 0, a.err
    return into


def _analyze(path: Path) -> Dict[str, dict]:
    a = answer(["analyze", str(path), "--json"])
    assert a.code == 0, a.err
    return {f["topic"]: f for f in json.loads(a.out)["findings"]}


@pytest.mark.parametrize("name", TIMED)
def test_a_timed_zpool_iostat_capture_analyzes_to_its_own_figures(tmp_path, name):
    capture = TEST_DATA / name
    reports = _reports(capture.read_text())
    stamps = [t for t, _ in reports]
    gap = statistics.median_high(b - a for a, b in zip(stamps, stamps[1:]))
    intervals = reports[1:]  # the first averages since import
    found = _analyze(_import(tmp_path, capture))
    roles = found["vdev_perf"]["numbers"]["roles"]
    for role in ("data", "log", "cache"):
        per = [devs[role] for _t, devs in intervals if role in devs]
        if not per:
            continue
        got = roles[role]
        assert got["readings_without_interval"] == 0
        assert got["peak_iops"] == pytest.approx(max(sum(r + w for r, w in devs) for devs in per))
        assert got["read_ops"] == pytest.approx(sum(r for devs in per for r, _w in devs) * gap)
        assert got["write_ops"] == pytest.approx(sum(w for devs in per for _r, w in devs) * gap)
        assert got["busiest_read_per_leaf_s"] == pytest.approx(max(sum(r for r, _w in d) / len(d) for d in per))
    assert max(r["peak_iops"] for r in roles.values()) > 0, "a capture of no I/O tells nothing"
    peak = max(sum(r + w for r, w in devs["data"]) for _t, devs in intervals)
    assert f"busiest interval {peak:,.0f} disk IOPS" in found["vdev_perf"]["text"]


def test_info_and_the_samples_agree_on_a_timed_captures_interval(tmp_path):
    capture = TEST_DATA / TIMED[0]
    into = _import(tmp_path, capture)
    info = json.loads(answer(["info", str(into), "--json"]).out)
    with Recording.open(str(into)) as rec:
        samples = list(rec.samples())
    assert info["interval_s"] == 5
    assert {s.interval for s in samples if not s.since_boot} == {5.0}


def test_the_report_of_an_imported_capture_states_its_figures(tmp_path):
    pytest.importorskip("matplotlib")
    capture = TEST_DATA / TIMED[0]
    into = _import(tmp_path, capture)
    out = tmp_path / "r.html"
    a = answer(["report", str(into), "--out", str(out)])
    assert a.code == 0, a.err
    peak = max(sum(r + w for r, w in devs["data"]) for _t, devs in _reports(capture.read_text())[1:])
    assert f"busiest interval {peak:,.0f} disk IOPS" in out.read_text()


def test_a_capture_without_times_or_interval_is_said_to_have_no_interval(tmp_path):
    capture = TEST_DATA / "openzfs-2.3" / "zpool-iostat-v.txt"  # `zpool iostat -v 5 2`: no -T
    found = _analyze(_import(tmp_path, capture))
    perf = found["vdev_perf"]
    assert "no interval known" in perf["text"] and "--interval" in perf["text"]
    assert "0 reads and 0 writes" not in perf["text"] and "busiest interval 0" not in perf["text"]
    assert perf["numbers"]["roles"]["data"]["readings_without_interval"] == 4
    (tmp_path / "given").mkdir()
    given = _analyze(_import(tmp_path / "given", capture, "--interval", "5"))["vdev_perf"]
    assert "no interval known" not in given["text"] and given["numbers"]["roles"]["data"]["write_ops"] > 0


@pytest.mark.parametrize("kind", sorted(detect.KINDS))
def test_every_kind_imports_and_analyzes_with_the_interval_its_times_show(tmp_path, kind):
    captures = kind_samples(4).get(kind)
    assert captures, f"no real capture of {kind}"
    imported = 0
    for capture in captures:
        into = tmp_path / f"{capture.name}.zfsmon"
        a = answer(["import", str(capture), "--into", str(into), "--kind", kind])
        if a.code != 0:
            continue  # a capture that needs more than its text (another file, --interval): refused in one line
        found = _analyze(into)
        with Recording.open(str(into)) as rec:
            samples = [s for s in rec.samples() if isinstance(s, Sample)]
        if detect.get(kind).interval_rows and len({s.ts for s in samples}) > 1:
            assert all(s.interval for s in samples if not s.since_boot), capture
        busy = [s for s in samples if s.entity.kind in (Kind.LEAF, Kind.VDEV) and not s.since_boot
                and (s.metrics.get("read_ops") or s.metrics.get("write_ops"))]
        if busy:  # disks that did I/O: figures, or the reason there are none
            perf = found["vdev_perf"]
            peaks = [r["peak_iops"] for r in perf["numbers"]["roles"].values()]
            assert max(peaks) > 0 or "no interval known" in perf["text"], capture
        imported += 1
    assert imported, f"no capture of {kind} imported: {[c.name for c in captures]}"
