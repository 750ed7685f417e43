"""The queue-depth sweep finding (IOPS and latency per depth, the knee, Little's law) on real fio 3.33 sweeps."""

from __future__ import annotations

import dataclasses
import gzip

import pytest

from tests.conftest import TEST_DATA, fio_documents
from zfsmon.analysis import findings, qdsweep
from zfsmon.model import Sample
from zfsmon.sources.fio.json_output import parse_json

FIO = TEST_DATA / "fio"
DEPTHS = [1, 2, 4, 8, 16, 32, 64]


def _samples(name: str):
    return [r for r in parse_json((FIO / name).read_text()) if isinstance(r, Sample)]


def test_direct_libaio_sweep():
    sw = qdsweep.sweep(_samples("sweep-randread-libaio-jsonplus.json"))
    assert sw is not None and [s.depth for s in sw.steps] == DEPTHS
    assert [s.jobs for s in sw.steps] == [[f"qd{d}"] for d in DEPTHS]
    assert [s.ios for s in sw.steps] == [23283, 37415, 56448, 71648, 86397, 100701, 97251]
    first = sw.steps[0]
    assert first.iops == pytest.approx(23283 / 2.004) and first.seconds == 2.004
    assert first.pct_ms == {"p50": 0.042752, "p90": 0.064768, "p99": 0.214016, "p999": 4.014080}
    assert sw.peak.depth == 32 and sw.peak.iops == pytest.approx(50325.337, abs=1e-3)
    assert sw.knee is sw.peak  # depth 16 is at 86% of the peak: the first at 90% is 32
    assert [s.depth for s in sw.past_knee] == [64]
    assert sw.steps[-1].pct_ms["p99"] == 5.013504 and sw.steps[-1].max_ms == 36.054914
    # Little: IOPS x mean latency = depth, within 1.3% at every step here
    assert [round(s.in_flight, 1) for s in sw.steps] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 63.9]
    assert sw.little_misfits() == []
    text = sw.text()
    assert text[1].startswith("Knee at depth 32: 50,325 IOPS, 100% of the peak, p99 4.29 ms; beyond it to depth 64 "
                              "IOPS changed -3% while p99 x1.2 (4.29 ms -> 5.01 ms)")
    assert text[2].startswith("Little's law holds") and "64->63.9" in text[2]


def test_psync_numjobs_sweep_groups_each_step():
    sw = qdsweep.sweep(_samples("sweep-randread-psync-jsonplus.json"))
    assert [s.depth for s in sw.steps] == DEPTHS
    assert sw.peak.depth == 64 and sw.knee.depth == 32
    assert sw.knee.iops / sw.peak.iops == pytest.approx(241539.71 / 244311.15, abs=1e-4)
    assert sw.steps[-1].pct_ms["p99"] / sw.knee.pct_ms["p99"] == pytest.approx(2.37568 / 1.171456)
    assert [round(s.in_flight, 1) for s in sw.steps] == [1.0, 1.9, 3.6, 7.8, 15.6, 30.6, 61.3]
    assert sw.little_misfits() == []  # qd4's 3.6 is within 20%


def test_buffered_libaio_has_its_knee_at_depth_one():
    """Without O_DIRECT, libaio's iodepth adds no throughput: the knee is at the first step, the tail explodes."""
    sw = qdsweep.sweep(_samples("sweep-randread-libaio-buffered-jsonplus.json"))
    assert sw.knee is not None and sw.knee.depth == 1 and sw.peak.depth == 1
    assert sw.steps[-1].iops < sw.knee.iops and sw.steps[-1].pct_ms["p99"] > 1000 * sw.knee.pct_ms["p99"]


def test_no_knee_while_iops_still_rise():
    steps = [s for s in _samples("sweep-randread-libaio-jsonplus.json") if s.metrics["iodepth"] <= 8]
    sw = qdsweep.sweep(steps)
    assert sw.knee is None and sw.peak.depth == 8
    assert sw.text()[1].startswith("No knee within the sweep: IOPS was still rising at depth 8")


def test_too_few_depths_is_no_sweep():
    assert qdsweep.sweep(_samples("randread-json.json")) is None
    assert qdsweep.sweep(_samples("randwrite-status-jsonplus.json")) is None  # five intervals of one depth


def test_little_misfit_is_reported():
    """The captured sweep with its latencies halved (as if fio had idled half the time between I/Os)."""
    samples = [dataclasses.replace(s, metrics={**s.metrics, "lat_mean_ms": s.metrics["lat_mean_ms"] / 2})
               if s.metrics["iodepth"] >= 16 else s for s in _samples("sweep-randread-libaio-jsonplus.json")]
    sw = qdsweep.sweep(samples)
    assert [s.depth for s in sw.little_misfits()] == [16, 32, 64]
    assert "Little's law does not fit at 3 of 7 steps (depth 16: 8.0 in flight" in sw.text()[2]


