"""One window, one answer: `zfsmon analyze`, `zfsmon report` and the dashboard say the same of the same samples.

Goose eggs and ARC/L2ARC hit % are each computed once (zfsmon.analysis.goose, zfsmon.analysis.arc). These tests
build one recording and ask every view. The recording is tests/unit/report_data.py (genuine captures: zfs-fuse
lab `zpool iostat`, arcstats with a counter reset, arcstat's own percentages, pgbench) plus /proc/diskstats
readings of the lab's loop devices, taken as a sampler takes them: every second, half a second before each
`zpool iostat` report, starting before anything else was recorded. Each device counts what ZFS's rows say its
leaf did, except loop1's, which counts nothing: a goose egg whenever ZFS wrote to loop1.

Before, `zfsmon analyze` (no window given) and `zfsmon report` (the recording's time range given) laid their
goose-egg grid from different origins (the first findings series point vs the recording's first sample), so
the same leaf readings and device readings fell into different cells and the counts and verdicts differed.
"""

from __future__ import annotations

import json
from typing import Dict, List, Tuple

import pytest

from tests.conftest import TEST_DATA
from tests.unit import report_data as rd
from zfsmon import names
from zfsmon.analysis import findings as fd
from zfsmon.analysis import goose
from zfsmon.cli import main
from zfsmon.model import Entity, Kind, Record, Sample
from zfsmon.sources.devices import diskstats
from zfsmon.store import Recorder, Recording
from zfsmon.views import report_pdf as report
from zfsmon.views.top.state import TopState

DISKSTATS = TEST_DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt"
DEVICES = ("loop1", "loop2", "loop3", "loop4", "loop5", "loop6")
DEAD = "loop1"  # its device counts nothing while ZFS writes to it
FIRST_READ = rd.T0 - 3.5  # the sampler read /proc/diskstats before any other source reported


def _zfs_rows() -> List[Sample]:
    return [s for s in rd.records() if isinstance(s, Sample) and goose.is_device_row(s.entity) and not s.since_boot]


def device_readings() -> List[Sample]:
    """/proc/diskstats of the lab's loop devices every second: the captured counters plus what each leaf's
    `zpool iostat` rows say it did (spread evenly over each row's interval), nothing added for DEAD."""
    base = {s.entity.name: s for s in diskstats.parse_diskstats(DISKSTATS.read_text(), 0.0)}
    rows = _zfs_rows()

    def done(name: str, metric: str, t: float) -> float:
        return sum(s.metrics[metric] * max(0.0, min(t, s.ts) - (s.ts - (s.interval or 0.0)))
                   for s in rows if s.entity.name == name)

    out: List[Sample] = []
    for k in range(45):
        t = FIRST_READ + k
        for name in DEVICES:
            m = dict(base[name].metrics)
            if name != DEAD:
                m["reads"] += done(name, "read_ops", t)
                m["writes"] += done(name, "write_ops", t)
            out.append(Sample(t, base[name].entity, m, source=base[name].source))
    return out


@pytest.fixture(scope="module")
def story(tmp_path_factory, fixtures) -> Tuple[str, List[Record]]:
    path = str(tmp_path_factory.mktemp("agree") / "soak.zfsmon")
    return path, rd.write_recording(path, device_readings())


def _dashboard(recs: List[Record], window_s: float) -> TopState:
    """The dashboard's model fed as the sampler feeds it: one batch per timestamp."""
    st = TopState(window_s=window_s)
    batches: Dict[float, List[Record]] = {}
    for r in recs:
        batches.setdefault(r.ts, []).append(r)
    for ts in sorted(batches):
        st.feed(batches[ts])
    return st


def test_analyze_report_and_dashboard_give_one_goose_verdict(story, capsys) -> None:
    path, recs = story
    assert main(["analyze", path, "--json"]) == 0
    (cli,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["topic"] == "goose_eggs"]
    with Recording.open(path) as rec:
        data = report.build(rec)
        samples, events = list(rec.samples()), rec.events()
        lo, hi = rec.time_range()
    assert lo == FIRST_READ
    dash = _dashboard(recs, hi - lo + 1.0).findings_job()()
    assert [t for t in data.findings if "goose egg" in t.lower()] == [cli["text"]]
    # the window given explicitly (as the report and the dashboard give it), a grid step of analyze's own: the same
    for rep in (dash, fd.analyze(samples, events, start=lo, end=hi), fd.analyze(samples, events, step=3.0)):
        (g,) = rep.topic("goose_eggs")
        assert (g.text, g.numbers) == (cli["text"], cli["numbers"])
    # and what it says: one verdict per `zpool iostat` interval of each device row
    rows = _zfs_rows()
    per = cli["numbers"]["per_leaf"]
    assert set(per) == set(DEVICES)
    for name in DEVICES:
        ops = [goose.device_ops_per_s(s.metrics) for s in rows if s.entity.name == name]
        busy = sum(1 for v in ops if v is not None and v >= 1.0)
        want = {goose.GOOSE_EGG if name == DEAD else goose.NOT_GOOSE_EGG: busy, goose.IDLE: len(ops) - busy}
        assert per[name] == {k: v for k, v in want.items() if v}, name
    assert per[DEAD][goose.GOOSE_EGG] == 3  # 384, 47 and 29 writes/s at T0+22, 33 and 36
    assert cli["text"].startswith(f"Goose eggs: the device layer showed (almost) nothing while ZFS was busy on "
                                  f"{DEAD} in 3 of 3 busy intervals (e.g. ZFS 384 ops/s, device 0 ops/s)")


