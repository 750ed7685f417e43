"""The per-pool ``iostats`` kstat (``/proc/spl/kstat/zfs/POOL/iostats``, OpenZFS 2.x on Linux).

Trim counters (2.0+), and from 2.2/2.3 the DMU's reads and writes through the
ARC and around it (Direct I/O): all cumulative counters, kept under the
kernel's names on the pool entity (family ``iostats``), so recordings and
views show them as rates. OpenZFS 2.1 prints 18 statistics, 2.3 prints 26;
both read the same way, a field is named by its presence, never by version.
"""

from __future__ import annotations

from typing import List, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.fields import FieldWatch
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.kstat.pool import ROOT, PoolKstatCollector, check_pool_file, pool_of_file
from zfsmon.sources.spec import Source, TextKind

NAME = "iostats"


def parse_iostats(text: str, ts: float, pool: str, where: str = "iostats", source: str = NAME) -> Sample:
    """One ``iostats`` named kstat -> a pool sample (names kept as the kernel spells them)."""
    table = kstat_text.parse_proc_table(text, where)
    if table.header is not None and table.header.ks_type == 1 and table.rows != table.header.ndata:
        raise ParseError(where, None, f"kstat announces {table.header.ndata} statistics but holds {table.rows}")
    if "arc_read_count" not in table.values and "trim_extents_written" not in table.values:
        raise ParseError(where, None, "not an iostats kstat (no arc_read_count, no trim_extents_written)")
    return Sample(ts, Entity(Kind.POOL, pool, pool), dict(table.values), source=source)


def _parse_file(text: str, ts: float, pool: str, path: str) -> List[Record]:
    return [parse_iostats(text, ts, pool, path)]


def collector(root: str = ROOT, pools: Sequence[str] = ()) -> PoolKstatCollector:
    return PoolKstatCollector(NAME, "iostats", _parse_file, root, list(pools) or None)


def check_host(host: Host, root: str = ROOT) -> Check:
    return check_pool_file(NAME, "iostats", host, root, "", "OpenZFS 2.0+; none imported?")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return collector(ROOT, pools)


def looks_like(text: str) -> bool:
    head = text[:2000]
    return "name" in head and ("trim_extents_written" in head or "arc_read_count" in head)


def parse_text(text: str, source: str, interval: object = None) -> List[Record]:
    """A saved ``cat /proc/spl/kstat/zfs/POOL/iostats``: one sample at time 0 of a pool named after the file (and
    a note naming the statistics zfsmon has no row for, :class:`~zfsmon.sources.fields.FieldWatch`)."""
    return FieldWatch(NAME, source).watched([parse_iostats(text, 0.0, pool_of_file(source), source)])


SOURCE = Source(
    name=NAME, help="per-pool trim, ARC and Direct I/O counters (Linux POOL/iostats kstat, OpenZFS 2.x)", order=52,
    check=check_host, collector=_collector, family="iostats",
    kinds=(TextKind("iostats-kstat", "`/proc/spl/kstat/zfs/POOL/iostats` (pool named after the file: POOL.iostats)",
                    looks_like, parse_text, "cat /proc/spl/kstat/zfs/tank/iostats > tank.iostats"),),
    feeds=(Kind.POOL,),
)
