"""ARC and L2ARC statistics (``arcstats``) on every platform, as ``arc`` and ``l2arc`` samples.

Four readers, one model:

* Linux: ``/proc/spl/kstat/zfs/arcstats`` (:func:`parse_linux`, :class:`LinuxArcstatsCollector`)
* FreeBSD: ``sysctl -q kstat.zfs.misc.arcstats`` (:func:`parse_freebsd`, :class:`FreeBSDArcstatsCollector`)
* illumos: ``kstat -p zfs:0:arcstats [INTERVAL]`` (:func:`parse_illumos`, :class:`IllumosArcstatsCollector`,
  one persistent child that prints every interval)
* zfs-fuse: ``/zfs-kstat/zfs/arcstats/<stat>`` (:func:`parse_stat_files`, :class:`FuseArcstatsCollector`)

Statistics are mapped by presence, never by version: whatever the kernel
has is exposed (``l2_*`` on the ``l2arc`` entity without the prefix), and
the metrics table says which are counters. Samples carry cumulative values;
rates and hit ratios are :mod:`zfsmon.analysis.arc`'s job.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from zfsmon.defaults import FUSE_ARCSTATS_DIR
from zfsmon.host import Check, Host, run_probe
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources import kstat_text
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.kstat_text import CommandCollector, KstatFileCollector, KstatPBlock, KstatTable
from zfsmon.sources.spec import Source, TextKind

ARC = Entity(Kind.ARC, "arc")
L2ARC = Entity(Kind.L2ARC, "l2arc")

LINUX_PATH = "/proc/spl/kstat/zfs/arcstats"
FUSE_DIR = FUSE_ARCSTATS_DIR
SYSCTL_PREFIX = "kstat.zfs.misc.arcstats."
L2_PREFIX = "l2_"

#: statistics without which a text is not an arcstats at all (zfetchstats also has hits/misses)
_REQUIRED_ANY = ("c", "c_max")


def split(values: Mapping[str, float]) -> Tuple[Dict[str, float], Dict[str, float]]:
    """arcstats -> (ARC metrics, L2ARC metrics with the ``l2_`` prefix dropped)."""
    arc: Dict[str, float] = {}
    l2: Dict[str, float] = {}
    for name, v in values.items():
        if name.startswith(L2_PREFIX) and len(name) > len(L2_PREFIX):
            l2[name[len(L2_PREFIX):]] = v
        else:
            arc[name] = v
    return arc, l2


def to_samples(table: KstatTable, ts: float, source: str, where: str = "") -> List[Sample]:
    """One ``arc`` sample and, when the kernel has any ``l2_*`` statistic, one ``l2arc`` sample."""
    if not any(k in table.values for k in _REQUIRED_ANY):
        raise ParseError(where or source, None, "no ARC statistics (neither c nor c_max)")
    arc, l2 = split(table.values)
    out = [Sample(ts, ARC, arc, source=source)]
    if l2:
        out.append(Sample(ts, L2ARC, l2, source=source))
    return out


# --- pure parsers ---------------------------------------------------------------------------------------

def parse_linux(text: str, ts: float, source: str = "arcstats", where: str = LINUX_PATH) -> List[Sample]:
    """``cat /proc/spl/kstat/zfs/arcstats``."""
    return to_samples(kstat_text.parse_proc_table(text, where), ts, source, where)


def parse_freebsd(text: str, ts: float, source: str = "arcstats", where: str = "sysctl") -> List[Sample]:
    """``sysctl -q kstat.zfs.misc.arcstats`` (other sysctl lines are ignored)."""
    return to_samples(kstat_text.parse_sysctl(text, SYSCTL_PREFIX, where), ts, source, where)


def _illumos_block(block: KstatPBlock, ts: float, source: str, where: str) -> List[Sample]:
    table = block.find("arcstats")
    if table is None:
        return []
    return to_samples(kstat_text.kstat_p_table(table), ts, source, where)


def parse_illumos(text: str, ts: float, source: str = "arcstats", where: str = "kstat -p",
                  interval: Optional[float] = None) -> List[Sample]:
    """``kstat -p zfs:0:arcstats [INTERVAL]`` or a wider ``kstat -p zfs:::`` capture.

    Each interval block becomes one reading. A block stamped by ``-T u`` uses
    that time; otherwise block *i* is at ``ts + i * interval`` (or all at
    ``ts`` when the interval is unknown). A capture cut short still yields the
    statistics it holds.
    """
    out: List[Sample] = []
    for blk, bts in kstat_text.timed_blocks(text, ts, where, interval):
        out.extend(_illumos_block(blk, bts, source, where))
    if not out:
        raise ParseError(where, None, "no zfs:*:arcstats statistics in kstat output")
    return out


def parse_stat_files(files: Mapping[str, str], ts: float, source: str = "arcstats",
                     where: str = FUSE_DIR) -> List[Sample]:
    """zfs-fuse's one-file-per-statistic directory, already read into ``{name: content}``."""
    return to_samples(kstat_text.parse_stat_files(files, where), ts, source, where)


