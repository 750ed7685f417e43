"""Build a guest image from Debian packages only, and keep it in the machine's cache.

Steps: wheels for the guest's Python (pip download, on the host), debootstrap
minbase, the guest's files, the kernel with headers and the tools, then OpenZFS
from its suite (zfs-dkms compiles the module for the guest's kernel: the long
pole, 11-15 minutes under a contended 2-core machine), a venv with the wheels,
and an ext4 image made without loop devices (``mkfs.ext4 -d``). The kernel and
initrd are copied out so QEMU boots them directly. The image is built in
``<key>.build`` and renamed to ``<key>`` only when complete, under a lock.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Set

from zfsmon.lab.guest import inguest
from zfsmon.lab.guest.spec import (
    BASE_PACKAGES,
    CACHE_ROOT,
    KERNEL_PACKAGES,
    ROOT_LABEL,
    SUITE,
    TOOL_PACKAGES,
    WHEELS,
    ZFS_PACKAGES,
    GuestSpec,
    Image,
)
from zfsmon.lab.guest.steps import (
    GuestError,
    Progress,
    chroot_mounts,
    exclusive,
    run_step,
    signals_raise,
    unmount_all,
)

CHROOT_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
              "DEBIAN_FRONTEND": "noninteractive", "HOME": "/root"}
APT = ["apt-get", "-y", "-q", "-o", "Dpkg::Options::=--force-confold", "--no-install-recommends"]


def check_can_build() -> None:
    """Refuse in one line when something the build needs is missing."""
    if sys.platform != "linux":
        raise GuestError("the OpenZFS guest is built on Linux (Debian/Ubuntu) only")
    if os.geteuid() != 0:
        raise GuestError("building the guest image needs root (debootstrap, chroot, mounts): run it with sudo")
    for tool, pkg in (("debootstrap", "debootstrap"), ("mkfs.ext4", "e2fsprogs"), ("chroot", "coreutils")):
        if shutil.which(tool) is None:
            raise GuestError(f"`{tool}` is not installed (apt-get install {pkg}, or sudo bash scripts/install-deps.sh)")
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        raise GuestError(f"pip is missing for {sys.executable} (apt-get install python3-pip): it fetches the wheels")


def debian_mirror() -> str:
    """The Debian archive the host's apt uses (or ZFSMON_DEBIAN_MIRROR): the guest takes its packages from it.

    It is found by a line of the host's ``SUITE`` (bookworm); the same archive serves every guest release.
    """
    env = os.environ.get("ZFSMON_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    candidates: List[str] = []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        with_suite = False
        uris: List[str] = []
        for line in f.read_text(errors="replace").splitlines() + [""]:
            if not line.strip():  # end of a deb822 stanza
                if with_suite:
                    candidates += uris
                with_suite, uris = False, []
            elif line.lower().startswith("suites:") and SUITE in line.split():
                with_suite = True
            elif line.lower().startswith("uris:"):
                uris = line.split()[1:]
    lists = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    for f in lists:
        if f.is_file():
            for m in re.finditer(rf"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+{SUITE}\s", f.read_text(errors="replace"), re.M):
                candidates.append(m.group(1))
    for uri in candidates:
        if "security" not in uri:
            return uri.rstrip("/")
    raise GuestError(f"no Debian {SUITE} archive in the host's apt sources: set ZFSMON_DEBIAN_MIRROR to one")


def sources_list(spec: GuestSpec, mirror: str) -> str:
    lines = [f"deb {mirror} {spec.release} main contrib", f"deb {mirror} {spec.release}-updates main contrib"]
    if spec.zfs_suite != spec.release:
        lines.append(f"deb {mirror} {spec.zfs_suite} main contrib")
    return "\n".join(lines) + "\n"


def _write(rootfs: Path, path: str, text: str, mode: int = 0o644) -> None:
    target = rootfs / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    target.chmod(mode)


def _kernel_release(rootfs: Path) -> str:
    releases = sorted(p.name for p in (rootfs / "lib/modules").iterdir() if (p / "modules.dep").exists()
                      or (p / "kernel").is_dir())
    if len(releases) != 1:
        raise GuestError(f"expected one kernel in the guest, found {releases or 'none'}")
    return releases[0]


def _dpkg_versions(rootfs: Path, packages: List[str]) -> Dict[str, str]:
    cp = subprocess.run(["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package} ${Version}\\n", *packages],
                        capture_output=True, text=True, env=CHROOT_ENV)
    return dict(line.split(" ", 1) for line in cp.stdout.splitlines() if " " in line)


def _image_size_mib(rootfs: Path) -> int:
    used = int(subprocess.run(["du", "-sxm", str(rootfs)], capture_output=True, text=True).stdout.split()[0])
    return int(used * 1.3) + 2048  # room for what a run writes on the root disk (its snapshot overlay)


def elf_sections(path: Path) -> Set[str]:
    """The section names of a 64-bit little-endian ELF file (a kernel module, ``.ko`` or ``.ko.xz``); empty for
    anything else. The build records whether the zfs module kept its debug info (``.debug_info``)."""
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    if data[:6] != b"\x7fELF\x02\x01" or len(data) < 64:
        return set()
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        names_at = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
        out = set()
        for i in range(shnum):
            name_off = struct.unpack_from("<I", data, shoff + i * shentsize)[0]
            end = data.index(b"\0", names_at + name_off)
            out.add(data[names_at + name_off:end].decode("ascii", "replace"))
    except (struct.error, ValueError, OverflowError):
        return set()
    return out


def cached(spec: GuestSpec) -> Optional[Image]:
    img = Image(spec.image_dir())
    return img if img.complete() else None


def build(spec: GuestSpec, log=print, force: bool = False) -> Image:
    """The image for ``spec``: from the cache, or built now (about 20 minutes)."""
    img = cached(spec)
    if img and not force:
        log(f"guest image {spec.key()} is cached: {img.directory}")
        return img
    check_can_build()
    mirror = debian_mirror()
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with signals_raise(), exclusive(CACHE_ROOT / "build.lock", "a guest image build"):
        img = cached(spec)
        if img and not force:
            log(f"guest image {spec.key()} was built meanwhile: {img.directory}")
            return img
        return _build(spec, mirror, Progress(log))


def _build(spec: GuestSpec, mirror: str, progress: Progress) -> Image:
    final = spec.image_dir()
    work = CACHE_ROOT / f"{spec.key()}.build"
    if work.exists():  # what an interrupted build left: its mounts first, then its files
        unmount_all(work)
        shutil.rmtree(work)
    rootfs = work / "rootfs"
    rootfs.mkdir(parents=True)
    logfile = work / "build.log"
    progress.say(f"building guest image {spec.key()} (OpenZFS {spec.zfs} from {spec.zfs_suite}, mirror {mirror}); "
                 f"log: {logfile}")
    try:
        wheels = work / "wheels"
        run_step(progress, "download wheels for the guest's Python", [
            sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
            "--only-binary=:all:", "--python-version", spec.python, "--implementation", "cp",
            "--platform", "manylinux2014_x86_64", "--platform", "any", "-d", str(wheels), *WHEELS], logfile, 600)
        run_step(progress, f"debootstrap {spec.release} minbase", [
            "debootstrap", "--variant=minbase", "--components=main,contrib", f"--include={','.join(BASE_PACKAGES)}",
            spec.release, str(rootfs), mirror], logfile, 1800)
        _write(rootfs, "/etc/apt/sources.list", sources_list(spec, mirror))
        _write(rootfs, "/usr/sbin/policy-rc.d", inguest.POLICY_RC, 0o755)
        for path, text in inguest.files(spec.arc_max_mib).items():
            _write(rootfs, path, text, 0o755 if path in inguest.EXECUTABLE else 0o644)
        shutil.copytree(wheels, rootfs / inguest.WHEELHOUSE.lstrip("/"))
        chroot = ["chroot", str(rootfs)]
        with chroot_mounts(rootfs):
            run_step(progress, "apt-get update", [*chroot, "apt-get", "-q", "update"], logfile, 900, env=CHROOT_ENV)
            run_step(progress, "install kernel, headers and tools", [
                *chroot, *APT, "install", *KERNEL_PACKAGES, *TOOL_PACKAGES], logfile, 3600, env=CHROOT_ENV)
            kver = _kernel_release(rootfs)
            target = [] if spec.zfs_suite == spec.release else ["-t", spec.zfs_suite]
            run_step(progress, f"install OpenZFS {spec.zfs} (zfs-dkms compiles the module for {kver}: the long pole)",
                     [*chroot, *APT, *target, "install", *ZFS_PACKAGES], logfile, 5400, env=CHROOT_ENV)
            run_step(progress, f"dkms autoinstall for {kver} (a no-op when the package did it)",
                     [*chroot, "dkms", "autoinstall", "-k", kver], logfile, 3600, env=CHROOT_ENV)
            mods = list((rootfs / "lib/modules" / kver).rglob("zfs.ko*"))
            if not mods:
                raise GuestError(f"zfs-dkms built no zfs module for {kver}: see {logfile}")
            debuginfo = all(elf_sections(m) >= {".debug_info"} for m in mods)
            run_step(progress, "venv with the wheels (no index)", [
                *chroot, "sh", "-ec", f"python3 -m venv --system-site-packages {inguest.VENV} && "
                f"{inguest.VENV}/bin/pip install -q --no-index --find-links {inguest.WHEELHOUSE} "
                f"{' '.join(WHEELS)} && rm -rf {inguest.WHEELHOUSE}"], logfile, 900, env=CHROOT_ENV)
            run_step(progress, "enable the runner, mask what slows the boot", [
                *chroot, "sh", "-ec", f"systemctl enable {inguest.UNIT} && "
                "systemctl mask postgresql.service prometheus-node-exporter.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer "
                "e2scrub_reap.service fstrim.timer && passwd -d root && apt-get clean && "
                "rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d"], logfile, 300, env=CHROOT_ENV)
            versions = _dpkg_versions(rootfs, [*ZFS_PACKAGES, "linux-image-amd64", "python3", "bpftrace",
                                               "python3-bpfcc", "fio", "postgresql"])
        boot = rootfs / "boot"
        shutil.copy2(boot / f"vmlinuz-{kver}", work / "vmlinuz")
        shutil.copy2(boot / f"initrd.img-{kver}", work / "initrd.img")
        size = _image_size_mib(rootfs)
        run_step(progress, f"ext4 image ({size} MiB, sparse) from the root file system", [
            "mkfs.ext4", "-q", "-F", "-L", ROOT_LABEL, "-d", str(rootfs), str(work / "root.img"), f"{size}M"],
            logfile, 1800)
        manifest = {"key": spec.key(), "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "mirror": mirror,
                    "kernel": kver, "zfs_debuginfo": debuginfo, "packages": versions, "build_seconds": round(progress.elapsed()),
                    "inputs": spec.inputs()}
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        shutil.rmtree(rootfs)
        shutil.rmtree(wheels)
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    except BaseException:
        unmount_all(work)
        progress.say(f"build failed or interrupted; partial work left in {work} (removed by the next build)")
        raise
    progress.say(f"guest image ready: {final} (zfs {versions.get('zfs-dkms', '?')}, kernel {kver})")
    return Image(final)


def clean(keep: List[str], log=print) -> int:
    """Remove cached images whose key is not in ``keep`` (stale after an input changed). Returns how many."""
    n = 0
    if not CACHE_ROOT.is_dir():
        return 0
    with exclusive(CACHE_ROOT / "build.lock", "a guest image build"):
        for d in sorted(CACHE_ROOT.iterdir()):
            if d.is_dir() and d.name not in keep:
                unmount_all(d)
                shutil.rmtree(d)
                log(f"removed {d}")
                n += 1
    return n