def test_mixed_directions_count_together():
    sw_steps = qdsweep.steps_from_samples(_samples("randrw-jsonplus.json"))
    (step,) = sw_steps
    assert step.depth == 8 and step.ios == 39964 + 17111 and step.iops == pytest.approx(57075 / 3.001)
    assert step.pct_ms["p99"] == 4.227072  # the worse direction's (write)
    assert step.by_direction["read"]["p99"] == 3.981312
    assert step.in_flight == pytest.approx(8, rel=0.02)


def test_analyze_reports_the_sweep():
    report = findings.analyze(_samples("sweep-randread-libaio-jsonplus.json"))
    (f,) = report.topic("qd_sweep")
    assert f.numbers["knee_depth"] == 32 and f.numbers["peak_depth"] == 32
    assert "Knee at depth 32" in f.text and "Little's law holds" in f.text
    assert "Knee at depth 32" in report.render()


def test_throttled_lab_sweep_with_status_intervals():
    """Real sweep on the lab (data disks throttled to 100 IOPS each), one json+ document a second: each step's
    figures are fio's own from its final report (not ones rebuilt from the intervals, which lost qd32's I/Os
    and put 21 reads in flight at depth 32); IOPS saturate near the mirrors' ceiling while the tail grows."""
    text = gzip.decompress((FIO / "lab-sweep-randread-psync-status-jsonplus.json.gz").read_bytes()).decode()
    final = fio_documents(text)[-1]
    samples = [r for r in parse_json(text) if isinstance(r, Sample)]
    sw = qdsweep.sweep(samples)
    assert [s.depth for s in sw.steps] == DEPTHS
    jobs = {j["jobname"]: j["read"] for j in final["jobs"]}
    assert [s.ios for s in sw.steps] == [jobs[f"qd{d}"]["total_ios"] for d in DEPTHS]
    assert [s.iops for s in sw.steps] == [jobs[f"qd{d}"]["iops"] for d in DEPTHS]
    assert [s.pct_ms["p99"] for s in sw.steps] == [jobs[f"qd{d}"]["clat_ns"]["percentile"]["99.000000"] / 1e6
                                                   for d in DEPTHS]
    assert [s.lat_mean_ms for s in sw.steps] == pytest.approx([jobs[f"qd{d}"]["lat_ns"]["mean"] / 1e6 for d in DEPTHS],
                                                             rel=1e-12)  # weighted by I/Os: one job, fio's
    assert sw.steps[0].seconds == jobs["qd1"]["runtime"] / 1000
    assert sw.peak.depth == 16 and sw.knee.depth == 8
    assert sw.steps[5].t0 is not None and sw.steps[5].t1 > sw.steps[5].t0  # the step's window: its intervals'
    assert sw.little_misfits() == [] and round(sw.steps[5].in_flight, 1) == 31.2
    assert "Little's law holds" in sw.text()[2]


def test_throttled_lab_sweep_from_its_intervals_alone():
    """fio killed while writing its final report: the sweep is rebuilt from the status reports' intervals, and
    they hold every I/O (qd32's document printed before its runtime moved gives no interval, its 915 reads go to
    the next one), so each step's I/Os and mean latency are those of fio's last complete document."""
    text = gzip.decompress((FIO / "lab-sweep-randread-psync-status-jsonplus.json.gz").read_bytes()).decode()
    cut = text[: text.rindex('{\n  "fio version"') + 3000]
    last = fio_documents(text)[-2]  # the last document the cut output holds whole
    samples = [r for r in parse_json(cut) if isinstance(r, Sample)]
    assert not any(s.entity.name.startswith("fio-run:") for s in samples)
    sw = qdsweep.sweep(samples)
    assert [s.depth for s in sw.steps] == DEPTHS
    jobs = {j["jobname"]: j["read"] for j in last["jobs"]}
    assert [s.ios for s in sw.steps] == [jobs[f"qd{d}"]["total_ios"] for d in DEPTHS]
    assert [s.lat_mean_ms for s in sw.steps] == pytest.approx([jobs[f"qd{d}"]["lat_ns"]["mean"] / 1e6 for d in DEPTHS],
                                                             rel=1e-9)
    assert sw.little_misfits() == [] and "Little's law holds" in sw.text()[2]


def test_analyze_gives_fios_own_result_of_a_status_stream():
    """Not a sweep (one job of two clones): analyze says fio's whole-run figures per job, from its final report."""
    text = (FIO / "randread-numjobs2-status-json.json").read_text()
    jobs = fio_documents(text)[-1]["jobs"]
    report = findings.analyze([r for r in parse_json(text) if isinstance(r, Sample)])
    (f,) = report.topic("fio_run")
    got = {(r["job"], r["direction"]): r for r in f.numbers["runs"]}
    assert sorted(got) == [("rr.0", "read"), ("rr.1", "read")]
    for k, job in enumerate(jobs):
        r = got[(f"rr.{k}", "read")]
        assert (r["iops"], r["bw_bytes"], r["ios"]) == (job["read"]["iops"], job["read"]["bw_bytes"],
                                                       job["read"]["total_ios"])
        assert r["clat_p99_ms"] == job["read"]["clat_ns"]["percentile"]["99.000000"] / 1e6
        assert f"rr.{k} read {job['read']['iops']:,.0f} IOPS" in f.text
