"""fio as a workload: presets, the runner (real fio, tiny jobs), following its JSON output (`zfsmon attach`)."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_DATA, fio_documents, need, wait_until
from tests.unit.bad_input import answer, one_line, sha
from zfsmon.commands import info
from zfsmon.errors import UserError
from zfsmon.model import Event, EventKind, Sample
from zfsmon.sources.fio.json_output import parse_json
from zfsmon.store import Recording
from zfsmon.workload import fio as fiowl
from zfsmon.workload.attach import FIO_JSON, AttachCollector, sniff

FIO = TEST_DATA / "fio"


def _fio() -> str:
    path = shutil.which("fio")
    need(path is not None, "fio is not installed (Debian package fio; scripts/install-deps.sh)")
    return str(path)


def test_sweep_preset_is_the_job_file_of_the_captured_sweep():
    """The captured psync sweep ran this very job file (but for its target): the preset is what was measured."""
    text = fiowl.preset_jobfile("randread-sweep", fiowl.PresetPlan(directory="/tmp/fio14", size="64M", runtime_s=2))
    captured = (FIO / "sweep-randread-psync.fio").read_text()
    assert text.replace("directory=/tmp/fio14\nfilename=zfsmon-fio.randread", "filename=/tmp/fio14/data") == captured


@pytest.mark.parametrize("name, rw, extra", [("randread", "rw=randread", None), ("randwrite", "rw=randwrite", None),
                                             ("randwrite-fsync", "rw=randwrite", "fsync=1"),
                                             ("mixed", "rw=randrw", "rwmixread=70")])
def test_presets(name, rw, extra):
    one = fiowl.preset_jobfile(name, fiowl.PresetPlan(directory="/d", depth=4)).splitlines()
    assert rw in one and "bs=8k" in one and "ioengine=psync" in one and (extra is None or extra in one)
    assert [ln for ln in one if ln.startswith("[")] == ["[global]", "[qd4]"] and "numjobs=4" in one
    sweep = fiowl.preset_jobfile(name + "-sweep", fiowl.PresetPlan(directory="/d")).splitlines()
    assert [ln for ln in sweep if ln.startswith("numjobs=")] == [f"numjobs={n}" for n in (1, 2, 4, 8, 16, 32, 64)]
    assert sweep.count("stonewall") == 7
    assert fiowl.preset_names().count(name + "-sweep") == 1


def test_run_argv():
    assert fiowl.run_argv("j.fio", 5.0) == ["fio", "j.fio", "--output-format=json+", "--status-interval=5"]
    assert fiowl.run_argv("j.fio", 0.2)[-1] == "--status-interval=1"  # fio's status interval is whole seconds


def test_missing_job_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"^fio job file .*nope\.fio does not exist$"):
        fiowl.check_jobfile(str(tmp_path / "nope.fio"))
    with pytest.raises(UserError, match="not a regular file"):
        fiowl.check_jobfile(str(tmp_path))


def _run(collector: fiowl.FioCollector):
    collector.start()
    wait_until(collector.finished.is_set, 60, "fio to finish")
    collector.stop()
    return collector.poll()


def test_fio_that_fails_is_one_error_event(tmp_path):
    job = tmp_path / "bad.fio"
    job.write_text("[bad]\nfilename=/proc/version\nsize=1M\nrw=write\n")
    out = tmp_path / "out.fio.json"
    records = _run(fiowl.FioCollector(fiowl.run_argv(str(job), 1, _fio()), output=str(out)))
    errors = [r.text for r in records if isinstance(r, Event) and r.kind == EventKind.ERROR]
    assert "fio job bad: error 1" in errors
    assert any(e.startswith("fio exited with status 1: fio: pid=") and "Operation not permitted" in e for e in errors)
    assert all("\n" not in e for e in errors)
    assert out.read_text().lstrip().startswith("{")


def test_fio_that_cannot_open_its_job_file(tmp_path):
    records = _run(fiowl.FioCollector(fiowl.run_argv(str(tmp_path / "gone.fio"), 1, _fio())))
    (err,) = [r for r in records if isinstance(r, Event)]
    assert err.text == f"fio exited with status 1: fio: unable to open '{tmp_path / 'gone.fio'}' job file"


def test_missing_fio_binary(tmp_path):
    records = _run(fiowl.FioCollector([str(tmp_path / "no-fio"), "x.fio"]))
    (err,) = records
    assert err.kind == EventKind.ERROR and err.text.startswith("fio: cannot run ")


def test_small_real_run_records_each_interval(tmp_path):
    text = fiowl.preset_jobfile("mixed", fiowl.PresetPlan(directory=str(tmp_path), size="4M", runtime_s=2, depth=2))
    job = tmp_path / "mixed.fio"
    job.write_text(text)
    out = tmp_path / "run.fio.json"
    runner = fiowl.FioCollector(fiowl.run_argv(str(job), 1, _fio()), output=str(out))
    records = _run(runner)
    assert runner.returncode == 0 and runner.documents >= 2
    samples = [r for r in records if isinstance(r, Sample) and r.entity.name.startswith("fio:")]
    assert {s.entity.name for s in samples} == {"fio:qd2:read", "fio:qd2:write"}
    assert all(s.metrics["numjobs"] == 2 and s.metrics["ios"] > 0 for s in samples)
    assert all("clat_p99_ms" in s.metrics for s in samples)  # json+: every interval has its percentiles
    # fio exited: its last document is the run's result, fio's own figures
    final = {j["jobname"]: j for j in fio_documents(out.read_text())[-1]["jobs"]}["qd2"]
    results = {r.entity.name: r.metrics for r in records if isinstance(r, Sample) and r.entity.name.startswith("fio-run:")}
    assert set(results) == {"fio-run:qd2:read", "fio-run:qd2:write"}
    for d in ("read", "write"):
        assert results[f"fio-run:qd2:{d}"]["iops"] == final[d]["iops"]
        assert results[f"fio-run:qd2:{d}"]["clat_p99_ms"] == final[d]["clat_ns"]["percentile"]["99.000000"] / 1e6
    # the tee'd output is fio's own: parsed again it gives the same samples
    again = [r for r in parse_json(out.read_text()) if isinstance(r, Sample)]
    assert [(s.entity.name, s.ts, s.metrics) for s in again] == [(s.entity.name, s.ts, s.metrics) for s in records
                                                                 if isinstance(s, Sample)]


def _zfsmon(*argv: str) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "zfsmon", *argv], capture_output=True, text=True, timeout=180,
                         cwd=str(Path(__file__).resolve().parents[3]))
    assert res.returncode == 0, res.stderr
    return res


def test_attach_of_a_real_fio_log_then_analyze_and_export_give_fios_own_result(tmp_path):
    """fio run with --status-interval (numjobs=2, no group_reporting), its log attached from the start, then
    analyze and export: the whole-run figures are fio's final report's, per job."""
    log = tmp_path / "fio.json"
    subprocess.run([_fio(), "--name=rr", f"--filename={tmp_path / 'data'}", "--size=4M", "--rw=randread", "--bs=8k",
                    "--ioengine=psync", "--numjobs=2", "--runtime=2", "--time_based", "--status-interval=1",
                    "--output-format=json", f"--output={log}"], check=True, capture_output=True, timeout=120)
    jobs = fio_documents(log.read_text())[-1]["jobs"]
    rec = tmp_path / "att.zfsmon"
    _zfsmon("attach", "--from-start", "--no-zfs", "--interval", "1", "--duration", "2", "--out", str(rec), str(log))
    found = json.loads(_zfsmon("analyze", "--json", str(rec)).stdout)
    (runs,) = [f["numbers"]["runs"] for f in found["findings"] if f["topic"] == "fio_run"]
    assert [(r["job"], r["iops"], r["ios"]) for r in runs] == [
        (f"rr.{k}", j["read"]["iops"], j["read"]["total_ios"]) for k, j in enumerate(jobs)]
    _zfsmon("export", "--csv", str(tmp_path / "csv"), str(rec))
    with (tmp_path / "csv" / "workload.csv").open() as fh:
        rows = {r["name"]: r for r in csv.DictReader(fh) if r["name"].startswith("fio-run:")}
    assert sorted(rows) == ["fio-run:rr.0:read", "fio-run:rr.1:read"]
    for k, j in enumerate(jobs):
        row = rows[f"fio-run:rr.{k}:read"]
        assert float(row["iops"]) == j["read"]["iops"] and float(row["bw_bytes"]) == j["read"]["bw_bytes"]
        assert float(row["clat_p99_ms"]) == j["read"]["clat_ns"]["percentile"]["99.000000"] / 1e6


def test_attach_follows_fio_output_from_start(tmp_path):
    path = tmp_path / "fio.json"
    text = (FIO / "randwrite-status-jsonplus.json").read_text()
    starts = [i for i in range(len(text)) if text.startswith('{\n  "fio version"', i)]
    path.write_text(text[: starts[2]])  # two documents so far
    assert sniff(str(path)) == FIO_JSON
    follower = AttachCollector([str(path)], from_start=True)
    follower.start()
    first = [r for r in follower.poll() if isinstance(r, Sample)]
    assert [s.metrics["ios"] for s in first] == [10969, 17122]
    with path.open("a") as fh:  # fio writes the rest
        fh.write(text[starts[2]:])
    rest = [r for r in follower.poll() if isinstance(r, Sample)]
    assert [s.metrics["ios"] for s in rest] == [14883, 10989, 2250]
    follower.stop()


def test_attach_of_a_file_fio_has_not_written_yet(tmp_path):
    path = tmp_path / "later.json"
    follower = AttachCollector([str(path)])
    follower.start()
    assert not [r for r in follower.poll() if isinstance(r, Sample)]  # (an info event: waiting for it)
    path.write_text((FIO / "randrw-jsonplus.json").read_text())
    samples = [r for r in follower.poll() if isinstance(r, Sample)]
    assert [s.entity.name for s in samples] == ["fio:mixed:read", "fio:mixed:write"]
    follower.stop()


def test_soak_command_refuses_a_missing_job_file(tmp_path):
    res = subprocess.run([sys.executable, "-m", "zfsmon", "soak", "--fio", str(tmp_path / "nope.fio"), "--no-zfs",
                          "--out", str(tmp_path / "r.zfsmon")], capture_output=True, text=True, timeout=60,
                         cwd=str(Path(__file__).resolve().parents[3]))
    assert res.returncode == 2
    assert res.stderr.strip() == f"zfsmon: fio job file {tmp_path / 'nope.fio'} does not exist"
    assert not (tmp_path / "r.zfsmon").exists()


@pytest.mark.parametrize("name", ["randrw-status-jsonplus.json", "randread-numjobs2-status-json.json",
                                  "sweep-randread-psync-jsonplus.json"])
def test_info_shows_fios_own_result_per_job_and_direction(tmp_path, name):
    """`zfsmon import --kind fio` then `zfsmon info`: fio's final report per job and direction (IOPS, bandwidth,
    clat p99, runtime) as fio printed it, in --json and in the text, a job's name shown through printable."""
    text = (FIO / name).read_text()
    hostile = text.replace('"jobname" : "', '"jobname" : "\\u001b[2J')  # an escape in every job's name, as JSON
    capture = tmp_path / name
    capture.write_text(hostile)
    rec = tmp_path / "fio.zfsmon"
    root = str(Path(__file__).resolve().parents[3])

    def zfsmon(*argv: str) -> str:
        res = subprocess.run([sys.executable, "-m", "zfsmon", *argv], capture_output=True, text=True, timeout=120,
                             cwd=root)
        assert res.returncode == 0, res.stderr
        return res.stdout

    zfsmon("import", "--kind", "fio", "--into", str(rec), str(capture))
    info = json.loads(zfsmon("info", "--json", str(rec)))
    jobs = fio_documents(hostile)[-1]["jobs"]
    names = [job["jobname"] for job in jobs]
    want = {}
    for k, job in enumerate(jobs):  # jobs of one name (numjobs without group_reporting) are numbered
        label = f"{names[k]}.{names[:k].count(names[k])}" if names.count(names[k]) > 1 else names[k]
        for direction in ("read", "write", "trim"):
            d = job[direction]
            if d["total_ios"]:
                want[(label, direction)] = (d["iops"], d["bw_bytes"], d["clat_ns"]["percentile"]["99.000000"] / 1e6,
                                            d["runtime"] / 1000)
    got = {(r["job"], r["direction"]): (r["iops"], r["bw_bytes"], r["clat_p99_ms"], r["runtime_s"])
           for r in info["fio_runs"]}
    assert got == want and len(want) >= 2
    lines = [line for line in zfsmon("info", str(rec)).splitlines() if line.startswith("fio run:")]
    assert len(lines) == len(want) and "\x1b" not in "".join(lines)
    for line, ((job, direction), (iops, _bw, _p99, _rt)) in zip(lines, want.items()):
        shown = job.replace("\x1b", "\\x1b")
        assert line.startswith(f"fio run:    {shown} {direction} {iops:,.0f} IOPS, "), line


