"""fio's JSON/json+ output (one run, or a --status-interval stream) as workload samples, on real fio 3.33 captures."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import TEST_DATA, fio_documents
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.names import FIO_RUN_PREFIX, fio_entity, fio_job_direction, fio_run_entity
from zfsmon.sources import detect
from zfsmon.sources.fio import json_output as fio_json

FIO = TEST_DATA / "fio"


def _text(name: str) -> str:
    return (FIO / name).read_text()


def _samples(name: str):
    """The per-interval samples (``fio:`` entities)."""
    return [r for r in fio_json.parse_json(_text(name), name) if isinstance(r, Sample) and fio_job_direction(r.entity.name)]


def _results(records):
    """The run results (``fio-run:`` entities) by (job, direction)."""
    return {fio_job_direction(r.entity.name, FIO_RUN_PREFIX): r for r in records if isinstance(r, Sample)
            and fio_job_direction(r.entity.name, FIO_RUN_PREFIX)}


def _fios_own(doc):
    """(job as numbered when several share a name, direction) -> fio's own whole-run figures of ``doc``."""
    jobs = doc["jobs"]
    names = [j["jobname"] for j in jobs]
    out = {}
    for k, job in enumerate(jobs):
        name = job["jobname"]
        if names.count(name) > 1:
            name = f"{name}.{names[:k].count(name)}"
        for direction in fio_json.DIRECTIONS:
            d = job[direction]
            if d["total_ios"]:
                pct = d["clat_ns"]["percentile"]
                out[(name, direction)] = {
                    "iops": d["iops"], "bw_bytes": d["bw_bytes"], "ios": d["total_ios"], "io_bytes": d["io_bytes"],
                    "runtime_s": d["runtime"] / 1000, "error": job["error"], "clat_max_ms": d["clat_ns"]["max"] / 1e6,
                    "clat_mean_ms": d["clat_ns"]["mean"] / 1e6, "lat_mean_ms": d["lat_ns"]["mean"] / 1e6,
                    "clat_p50_ms": pct["50.000000"] / 1e6, "clat_p90_ms": pct["90.000000"] / 1e6,
                    "clat_p99_ms": pct["99.000000"] / 1e6, "clat_p999_ms": pct["99.900000"] / 1e6}
    return out


def test_single_run_json_is_fios_own_numbers():
    (s,) = _samples("randread-json.json")
    assert s.entity.kind == Kind.WORKLOAD and s.entity.name == "fio:rr:read" and s.entity.pool == ""
    assert s.ts == 1795464596.144 and s.interval == 3.001 and s.source == "fio"
    m = s.metrics
    assert m["ios"] == 72147
    assert m["iops"] == pytest.approx(24040.986338, abs=1e-6)  # fio's "iops": total_ios / runtime
    assert m["bw_bytes"] == pytest.approx(196943760, abs=1)  # fio's "bw_bytes"
    assert m["clat_p50_ms"] == 0.09984 and m["clat_p90_ms"] == 0.136192
    assert m["clat_p99_ms"] == 1.581056 and m["clat_p999_ms"] == 6.782976 and m["clat_max_ms"] == 50.637381
    assert m["clat_mean_ms"] == pytest.approx(0.153885062719) and m["lat_mean_ms"] == pytest.approx(0.164508216752)
    assert m["iodepth"] == 4 and m["numjobs"] == 1


@pytest.mark.parametrize("name", ["randrw-jsonplus.json", "randwrite-status-jsonplus.json",
                                  "sweep-randread-libaio-jsonplus.json"])
def test_percentiles_from_bins_are_the_ones_fio_printed(name):
    """Reading json+ bins the way fio does gives fio's printed percentiles, every one, every document."""
    docs, problem = fio_json.split_documents(_text(name))
    assert problem is None and docs
    checked = 0
    for doc in docs:
        for job in doc["jobs"]:
            for direction in fio_json.DIRECTIONS:
                clat = job[direction]["clat_ns"]
                if not clat["N"]:
                    continue
                bins = {int(k): v for k, v in clat["bins"].items()}
                assert sum(bins.values()) == clat["N"]
                for pct, value in clat["percentile"].items():
                    assert fio_json.bin_percentile(bins, float(pct)) == value, (pct, job["jobname"])
                    checked += 1
    assert checked >= 17


