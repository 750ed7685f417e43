"""The scene zfsmon exists for, on kernel OpenZFS: `zfsmon top --soak` in a terminal of its own in the guest.

scenario.sh ran it through bench/guest_top_soak.sh: tmux at 160x50 (once 80x24 near the end), a cold pgbench -N
loop on zfsmon's own PostgreSQL cluster on the adopted pool, the screen captured every 15 s, then `q`. Here: what
the screens showed, and that the recording `q` left opens in analyze, report and replay.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from tests.guest.roles import POOL
from zfsmon.analysis.findings import analyze
from zfsmon.model import EventKind, Kind, Role
from zfsmon.store import Recording
from zfsmon.views.top.replay import ReplayCursor

pytestmark = pytest.mark.guest

LEAVES = ("virtio-data0", "virtio-data1", "virtio-data2", "virtio-data3")
#: the tree's rows, in the order top draws them (grouped by role)
TREE = ("zguest", "data", "mirror-0", *LEAVES[:2], "mirror-1", *LEAVES[2:], "logs", "virtio-log0", "cache",
        "virtio-cache0")


def _screens(guest_out: Path, size: str) -> Dict[int, str]:
    out = {}
    for p in sorted((guest_out / "top-screens").glob(f"*-{size}.txt")):
        out[int(p.name.split("-")[0])] = p.read_text()
    return out


def _last_busy(guest_out: Path) -> str:
    """The last 160x50 screen with the soak running (TPS shown): what a person watching saw at the end."""
    busy = [s for _, s in sorted(_screens(guest_out, "160x50").items()) if re.search(r"TPS\s+\d", s)]
    assert busy, "no 160x50 screen shows TPS"
    return busy[-1]


def _row(screen: str, name: str) -> List[str]:
    for line in screen.splitlines():
        if line.split()[:1] == [name]:
            return line.split()
    raise AssertionError(f"no row {name} on the screen:\n{screen}")


def test_top_ran_and_q_ended_it(guest_out: Path) -> None:
    log = (guest_out / "top-soak.log").read_text()
    assert "top-soak exit 0" in log, log
    assert (guest_out / "top-screens" / "top.rc").read_text().strip() == "0"
    assert len(_screens(guest_out, "160x50")) >= 8 and len(_screens(guest_out, "80x24")) >= 1


def test_header_says_kernel_openzfs_live(guest_out: Path, guest_zfs: str) -> None:
    screen = _last_busy(guest_out)
    head = "\n".join(screen.splitlines()[:2])
    assert "LIVE" in head and f"openzfs-kmod {guest_zfs}." in head and f"pools [{POOL}]" in head, head
    assert "rec /var/tmp/top.zfsmon" in head, head


def test_vdev_tree_by_role_with_each_leafs_device_beside_it(guest_out: Path) -> None:
    screen = _last_busy(guest_out)
    lines = screen.splitlines()
    at = [next(i for i, ln in enumerate(lines) if ln.split()[:1] == [n]) for n in TREE]
    assert at == sorted(at), screen
    assert "dev" in _row(screen, "vdev")  # the device layer's column
    for leaf in (*LEAVES, "virtio-log0", "virtio-cache0"):
        cells = _row(screen, leaf)
        # name, r/s w/s rB/s wB/s, lat, then the block device's own ops (/proc/diskstats of vdb...)
        assert len(cells) >= 7 and re.fullmatch(r"[\d.]+[KMG]?", cells[6]), (leaf, cells)
    # the pgbench -N loop writes: commits on the SLOG, reads on the data disks (the ARC starts cold)
    assert any(float(re.match(r"[\d.]+", c).group()) > 0 for c in _row(screen, "virtio-log0")[2:3]), screen


def test_arc_l2arc_zil_workload_timeline_findings_panels(guest_out: Path) -> None:
    screen = _last_busy(guest_out)
    for pattern in (r"hit\s+[\d.]+%!* of [\d.]+K?", r"size [\d.]+[KMG] / c [\d.]+[KMG] / max [\d.]+[KMG]",
                    # the count beside the ratio: "- of 0" when no read reached the L2ARC (a small database
                    # the 256 MiB ARC holds whole)
                    r"L2 hit (-|[\d.]+%!*) of [\d.]+K?", r"L2 feed [\d.]+[KMG]?/s read [\d.]+[KMG]?/s",
                    r"commits [\d.]+K?/s", r"SLOG w [\d.]+[KMG]?/s", r"TPS\s+[\d.]+K?\b",
                    r"PG buf hit [\d.]+%", r"Timeline\s+whole run \d\d:\d\d:\d\d", r"TPS per (s|run)",
                    r"L2 size\s", r"data reads\s", r"Findings", r"Read path"):
        assert re.search(pattern, screen), (pattern, screen)
    assert re.search(r"TPS warmed up|L2ARC grew|Data-disk reads went", screen), screen


def test_80x24_screen_still_shows_the_pool(guest_out: Path) -> None:
    for screen in _screens(guest_out, "80x24").values():
        assert "Traceback" not in screen
        assert "LIVE" in screen and POOL in screen, screen
        assert all(n in screen for n in ("mirror-0", "virtio-data0")), screen


def test_the_recording_q_left_opens_in_analyze_report_and_replay(guest_out: Path, tmp_path: Path) -> None:
    path = guest_out / "top.zfsmon"
    with Recording.open(str(path)) as rec:
        ents = {e.key: e for e in rec.entities()}
        samples = list(rec.samples())
        events = list(rec.events())
    assert ents[f"vdev:{POOL}/virtio-log0"].role == Role.LOG
    assert ents[f"vdev:{POOL}/virtio-cache0"].role == Role.CACHE
    assert {ents[f"leaf:{POOL}/{leaf}"].parent for leaf in LEAVES} == {"mirror-0", "mirror-1"}
    assert any(e.kind == Kind.L2ARC for e in ents.values()) and any(e.kind == Kind.ZIL for e in ents.values())
    tps = [s for s in samples if s.entity.kind == Kind.WORKLOAD and "tps" in s.metrics]
    assert len(tps) >= 60, len(tps)
    assert any(e.kind == EventKind.RUN_END for e in events)
    report = analyze(samples, events)
    assert report.topic("warmup") or report.topic("l2arc_fill"), report.render()
    with Recording.open(str(path)) as rec:
        rows = {row.name: row for row in ReplayCursor(rec, 300.0).state.tree(POOL)}
    assert rows["virtio-log0"].role == Role.LOG and rows["virtio-cache0"].role == Role.CACHE
    pdf = tmp_path / "report.pdf"
    cp = subprocess.run([sys.executable, "-m", "zfsmon", "report", str(path), "--out", str(pdf)],
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0 and pdf.stat().st_size > 10_000 and pdf.read_bytes()[:5] == b"%PDF-", cp.stderr
