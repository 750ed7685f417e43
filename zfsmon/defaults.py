"""Defaults and choices the command line shows whose owners are slow to import.

``zfsmon --help``, ``--version`` and every ``SUBCOMMAND --help`` build their parser from
:mod:`zfsmon.commands.options`, which may import only light modules: the owners of these values (the
sources' registry, the lab, the workloads, tracing, the analyses) pull in psutil, numpy or every parser.
So each value lives here, once, and its owner imports it from here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Tuple

#: where zfs-fuse publishes the ARC's kstats (zfsmon.sources.kstat.arcstats; `zfsmon arcstat --kstat-dir`)
FUSE_ARCSTATS_DIR = "/zfs-kstat/zfs/arcstats"

#: where `zfsmon exporter` listens unless told (zfsmon.commands._serve)
DEFAULT_LISTEN = "127.0.0.1:9134"

#: the formats `zfsmon attach` follows (zfsmon.workload.attach): pgbench's printed output, its --log files, fio's JSON
ATTACH_TEXT, ATTACH_LOG, ATTACH_FIO_JSON = "text", "log", "fio"

#: soak modes (zfsmon.workload.soak): repeated pgbench -T runs with a pause, or one long run with -P
SOAK_LOOP, SOAK_CONTINUOUS = "loop", "continuous"
#: the database of zfsmon's own PostgreSQL cluster on the lab (zfsmon.workload.target)
LAB_DB = "pgbench"
#: the port of that cluster (zfsmon.workload.pgcluster)
LAB_PG_PORT = 55432
#: fio presets (zfsmon.workload.fio): preset -> (fio rw=, extra options); ``<preset>-sweep`` runs it at every depth
FIO_PRESETS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "randread": ("randread", ()),
    "randwrite": ("randwrite", ()),
    "randwrite-fsync": ("randwrite", ("fsync=1",)),  # every write synchronous: the SLOG's work
    "mixed": ("randrw", ("rwmixread=70",)),
}
FIO_SWEEP_SUFFIX = "-sweep"


def fio_preset_names() -> List[str]:
    return [n for base in FIO_PRESETS for n in (base, base + FIO_SWEEP_SUFFIX)]


#: Linux tracing backends (zfsmon.trace.catalog): bpftrace runs the scripts of bpftrace/ (one per run); bcc runs
#: zfsmon's own BPF program (zfsmon.trace.bcc_program), several traces in one program; dtrace runs the D scripts of
#: dtrace/ under a DTrace the user has (Oracle's DTrace for Linux). illumos/FreeBSD: dtrace.
LINUX_BACKENDS = ("bpftrace", "bcc", "dtrace")

#: the lab's pool name (zfsmon.lab.config)
LAB_POOL = "zlab"

#: the QEMU guest (zfsmon.lab.guest): its cached images and its runs' output directories
GUEST_CACHE_ROOT = Path(os.environ.get("ZFSMON_GUEST_CACHE", "/var/cache/zfsmon/guest"))
GUEST_RUN_ROOT = Path(os.environ.get("ZFSMON_GUEST_RUNS", "/var/tmp/zfsmon-guest"))
#: the OpenZFS versions the guest offers: version -> the Debian suite of its packages. The guest's root file
#: system is that suite's release (``trixie-backports`` -> trixie); GUEST_SUITE is the release of 2.1 and 2.3.
GUEST_SUITE = "bookworm"
GUEST_ZFS_SUITES: Dict[str, str] = {"2.1": GUEST_SUITE, "2.3": f"{GUEST_SUITE}-backports", "2.4": "trixie-backports"}
GUEST_DEFAULT_ZFS = "2.3"
#: the source tree this zfsmon runs from (shared read-only into the guest)
SOURCE_TREE = Path(__file__).resolve().parent.parent
