"""`zfsmon guest` at work; its manual and options are :mod:`zfsmon.commands.options.guest`."""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

from zfsmon.errors import UserError
from zfsmon.lab.guest import boot, build
from zfsmon.lab.guest.runner import PoolLayout
from zfsmon.lab.guest.spec import CACHE_ROOT, RUN_ROOT, ZFS_SUITES, GuestSpec, Image


def _image(spec: GuestSpec) -> Image:
    """The cached image, built first if there is none."""
    img = build.cached(spec)
    if img is None:
        print(f"no cached OpenZFS {spec.zfs} guest image: building it first (about 20 minutes)")
        img = build.build(spec)
    return img


def _boot(args: argparse.Namespace, command: str, keep: bool) -> int:
    spec = GuestSpec(zfs=args.zfs)
    img = _image(spec)
    out = Path(args.out) if args.out else RUN_ROOT / time.strftime("run-%Y%m%dT%H%M%S")
    layout = None if args.no_pool else PoolLayout(slow_data_iops=args.slow_data)
    if layout is None and (args.disks or args.slow_data):
        raise UserError("--disks and --slow-data are about the pool's disks: leave out --no-pool")
    params = [f"zfs_arc_max={args.arc_mb * 1024 * 1024}"] if args.arc_mb else []
    res = boot.run(img, command, out, layout=layout, src=Path(args.src), machine=boot.Machine(args.memory, args.cpus),
                   timeout=args.timeout, keep=keep, disks=Path(args.disks) if args.disks else None,
                   params=params + list(args.zfs_param),
                   dtrace_prefix=Path(args.with_dtrace) if args.with_dtrace else None)
    return res.exit_code


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        build.build(GuestSpec(zfs=args.zfs), force=args.force)
        return 0
    if args.action == "run":
        cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not cmd and not args.keep:
            raise UserError("zfsmon guest run: give a command after -- (or use `zfsmon guest shell`)")
        return _boot(args, " ".join(cmd) if len(cmd) == 1 else shlex.join(cmd), args.keep)
    if args.action == "shell":
        return _boot(args, "true", keep=True)
    if args.action == "clean":
        n = build.clean([GuestSpec(zfs=v).key() for v in ZFS_SUITES])
        print(f"removed {n} stale image(s) from {CACHE_ROOT}")
        return 0
    current = {GuestSpec(zfs=v).key() for v in ZFS_SUITES}
    dirs = sorted(CACHE_ROOT.glob("openzfs-*")) if CACHE_ROOT.is_dir() else []
    if not dirs:
        print(f"no guest images in {CACHE_ROOT} (zfsmon guest build)")
    for d in dirs:
        img = Image(d)
        if not img.complete():
            print(f"{d.name}: incomplete (a build in progress or interrupted)")
            continue
        m = img.manifest()
        pk = m.get("packages", {})
        print(f"{d.name}: {'current' if d.name in current else 'stale (zfsmon guest clean)'}; "
              f"zfs {pk.get('zfs-dkms', '?')}, kernel {m.get('kernel')}, built {m.get('built')} in "
              f"{m.get('build_seconds')} s; {img.root.stat().st_blocks * 512 / 2**30:.1f} GiB on disk")
    return 0

