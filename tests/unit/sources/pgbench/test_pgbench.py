"""pgbench parsers against every genuine capture: shared fixtures and the PostgreSQL 15 outputs in tests/data."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, fixture_files, fixture_ids
from zfsmon import names
from zfsmon.model import Event, EventKind, ParseError, Record, Sample
from zfsmon.sources.pgbench import log as pgbench_log
from zfsmon.sources.pgbench import source as pgbench
from zfsmon.sources.pgbench import text as pgbench_text
from zfsmon.sources.pgbench.text import PgbenchTextParser
from zfsmon.workload.soak import CONTINUOUS, LOOP, SoakPlan, init_argv, next_run_seconds, run_argv

SHARED = fixture_files("pgbench")
LOCAL = sorted((TEST_DATA / "pgbench").glob("*.txt"))
ALL = SHARED + LOCAL


def _by_name(part: str) -> Path:
    hits = [p for p in ALL if part in p.name]
    assert len(hits) == 1, f"{part}: {hits}"
    return hits[0]


def _text(part: str) -> str:
    return _by_name(part).read_text()


def _samples(recs: List[Record], name: str = "pgbench") -> List[Sample]:
    return [r for r in recs if isinstance(r, Sample) and r.entity.name == name]


def _events(recs: List[Record], kind: EventKind) -> List[Event]:
    return [r for r in recs if isinstance(r, Event) and r.kind == kind]


def test_fixture_sets_present(fixtures: Path) -> None:
    assert len(SHARED) >= 14 and len(LOCAL) >= 12


@pytest.mark.parametrize("path", ALL, ids=fixture_ids(ALL))
def test_every_capture_parses(path: Path) -> None:
    text = path.read_text()
    first = next(line for line in text.splitlines() if line.strip())
    fmt = pgbench_log.detect_log_format(first)
    if fmt == "text":
        recs = pgbench_text.parse_text(text)
        if "init" in path.name:  # pgbench -i output: no run, nothing to report
            assert recs == []
            return
        summaries = pgbench_text.parse_summaries(text)
        assert summaries and all(s.tps and s.tps > 0 for s in summaries)
        assert len(_events(recs, EventKind.RUN_START)) == len(_events(recs, EventKind.RUN_END)) == len(summaries)
        assert len(_samples(recs, "pgbench")) == text.count("progress: ")
    else:
        samples = pgbench_log.parse_log(text, tx_extra=("retries",) if "retries" in path.name else None)
        assert samples and all(s.metrics["tps"] >= 0 for s in samples)
        n_lines = len([line for line in text.splitlines() if line.strip()])
        if fmt == "aggregate":
            total = sum(int(line.split()[1]) for line in text.splitlines() if line.strip())
            assert sum(s.metrics["transactions"] for s in samples) == total
        else:
            ok = sum(1 for line in text.splitlines() if line.split() and line.split()[2].isdigit())
            assert sum(s.metrics["transactions"] for s in samples) == ok
            assert ok <= n_lines


def test_pg14_progress_and_summary_exact() -> None:
    text = _text("pg14.0__")
    recs = pgbench_text.parse_text(text)
    prog = _samples(recs)
    assert len(prog) == 60
    assert prog[0].metrics == {"tps": 948.8, "latency_avg_ms": 8.420, "latency_stddev_ms": 4.406, "run": 1.0}
    assert prog[0].ts - _events(recs, EventKind.RUN_START)[0].ts == 60.0
    assert prog[-1].metrics["tps"] == 607.4 and prog[-1].interval == 60.0
    (s,) = pgbench_text.parse_summaries(text)
    assert (s.version, s.tps, s.tps_including, s.initial_connection_ms) == ("14.0", 646.976461, None, 22.962)
    assert (s.processed, s.duration_s, s.clients, s.latency_avg_ms, s.latency_stddev_ms) == \
        (2329112, 3600.0, 8, 12.352, 20.234)
    run = _samples(recs, "pgbench-run")[0]
    assert run.metrics["tps"] == 646.976461 and run.interval == 3600.0


def test_pre14_including_excluding_prefers_excluding() -> None:
    (s,) = pgbench_text.parse_summaries(_text("tpcb-like_-M_prepared"))
    assert (s.tps_including, s.tps_excluding, s.tps) == (1692.568166, 1693.073378, 1693.073378)
    assert (s.query_mode, s.scale, s.threads, s.latency_avg_ms) == ("prepared", 50, 10, 5.908)


def test_pg95_latency_average_colon() -> None:
    (s,) = pgbench_text.parse_summaries(_text("latency_average_colon"))
    assert (s.latency_avg_ms, s.tps, s.transaction_type) == (9.188, 108.832630, "TPC-B (sort of)")


def test_statement_latencies_ignored_and_processed_of() -> None:
    (s,) = pgbench_text.parse_summaries(_text("summary_with_statement_latencies"))
    assert (s.processed, s.processed_of, s.transactions_per_client, s.latency_stddev_ms, s.tps) == \
        (10000, 10000, 1000, 2.715, 622.977698)


def test_oldest_summary_without_latency() -> None:
    (s,) = pgbench_text.parse_summaries(_text("typical_summary_old"))
    assert s.latency_avg_ms is None and s.tps == 85.296346


def test_pg15_failed_and_pg17_select_only() -> None:
    recs = pgbench_text.parse_text(_text("pg15.2-ubuntu"))
    assert [p.metrics["failed"] for p in _samples(recs)] == [0.0] * 10
    (s,) = pgbench_text.parse_summaries(_text("pg15.2-ubuntu"))
    assert (s.max_tries, s.failed, s.tps) == (1, 0, 578.908410)
    (s17,) = pgbench_text.parse_summaries(_text("pg17.5-ubuntu"))
    assert (s17.transaction_type, s17.tps, s17.latency_avg_ms, s17.latency_stddev_ms) == \
        ("<builtin: select only>", 2885.165356, 0.347, None)


def test_progress_lag_skipped_retried() -> None:
    text = _text("lag_skipped_retried")
    prog = _samples(pgbench_text.parse_text(text))
    assert prog[3].metrics == {"tps": 750.0, "latency_avg_ms": 0.851, "latency_stddev_ms": 0.599, "failed": 0.0,
                               "lag_ms": 0.118, "skipped": 2.0, "retried": 0.0, "retries": 0.0, "run": 1.0}
    (s,) = pgbench_text.parse_summaries(text)
    assert (s.skipped, s.retried, s.retries, s.lag_avg_ms, s.lag_max_ms, s.max_tries) == (2, 0, 0, 0.094, 2.108, 3)


def test_progress_failed_and_retried_counts() -> None:
    prog = _samples(pgbench_text.parse_text(_text("serialization_retried")))
    assert (prog[0].metrics["failed"], prog[0].metrics["retried"], prog[0].metrics["retries"]) == (4116, 5444, 5444)
    (s,) = pgbench_text.parse_summaries(_text("serialization_retried"))
    assert (s.failed, s.retried, s.retries, s.tps) == (8994, 12011, 12011, 2987.324586)
    (f,) = pgbench_text.parse_summaries(_text("serialization_failed"))
    assert (f.failed, f.processed) == (26070, 11096)


def test_progress_timestamp_is_used() -> None:
    recs = pgbench_text.parse_text(_text("progress-timestamp"))
    prog = _samples(recs)
    assert [p.ts for p in prog] == [1795331723.561, 1795331724.561, 1795331725.561, 1795331726.561]
    assert prog[1].interval == pytest.approx(1.0)
    end = _events(recs, EventKind.RUN_END)[0]
    assert end.ts >= prog[-1].ts and end.data["tps"] == 7505.173458


def test_loop_of_runs_virtual_clock() -> None:
    recs = pgbench_text.parse_text(_text("loop_3x"), pause=1.0)
    runs = _samples(recs, "pgbench-run")
    assert [r.metrics["tps"] for r in runs] == [5947.915604, 5514.898393, 5443.421333]
    assert [r.metrics["run"] for r in runs] == [1.0, 2.0, 3.0]
    starts = [e.ts for e in _events(recs, EventKind.RUN_START)]
    assert starts == [0.0, 3.0, 6.0]  # -T 2 each, 1 s pauses
    assert [r.ts for r in runs] == [2.0, 5.0, 8.0]


def test_live_stream_uses_arrival_time() -> None:
    p = pgbench_text.PgbenchTextParser()
    lines = _text("pg12-ubuntu").splitlines()
    out: List[Record] = []
    for i, line in enumerate(lines):
        out.extend(p.feed(line, 1000.0 + i))
    out.extend(p.flush(2000.0))
    start = _events(out, EventKind.RUN_START)[0]
    assert start.ts == 1000.0  # "starting vacuum" arrived first
    assert [s.ts for s in _samples(out)][:2] == [1030.0, 1060.0]


def test_killed_run_then_new_run() -> None:
    lines = _text("pg15.2-ubuntu").splitlines()
    p = pgbench_text.PgbenchTextParser()
    out: List[Record] = []
    for line in lines[:6]:  # banner, vacuum, 4 progress lines: then pgbench is killed
        out.extend(p.feed(line, 10.0))
    for line in lines:
        out.extend(p.feed(line, 100.0))
    ends = _events(out, EventKind.RUN_END)
    assert [e.data.get("aborted", False) for e in ends] == [True, False]
    assert p.run == 2


def test_aggregate_logs_exact() -> None:
    docs = pgbench_log.parse_log(_text("aggregate-interval_log"))
    assert docs[0].ts == 1345828503 and docs[0].interval == 2.0
    assert docs[0].metrics["tps"] == 2800.5
    assert docs[0].metrics["latency_avg_ms"] == pytest.approx(1542744 / 5601 / 1000)
    two = pgbench_log.parse_log(_text("--aggregate-interval1_log_2threads"))
    assert two[0].ts == 1795331740 and two[0].metrics["transactions"] == 1359 + 1371
    lag = {s.ts: s.metrics for s in pgbench_log.parse_log(_text("aggregate-interval1_log_lag_skipped"))}
    assert lag[1795331745]["skipped"] == 1 and lag[1795331745]["transactions"] == 394 + 416
    assert lag[1795331744]["lag_ms"] == pytest.approx((32723 + 31382) / (291 + 292) / 1000)
    retried = {s.ts: s.metrics for s in pgbench_log.parse_log(_text("aggregate-interval1_log_retried"))}
    assert retried[1795331765]["retried"] == 1971 + 1997


def test_agg_line_columns() -> None:
    a = pgbench_log.parse_agg_line("1795331744 416 312733 291937643 318 5079 45607 8136743 0 991 1 0 0 0 0")
    assert (a.count, a.max_us, a.sum_lag_us, a.skipped, a.retried, a.failed) == (416, 5079, 45607, 1, 0, 0)
    old = pgbench_log.parse_agg_line("1345828501 5601 1542744 483552416 61 2573")
    assert old.skipped is None and old.failed is None
    with pytest.raises(ParseError):
        pgbench_log.parse_agg_line("1345828501 5601 1542744 483552416 61")


def test_per_transaction_logs_exact() -> None:
    docs = pgbench_log.parse_log(_text("log_per_transaction.txt"))
    assert [(s.ts, s.metrics["transactions"]) for s in docs] == [(1175850569, 2), (1175850570, 2)]
    assert docs[0].metrics["latency_avg_ms"] == pytest.approx((2241 + 2465) / 2 / 1000)
    sk = pgbench_log.parse_log(_text("rate100_latency-limit5_skipped"))
    assert sk[0].metrics["skipped"] == 2 and sk[0].metrics["transactions"] == 5
    assert sk[0].metrics["latency_avg_ms"] == pytest.approx((4621 + 6173 + 4722 + 4142 + 2465) / 5 / 1000)
    t = pgbench_log.parse_tx_line("2 1 failed 0 1795331767 27922 1", extra=("retries",))
    assert (t.status, t.latency_us, t.retries, t.epoch) == ("failed", None, 1, 1795331767.027922)
    fails = pgbench_log.parse_log(_text("failed_retries_first200"), tx_extra=("retries",))
    assert sum(s.metrics.get("failed", 0) for s in fails) == _text("failed_retries_first200").count("failed")


def test_malformed_lines_are_parse_errors() -> None:
    with pytest.raises(ParseError) as ei:
        pgbench_text.parse_progress("progress: 6.0 s, lots tps, lat 1 ms stddev 2", "soak.log", 7)
    assert "soak.log:7" in str(ei.value)
    p = pgbench_text.PgbenchTextParser()
    p.feed("transaction type: <builtin: TPC-B (sort of)>", 0.0)
    with pytest.raises(ParseError):
        p.feed("tps = fast (without initial connection time)", 0.0)
    lp = pgbench_log.PgbenchLogParser()
    with pytest.raises(ParseError):
        lp.feed("1 2 3 4 5 6 7 8 9", 0.0)
    with pytest.raises(ParseError):
        pgbench_log.parse_tx_line("0 1 2241 0 1175850568 1995598")


def test_stream_log_parser_emits_with_lateness() -> None:
    p = pgbench_log.PgbenchLogParser(interval=1.0, lateness=2)
    lines = _text("--aggregate-interval1_log_2threads").splitlines()
    first = p.feed(lines[0], 0.0) + p.feed(lines[1], 0.0)
    assert first == []  # 1795331739 is kept open until 2 intervals newer data arrives
    out = p.feed(lines[2], 0.0)
    assert [s.ts for s in out if isinstance(s, Sample)] == [1795331740.0]


def test_init_estimate_and_soak_argv() -> None:
    assert pgbench.init_size_estimate(10) == 7_600_000 + 157_000_000
    plan = SoakPlan(mode=LOOP, run_seconds=58, pgbench_args=["-c", "30", "-j", "10", "-N"], dbname="db")
    assert run_argv(plan, 58) == ["pgbench", "-T", "58", "-P", "1", "--progress-timestamp", "-c", "30", "-j", "10",
                                  "-N", "db"]
    cont = SoakPlan(mode=CONTINUOUS, aggregate_interval=10, log_prefix="/tmp/x.agg", pgbench_args=["-S"], progress=10)
    assert run_argv(cont, 3600) == ["pgbench", "-T", "3600", "-P", "10", "--progress-timestamp", "--log",
                                    "--aggregate-interval=10", "--log-prefix=/tmp/x.agg", "-S"]
    assert init_argv("pgbench", 40, "db") == ["pgbench", "-i", "-s", "40", "-q", "db"]
    assert next_run_seconds(plan, 100.0, 130.0) == 30 and next_run_seconds(plan, 100.0, 100.5) == 0
    assert next_run_seconds(plan, 100.0, None) == 58


@pytest.mark.parametrize("mode", [LOOP, CONTINUOUS])
def test_a_soak_asks_pgbench_for_progress_every_second_unless_told(mode) -> None:
    """TPS live: a loop's summaries alone come once a run (58 s); the user's --progress wins."""
    argv = run_argv(SoakPlan(mode=mode, pgbench_args=["-S", "-c", "8"]), 58)
    assert argv[argv.index("-P") + 1] == "1" and argv.count("-P") == 1 and "--progress-timestamp" in argv
    argv = run_argv(SoakPlan(mode=mode, progress=6, pgbench_args=["-S"]), 58)
    assert argv[argv.index("-P") + 1] == "6" and argv.count("-P") == 1


def test_progress_lines_and_the_summary_of_each_run_of_a_loop_with_p1() -> None:
    """What a loop soak with -P 1 --progress-timestamp reads: progress on stderr as it comes, the banner and summary
    (stdout, block-buffered through the pipe) at the run's end, run after run: each run one RUN_START, its
    progress samples, one summary, one RUN_END; no run opened by the late banner."""
    text = _text("-c4_-j2_-T4_-P1_--progress-timestamp_-N")
    lines = text.splitlines()
    banner = [line for line in lines if line.startswith("pgbench (")]
    rest = [line for line in lines if not line.startswith("pgbench (")]
    piped = rest[:1] + [line for line in rest if line.startswith("progress:")] + banner + \
        [line for line in rest[1:] if not line.startswith("progress:")]
    p = PgbenchTextParser()
    out = []
    for run in range(3):
        for k, line in enumerate(piped):
            out += p.feed(line, 1795331722.0 + run * 10 + k * 0.1)
    out += p.flush(1795331760.0)
    samples = [r for r in out if isinstance(r, Sample)]
    starts = [r for r in out if isinstance(r, Event) and r.kind == EventKind.RUN_START]
    ends = [r for r in out if isinstance(r, Event) and r.kind == EventKind.RUN_END]
    assert len(starts) == len(ends) == 3 and p.run == 3
    progress = [s for s in samples if s.entity.name == names.PGBENCH]
    runs = [s for s in samples if s.entity.name == names.PGBENCH_RUN]
    assert len(progress) == 12 and [s.metrics["tps"] for s in progress[:4]] == [7219.9, 7733.0, 7350.5, 7688.2]
    assert [s.metrics["run"] for s in progress] == [float(1 + k // 4) for k in range(12)]
    assert len(runs) == 3 and all(s.metrics["tps"] == pytest.approx(7505.173458) for s in runs)
    assert not [r for r in out if isinstance(r, Event) and r.kind == EventKind.ERROR]


_LINES = [line for p in ALL for line in p.read_text().splitlines()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_LINES), st.text(max_size=80)), max_size=30),
       st.integers(min_value=0, max_value=60), st.booleans())
def test_random_and_truncated_input_only_parse_errors(lines: List[str], cut: int, virtual: bool) -> None:
    mangled = [line[: len(line) - cut % (len(line) + 1)] if i % 2 else line for i, line in enumerate(lines)]
    for parser in (pgbench_text.PgbenchTextParser(virtual_clock=virtual), pgbench_log.PgbenchLogParser(),
                   pgbench_log.PgbenchLogParser(tx_extra=("retries",))):
        for i, line in enumerate(mangled):
            try:
                parser.feed(line, float(i))
            except ParseError:
                pass
        try:
            parser.flush(100.0)
        except ParseError:
            pass
