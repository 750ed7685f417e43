"""Which collectors this host gets: the one list `record`, `top` and `exporter` choose their sources from.

Each source knows how to decide, from the probed :class:`~zfsmon.host.Host`,
whether it can run here and, if not, why (the same reasons `doctor` prints).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple, Union

from zfsmon.errors import UserError
from zfsmon.host import Host
from zfsmon.sources.base import Collector

Made = Union[Collector, str]  # a collector, or the reason there is none


@dataclass(frozen=True)
class SourceDef:
    name: str
    help: str
    make: Callable[[Host, float, Sequence[str]], Made]


def _zpool(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources.zpool_iostat import ZpoolIostatCollector

    chk = host.check("zpool iostat")
    if chk is not None and not chk.ok:
        return chk.detail
    return ZpoolIostatCollector(pools=pools, interval=interval)


def _arcstats(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources import arcstats

    c = arcstats.collector_for_host(interval)
    return c if c is not None else (host.check("arcstats").detail if host.check("arcstats") else "no ARC kstats")


def _zil(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources import zil

    c = zil.collector_for_host(interval)
    return c if c is not None else (host.check("zil").detail if host.check("zil") else "no ZIL kstats")


def _objset(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources import objset

    c = objset.collector_for_host(pools=list(pools) or None)
    return c if c is not None else "no per-dataset kstats (/proc/spl/kstat/zfs/POOL/objset-*) on this host"


def _diskstats(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources.diskstats import DiskstatsCollector

    if not sys.platform.startswith("linux"):
        return "/proc/diskstats is Linux only"
    return DiskstatsCollector()


def _iostat(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources.illumos_iostat import IostatCollector

    if host.system != "SunOS":
        return "illumos iostat -xn is read on illumos/Solaris only (Linux uses /proc/diskstats)"
    return IostatCollector(interval)


def _fsstat(host: Host, interval: float, pools: Sequence[str]) -> Made:
    from zfsmon.sources.fsstat import FsstatCollector

    if not host.has("fsstat"):
        return host.check("fsstat").detail if host.check("fsstat") else "no fsstat"
    return FsstatCollector(("zfs",), interval)


SOURCES: Tuple[SourceDef, ...] = (
    SourceDef("zpool", "per-pool/vdev/leaf I/O with roles (zpool iostat -v, roles from zpool status)", _zpool),
    SourceDef("arcstats", "ARC and L2ARC statistics", _arcstats),
    SourceDef("zil", "ZIL commit and itx statistics", _zil),
    SourceDef("objset", "per-dataset activity (Linux objset kstats, per-pool io/iostats/txgs)", _objset),
    SourceDef("diskstats", "block-device view (/proc/diskstats), for goose eggs", _diskstats),
    SourceDef("iostat", "block-device view (illumos iostat -xn), for goose eggs", _iostat),
    SourceDef("fsstat", "per-filesystem-type operations (illumos fsstat zfs)", _fsstat),
)

NAMES = tuple(s.name for s in SOURCES)


def build_collectors(host: Host, interval: float, pools: Optional[Sequence[str]] = None,
                     names: Optional[Sequence[str]] = None) -> Tuple[List[Collector], List[str]]:
    """The collectors for `names` (default: every source this host has) and why the others were skipped.

    Naming a source that cannot run here is an error (the user asked for it);
    leaving the choice to us skips it with its reason.
    """
    unknown = [n for n in (names or ()) if n not in NAMES]
    if unknown:
        raise UserError(f"unknown source {', '.join(unknown)} (known: {', '.join(NAMES)})")
    chosen = [s for s in SOURCES if not names or s.name in names]
    collectors: List[Collector] = []
    skipped: List[str] = []
    for s in chosen:
        made = s.make(host, interval, list(pools or ()))
        if isinstance(made, str):
            if names:
                raise UserError(f"source {s.name} is not available here: {made}")
            skipped.append(f"{s.name}: {made}")
        else:
            collectors.append(made)
    return collectors, skipped
