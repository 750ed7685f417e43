"""A D runtime the user already has, carried into the guest (``zfsmon guest run --with-dtrace PREFIX``).

zfsmon ships no DTrace: this copies an installed one (Oracle's DTrace for Linux,
installed under its own prefix, e.g. ``configure --prefix=/opt/dtrace``) into the
output share with the libraries it links that are not glibc's own. In the guest
``guest-dtrace.sh`` puts it back at the same prefix (its translators and BPF
library are found by that path), uses the guest's own copy of each library where
the guest has one, mounts debugfs (DTrace reads tracefs under it), and gives the
zfs module its types: the image keeps the module's debug info
(``/etc/dkms/zfs.conf``), pahole makes BTF from it against the running kernel's,
and the module is loaded again with it, so ``/sys/kernel/btf/zfs`` exists and D
can read ``zio_t``, ``spa_t`` and ``zilog_t`` (docs/tracing.md, "D on kernel
OpenZFS"). The code loaded is the same module, stripped of its debug info.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import List

from zfsmon.lab.guest.steps import GuestError

#: the share's copy of the prefix, the host's prefix path, and the guest-side set-up script
SHARE_DIR = "zfsmon-dtrace"
PREFIX_FILE = "zfsmon-dtrace-prefix"
LIBS_DIR = "zfsmon-libs"
SETUP_SCRIPT = "guest-dtrace.sh"
#: glibc's own libraries: the guest's are used, never the host's
_GLIBC = ("libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "ld-linux", "linux-vdso", "libresolv.so")
#: prefixes a copy must not land on in the guest
_SHARED_PREFIXES = ("/", "/usr", "/usr/local", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/var", "/mnt", "/opt")


def check_prefix(prefix: Path) -> Path:
    """The installed DTrace's prefix, absolute, or a one-line GuestError saying what is missing."""
    prefix = prefix.resolve()
    if str(prefix) in _SHARED_PREFIXES:
        raise GuestError(f"--with-dtrace {prefix}: DTrace must be installed under a prefix of its own "
                         "(e.g. configure --prefix=/opt/dtrace), which is copied into the guest whole")
    for rel in ("sbin/dtrace", "lib64/dtrace"):
        if not (prefix / rel).exists():
            raise GuestError(f"--with-dtrace {prefix}: no {rel} there (the prefix DTrace was installed into)")
    if not any((prefix / "lib64").glob("libdtrace.so*")):
        raise GuestError(f"--with-dtrace {prefix}: no lib64/libdtrace.so*")
    return prefix


def linked_libraries(ldd_output: str) -> List[str]:
    """Paths of the libraries ``ldd`` resolved, glibc's own left out (pure: tested on real ldd output)."""
    out: List[str] = []
    for line in ldd_output.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        path = rest.split(" (", 1)[0].strip() if arrow else ""
        if path.startswith("/") and not any(name.startswith(g) for g in _GLIBC) and path not in out:
            out.append(path)
    return out


def share(prefix: Path, out_dir: Path) -> None:
    """Copy the prefix (links kept as links) and its non-glibc libraries into the output share."""
    prefix = check_prefix(prefix)
    dest = out_dir / SHARE_DIR
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise GuestError(f"{dest} exists and is not a directory zfsmon wrote: refusing to replace it")
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(prefix, dest, symlinks=True)
    libs = dest / LIBS_DIR
    libs.mkdir()
    ldd = subprocess.run(["ldd", str(prefix / "sbin/dtrace")], capture_output=True, text=True,
                         env={"LD_LIBRARY_PATH": str(prefix / "lib64"), "PATH": "/usr/bin:/bin"})
    if ldd.returncode != 0 or "not found" in ldd.stdout:
        raise GuestError(f"{prefix}/sbin/dtrace: its libraries do not all resolve here (ldd: "
                         f"{(ldd.stdout + ldd.stderr).strip().splitlines()[-1:] or ['no output']})")
    for path in linked_libraries(ldd.stdout):
        if not path.startswith(str(prefix) + "/"):
            shutil.copy2(path, libs / Path(path).name)
    (out_dir / PREFIX_FILE).write_text(f"{prefix}\n")
    (out_dir / SETUP_SCRIPT).write_text(SETUP_SH)


