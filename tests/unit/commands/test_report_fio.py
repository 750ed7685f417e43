"""zfsmon report's fio pages on issue 14's acceptance recordings: IOPS and latency against queue depth (knee marked),
the vdev roles' latency distributions beside fio's; what is drawn is the analysis' numbers.

The recordings are the zfs-fuse lab runs of ``python3 -m bench.fio_acceptance`` (tests/data/fio/PROVENANCE.md):
a random-read sweep on throttled mirrors, the same sweep served by the L2ARC, and random writes with fsync.
"""

from __future__ import annotations

import re

import pytest

from zfsmon.analysis import findings, qdsweep, vdevperf
from zfsmon.cli import main
from zfsmon.store import Recording
from zfsmon.views import report_pdf as report

SWEEP = "fio: IOPS vs queue depth"
ROLES = "Latency per vdev role, beside fio's"
@pytest.fixture(scope="module")
def paths(fio_lab_recordings):
    return fio_lab_recordings


def _load(path: str):
    with Recording.open(path) as rec:
        return report.build(rec), list(rec.samples())


@pytest.fixture(scope="module")
def ceiling(paths):
    return _load(paths["ceiling"])


def _section(data, title: str) -> report.Section:
    return next(s for s in data.sections if s.title.startswith(title))


def test_the_two_fio_pages_follow_the_time_sections(ceiling):
    data, _ = ceiling
    assert [s.title for s in data.sections][-2:] == [SWEEP, ROLES]
    assert [p.title for p in _section(data, SWEEP).panels] == [
        "IOPS vs queue depth", "I/Os in flight vs queue depth (Little's law)",
        "read completion latency vs queue depth (fio)"]
    assert [p.title for p in _section(data, ROLES).panels] == [
        "read latency per vdev role (% of the role's read operations per bucket)",
        "write latency per vdev role (% of the role's write operations per bucket)",
        "flush latency per vdev role (% of the role's flush operations per bucket)",
        "read p50/p99 per queue depth: fio against each vdev role"]


def test_sweep_page_draws_the_sweeps_numbers_and_marks_the_knee(ceiling):
    data, samples = ceiling
    sw = qdsweep.sweep(samples)
    assert sw is not None and sw.knee is not None
    depths = [1, 2, 4, 8, 16, 32, 64]
    assert [s.depth for s in sw.steps] == depths
    iops = data.panel("IOPS vs queue depth")
    assert iops.marks == [(4, "knee: depth 4")] == [(sw.knee.depth, "knee: depth 4")]
    (line,) = iops.lines
    assert line.ts == depths and line.values == [s.iops for s in sw.steps]
    assert max(line.values) == pytest.approx(415.4467, abs=1e-3)  # the throttled mirrors' ceiling (4 x 100)
    little = data.panel("I/Os in flight vs queue depth (Little's law)")
    assert little.line("IOPS x mean latency").values == [s.in_flight for s in sw.steps]
    assert little.line("queue depth (a full queue)").values == depths
    lat = data.panel("read completion latency vs queue depth (fio)")
    assert [ln.label for ln in lat.lines] == ["p50", "p99", "p99.9"] and lat.log_y
    for ln, key in zip(lat.lines, ("p50", "p99", "p999")):
        assert ln.ts == depths and ln.values == [s.by_direction["read"][key] for s in sw.steps]
    # the same numbers as zfsmon analyze's qd_sweep finding (read only: the worst direction is the read)
    (found,) = findings.analyze(samples).topic("qd_sweep")
    assert found.numbers["knee_depth"] == 4
    assert [st["iops"] for st in found.numbers["steps"]] == line.values
    assert [st["clat_p99_ms"] for st in found.numbers["steps"]] == lat.line("p99").values
    # past the knee p99 grows: 4 -> 64
    p99 = dict(zip(depths, lat.line("p99").values))
    assert p99[64] > 1.5 * p99[4]


def test_role_latency_page_holds_vdevperfs_distributions(ceiling):
    data, samples = ceiling
    vp = vdevperf.vdev_perf(samples)
    hist = _section(data, ROLES).panels[0]
    assert hist.histogram and hist.x_label == report.LATENCY_AXIS
    want = [d for d in vp.latency if d.op == "read"]
    assert [ln.label.split(" ")[0] for ln in hist.lines] == [d.role for d in want] == ["data", "cache"]
    data_read = vp.lat("data", "read")
    ln = hist.lines[0]
    assert ln.label == "data (trace:fusevdevlat): p50 114 us, p99 108.1 ms, 10,735 ops"
    assert ln.ts == [lo / 1e6 for lo, _hi, _n in data_read.buckets]
    assert ln.spans == [(hi - lo) / 1e6 for lo, hi, _n in data_read.buckets]
    assert ln.values == [100.0 * n / 10735 for _lo, _hi, n in data_read.buckets]
    assert sum(ln.values) == pytest.approx(100.0)


