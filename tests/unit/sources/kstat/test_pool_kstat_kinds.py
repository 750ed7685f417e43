"""The ZoL 0.6-0.8 per-pool kstats as saved texts: ``POOL/io`` (KSTAT_TYPE_IO) and ``POOL/state`` dumps are
``parse``/``import`` kinds, read on real captures (the shared fixtures' SOURCES.md says where each comes from);
and ``parse`` places a kstat dump's boot-relative snapshot time on the clock as ``import`` does, saying so."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Dict

import pytest

from tests.conftest import TEST_DATA
from tests.unit.bad_input import answer
from zfsmon.metrics.health import STATE_CODES
from zfsmon.sources import detect
from zfsmon.store import Recording

IO_CAPTURES = ["kstat_misc/linux-zol-0.6.5__proc_spl_kstat_zfs_zstore_io.txt",
               "kstat_misc/linux-zol-0.7__proc_spl_kstat_zfs_pool1_io.txt",
               "kstat_misc/linux-zol-0.7__proc_spl_kstat_zfs_poolz1_io.txt"]
STATE_CAPTURES = ["peers/node_exporter/proc/spl/kstat/zfs/pool1/state",
                  "peers/node_exporter/proc/spl/kstat/zfs/pool2/state",
                  "peers/node_exporter/proc/spl/kstat/zfs/poolz1/state"]
#: the io kstat's columns zfsmon keeps, by the metric name they get (wupdate/rupdate are times, not counts)
IO_METRICS = {"nread": "io_read_bytes", "nwritten": "io_write_bytes", "reads": "io_reads", "writes": "io_writes",
              "wtime": "io_wait_ns", "wlentime": "io_wait_len_ns", "rtime": "io_run_ns", "rlentime": "io_run_len_ns",
              "wcnt": "io_wait_queue", "rcnt": "io_run_queue"}


def _named(tmp_path: Path, capture: Path, name: str) -> Path:
    """The capture under the name its kind takes the pool from (``POOL.io``): a link, the fixture stays put."""
    link = tmp_path / name
    link.symlink_to(capture)
    return link


def _rows(out: str) -> Dict[str, Dict[str, str]]:
    return {r["metric"]: r for r in csv.DictReader(io.StringIO(out))}


@pytest.mark.parametrize("name", IO_CAPTURES)
def test_a_pool_io_kstat_dump_parses_to_its_own_counters(fixtures, tmp_path, name):
    capture = fixtures / name
    lines = [ln for ln in capture.read_text().splitlines() if ln.strip()]
    expect = dict(zip(lines[1].split(), lines[2].split()))
    assert detect.detect(capture.read_text()).name == "pool-io-kstat"
    a = answer(["parse", str(_named(tmp_path, capture, "tank.io"))])
    assert a.code == 0, a.err
    rows = _rows(a.out)
    assert {m: float(rows[m]["value"]) for m in IO_METRICS.values()} == {
        m: float(expect[c]) for c, m in IO_METRICS.items()}
    assert {(r["kind"], r["pool"], r["source"]) for r in rows.values()} == {("pool", "tank", "objset")}


def test_a_pool_io_kstat_dump_imports_as_the_live_reader_records_it(fixtures, tmp_path):
    capture = _named(tmp_path, fixtures / IO_CAPTURES[1], "pool1.io")
    into = tmp_path / "io.zfsmon"
    a = answer(["import", str(capture), "--into", str(into)])
    assert a.code == 0, a.err
    assert any("pool-io-kstat: 1 samples" in ln for ln in a.err), a.err
    with Recording.open(str(into)) as rec:
        (s,) = list(rec.samples())
    assert (s.entity.key, s.source, s.metrics["io_reads"], s.metrics["io_writes"]) == ("pool:pool1/pool1", "objset", 22, 132)
    assert s.ts == pytest.approx(os.path.getmtime(capture), abs=1e-3)  # the one dump at the file's time


@pytest.mark.parametrize("name", STATE_CAPTURES)
def test_a_pool_state_kstat_parses_to_the_state_zpool_status_gives(fixtures, tmp_path, name):
    capture = fixtures / name
    word = capture.read_text().strip()
    assert detect.detect(capture.read_text()).name == "pool-state-kstat"
    a = answer(["parse", str(_named(tmp_path, capture, "tank.state")), "--events"])
    assert a.code == 0, a.err
    rows = _rows(a.out)
    assert float(rows["state"]["value"]) == STATE_CODES[word] and rows["state"]["pool"] == "tank"
    assert float(rows["online"]["value"]) == (1.0 if word == "ONLINE" else 0.0)
    said = [ln for ln in a.err if "info: pool tank" in ln]
    assert said == ([] if word == "ONLINE" else [said[0]]) and (word == "ONLINE" or word in said[0])


def test_the_guests_own_pool_state_capture_is_read(tmp_path):
    capture = TEST_DATA / "openzfs-2.3" / "kstat" / "zguest.state"
    a = answer(["parse", str(capture)])
    assert a.code == 0, a.err
    rows = _rows(a.out)
    assert rows["state"]["pool"] == "zguest"
    assert float(rows["state"]["value"]) == STATE_CODES[capture.read_text().strip()]


def test_parse_places_a_kstat_dump_on_the_clock_as_import_does_and_says_so(tmp_path):
    capture = TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats"
    a = answer(["parse", str(capture)])
    assert a.code == 0, a.err
    epochs = {float(r["epoch"]) for r in csv.DictReader(io.StringIO(a.out))}
    assert len(epochs) == 1 and epochs.pop() == pytest.approx(os.path.getmtime(capture), abs=1e-3)
    assert not any(r.startswith("1970") for r in a.out.splitlines()[1:])
    (note,) = [ln for ln in a.err if ln.startswith("note:")]
    assert "time of day guessed" in note and "modification time" in note
    into = tmp_path / "arc.zfsmon"
    b = answer(["import", str(capture), "--into", str(into)])
    assert b.code == 0, b.err
    with Recording.open(str(into)) as rec:
        assert {s.ts for s in rec.samples()} == {float(r["epoch"]) for r in csv.DictReader(io.StringIO(a.out))}