def unshare(out_dir: Path) -> None:
    """A run without a D runtime: what an earlier run with one left in the share goes."""
    for name in (PREFIX_FILE, SETUP_SCRIPT):
        (out_dir / name).unlink(missing_ok=True)
    dest = out_dir / SHARE_DIR
    if dest.is_dir() and not dest.is_symlink() and (dest / LIBS_DIR).is_dir():
        shutil.rmtree(dest)


#: run by the guest runner after ``modprobe zfs``, before the boot's parameters and the pool (bash -eu; $OUT set)
SETUP_SH = f"""\
#!/bin/bash
# zfsmon: the host's DTrace at its own prefix, debugfs, and the zfs module loaded again with its BTF
set -eu
say() {{ printf '[guest %6.1fs] %s\\n' "$(cut -d' ' -f1 /proc/uptime)" "$*"; }}
prefix=$(head -n1 "$OUT/{PREFIX_FILE}")
case $prefix in /?*) ;; *) say "dtrace: bad prefix $prefix"; exit 1;; esac
mkdir -p "$(dirname "$prefix")"
rm -rf "$prefix"
cp -a "$OUT/{SHARE_DIR}" "$prefix"
extra=/var/tmp/zfsmon-dtrace-libs
mkdir -p "$extra"
for f in "$prefix/{LIBS_DIR}"/*; do
    [ -e "$f" ] || continue
    n=$(basename "$f")
    if ldconfig -p | grep -q "^[[:space:]]$n "; then :; else cp -a "$f" "$extra/"; say "dtrace: library $n from the host"; fi
done
cat > /usr/local/sbin/dtrace <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$prefix/lib64:$extra exec $prefix/sbin/dtrace "\\$@"
EOF
chmod 755 /usr/local/sbin/dtrace
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
say "dtrace: $(/usr/local/sbin/dtrace -V 2>&1 | head -n1)"
if [ -e /sys/kernel/btf/zfs ]; then
    say "zfs module: BTF already loaded"
    exit 0
fi
mod=$(modinfo -n zfs)
work=/var/tmp/zfsmon-zfs-btf
mkdir -p "$work"
case $mod in
    *.xz) xz -dc "$mod" > "$work/zfs.ko";;
    *.zst) zstd -dcq "$mod" > "$work/zfs.ko";;
    *) cp "$mod" "$work/zfs.ko";;
esac
if ! readelf -S "$work/zfs.ko" | grep -q '\\.debug_info'; then
    say "zfs module $mod has no debug info: no BTF for it (D casts to ZFS types fail)"; exit 1
fi
flags="--btf_gen_floats -j"
hdr=/usr/src/linux-headers-$(uname -r)/scripts/pahole-flags.sh
[ -x "$hdr" ] && flags=$(PAHOLE=pahole "$hdr" 2>/dev/null || echo "$flags")
t=$(cut -d' ' -f1 /proc/uptime)
# detached, then added by binutils' objcopy: pahole adds a .BTF section itself only with llvm-objcopy
pahole -J $flags --btf_base /sys/kernel/btf/vmlinux --btf_encode_detached "$work/zfs.btf" "$work/zfs.ko"
strip --strip-debug "$work/zfs.ko"
objcopy --add-section .BTF="$work/zfs.btf" "$work/zfs.ko"
say "zfs module: BTF made by pahole $(pahole --version) ($flags) in $(awk -v t="$t" '{{printf "%.0f", $1 - t}}' /proc/uptime) s"
opts=$(modprobe -c | awk '$1 == "options" && $2 == "zfs" {{ for (i = 3; i <= NF; i++) printf "%s ", $i }}')
zed=0
if systemctl is-active -q zfs-zed 2>/dev/null; then systemctl stop zfs-zed; zed=1; fi
rmmod zfs
insmod "$work/zfs.ko" $opts
[ "$zed" = 1 ] && systemctl start zfs-zed
if [ ! -e /sys/kernel/btf/zfs ]; then
    say "zfs module loaded again, but the kernel took no BTF from it: $(dmesg | grep -i btf | tail -n1)"; exit 1
fi
say "zfs module loaded again with BTF ($(stat -c %s /sys/kernel/btf/zfs) bytes), options: $opts"
"""
