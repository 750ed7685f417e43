"""pgbench as a source of saved texts: its printed output or its log files, one ``pgbench`` kind for both.

The parsers are :mod:`zfsmon.sources.pgbench.text` (progress lines and run
summaries) and :mod:`zfsmon.sources.pgbench.log` (``--log`` per-transaction
and ``--aggregate-interval`` logs). Live, pgbench is run or followed by the
workload layer (``zfsmon soak``, ``zfsmon attach``), not by a host collector.
Also here: the size of a fresh ``pgbench -i`` database, for the soak's
free-space check.
"""

from __future__ import annotations

from typing import List, Optional

from zfsmon.model import Kind, Record
from zfsmon.sources.pgbench import log as pgbench_log
from zfsmon.sources.pgbench import text as pgbench_text
from zfsmon.sources.pgbench.text import RECORD_SOURCE
from zfsmon.sources.spec import Source, TextKind


def looks_like(text: str) -> bool:
    """pgbench's printed output, or one of its logs."""
    return pgbench_text.looks_like(text) or pgbench_log.log_format(text) is not None


def parse_capture(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """A saved log file (``interval``: its aggregate interval, or the per-transaction buckets) or printed text."""
    if pgbench_log.log_format(text) is not None:
        return list(pgbench_log.parse_log(text, source=RECORD_SOURCE, interval=interval))
    return pgbench_text.parse_text(text, source=RECORD_SOURCE)


SOURCE = Source(
    name=RECORD_SOURCE, help="pgbench's printed progress and run summaries, or its log files", order=90,
    kinds=(TextKind("pgbench", "pgbench progress/summary text or its -l / --aggregate-interval logs", looks_like,
                    parse_capture, "pgbench -P 5 -T 600 bench | tee pgbench.log"),),
    family="workload",
    feeds=(Kind.WORKLOAD,),
)


# --- pgbench -i -------------------------------------------------------------------------------------------------

#: bytes on disk per scale unit right after `pgbench -i` (tables + primary keys), and an empty database;
#: measured with PostgreSQL 15.18 here: pg_database_size() of scale 10 = 164,683,111, empty = 7,634,279.
BYTES_PER_SCALE = 15_700_000
EMPTY_DB_BYTES = 7_600_000
ROWS_PER_SCALE = 100_000


def init_size_estimate(scale: int) -> int:
    """Size in bytes of a fresh pgbench database of ``scale`` (pgbench_accounts dominates: 100,000 rows/scale)."""
    return int(EMPTY_DB_BYTES + scale * BYTES_PER_SCALE)
