"""Vdev properties (``zpool get -p all POOL all-vdevs``, OpenZFS 2.2+): what ``zpool status`` does not show.

The listing has one row per vdev and property (``NAME PROPERTY VALUE SOURCE``, aligned with spaces), each
vdev's rows together: ``root-0`` (the pool's root vdev) first, then the tree depth first, the vdevs named as
``zpool status`` names them (``mirror-0``, ``raidz1-0``, a leaf ``virtio-data0``). Cache (L2ARC) and spare
devices are not in it (the kernel keeps no property object for them: module/zfs/vdev.c
``vdev_prop_get_objid``), nor are removed (indirect) vdevs (zpool skips them). Which properties it
keeps, and on which entities, is the metrics table's (:mod:`zfsmon.metrics.vdevprops`): the trim and
initialize error counters, ``size``/``capacity``, ZED's thresholds and the on/off settings, and on OpenZFS 2.4
a RAIDZ/dRAID leaf's ``sit_out`` (the kernel reads around a slow disk) and its vdev's ``autosit``.

Entities are those ``zpool status`` gives, so the dashboard's tree and the exporter's labels merge the two:
``root-0`` is the pool, a vdev whose ``parent`` is the pool a top-level vdev, anything below a leaf. Roles and
parents come from ``zpool status POOL`` (the authority for both; read again when the listing's vdevs change),
else from the listing itself: the ``parent`` property names vdevs as the kernel does (a leaf by its ``path``,
a grouping vdev by type and id: ``raidz-0`` for what zpool prints as ``raidz1-0``; module/zfs/vdev.c
``vdev_name``), and a top-level vdev of a log, special or dedup class carries its class as the user property
``org.zfsonlinux:allocation_bias`` (a log made before allocation classes may not: ``zpool status`` then says).

Cost: ``zpool get`` asks the kernel one property at a time (an ioctl each: about 55 per vdev), so it runs every
:data:`EVERY_S` seconds in its own thread, not every interval.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from zfsmon import metrics
from zfsmon.errors import printable
from zfsmon.host import Check, Host
from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Role, Sample
from zfsmon.sources.base import Clock, Collector, PeriodicCollector
from zfsmon.sources.spec import ParseOptions, Source, TextKind
from zfsmon.sources.zpool.status import Topology, read_topology, run_zpool, status_for, valid_pool_name

__all__ = ["SOURCE", "NAME", "VdevPropsCollector", "PoolProps", "VdevProps", "parse_listing", "entities", "samples",
           "pool_names", "looks_like"]

NAME = "vdevprops"
#: seconds between two readings of every pool (at least: a longer recording interval wins)
EVERY_S = 60.0
#: the first OpenZFS with vdev properties (``zpool get ... POOL VDEV``)
SINCE = (2, 2)
HEADER = ("NAME", "PROPERTY", "VALUE", "SOURCE")
ROOT = "root-0"
#: the user property a top-level vdev of an allocation class carries (VDEV_TOP_ZAP_ALLOCATION_BIAS), and its
#: values (VDEV_ALLOC_BIAS_LOG, _SPECIAL, _DEDUP: include/sys/fs/zfs.h)
BIAS = "org.zfsonlinux:allocation_bias"
BIAS_ROLES: Dict[str, Role] = {"log": Role.LOG, "special": Role.SPECIAL, "dedup": Role.DEDUP}
#: native properties are lower case and underscores; user ones also have digits, ``:``, ``-``, ``.`` (vdevprops.7)
_PROPERTY = re.compile(r"^[a-z0-9_.:][a-z0-9_.:-]*$")
#: zpool's name of a raidz or draid vdev, with its parity (and draid's layout): the kernel's has only type and id
_PARITY = re.compile(r"^(raidz|draid)\d[^-]*-(\d+)$")


@dataclass
class VdevProps:
    """One vdev's rows: property -> (value, line number)."""

    name: str
    props: Dict[str, Tuple[str, int]] = field(default_factory=dict)

    def get(self, prop: str) -> Optional[str]:
        """The value, None for a ``-`` or a property not listed."""
        hit = self.props.get(prop)
        return None if hit is None or hit[0] == "-" else hit[0]

    def kernel_name(self) -> str:
        """How the kernel names this vdev in other vdevs' ``parent`` (module/zfs/vdev.c ``vdev_name``): a leaf
        by its path, a grouping vdev by type and id."""
        path = self.get("path")
        if path is not None:
            return path
        m = _PARITY.match(self.name)
        return f"{m.group(1)}-{m.group(2)}" if m else self.name


@dataclass
class PoolProps:
    """One pool's listing: its vdevs in the listing's order, ``root-0`` first."""

    pool: str
    vdevs: List[VdevProps]


