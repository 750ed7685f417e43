"""ARC/L2ARC on the real zfs-fuse lab: zfsmon's hit ratio equals the one computed from the raw kstat files."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Dict, Set, Tuple

import pytest

from tests.conftest import wait_until
from tests.lab.helpers import drop_host_caches, random_reads, write_file
from zfsmon.analysis.rates import ArcAnalyzer
from zfsmon.model import Kind, Sample
from zfsmon.sources.kstat.arcstats import FuseArcstatsCollector
from zfsmon.sources.kstat.text import StatDir

pytestmark = [pytest.mark.lab]


def _raw(arc_dir: str) -> Tuple[float, float]:
    """hits and misses read straight from zfs-fuse's files, without zfsmon's reader."""
    with open(os.path.join(arc_dir, "hits")) as h, open(os.path.join(arc_dir, "misses")) as m:
        return float(h.read()), float(m.read())


def _bracketed(coll: FuseArcstatsCollector, arc_dir: str):
    """A zfsmon reading with raw readings taken just before and just after it."""
    before = _raw(arc_dir)
    recs = coll.poll()
    after = _raw(arc_dir)
    samples: Dict[Kind, Sample] = {r.entity.kind: r for r in recs if isinstance(r, Sample)}
    assert Kind.ARC in samples, recs
    return before, samples, after


def _stable(coll: FuseArcstatsCollector, arc_dir: str):
    """A reading during which the raw counters did not move, so zfsmon's values must equal them exactly."""
    def still():
        before, samples, after = _bracketed(coll, arc_dir)
        return (before, samples) if before == after else None
    return wait_until(still, 60, "the ARC counters to hold still for one reading", step=0.05)


def _pct(hits: float, misses: float) -> float:
    return 100.0 * hits / (hits + misses)


def test_hit_ratio_matches_raw_kstat_deltas(lab):
    arc_dir = os.path.join(lab.kstat_dir, "arcstats")
    path = os.path.join(lab.mountpoint, "arc-lab.bin")
    write_file(path, 96)  # larger than the 64 MB ARC: random reads both hit and miss
    drop_host_caches()
    coll = FuseArcstatsCollector(arc_dir)
    an = ArcAnalyzer()

    # 1. while a read workload runs: zfsmon's counters lie between raw readings taken around them
    stop = threading.Event()
    rounds = [0]

    def workload() -> None:
        seed = 0
        while not stop.is_set():
            seed += 1
            random_reads(path, 200, seed=seed)
            drop_host_caches()
            rounds[0] += 1

    def hit_and_missed_since(raw) -> bool:
        now = _raw(arc_dir)
        return now[0] > raw[0] and now[1] > raw[1]

    t = threading.Thread(target=workload, daemon=True)
    t.start()
    try:
        wait_until(lambda: rounds[0] >= 1, 120, "the read workload's first round")
        b1, s1, a1 = _bracketed(coll, arc_dir)
        an.update(s1[Kind.ARC])
        # a busy interval: a few rounds of reads, both hits and misses among them
        done = rounds[0]
        wait_until(lambda: rounds[0] >= done + 3 and hit_and_missed_since(a1), 120,
                   "three more rounds of reads, with both ARC hits and misses")
        b2, s2, a2 = _bracketed(coll, arc_dir)
        d, events = an.update(s2[Kind.ARC])
    finally:
        stop.set()
        t.join(timeout=60)
    assert events == [] and d is not None
    m1, m2 = s1[Kind.ARC].metrics, s2[Kind.ARC].metrics
    for i, name in enumerate(("hits", "misses")):
        assert b1[i] <= m1[name] <= a1[i] and b2[i] <= m2[name] <= a2[i], name
    dh, dm = m2["hits"] - m1["hits"], m2["misses"] - m1["misses"]
    assert dh > 0 and dm > 0, "the workload should both hit and miss"
    lo = _pct(b2[0] - a1[0], a2[1] - b1[1])  # fewest hits, most misses the raw readings allow
    hi = _pct(a2[0] - b1[0], b2[1] - a1[1])
    assert lo - 1e-9 <= d.metrics["hit_pct"] <= hi + 1e-9
    assert d.metrics["hit_pct"] == pytest.approx(_pct(dh, dm))
    assert d.metrics["reads_per_s"] == pytest.approx((dh + dm) / d.interval)

    # 2. quiescent readings around a burst of reads: equality with the raw files, exactly
    r1, q1 = _stable(coll, arc_dir)
    an2 = ArcAnalyzer()
    an2.update(q1[Kind.ARC])
    random_reads(path, 1500, seed=99)
    r2, q2 = _stable(coll, arc_dir)
    d2, _ = an2.update(q2[Kind.ARC])
    assert (q1[Kind.ARC].metrics["hits"], q1[Kind.ARC].metrics["misses"]) == r1
    assert (q2[Kind.ARC].metrics["hits"], q2[Kind.ARC].metrics["misses"]) == r2
    assert r2[0] > r1[0] and r2[1] >= r1[1]
    assert d2.metrics["hit_pct"] == pytest.approx(_pct(r2[0] - r1[0], r2[1] - r1[1]), abs=1e-12)

    # 3. the L2ARC is there (the lab has a cache device) under the l2arc entity, prefix dropped, and fed: the
    #    file is larger than the ARC, so the feed writes its buffers to the cache device (within seconds)
    l2 = q2[Kind.L2ARC].metrics
    for name in ("hits", "misses", "size", "read_bytes", "write_bytes", "feeds"):
        assert name in l2, name
    assert not any(k.startswith("l2_") for k in q2[Kind.ARC].metrics)

    def fed():
        m = _bracketed(coll, arc_dir)[1][Kind.L2ARC].metrics
        return m if m["write_bytes"] > 0 and m["size"] > 0 and m["feeds"] > 0 else None

    l2 = wait_until(fed, 60, "the L2ARC feed to write to the cache device")
    print(f"\nlab ARC: busy interval {d.interval:.2f}s hit% {d.metrics['hit_pct']:.2f} (raw bounds {lo:.2f}..{hi:.2f}),"
          f" {d.metrics['reads_per_s']:.0f} reads/s; quiet hit% {d2.metrics['hit_pct']:.2f};"
          f" {len(q2[Kind.ARC].metrics)} ARC + {len(l2)} L2ARC statistics")
    os.unlink(path)


