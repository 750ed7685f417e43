"""A restart inside a soak recording: found by the ARC's counters going back, with the L2ARC rebuild and TPS's
recovery, through :func:`zfsmon.analysis.restart.restarts`, ``analyze`` and a recording the store wrote.

The ARC and L2ARC readings are the OpenZFS 2.3 guest's real arcstats capture (tests/data/openzfs-2.3/kstat/
arcstats) as the kstat reader parses it, with the counters a soak moves set per reading: ``hits``/``misses``
climbing, and back near 0 after the restart (the module reloaded), ``l2_rebuild_*`` growing while the L2ARC is
rebuilt. TPS is pgbench's per-second progress, as its reader records it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, List, Optional, Sequence

import pytest

from tests.conftest import TEST_DATA
from zfsmon import metrics, names
from zfsmon.analysis import findings
from zfsmon.analysis.findings import (
    KINDS,
    analyze,
    reads_metric,
    restart_compared,
    restart_figures,
    restart_text,
)
from zfsmon.analysis.restart import Restart, restarts
from zfsmon.model import Entity, Event, EventKind, Kind, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.store import Recorder, Recording
from zfsmon.views.window import read_window

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00Z
GIB = float(1 << 30)
CAPTURE = (TEST_DATA / "openzfs-2.3" / "kstat" / "arcstats").read_text()
ARC_READ, L2_READ = arcstats.parse_linux(CAPTURE, T0)
PGBENCH = Entity(Kind.WORKLOAD, names.PGBENCH)

Tps = Callable[[float], Optional[float]]


def _caches(ts: float, hits: float, l2: Dict[str, float]) -> List[Sample]:
    """The capture's ARC and L2ARC readings at ``ts`` with these counters."""
    return [dataclasses.replace(ARC_READ, ts=ts, metrics={**ARC_READ.metrics, "hits": hits, "misses": hits / 20}),
            dataclasses.replace(L2_READ, ts=ts, metrics={**L2_READ.metrics, **l2})]


def _no_rebuild(_t: float) -> Dict[str, float]:
    return {"rebuild_size": 0.0, "rebuild_asize": 0.0, "rebuild_bufs": 0.0, "rebuild_success": 0.0}


def _rebuilt_in(seconds: float, size: float, bufs: float) -> Callable[[float], Dict[str, float]]:
    """The rebuild's counters ``t`` s into a boot: growing for ``seconds``, then done (success bumped)."""
    def at(t: float) -> Dict[str, float]:
        f = min(1.0, t / seconds)
        return {"rebuild_size": f * size, "rebuild_asize": f * size * 0.98, "rebuild_bufs": round(f * bufs),
                "rebuild_success": 1.0 if t >= seconds else 0.0}
    return at


def plateau(t: float) -> float:
    """A warm plateau of 800 TPS, +-10 from second to second."""
    return 800.0 + (10.0 if int(t) % 2 else -10.0)


def ramp(start_s: float, seconds: float, lo: float = 200.0) -> Tps:
    """No TPS until ``start_s`` into the boot (PostgreSQL starting), then from ``lo`` up to 800 over ``seconds``."""
    return lambda t: None if t < start_s else lo + (800.0 - lo) * min(1.0, (t - start_s) / seconds)


def boot(t0: float, seconds: float, tps: Optional[Tps], l2: Callable[[float], Dict[str, float]],
         hits0: float = 1_000.0) -> List[Sample]:
    """One boot's readings from ``t0``: caches every 2 s (ARC counters from ``hits0``), TPS every second."""
    out: List[Sample] = []
    for i in range(int(seconds)):
        t = t0 + i
        if i % 2 == 0:
            out += _caches(t, hits0 + 500.0 * i, l2(float(i)))
        v = tps(float(i)) if tps else None
        if v is not None:
            out.append(Sample(t, PGBENCH, {"tps": v, "latency_avg_ms": 1000.0 / v if v > 0 else 0.0}, interval=1.0,
                              source=names.PGBENCH))
    return out


#: the first boot: 10 min warm, its counters far up
WARM = boot(T0, 600, plateau, _no_rebuild, hits0=5e8)
#: the second boot starts 181 s after the first's last sample (at T0 + 599)
AT = T0 + 780.0


