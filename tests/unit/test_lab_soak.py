"""The real 100-minute lab soak (tests/data/zfsfuse/soak): what analyze says of a long window with a short warm-up.

The soak warmed its cold L2ARC in about 3 minutes of 100. Analysed whole, the early levels must still be the cold
ones: before EARLY_SECONDS they were the medians of the first tenth (10 minutes, by then warm), so the whole
window reported no warm-up and data-disk reads "from 0.00/s to 0.00/s".
"""

from __future__ import annotations

from typing import Dict

import pytest

from zfsmon.analysis import findings


def _numbers(rep: findings.Report, topic: str) -> Dict[str, object]:
    (f,) = rep.topic(topic)
    return f.numbers


def test_whole_soak_reports_the_minutes_long_warm_up(lab_soak) -> None:
    samples, events = lab_soak
    rep = findings.analyze(samples, events)
    assert rep.step == 1.0 and rep.runs == 100
    assert rep.end - rep.start == pytest.approx(6000, abs=5)
    w = _numbers(rep, "warmup")
    # the first minute's TPS was a few hundred, the plateau thousands (the soak's pgbench log: run 1 ~ 380 tps)
    assert 200 < w["tps_start"] < 600
    assert w["tps_plateau"] > 3000 and w["factor"] > 5
    assert 120 <= w["time_to_90pct_s"] <= 300  # 90 % of the plateau 2-5 minutes in, not hours
    reads = _numbers(rep, "disk_reads")
    assert reads["early_per_disk"] > 50  # the throttled data disks served the cold reads (100 IOPS each at most)
    assert reads["late_per_disk"] < 1
    assert 0 < reads["time_to_half_s"] <= 180
    fill = _numbers(rep, "l2arc_fill")
    assert 300 << 20 < fill["size_max_b"] < 320 << 20 and fill["time_to_90pct_s"] < 180
    assert "TPS warmed up from" in rep.topic("warmup")[0].text
    # its runs spread +-20 % around ~3,800 and one reached 4,750: that is no level TPS "fell" from
    assert rep.topic("decay") == []
    # the whole window's correlations are the plateau's noise; the warm-up's own say how TPS climbed
    whole = {f.numbers["with"]: f.numbers["spearman"] for f in rep.topic("correlation")}
    assert abs(whole[findings.L2_HIT]) < 0.3
    (wc,) = rep.topic("warmup_correlation")
    assert wc.numbers["phase_s"] == pytest.approx(2 * w["time_to_90pct_s"], abs=2)
    per = {k: v["spearman"] for k, v in wc.numbers["with"].items()}
    assert per[findings.L2_HIT] > 0.7 and per[findings.L2_SIZE] > 0.7 and per[findings.CACHE_READS] > 0.7
    assert per[findings.DATA_READS] < -0.7
    assert wc.text.startswith("During the warm-up (its first 6 min")


def test_start_levels_do_not_depend_on_the_windows_length(lab_soak) -> None:
    """The first 20 minutes and the whole 100 give the same cold levels: the early span is the first minute."""
    samples, events = lab_soak
    whole = findings.analyze(samples, events)
    first = findings.analyze(samples, events, end=whole.start + 20 * 60)
    assert first.end - first.start == pytest.approx(1200, abs=2)
    for topic, name in (("warmup", "tps_start"), ("disk_reads", "early_per_disk")):
        assert _numbers(first, topic)[name] == _numbers(whole, topic)[name], (topic, name)
    assert _numbers(first, "warmup")["time_to_90pct_s"] == pytest.approx(
        _numbers(whole, "warmup")["time_to_90pct_s"], abs=30)
