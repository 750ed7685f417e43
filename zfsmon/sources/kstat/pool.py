"""Reading one kstat file of every pool (``/proc/spl/kstat/zfs/POOL/NAME``) each poll, for the per-pool sources.

The ``iostats`` and ``txgs`` sources share it: the pools are the
directories under the kstat root (or the pools asked for), a pool exported
between listing and reading is skipped, a pool asked for but absent and a file
that cannot be read or parsed are error events while the other pools are read.
"""

from __future__ import annotations

import os
import time
from typing import Callable, ClassVar, List, Optional, Sequence, Tuple

from zfsmon.host import Check, Host
from zfsmon.metrics.kstats import LINUX_ROOT
from zfsmon.model import ParseError, Record
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.fields import FieldWatch

ROOT = LINUX_ROOT

#: (text, ts, pool, path) -> records
PoolParse = Callable[[str, float, str, str], List[Record]]


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def pool_of_file(source: str) -> str:
    """The pool a saved per-pool kstat is of: named after the file (``tank.iostats``, ``tank.io``: ``tank``)."""
    return os.path.basename(source).split(".")[0] or "pool"


def pool_dirs(root: str, pools: Optional[Sequence[str]] = None) -> List[str]:
    """The pools (directories) under ``root``, or those of ``pools`` that are there. Raises OSError."""
    names = list(pools) if pools else sorted(os.listdir(root))
    return [n for n in names if os.path.isdir(os.path.join(root, n))]


def pool_states(pools: Optional[Sequence[str]] = None, root: str = ROOT) -> Optional[Tuple[Tuple[str, str], ...]]:
    """Each pool's state as the kernel publishes it (``ROOT/POOL/state``: ONLINE, DEGRADED, SUSPENDED...), or
    None when no pool has such a file: a cheap reading that changes when a pool's health or the set of pools
    does. Raises OSError when the root cannot be listed."""
    out = []
    for pool in pool_dirs(root, pools):
        try:
            out.append((pool, read_text(os.path.join(root, pool, "state")).strip()))
        except FileNotFoundError:
            continue  # exported meanwhile (the reading changes: that is news too)
    return tuple(out) or None


def has_file(fname: str, root: str = ROOT) -> List[str]:
    """The pools under ``root`` whose directory holds ``fname`` (none when the root is missing)."""
    try:
        return [p for p in pool_dirs(root) if os.path.exists(os.path.join(root, p, fname))]
    except OSError:
        return []


def check_pool_file(name: str, fname: str, host: Host, root: str, found: str, missing: str) -> Check:
    """Doctor's line of a source that reads ``ROOT/POOL/fname``: which pools have it, or why none does.

    ``found`` follows the pools' names on an ok line; ``missing`` says (in parentheses) why no pool may have it.
    """
    if host.system != "Linux" or not os.path.isdir(root):
        return Check(name, False, f"no {root} (Linux OpenZFS kernel module only)")
    pools = has_file(fname, root)
    if pools:
        return Check(name, True, f"{root}/POOL/{fname} for {', '.join(pools)}{found}")
    return Check(name, False, f"no pool has {root}/POOL/{fname} ({missing})")


class PoolDirCollector(Collector):
    """A collector of the pools' kstat directories under ``root`` (all of them, or the ``pools`` asked for)."""

    reads_in_poll = True
    #: the statistics zfsmon has no row for, and those that come or go while it runs, are said once
    #: (:class:`~zfsmon.sources.fields.FieldWatch`); off for a source whose readings leave a figure out by design
    watch_fields: ClassVar[bool] = True

    def __init__(self, root: str = ROOT, pools: Optional[Sequence[str]] = None, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.root = root
        self.pools = list(pools) if pools else None
        self._watch: Optional[FieldWatch] = None

    def _watched(self, records: List[Record]) -> List[Record]:
        """A poll's records, and what its :class:`FieldWatch` says of them."""
        if not self.watch_fields:
            return records
        if self._watch is None:  # made at the first poll: the subclass names the collector after this __init__
            self._watch = FieldWatch(self.name)
        return self._watch.watched(records)

    def _listed(self) -> Tuple[Optional[List[str]], List[Record]]:
        """The pools to read now, and an error event for each pool asked for that is not there; None (and the
        error) when the root cannot be listed."""
        try:
            pools = pool_dirs(self.root, self.pools)
        except OSError as exc:
            return None, [self._error(f"{self.name}: cannot list {self.root}: {exc.strerror or exc}")]
        gone = sorted(set(self.pools) - set(pools)) if self.pools is not None else []
        return pools, [self._error(f"{self.name}: pool {p} has no kstats under {self.root}") for p in gone]


class PoolKstatCollector(PoolDirCollector):
    """Reads ``ROOT/POOL/FNAME`` of every pool per poll and hands each text to ``parse``."""

    def __init__(self, name: str, fname: str, parse: PoolParse, root: str = ROOT,
                 pools: Optional[Sequence[str]] = None, clock: Clock = time.time) -> None:
        super().__init__(root, pools, clock)
        self.name = name
        self.fname = fname
        self._parse = parse

    def poll(self) -> List[Record]:
        ts = self.clock()
        pools, out = self._listed()
        if pools is None:
            return out
        errors = len(out)
        for pool in pools:
            path = os.path.join(self.root, pool, self.fname)
            try:
                text = read_text(path)
            except FileNotFoundError:
                continue  # exported meanwhile, or a version without this kstat
            except OSError as exc:
                errors += 1
                out.append(self._error(f"{self.name}: {path}: {exc.strerror or exc}"))
                continue
            try:
                out.extend(self._parse(text, ts, pool, path))
            except ParseError as exc:
                errors += 1
                out.append(self._error(f"{self.name}: {exc}"))
        if not errors:
            self._ok()
        return self._watched(out)
