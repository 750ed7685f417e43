"""`zfsmon lab` at work; its manual and options are :mod:`zfsmon.commands.options.lab`."""

from __future__ import annotations

import argparse

from zfsmon import lab
from zfsmon.lab.config import LabConfig


def run(args: argparse.Namespace) -> int:
    if args.action == "up":
        cfg = LabConfig(pool=args.pool, directory=args.directory, data_mb=args.data_mb, log_mb=args.log_mb,
                        cache_mb=args.cache_mb, arc_mb=args.arc_mb, slow_data_iops=args.slow_data)
        lab.up(cfg)
        return 0
    if args.action == "down":
        lab.down(args.pool)
        return 0
    if args.action == "cold":
        lab.cold_cache(args.pool)
        return 0
    print("\n".join(lab.status_lines()))
    return 0