def test_per_depth_panel_sets_the_disks_beside_fio(ceiling):
    data, samples = ceiling
    sw = qdsweep.sweep(samples)
    rows = vdevperf.step_windows(samples, sw.steps)
    panel = data.panel("read p50/p99 per queue depth: fio against each vdev role")
    assert [ln.label for ln in panel.lines] == ["fio read p50", "fio read p99", "data read p50", "data read p99"]
    assert panel.line("fio read p50").values == [s.by_direction["read"]["p50"] for s in sw.steps]
    assert panel.line("data read p99").values == [r["data_read_p99_ms"] for r in rows]
    (found,) = findings.analyze(samples).topic("qd_sweep")
    assert panel.line("data read p50").values == [r["data_read_p50_ms"] for r in found.numbers["per_step_vdevs"]]
    # where the time went: at depth 64 fio waited ~100 ms at the median, the disks under 10 ms
    assert panel.line("fio read p50").values[-1] > 10 * panel.line("data read p50").values[-1]
    assert panel.marks == [(4, "knee: depth 4")]


def _axes(data, title: str):
    section = _section(data, title)
    fig = report.section_figure(section, data)
    return {ax.get_title(loc="left"): ax for ax in fig.axes if ax.get_visible()}


def test_the_drawn_figure_holds_the_panels_numbers(ceiling):
    data, _ = ceiling
    axes = _axes(data, SWEEP)
    ax = axes["IOPS vs queue depth"]
    curve, knee = ax.lines[0], ax.lines[1]
    panel = data.panel("IOPS vs queue depth")
    assert list(curve.get_xdata()) == panel.lines[0].ts and list(curve.get_ydata()) == panel.lines[0].values
    assert list(knee.get_xdata()) == [4, 4]  # the knee's vertical line
    assert ax.get_xscale() == "log"
    lat = axes["read completion latency vs queue depth (fio)"]
    assert lat.get_yscale() == "log"
    assert [list(ln.get_ydata()) for ln in lat.lines[:3]] == [
        ln.values for ln in data.panel("read completion latency vs queue depth (fio)").lines]
    roles = _axes(data, ROLES)
    hist = roles["read latency per vdev role (% of the role's read operations per bucket)"]
    steps = [p for p in hist.patches if type(p).__name__ == "StepPatch"]
    assert len(steps) == 2
    heights = [h for h in steps[0].get_data().values if h]
    assert heights == [v for v in _section(data, ROLES).panels[0].lines[0].values if v]


def test_l2arc_sweep_page(paths):
    data, samples = _load(paths["l2arc"])
    sw = qdsweep.sweep(samples)
    assert data.panel("IOPS vs queue depth").marks == [(16, "knee: depth 16")] and sw.knee.depth == 16
    assert max(data.panel("IOPS vs queue depth").lines[0].values) == pytest.approx(14283.486, abs=1e-2)
    panel = data.panel("read p50/p99 per queue depth: fio against each vdev role")
    # the cache device answered every depth; the data disks one read in the whole run
    assert len(panel.line("cache read p99").ts) == 7 and len(panel.line("data read p99").ts) == 1
    hist = _section(data, ROLES).panels[0]
    assert hist.lines[1].label.startswith("cache (trace:fusevdevlat)") and "267,070 ops" in hist.lines[1].label


def test_one_depth_is_drawn_but_said_to_be_no_sweep(paths):
    data, samples = _load(paths["slog"])
    assert qdsweep.sweep(samples) is None
    sweep = _section(data, SWEEP)
    assert sweep.title == SWEEP + " (1 depth: not a sweep, no knee; a sweep needs 3)"
    assert [p.title for p in sweep.panels][-1] == "write completion latency vs queue depth (fio)"
    assert all(p.marks == [] for p in sweep.panels)
    (step,) = qdsweep.steps_from_samples(samples)
    assert data.panel("write completion latency vs queue depth (fio)").line("p99").values == [
        step.by_direction["write"]["p99"]]
    beside = data.panel("write p50/p99 per queue depth: fio against each vdev role")
    assert [ln.label for ln in beside.lines] == ["fio write p50", "fio write p99", "data write p50", "data write p99",
                                                 "log write p50", "log write p99", "cache write p50",
                                                 "cache write p99"]
    # the SLOG answered the synchronous writes in under a millisecond, the throttled data disks in ~85 ms
    assert beside.line("log write p99").values[0] < 1 < 50 < beside.line("data write p50").values[0]
    assert data.panel("read p50/p99 per queue depth: fio against each vdev role") is None  # fio did not read


def test_pdf_has_the_fio_pages(paths, tmp_path, capsys):
    out = tmp_path / "ceiling.pdf"
    assert main(["report", paths["ceiling"], "--out", str(out)]) == 0
    blob = out.read_bytes()
    assert len(re.findall(rb"/Type\s*/Page\b(?!s)", blob)) == 1 + 7
    err = capsys.readouterr().err
    assert "8 page(s), 21 panels" in err
