"""Following real pgbench runs: a file appended by pgbench, one truncated and rewritten mid-run; pg_stat_database;
the soak runner's loop. Needs PostgreSQL (runs for real in CI)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import List

import pytest

from tests.conftest import wait_until
from tests.postgres.conftest import DB
from zfsmon.model import Event, EventKind, Record, Sample
from zfsmon.sources.pgbench.pgstat import PgStatCollector, entity_for
from zfsmon.workload.attach import AttachCollector
from zfsmon.workload.pgcluster import PgCluster
from zfsmon.workload.soak import LOOP, SoakCollector, SoakPlan

pytestmark = pytest.mark.postgres


def _poll_until(col: AttachCollector, out: List[Record], done, what: str, timeout: float = 120.0) -> None:
    """Poll ``col`` every 0.2 s (as `zfsmon attach` would, so lines get their arrival times) until ``done()``."""
    def polled() -> bool:
        out.extend(col.poll())
        return done()
    wait_until(polled, timeout, what, step=0.2)


def _poll_until_exit(col: AttachCollector, out: List[Record], proc: subprocess.Popen) -> None:
    """Poll while pgbench runs, then once more: once it has exited, all it wrote is in the file."""
    _poll_until(col, out, lambda: proc.poll() is not None, "pgbench to finish")
    out.extend(col.poll())


def _follow_while(proc: subprocess.Popen, col: AttachCollector) -> List[Record]:
    out: List[Record] = []
    _poll_until_exit(col, out, proc)
    col.stop()
    out.extend(col.poll())
    return out


def _kind(recs: List[Record], kind: EventKind) -> List[Event]:
    return [r for r in recs if isinstance(r, Event) and r.kind == kind]


def _progress(recs: List[Record]) -> List[Sample]:
    return [r for r in recs if isinstance(r, Sample) and r.entity.name == "pgbench"]


def test_attach_follows_a_real_pgbench(pg: PgCluster, pg_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "soak.log"  # does not exist yet: attach waits for it
    col = AttachCollector([str(log)])
    col.start()
    with open(log, "w") as fh:
        proc = subprocess.Popen([pg.pgbench(), "-T", "4", "-P", "1", "-c", "2", "-N", DB], stdout=fh,
                                stderr=subprocess.STDOUT, env=pg_env)
        t0 = time.time()
        recs = _follow_while(proc, col)
    prog = _progress(recs)
    assert len(prog) >= 3 and all(p.metrics["tps"] > 0 for p in prog)
    assert all(t0 - 1 <= p.ts <= time.time() + 1 for p in prog)  # on the wall clock, as the lines arrived
    assert [p.metrics["run"] for p in prog] == [1.0] * len(prog)
    (end,) = _kind(recs, EventKind.RUN_END)
    tps_line = next(line for line in log.read_text().splitlines() if line.startswith("tps = "))
    assert end.data["tps"] == float(tps_line.split()[2])
    assert len(_kind(recs, EventKind.RUN_START)) == 1


def test_attach_survives_truncation_mid_run(pg: PgCluster, pg_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "soak.log"
    log.write_text("")
    col = AttachCollector([str(log)])
    col.start()
    with open(log, "a") as fh:  # O_APPEND, like `>>`: after a truncation pgbench writes at the new end
        proc = subprocess.Popen([pg.pgbench(), "-T", "6", "-P", "1", "-c", "2", "-N", DB], stdout=fh,
                                stderr=subprocess.STDOUT, env=pg_env)
        recs: List[Record] = []
        _poll_until(col, recs, lambda: log.read_text().count("progress:") >= 2, "two progress lines")
        recs.extend(col.poll())
        before = len(_progress(recs))
        with open(log, "r+") as t:
            t.truncate(0)
        recs.extend(_follow_while(proc, col))
    assert any("truncated" in e.text for e in _kind(recs, EventKind.INFO))
    after = _progress(recs)[before:]
    assert len(after) >= 2  # progress lines written after the truncation were still read
    assert [e.data["tps"] for e in _kind(recs, EventKind.RUN_END) if "tps" in e.data]  # and the summary


def test_attach_file_rewritten_by_next_run(pg: PgCluster, pg_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "soak.log"
    log.write_text("")
    col = AttachCollector([str(log)])
    col.start()
    recs: List[Record] = []
    for _ in range(2):  # `pgbench > soak.log` twice: O_TRUNC on the same inode, then more lines than before
        with open(log, "w") as fh:
            proc = subprocess.Popen([pg.pgbench(), "-T", "3", "-P", "1", "-c", "2", "-N", DB], stdout=fh,
                                    stderr=subprocess.STDOUT, env=pg_env)
            _poll_until_exit(col, recs, proc)
    col.stop()
    recs.extend(col.poll())
    ends = [e for e in _kind(recs, EventKind.RUN_END) if "tps" in e.data]
    assert len(ends) == 2
    assert any("truncated" in e.text or "rewritten" in e.text for e in _kind(recs, EventKind.INFO))


def test_attach_from_start_imports_history(pg: PgCluster, pg_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "soak.log"
    with open(log, "w") as fh:
        for _ in range(2):
            subprocess.run([pg.pgbench(), "-T", "1", "-c", "2", "-N", DB], stdout=fh, stderr=subprocess.STDOUT,
                           env=pg_env, check=True, timeout=60)
    col = AttachCollector([str(log)], from_start=True, pause=0.0)
    col.start()
    recs = col.poll()
    col.stop()
    runs = [r for r in recs if isinstance(r, Sample) and r.entity.name == "pgbench-run"]
    assert len(runs) == 2
    assert runs[-1].ts == pytest.approx(log.stat().st_mtime)
    assert any("estimated" in e.text for e in _kind(recs, EventKind.INFO))


def test_pgstat_counts_reads(pg: PgCluster, pg_env: dict) -> None:
    col = PgStatCollector(pg.conninfo(DB))
    first = col.poll()
    (a,) = first
    assert isinstance(a, Sample), first
    subprocess.run([pg.pgbench(), "-T", "1", "-c", "2", "-S", DB], env=pg_env, check=True, capture_output=True,
                   timeout=60)

    def counted() -> List[Record]:
        """A poll that shows pgbench's transactions (backends flush their statistics at most every 500 ms in
        PostgreSQL 15, and at their exit: a few polls may come first)."""
        got = col.poll()
        moved = any(isinstance(r, Sample) and r.metrics["xact_commit"] > a.metrics["xact_commit"] for r in got)
        return got if moved else []

    second = wait_until(counted, 60, "pg_stat_database to count pgbench's transactions", step=0.2)
    col.stop()
    (b,) = second
    assert isinstance(a, Sample) and isinstance(b, Sample) and a.entity == entity_for(DB)
    assert b.metrics["xact_commit"] > a.metrics["xact_commit"]
    assert b.metrics["blks_hit"] + b.metrics["blks_read"] > a.metrics["blks_hit"] + a.metrics["blks_read"]
    assert {"temp_files", "temp_bytes", "numbackends", "tup_fetched"} <= set(b.metrics)


def test_pgstat_unreachable_is_an_event() -> None:
    col = PgStatCollector("host=127.0.0.1 port=1 dbname=x connect_timeout=2")
    (ev,) = col.poll()
    assert isinstance(ev, Event) and ev.kind == EventKind.ERROR and "cannot connect" in ev.text
    assert col.poll() == []  # retried later, not on every poll


def test_soak_loop_runs_and_tees(pg: PgCluster, pg_env: dict, tmp_path: Path) -> None:
    tee = tmp_path / "soak.log"
    plan = SoakPlan(mode=LOOP, run_seconds=2, pause=0.5, total=5.5, pgbench_args=["-c", "2", "-N"], dbname=DB,
                    tee=str(tee), pgbench=pg.pgbench(), env=pg.env(DB))
    soak = SoakCollector(plan)
    soak.start()
    assert soak.finished.wait(60)
    soak.stop()
    recs = soak.poll()
    runs = [r for r in recs if isinstance(r, Sample) and r.entity.name == "pgbench-run"]
    assert [r.metrics["run"] for r in runs] == [1.0, 2.0] and all(r.metrics["tps"] > 0 for r in runs)
    assert tee.read_text().count("tps = ") == 2
    assert len(_kind(recs, EventKind.RUN_START)) == 2