# --- the text ------------------------------------------------------------------------------------------------

def _scripted(line: str) -> bool:
    """A row of ``zpool get -H``: four tab-separated fields, no header (a name may hold spaces there)."""
    return len(line.split("\t")) == 4


def looks_like(text: str) -> bool:
    """The header, then a row of ``root-0`` (``zpool get all POOL`` and ``zfs get all`` have the same header);
    or ``-H``'s tab-separated rows from ``root-0``'s ``capacity`` on (a pool's own ``zpool get -H all`` starts
    with the pool's name)."""
    lines = [ln for ln in text[:2000].splitlines() if ln.strip()][:2]
    if lines and _scripted(lines[0]):
        return lines[0].split("\t")[0] == ROOT
    return len(lines) == 2 and tuple(lines[0].split()) == HEADER and lines[1].split()[:1] == [ROOT]


def parse_listing(text: str, source: str = "zpool get", pool: Optional[str] = None) -> PoolProps:
    """One pool's ``zpool get -p all POOL all-vdevs``; ``pool``: the one asked for (else read from the listing:
    the ``parent`` that names no vdev of it). Raises ParseError, naming the line, for anything else."""
    lines = text.splitlines()
    rows = [(no, ln) for no, ln in enumerate(lines, 1) if ln.strip()]
    scripted = bool(rows) and _scripted(rows[0][1])  # `zpool get -H`: tab-separated, no header
    if not rows or not (scripted or tuple(rows[0][1].split()) == HEADER):
        raise ParseError(source, rows[0][0] if rows else None,
                         "not `zpool get all POOL all-vdevs` output (no NAME PROPERTY VALUE SOURCE header, no "
                         "-H rows)", rows[0][1] if rows else None)
    vdevs: Dict[str, VdevProps] = {}
    for no, line in rows if scripted else rows[1:]:
        tokens = line.split("\t") if scripted else line.split()
        if len(tokens) < 4 or (scripted and len(tokens) != 4):
            raise ParseError(source, no, "a row needs NAME PROPERTY VALUE SOURCE" +
                             (" (tab-separated: zpool get -H)" if scripted else ""), line)
        if scripted:  # the value alone between the tabs: join below takes tokens[2:-1]
            tokens = [tokens[0], tokens[1].strip(), tokens[2], tokens[3]]
        name, prop = tokens[0], tokens[1]
        if not _PROPERTY.match(prop):
            raise ParseError(source, no, f"not a property name: {prop!r}", line)
        if not vdevs and name != ROOT:
            raise ParseError(source, no, f"the listing starts with {name!r}, not {ROOT} (all-vdevs lists it first)",
                             line)
        vdev = vdevs.setdefault(name, VdevProps(name))
        if prop in vdev.props:
            raise ParseError(source, no, f"vdev {printable(name)}: {prop} a second time (one pool's listing per text; a name "
                             "with a space in it cannot be told from its property)", line)
        vdev.props[prop] = (" ".join(tokens[2:-1]), no)
    if not vdevs:
        raise ParseError(source, None, "no vdev in the listing")
    listing = list(vdevs.values())
    return PoolProps(_pool_of(listing, source, pool), listing)


def _pool_of(vdevs: Sequence[VdevProps], source: str, asked: Optional[str]) -> str:
    """The pool: the one parent among the vdevs (root-0 aside) that is no vdev of the listing."""
    known = {v.kernel_name() for v in vdevs[1:]} | {v.name for v in vdevs[1:]}
    outside: Dict[str, int] = {}
    for v in vdevs[1:]:
        parent = v.get("parent")
        if parent is None:
            raise ParseError(source, next(iter(v.props.values()))[1], f"vdev {printable(v.name)}: no parent")
        if parent not in known:
            outside.setdefault(parent, v.props["parent"][1])
    if asked is not None:
        stray = {p: no for p, no in outside.items() if p != asked}
        if stray:
            p, no = next(iter(stray.items()))
            raise ParseError(source, no, f"parent {p!r} is neither the pool {asked} nor a vdev of the listing")
        return asked
    if len(outside) != 1:
        first = next(iter(outside.values()), None)
        raise ParseError(source, first, "cannot tell the pool: " + (
            f"parents {', '.join(printable(p) for p in sorted(outside))} name no vdev of the listing" if outside
            else "no top-level vdev"))
    pool = next(iter(outside))
    if not valid_pool_name(pool):
        raise ParseError(source, outside[pool], f"not a pool name: {pool!r}")
    return pool


# --- entities and samples -----------------------------------------------------------------------------------

