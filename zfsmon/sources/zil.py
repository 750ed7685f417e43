"""The global ZIL kstat (``zil``): commits and intent-log transactions, as one ``zil`` sample.

* Linux: ``/proc/spl/kstat/zfs/zil`` (:func:`parse_linux`, :class:`LinuxZilCollector`)
* illumos: ``kstat -p zfs:0:zil [INTERVAL]`` (:func:`parse_illumos`, :class:`IllumosZilCollector`)
* FreeBSD: ``sysctl -q kstat.zfs.misc.zil`` (:func:`parse_freebsd`; no captured fixture yet)

Statistic names lose their ``zil_`` prefix on the ``zil`` entity. ZoL 0.7
has 13 statistics, OpenZFS 2.3 has 20; both read the same way. zfs-fuse has
no ZIL kstat. Per-dataset ZIL counters (``objset-*`` kstats, 2.x) belong to
the dataset reader, not here.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence

from zfsmon.host import Check, Host, run_probe
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources import kstat_text
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.kstat_text import CommandCollector, KstatFileCollector, KstatPBlock, KstatTable
from zfsmon.sources.spec import Source, TextKind

ZIL = Entity(Kind.ZIL, "zil")

LINUX_PATH = "/proc/spl/kstat/zfs/zil"
#: zfs-fuse's kstats (the ARC family only: no ZIL kstat)
FUSE_ROOT = "/zfs-kstat/zfs"
SYSCTL_PREFIX = "kstat.zfs.misc.zil."
PREFIX = "zil_"


def rename(values: Mapping[str, float]) -> Dict[str, float]:
    """``zil_commit_count`` -> ``commit_count``; names without the prefix are kept as they are."""
    return {(k[len(PREFIX):] if k.startswith(PREFIX) and len(k) > len(PREFIX) else k): v for k, v in values.items()}


def to_samples(table: KstatTable, ts: float, source: str, where: str) -> List[Sample]:
    if "dataset_name" in table.strings:
        raise ParseError(where, None, f"a dataset's objset kstat ({table.strings['dataset_name']}), not the zil kstat")
    metrics = rename(table.values)
    if "commit_count" not in metrics and "itx_count" not in metrics:
        raise ParseError(where, None, "no ZIL statistics (neither zil_commit_count nor zil_itx_count)")
    return [Sample(ts, ZIL, metrics, source=source)]


def parse_linux(text: str, ts: float, source: str = "zil", where: str = LINUX_PATH) -> List[Sample]:
    return to_samples(kstat_text.parse_proc_table(text, where), ts, source, where)


def parse_freebsd(text: str, ts: float, source: str = "zil", where: str = "sysctl") -> List[Sample]:
    return to_samples(kstat_text.parse_sysctl(text, SYSCTL_PREFIX, where), ts, source, where)


def _illumos_block(block: KstatPBlock, ts: float, source: str, where: str) -> List[Sample]:
    table = block.find("zil")
    if table is None:
        return []
    return to_samples(kstat_text.kstat_p_table(table), ts, source, where)


def parse_illumos(text: str, ts: float, source: str = "zil", where: str = "kstat -p",
                  interval: Optional[float] = None) -> List[Sample]:
    """``kstat -p zfs:0:zil [INTERVAL]``; blocks are timed as in :func:`zfsmon.sources.arcstats.parse_illumos`."""
    out: List[Sample] = []
    for blk, bts in kstat_text.timed_blocks(text, ts, where, interval):
        out.extend(_illumos_block(blk, bts, source, where))
    if not out:
        raise ParseError(where, None, "no zfs:*:zil statistics in kstat output")
    return out


def LinuxZilCollector(path: str = LINUX_PATH, clock: Clock = time.time) -> KstatFileCollector:
    """Reads ``/proc/spl/kstat/zfs/zil`` each poll."""
    return KstatFileCollector("zil", path, lambda t, ts, n, w: list(parse_linux(t, ts, n, w)), clock)


def FreeBSDZilCollector(clock: Clock = time.time) -> CommandCollector:
    """Runs ``sysctl -q kstat.zfs.misc.zil`` each poll."""
    return CommandCollector("zil", ["sysctl", "-q", "kstat.zfs.misc.zil"],
                            lambda t, ts, n, w: list(parse_freebsd(t, ts, n, w)), clock)


def IllumosZilCollector(interval: float = 1.0, clock: Clock = time.time) -> StreamCollector:
    """One persistent ``kstat -p zfs:0:zil INTERVAL``."""
    return kstat_text.kstat_p_collector("zil", "zfs:0:zil", interval,
                                        lambda blk, ts: list(_illumos_block(blk, ts, "zil", "kstat -p")), clock)


def collector_for_host(interval: float = 1.0, linux_path: str = LINUX_PATH,
                       platform: Optional[str] = None) -> Optional[Collector]:
    """The ZIL collector this machine supports; None on zfs-fuse (it has no ZIL kstat) or without ZFS."""
    plat = platform or sys.platform
    if plat.startswith("linux"):
        return LinuxZilCollector(linux_path) if os.path.exists(linux_path) else None
    if plat.startswith("freebsd"):
        return FreeBSDZilCollector()
    if plat.startswith("sunos"):
        return IllumosZilCollector(interval)
    return None


# --- the source ------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: where this host's ZIL kstat is, or why there is none."""
    if host.system == "Linux":
        if os.path.exists(LINUX_PATH):
            return Check("zil", True, LINUX_PATH)
        if os.path.isdir(FUSE_ROOT):
            return Check("zil", False, "zfs-fuse (pool v23) has no ZIL kstat; SLOG activity comes from the log vdev's "
                         "zpool iostat row")
        return Check("zil", False, f"no {LINUX_PATH}")
    if host.system == "SunOS":
        cp = run_probe(["kstat", "-p", "zfs:0:zil"])
        ok = bool(cp and cp.returncode == 0 and cp.stdout.strip())
        return Check("zil", ok, "kstat -p zfs:0:zil" if ok else "kstat zfs:0:zil not present")
    if host.system == "FreeBSD":
        cp = run_probe(["sysctl", "-n", f"{SYSCTL_PREFIX}zil_commit_count"])
        ok = bool(cp and cp.returncode == 0)
        return Check("zil", ok, "sysctl kstat.zfs.misc.zil" if ok else "sysctl kstat.zfs.misc.zil missing")
    return Check("zil", False, f"no known ZIL kstats on {host.system}")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    """After :func:`check_host` found the kstat (if it vanishes, the reader says so as it polls)."""
    return collector_for_host(interval, platform=host.system.lower()) or LinuxZilCollector()


