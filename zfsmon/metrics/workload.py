"""Workload metrics: pgbench's and fio's throughput and latency, and PostgreSQL's pg_stat_database counters.

pgbench values live on ``workload:pgbench`` (one sample per progress line or
log interval) and ``workload:pgbench-run`` (one per run summary); counts
(failed, skipped, ...) are counts within the sample's interval, so they are
gauges. pg_stat_database columns live on ``workload:pgstat:<database>`` and
keep PostgreSQL's names; cumulative columns are counters. fio values live on
``workload:fio:<job>:<direction>`` (one sample per job, direction and JSON
document: the interval since the job's previous document); fio's final report,
the run's result, on ``workload:fio-run:<job>:<direction>`` (one sample per job
and direction: fio's own figures over the whole run, as it printed them).
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_W = (Kind.WORKLOAD,)
_PGB = {"any": "pgbench -P output, --log / --aggregate-interval logs, run summaries"}
_RUN = {"any": "pgbench run summary"}
_PGS = {"any": "pg_stat_database"}


def _pgb(name: str, unit: str, help: str, src=None) -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, help, _W, src or _PGB)


def _pgs(name: str, unit: str, kind: str, help: str) -> MetricSpec:
    return MetricSpec(name, unit, kind, help, _W, {"any": f"pg_stat_database.{name}"})


PGBENCH: List[MetricSpec] = [
    _pgb("tps", "ops/s", "transactions per second over the sample's interval (run summaries: without "
                         "connection time where pgbench reports it)"),
    _pgb("latency_avg_ms", "ms", "average transaction latency"),
    _pgb("latency_stddev_ms", "ms", "standard deviation of transaction latency"),
    _pgb("lag_ms", "ms", "average schedule lag behind the --rate schedule"),
    _pgb("transactions", "count", "transactions completed in the interval"),
    _pgb("failed", "count", "transactions failed in the interval (serialization/deadlock, PostgreSQL 15+)"),
    _pgb("skipped", "count", "transactions skipped in the interval (--rate with --latency-limit)"),
    _pgb("retried", "count", "transactions retried in the interval (--max-tries)"),
    _pgb("retries", "count", "retries in the interval (--max-tries)"),
    _pgb("run", "count", "number of the pgbench run (a loop soak runs pgbench repeatedly)"),
    _pgb("clients", "count", "pgbench clients (-c)", _RUN),
    _pgb("scale", "count", "pgbench scale factor of the database", _RUN),
    _pgb("duration_s", "s", "configured run duration (-T)", _RUN),
]

PGSTAT: List[MetricSpec] = [
    _pgs("numbackends", "count", GAUGE, "backends connected to the database"),
    _pgs("xact_commit", "ops", COUNTER, "transactions committed"),
    _pgs("xact_rollback", "ops", COUNTER, "transactions rolled back"),
    _pgs("blks_read", "ops", COUNTER, "blocks PostgreSQL had to read from the kernel (ZFS): shared_buffers misses"),
    _pgs("blks_hit", "ops", COUNTER, "block reads served by shared_buffers (never reach ZFS)"),
    _pgs("tup_returned", "count", COUNTER, "rows returned by scans"),
    _pgs("tup_fetched", "count", COUNTER, "rows fetched by index scans"),
    _pgs("tup_inserted", "count", COUNTER, "rows inserted"),
    _pgs("tup_updated", "count", COUNTER, "rows updated"),
    _pgs("tup_deleted", "count", COUNTER, "rows deleted"),
    _pgs("conflicts", "count", COUNTER, "queries cancelled by recovery conflicts"),
    _pgs("temp_files", "count", COUNTER, "temporary files created by queries"),
    _pgs("temp_bytes", "B", COUNTER, "bytes written to temporary files"),
    _pgs("deadlocks", "count", COUNTER, "deadlocks detected"),
    _pgs("checksum_failures", "count", COUNTER, "data page checksum failures (PostgreSQL 12+)"),
    _pgs("blk_read_time", "ms", COUNTER, "time spent reading blocks (needs track_io_timing)"),
    _pgs("blk_write_time", "ms", COUNTER, "time spent writing blocks (needs track_io_timing)"),
    _pgs("session_time", "ms", COUNTER, "time spent by sessions (PostgreSQL 14+)"),
    _pgs("active_time", "ms", COUNTER, "time spent executing statements (PostgreSQL 14+)"),
    _pgs("idle_in_transaction_time", "ms", COUNTER, "time spent idle in a transaction (PostgreSQL 14+)"),
    _pgs("sessions", "count", COUNTER, "sessions established (PostgreSQL 14+)"),
    _pgs("sessions_abandoned", "count", COUNTER, "sessions ended by a lost client (PostgreSQL 14+)"),
    _pgs("sessions_fatal", "count", COUNTER, "sessions ended by fatal errors (PostgreSQL 14+)"),
    _pgs("sessions_killed", "count", COUNTER, "sessions killed by an operator (PostgreSQL 14+)"),
]

_FIO = {"any": "fio --output-format=json / json+ (--status-interval streams: differences of documents)"}
_FIOP = {"any": "fio --output-format=json+ histogram bins (json: the first document's printed percentiles; "
                "fio-run: the final report's printed percentiles)"}
_FIOR = {"any": "fio --output-format=json / json+ final report (fio-run entities)"}
#: what the fio metrics' help says of a fio-run entity (the final report)
_RUN_NOTE = "; fio-run: over the whole run, fio's figure"


def _fio(name: str, unit: str, help: str, src=None) -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, help, _W, src or _FIO)


FIO: List[MetricSpec] = [
    _fio("iops", "ops/s", "I/Os per second of the job and direction over the interval (fio's own runtime clock)"
                          + _RUN_NOTE),
    _fio("bw_bytes", "B/s", "bytes per second of the job and direction over the interval" + _RUN_NOTE),
    _fio("ios", "count", "I/Os completed in the interval" + _RUN_NOTE),
    _fio("clat_mean_ms", "ms", "mean completion latency in the interval (submission to completion)" + _RUN_NOTE),
    _fio("lat_mean_ms", "ms", "mean total latency in the interval (submission latency + completion latency)"
                              + _RUN_NOTE),
    _fio("clat_p50_ms", "ms", "median completion latency in the interval" + _RUN_NOTE, _FIOP),
    _fio("clat_p90_ms", "ms", "90th percentile of completion latency in the interval" + _RUN_NOTE, _FIOP),
    _fio("clat_p99_ms", "ms", "99th percentile of completion latency in the interval" + _RUN_NOTE, _FIOP),
    _fio("clat_p999_ms", "ms", "99.9th percentile of completion latency in the interval" + _RUN_NOTE, _FIOP),
    _fio("clat_max_ms", "ms", "largest completion latency in the interval (json+: exact when it set the run's "
                              "max, else its histogram bin's value)" + _RUN_NOTE, _FIOP),
    _fio("iodepth", "count", "the job's iodepth option (I/Os in flight per job with an async engine; 1 if unset)"),
    _fio("numjobs", "count", "the job's numjobs option (clones; with group_reporting one entity for all; 1 if unset)"),
    _fio("io_bytes", "B", "bytes the job direction transferred over the whole run (fio-run)", _FIOR),
    _fio("runtime_s", "s", "the job direction's runtime over the whole run, fio's own clock (fio-run)", _FIOR),
    _fio("error", "count", "the job's error code at the run's end, fio's errno (0: none; fio-run)", _FIOR),
]

SPECS: List[MetricSpec] = PGBENCH + PGSTAT + FIO