def _report_line(data: report.ReportData, title: str, label: str) -> List[Tuple[float, float]]:
    ln = data.panel(title).line(label)
    return list(zip(ln.ts, ln.values)) if ln else []


def _views_hit_pct(path: str, recs: List[Record]) -> Dict[str, Dict[str, List[Tuple[float, float]]]]:
    """ARC and L2ARC hit % per interval as findings, the report and the dashboard hold them."""
    samples = [r for r in recs if isinstance(r, Sample)]
    series = fd.series_from_samples(samples)
    with Recording.open(path) as rec:
        data = report.build(rec)
    st = _dashboard(recs, 3600.0)
    return {
        "findings": {"arc": [(p[0], p[1]) for p in series.get(fd.ARC_HIT, [])],
                     "l2": [(p[0], p[1]) for p in series.get(fd.L2_HIT, [])]},
        "report": {"arc": _report_line(data, "ARC hit %", "all"), "l2": _report_line(data, "L2ARC hit %", "hit %")},
        "dashboard": {"arc": st.spark("arc", "hit_pct"), "l2": st.spark("l2arc", "hit_pct")},
    }


def test_arc_hit_pct_is_one_series_in_every_view(story) -> None:
    """Arcstats snapshots at +20, 40, 60, 80 (a reset at 60), arcstat's own percentages every 10 s in between:
    before, the dashboard lost the +40 ratio (a percentages-only reading broke its chain of counter readings)."""
    views = _views_hit_pct(*story)
    want = views["report"]
    assert [t for t, _ in want["arc"]] == [rd.T0 + 40, rd.T0 + 80] and [t for t, _ in want["l2"]] == [rd.T0 + 80]
    assert views["findings"] == want and views["dashboard"] == want


def _arc(ts: float, hits: float, iohits: float, misses: float, mru_hits: float, deleted: float) -> Sample:
    return Sample(ts, Entity(Kind.ARC, "arc"), {"hits": hits, "iohits": iohits, "misses": misses,
                                                "mru_hits": mru_hits, "deleted": deleted, "size": 2.0 ** 30},
                  source="arcstats")


def test_a_restart_inside_the_window_gives_no_ratio_in_any_view(tmp_path) -> None:
    """The kernel module restarts between +10 and +20. Afterwards hits and misses happen to stand above their old
    values (a cold cache misses a lot), but mru_hits and deleted went backwards: the counters started anew.

    Before, findings took each counter on its own, found hits and misses still growing and reported
    100 / (100 + 1000) = 9 % for +20, a ratio of two numbers across the restart, while the report and the
    dashboard (whole reading = new baseline) showed none; findings also left iohits out of the accesses.
    """
    t0 = 1_700_000_000.0
    recs: List[Record] = [_arc(t0, 5000, 40, 1000, 4000, 300), _arc(t0 + 10, 5600, 60, 1100, 4500, 320),
                          _arc(t0 + 20, 5700, 3, 2100, 100, 5), _arc(t0 + 30, 6700, 53, 2550, 900, 50)]
    path = str(tmp_path / "restart.zfsmon")
    with Recorder(path, {"host": "test", "interval": "10"}) as rec:
        for r in recs:
            rec.write([r])
    views = _views_hit_pct(path, recs)
    want = [(t0 + 10, pytest.approx(100.0 * 600 / (600 + 20 + 100))),
            (t0 + 30, pytest.approx(100.0 * 1000 / (1000 + 50 + 450)))]
    for name, v in views.items():
        assert v["arc"] == want, name
    assert views["findings"] == views["report"] == views["dashboard"]


def test_postgres_buffer_hit_pct_is_one_series_in_findings_and_the_dashboard() -> None:
    """Two databases' pg_stat_database counters, one reset by pg_stat_reset(): each database is its own chain.

    Before, findings ran one database's counters into the other's (blks_hit of bench and of postgres taken as one
    counter), so its PostgreSQL hit % differed from the dashboard's.
    """
    t0 = 1_700_000_000.0
    readings = {"bench": [(9000, 1000), (9900, 1100), (100, 50), (1000, 150)],  # reset between +10 and +20
                "postgres": [(50, 5), (60, 5), (60, 5), (90, 15)]}
    recs: List[Record] = [Sample(t0 + 10 * i, Entity(Kind.WORKLOAD, names.PGSTAT_PREFIX + db),
                                 {"blks_hit": hit, "blks_read": read, "xact_commit": 10.0 * i}, source="pgstat")
                          for i in range(4) for db, rows in readings.items() for hit, read in [rows[i]]]
    series = fd.series_from_samples([r for r in recs if isinstance(r, Sample)])
    dash = _dashboard(recs, 3600.0)
    want = [(t0 + 10, 90.0), (t0 + 10, 100.0), (t0 + 30, 90.0), (t0 + 30, 75.0)]  # postgres +20: no reads, no %
    assert [(p[0], p[1]) for p in series[fd.PG_HIT]] == want
    assert dash.spark("workload", "pg_hit_pct") == want
