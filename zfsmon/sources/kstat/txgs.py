"""Transaction-group sync times from the per-pool ``txgs`` kstat (``/proc/spl/kstat/zfs/POOL/txgs``), no tracing.

The kstat is a ring of the last ``zfs_txg_history`` (100 by default) txgs:
number, birth (monotonic ns), state (O open, Q quiescing, W waiting for sync,
S syncing, C committed), dirty/read/written bytes, read/write I/Os and the
times each spent open, quiescing, waiting and syncing (ns).

:class:`TxgCounter` turns successive reads into counters (family ``txg``):
each committed txg is counted once, by its number, however often the ring is
read; one that left the ring between two reads is counted in ``txgs_unseen``;
txg numbers going back (a pool re-created under the same name) start a new
baseline, said in an event. The first read is the baseline (every counter 0),
so the deltas of the next intervals are exactly the txgs committed in them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.metrics.txg import COLUMN_COUNTERS
from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.kstat.pool import ROOT, PoolKstatCollector, check_pool_file, pool_of_file
from zfsmon.sources.spec import Source, TextKind
from zfsmon.units import MAX_DIGITS, plain_ints

NAME = "txgs"
TXG_COLUMNS = ("txg", "birth", "state", "ndirty", "nread", "nwritten", "reads", "writes", "otime", "qtime",
               "wtime", "stime")

_STATE = TXG_COLUMNS.index("state")
_NUMERIC = TXG_COLUMNS[:_STATE] + TXG_COLUMNS[_STATE + 1:]


@dataclass(frozen=True)
class TxgRow:
    """One transaction group of the ``txgs`` history. Times are ns; ``birth`` is the kernel's monotonic clock."""

    txg: int
    birth: int
    state: str  # O open, Q quiescing, W waiting for sync, S syncing, C committed
    values: Mapping[str, int]

    @property
    def done_ns(self) -> int:
        """When its sync ended (monotonic ns): birth plus the times it spent open, quiescing, waiting, syncing."""
        v = self.values
        return self.birth + v["otime"] + v["qtime"] + v["wtime"] + v["stime"]


def parse_txgs(text: str, where: str = "txgs", known: Optional[Dict[str, TxgRow]] = None) -> List[TxgRow]:
    """The ``txgs`` raw kstat: an optional kstat header (ZoL 0.6), the column line, one row per txg.

    ``known``: the rows of the previous read of the same ring, by their line. A committed txg's line stays the same
    from read to read, and a ring read every second holds ~100 of them of which one or two are new: those lines are
    not parsed again. It is left holding this read's rows (so it never grows past the ring)."""
    rows: List[TxgRow] = []
    seen: Dict[str, TxgRow] = {}
    cols: Optional[List[str]] = None
    seen_header = False
    for no, line in enumerate(text.splitlines(), 1):
        if known is not None and cols is not None:  # only a data row is known
            row = known.get(line)
            if row is not None:
                rows.append(row)
                seen[line] = row
                continue
        parts = line.split()
        if not parts:
            continue
        if cols is None:
            if parts[0] == "txg":
                if tuple(parts) != TXG_COLUMNS:
                    raise ParseError(where, no, "unknown txgs columns", line)
                cols = parts
                continue
            if seen_header:
                raise ParseError(where, no, "expected the txgs column line", line)
            kstat_text.parse_header(line, where, no)  # the 0.6-era kstat header; raises on anything else
            seen_header = True
            continue
        if len(parts) != len(cols):
            raise ParseError(where, no, f"{len(cols)} columns but {len(parts)} values", line)
        nums = parts[:_STATE] + parts[_STATE + 1:]
        state = parts[_STATE]
        if plain_ints(nums) and len(state) == 1 and state.isalpha():  # a well-formed row, checked in a few C calls
            fast = dict(zip(_NUMERIC, map(int, nums)))
            rows.append(TxgRow(fast["txg"], fast["birth"], state, fast))
            seen[line] = rows[-1]
            continue
        vals: Dict[str, int] = {}
        for c, p in zip(cols, parts):
            if c == "state":
                if len(p) != 1 or not p.isalpha():
                    raise ParseError(where, no, f"bad txg state {p!r}", line)
                continue
            if not (p.isascii() and p.isdigit()) or len(p) > MAX_DIGITS:
                raise ParseError(where, no, f"{c} is not a number", line)
            vals[c] = int(p)
        rows.append(TxgRow(vals["txg"], vals["birth"], parts[cols.index("state")], vals))
        seen[line] = rows[-1]
    if cols is None:
        raise ParseError(where, None, "no txgs column line")
    if known is not None:
        known.clear()
        known.update(seen)
    return rows