def test_arcstat_command_on_the_lab(lab):
    arc_dir = os.path.join(lab.kstat_dir, "arcstats")
    out = subprocess.run([sys.executable, "-m", "zfsmon", "arcstat", "--kstat-dir", arc_dir, "-f",
                          "time,read,hit%,miss%,size,c,l2hit%,l2size,l2bytes", "1", "2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["time", "read", "hit%", "miss%", "size", "c", "l2hit%", "l2size", "l2bytes"]
    assert len(lines) == 3 and all(len(ln.split()) == 9 for ln in lines[1:])
    csv = subprocess.run([sys.executable, "-m", "zfsmon", "arcstat", "--kstat-dir", arc_dir, "--csv", "1", "1"],
                         capture_output=True, text=True, timeout=60)
    assert csv.returncode == 0, csv.stderr
    header, row = csv.stdout.splitlines()
    assert "l2size" in header.split(",") and len(row.split(",")) == len(header.split(","))


def _by_name(arc_dir: str, name: str) -> str:
    """A statistic's text read by name in full, without zfsmon's reader."""
    with open(os.path.join(arc_dir, name)) as f:
        return f.read()


def test_held_statistics_follow_values_that_gain_and_lose_digits(lab):
    """StatDir asks each read for the length of the statistic's last value: on the daemon, values that gained a
    digit (read again in full by name) and values that lost one (whole, shorter than asked) equal what a fresh
    read by name gives just before and just after, whenever those two agree."""
    arc_dir = os.path.join(lab.kstat_dir, "arcstats")
    stats = StatDir(arc_dir)
    watched = ("size", "data_size", "other_size", "hdr_size", "hash_elements", "l2_size")
    last: Dict[str, str] = {k: v for k, v in stats.read().items() if k in watched}
    grew: Set[str] = set()
    shrank: Set[str] = set()
    compared = [0]
    big = os.path.join(lab.mountpoint, "digits.bin")

    def both_ways() -> bool:
        if os.path.exists(big):  # the ARC drops a removed file's buffers: its sizes lose digits
            os.unlink(big)
            subprocess.run(["sync"], check=True)
        else:  # and a file written gives them back
            write_file(big, 12)
        for name in watched:
            before = _by_name(arc_dir, name)
            got = stats.read()[name]
            after = _by_name(arc_dir, name)
            if before == after:
                assert got == before, name
                compared[0] += 1
            (grew if len(got) > len(last[name]) else shrank if len(got) < len(last[name]) else set()).add(name)
            last[name] = got
        return bool(grew) and bool(shrank)

    try:
        wait_until(both_ways, 120, "ARC sizes to gain a digit and to lose one")
    finally:
        stats.close()
        if os.path.exists(big):
            os.unlink(big)
    assert compared[0] > 0
