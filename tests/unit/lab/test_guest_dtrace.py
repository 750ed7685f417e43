"""A DTrace the user has, carried into the guest (``zfsmon guest run --with-dtrace PREFIX``).

The host side copies the installed prefix and the libraries ``ldd`` resolves for it into the output share; the
guest side (``guest-dtrace.sh``) is checked here by bash's parser, and run for real in the guest by
bench/bench_guest_dtrace.py (its outputs: tests/data/openzfs-2.3/dtrace).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from zfsmon.lab.guest import dtrace, runner
from zfsmon.lab.guest.build import elf_sections
from zfsmon.lab.guest.steps import GuestError

DATA = Path(__file__).resolve().parents[2] / "data" / "dtrace"


def test_linked_libraries_from_real_ldd_output_leave_glibc_out() -> None:
    """``ldd`` of Oracle's dtrace built on Debian 12 (tests/data/dtrace/ldd-dtrace.txt): its own library, the
    binutils and system libraries; glibc, the dynamic linker and the vDSO are the guest's own."""
    libs = dtrace.linked_libraries((DATA / "ldd-dtrace.txt").read_text())
    names = [Path(p).name for p in libs]
    assert names[:4] == ["libdtrace.so.2", "libctf.so.0", "libelf.so.1", "libz.so.1"]
    assert "libpfm.so.4" in names and "libpcap.so.0.8" in names and "libbfd-2.40-system.so" in names
    assert not {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "linux-vdso.so.1"} & set(names)
    assert len(names) == 17 == len(set(names))  # 21 lines: 4 are glibc's, the linker's, the vDSO
    assert libs[0] == "/opt/dtrace/lib64/libdtrace.so.2"


def _prefix(tmp_path: Path) -> Path:
    """An installed prefix's shape, its dtrace a real dynamic executable (so ldd resolves it)."""
    prefix = tmp_path / "opt-dtrace"
    (prefix / "sbin").mkdir(parents=True)
    (prefix / "lib64/dtrace/6.1").mkdir(parents=True)
    shutil.copy2(shutil.which("true") or "/bin/true", prefix / "sbin/dtrace")
    (prefix / "lib64/libdtrace.so.2.0.0").write_bytes(b"")
    (prefix / "lib64/libdtrace.so.2").symlink_to("libdtrace.so.2.0.0")
    (prefix / "lib64/dtrace/6.1/io.d").write_text("/* translators */\n")
    return prefix


def test_check_prefix_refuses_shared_prefixes_and_incomplete_ones(tmp_path: Path) -> None:
    for shared in ("/usr", "/", "/opt"):
        with pytest.raises(GuestError, match="a prefix of its own"):
            dtrace.check_prefix(Path(shared))
    with pytest.raises(GuestError, match="no sbin/dtrace"):
        dtrace.check_prefix(tmp_path)
    prefix = _prefix(tmp_path)
    assert dtrace.check_prefix(prefix) == prefix.resolve()
    (prefix / "lib64/libdtrace.so.2").unlink()
    (prefix / "lib64/libdtrace.so.2.0.0").unlink()
    with pytest.raises(GuestError, match="libdtrace"):
        dtrace.check_prefix(prefix)


def test_share_copies_the_prefix_with_its_links_and_writes_the_guest_set_up(tmp_path: Path) -> None:
    prefix, out = _prefix(tmp_path), tmp_path / "out"
    out.mkdir()
    dtrace.share(prefix, out)
    copy = out / dtrace.SHARE_DIR
    assert (copy / "lib64/libdtrace.so.2").is_symlink()
    assert os.readlink(copy / "lib64/libdtrace.so.2") == "libdtrace.so.2.0.0"
    assert (copy / "lib64/dtrace/6.1/io.d").read_text() == "/* translators */\n"
    assert (copy / dtrace.LIBS_DIR).is_dir()
    assert not [p for p in (copy / dtrace.LIBS_DIR).iterdir() if p.name.startswith(("libc.so", "ld-linux"))]
    assert (out / dtrace.PREFIX_FILE).read_text() == f"{prefix.resolve()}\n"
    assert (out / dtrace.SETUP_SCRIPT).read_text() == dtrace.SETUP_SH
    dtrace.share(prefix, out)  # again: the earlier copy is replaced
    dtrace.unshare(out)
    assert not (out / dtrace.SHARE_DIR).exists() and not (out / dtrace.PREFIX_FILE).exists()
    assert not (out / dtrace.SETUP_SCRIPT).exists()


def test_share_follows_no_link_and_replaces_nothing_it_did_not_write(tmp_path: Path) -> None:
    prefix, out = _prefix(tmp_path), tmp_path / "out"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("mine")
    out.mkdir()
    (out / dtrace.SHARE_DIR).symlink_to(victim)
    with pytest.raises(GuestError, match="refusing"):
        dtrace.share(prefix, out)
    dtrace.unshare(out)
    assert (victim / "keep").read_text() == "mine" and (out / dtrace.SHARE_DIR).is_symlink()


@pytest.mark.parametrize("script", [dtrace.SETUP_SH, runner.RUNNER_SH])
def test_the_guest_scripts_parse(script: str, tmp_path: Path) -> None:
    path = tmp_path / "s.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True).returncode == 0


def test_the_runner_sets_the_d_runtime_up_before_the_module_parameters_and_the_pool() -> None:
    text = runner.RUNNER_SH
    assert text.index("modprobe zfs") < text.index(dtrace.SETUP_SCRIPT) < text.index(runner.PARAMS_FILE)
    assert text.index(dtrace.SETUP_SCRIPT) < text.index(runner.POOL_SCRIPT)


def test_the_set_up_makes_btf_against_the_running_kernel_and_loads_the_module_again() -> None:
    text = dtrace.SETUP_SH
    assert "--btf_base /sys/kernel/btf/vmlinux" in text
    assert text.index("pahole -J") < text.index("strip --strip-debug") < text.index("objcopy --add-section .BTF") \
        < text.index("rmmod zfs") \
        < text.index("insmod")
    assert "/sys/kernel/btf/zfs" in text.split("insmod", 1)[1]  # checked after loading


def test_elf_sections_tell_a_module_with_debug_info_from_a_stripped_one(tmp_path: Path) -> None:
    """What the image build records in its manifest (``zfs_debuginfo``), on real objects made here by gcc."""
    src = tmp_path / "m.c"
    src.write_text("int zfsmon_probe_me(int x) { return x + 1; }\n")
    obj = tmp_path / "m.o"
    subprocess.run(["gcc", "-g", "-c", "-o", str(obj), str(src)], check=True)
    assert {".text", ".debug_info", ".symtab"} <= elf_sections(obj)
    subprocess.run(["strip", "--strip-debug", str(obj)], check=True)
    sections = elf_sections(obj)
    assert ".text" in sections and ".debug_info" not in sections
    (tmp_path / "not-elf").write_text("hello")
    assert elf_sections(tmp_path / "not-elf") == set()
    (tmp_path / "short").write_bytes(b"\x7fELF\x02\x01" + b"\xff" * 70)
    assert elf_sections(tmp_path / "short") == set()
