"""Run tracing and show latency distributions per vdev (with roles), not just averages.

NAME is one of zfsmon's traces (see --list): vdevlat (per-vdev I/O latency; on Linux the zfs-fuse
script when a zfs-fuse daemon runs, else the block-layer one), blklat, fusevdevlat, arc, zil,
zfsslower, txg. Each prints the zfsmon trace protocol (docs/tracing.md); zfsmon parses it into
per-interval rates and p50/p95/p99/max percentiles, maps devices to vdevs and roles with
`zpool status`, and prints a table per interval and, at the end, a histogram per device and vdev.

Backends (Linux): bpftrace runs the script of bpftrace/ (one trace per run); bcc runs zfsmon's own
BPF program, with SEVERAL traces in one program: NAME may be a comma-separated list
(zfsslower,arc,vdevlat) or `all` (blklat, zfsslower, arc, zil). bcc compiles its program with clang
at start-up (seconds natively, about a minute under emulation) and then prints "bcc ready: N probes
attached ..." (stdout; stderr with --csv). Default: bpftrace when installed, bcc for several traces.

Tracing needs root and dtrace (illumos, FreeBSD), bpftrace or bcc (Linux; `zfsmon doctor` says which
is usable and why not). Ctrl-C stops the tracer cleanly (SIGINT, then SIGTERM, then SIGKILL to its
process group); no probe stays attached.
--from FILE reads a saved output (`bpftrace blklat.bt 1 > FILE`) instead of tracing.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import whole
from zfsmon.defaults import LINUX_BACKENDS

NAME = "trace"
HELP = "run DTrace, bpftrace or bcc tracing: per-vdev latency histograms, ARC, ZIL, txg"
EPILOG = """\
examples:
  zfsmon trace vdevlat                  per-vdev latency every second until Ctrl-C
  zfsmon trace vdevlat 5 --count 12     one minute, 5 s intervals, then the histograms
  zfsmon trace blklat 1 --slow 20       block devices, printing each I/O slower than 20 ms
  zfsmon trace vdevlat --csv > lat.csv  percentiles per interval as CSV
  zfsmon trace --backend bcc zfsslower,arc,vdevlat 5   three traces, one bcc program
  zfsmon trace --backend bcc all 5 --slow 50            every bcc trace, ops slower than 50 ms
  zfsmon trace --from saved.out         read a saved script output instead of tracing
  zfsmon trace --list                   the traces and which backend offers them
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME", help="trace (see --list); with --backend bcc a "
                   "comma-separated list or `all`")
    p.add_argument("interval", nargs="?", type=whole(1, 86400), default=1, metavar="INTERVAL",
                   help="seconds per report (whole number, default 1)")
    p.add_argument("--count", type=whole(1), metavar="N", help="stop after N intervals")
    p.add_argument("--slow", type=whole(0, 3_600_000), default=0, metavar="MS",
                   help="also report each op slower than MS ms")
    p.add_argument("--csv", action="store_true", help="CSV rows (one per entity and op per interval)")
    p.add_argument("--pool", action="append", default=[], metavar="POOL", help="roles from this pool only")
    p.add_argument("--no-histograms", action="store_true", help="skip the closing histograms")
    p.add_argument("--from", dest="from_file", metavar="FILE", help="parse a saved script output")
    p.add_argument("--backend", choices=LINUX_BACKENDS, help="Linux: bpftrace (default when installed), "
                   "bcc (several traces in one program) or dtrace (the D scripts, under a DTrace you have)")
    p.add_argument("--list", action="store_true", help="list the traces, which backend offers them, and exit")
