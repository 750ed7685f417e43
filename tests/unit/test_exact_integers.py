"""Integers beyond 2**53 (uint64 kstats, int64 test values) stay exact from the capture to every CSV cell."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, fixtures_root, need
from zfsmon.model import Entity, Kind, Sample
from zfsmon.store import Recorder, Recording
from zfsmon.views.csv_export import num

#: a real ZoL 0.7 zil kstat: zil_itx_needcopy_bytes is a uint64 that wrapped below zero
ZIL = "kstat_misc/linux-zol-0.7__proc_spl_kstat_zfs_zil.txt"
NEEDCOPY = 18446744073709537686
#: a real arcstats (node_exporter's test data) with a type-3 int64 value
ARC = "peers/node_exporter/proc/spl/kstat/zfs/arcstats"


def _capture(rel: str) -> str:
    path = fixtures_root() / rel
    need(path.exists(), f"shared fixture {rel} missing")
    return path.read_text()


def _zfsmon(*args: str) -> str:
    cp = subprocess.run([sys.executable, "-m", "zfsmon", *args], cwd=REPO, capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def _values(path: Path, metric: str) -> list:
    with open(path, newline="") as f:
        return [(r["value"], r["delta"]) for r in csv.DictReader(f) if r["metric"] == metric]


def test_parse_prints_uint64_and_int64_kstats_exactly(tmp_path):
    zil = tmp_path / "zil.log"
    zil.write_text(_capture(ZIL))
    arc = tmp_path / "arc.log"
    arc.write_text(_capture(ARC))
    out = tmp_path / "zil.csv"
    out.write_text(_zfsmon("parse", "--kind", "zil-kstat", str(zil)))
    assert _values(out, "itx_needcopy_bytes") == [(str(NEEDCOPY), "")]
    out.write_text(_zfsmon("parse", "--kind", "arcstats", str(arc)))
    assert _values(out, "memory_available_bytes") == [("-922337203685477580", "")]


def test_a_recording_exports_uint64_counters_and_their_deltas_exactly(tmp_path):
    first = _capture(ZIL)
    lines = first.splitlines(keepends=True)
    head = lines[0].split()
    head[-1] = str(int(head[-1]) + 10 * 10 ** 9)  # the next dump, 10 s later, 10000 bytes more
    second = " ".join(head) + "\n" + "".join(lines[1:]).replace(str(NEEDCOPY), str(NEEDCOPY + 10000))
    log = tmp_path / "zil.log"
    log.write_text(first + second)
    rec = tmp_path / "z.zfsmon"
    _zfsmon("import", "--kind", "zil-kstat", "--start", "2026-01-01T00:00:00Z", "--into", str(rec), str(log))
    want = [(str(NEEDCOPY), ""), (str(NEEDCOPY + 10000), "10000")]
    _zfsmon("export", "--long", "--csv", str(tmp_path / "raw"), str(rec))
    assert _values(tmp_path / "raw" / "samples.csv", "itx_needcopy_bytes") == want
    _zfsmon("export", "--long", "--every", "10", "--csv", str(tmp_path / "every"), str(rec))
    assert _values(tmp_path / "every" / "samples.csv", "itx_needcopy_bytes") == want


#: the edges: a float's exact integers, int64, uint64, and one past each
_EDGES = [s * (2 ** e + d) for e in (53, 63, 64) for d in (-1, 0, 1) for s in (1, -1)]


@settings(max_examples=30)
@given(st.lists(st.one_of(st.sampled_from(_EDGES), st.integers(-(2 ** 65), 2 ** 65)), min_size=1, max_size=8))
def test_integers_at_the_edges_come_back_exact_from_a_recording(tmp_path_factory, values):
    path = str(tmp_path_factory.mktemp("edges") / "r.zfsmon")
    ent = Entity(Kind.ARC, "arc")
    with Recorder(path) as rec:
        for i, v in enumerate(values):
            rec.write([Sample(1_700_000_000.0 + i, ent, {"hits": v, "size": -v}, source="arcstats")])
    with Recording.open(path) as r:
        back = [(s.metrics["hits"], s.metrics["size"]) for s in r.samples()]
    assert back == [(v, -v) for v in values]
    assert all(type(a) is int and num(a) == str(v) for (a, _b), v in zip(back, values))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_never_written_as_an_integer_it_may_not_be(v):
    text = num(v)
    if text.lstrip("-").isdigit():
        assert abs(v) < 2 ** 53 and int(text) == v
    else:
        assert float(text) == v


def test_downsampled_deltas_stay_exact_across_compacted_blocks(tmp_path):
    """300 one-second readings of a counter past 2**64 - 2**14 (the first block compacted into a chunk):
    every 10-second bucket's delta is exactly 70, the one that spans the block boundary too."""
    path = tmp_path / "r.zfsmon"
    ent = Entity(Kind.ZIL, "zil")
    with Recorder(str(path)) as rec:
        for i in range(300):
            rec.write([Sample(1_700_000_000.0 + i, ent, {"itx_needcopy_bytes": NEEDCOPY + 7 * i}, interval=1.0,
                              source="zil")])
    _zfsmon("export", "--long", "--every", "10", "--csv", str(tmp_path / "every"), str(path))
    got = _values(tmp_path / "every" / "samples.csv", "itx_needcopy_bytes")
    assert len(got) == 30
    assert [d for _v, d in got[1:]] == ["70"] * 29
    assert [v for v, _d in got] == [str(NEEDCOPY + 7 * (10 * k + 9)) for k in range(30)]
