"""PostgreSQL's own cache, from ``pg_stat_database``: the first stop of every read.

A read the database answers from ``shared_buffers`` (``blks_hit``) never
reaches ZFS; only ``blks_read`` does (and may still be served by the ARC, the
L2ARC or the disks). Sampling these counters next to the ZFS sources makes the
whole read path visible. Values are cumulative counters (rates come from
:mod:`zfsmon.analysis.rates`, which also turns ``pg_stat_reset()`` into a reset
event); ``numbackends`` is a level.

The parser (rows -> samples) is pure; :class:`PgStatCollector` owns one
psycopg connection in autocommit mode (each query its own transaction, so
statistics are never a stale snapshot) and reconnects after a failure.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterable, List, Mapping, Optional, Sequence

from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.names import PGSTAT_PREFIX
from zfsmon.redact import redact
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.spec import Source

if TYPE_CHECKING:  # psycopg is optional: imported where a connection is made
    import psycopg
    from psycopg.rows import DictRow

#: the ``source`` of the records
RECORD_SOURCE = "pgstat"

#: counters of pg_stat_database we keep (absent ones are skipped: columns vary by version)
COUNTERS = (
    "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched", "tup_inserted",
    "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks", "checksum_failures",
    "blk_read_time", "blk_write_time", "session_time", "active_time", "idle_in_transaction_time", "sessions",
    "sessions_abandoned", "sessions_fatal", "sessions_killed",
)
GAUGES = ("numbackends",)
COLUMNS = GAUGES + COUNTERS


def entity_for(datname: str) -> Entity:
    """``workload:pgstat:<database>``: one entity per database."""
    return Entity(Kind.WORKLOAD, f"{PGSTAT_PREFIX}{datname}")


def rows_to_samples(rows: Iterable[Mapping[str, object]], ts: float, source: str = RECORD_SOURCE) -> List[Sample]:
    """``SELECT * FROM pg_stat_database`` rows (as dicts) -> one sample per database. Pure."""
    out: List[Sample] = []
    for i, row in enumerate(rows):
        name = row.get("datname")
        if name is None:  # the shared-objects row (datid 0)
            continue
        metrics = {}
        for col in COLUMNS:
            v = row.get(col)
            if v is None:
                continue
            try:
                metrics[col] = float(v)  # type: ignore[arg-type]
            except (TypeError, ValueError) as exc:
                raise ParseError(source, i + 1, f"pg_stat_database.{col} is not a number: {v!r}") from exc
        if metrics:
            out.append(Sample(ts, entity_for(str(name)), metrics, source=source))
    return out


class PgStatCollector(Collector):
    """Samples pg_stat_database for the connected database (or the named ones, or all with ``["*"]``)."""

    name = RECORD_SOURCE
    reconnect_every = 5.0

    def __init__(self, conninfo: str = "", databases: Optional[Sequence[str]] = None, clock: Clock = time.time,
                 connect_timeout: int = 5) -> None:
        super().__init__(clock)
        self.conninfo = conninfo
        self.databases = list(databases) if databases else None
        self.connect_timeout = connect_timeout
        self._conn: Optional[psycopg.Connection[DictRow]] = None
        self._next_try = 0.0

    def _query(self) -> tuple:
        if self.databases is None:
            return "SELECT * FROM pg_stat_database WHERE datname = current_database()", ()
        if self.databases == ["*"]:
            return "SELECT * FROM pg_stat_database WHERE datname IS NOT NULL", ()
        return "SELECT * FROM pg_stat_database WHERE datname = ANY(%s)", (self.databases,)

    def _connect(self) -> psycopg.Connection[DictRow]:
        import psycopg
        from psycopg.rows import dict_row

        return psycopg.connect(self.conninfo, autocommit=True, row_factory=dict_row,
                               connect_timeout=self.connect_timeout, application_name="zfsmon")

    def start(self) -> None:
        pass  # connect lazily in poll(), so a database not up yet is an event, not a crash

    def poll(self) -> List[Record]:
        try:
            import psycopg
        except ImportError:
            return [self._error("pgstat: psycopg is not installed (pip install 'psycopg[binary]')")]
        ts = self.clock()
        if self._conn is None:
            if ts < self._next_try:
                return []
            try:
                self._conn = self._connect()
            except psycopg.Error as exc:
                self._next_try = ts + self.reconnect_every
                return [self._error(f"pgstat: cannot connect: {_one_line(exc)}")]
        try:
            sql, args = self._query()
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                rows = cur.fetchall()
            records: List[Record] = list(rows_to_samples(rows, ts))
        except psycopg.Error as exc:
            self._drop()
            self._next_try = ts + self.reconnect_every
            return [self._error(f"pgstat: query failed: {_one_line(exc)}")]
        except ParseError as exc:
            return [self._error(f"pgstat: {exc}")]
        self._ok()
        return records

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a broken connection must not raise out of poll()
                pass

    def stop(self) -> None:
        self._drop()


def _one_line(exc: BaseException) -> str:
    """The first line of a psycopg error, for an event in the recording: a conninfo it quotes has its
    password hidden."""
    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


# --- the source ------------------------------------------------------------------------------------------------

# Not a host collector: `soak`, `top --soak` and `attach` start it with their PostgreSQL connection.
SOURCE = Source(name=RECORD_SOURCE, help="PostgreSQL's own cache and activity (pg_stat_database), beside a pgbench workload",
                order=100, family="workload", feeds=(Kind.WORKLOAD,))
