"""Cache advice (ghost hits, L2ARC-eligible evictions, L2ARC hits) on real arcstats: the guest's before/after pair
and since-boot snapshots of the shared fixtures."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DATA, fixture_files
from zfsmon.analysis import cacheadvice, findings
from zfsmon.model import Sample
from zfsmon.sources import detect


def _samples(*paths):
    out = []
    for p in paths:
        text = p.read_text()
        out += [r for r in detect.detect(text).read(text, p.name, None) if isinstance(r, Sample)]
    return out


def _fixture(part: str):
    (path,) = [p for p in fixture_files("arcstats") if part in p.name]
    return path


def test_window_of_the_guest_fio_run():
    guest = TEST_DATA / "openzfs-2.3"
    adv = cacheadvice.advise(_samples(guest / "arcstats.before", guest / "arcstats.after"))
    assert not adv.since_boot
    assert adv.numbers["arc_misses"] == 8666 - 69 and adv.numbers["ghost_hits"] == 0
    assert adv.numbers["arc_fill"] == pytest.approx(113101296 / 268435456)
    assert adv.numbers["evict_l2_eligible"] == 0 and adv.numbers["l2_misses"] == 8644 - 47
    assert adv.lines == [
        "ARC: 107.9 MiB of its 256.0 MiB maximum (42%) and 0 ghost hits in the window: it had room; a larger ARC "
        "would not help.",
        "Nothing was evicted from the ARC in the window: an L2ARC has nothing to take.",
        "L2ARC: 0 hits of 8,597 lookups (0%) in the window, holding 93.6 MiB; still warming (no hits yet)."]


def test_ghost_hits_since_boot_freebsd():
    adv = cacheadvice.advise(_samples(_fixture("freebsd-14.0-RC2")))
    assert adv.since_boot
    assert adv.numbers["ghost_hits"] == 2692 + 6108 and adv.numbers["arc_misses"] == 63001
    assert adv.lines[0].startswith("ARC: 8,800 ghost hits since boot, 14% of its 63,001 misses (MRU 2,692, MFU 6,108)")
    assert adv.numbers["eligible_share"] == pytest.approx(2309913600 / (2309913600 + 65306624))
    assert adv.lines[1].startswith("Of 2.2 GiB evicted from the ARC since boot, 2.2 GiB (97%) was L2ARC-eligible: "
                                   "an L2ARC would take it")
    assert len(adv.lines) == 2  # no L2ARC on that host


def test_few_ghost_hits_full_arc():
    adv = cacheadvice.advise(_samples(_fixture("linux-openzfs-2.1")))
    assert adv.numbers["arc_fill"] > 1 and adv.numbers["ghost_share"] == pytest.approx(485553 / 18851609)
    assert adv.lines[0] == ("ARC: ghost hits were 2.6% of 18,851,609 misses since boot: what it evicted was rarely "
                            "read again; a larger ARC would help little.")


def test_with_an_l2arc():
    adv = cacheadvice.advise(_samples(_fixture("linux-zol-0.6.4")))
    assert adv.numbers["l2_hits"] == 573868618 and adv.numbers["l2_misses"] == 1085309718
    assert adv.lines[-1] == "L2ARC: 573,868,618 hits of 1,659,178,336 lookups (35%) since boot, holding 2.2 TiB."
    assert adv.lines[1].endswith("(69%) was L2ARC-eligible.")


def test_no_arc_counters_no_advice():
    assert cacheadvice.advise([]) is None


def test_analyze_reports_it():
    guest = TEST_DATA / "openzfs-2.3"
    report = findings.analyze(_samples(guest / "arcstats.before", guest / "arcstats.after"))
    (f,) = report.topic("cache_advice")
    assert "a larger ARC would not help" in f.text and f.numbers["ghost_hits"] == 0