# --- collectors -------------------------------------------------------------------------------------------

def _parsed(parse):
    return lambda text, ts, name, where: list(parse(text, ts, name, where))


def LinuxArcstatsCollector(path: str = LINUX_PATH, clock: Clock = time.time) -> KstatFileCollector:
    """Reads ``/proc/spl/kstat/zfs/arcstats`` each poll."""
    return KstatFileCollector("arcstats", path, _parsed(parse_linux), clock)


def FreeBSDArcstatsCollector(clock: Clock = time.time) -> CommandCollector:
    """Runs ``sysctl -q kstat.zfs.misc.arcstats`` each poll."""
    return CommandCollector("arcstats", ["sysctl", "-q", "kstat.zfs.misc.arcstats"], _parsed(parse_freebsd), clock)


def IllumosArcstatsCollector(interval: float = 1.0, clock: Clock = time.time) -> StreamCollector:
    """One persistent ``kstat -p zfs:0:arcstats INTERVAL``; each printed block is one reading."""
    return kstat_text.kstat_p_collector(
        "arcstats", "zfs:0:arcstats", interval,
        lambda blk, ts: list(_illumos_block(blk, ts, "arcstats", "kstat -p")), clock)


class FuseArcstatsCollector(Collector):
    """Reads zfs-fuse's ``/zfs-kstat/zfs/arcstats/`` directory each poll (:class:`~zfsmon.sources.kstat_text.StatDir`:
    each statistic held, and opened afresh by its inode).

    The directory exists only while zfs-fuse runs with a pool imported; its
    absence is an error event, and polling goes on.
    """

    name = "arcstats"
    reads_in_poll = True

    #: polls between fresh listings of the directory: statistics that appeared, and ones that went (a held one
    #: stays readable until then; one that cannot be opened forces a listing at once)
    RELIST_EVERY = 60

    def __init__(self, directory: str = FUSE_DIR, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.directory = directory
        self._dir = kstat_text.StatDir(directory)
        self._polls = 0

    def _read(self) -> Dict[str, str]:
        self._polls += 1
        try:
            return self._dir.read(relist=self._polls % self.RELIST_EVERY == 0)
        except FileNotFoundError:  # a statistic (or the directory) went away: list again
            return self._dir.read(relist=True)

    def poll(self) -> List[Record]:
        ts = self.clock()
        try:
            files = self._read()
            records: List[Record] = list(parse_stat_files(files, ts, self.name, self.directory))
        except (OSError, ParseError) as exc:
            self._dir.close()  # a restarted daemon is a new mount: list it afresh
            return [self._error(f"{self.name}: {exc}")]
        self._ok()
        return records

    def stop(self) -> None:
        self._dir.close()


def collector_for_host(interval: float = 1.0, fuse_dir: str = FUSE_DIR, linux_path: str = LINUX_PATH,
                       platform: Optional[str] = None) -> Optional[Collector]:
    """The arcstats collector this machine supports, or None when it has no ZFS kstats we can read."""
    plat = platform or sys.platform
    if plat.startswith("linux"):
        if os.path.exists(linux_path):
            return LinuxArcstatsCollector(linux_path)
        if os.path.isdir(fuse_dir):
            return FuseArcstatsCollector(fuse_dir)
        return None
    if plat.startswith("freebsd"):
        return FreeBSDArcstatsCollector()
    if plat.startswith("sunos"):
        return IllumosArcstatsCollector(interval)
    return None


# --- saved dumps (`zfsmon parse` / `zfsmon import`) ----------------------------------------------------------

_ILLUMOS_LINE = re.compile(r"^zfs:\d+:arcstats:\S+\t")


def _head(text: str, n: int) -> List[str]:
    return [ln for ln in text.splitlines()[:n] if ln.strip()]


def looks_like(text: str) -> bool:
    """A Linux kstat dump with ``c_max``, sysctl ``kstat.zfs.misc.arcstats.*`` or ``kstat -p zfs:N:arcstats`` lines."""
    # zfetchstats and vdev_cache_stats have hits/misses too; only arcstats has c_max
    if kstat_text.looks_like_proc(text, "c_max"):
        return True
    head = _head(text, 6)
    return any(ln.startswith(SYSCTL_PREFIX) or _ILLUMOS_LINE.match(ln) for ln in head)


def parse_dumps(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """One or more saved dumps. Linux dumps are timed by their kstat snaptime (seconds since boot, relative;
    :func:`zfsmon.sources.kstat_text.timed_proc_dumps`), others by ``interval`` (1 s if not given)."""
    out: List[Record] = []
    head = _head(text, 6)
    if head and kstat_text.HEADER_RE.match(head[0]):
        return kstat_text.timed_proc_dumps(
            text, source, interval, lambda dump, ts, where: list(parse_linux(dump, ts, source="arcstats", where=where)))
    if any(ln.startswith(SYSCTL_PREFIX) for ln in head):
        for i, dump in enumerate(kstat_text.split_sysctl_dumps(text)):
            out.extend(parse_freebsd(dump, i * (interval or 1.0), source="arcstats", where=f"{source} (dump {i + 1})"))
        return out
    return list(parse_illumos(text, 0.0, source="arcstats", where=source, interval=interval or 1.0))


# --- the source -------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: where this host's ARC kstats are, or why there are none."""
    if host.system == "Linux":
        if os.path.exists(LINUX_PATH):
            return Check("arcstats", True, LINUX_PATH)
        if os.path.isdir(FUSE_DIR):
            return Check("arcstats", True, f"{FUSE_DIR}/ ({len(os.listdir(FUSE_DIR))} files, zfs-fuse)")
        why = ("zfs-fuse kstats appear under /zfs-kstat only if it exists before the daemon starts and a pool exists"
               if shutil.which("zfs-fuse") else f"no {LINUX_PATH}")
        return Check("arcstats", False, why)
    if host.system == "FreeBSD":
        cp = run_probe(["sysctl", "-n", f"{SYSCTL_PREFIX}hits"])
        ok = bool(cp and cp.returncode == 0)
        return Check("arcstats", ok, "sysctl kstat.zfs.misc.arcstats" if ok else "sysctl kstat.zfs.misc.arcstats missing")
    if host.system == "SunOS":
        cp = run_probe(["kstat", "-p", "zfs:0:arcstats:hits"])
        ok = bool(cp and cp.returncode == 0 and cp.stdout.strip())
        return Check("arcstats", ok, "kstat -p zfs:0:arcstats" if ok else "kstat zfs:0:arcstats not readable")
    return Check("arcstats", False, f"no known ARC kstats on {host.system}")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    """After :func:`check_host` found the kstats (if they vanish, the zfs-fuse reader says so as it polls)."""
    return collector_for_host(interval, platform=host.system.lower()) or FuseArcstatsCollector()


SOURCE = Source(
    name="arcstats", help="ARC and L2ARC statistics", order=20, check=check_host, collector=_collector,
    kinds=(TextKind("arcstats", "arcstats dumps: Linux /proc/spl/kstat/zfs/arcstats, FreeBSD sysctl, illumos kstat -p",
                    looks_like, parse_dumps, "while sleep 10; do cat /proc/spl/kstat/zfs/arcstats; done > arc.log"),),
    family="arc",
    feeds=(Kind.ARC, Kind.L2ARC),
)
