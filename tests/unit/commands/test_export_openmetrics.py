"""`zfsmon export --openmetrics`: a real recording (OpenZFS 2.4 guest, tests/data/openzfs-2.4/warmup) as the
exporter's scrapes over time, loaded by promtool into TSDB blocks and read back here line by line.

(prometheus_client's OpenMetrics parser is not used: it takes a histogram's second timestamped point for a new
one after its first bucket and refuses the text that promtool, Prometheus's own loader, reads.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import TEST_DATA, need
from zfsmon.cli import main
from zfsmon.model import Kind, Sample
from zfsmon.store import Recording
from zfsmon.views.openmetrics import openmetrics, scrapes
from zfsmon.views.prometheus import latest_from_recording

REC = TEST_DATA / "openzfs-2.4" / "warmup" / "fio-warmup.zfsmon.gz"
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


@dataclass
class Point:
    name: str
    labels: Dict[str, str]
    value: float
    timestamp: float


@dataclass
class Family:
    name: str
    type: str
    samples: List[Point]


def text_string_to_metric_families(text: str) -> List[Family]:
    """The families of an export: each `# TYPE` once, every sample line of it after, ending with `# EOF`."""
    lines = text.splitlines()
    assert lines[-1] == "# EOF"
    fams: List[Family] = []
    for line in lines[:-1]:
        if line.startswith("# TYPE "):
            _, _, name, mtype = line.split(" ")
            assert name not in {f.name for f in fams}, name
            fams.append(Family(name, mtype, []))
        elif not line.startswith("# HELP "):
            m = LINE.match(line)
            assert m and m.group(1).startswith(fams[-1].name), line
            fams[-1].samples.append(Point(m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3)),
                                          float(m.group(4))))
    return fams


def _export(tmp_path: Path, *extra: str) -> str:
    out = tmp_path / "run.om"
    assert main(["export", str(REC), "--openmetrics", str(out), *extra]) == 0
    return out.read_text()


def test_the_scrapes_parse_and_end_with_what_the_exporter_serves_of_the_recording(tmp_path):
    text = _export(tmp_path)
    fams = {f.name: f for f in text_string_to_metric_families(text)}  # raises on anything OpenMetrics refuses
    with Recording.open(REC) as rec:
        span = rec.time_range()
        assert span is not None
        host = rec.meta["host"]
        last = {e.key: v for e, v in latest_from_recording(rec).snapshot()[0]}
        arc = [v for k, v in last.items() if k.startswith(f"{Kind.ARC.value}:")][0]
    # every series at scrape times 15 s apart inside the recording's span, labelled as a scrape labels it
    hits = fams["zfsmon_arc_hits"]
    assert hits.type == "counter"
    times = [s.timestamp for s in hits.samples]
    assert len(times) >= 30 and all(span[0] <= float(t) <= span[1] + 1 for t in times)
    gaps = {round(float(b) - float(a)) for a, b in zip(times, times[1:-1])}
    assert gaps == {15}
    assert {(s.labels["job"], s.labels["instance"]) for s in hits.samples} == {("zfsmon", host)}
    # the counter only grows, and its last value is the recording's last reading, as the exporter serves it
    values = [s.value for s in hits.samples]
    assert values == sorted(values) and values[0] < values[-1]
    assert values[-1] == arc["hits"]
    # zpool iostat -w's histograms become cumulative histograms per vdev and queue, growing scrape by scrape
    lat = fams["zfsmon_vdev_latency_seconds"]
    assert lat.type == "histogram"
    counts = [s for s in lat.samples if s.name.endswith("_count")
              and s.labels["vdev"] == "mirror-0" and s.labels["queue"] == "disk_wait" and s.labels["op"] == "read"]
    assert len(counts) >= 30 and counts[-1].value > counts[0].value


def test_every_sets_the_scrape_interval_and_from_to_the_window(tmp_path):
    text = _export(tmp_path, "--every", "1m", "--from", "+2m", "--to", "+6m")
    hits = {f.name: f for f in text_string_to_metric_families(text)}["zfsmon_arc_hits"]
    times = [float(s.timestamp) for s in hits.samples]
    assert 4 <= len(times) <= 6
    assert {round(b - a) for a, b in zip(times, times[1:-1])} == {60}


def test_a_device_gone_from_the_recording_leaves_the_scrapes_as_the_live_exporter_drops_it():
    """Scrapes of records where a leaf stops being reported: its series end three intervals (and 5 s) later."""
    with Recording.open(REC) as rec:
        records = sorted([*rec.samples(), *rec.events()], key=lambda r: r.ts)
        meta = dict(rec.meta)
    cut = records[len(records) // 2].ts
    gone = [r for r in records if not (isinstance(r, Sample) and r.ts > cut
                                       and r.entity.kind == Kind.LEAF and r.entity.name == "virtio-data3")]
    text = "\n".join(openmetrics(scrapes(gone, meta, 2.0), {"job": "zfsmon", "instance": "x"})) + "\n"
    ops = {f.name: f for f in text_string_to_metric_families(text)}["zfsmon_leaf_read_ops_per_second"]
    leaf3 = [float(s.timestamp) for s in ops.samples if s.labels.get("device") == "virtio-data3"]
    data = [float(s.timestamp) for s in ops.samples if s.labels.get("device") == "virtio-data0"]
    assert leaf3 and data and max(leaf3) <= cut + 3 * 2.0 + 5 + 15 < max(data)


def test_promtool_loads_the_export_into_blocks(tmp_path):
    need(shutil.which("promtool") is not None, "promtool not installed (Debian package prometheus)")
    _export(tmp_path)
    res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "run.om"),
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert any((tmp_path / "data").iterdir())


@pytest.mark.parametrize("target", ["dir", "link"])
def test_an_openmetrics_export_follows_no_link_and_writes_no_directory(tmp_path, target, capsys):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out.om"
    if target == "dir":
        out.mkdir()
    else:
        out.symlink_to(victim)
    rc = main(["export", str(REC), "--openmetrics", str(out)])
    assert rc != 0 and len(capsys.readouterr().err.strip().splitlines()) == 1
    assert victim.read_text() == "keep" and (out.is_dir() if target == "dir" else out.is_symlink())


def test_without_the_exporter_extra_export_works_and_openmetrics_says_what_to_install(tmp_path):
    """prometheus_client is the `exporter` extra: without it the CSV/JSON export works as before and
    --openmetrics is one line naming the extra."""
    code = ("import sys; sys.modules['prometheus_client'] = None; from zfsmon.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    ok = subprocess.run([sys.executable, "-c", code, "export", str(REC), "--json", str(tmp_path / "x.jsonl")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and (tmp_path / "x.jsonl").stat().st_size > 0, ok.stderr
    no = subprocess.run([sys.executable, "-c", code, "export", str(REC), "--openmetrics", str(tmp_path / "x.om")],
                        capture_output=True, text=True, timeout=120)
    assert no.returncode != 0 and not (tmp_path / "x.om").exists()
    assert no.stderr.strip().splitlines() == [no.stderr.strip()] and "zfsmon[exporter]" in no.stderr, no.stderr