def _derived(listing: PoolProps) -> Dict[str, Entity]:
    """Each vdev's entity from the listing alone: kind and parent from ``parent``, the role from the
    allocation bias of its top-level vdev."""
    pool = listing.pool
    by_kernel = {v.kernel_name(): v.name for v in listing.vdevs[1:]}
    parent: Dict[str, str] = {}
    for v in listing.vdevs[1:]:
        said = v.get("parent") or pool
        parent[v.name] = pool if said == pool else by_kernel.get(said, said)
    out: Dict[str, Entity] = {ROOT: Entity(Kind.POOL, pool, pool)}
    bias = {v.name: BIAS_ROLES.get(v.get(BIAS) or "", Role.DATA) for v in listing.vdevs[1:]}
    for v in listing.vdevs[1:]:
        top, seen = v.name, {v.name}
        while parent.get(top, pool) != pool and parent[top] not in seen:  # a loop in hostile input ends
            top = parent[top]
            seen.add(top)
        kind = Kind.VDEV if parent[v.name] == pool else Kind.LEAF
        out[v.name] = Entity(kind, v.name, pool, bias.get(top, Role.DATA), parent[v.name])
    return out


def entities(listing: PoolProps, topology: Optional[Topology] = None) -> Dict[str, Entity]:
    """Each vdev of the listing -> its entity: as ``topology`` (``zpool status``) has it, else as the listing
    says (:func:`_derived`)."""
    out = _derived(listing)
    if topology is None:
        return out
    for name, ent in out.items():
        known = topology.lookup(listing.pool, name) if ent.kind != Kind.POOL else None
        if known is not None:
            out[name] = known
    return out


def _on_off(value: str) -> float:
    if value in ("on", "off"):
        return 1.0 if value == "on" else 0.0
    raise ValueError("on or off")


def _count(value: str) -> float:
    """A uint64 as ``zpool get -p`` prints it."""
    if not (value.isascii() and value.isdigit()) or len(value) > 20 or int(value) >= 1 << 64:
        raise ValueError("a whole number below 2^64 (`zpool get -p` prints exact numbers)")
    return float(value)


def _percent(value: str) -> float:
    return _count(value[:-1] if value.endswith("%") else value)


#: property -> how its value reads; the metric is named as the property and kept on the entity kinds the metrics
#: table gives it (zfsmon/metrics/vdevprops.py)
READERS: Dict[str, Callable[[str], float]] = {
    "size": _count, "capacity": _percent, "trim_errors": _count, "initialize_errors": _count,
    **{p: _count for p in ("checksum_n", "checksum_t", "io_n", "io_t", "slow_io_n", "slow_io_t")},
    **{p: _on_off for p in ("slow_io_events", "failfast", "allocating", "trim_support", "sit_out", "autosit")},
}


def samples(listing: PoolProps, ts: float, topology: Optional[Topology] = None, source: str = NAME,
            where: str = "zpool get") -> List[Sample]:
    """One sample per vdev that has any of the properties kept (``where`` names the text in errors)."""
    ents = entities(listing, topology)
    out: List[Sample] = []
    for v in listing.vdevs:
        ent = ents[v.name]
        m: Dict[str, float] = {}
        for prop, read in READERS.items():
            value = v.get(prop)
            if value is None or metrics.lookup(ent.kind, prop) is None:
                continue
            try:
                m[prop] = read(value)
            except ValueError as exc:
                raise ParseError(where, v.props[prop][1], f"vdev {printable(v.name)}: {prop} is not {exc}: {value!r}") from None
        if m:
            out.append(Sample(ts, ent, m, source=source))
    return out


def pool_names(text: str, source: str = "zpool list -H -o name") -> List[str]:
    """The pools of ``zpool list -H -o name``, one a line."""
    names = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for no, name in enumerate(names, 1):
        if not valid_pool_name(name):
            raise ParseError(source, no, f"not a pool name: {name!r}")
    return names


# --- saved texts -------------------------------------------------------------------------------------------

