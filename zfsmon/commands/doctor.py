"""`zfsmon doctor` at work; its manual and options are :mod:`zfsmon.commands.options.doctor`."""

from __future__ import annotations

import argparse
import json

from zfsmon import host as hostmod
from zfsmon.sources import registry


def run(args: argparse.Namespace) -> int:
    h = hostmod.probe()
    h.add(registry.source_checks(h))
    if args.json:
        print(json.dumps(h.to_dict(), indent=2))
        return 0
    print(f"host {h.hostname}: {h.system} {h.release}; ZFS: {h.flavour} {h.zfs_version}".rstrip())
    width = max(len(c.name) for c in h.checks)
    for c in h.checks:
        print(f"  {c.verdict():6s} {c.category:8s} {c.name:{width}s}  {c.detail}")
    return 0
