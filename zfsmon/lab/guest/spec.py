"""What an OpenZFS guest image is made of, and the cache key that names it.

Every input that changes the image is here (Debian suites, package lists, the
pinned wheels, the guest-side files) or in the build module, and all of them go
into the key: change one and the next build makes a new image instead of
reusing a stale one. Debian point releases do not change the key; the image's
manifest records the versions it actually got.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Tuple

from zfsmon.defaults import GUEST_CACHE_ROOT, GUEST_DEFAULT_ZFS, GUEST_RUN_ROOT, GUEST_SUITE, GUEST_ZFS_SUITES

CACHE_ROOT = GUEST_CACHE_ROOT
RUN_ROOT = GUEST_RUN_ROOT
LOCK_DIR = Path(os.environ.get("ZFSMON_RUN_DIR", "/run/zfsmon"))
ROOT_LABEL = "zfsmon-root"
SUITE = GUEST_SUITE

#: packages of the guest's root file system, from its release (``GuestSpec.release``: main + contrib)
BASE_PACKAGES: Tuple[str, ...] = (
    "systemd", "systemd-sysv", "udev", "kmod", "procps", "util-linux", "e2fsprogs", "less",
)
#: the kernel and its headers first: zfs-dkms builds for every kernel under /lib/modules when it is installed
KERNEL_PACKAGES: Tuple[str, ...] = ("linux-image-amd64", "linux-headers-amd64", "dkms", "build-essential")
#: what zfsmon and its tests use in the guest (textual and its dependencies come as wheels: Debian's is 0.1)
TOOL_PACKAGES: Tuple[str, ...] = (
    "python3", "python3-venv", "python3-psutil", "python3-numpy", "python3-psycopg", "python3-prometheus-client",
    "fio", "postgresql", "postgresql-contrib", "bpftrace", "python3-bpfcc", "bpfcc-tools",
    "prometheus-node-exporter",  # bench/bench_peers.py compares zfsmon with its zfs collector
    "tmux",  # `zfsmon top` runs in a terminal of its own there, its screen captured (tests/guest, bench/)
    "dwarves",  # pahole: the zfs module's BTF from its debug info, for a D runtime (zfsmon.lab.guest.dtrace)
)
#: zfs-test carries zinject (injected I/O errors and delays: the slow-leaf and fault captures; Debian installs it
#: nowhere else); zfs-zed is the event daemon a real system runs: it faults a leaf that keeps failing and marks a
#: pulled disk REMOVED, so a fault in the guest ends as it does for users (bench/guest_faults.sh)
ZFS_PACKAGES: Tuple[str, ...] = ("zfs-dkms", "zfsutils-linux", "zfs-zed", "zfs-test")

#: PyPI wheels (pure Python) carried into the guest in a wheelhouse and installed there with --no-index;
#: with TOOL_PACKAGES they cover setup.cfg's install_requires (tests/guest/test_plan.py checks it)
WHEELS: Tuple[str, ...] = (
    "textual==8.2.8", "rich==15.0.0", "markdown-it-py==4.3.0", "mdit-py-plugins==0.7.0", "mdurl==0.1.2",
    "platformdirs==4.14.7", "pygments==2.21.0", "typing_extensions==4.16.0", "linkify-it-py==2.2.0",
    "uc-micro-py==2.0.0", "shtab==1.13.0",
)
#: each guest release's Python: the wheels are downloaded for it
GUEST_PYTHONS: Dict[str, str] = {"bookworm": "3.11", "trixie": "3.13"}

#: OpenZFS version -> the suite its packages come from
ZFS_SUITES = GUEST_ZFS_SUITES
DEFAULT_ZFS = GUEST_DEFAULT_ZFS


@dataclass(frozen=True)
class GuestSpec:
    """One image: an OpenZFS version and everything installed with it."""

    zfs: str = DEFAULT_ZFS
    arc_max_mib: int = 256  # small, so a 1 GiB L2ARC sees traffic

    def __post_init__(self) -> None:
        if self.zfs not in ZFS_SUITES:
            raise ValueError(f"unknown OpenZFS version {self.zfs!r}: one of {', '.join(ZFS_SUITES)}")

    @property
    def zfs_suite(self) -> str:
        return ZFS_SUITES[self.zfs]

    @property
    def release(self) -> str:
        """The Debian release of the root file system: the OpenZFS suite's (``bookworm-backports`` -> bookworm)."""
        return self.zfs_suite.split("-", 1)[0]

    @property
    def python(self) -> str:
        return GUEST_PYTHONS[self.release]

    @property
    def suites(self) -> Tuple[str, ...]:
        return (self.release,) if self.zfs_suite == self.release else (self.release, self.zfs_suite)

    def inputs(self) -> Dict[str, object]:
        """Everything the image depends on, as data (the key hashes it; the manifest keeps it)."""
        here = Path(__file__).resolve().parent
        sources = {name: hashlib.sha256((here / name).read_bytes()).hexdigest()
                   for name in ("spec.py", "build.py", "inguest.py")}
        return {"spec": asdict(self), "suite": self.release, "suites": list(self.suites), "base": list(BASE_PACKAGES),
                "kernel": list(KERNEL_PACKAGES), "tools": list(TOOL_PACKAGES), "zfs_packages": list(ZFS_PACKAGES),
                "wheels": list(WHEELS), "python": self.python, "root_label": ROOT_LABEL, "sources": sources}

    def key(self) -> str:
        blob = json.dumps(self.inputs(), sort_keys=True).encode()
        return f"openzfs-{self.zfs}-{hashlib.sha256(blob).hexdigest()[:12]}"

    def image_dir(self) -> Path:
        return CACHE_ROOT / self.key()


@dataclass(frozen=True)
class Image:
    """A built image in the cache: what QEMU boots."""

    directory: Path

    @property
    def root(self) -> Path:
        return self.directory / "root.img"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def manifest_path(self) -> Path:
        return self.directory / "manifest.json"

    def manifest(self) -> Dict[str, Any]:  # JSON the build wrote
        return json.loads(self.manifest_path.read_text())

    def complete(self) -> bool:
        return all(p.is_file() for p in (self.root, self.kernel, self.initrd, self.manifest_path))
