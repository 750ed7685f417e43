"""pgbench's log files as workload samples: per-transaction logs (``--log``) and aggregate logs
(``--log --aggregate-interval``).

Pure: lines in, records out. Per-transaction logs hold one line per
transaction, time in µs or ``skipped``/``failed``; they are bucketed here into
per-second samples. Aggregate logs have 6/10/11 columns before PostgreSQL 15,
15 fixed columns since. Several threads' files (``pgbench_log.PID.N``) merge
into one series. The samples continue the progress series of
:mod:`zfsmon.sources.pgbench.text` (``Entity(WORKLOAD, PGBENCH)``, per-interval
values); counts are counts within the sample's interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from zfsmon.model import Entity, Event, EventKind, ParseError, Record, Sample
from zfsmon.sources.child import StreamParser
from zfsmon.sources.pgbench.text import PROGRESS_ENTITY, RECORD_SOURCE
from zfsmon.sources.spec import EPOCH_MIN


@dataclass(frozen=True)
class TxLine:
    """One per-transaction log line. ``latency_us`` is None for skipped/failed transactions."""

    client: int
    tx: int
    latency_us: Optional[float]
    status: str  # "ok" | "skipped" | "failed"
    script: int
    epoch: float  # when the transaction finished (time_epoch + time_us)
    lag_us: Optional[float] = None
    retries: Optional[int] = None


@dataclass(frozen=True)
class AggLine:
    """One aggregate-interval line: totals for ``count`` transactions that finished in the interval."""

    start: float
    count: int
    sum_us: float
    sum2_us: float
    min_us: float
    max_us: float
    sum_lag_us: Optional[float] = None
    sum2_lag_us: Optional[float] = None
    min_lag_us: Optional[float] = None
    max_lag_us: Optional[float] = None
    skipped: Optional[int] = None
    retried: Optional[int] = None
    retries: Optional[int] = None
    serialization_failures: Optional[int] = None
    deadlock_failures: Optional[int] = None

    @property
    def failed(self) -> Optional[int]:
        if self.serialization_failures is None:
            return None
        return self.serialization_failures + (self.deadlock_failures or 0)


def detect_log_format(line: str) -> Optional[str]:
    """'aggregate' | 'transaction' for a pgbench log line, 'text' for anything else, None for a blank line."""
    parts = line.split()
    if not parts:
        return None
    if not all(p.isdigit() or p in ("skipped", "failed") or _is_float(p) for p in parts):
        return "text"
    try:
        first = float(parts[0])
    except ValueError:
        return "text"
    if first >= EPOCH_MIN and len(parts) in (6, 10, 11, 15):
        return "aggregate"
    if 6 <= len(parts) <= 8:
        return "transaction"
    return "text"


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def parse_tx_line(line: str, source: str = RECORD_SOURCE, line_no: Optional[int] = None,
                  extra: Optional[Sequence[str]] = None) -> TxLine:
    """``client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]``.

    A 7th column is the schedule lag (``--rate``) unless ``extra`` says
    ``("retries",)`` (``--max-tries`` without ``--rate``, PostgreSQL 15+):
    the file alone cannot tell.
    """
    parts = line.split()
    if not 6 <= len(parts) <= 8:
        raise ParseError(source, line_no, f"per-transaction log line has {len(parts)} fields, expected 6-8", line)
    try:
        client, tx, t, script, sec, usec = int(parts[0]), int(parts[1]), parts[2], int(parts[3]), int(parts[4]), \
            int(parts[5])
        status = t if t in ("skipped", "failed") else "ok"
        lat = float(int(t)) if status == "ok" else None
        names = list(extra) if extra is not None else (["lag", "retries"][: len(parts) - 6])
        if len(names) != len(parts) - 6:
            raise ParseError(source, line_no, f"expected extra columns {names}", line)
        vals = dict(zip(names, parts[6:]))
        lag = float(vals["lag"]) if "lag" in vals else None
        retries = int(vals["retries"]) if "retries" in vals else None
    except ValueError as exc:
        raise ParseError(source, line_no, f"bad number in per-transaction log ({exc})", line) from exc
    if usec < 0 or usec >= 1_000_000 or (lat is not None and lat < 0):
        raise ParseError(source, line_no, "time out of range in per-transaction log", line)
    return TxLine(client, tx, lat, status, script, sec + usec / 1e6, lag, retries)


def parse_agg_line(line: str, source: str = RECORD_SOURCE, line_no: Optional[int] = None) -> AggLine:
    """Aggregate log line: 6, 10 or 11 columns (PostgreSQL <= 14) or the 15 fixed columns of 15+."""
    parts = line.split()
    n = len(parts)
    if n not in (6, 10, 11, 15):
        raise ParseError(source, line_no, f"aggregate log line has {n} fields, expected 6, 10, 11 or 15", line)
    try:
        start = float(int(parts[0]))
        count = int(parts[1])
        nums = [float(p) for p in parts[2:6]]
        rest = [int(p) for p in parts[6:]]
    except ValueError as exc:
        raise ParseError(source, line_no, f"bad number in aggregate log ({exc})", line) from exc
    if count < 0 or any(v < 0 for v in nums) or any(v < 0 for v in rest):
        raise ParseError(source, line_no, "negative value in aggregate log", line)
    kw: Dict[str, object] = {}
    if n >= 10:
        kw.update(sum_lag_us=float(rest[0]), sum2_lag_us=float(rest[1]), min_lag_us=float(rest[2]),
                  max_lag_us=float(rest[3]))
    if n >= 11:
        kw["skipped"] = rest[4]
    if n == 15:
        kw.update(retried=rest[5], retries=rest[6], serialization_failures=rest[7], deadlock_failures=rest[8])
    return AggLine(start, count, nums[0], nums[1], nums[2], nums[3], **kw)  # type: ignore[arg-type]


@dataclass
class _Bucket:
    """Sums for one interval, merged across threads/clients."""

    count: int = 0
    sum_us: float = 0.0
    sum2_us: float = 0.0
    failed: int = 0
    skipped: int = 0
    retries: int = 0
    retried: int = 0
    sum_lag_us: float = 0.0
    lag_n: int = 0
    has_failed: bool = False
    has_skipped: bool = False
    has_retries: bool = False
    has_lag: bool = False

    def add_agg(self, a: AggLine) -> None:
        self.count += a.count
        self.sum_us += a.sum_us
        self.sum2_us += a.sum2_us
        if a.sum_lag_us is not None:
            self.has_lag = True
            self.sum_lag_us += a.sum_lag_us
            self.lag_n += a.count
        if a.skipped is not None:
            self.has_skipped = True
            self.skipped += a.skipped
        if a.retried is not None:
            self.has_retries = True
            self.retried += a.retried
            self.retries += a.retries or 0
        if a.failed is not None:
            self.has_failed = True
            self.failed += a.failed

    def add_tx(self, t: TxLine) -> None:
        if t.status == "ok" and t.latency_us is not None:
            self.count += 1
            self.sum_us += t.latency_us
            self.sum2_us += t.latency_us * t.latency_us
        elif t.status == "failed":
            self.has_failed = True
            self.failed += 1
        else:
            self.has_skipped = True
            self.skipped += 1
        if t.lag_us is not None:
            self.has_lag = True
            self.sum_lag_us += t.lag_us
            self.lag_n += 1
        if t.retries is not None:
            self.has_retries = True
            self.retries += t.retries
            self.retried += 1 if t.retries > 0 else 0

    def metrics(self, seconds: float) -> Dict[str, float]:
        m: Dict[str, float] = {"tps": self.count / seconds, "transactions": float(self.count)}
        if self.count:
            mean = self.sum_us / self.count
            var = max(0.0, self.sum2_us / self.count - mean * mean)
            m["latency_avg_ms"] = mean / 1000.0
            m["latency_stddev_ms"] = math.sqrt(var) / 1000.0
        if self.has_failed:
            m["failed"] = float(self.failed)
        if self.has_skipped:
            m["skipped"] = float(self.skipped)
        if self.has_retries:
            m["retried"] = float(self.retried)
            m["retries"] = float(self.retries)
        if self.has_lag and self.lag_n:
            m["lag_ms"] = self.sum_lag_us / self.lag_n / 1000.0
        return m


@dataclass
class PgbenchLogParser(StreamParser):
    """Per-transaction or aggregate log lines -> one sample per interval, merged across threads.

    An interval is emitted once a line ``lateness`` intervals newer arrives (the
    other threads' files have caught up by then) or at :meth:`flush`.
    ``interval`` for aggregate logs is the ``--aggregate-interval``; when not
    given it is taken from the smallest step between interval starts (1 s
    until a second interval is seen). Per-transaction logs are bucketed by
    ``interval`` (default 1 s). The sample is stamped at the interval's end.
    """

    source: str = RECORD_SOURCE
    entity: Entity = PROGRESS_ENTITY
    interval: Optional[float] = None
    lateness: int = 2
    tx_extra: Optional[Sequence[str]] = None
    _buckets: Dict[float, _Bucket] = field(default_factory=dict)
    _starts: List[float] = field(default_factory=list)
    _emitted_upto: float = float("-inf")
    _line_no: int = 0
    _late: int = 0
    format: Optional[str] = None

    def _step(self) -> float:
        if self.interval:
            return self.interval
        steps = sorted({b - a for a, b in zip(self._starts, self._starts[1:]) if b > a})
        return steps[0] if steps else 1.0

    def feed(self, line: str, ts: float) -> List[Record]:
        self._line_no += 1
        fmt = detect_log_format(line)
        if fmt is None:
            return []
        if fmt == "text":
            raise ParseError(self.source, self._line_no, "not a pgbench log line", line)
        if self.format is None:
            self.format = fmt
        elif fmt != self.format:
            raise ParseError(self.source, self._line_no, f"{fmt} log line in a {self.format} log", line)
        if fmt == "aggregate":
            a = parse_agg_line(line, self.source, self._line_no)
            key = a.start
            if key not in self._starts and key > self._emitted_upto:
                self._starts.append(key)
                self._starts.sort()
                del self._starts[:-64]
            add = self._bucket(key)
            if add is not None:
                add.add_agg(a)
        else:
            t = parse_tx_line(line, self.source, self._line_no, self.tx_extra)
            step = self.interval or 1.0
            key = math.floor(t.epoch / step) * step
            add = self._bucket(key)
            if add is not None:
                add.add_tx(t)
        return self._emit_ready()

    def _bucket(self, key: float) -> Optional[_Bucket]:
        if key <= self._emitted_upto:
            self._late += 1  # a thread's file lagging by more than `lateness`: counted, not double-emitted
            return None
        return self._buckets.setdefault(key, _Bucket())

    def _emit_ready(self, all_: bool = False) -> List[Record]:
        if not self._buckets:
            return []
        step = self._step()
        newest = max(self._buckets)
        out: List[Record] = []
        for key in sorted(self._buckets):
            if not all_ and key > newest - self.lateness * step:
                break
            b = self._buckets.pop(key)
            self._emitted_upto = max(self._emitted_upto, key)
            out.append(Sample(key + step, self.entity, b.metrics(step), interval=step, source=self.source))
        return out

    def flush(self, ts: float) -> List[Record]:
        out = self._emit_ready(all_=True)
        if self._late:
            out.append(Event(ts, EventKind.INFO, f"{self.source}: {self._late} log lines arrived after their "
                             f"interval was reported and were not counted", source=self.source))
            self._late = 0
        return out


def parse_log(text: str, source: str = RECORD_SOURCE, interval: Optional[float] = None,
              tx_extra: Optional[Sequence[str]] = None) -> List[Sample]:
    """A whole log file (or several concatenated): every interval merged, however the lines are ordered."""
    p = PgbenchLogParser(source=source, interval=interval, tx_extra=tx_extra, lateness=10 ** 9)
    for line in text.splitlines():
        p.feed(line, 0.0)
    return [r for r in p.flush(0.0) if isinstance(r, Sample)]


def log_format(text: str) -> Optional[str]:
    """'aggregate' | 'transaction' when the text's first (up to 5) lines are one kind of pgbench log line, else None."""
    kinds = {detect_log_format(ln) for ln in text.splitlines()[:5] if ln.strip()}
    return kinds.pop() if len(kinds) == 1 and kinds <= {"aggregate", "transaction"} else None