def test_status_stream_jsonplus_gives_each_interval():
    samples = _samples("randwrite-status-jsonplus.json")
    assert [s.entity.name for s in samples] == ["fio:rw:write"] * 5
    assert [s.ts for s in samples] == [1795464600.997, 1795464601.997, 1795464602.997, 1795464603.997,
                                       1795464604.189]
    assert [s.interval for s in samples] == [0.859, 1.001, 1.0, 1.0, 0.141]
    assert [s.metrics["ios"] for s in samples] == [10969, 17122, 14883, 10989, 2250]
    assert sum(s.metrics["ios"] for s in samples) == 56213  # the final document's total_ios
    second = samples[1].metrics
    assert second["iops"] == pytest.approx(17122 / 1.001)
    assert second["clat_p50_ms"] == 0.120320 and second["clat_p99_ms"] == 2.899968
    assert second["clat_p999_ms"] == 4.816896 and second["clat_max_ms"] == 7.241728
    # the interval's max that set the run's max is fio's exact max
    assert samples[3].metrics["clat_max_ms"] == 16438622 / 1e6 and samples[0].metrics["clat_max_ms"] == 11536866 / 1e6
    # the first interval's percentiles are fio's printed ones (everything so far is that interval)
    first_doc = fio_json.split_documents(_text("randwrite-status-jsonplus.json"))[0][0]
    printed = first_doc["jobs"][0]["write"]["clat_ns"]["percentile"]
    assert samples[0].metrics["clat_p99_ms"] == printed["99.000000"] / 1e6
    assert all(s.metrics["iodepth"] == 4 for s in samples)


def test_status_stream_plain_json_has_percentiles_only_where_they_cover_the_interval():
    samples = _samples("randread-status-json.json")
    assert [s.entity.name for s in samples] == ["fio:rr:read"] * 4
    assert [s.metrics["ios"] for s in samples] == [19394, 18593, 12754, 2600]
    assert samples[0].metrics["clat_p99_ms"] == 1.433600
    assert all("clat_p99_ms" not in s.metrics for s in samples[1:])
    assert all("clat_mean_ms" in s.metrics for s in samples)
    assert samples[0].metrics["numjobs"] == 2 and samples[0].metrics["iodepth"] == 1


def test_mixed_job_has_both_directions():
    samples = _samples("randrw-jsonplus.json")
    assert [s.entity.name for s in samples] == ["fio:mixed:read", "fio:mixed:write"]
    r, w = (s.metrics for s in samples)
    assert (r["ios"], w["ios"]) == (39964, 17111)
    assert r["ios"] / (r["ios"] + w["ios"]) == pytest.approx(0.70, abs=0.01)  # rwmixread=70
    assert w["clat_p99_ms"] == 4.227072


def test_sweep_is_one_entity_per_step():
    samples = _samples("sweep-randread-libaio-jsonplus.json")
    assert [fio_job_direction(s.entity.name) for s in samples] == [
        (f"qd{n}", "read") for n in (1, 2, 4, 8, 16, 32, 64)]
    assert [s.metrics["iodepth"] for s in samples] == [1, 2, 4, 8, 16, 32, 64]


def test_job_error_is_an_event():
    records = fio_json.parse_json(_text("joberror.json"), "joberror.json")
    errors = [r for r in records if isinstance(r, Event)]
    assert len(errors) == 1 and errors[0].kind == EventKind.ERROR
    assert errors[0].text == "fio job bad: error 1"


