"""The guest's plan, checked without booting: QEMU command line, pool layout, runner, cache key."""

from __future__ import annotations

import configparser
import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from zfsmon.lab.guest import boot, build, runner, spec
from zfsmon.lab.guest.runner import PoolLayout
from zfsmon.lab.guest.spec import GuestSpec, Image
from zfsmon.lab.guest.steps import GuestError, mounts_under


def _argv(tmp_path: Path, keep: bool = False):
    img = Image(tmp_path / "img")
    return boot.qemu_argv(img, tmp_path / "disks", tmp_path / "out", tmp_path / "src", PoolLayout(),
                          boot.Machine(), keep, tmp_path / "console.log")


def test_qemu_tcg_no_network_root_disk_first(tmp_path: Path) -> None:
    argv = _argv(tmp_path)
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert argv[argv.index("-cpu") + 1] == "max"
    assert "-netdev" not in argv and argv[argv.index("-nic") + 1] == "none" and "-nodefaults" in argv
    drives = [argv[i + 1] for i, a in enumerate(argv) if a == "-drive"]
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert drives[0].startswith("if=none,id=root,") and "snapshot=on" in drives[0]
    assert devices[0] == "virtio-blk-pci,drive=root"
    assert "root=LABEL=zfsmon-root" in argv[argv.index("-append") + 1]
    serials = [dict(kv.split("=", 1) for kv in d.split(",")[1:]) for d in devices[1:]]
    assert [s["serial"] for s in serials] == ["data0", "data1", "data2", "data3", "log0", "cache0"]
    assert [s["id"] for s in serials] == [f"disk-{s['serial']}" for s in serials]  # hostctl unplugs by id
    shares = [argv[i + 1] for i, a in enumerate(argv) if a == "-virtfs"]
    assert "readonly=on" in shares[0] and "mount_tag=zfsmon_src" in shares[0]
    assert "readonly" not in shares[1] and "mount_tag=zfsmon_out" in shares[1]


def test_keep_puts_the_console_here_and_does_not_power_off(tmp_path: Path) -> None:
    argv = _argv(tmp_path, keep=True)
    assert argv[argv.index("-serial") + 1] == "mon:stdio"
    assert "zfsmon.keep=1" in argv[argv.index("-append") + 1]
    assert "zfsmon.keep=1" not in _argv(tmp_path)[argv.index("-append") + 1]


def test_pool_layout_two_mirrors_slog_l2arc_by_id() -> None:
    argv = PoolLayout().create_argv()
    assert argv[:6] == ["zpool", "create", "-f", "-o", "ashift=12", "zguest"]
    by_id = "/dev/disk/by-id/virtio-"
    assert argv[6:] == ["mirror", by_id + "data0", by_id + "data1", "mirror", by_id + "data2", by_id + "data3",
                        "log", by_id + "log0", "cache", by_id + "cache0"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_guest_scripts_are_valid_bash(tmp_path: Path) -> None:
    for name, text in (("runner", runner.RUNNER_SH), ("pool", PoolLayout().script()),
                       ("command", runner.command_script("zpool status", PoolLayout()))):
        f = tmp_path / name
        f.write_text(text)
        cp = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True)
        assert cp.returncode == 0, (name, cp.stderr)
    scenario = Path(__file__).with_name("scenario.sh")
    assert subprocess.run(["bash", "-n", str(scenario)]).returncode == 0
    bench = Path(__file__).resolve().parents[2] / "bench"
    for script in ("guest_top_soak.sh", "guest_warmup.sh"):
        assert subprocess.run(["bash", "-n", str(bench / script)]).returncode == 0, script
    captures_24 = Path(__file__).resolve().parents[1] / "data" / "openzfs-2.4" / "capture.sh"
    assert subprocess.run(["bash", "-n", str(captures_24)]).returncode == 0


def test_cache_key_follows_the_inputs(monkeypatch) -> None:
    base = GuestSpec().key()
    assert base.startswith("openzfs-2.3-") and GuestSpec("2.1").key().startswith("openzfs-2.1-")
    assert GuestSpec().key() == base  # stable
    assert dataclasses.replace(GuestSpec(), arc_max_mib=512).key() != base
    monkeypatch.setattr(spec, "WHEELS", spec.WHEELS + ("extra==1",))
    assert GuestSpec().key() != base
    monkeypatch.undo()
    monkeypatch.setattr(spec, "TOOL_PACKAGES", spec.TOOL_PACKAGES + ("strace",))
    assert GuestSpec().key() != base


def test_versions_and_suites() -> None:
    assert GuestSpec("2.1").suites == ("bookworm",)
    assert GuestSpec("2.3").suites == ("bookworm", "bookworm-backports")
    assert GuestSpec("2.4").suites == ("trixie", "trixie-backports")
    assert (GuestSpec("2.3").python, GuestSpec("2.4").python) == ("3.11", "3.13")
    with pytest.raises(ValueError):
        GuestSpec("2.2")