def parse_text(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """A saved listing: one reading at time 0, roles and parents from the listing."""
    return list(samples(parse_listing(text, source), 0.0, where=source))


def read_capture(text: str, source: str, interval: Optional[float], options: ParseOptions) -> List[Record]:
    """A saved listing, roles and parents from a ``zpool status`` capture of its pool given with it, if any
    (an ``info`` event with a ``note`` says which)."""
    listing = parse_listing(text, source)
    found = status_for(listing.pool, options.beside)
    if found is None:
        return list(samples(listing, 0.0, where=source))
    note = f"pool {listing.pool}: roles and parents from {found[0]}"
    return [Event(0.0, EventKind.INFO, f"{source}: {note}", source=source, data={"note": note}),
            *samples(listing, 0.0, found[1], where=source)]


# --- the collector -----------------------------------------------------------------------------------------

class VdevPropsCollector(PeriodicCollector):
    """``zpool get -p all POOL all-vdevs`` of each pool (every pool ``zpool list`` names, when none are given),
    every ``every`` seconds in its own thread; ``zpool status POOL`` for roles when a pool's vdevs change."""

    name = NAME
    thread_name = "zfsmon-vdevprops"

    def __init__(self, pools: Sequence[str] = (), every: float = EVERY_S, zpool: str = "zpool",
                 clock: Clock = time.time, timeout: float = 60.0, roles_from_status: bool = True) -> None:
        super().__init__(every, clock)
        self.pools = list(pools)
        self.zpool = zpool
        self.timeout = timeout
        self.roles_from_status = roles_from_status
        self.runs = 0
        #: pool -> (its vdevs' names when ``zpool status`` was read, the tree it gave or None)
        self._topologies: Dict[str, Tuple[Tuple[str, ...], Optional[Topology]]] = {}

    def argv(self, pool: str) -> List[str]:
        return [self.zpool, "get", "-H", "-p", "all", pool, "all-vdevs"]  # -H: a name with a space is one field

    def read_once(self) -> List[Record]:
        """Every pool's listing as samples; a failing command or a text it cannot read is an error event (the
        other pools are still read)."""
        self.runs += 1
        out: List[Record] = []
        failed = False
        try:
            pools = self.pools or pool_names(run_zpool([self.zpool, "list", "-H", "-o", "name"], self.timeout))
        except (OSError, ParseError) as exc:
            return [self._error(f"{self.name}: {exc}")]
        for pool in pools:
            argv = self.argv(pool)
            try:
                listing = parse_listing(run_zpool(argv, self.timeout), " ".join(argv), pool)
                ts = self.clock()
                topology, notes = self._topology(listing, ts)
                out.extend(notes)
                out.extend(samples(listing, ts, topology, self.name, " ".join(argv)))
            except (OSError, ParseError) as exc:
                out.append(self._error(f"{self.name}: {exc}"))
                failed = True
        if not failed:
            self._ok()
        return out

    def _topology(self, listing: PoolProps, ts: float) -> Tuple[Optional[Topology], List[Event]]:
        """``zpool status POOL``'s tree, read again only when the listing's vdevs are not those of the last read;
        a failure leaves the roles to the listing, said once in an info event."""
        if not self.roles_from_status:
            return None, []
        names = tuple(v.name for v in listing.vdevs)
        had = self._topologies.get(listing.pool)
        if had is not None and had[0] == names:
            return had[1], []
        try:
            topo: Optional[Topology] = read_topology([listing.pool], self.zpool, self.timeout)
            notes: List[Event] = []
        except (OSError, ParseError) as exc:
            topo = None
            notes = [Event(ts, EventKind.INFO, f"{self.name}: pool {listing.pool}: roles and parents from the vdev "
                           f"properties (zpool status unavailable: {exc})", source=self.name)]
        self._topologies[listing.pool] = (names, topo)
        return topo, notes


# --- the source ------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: the command and its period, or why this host has no vdev properties."""
    if shutil.which("zpool") is None:
        return Check(NAME, False, "no zpool command")
    if host.flavour == "none":
        return Check(NAME, False, "no ZFS on this host")
    v = host.openzfs_version()
    what = f"OpenZFS {'.'.join(str(x) for x in v)}" if v else f"{host.flavour} {host.zfs_version}".strip()
    if not v or v[:2] < SINCE:
        return Check(NAME, False, f"{what} has no vdev properties: its `zpool get` takes no vdev names "
                     "(OpenZFS 2.2+)")
    return Check(NAME, True, f"zpool get -p all POOL all-vdevs every {EVERY_S:g} s ({what})")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return VdevPropsCollector(pools, every=max(EVERY_S, interval))


SOURCE = Source(
    name=NAME, help="vdev properties: trim/initialize errors, size, capacity, ZED thresholds, failfast, allocating, "
    "RAIDZ sit-outs (zpool get all POOL all-vdevs, OpenZFS 2.2+)", order=13, check=check_host,
    collector=_collector, family="vdevprops",
    kinds=(TextKind("zpool-get-vdevs", "`zpool get -p all POOL all-vdevs` (OpenZFS 2.2+; roles from a `zpool "
                    "status` beside it, else from the listing)", looks_like, parse_text,
                    "zpool get -p all tank all-vdevs > vdevs.txt", parse_with=read_capture, options=("beside",)),),
    feeds=(Kind.POOL, Kind.VDEV, Kind.LEAF),
)
