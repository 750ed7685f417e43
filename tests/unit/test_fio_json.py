"""fio's JSON/json+ output (one run, or a --status-interval stream) as workload samples, on real fio 3.33 captures."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEST_DATA
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.names import fio_entity, fio_job_direction
from zfsmon.sources import detect, fio_json

FIO = TEST_DATA / "fio"


def _text(name: str) -> str:
    return (FIO / name).read_text()


def _samples(name: str):
    return [r for r in fio_json.parse_json(_text(name), name) if isinstance(r, Sample)]


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
    (c,) = stream.document(doc2)
    assert c.metrics["ios"] == 10


def test_detected_as_fio_and_nothing_else_is():
    for path in sorted(FIO.glob("*.json")):
        kind = detect.detect(path.read_text())
        assert kind is not None and kind.name == "fio", path.name
    assert detect.detect(_text("nofile.stderr.txt")) is None or detect.detect(_text("nofile.stderr.txt")).name != "fio"


def test_entity_names():
    assert fio_entity("qd1", "read") == "fio:qd1:read"
    assert fio_job_direction("fio:a:b:write") == ("a:b", "write")
    assert fio_job_direction("pgbench") is None
