"""The kstat families zfsmon reads, and where each lives on every platform: one table row per family.

A row says which kstat it is, where Linux, FreeBSD, illumos and zfs-fuse
publish it, the statistics that identify it, how its statistics map onto
entities, and the releases that have it. Everything else is made from the
row: the readers, collectors, doctor's line, the sniffer and the dump reader
(:class:`zfsmon.sources.kstat.reader.KstatReader`), and the per-platform
provenance of the metrics table (:meth:`KstatFamily.where`). Units and
counter/gauge are the metrics table's rows (``zfsmon/metrics/<metrics>.py``),
which this row names.

The model is node_exporter's per-OS path map, made into data that drives the
code. A family is read by presence, never by version: whatever statistics the
kernel has are kept, and the metrics table says what it knows of them; a
statistic it has no row for, or one that comes or goes while a collector runs,
is said once (:mod:`zfsmon.sources.fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

from zfsmon.defaults import FUSE_ARCSTATS_DIR
from zfsmon.metrics.spec import COUNTER, MetricSpec
from zfsmon.model import Kind

LINUX, FREEBSD, ILLUMOS, FUSE = "linux", "freebsd", "illumos", "zfs-fuse"
#: where Linux's SPL publishes the zfs module's kstats: global ones in it, each pool's in ``POOL/``
LINUX_ROOT = "/proc/spl/kstat/zfs"
#: where zfs-fuse serves its kstats (one folder per kstat, one file per statistic), when it serves any
FUSE_ROOT = FUSE_ARCSTATS_DIR.rsplit("/", 1)[0]


@dataclass(frozen=True)
class Split:
    """Statistics named ``prefix*`` go, without the prefix, to a second entity (``l2_*`` -> the ``l2arc``)."""

    prefix: str
    kind: Kind
    name: str


@dataclass(frozen=True)
class Stat:
    """One statistic a row declares: its kernel name, unit, ``counter`` or ``gauge``, and meaning."""

    name: str
    unit: str
    kind: str
    help: str


@dataclass(frozen=True)
class KstatFamily:
    """One named kstat (``zfs:0:NAME``, class ``misc``) on every platform that has it.

    A platform missing from ``places`` has no such kstat; ``absent`` may say
    why (doctor prints it).
    """

    #: the kstat's name, also the source's name and its samples' ``source``
    name: str
    #: what doctor calls its statistics (``no ARC statistics``, ``no known ARC kstats on AIX``)
    label: str
    #: the metrics table family (``zfsmon/metrics/<metrics>.py``) holding its statistics' units and kinds
    metrics: str
    #: the entity its statistics land on
    kind: Kind
    entity: str
    #: where it lives, per platform: Linux the ``/proc/spl/kstat/zfs/NAME`` file, FreeBSD the sysctl tree
    #: ``kstat.zfs.misc.NAME``, illumos ``module:instance:name`` for ``kstat -p``, zfs-fuse the folder of one
    #: file per statistic
    places: Mapping[str, str]
    #: its statistics, for a family whose metrics module is made from the row (:meth:`specs`); empty: all
    #: statistics of the kstat are read, and the metrics module describes them row by row
    stats: Tuple[Stat, ...] = ()
    #: the releases that have it, per platform (documentation, and doctor's hint where it is missing)
    releases: Mapping[str, str] = field(default_factory=dict)
    #: a text is this kstat only if it has one of these statistics (its kernel names)
    required: Tuple[str, ...] = ()
    #: the statistic that says a dump is this kstat (default: each of ``required``)
    marks: Tuple[str, ...] = ()
    #: the statistic doctor asks FreeBSD's sysctl and illumos's kstat for
    probe: str = ""
    #: a string statistic that says a text is another kstat (-> what that is); such a text is refused
    excludes: Mapping[str, str] = field(default_factory=dict)
    #: a prefix the kernel puts on every statistic, dropped on the entity (``zil_commit_count`` -> ``commit_count``)
    drop_prefix: str = ""
    split: Optional[Split] = None
    #: why a platform without the kstat has none (doctor's line there)
    absent: Mapping[str, str] = field(default_factory=dict)

    def place(self, platform: str) -> str:
        """Where it lives on ``platform`` (:data:`LINUX`, ...); empty when the platform has none."""
        return self.places.get(platform, "")

    @property
    def sysctl_prefix(self) -> str:
        """``kstat.zfs.misc.NAME.``: what FreeBSD's sysctl names of its statistics start with."""
        return f"{self.place(FREEBSD)}." if FREEBSD in self.places else ""

    @property
    def marks_or_required(self) -> Tuple[str, ...]:
        return self.marks or self.required

    def where(self, stat: str) -> Dict[str, str]:
        """Where statistic ``stat`` (its kernel name) is read on each platform: the metrics table's ``sources``."""
        return {plat: form.format(place=self.places[plat], stat=stat) for plat, form in _STAT_AT.items()
                if plat in self.places}

    def specs(self) -> List[MetricSpec]:
        """The metrics table's rows of the declared :attr:`stats`, with where each is read."""
        return [MetricSpec(st.name, st.unit, st.kind, st.help, (self.kind,), self.where(st.name)) for st in self.stats]