class TxgCounter:
    """One pool's txg counters across reads of its ring (see the module text). Pure: rows in, records out."""

    def __init__(self, pool: str, source: str = NAME) -> None:
        self.pool = pool
        self.source = source
        self.entity = Entity(Kind.POOL, pool, pool)
        self.last: Optional[int] = None  # the newest committed txg counted
        self.counters: Dict[str, float] = {"txgs_synced": 0.0, "txgs_unseen": 0.0,
                                           **{m: 0.0 for m in COLUMN_COUNTERS.values()}}

    def update(self, rows: Sequence[TxgRow], ts: float) -> List[Record]:
        """One read of the ring -> the pool's sample (none until a txg has been committed) and any event."""
        done = sorted((r for r in rows if r.state == "C"), key=lambda r: r.txg)
        if not done:
            return []
        newest = done[-1].txg
        out: List[Record] = []
        if self.last is None or newest < self.last:
            if self.last is not None:
                out.append(Event(ts, EventKind.RESET, f"pool {self.pool}: txg numbers went back from {self.last} to "
                                 f"{newest} (pool re-created or re-imported?); txg counting starts again from here",
                                 source=self.source, entity=self.entity.key))
            self.last = newest
            out.append(Sample(ts, self.entity, {**self.counters, "txg_committed": float(newest)}, source=self.source))
            return out
        fresh = [r for r in done if r.txg > self.last]
        oldest = min(r.txg for r in rows)
        if fresh and oldest > self.last + 1:
            self.counters["txgs_unseen"] += oldest - self.last - 1
        for r in fresh:
            self.counters["txgs_synced"] += 1
            for col, metric in COLUMN_COUNTERS.items():
                self.counters[metric] += r.values[col]
        metrics: Dict[str, float] = {**self.counters, "txg_committed": float(newest)}
        if fresh:
            metrics["txg_sync_max_ns"] = float(max(r.values["stime"] for r in fresh))
        self.last = newest
        out.append(Sample(ts, self.entity, metrics, source=self.source))
        return out


class TxgsCollector(PoolKstatCollector):
    """Reads every pool's ``txgs`` each poll, one :class:`TxgCounter` per pool.

    Its metrics are zfsmon's own sums over the ring's fixed columns (a ring of other columns is refused), and a
    reading without a committed txg has no ``txg_sync_max_ns``: no field watch."""

    watch_fields = False

    def __init__(self, root: str = ROOT, pools: Optional[Sequence[str]] = None, clock: Clock = time.time) -> None:
        self._counters: Dict[str, TxgCounter] = {}
        self._known: Dict[str, Dict[str, TxgRow]] = {}  # per pool: the last read's rows by line
        super().__init__(NAME, "txgs", self._parse_pool, root, pools, clock)

    def _parse_pool(self, text: str, ts: float, pool: str, path: str) -> List[Record]:
        rows = parse_txgs(text, path, self._known.setdefault(pool, {}))
        counter = self._counters.setdefault(pool, TxgCounter(pool, self.name))
        return counter.update(rows, ts)


def parse_text(text: str, source: str, interval: object = None) -> List[Record]:
    """A saved ``txgs`` kstat: one sample per committed txg, at the end of its sync (seconds since boot).

    The oldest committed txg is the baseline; the counters then grow txg by txg. The pool is named after
    the file (``POOL.txgs``).
    """
    pool = pool_of_file(source)
    rows = parse_txgs(text, source)
    counter = TxgCounter(pool, NAME)
    out: List[Record] = []
    for r in sorted((r for r in rows if r.state == "C"), key=lambda r: r.txg):
        out.extend(counter.update([r], r.done_ns / 1e9))
    if not out:
        raise ParseError(source, None, "no committed txg in the history")
    return out


def looks_like(text: str) -> bool:
    for line in text.splitlines()[:3]:
        if line.split()[:3] == ["txg", "birth", "state"]:
            return True
    return False


def check_host(host: Host, root: str = ROOT) -> Check:
    return check_pool_file(NAME, "txgs", host, root, " (the last zfs_txg_history txgs)",
                           "zfs_txg_history=0, or no pool imported")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return TxgsCollector(ROOT, list(pools) or None)


SOURCE = Source(
    name=NAME, help="transaction groups committed and their sync/wait/quiesce times and sizes (Linux POOL/txgs "
    "kstat)", order=54, check=check_host, collector=_collector, family="txg",
    kinds=(TextKind("txgs-kstat", "`/proc/spl/kstat/zfs/POOL/txgs` (pool named after the file: POOL.txgs)",
                    looks_like, parse_text, "cat /proc/spl/kstat/zfs/tank/txgs > tank.txgs"),),
    feeds=(Kind.POOL,),
)