# --- saved dumps (`zfsmon parse` / `zfsmon import`) ----------------------------------------------------------

_ILLUMOS_LINE = re.compile(r"^zfs:\d+:zil:\S+\t")


def looks_like(text: str) -> bool:
    """A Linux ``zil`` kstat dump, sysctl ``kstat.zfs.misc.zil.*`` or ``kstat -p zfs:N:zil`` lines."""
    if kstat_text.looks_like_proc(text, "dataset_name"):
        return False  # an objset kstat: 2.2+ has per-dataset zil_* counters too
    if kstat_text.looks_like_proc(text, "zil_commit_count") or kstat_text.looks_like_proc(text, "zil_itx_count"):
        return True
    head = [ln for ln in text.splitlines()[:6] if ln.strip()]
    return any(ln.startswith(SYSCTL_PREFIX) or _ILLUMOS_LINE.match(ln) for ln in head)


def parse_dumps(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """One or more saved ``zil`` kstat dumps, timed as arcstats dumps are
    (:func:`zfsmon.sources.arcstats.parse_dumps`): Linux by snaptime, the others by ``interval``."""
    head = [ln for ln in text.splitlines()[:6] if ln.strip()]
    if head and kstat_text.HEADER_RE.match(head[0]):
        return kstat_text.timed_proc_dumps(
            text, source, interval, lambda dump, ts, where: list(parse_linux(dump, ts, source="zil", where=where)))
    out: List[Record] = []
    if any(ln.startswith(SYSCTL_PREFIX) for ln in head):
        for i, dump in enumerate(kstat_text.split_sysctl_dumps(text)):
            out.extend(parse_freebsd(dump, i * (interval or 1.0), source="zil", where=f"{source} (dump {i + 1})"))
        return out
    return list(parse_illumos(text, 0.0, source="zil", where=source, interval=interval or 1.0))


SOURCE = Source(name="zil", help="ZIL commit and itx statistics", order=40, check=check_host, collector=_collector,
                kinds=(TextKind("zil-kstat", "zil kstat dumps: Linux /proc/spl/kstat/zfs/zil, FreeBSD sysctl, illumos "
                                "kstat -p", looks_like, parse_dumps,
                                "while sleep 10; do cat /proc/spl/kstat/zfs/zil; done > zil.log"),),
                family="zil", feeds=(Kind.ZIL,))
