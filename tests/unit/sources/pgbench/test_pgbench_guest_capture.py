"""pgbench captured in the OpenZFS 2.3 guest (tests/data/openzfs-2.3/pgbench/, PROVENANCE.md there): zfsmon's
pgbench parsers on PostgreSQL 15.18's real output of a run with a known number of transactions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import TEST_DATA
from zfsmon.sources.pgbench.log import log_format, parse_log
from zfsmon.sources.pgbench.text import parse_progress, parse_summaries

DATA: Path = TEST_DATA / "openzfs-2.3" / "pgbench"
TX = 300  # pgbench -N -c 1 -t 300


def _kstat(name: str) -> dict:
    out = {}
    for line in (DATA / name).read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            out[parts[0]] = int(parts[2])
    return out


def test_summary_of_the_known_run():
    (s,) = parse_summaries((DATA / "pgbench.txt").read_text())
    assert s.version == "15.18 (Debian 15.18-0+deb12u1)"
    assert s.transaction_type == "<builtin: simple update>"
    assert (s.scale, s.clients, s.threads, s.transactions_per_client) == (1, 1, 1, TX)
    assert (s.processed, s.processed_of, s.failed) == (TX, TX, 0)
    assert (s.latency_avg_ms, s.latency_stddev_ms, s.initial_connection_ms) == (16.983, 4.590, 46.480)
    assert s.tps == pytest.approx(58.186140)


def test_progress_line_with_timestamp():
    lines = (DATA / "pgbench-progress.txt").read_text().splitlines()
    progress = [p for p in (parse_progress(ln) for ln in lines) if p is not None]
    assert len(progress) == 1 and lines[0] == "starting vacuum...end."
    p = progress[0]
    assert p.is_timestamp and p.t == 1795475571.115
    assert (p.tps, p.latency_avg_ms, p.latency_stddev_ms, p.failed) == (58.0, 16.797, 4.154, 0)


def test_per_transaction_log_is_every_transaction_with_pgbench_s_average():
    text = (DATA / "pgbench_log.1156").read_text()
    assert log_format(text) == "transaction" and len(text.splitlines()) == TX
    samples = parse_log(text)
    assert [s.ts for s in samples] == sorted(s.ts for s in samples) and len(samples) == 6  # 5.2 s, per second
    n = sum(s.metrics["transactions"] for s in samples)
    assert n == TX
    mean = sum(s.metrics["latency_avg_ms"] * s.metrics["transactions"] for s in samples) / n
    assert mean == pytest.approx(16.983, abs=0.0005)  # pgbench's own "latency average" (3 decimals)
    assert all(s.metrics["tps"] == s.metrics["transactions"] / s.interval for s in samples)


def test_zil_kstat_around_the_run_has_a_commit_per_transaction():
    before, after = _kstat("zil.before"), _kstat("zil.after")
    assert after["zil_commit_count"] - before["zil_commit_count"] == 314
    assert after["zil_itx_metaslab_slog_bytes"] - before["zil_itx_metaslab_slog_bytes"] == 6362672
