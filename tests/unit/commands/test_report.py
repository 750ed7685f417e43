"""zfsmon report: panels built from a recording of genuine captures hold exactly the parsed values; files render.

The recording (tests/unit/report_data.py) is written from zfs-fuse lab captures (log and cache vdevs),
arcstat/arcstats/zil kstat fixtures and a pgbench progress log, all through the real parsers. Expected
counter ratios are recomputed here from the fixture text itself, not through zfsmon's parsers.
"""

from __future__ import annotations

import html
import re

import pytest

from tests.conftest import TEST_DATA, fixtures_root, gunzip
from tests.unit import report_data as rd
from zfsmon.cli import main
from zfsmon.model import Kind, Role, Sample
from zfsmon.store import Recording
from zfsmon.views import report_pdf as report

EXPECTED_PANELS = [
    "data vdevs: read ops/s", "data vdevs: write ops/s", "log vdevs: read ops/s", "log vdevs: write ops/s",
    "cache vdevs: read ops/s", "cache vdevs: write ops/s", "ARC hit %", "ARC size vs target c", "L2ARC size",
    "L2ARC hit %", "ZIL commits and log writes/s (zil kstat)", "SLOG (log vdev) write bandwidth", "workload TPS",
    "workload latency (average)",
]


@pytest.fixture(scope="module")
def recording(tmp_path_factory, fixtures):
    path = str(tmp_path_factory.mktemp("report") / "soak.zfsmon")
    rd.write_recording(path)
    return path


@pytest.fixture(scope="module")
def data(recording):
    with Recording.open(recording) as rec:
        return report.build(rec)


def _given(kind: Kind, role=None):
    return [r for r in rd.records() if isinstance(r, Sample) and r.entity.kind == kind and not r.since_boot
            and (role is None or r.entity.role == role)]


def _kstat(path, name: str) -> float:
    """A value of a /proc/spl/kstat table, read without zfsmon: `name type data` lines."""
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == name:
            return float(parts[2])
    raise KeyError(name)


def test_every_expected_panel_is_there_in_order(data):
    assert [p.title for s in data.sections for p in s.panels] == EXPECTED_PANELS


@pytest.mark.parametrize("role,metric", [(Role.DATA, "read_ops"), (Role.DATA, "write_ops"), (Role.LOG, "write_ops"),
                                         (Role.CACHE, "read_ops"), (Role.CACHE, "write_ops")])
def test_vdev_panels_hold_each_vdevs_parsed_rows(data, role, metric):
    panel = data.panel(f"{role.value} vdevs: {metric.replace('_ops', '')} ops/s")
    want = {}
    for s in _given(Kind.VDEV, role):
        want.setdefault(f"{s.entity.pool}/{s.entity.name}", []).append((s.ts, s.metrics[metric]))
    assert want, "the captures must have this role"
    assert {ln.label for ln in panel.lines} == set(want)
    for label, pts in want.items():
        ln = panel.line(label)
        assert list(zip(ln.ts, ln.values)) == sorted(pts)


def test_cache_device_gap_while_it_was_removed(data):
    # the 1_8 capture: loop6 is missing from three reports, so its line has three points fewer than a data vdev's
    cache = data.panel("cache vdevs: read ops/s").line("ziocap/loop6")
    mirror = data.panel("data vdevs: read ops/s").line("ziocap/mirror-0")
    assert len(mirror.ts) - len(cache.ts) == 3
    assert sum(1 for e in data.events if e.kind.value == "topology" and "loop6" in e.text) >= 2


def test_arc_hit_pct_from_counters_matches_the_fixture_numbers(data):
    arc = fixtures_root() / "arcstats"
    snaps = [arc / n for n in rd.ARCSTATS]

    def pct(a, b, hits="hits", misses="misses"):
        dh = _kstat(b, hits) - _kstat(a, hits)
        dm = _kstat(b, misses) - _kstat(a, misses)
        return 100.0 * dh / (dh + dm)

    line = data.panel("ARC hit %").line("all")
    # 0.6.5 -> 2.3 grows; 2.3 -> 2.1 goes backwards (reset: no value); 2.1 -> 0.6.4 grows
    assert line.ts == [rd.T0 + 40, rd.T0 + 80]
    assert line.values == pytest.approx([pct(snaps[0], snaps[1]), pct(snaps[2], snaps[3])], rel=1e-12)
    l2 = data.panel("L2ARC hit %").line("hit %")
    assert l2.ts == [rd.T0 + 80]
    assert l2.values == pytest.approx([pct(snaps[2], snaps[3], "l2_hits", "l2_misses")], rel=1e-12)


