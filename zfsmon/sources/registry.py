"""Which collectors this host gets: the one list `record`, `top` and `exporter` choose their sources from.

Derived from the ``SOURCE`` records of the source modules (:mod:`zfsmon.sources.spec`):
every source with a collector, in the records' order. Each decides from the
probed :class:`~zfsmon.host.Host` whether it can run here and, if not, why;
``zfsmon doctor`` prints the same checks (:func:`source_checks`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.errors import UserError
from zfsmon.host import Check, Host
from zfsmon.sources.base import Collector
from zfsmon.sources.spec import Source, discover

#: every source record, in order (parse-only ones included)
SOURCES: Tuple[Source, ...] = discover()


def collectable(sources: Sequence[Source]) -> Tuple[Source, ...]:
    """The sources that run on a host (they have a collector)."""
    return tuple(s for s in sources if s.collector is not None)


#: the names `zfsmon record SOURCES` accepts
NAMES: Tuple[str, ...] = tuple(s.name for s in collectable(SOURCES))

#: a record's ``source`` (a source's name, or a name older recordings carry for it) -> that source's record
_BY_NAME: Dict[str, Source] = {n: s for s in SOURCES for n in (*s.aliases, s.name)}


def named(source: str) -> Optional[Source]:
    """The source record a sample's or event's ``source`` names; None for what no source module declares (the
    recorder, the clock, a tracing script, the user's marks)."""
    return _BY_NAME.get(source)


def source_checks(host: Host, sources: Optional[Sequence[Source]] = None) -> List[Check]:
    """Doctor's line for each source that has a check, in order, named as `record SOURCES` takes it."""
    return [replace(s.check(host), name=s.name) for s in (SOURCES if sources is None else sources)
            if s.check is not None]


def build_collectors(host: Host, interval: float, pools: Optional[Sequence[str]] = None,
                     names: Optional[Sequence[str]] = None, *, sources: Optional[Sequence[Source]] = None
                     ) -> Tuple[List[Collector], List[str]]:
    """The collectors for `names` (default: every source this host has) and why the others were skipped.

    Naming a source that cannot run here is an error (the user asked for it);
    leaving the choice to us skips it with its reason. ``sources`` replaces
    the discovered records (tests).
    """
    known = collectable(SOURCES if sources is None else sources)
    known_names = [s.name for s in known]
    unknown = [n for n in (names or ()) if n not in known_names]
    if unknown:
        raise UserError(f"unknown source {', '.join(unknown)} (known: {', '.join(known_names)})")
    collectors: List[Collector] = []
    skipped: List[str] = []
    for s in known:
        if names and s.name not in names:
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