def test_truncated_stream_keeps_the_complete_documents_and_says_so():
    text = _text("randwrite-status-jsonplus.json")
    starts = [i for i in range(len(text)) if text.startswith('{\n  "fio version"', i)]
    cut = text[: starts[2] + 5000]  # the third document is cut off mid-way
    records = fio_json.parse_json(cut, "cut.json")
    samples = [r for r in records if isinstance(r, Sample)]
    assert [s.metrics["ios"] for s in samples] == [10969, 17122]
    (err,) = [r for r in records if isinstance(r, Event)]
    assert err.kind == EventKind.ERROR and "document 3 is truncated or malformed" in err.text
    assert "2 complete document(s)" in err.text and "\n" not in err.text


@pytest.mark.parametrize("text", ["", "{", _text("randread-json.json")[:400], "fio: unable to open '/x.fio' job file\n"])
def test_nothing_complete_is_a_parse_error(text):
    with pytest.raises(ParseError):
        fio_json.parse_json(text, "bad.json")


def test_a_new_run_of_the_same_job_starts_over():
    doc = json.loads(_text("randread-json.json"))
    stream = fio_json.FioStream()
    a = stream.document(doc)
    b = stream.document(doc)  # the same cumulative values again: no time passed, no sample
    assert len(a) == 1 and b == []
    doc2 = json.loads(_text("randread-json.json"))
    doc2["jobs"][0]["read"]["total_ios"] = 10
    doc2["jobs"][0]["read"]["runtime"] = 1
    done, c = stream.document(doc2)  # the first run's last document was its final report
    assert done.entity.name == "fio-run:rr:read" and done.metrics["ios"] == 72147
    assert c.entity.name == "fio:rr:read" and c.metrics["ios"] == 10


def test_detected_as_fio_and_nothing_else_is():
    for path in sorted(FIO.glob("*.json")):
        kind = detect.detect(path.read_text())
        assert kind is not None and kind.name == "fio", path.name
    assert detect.detect(_text("nofile.stderr.txt")) is None or detect.detect(_text("nofile.stderr.txt")).name != "fio"


def test_entity_names():
    assert fio_entity("qd1", "read") == "fio:qd1:read"
    assert fio_job_direction("fio:a:b:write") == ("a:b", "write")
    assert fio_job_direction("pgbench") is None


@pytest.mark.parametrize("name", ["randread-numjobs2-status-json.json", "randread-numjobs2-grouped-status-jsonplus.json",
                                  "randrw-status-jsonplus.json", "randwrite-status-jsonplus.json",
                                  "randread-json.json", "lab-sweep-randread-psync-status-jsonplus.json.gz"])
def test_the_final_report_is_the_runs_result_with_fios_own_figures(name):
    """After a --status-interval stream, fio's final report (the last document) is kept per job and direction as
    it printed it: whole-run IOPS, bandwidth, I/Os, bytes, runtime, latencies and percentiles, error."""
    text = gzip.decompress((FIO / name).read_bytes()).decode() if name.endswith(".gz") else _text(name)
    docs = fio_documents(text)
    want = _fios_own(docs[-1])
    got = _results(fio_json.parse_json(text, name))
    assert set(got) == set(want) and want
    for key, figures in want.items():
        s = got[key]
        assert s.entity.name == fio_run_entity(*key) and s.ts == docs[-1]["timestamp_ms"] / 1000
        assert {k: s.metrics[k] for k in figures} == figures, key
        assert s.interval == figures["runtime_s"]


def test_jobs_of_one_name_keep_their_own_result():
    """numjobs=2 without group_reporting: two jobs named rr in every document, each its own result."""
    got = _results(fio_json.parse_json(_text("randread-numjobs2-status-json.json")))
    assert sorted(got) == [("rr.0", "read"), ("rr.1", "read")]
    assert got[("rr.0", "read")].metrics["iops"] == 20753.082306
    assert got[("rr.1", "read")].metrics["iops"] == 20743.085638
    assert got[("rr.0", "read")].metrics["numjobs"] == 2