def test_hit_pct_as_arcstat_printed_it_is_kept_beside(data):
    text = (fixtures_root() / "arcstat_tools" / rd.ARCSTAT_TOOL).read_text().splitlines()
    cols = text[0].split()
    rows = [dict(zip(cols, ln.split())) for ln in text[1:] if ln.split() and ln.split() != cols]
    arc = data.panel("ARC hit %").line("all (as a tool computed it)")
    assert arc.values == [float(r["hit%"]) for r in rows]
    assert arc.ts == [rd.T0 + 10 * i for i in range(len(rows))]
    l2 = data.panel("L2ARC hit %").line("hit % (as a tool computed it)")
    assert l2.values == [float(r["l2hit%"]) for r in rows]


def test_arc_size_and_target(data):
    panel = data.panel("ARC size vs target c")
    c = panel.line("c")
    arc = fixtures_root() / "arcstats"
    assert c.values == [_kstat(arc / n, "c") for n in rd.ARCSTATS]
    assert c.ts == [rd.T0 + 20 * (i + 1) for i in range(4)]
    assert len(panel.line("size").ts) == 5 + 4  # arcstat rows and the raw snapshots


def test_zil_panel_says_why_it_is_empty_and_slog_panel_has_the_log_vdev(data):
    zil = data.panel("ZIL commits and log writes/s (zil kstat)")
    assert zil.lines == []  # ZoL 0.7 -> OpenZFS 2.3: itx_needcopy_bytes goes backwards, a reset, no rate
    assert "reset" in zil.empty_note
    slog = data.panel("SLOG (log vdev) write bandwidth").line("ziocap/loop5")
    want = [(s.ts, s.metrics["write_bw"]) for s in _given(Kind.VDEV, Role.LOG)]
    assert list(zip(slog.ts, slog.values)) == want
    assert max(slog.values) > 0


def test_workload_panels_and_run_boundaries(data):
    progress = [s for s in _given(Kind.WORKLOAD) if s.entity.name == "pgbench"]
    tps = data.panel("workload TPS").line("pgbench")
    assert tps.values == [s.metrics["tps"] for s in progress] and tps.ts == [s.ts for s in progress]
    lat = data.panel("workload latency (average)").line("pgbench")
    assert lat.values == [s.metrics["latency_avg_ms"] for s in progress]
    assert report.run_spans(data.events, data.start, data.end) == [(rd.T0, rd.T0 + 60, "run 1")]
    assert any(e.kind.value == "mark" and e.text == rd.MARK for e in data.events)


def test_findings_come_from_the_analysis(data, recording):
    from zfsmon.analysis.findings import analyze

    with Recording.open(recording) as rec:
        samples, events = list(rec.samples()), rec.events()
    want = [f.text for f in analyze(samples, events, start=data.start, end=data.end).findings]
    assert data.findings == want and want
    text = report.text_block(data)
    assert all(f"- {f}" in text for f in want)