#: how a statistic is named where it lives, per platform (the metrics table's ``sources``, in this order)
_STAT_AT = {LINUX: "{place} {stat}", ILLUMOS: "kstat -p {place}:{stat}", FREEBSD: "sysctl {place}.{stat}",
            FUSE: "{place}/{stat}"}


ARCSTATS = KstatFamily(
    name="arcstats", label="ARC", metrics="arc", kind=Kind.ARC, entity="arc",
    places={LINUX: f"{LINUX_ROOT}/arcstats", FREEBSD: "kstat.zfs.misc.arcstats", ILLUMOS: "zfs:0:arcstats",
            FUSE: FUSE_ARCSTATS_DIR},
    releases={LINUX: "ZoL 0.6+", FREEBSD: "9+", ILLUMOS: "all", FUSE: "0.7"},
    # zfetchstats and vdev_cache_stats have hits/misses too; only arcstats has c and c_max
    required=("c", "c_max"), marks=("c_max",), probe="hits",
    split=Split("l2_", Kind.L2ARC, "l2arc"),
)

ZIL = KstatFamily(
    name="zil", label="ZIL", metrics="zil", kind=Kind.ZIL, entity="zil",
    places={LINUX: f"{LINUX_ROOT}/zil", FREEBSD: "kstat.zfs.misc.zil", ILLUMOS: "zfs:0:zil"},
    releases={LINUX: "ZoL 0.7+ (13 statistics; 20 from 2.3, 21 from 2.4)", FREEBSD: "OpenZFS 2.0+", ILLUMOS: "all"},
    required=("zil_commit_count", "zil_itx_count"), probe="zil_commit_count",
    # 2.2+ objset kstats have per-dataset zil_* counters too
    excludes={"dataset_name": "a dataset's objset kstat"},
    drop_prefix="zil_",
    absent={FUSE: "zfs-fuse (pool v23) has no ZIL kstat; SLOG activity comes from the log vdev's zpool iostat row"},
)

ZIO_STATS = KstatFamily(
    name="zio_stats", label="zio", metrics="zio", kind=Kind.ZIO, entity="zio",
    places={LINUX: f"{LINUX_ROOT}/zio_stats", FREEBSD: "kstat.zfs.misc.zio_stats"},
    stats=(Stat("total_allocations", "ops", COUNTER, "block allocations (data, metadata and ZIL blocks)"),
           Stat("alloc_class_fallbacks", "ops", COUNTER, "allocations that fell back to another allocation class "
                "(a full special, dedup or log class)"),
           Stat("gang_writes", "ops", COUNTER, "allocations that found no contiguous space and wrote a gang block"),
           Stat("gang_multilevel", "ops", COUNTER, "gang writes made for a gang child: gang blocks within gang "
                "blocks")),
    releases={LINUX: "OpenZFS 2.3.1+", FREEBSD: "OpenZFS 2.3.1+"},
    required=("total_allocations",), marks=("gang_writes",), probe="total_allocations",
    absent={LINUX: "OpenZFS 2.3.1+ has it", ILLUMOS: "illumos ZFS has no zio_stats kstat (OpenZFS 2.3.1+ has it)",
            FUSE: "zfs-fuse (pool v23) has no zio_stats kstat"},
)

#: every family of this table, by name
KSTATS: Mapping[str, KstatFamily] = {f.name: f for f in (ARCSTATS, ZIL, ZIO_STATS)}