def test_a_restart_with_the_l2arc_rebuild_gives_its_figures_and_sentence():
    after = boot(AT, 300, ramp(10, 60), _rebuilt_in(10, 1.5 * GIB, 20_000))
    got = findings.restart_figures(WARM + after)
    assert len(got) == 1
    r = got[0]
    assert (r.at, r.down_s) == (AT, 181.0)
    assert (r.rebuilt_bytes, r.rebuilt_bufs, r.rebuild_ok, r.l2_interval_s) == (1.5 * GIB, 20_000, True, 2.0)
    assert r.rebuild_s == 10.0  # the first reading at which size and buffers had stopped growing
    assert r.plateau_tps == pytest.approx(800.0, abs=10.0)
    # 90 % of 800 (720) is reached 10 + 60 * 520/600 = 62 s into the boot; a 2 s grid puts it within a cell
    assert r.back_90_s == pytest.approx(62.0, abs=2.0)
    assert r.recorded_s == 299.0 and r.new_session is False
    text = restart_text(r)
    assert text.startswith("After the restart at 00:13:00Z (down 3 min 1 s) the L2ARC was rebuilt: 1.5 GiB "
                           "(20,000 buffers) in 10 s (L2ARC readings every 2 s); TPS back to 90 % of its plateau (")
    assert text.endswith(f" TPS before the restart) after {findings.duration(r.back_90_s)}.")


def test_a_cold_restart_says_the_l2arc_started_empty_and_how_long_tps_took():
    after = boot(AT, 400, ramp(10, 240, lo=100.0), _no_rebuild)
    [r] = findings.restart_figures(WARM + after)
    assert (r.rebuilt_bytes, r.rebuilt_bufs, r.rebuild_ok, r.rebuild_s) == (0.0, 0.0, False, None)
    assert r.back_90_s == pytest.approx(10 + 240 * 620 / 700, abs=2.0)
    text = restart_text(r)
    assert "the L2ARC started empty (no rebuild); TPS back to 90 % of its plateau" in text
    assert "rebuilt" not in text


def test_tps_not_back_within_what_was_recorded_is_said_so():
    after = boot(AT, 120, ramp(10, 600, lo=100.0), _no_rebuild)
    [r] = findings.restart_figures(WARM + after)
    assert r.back_90_s is None and r.recorded_s == 119.0
    assert restart_text(r).endswith("; TPS not back to 90 % of its plateau (800 TPS before the restart) within "
                                    "the 119 s recorded.")


def test_a_gap_without_the_counters_going_back_is_no_restart():
    # the recorder paused for 3 minutes (a new session even), the host did not reboot: the ARC counted on
    later = boot(AT, 300, plateau, _no_rebuild, hits0=5e8 + 500.0 * 900)
    resumed = [Event(AT - 5, EventKind.INFO, names.RECORDING_RESUMED + ": zfsmon soak", source="record")]
    assert restarts(WARM + later, resumed) == []
    rep = analyze(WARM + later, resumed)
    assert rep.topic("restart") == [] and "restart" not in rep.render()


def test_counters_going_back_without_a_gap_are_a_reset_not_a_restart():
    # the ARC read every 2 s throughout, its counters back near 0 from one reading to the next
    later = boot(T0 + 600, 300, plateau, _no_rebuild)
    assert restarts(WARM + later) == []
    # a reading missed (4 s without one: more than 1.5 intervals), TPS read on: ZFS's own gap is the restart's
    assert [(r.at, r.down_s) for r in restarts(WARM + later[2:])] == [(T0 + 602, 4.0)]


def test_without_tps_the_rebuild_is_still_said():
    after = boot(AT, 100, None, _rebuilt_in(6, 3 * GIB, 40_000))
    no_tps = [s for s in WARM if s.entity.kind is not Kind.WORKLOAD] + after
    [r] = findings.restart_figures(no_tps)
    assert (r.plateau_tps, r.back_90_s) == (None, None)
    assert (r.rebuilt_bytes, r.rebuild_s, r.rebuild_ok) == (3 * GIB, 6.0, True)
    text = restart_text(r)
    assert text == ("After the restart at 00:13:00Z (down 3 min 2 s) the L2ARC was rebuilt: 3.0 GiB (40,000 "
                    "buffers) in 6 s (L2ARC readings every 2 s).")
    assert "TPS" not in text


def test_a_rebuild_still_growing_at_the_end_has_no_time():
    after = boot(AT, 20, None, _rebuilt_in(60, 3 * GIB, 40_000))
    [r] = findings.restart_figures(WARM + after)
    assert r.rebuild_s is None and not r.rebuild_ok and r.rebuilt
    assert "the L2ARC rebuild restored 921.6 MiB (12,000 buffers), still rebuilding at the end (L2ARC readings " \
           "every 2 s), but reported no success;" in restart_text(r)


def test_an_aborted_rebuild_says_what_it_restored_and_no_success():
    def aborted(t: float) -> Dict[str, float]:  # stopped at 8 s (an I/O error), success never bumped
        done = _rebuilt_in(20, 2 * GIB, 30_000)(min(t, 8.0))
        return {**done, "rebuild_success": 0.0, "rebuild_io_errors": 1.0 if t >= 8 else 0.0}
    after = boot(AT, 60, None, aborted)
    [f] = analyze(WARM + after).topic("restart")
    assert (f.numbers["rebuilt_bytes"], f.numbers["rebuild_s"], f.numbers["rebuild_ok"]) == (0.8 * GIB, 8.0, False)
    assert "the L2ARC rebuild restored 819.2 MiB (12,000 buffers) in 8 s (L2ARC readings every 2 s), but reported " \
           "no success" in f.text
    assert f.moments["the L2ARC rebuild stopped growing"] == AT + 8.0 and "the L2ARC rebuild done" not in f.moments