def test_info_lists_the_last_fio_results_and_says_how_many_there_were(tmp_path, monkeypatch):
    """A recording with more fio results than info lists: the last ones, and a line saying of how many."""
    rec = tmp_path / "fio.zfsmon"
    name = "sweep-randread-psync-jsonplus.json"
    assert answer(["import", "--kind", "fio", "--into", str(rec), str(FIO / name)]).code == 0
    jobs = [job["jobname"] for job in fio_documents((FIO / name).read_text())[-1]["jobs"]]
    monkeypatch.setattr(info, "MAX_FIO_RUNS", 2)
    with Recording.open(str(rec)) as r:
        described = info.describe(r)
    assert [run["job"] for run in described["fio_runs"]] == jobs[-2:] and described["fio_runs_left_out"] == len(jobs) - 2
    lines = [line for line in info.render(described) if line.startswith("fio run:")]
    assert lines[0] == f"fio run:    the last 2 results of {len(jobs)}" and len(lines) == 3


def test_info_on_a_recording_whose_fio_result_is_damaged_says_so_in_one_line(tmp_path):
    """info decodes the fio results' values: a damaged value blob is one line and a non-zero exit, the file
    unchanged."""
    rec = tmp_path / "fio.zfsmon"
    assert answer(["import", "--kind", "fio", "--into", str(rec), str(FIO / "randrw-status-jsonplus.json")]).code == 0
    db = sqlite3.connect(str(rec))
    db.execute("UPDATE sample SET vals = 'abc'")
    db.commit()
    db.close()
    before = sha(rec)
    one_line(answer(["info", str(rec)]), contains="damaged")
    assert sha(rec) == before


