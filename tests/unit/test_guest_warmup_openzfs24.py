"""The warm-up story on kernel OpenZFS 2.4.4 (tests/data/openzfs-2.4/warmup, PROVENANCE.md): one run of
bench/bench_guest_warmup.py, all five boots. What `zfsmon analyze` finds in those recordings, checked on every
commit: the control stays disk-bound, the warm-up lifts TPS fivefold, the L2ARC rebuilt after a reboot brings TPS
back in seconds and a cold one does not, and fio's random reads warm up the classic way."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.bench_guest_warmup import as_restart, rebuild_from_poll
from tests.conftest import TEST_DATA
from zfsmon.analysis.findings import analyze, restart_compared
from zfsmon.model import Role
from zfsmon.store import Recording

WARMUP = TEST_DATA / "openzfs-2.4" / "warmup"


def _report(name: str):
    """The committed gzipped recording, opened as it is."""
    with Recording.open(str(WARMUP / name)) as rec:
        samples, events = list(rec.samples()), rec.events()
        ents = {e.key: e for e in rec.entities()}
        meta = rec.meta
    return analyze(samples, events), ents, meta


def test_the_recordings_are_openzfs_2_4_kernel_module() -> None:
    for name in ("control.zfsmon.gz", "soak-restarts.zfsmon.gz", "fio-warmup.zfsmon.gz"):
        with Recording.open(str(WARMUP / name)) as rec:
            assert rec.meta.get("zfs_flavour") == "openzfs-kmod", name
            assert rec.meta.get("zfs_version", "").startswith("2.4.4"), (name, rec.meta.get("zfs_version"))
    assert (WARMUP / "versions.txt").read_text().splitlines()[:2] == ["zfs-2.4.4-1~bpo13+1",
                                                                      "zfs-kmod-2.4.4-1~bpo13+1"]


def test_the_control_without_a_cache_device_stays_disk_bound() -> None:
    rep, ents, _meta = _report("control.zfsmon.gz")
    assert not any(e.role == Role.CACHE for e in ents.values())
    [warm] = rep.topic("warmup")
    assert warm.numbers["factor"] < 2.0 and warm.numbers["tps_plateau"] < 50.0, warm.text
    [disk] = rep.topic("disk_reads")
    assert 10.0 < disk.numbers["early_per_disk"] <= 15.5 and "no lasting fall" in disk.text


def test_one_recording_holds_the_warm_up_and_both_restarts() -> None:
    rep, ents, _meta = _report("soak-restarts.zfsmon.gz")
    assert ents["vdev:zguest/virtio-cache0"].role == Role.CACHE
    assert {ents[f"leaf:zguest/virtio-data{i}"].parent for i in range(4)} == {"mirror-0", "mirror-1"}
    [warm] = rep.topic("warmup")
    assert warm.text.startswith("Before the first restart: TPS warmed up from ")
    assert warm.numbers["factor"] > 4.0 and warm.numbers["tps_start"] < 35.0, warm.text
    assert 300.0 < warm.numbers["time_to_90pct_s"] < 900.0
    [fill] = rep.topic("l2arc_fill")
    assert fill.numbers["size_max_b"] > 300 * 2 ** 20
    rebuilt, cold = rep.topic("restart")
    assert rebuilt.numbers["rebuild_ok"] is True and rebuilt.numbers["rebuilt_bytes"] == 417_378_304.0
    assert rebuilt.numbers["rebuilt_bufs"] == 45_360.0
    assert "the L2ARC was rebuilt: 398.0 MiB (45,360 buffers)" in rebuilt.text
    assert cold.numbers["rebuild_ok"] is False and cold.numbers["rebuilt_bytes"] == 0.0
    assert "the L2ARC started empty (no rebuild)" in cold.text
    back, slow = rebuilt.numbers["back_90_s"], cold.numbers["back_90_s"]
    assert back is not None and back < 60.0, rebuilt.text
    assert slow is None or slow > 3 * back, cold.text
    said = restart_compared(as_restart(rebuilt.numbers), as_restart(cold.numbers))
    assert said.startswith("After the restart the L2ARC was rebuilt (398.0 MiB in "), said


def test_the_rebuild_read_beside_each_import() -> None:
    poll = rebuild_from_poll((WARMUP / "rebuild-poll-rebuild.txt").read_text(),
                             float((WARMUP / "import-start-rebuild.txt").read_text()))
    assert poll["rebuild_success"] == 1.0 and poll["rebuilt_bytes"] == 417_378_304.0
    assert poll["rebuilt_bufs"] == 45_360.0 and poll["rebuilt_log_blks"] == 720.0
    assert poll["rebuild_done_s"] is not None and 2.0 < poll["rebuild_done_s"] < 20.0
    cold = rebuild_from_poll((WARMUP / "rebuild-poll-cold.txt").read_text(),
                             float((WARMUP / "import-start-cold.txt").read_text()))
    assert cold["rebuild_success"] == 0.0 and cold["rebuilt_bytes"] == 0.0 and cold["rebuild_done_s"] is None


def test_fio_random_reads_warm_up_as_the_l2arc_fills() -> None:
    rep, ents, _meta = _report("fio-warmup.zfsmon.gz")
    [warm] = rep.topic("warmup")
    assert warm.text.startswith("IOPS warmed up from ") and warm.numbers["factor"] > 2.5, warm.text
    [fill] = rep.topic("l2arc_fill")
    assert fill.numbers["size_start_b"] == 0.0 and fill.numbers["size_max_b"] > 200 * 2 ** 20
    [rp] = rep.topic("read_path")
    assert rp.numbers["late"]["l2arc"] > rp.numbers["early"]["l2arc"] + 20.0
    assert rp.numbers["late"]["disks"] < rp.numbers["early"]["disks"] / 2


def _screen(name: str) -> str:
    return (WARMUP / "screens" / name).read_text()


def test_top_showed_the_warm_up_and_each_restart() -> None:
    early, late = _screen("first-0061-160x50.txt"), _screen("first-0925-160x50.txt")
    hit = [float(re.search(r"L2 hit ([\d.]+)%", s).group(1)) for s in (early, late)]
    tps = [float(re.search(r"TPS\s+([\d.]+)\s", s).group(1)) for s in (early, late)]
    assert hit[0] < 50.0 < hit[1] and tps[1] > 3 * tps[0], (hit, tps)
    assert "openzfs-kmod 2.4.4" in late and all(n in late for n in ("virtio-log0", "virtio-cache0", "mirror-1"))
    narrow = _screen("first-0858-80x24.txt")
    assert "LIVE" in narrow and "Traceback" not in narrow and re.search(r"TPS\s+\d", narrow)
    warm, cold = _screen("restart-rebuild-0062-160x50.txt"), _screen("restart-cold-0063-160x50.txt")
    whit, chit = (float(re.search(r"L2 hit ([\d.]+)%", s).group(1)) for s in (warm, cold))
    wtps, ctps = (float(re.search(r"TPS\s+([\d.]+)\s", s).group(1)) for s in (warm, cold))
    assert whit > 50.0 > chit and wtps > 4 * ctps, (whit, chit, wtps, ctps)


def test_the_summary_is_the_bench_s_reading_of_these_recordings() -> None:
    s = json.loads((WARMUP / "summary.json").read_text())
    assert s["restarts"][0]["rebuilt_bufs"] == 45_360.0 and s["restarts"][1]["rebuild_ok"] is False
    assert s["compared"].startswith("After the restart the L2ARC was rebuilt (398.0 MiB")
    assert Path(WARMUP / "PROVENANCE.md").read_text().count("openzfs-2.4-cd2d8e0516be") == 1
