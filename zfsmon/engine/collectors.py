"""Which collectors a run samples: the host's sources and tracing scripts, chosen the same way for every command.

`record`, `top` and `exporter` take every source this host has (or the ones
named) plus the tracing scripts asked for; `soak` and `attach` add the host's
ZFS sources to their workload and warn when a source their findings need cannot
run.
"""

from __future__ import annotations

import sys
from typing import List, Optional, Sequence, Tuple

from zfsmon.defaults import LINUX_BACKENDS
from zfsmon.errors import UserError
from zfsmon.host import Host, probe
from zfsmon.names import PGBENCH
from zfsmon.sources.base import Collector
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.pgbench.pgstat import PgStatCollector
from zfsmon.sources.registry import build_collectors
from zfsmon.sources.zpool import iostat_collector as zpool_iostat_collector
from zfsmon.trace import trace_collectors
from zfsmon.trace.bcc_collector import BccCollector

#: sources a soak's findings depend on (their records' names): say so when one of them cannot run
KEY_SOURCES = (zpool_iostat_collector.SOURCE.name, arcstats.SOURCE.name)


def pick_collectors(host: Host, interval: float, pools: Optional[Sequence[str]] = None,
                    names: Optional[Sequence[str]] = None,
                    traces: Sequence[str] = (), backend: Optional[str] = None) -> Tuple[List[Collector], List[str]]:
    """The host's sources (every one it has, or those ``names``), then one per tracing script in ``traces``
    (``backend`` "bcc": all of them in ONE bcc program, one collector), and why the sources left out were
    skipped. An unknown or unavailable source named is a UserError."""
    collectors, skipped = build_collectors(host, interval, list(pools) if pools else None, names or None)
    if backend is not None and backend not in LINUX_BACKENDS:
        raise UserError(f"no tracing backend {backend!r} (Linux has: {', '.join(LINUX_BACKENDS)})")
    if backend == "bcc" and traces:
        return collectors + [BccCollector(list(traces), max(1, int(round(interval))), pools=tuple(pools or ()))], \
            skipped
    return collectors + trace_collectors(list(traces), interval, list(pools or ()), backend), skipped


def zfs_collectors(interval: float, pool: Optional[str] = None) -> Tuple[List[Collector], List[str]]:
    """The host's ZFS (and device) collectors, chosen as ``zfsmon top``/``record`` choose them, and why others
    were skipped; never a workload source (the soak or attach brings its own). ``pool`` narrows zpool iostat."""
    collectors, skipped = pick_collectors(probe(), interval, [pool] if pool else None)
    return [c for c in collectors if c.name not in (PGBENCH, PgStatCollector.name)], skipped


def zfs_collectors_or_warn(interval: float, pool: Optional[str] = None) -> List[Collector]:
    """:func:`zfs_collectors`, telling the user on stderr when a source the findings need cannot run."""
    zfs, skipped = zfs_collectors(interval, pool)
    if not zfs:
        print("zfsmon: warning: no ZFS collector is available here (" + "; ".join(skipped) +
              "); recording the workload only", file=sys.stderr)
    for why in skipped:
        if zfs and why.split(":", 1)[0] in KEY_SOURCES:
            print(f"zfsmon: warning: not recording {why}", file=sys.stderr)
    return zfs