def test_2_4_image_is_trixie_with_its_own_key() -> None:
    """2.4 comes from trixie-backports: a trixie root file system, its Python's wheels, and a key of its own."""
    s = GuestSpec("2.4")
    m = "http://mirror.invalid/debian"
    assert build.sources_list(s, m).splitlines() == [
        f"deb {m} trixie main contrib", f"deb {m} trixie-updates main contrib", f"deb {m} trixie-backports main contrib"]
    assert "bookworm" not in build.sources_list(s, m)
    assert s.inputs()["suite"] == "trixie" and s.inputs()["python"] == "3.13"
    assert s.key().startswith("openzfs-2.4-") and s.key() != GuestSpec("2.3").key()


def test_sources_list_has_contrib_and_backports_only_for_2_3() -> None:
    m = "http://mirror.invalid/debian"
    assert "backports" not in build.sources_list(GuestSpec("2.1"), m)
    assert f"deb {m} bookworm-backports main contrib" in build.sources_list(GuestSpec("2.3"), m)
    assert f"deb {m} bookworm main contrib" in build.sources_list(GuestSpec("2.1"), m)


def test_missing_image_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(boot.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(boot.os, "geteuid", lambda: 0)
    with pytest.raises(GuestError, match="build it first"):
        boot.check_can_boot(Image(tmp_path))
    monkeypatch.setattr(boot.shutil, "which", lambda name: None)
    with pytest.raises(GuestError, match="QEMU is not installed"):
        boot.check_can_boot(Image(tmp_path))


def test_nothing_mounted_under_a_fresh_directory(tmp_path: Path) -> None:
    assert mounts_under(tmp_path) == []


def test_image_carries_zfsmon_install_requires() -> None:
    """Every dependency in setup.cfg is in the guest (a wheel or a Debian python3-* package): the guest runs
    the shared tree's zfsmon, and a new hard import missing there fails every zfsmon command in the guest."""
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    names = [re.split(r"[<>=!~ \[;]", r.strip(), maxsplit=1)[0].lower().replace("_", "-")
             for r in cfg["options"]["install_requires"].splitlines() if r.strip()]
    wheels = {w.split("==")[0].lower().replace("_", "-") for w in spec.WHEELS}
    missing = [n for n in names if n not in wheels and f"python3-{n}" not in spec.TOOL_PACKAGES]
    assert not missing, f"add to zfsmon/lab/guest/spec.py (WHEELS or TOOL_PACKAGES): {missing}"


def test_slow_data_throttles_only_the_data_disks_reads(tmp_path: Path) -> None:
    img = Image(tmp_path / "img")
    argv = boot.qemu_argv(img, tmp_path / "disks", tmp_path / "out", tmp_path / "src", PoolLayout(slow_data_iops=15),
                          boot.Machine(), False, tmp_path / "console.log")
    drives = {d.split("id=")[1].split(",")[0]: d for d in (argv[i + 1] for i, a in enumerate(argv) if a == "-drive")}
    for serial in ("data0", "data1", "data2", "data3"):
        assert "throttling.iops-read=15," in drives[serial], drives[serial]
    for serial in ("root", "log0", "cache0"):
        assert "throttling" not in drives[serial], drives[serial]
    assert not any("throttling" in a for a in _argv(tmp_path))


def test_disks_kept_are_imported_not_created(tmp_path: Path) -> None:
    layout = PoolLayout()
    assert boot.existing_disks(tmp_path, layout) is False
    for d in layout.disks:
        (tmp_path / f"{d.serial}.img").write_bytes(b"")
    assert boot.existing_disks(tmp_path, layout) is True
    imported = dataclasses.replace(layout, existing=True).script()
    assert "zpool import -f -d /dev/disk/by-id zguest" in imported and "zpool create" not in imported
    assert "zfs create" not in imported and "zfsmon lab adopt --pool zguest --dataset db" in imported
    later = dataclasses.replace(layout, existing=True, import_existing=False).script()
    assert "exit 0" in later and "zpool import" not in later.split("exit 0")[0]
    fresh = layout.script()
    assert "zpool create" in fresh and "zfsmon lab adopt" in fresh and "exit 0" not in fresh


def test_some_disks_or_a_linked_disk_is_refused(tmp_path: Path) -> None:
    layout = PoolLayout()
    (tmp_path / "data0.img").write_bytes(b"")
    with pytest.raises(GuestError, match="only some of the pool's disks"):
        boot.existing_disks(tmp_path, layout)
    (tmp_path / "data0.img").unlink()
    (tmp_path / "data0.img").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(GuestError, match="not a regular file"):
        boot.existing_disks(tmp_path, layout)


def test_module_parameters_reach_modprobe(tmp_path: Path) -> None:
    boot._prepare(tmp_path, "true", PoolLayout(), ["zfs_arc_max=83886080", "l2arc_rebuild_enabled=0"])
    assert (tmp_path / runner.PARAMS_FILE).read_text() == "zfs_arc_max=83886080 l2arc_rebuild_enabled=0\n"
    assert 'f=/sys/module/zfs/parameters/${p%%=*}' in runner.RUNNER_SH
    boot._prepare(tmp_path, "true", PoolLayout())
    assert not (tmp_path / runner.PARAMS_FILE).exists()
