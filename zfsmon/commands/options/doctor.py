"""Report what this host offers zfsmon: one line per source or tool, with a verdict and the reason.

It looks for the platform and ZFS flavour (illumos, FreeBSD, Linux OpenZFS kernel module, zfs-fuse),
asks the local `zpool` which `zpool iostat` flags it accepts, finds the ARC and ZIL kstats
(/proc/spl/kstat/zfs, sysctl kstat.zfs.misc, kstat -p zfs:0:arcstats, /zfs-kstat), and checks
arcstat/zarcstat, fsstat, iostat, dtrace and bpftrace (with privilege), pgbench and psql. The source
lines are the sources' own checks: the reason shown for an absent source is the one `zfsmon record`
gives for skipping it.
"""

from __future__ import annotations

import argparse

NAME = "doctor"
HELP = "what this host offers: sources, tools and tracing, with reasons"
EPILOG = "examples:\n  zfsmon doctor\n  zfsmon doctor --json | jq '.checks[] | select(.ok)'\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