def test_import_then_csv_has_fios_columns(tmp_path):
    """`zfsmon import` of fio's JSON, `zfsmon export --csv`: workload.csv carries every fio metric per interval."""
    root = str(Path(__file__).resolve().parents[3])
    rec = tmp_path / "fio.zfsmon"
    for argv in (["import", "--into", str(rec), str(FIO / "randwrite-status-jsonplus.json")],
                 ["export", "--csv", str(tmp_path / "csv"), str(rec)]):
        res = subprocess.run([sys.executable, "-m", "zfsmon", *argv], capture_output=True, text=True, timeout=120,
                             cwd=root)
        assert res.returncode == 0, res.stderr
    with (tmp_path / "csv" / "workload.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["name"] for r in rows] == ["fio:rw:write"] * 5 + ["fio-run:rw:write"]
    final = fio_documents((FIO / "randwrite-status-jsonplus.json").read_text())[-1]["jobs"][0]["write"]
    run, rows = rows[-1], rows[:-1]  # fio's final report: the run's result
    assert (float(run["iops"]), run["ios"]) == (final["iops"], str(final["total_ios"]))
    assert {"iops", "bw_bytes", "ios", "clat_mean_ms", "lat_mean_ms", "clat_p50_ms", "clat_p90_ms", "clat_p99_ms",
            "clat_p999_ms", "clat_max_ms", "iodepth", "numjobs"} <= set(rows[0])
    assert [r["ios"] for r in rows] == ["10969", "17122", "14883", "10989", "2250"]
    assert rows[1]["clat_p99_ms"] == "2.899968" and rows[1]["epoch"] == "1795464601.997"


def test_a_fio_soak_stopped_by_sigterm_ends_cleanly(tmp_path):
    """SIGTERM (or Ctrl-C) is how a soak is ended: fio, stopped by zfsmon, says "fio: terminating on signal 2" and
    exits non-zero (128 for fio 3.33); that is the stop asked for: exit 0, an info event, no error event."""
    _fio()
    job = tmp_path / "j.fio"
    job.write_text(f"[global]\nioengine=psync\nbs=8k\ntime_based\nruntime=600\n[a]\ndirectory={tmp_path}\n"
                   "size=4M\nrw=randread\n")
    out = tmp_path / "r.zfsmon"
    proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "soak", "--fio", str(job), "--no-zfs", "--interval", "1",
                             "--out", str(out), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(Path(__file__).resolve().parents[3]))
    try:
        # fio ends each JSON document with a "}" alone on a line
        wait_until(lambda: (tmp_path / "r.fio.json").is_file()
                   and (tmp_path / "r.fio.json").read_text().count("\n}\n") >= 2, 120, "two of fio's status reports")
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    with Recording.open(out) as rec:
        events = list(rec.events())
    assert not [e.text for e in events if e.kind == EventKind.ERROR]
    assert "fio stopped (terminating on signal 2)" in [e.text for e in events if e.kind == EventKind.INFO]
