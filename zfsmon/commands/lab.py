"""`zfsmon lab` at work; its manual and options are :mod:`zfsmon.commands.options.lab`."""

from __future__ import annotations

import argparse
import os
from typing import List

from zfsmon import lab
from zfsmon.errors import UserError
from zfsmon.lab.config import Device, LabConfig
from zfsmon.sources.zpool.status import Topology, read_topology, run_zpool


def devices_of(paths: Topology, names: Topology, pool: str) -> List[Device]:
    """The pool's disks by role: what ``cold`` removes and adds back, and what ``lab status`` lists.

    ``paths`` is ``zpool status -P`` (absolute paths), ``names`` plain ``zpool status`` of the same pool (the
    same tree in the same order). A whole disk shows as ``virtio-cache0`` there but as its partition
    ``/dev/disk/by-id/virtio-cache0-part1`` with -P; re-adding the partition would rename the vdev in the
    recording, so the disk is named: the path's directory with the plain name."""
    out = []
    for full, plain in zip(paths.of_pool(pool), names.of_pool(pool)):
        if not full.name.startswith("/") or full.role is None:
            continue
        path = full.name
        if os.path.basename(path) != plain.name and os.path.basename(path).startswith(plain.name + "-part"):
            path = os.path.join(os.path.dirname(path), plain.name)
        parent = plain.parent if plain.parent != pool else ""
        out.append(Device(role=full.role.value, file="", loop=path, parent=parent))
    return out


def _mountpoint(dataset: str) -> str:
    try:
        where = run_zpool(["zfs", "get", "-H", "-o", "value", "mountpoint", dataset], timeout=60).strip()
    except OSError as exc:  # missing, failing or hanging: its own reason
        raise UserError(f"cannot ask zfs for {dataset}'s mountpoint: {exc}") from None
    if not where.startswith("/"):
        raise UserError(f"dataset {dataset} does not exist or is not mounted (create it: zfs create -o "
                        f"recordsize=8k {dataset})")
    return where


def _adopt(pool: str, dataset: str) -> None:
    try:
        paths, names = read_topology(["-P", pool]), read_topology([pool])
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read pool {pool}'s layout: {exc}") from None
    lab.adopt(pool, dataset, _mountpoint(f"{pool}/{dataset}"), devices_of(paths, names, pool))


def run(args: argparse.Namespace) -> int:
    if args.action == "up":
        cfg = LabConfig(pool=args.pool, directory=args.directory, data_mb=args.data_mb, log_mb=args.log_mb,
                        cache_mb=args.cache_mb, arc_mb=args.arc_mb, slow_data_iops=args.slow_data)
        lab.up(cfg)
        return 0
    if args.action == "down":
        lab.down(args.pool)
        return 0
    if args.action == "adopt":
        _adopt(args.pool, args.dataset)
        return 0
    if args.action == "cold":
        lab.cold_cache(args.pool)
        return 0
    print("\n".join(lab.status_lines()))
    return 0