def _damaged(samples: Sequence[Sample]) -> List[Sample]:
    """Every tenth cache reading's counters damaged (nan, negative, infinite, missing), TPS too."""
    bad = [math.nan, -1.0, math.inf]
    out = []
    for i, s in enumerate(samples):
        if i % 10 == 3 and s.entity.kind in (Kind.ARC, Kind.L2ARC):
            m = dict(s.metrics)
            v = bad[(i // 10) % 3]
            for k in ("hits", "misses", "rebuild_size", "rebuild_bufs", "rebuild_success"):
                m[k] = v
            if i % 30 == 3:
                for k in ("hits", "rebuild_size"):
                    m.pop(k, None)
            s = dataclasses.replace(s, metrics=m)
        elif i % 10 == 7 and s.entity.kind is Kind.WORKLOAD:
            s = dataclasses.replace(s, metrics={**s.metrics, "tps": bad[(i // 10) % 3]})
        out.append(s)
    return out


def test_damaged_values_give_no_traceback_and_no_damaged_figure():
    after = boot(AT, 300, ramp(10, 60), _rebuilt_in(10, 1.5 * GIB, 20_000))
    window = _damaged(WARM + after)
    [r] = findings.restart_figures(window, step=2.0)  # the grid the undamaged readings give
    assert r.at == AT and r.rebuilt_bytes == 1.5 * GIB and r.rebuild_ok
    assert r.plateau_tps == pytest.approx(800.0, abs=10.0) and r.back_90_s == pytest.approx(62.0, abs=4.0)
    for v in dataclasses.asdict(r).values():
        assert not (isinstance(v, float) and not math.isfinite(v))
    text = analyze(window).topic("restart")[0].text
    assert "nan" not in text and "inf" not in text


def test_none_where_a_number_belongs_is_taken_as_missing():
    after = boot(AT, 60, None, _rebuilt_in(10, GIB, 1_000))
    broken = [dataclasses.replace(s, metrics={**s.metrics, "rebuild_size": None, "misses": None})
              if s.entity.kind in (Kind.ARC, Kind.L2ARC) and s.ts == AT + 10 else s for s in WARM + after]
    [r] = restarts(broken)
    assert (r.at, r.rebuilt_bytes, r.rebuild_s) == (AT, GIB, 12.0)  # the reading at +10 s is not counted


def test_two_restarts_are_two_findings_each_against_the_plateau_before_it():
    first = boot(AT, 600, lambda t: None if t < 10 else 400.0 + (5.0 if int(t) % 2 else -5.0),
                 _rebuilt_in(8, GIB, 10_000))
    at2 = AT + 600 + 100
    second = boot(at2, 300, ramp(10, 30, lo=100.0), _no_rebuild)
    got = findings.restart_figures(WARM + first + second)
    assert [r.at for r in got] == [AT, at2]
    assert [r.down_s for r in got] == [181.0, 101.0]
    assert got[0].plateau_tps == pytest.approx(800.0, abs=10.0)
    assert got[1].plateau_tps == pytest.approx(400.0, abs=5.0)  # the second boot's own plateau
    assert got[0].recorded_s == 599.0  # up to the second gap
    assert (got[0].rebuild_ok, got[1].rebuild_ok) == (True, False)
    rep = analyze(WARM + first + second)
    assert [f.numbers["at"] for f in rep.topic("restart")] == [AT, at2]


def test_analyze_reports_the_restart_with_its_moments():
    after = boot(AT, 300, ramp(10, 60), _rebuilt_in(10, 1.5 * GIB, 20_000))
    rep = analyze(WARM + after)
    [f] = rep.topic("restart")
    assert f.text in rep.render()
    assert f.text.startswith("After the restart at 00:13:00Z (down 3 min 1 s) the L2ARC was rebuilt: 1.5 GiB")
    assert f.numbers["at"] == AT and f.numbers["rebuild_s"] == 10.0
    assert f.moments["the L2ARC rebuild done"] == AT + 10.0
    assert f.moments["TPS back to 90% of its plateau after the restart"] == AT + f.numbers["back_90_s"]
    assert any(v == AT for v in f.moments.values())
    d = rep.as_dict()["findings"]
    assert any(x["topic"] == "restart" and x["numbers"]["rebuilt_bytes"] == 1.5 * GIB for x in d)


def test_two_recordings_compared_in_one_sentence():
    warm = Restart(AT, 181.0, 1.5 * GIB, 20_000, 10.0, True, 800.0, 62.0, 298.0, 2.0)
    cold = Restart(AT, 185.0, 0.0, 0.0, None, False, 790.0, 222.0, 400.0, 2.0)
    assert restart_compared(warm, cold) == ("After the restart the L2ARC was rebuilt (1.5 GiB in 10 s); TPS was "
                                            "back to 90 % of its plateau after 62 s, against 3 min 42 s cold.")
    never = dataclasses.replace(cold, back_90_s=None)
    assert restart_compared(warm, never).endswith("after 62 s, against more than 6 min 40 s (not back within "
                                                  "what was recorded) cold.")
    assert restart_compared(cold, cold).startswith("After the restart the L2ARC was not rebuilt; TPS was back")
    assert "no plateau" in restart_compared(warm, dataclasses.replace(cold, plateau_tps=None))


def test_a_recording_with_two_sessions_written_by_the_store(tmp_path):
    """Two processes append to one recording (a soak resumed after a reboot): read back, the restart is found
    and the second session's ``recording resumed`` event lies in the gap."""
    path = str(tmp_path / "soak.zfsmon")
    after = boot(AT, 200, ramp(10, 60), _rebuilt_in(10, 1.5 * GIB, 20_000))
    for clock, part in ((T0 - 1, WARM), (AT - 20, after)):
        with Recorder(path, {"argv": "zfsmon top --soak"}, clock=lambda c=clock: c) as rec:
            for t in sorted({s.ts for s in part}):
                rec.write([s for s in part if s.ts == t])
    with Recording.open(path) as rec:
        samples, events = list(rec.samples()), rec.events()
        folded = read_window(rec, None, None, 10.0, KINDS, reads_metric)  # as analyze reads a long window
    [r] = restart_figures(samples, events)
    assert (r.at, r.down_s, r.rebuilt_bytes, r.rebuild_s, r.new_session) == (AT, 181.0, 1.5 * GIB, 10.0, True)
    assert analyze(samples, events).topic("restart")[0].numbers["new_session"] is True
    # folded to 10 s steps: a step's last kstat reading stands for it, the gap and the rebuild's total remain
    [f] = analyze(folded, events, step=10.0).topic("restart")
    assert f.numbers["rebuilt_bytes"] == 1.5 * GIB and f.numbers["rebuild_ok"] is True
    assert AT <= f.numbers["at"] < AT + 10 and 181.0 <= f.numbers["down_s"] < 191.0
    assert f.numbers["rebuild_s"] == pytest.approx(10.0, abs=10.0)


def test_the_rebuild_statistics_are_l2arc_counters_and_the_log_blocks_gauges():
    """The capture's l2_rebuild_* and l2_log_blk_* land on the l2arc entity without the prefix; what OpenZFS only
    adds to is a counter, what it also lowers (blocks on the device) a gauge."""
    for name in ("rebuild_success", "rebuild_size", "rebuild_asize", "rebuild_bufs", "rebuild_bufs_precached",
                 "rebuild_log_blks", "rebuild_lowmem", "rebuild_cksum_lb_errors", "log_blk_writes"):
        assert name in L2_READ.metrics and name in metrics.COUNTERS[Kind.L2ARC], name
    for name in ("log_blk_count", "log_blk_asize", "log_blk_avg_asize"):
        assert name in L2_READ.metrics and name not in metrics.COUNTERS[Kind.L2ARC], name
    assert L2_READ.metrics["rebuild_dh_errors"] == 1.0  # as captured


def test_the_warm_up_is_the_first_boots_when_a_restart_follows():
    """A cold first boot warming up from 200 to 800 TPS, then a reboot whose cold start climbs again: the warm-up
    finding speaks of the first boot alone (its own start and plateau), the restart of the second."""
    first = boot(T0, 600, ramp(0, 300), _no_rebuild, hits0=5e8)
    after = boot(AT, 300, ramp(10, 120, lo=100.0), _no_rebuild)
    rep = analyze(first + after)
    [warm] = rep.topic("warmup")
    assert warm.text.startswith("Before the first restart: TPS warmed up from "), warm.text
    assert 200.0 <= warm.numbers["tps_start"] < 300.0  # the median of the ramp's first tenth
    assert warm.numbers["tps_plateau"] == pytest.approx(800.0, rel=0.02)
    assert warm.numbers["before_restart_at"] == AT
    assert warm.numbers["time_to_90pct_s"] == pytest.approx(250.0, abs=20.0)  # 90 % of 800 at 300*520/600 s
    assert len(rep.topic("restart")) == 1
    # without the second boot the same warm-up says nothing of a restart
    [alone] = analyze(first).topic("warmup")
    assert alone.text.startswith("TPS warmed up from ") and "before_restart_at" not in alone.numbers
