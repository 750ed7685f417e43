"""The warm-up story on kernel OpenZFS 2.3, from the recordings bench/bench_guest_warmup.py made in the guest
(tests/data/openzfs-2.3/warmup, PROVENANCE.md there): what `zfsmon analyze` finds in them, and the screens
`zfsmon top` showed while it ran, on every commit (CI runs no hour-long soak)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.bench_guest_warmup import as_restart, rebuild_from_poll
from tests.conftest import TEST_DATA, gunzip
from zfsmon.analysis.findings import analyze, restart_compared
from zfsmon.model import Kind, Role
from zfsmon.store import Recording

WARMUP = TEST_DATA / "openzfs-2.3" / "warmup"
MiB = 1024.0 * 1024.0


def _report(name: str, tmp_path: Path):
    path = gunzip(WARMUP / name, tmp_path)
    with Recording.open(path) as rec:
        samples, events = list(rec.samples()), rec.events()
        ents = {e.key: e for e in rec.entities()}
    return analyze(samples, events), ents


def test_the_control_without_a_cache_device_stays_disk_bound(tmp_path) -> None:
    rep, ents = _report("control.zfsmon.gz", tmp_path)
    assert not any(e.role == Role.CACHE for e in ents.values())
    assert any(e.role == Role.LOG for e in ents.values())
    [warm] = rep.topic("warmup")
    # the ARC alone (64 MiB of a ~440 MiB database) lifts it a little, no more
    assert warm.numbers["factor"] < 2.0 and warm.numbers["tps_plateau"] < 50.0, warm.text
    assert rep.topic("restart") == []


def test_the_warm_up_then_a_reboot_the_small_cache_device_did_not_survive(tmp_path) -> None:
    """A 1014 MiB cache device is below l2arc_rebuild_blocks_min_l2size (1 GiB): OpenZFS wrote no log blocks,
    so after the reboot the L2ARC started empty and TPS had not come back when the recording ended."""
    rep, ents = _report("soak-small-cache.zfsmon.gz", tmp_path)
    assert ents["vdev:zguest/virtio-cache0"].role == Role.CACHE
    assert {ents[f"leaf:zguest/virtio-data{i}"].parent for i in range(4)} == {"mirror-0", "mirror-1"}
    [warm] = rep.topic("warmup")
    assert warm.text.startswith("Before the first restart: TPS warmed up from ")
    assert warm.numbers["factor"] > 4.0 and warm.numbers["tps_start"] < 35.0, warm.text
    assert 300.0 < warm.numbers["time_to_90pct_s"] < 900.0
    [fill] = rep.topic("l2arc_fill")
    assert fill.numbers["size_max_b"] > 300 * MiB
    [r] = rep.topic("restart")
    assert r.numbers["rebuild_ok"] is False and r.numbers["rebuilt_bytes"] == 0.0 and r.numbers["new_session"]
    assert r.numbers["back_90_s"] is None and 60.0 < r.numbers["down_s"] < 600.0
    assert r.numbers["plateau_tps"] == pytest.approx(warm.numbers["tps_plateau"], rel=0.1)
    assert "the L2ARC started empty (no rebuild)" in r.text and "TPS not back to 90 %" in r.text


def test_the_l2arc_read_beside_the_import_says_no_rebuild_either() -> None:
    poll = rebuild_from_poll((WARMUP / "rebuild-poll-small-cache.txt").read_text(),
                             float((WARMUP / "import-start-small-cache.txt").read_text()))
    assert poll == {"rebuild_success": 0.0, "rebuilt_bytes": 0.0, "rebuilt_bufs": 0.0, "rebuilt_log_blks": 0.0,
                    "rebuild_done_s": None}


def _screen(name: str) -> str:
    return (WARMUP / "screens" / name).read_text()


def test_top_showed_the_l2arc_warm_and_tps_climb() -> None:
    early, late = _screen("first-0062-160x50.txt"), _screen("first-0920-160x50.txt")
    hit = [float(re.search(r"L2 hit ([\d.]+)%", s).group(1)) for s in (early, late)]
    tps = [float(re.search(r"TPS\s+([\d.]+)\s", s).group(1)) for s in (early, late)]
    assert hit[0] < 5.0 < 50.0 < hit[1], hit
    assert tps[1] > 4 * tps[0], tps
    for name in ("virtio-data0", "virtio-log0", "virtio-cache0", "mirror-1", "logs", "cache"):
        assert name in late
    assert "openzfs-kmod 2.3.2" in late and re.search(r"max 64M", late)
    narrow = _screen("first-0856-80x24.txt")
    assert "LIVE" in narrow and "virtio-data2" in narrow and "Traceback" not in narrow
    assert re.search(r"L2 hit [\d.]+% of", narrow) and re.search(r"TPS\s+\d", narrow)  # every panel, in 80x24


def test_the_recordings_hold_the_kernel_modules_l2arc_statistics(tmp_path) -> None:
    path = gunzip(WARMUP / "soak-small-cache.zfsmon.gz", tmp_path)
    with Recording.open(path) as rec:
        l2 = [s for s in rec.samples(kinds=[Kind.L2ARC]) if not s.since_boot]
    assert l2 and {"rebuild_success", "rebuild_bufs", "log_blk_writes"} <= set(l2[-1].metrics)
    assert max(s.metrics["log_blk_writes"] for s in l2) == 0  # no log block: the device is under 1 GiB


def test_the_rebuild_read_beside_the_import() -> None:
    """Run B: OpenZFS restored the L2ARC from its 474 log blocks while `zpool import` ran (9.5 s under emulation),
    done by the first read after it returned."""
    poll = rebuild_from_poll((WARMUP / "rebuild-poll-rebuild.txt").read_text(),
                             float((WARMUP / "import-start-rebuild.txt").read_text()))
    assert poll["rebuild_success"] == 1.0 and poll["rebuilt_bytes"] == 281_303_040.0
    assert poll["rebuilt_bufs"] == 29_862.0 and poll["rebuilt_log_blks"] == 474.0
    assert poll["rebuild_done_s"] is not None and 5.0 < poll["rebuild_done_s"] < 15.0
    cold = rebuild_from_poll((WARMUP / "rebuild-poll-cold.txt").read_text(),
                             float((WARMUP / "import-start-cold.txt").read_text()))
    assert cold["rebuild_success"] == 0.0 and cold["rebuilt_bytes"] == 0.0 and cold["rebuild_done_s"] is None


def test_one_recording_holds_the_warm_up_and_both_restarts(tmp_path) -> None:
    """Run B's recording: the warm-up, a reboot with the L2ARC rebuilt, a reboot with l2arc_rebuild_enabled=0."""
    rep, ents = _report("soak-restarts.zfsmon.gz", tmp_path)
    [warm] = rep.topic("warmup")
    assert warm.text.startswith("Before the first restart: TPS warmed up") and warm.numbers["factor"] > 2.0
    rebuilt, cold = rep.topic("restart")
    assert rebuilt.numbers["rebuild_ok"] is True and rebuilt.numbers["rebuilt_bytes"] == 281_303_040.0
    assert rebuilt.numbers["rebuilt_bufs"] == 29_862.0
    assert "the L2ARC was rebuilt: 268.3 MiB (29,862 buffers)" in rebuilt.text
    assert cold.numbers["rebuild_ok"] is False and cold.numbers["rebuilt_bytes"] == 0.0
    assert "the L2ARC started empty (no rebuild)" in cold.text
    back, slow = rebuilt.numbers["back_90_s"], cold.numbers["back_90_s"]
    assert back is not None and back < 60.0, rebuilt.text
    assert slow is None or slow > 3 * back, cold.text
    assert rebuilt.numbers["at"] < cold.numbers["at"]
    said = restart_compared(as_restart(rebuilt.numbers), as_restart(cold.numbers))
    assert said.startswith("After the restart the L2ARC was rebuilt (268.3 MiB in "), said
    assert said.endswith(" cold."), said
    assert as_restart({"at": "not a restart"}) is None


def test_data_disks_at_their_limit_are_no_fall_by_half(tmp_path) -> None:
    """Run B's data disks were throttled to 15 reads/s: they served about as many reads at the end as at the start
    (TPS rose because each transaction needed fewer), so a dip on the way is not reported as a fall by half."""
    rep, _ents = _report("soak-restarts.zfsmon.gz", tmp_path)
    [disk] = rep.topic("disk_reads")
    assert 10.0 < disk.numbers["early_per_disk"] <= 15.5 and disk.numbers["late_per_disk"] > 10.0
    assert "time_to_half_s" not in disk.numbers and disk.moments == {}
    assert "no lasting fall: they were as busy at the end" in disk.text and "fell by half" not in disk.text


def test_a_gzipped_recording_is_opened_as_it_is() -> None:
    """The committed recordings open without unpacking them by hand: the same samples as the unpacked file."""
    src = WARMUP / "control.zfsmon.gz"
    before = src.stat()
    with Recording.open(str(src)) as rec:
        n = sum(1 for _ in rec.samples())
        copy = rec._copy_dir
        assert copy is not None and Path(copy).is_dir()
    assert not Path(copy).exists() and n > 1000
    after = src.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