def test_a_job_named_as_anothers_suffix_keeps_its_own_result():
    """Jobs named ``rr``, ``rr`` and ``rr.0`` (the real numjobs=2 capture with a third job, a copy of the first
    renamed): three results, each with its own job's figures; none overwrites another."""
    doc = fio_documents(_text("randread-numjobs2-status-json.json"))[-1]
    third = json.loads(json.dumps(doc["jobs"][0]))
    third["jobname"] = "rr.0"
    third["read"]["iops"] = 1.5
    doc["jobs"].append(third)
    got = _results(fio_json.parse_json(json.dumps(doc)))
    assert sorted(got) == [("rr.0", "read"), ("rr.1", "read"), ("rr.2", "read")]
    assert got[("rr.0", "read")].metrics["iops"] == 1.5
    assert got[("rr.1", "read")].metrics["iops"] == doc["jobs"][0]["read"]["iops"]
    assert got[("rr.2", "read")].metrics["iops"] == doc["jobs"][1]["read"]["iops"]


def test_a_truncated_output_has_no_result():
    """fio killed while writing: the last complete document is a status report, not fio's result."""
    text = _text("randrw-status-jsonplus.json")
    starts = [i for i in range(len(text)) if text.startswith('{\n  "fio version"', i)]
    records = fio_json.parse_json(text[: starts[-1] + 3000], "cut.json")
    assert _results(records) == {} and any(isinstance(r, Sample) for r in records)


def test_a_second_run_in_one_output_keeps_the_first_runs_result():
    """Two runs appended to one file: the first run's last document is its final report."""
    one, two = _text("randread-json.json"), _text("randread-status-json.json")
    records = fio_json.parse_json(one + two)
    results = [r for r in records if isinstance(r, Sample) and r.entity.name == "fio-run:rr:read"]
    want = [fio_documents(one)[-1]["jobs"][0]["read"]["iops"], fio_documents(two)[-1]["jobs"][0]["read"]["iops"]]
    assert [r.metrics["iops"] for r in results] == want


def test_stream_parser_gives_the_result_when_the_output_ends():
    text = _text("randread-numjobs2-grouped-status-jsonplus.json")
    final = fio_documents(text)[-1]["jobs"][0]["read"]
    parser = fio_json.FioJsonStreamParser()
    fed = [r for line in text.splitlines() for r in parser.feed(line, 0.0)]
    assert _results(fed) == {}  # while fio runs, no document is known to be its last
    (result,) = _results(parser.flush(1.0)).values()
    assert result.metrics["iops"] == final["iops"] and result.metrics["ios"] == final["total_ios"]
    assert parser.flush(2.0) == []  # once
    cut = fio_json.FioJsonStreamParser()
    for line in text.splitlines()[:-5]:  # fio killed inside its last document
        cut.feed(line, 0.0)
    assert _results(cut.flush(1.0)) == {}


def _capture_text(path) -> str:
    return gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()


@pytest.mark.parametrize("path", sorted([*FIO.glob("*.json"), *FIO.glob("*.json.gz")]), ids=lambda p: p.name)
def test_the_intervals_add_up_to_fios_own_totals(path):
    """Per job and direction, the intervals' I/Os sum to the final report's total_ios and their bytes to its
    io_bytes: a document whose runtime did not move (fio printed it before the runtime caught up with the I/Os)
    gives no interval and its I/Os go to the next one."""
    text = _capture_text(path)
    final = fio_documents(text)[-1]
    want = {key: (figures["ios"], figures["io_bytes"]) for key, figures in _fios_own(final).items()}
    ios: dict = {}
    io_bytes: dict = {}
    for s in fio_json.parse_json(text, path.name):
        key = fio_job_direction(s.entity.name) if isinstance(s, Sample) else None
        if key:
            ios[key] = ios.get(key, 0) + s.metrics["ios"]
            io_bytes[key] = io_bytes.get(key, 0.0) + s.metrics["bw_bytes"] * s.interval
    assert set(ios) == set(want)
    for key, (total_ios, total_bytes) in want.items():
        assert ios[key] == total_ios, key
        assert io_bytes[key] == pytest.approx(total_bytes, rel=1e-9, abs=1e-3), key