def test_png_is_a_real_non_blank_image(data, tmp_path):
    import matplotlib.image as mpimg

    out = str(tmp_path / "r.png")
    done = report.render(data, out)
    assert done.panels == EXPECTED_PANELS
    with open(out, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(out)
    h, w = img.shape[:2]
    assert w >= 1000 and h > w  # one tall page
    rgb = img[..., :3].reshape(-1, 3)
    non_white = (rgb < 0.95).any(axis=1).mean()
    assert 0.02 < non_white < 0.9
    assert len({tuple(p) for p in (rgb[:: max(1, len(rgb) // 50000)] * 255).astype(int)}) > 20  # lines in colour


def test_pdf_has_a_summary_page_and_one_page_per_section(data, tmp_path):
    out = str(tmp_path / "r.pdf")
    done = report.render(data, out)
    blob = open(out, "rb").read()
    assert blob.startswith(b"%PDF-") and blob.rstrip().endswith(b"%%EOF")
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", blob))
    assert pages == done.pages == 1 + len(data.sections) == 6


def test_html_holds_the_findings_and_one_image_per_section(data, tmp_path):
    out = tmp_path / "r.html"
    report.render(data, str(out))
    text = out.read_text()
    assert text.count("<img ") == len(data.sections)
    assert text.count("src='data:image/png;base64,") == len(data.sections)
    for f in data.findings:
        assert html.escape(f) in text  # quotes too: "the data disks' reads", "Little's law"


def test_window_keeps_only_what_is_inside(recording):
    with Recording.open(recording) as rec:
        d = report.build(rec, rd.T0 + 30, rd.T0 + 40)
    for p in (p for s in d.sections for p in s.panels):
        for ln in p.lines:
            assert all(rd.T0 + 30 <= t <= rd.T0 + 40 for t in ln.ts), p.title
    assert d.panel("workload TPS").line("pgbench").values  # progress at 30, 36
    assert d.panel("ARC hit %").lines == [] or all(len(ln.ts) <= 2 for ln in d.panel("ARC hit %").lines)


def test_cli_writes_the_report(recording, tmp_path, capsys):
    out = tmp_path / "post.png"
    assert main(["report", recording, "--out", str(out), "--from", "+20", "--to", "-10"]) == 0
    assert out.stat().st_size > 10_000
    assert "post.png: png" in capsys.readouterr().err


def test_cli_default_output_is_a_pdf_next_to_the_recording(recording):
    import os
    import shutil

    copy = os.path.join(os.path.dirname(recording), "copy.zfsmon")
    shutil.copy(recording, copy)
    assert main(["report", copy]) == 0
    assert open(copy[:-len(".zfsmon")] + ".pdf", "rb").read(5) == b"%PDF-"


@pytest.mark.parametrize("argv,message", [
    (["--out", "x.svg"], "format follows the suffix"),
    (["--from", "2001-01-01T00:00Z", "--to", "2001-01-02T00:00Z"], "holds no samples"),
    (["--out", "/nonexistent-dir/r.pdf"], "does not exist"),
])
def test_cli_user_errors(recording, argv, message, capsys):
    assert main(["report", recording, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zfsmon: ") and message in err and "Traceback" not in err


def test_cli_refuses_something_that_is_not_a_recording(tmp_path, capsys):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello\n")
    assert main(["report", str(bogus), "--out", str(tmp_path / "r.pdf")]) == 2
    assert "not a zfsmon recording" in capsys.readouterr().err


def test_thin_keeps_short_series_and_averages_long_ones():
    ts = [float(i) for i in range(10)]
    assert report.thin(ts, ts) == (ts, ts)
    long_t = [float(i) for i in range(10_001)]
    t, v = report.thin(long_t, [2 * x for x in long_t], max_points=1000)
    assert len(t) <= 1000 and v == pytest.approx([2 * x for x in t])
    assert t[0] == pytest.approx(sum(range(11)) / 11)


def test_a_recording_without_samples_is_a_clear_error(tmp_path, capsys):
    from zfsmon.store import Recorder

    path = str(tmp_path / "empty.zfsmon")
    with Recorder(path, {"interval": "1"}) as rec:
        rec.mark("nothing happened")
    assert main(["report", path, "--out", str(tmp_path / "e.pdf")]) == 2
    assert "holds no samples" in capsys.readouterr().err


def test_a_run_still_open_at_the_end_is_shaded_to_the_end(data):
    start = [e for e in data.events if e.kind.value == "run_start"]
    assert report.run_spans(start, data.start, data.end) == [(rd.T0, data.end, "run 1")]


def test_a_line_breaks_where_nothing_was_read():
    t, v = report.break_gaps([0.0, 2.0, 4.0, 200.0, 202.0, 204.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert t[:3] == [0.0, 2.0, 4.0] and t[3] == 102.0 and t[4:] == [200.0, 202.0, 204.0]
    assert v[3] != v[3] and v[:3] == [1.0, 2.0, 3.0] and v[4:] == [4.0, 5.0, 6.0]  # NaN: no line drawn there
    # readings every 60 s have no gap at 90 s; a short series is left as it is
    assert float("nan") not in report.break_gaps([0.0, 60.0, 120.0, 210.0], [1.0, 1.0, 1.0, 1.0])[1]
    assert report.break_gaps([0.0, 500.0], [1.0, 2.0]) == ([0.0, 500.0], [1.0, 2.0])


def test_a_reboot_inside_the_recording_is_a_restart_line_with_its_words(tmp_path):
    """The guest's warm-up, then a reboot whose L2ARC did not survive (tests/data/openzfs-2.3/warmup)."""
    path = gunzip(TEST_DATA / "openzfs-2.3" / "warmup" / "soak-small-cache.zfsmon.gz", tmp_path)
    with Recording.open(path) as rec:
        d = report.build(rec)
    [(at, label)] = d.restarts
    assert d.start < at < d.end and label == "restart: L2ARC empty"
    assert any(f.startswith("After the restart at ") for f in d.findings)
    assert "black = a restart" in " ".join(d.summary_lines())
    assert report.restart_label({"rebuild_ok": True, "rebuilt_bytes": 3 * 2**30, "back_90_s": 12.0}) == \
        "restart: L2ARC rebuilt 3G, TPS back in 12 s"
