"""Saved block-device views as `zfsmon parse`/`import` kinds (issue 12 item 10): /proc/diskstats loops and Linux
`iostat -x` from this project's host (tests/data/linux-host/PROVENANCE.md), illumos `iostat -xn` from the fixtures."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA, fixture_files
from zfsmon.model import Event, Kind, ParseError, Sample
from zfsmon.sources import detect

HOST = TEST_DATA / "linux-host"
LOOPS = [f"loop{i}" for i in range(18)]
DEVICES = sorted(LOOPS + ["vda"])


def _samples(records):
    return [r for r in records if isinstance(r, Sample)]


def test_diskstats_loop_with_times():
    text = (HOST / "diskstats-loop.txt").read_text()
    assert detect.detect(text).name == "diskstats"
    recs = detect.get("diskstats").parse(text, "diskstats-loop.txt", None)
    samples = _samples(recs)
    assert len(samples) == 3 * 20
    assert sorted({s.ts for s in samples}) == [1795461849.0, 1795461850.0, 1795461851.0]
    assert sorted({(s.entity.kind, s.entity.name) for s in samples}) == sorted(
        [(Kind.DEVICE, n) for n in LOOPS + ["vda", "zram0"]])
    vda = [s for s in samples if s.entity.name == "vda"]
    assert [s.metrics["writes"] for s in vda] == [3551706, 3554713, 3554742]
    assert vda[0].metrics["write_bytes"] == 345925512 * 512 and vda[0].metrics["flush_time_ns"] == 56103 * 1e6
    assert len(vda[0].metrics) == 17 and not any(s.since_boot or s.interval for s in samples)


def test_diskstats_without_times_needs_the_interval():
    text = "\n".join(ln for ln in (HOST / "diskstats-loop.txt").read_text().splitlines() if len(ln.split()) > 1)
    recs = detect.get("diskstats").parse(text, "d", 10.0)
    assert sorted({r.ts for r in recs}) == [0.0, 10.0, 20.0]
    assert {r.ts for r in detect.get("diskstats").parse(text, "d", None)} == {0.0}  # import then asks for --interval
    with pytest.raises(ParseError, match=r"^d:9: major/minor are not numbers: .x 0 vda 1883300 "):
        detect.get("diskstats").parse(text.replace(" 254       0 vda", " x 0 vda", 1), "d", None)


@pytest.mark.parametrize("name,timed", [("iostat-x.txt", False), ("iostat-x-t.txt", True),
                                        ("iostat-dx-t-iso.txt", True)])
def test_linux_iostat_x(name, timed):
    text = (HOST / name).read_text()
    assert detect.detect(text).name == "iostat-x"
    recs = detect.get("iostat-x").parse(text, name, None if timed else 1.0)
    assert not [r for r in recs if isinstance(r, Event)]  # every column known
    samples = _samples(recs)
    reports = sorted({s.ts for s in samples})
    assert len(reports) == (2 if timed else 3)
    assert sorted(s.entity.name for s in samples if s.ts == reports[0]) == DEVICES
    assert all(s.entity.kind == Kind.DEVICE for s in samples)
    first = [s for s in samples if s.ts == reports[0]]
    assert all(s.since_boot and s.interval is None for s in first)
    assert all(not s.since_boot and s.interval == 1.0 for s in samples if s.ts != reports[0])
    vda = [s.metrics for s in samples if s.entity.name == "vda"]
    assert len(vda[0]) == 22
    if name == "iostat-x.txt":
        assert reports == [0.0, 1.0, 2.0]
        assert vda[1]["read_ops"] == 3998 and vda[1]["read_bw"] == 255288 * 1024
        assert vda[1]["write_ops"] == 2864 and vda[1]["write_bw"] == 183236 * 1024
        assert vda[1]["read_await_ns"] == pytest.approx(0.12e6) and vda[1]["read_req_bytes"] == 63.85 * 1024
        assert vda[1]["queue_len"] == 0.78 and vda[1]["busy_pct"] == 76.8
        assert vda[0]["flush_ops"] == 88.85 and vda[0]["discard_bw"] == 4998.24 * 1024
    elif name == "iostat-dx-t-iso.txt":
        assert reports == [1795461890.0, 1795461891.0]  # 2026-11-23T19:24:50+0000
        assert vda[1]["read_ops"] == 98 and vda[1]["busy_pct"] == 0.8


def test_linux_iostat_x_refuses_other_columns():
    text = (HOST / "iostat-x.txt").read_text()
    head = next(ln for ln in text.splitlines() if ln.startswith("Device"))
    with pytest.raises(ParseError, match="not sysstat 12's iostat -x columns"):
        detect.get("iostat-x").parse(text.replace(head, "Device " + " ".join(f"c{i}" for i in range(22))), "x", 1.0)
    with pytest.raises(ParseError, match=r"x:7: 22 columns but 21 values"):
        detect.get("iostat-x").parse(text.replace("   0.90\n", "\n", 1), "x", 1.0)


ILLUMOS = [p for p in fixture_files("illumos_fsstat_iostat") if "iostat" in p.name]


def test_illumos_iostat_xn_kind(fixtures):
    for path in ILLUMOS:
        assert detect.detect(path.read_text()).name == "iostat-xn"
    [path] = [p for p in ILLUMOS if "xcnCXTdz" in p.name]
    samples = _samples(detect.get("iostat-xn").parse(path.read_text(), path.name, 5.0))
    assert samples and all(s.entity.kind == Kind.DEVICE for s in samples)
    assert samples[0].since_boot and samples[0].ts == 1069685916.0 and samples[0].entity.name == "c0"


FSSTAT = [p for p in fixture_files("illumos_fsstat_iostat") if "fsstat" in p.name]


def test_illumos_fsstat_kind(fixtures):
    for path in FSSTAT:
        assert detect.detect(path.read_text()).name == "fsstat"
    [path] = [p for p in FSSTAT if "fsstat_-F" in p.name]
    samples = _samples(detect.get("fsstat").parse(path.read_text(), path.name, None))
    by = {s.entity.name: s for s in samples}
    assert [(s.entity.kind, s.entity.pool) for s in samples] == [(Kind.DATASET, "")] * len(samples)
    ufs = by["ufs"].metrics
    assert ufs["attr_gets"] == pytest.approx(2.16 * 1024 ** 2) and ufs["files_created"] == 313 * 1024
    assert ufs["write_bytes"] == pytest.approx(39.1 * 1024 ** 3) and by["ufs"].since_boot
    assert by["proc"].metrics["read_bytes"] == 466 * 1024 and by["nfs"].metrics["reads"] == 0
