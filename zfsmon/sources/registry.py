"""Which collectors this host gets: the one list `record`, `top` and `exporter` choose their sources from.

Derived from the ``SOURCE`` records of the source modules (:mod:`zfsmon.sources.spec`):
every source with a collector, in the records' order. Each decides from the
probed :class:`~zfsmon.host.Host` whether it can run here and, if not, why;
``zfsmon doctor`` prints the same checks (:func:`source_checks`).

The whole list (:data:`SOURCES`, :data:`NAMES`, :func:`named`) is discovered the first time it is asked for,
which imports every source module; a command that names its sources (`zfsmon iostat`'s device view, `zfsmon
record zpool`) imports only theirs, found through :data:`MODULES`.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.errors import UserError
from zfsmon.host import Check, Host
from zfsmon.model import Kind
from zfsmon.sources.base import Collector
from zfsmon.sources.spec import Source, discover

#: each source's name -> the module that declares its record, in the records' order: where a source lives, so
#: that naming one does not import them all (the records stay the one definition of each source, and a name
#: missing here is still found, by discovering them all; tests/unit/sources/test_source_records.py holds this table
#: equal to what :func:`~zfsmon.sources.spec.discover` finds)
MODULES: Dict[str, str] = {
    "zpool": "zfsmon.sources.zpool.iostat_collector",
    "zpool-influxdb": "zfsmon.sources.zpool.influxdb_collector",
    "latency": "zfsmon.sources.zpool.latency",
    "status": "zfsmon.sources.zpool.health",
    "vdevprops": "zfsmon.sources.zpool.vdev_props",
    "arcstats": "zfsmon.sources.kstat.arcstats",
    "arcstat": "zfsmon.sources.arcstat_tool",
    "zil": "zfsmon.sources.kstat.zil",
    "zio_stats": "zfsmon.sources.kstat.zio_stats",
    "objset": "zfsmon.sources.kstat.objset",
    "iostats": "zfsmon.sources.kstat.pool_iostats",
    "txgs": "zfsmon.sources.kstat.txgs",
    "diskstats": "zfsmon.sources.devices.diskstats",
    "iostat": "zfsmon.sources.devices.illumos_iostat",
    "iostat-x": "zfsmon.sources.devices.sysstat_iostat",
    "fsstat": "zfsmon.sources.devices.fsstat",
    "trace-tools": "zfsmon.sources.trace_tools",
    "pgbench": "zfsmon.sources.pgbench.source",
    "fio": "zfsmon.sources.fio.source",
    "pgstat": "zfsmon.sources.pgbench.pgstat",
}


# declared, not bound: the module's __getattr__ makes them when first asked for
SOURCES: Tuple[Source, ...]
NAMES: Tuple[str, ...]


@functools.cache
def _discovered() -> Tuple[Source, ...]:
    return discover()


def __getattr__(name: str) -> object:
    """``SOURCES``: every source record, in order (parse-only ones included); ``NAMES``: the names `zfsmon record
    SOURCES` accepts. Discovered when first asked for (it imports every source module)."""
    if name == "SOURCES":
        return _discovered()
    if name == "NAMES":
        return tuple(s.name for s in collectable(_discovered()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def collectable(sources: Sequence[Source]) -> Tuple[Source, ...]:
    """The sources that run on a host (they have a collector)."""
    return tuple(s for s in sources if s.collector is not None)


def record(name: str) -> Source:
    """The record of the source ``name`` (a key of :data:`MODULES`), importing its module alone."""
    found = getattr(importlib.import_module(MODULES[name]), "SOURCE", None)
    if not isinstance(found, Source) or found.name != name:
        raise TypeError(f"{MODULES[name]}.SOURCE is not the record of source {name!r} (registry.MODULES is stale)")
    return found


def _of(names: Optional[Sequence[str]]) -> Tuple[Source, ...]:
    """The records of ``names``, in order, importing only their modules; all of them when no names are given or
    one is not in :data:`MODULES` (an unknown name, said with every known one)."""
    if not names or any(n not in MODULES for n in names):
        return _discovered()
    return tuple(sorted((record(n) for n in dict.fromkeys(names)), key=lambda s: (s.order, s.name)))


@functools.cache
def _by_name() -> Dict[str, Source]:
    """A record's ``source`` (a source's name, or a name older recordings carry for it) -> that source's record."""
    return {n: s for s in _discovered() for n in (*s.aliases, s.name)}


def named(source: str) -> Optional[Source]:
    """The source record a sample's or event's ``source`` names; None for what no source module declares (the
    recorder, the clock, a tracing script, the user's marks)."""
    return _by_name().get(source)


def one_name(source: str) -> str:
    """The one name of the source a record's ``source`` names: its record's name (a recording from another zfsmon
    version may carry another of its names), else the name as it is (the recorder, the clock, a tracing script):
    what everything that counts or routes by source keys on."""
    rec = named(source)
    return rec.name if rec is not None else source


def feeding(kinds: Sequence[Kind]) -> Tuple[str, ...]:
    """The names of the sources whose record feeds one of ``kinds``, in the records' order: what routes a source's
    errors to the dashboard's panels, and a sample that names no source to the sources of its kind."""
    return tuple(s.name for s in _discovered() if set(s.feeds) & set(kinds))


def source_checks(host: Host, sources: Optional[Sequence[Source]] = None) -> List[Check]:
    """Doctor's line for each source that has a check, in order, named as `record SOURCES` takes it."""
    return [replace(s.check(host), name=s.name) for s in (_discovered() if sources is None else sources)
            if s.check is not None]


def build_collectors(host: Host, interval: float, pools: Optional[Sequence[str]] = None,
                     names: Optional[Sequence[str]] = None, *, sources: Optional[Sequence[Source]] = None
                     ) -> Tuple[List[Collector], List[str]]:
    """The collectors for `names` (default: every source this host has whose record is ``default``) and why the
    others were skipped (a source that runs only when named is not listed).

    Naming a source that cannot run here is an error (the user asked for it);
    leaving the choice to us skips it with its reason. Named sources import only
    their own modules. ``sources`` replaces the discovered records (tests).
    """
    known = collectable(_of(names) if sources is None else sources)
    unknown = [n for n in (names or ()) if n not in {s.name for s in known}]
    if unknown:
        every = collectable(_discovered() if sources is None else sources)
        raise UserError(f"unknown source {', '.join(unknown)} (known: {', '.join(s.name for s in every)})")
    collectors: List[Collector] = []
    skipped: List[str] = []
    for s in known:
        if (names and s.name not in names) or (not names and not s.default):
            continue
        why = s.unavailable(host)
        if why is not None:
            if names:
                raise UserError(f"source {s.name} is not available here: {why}")
            skipped.append(f"{s.name}: {why}")
            continue
        assert s.collector is not None
        collectors.append(s.collector(host, interval, list(pools or ())))
    return collectors, skipped
