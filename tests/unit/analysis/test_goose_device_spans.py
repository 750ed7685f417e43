"""The goose-egg pass's device rates taken column-wise give what reading them one by one gives.

``goose_window.device_spans`` takes a device whose readings are all counters of one stream and layout (the live
diskstats collector's) column-wise, through ``goose_window.column_deltas``. The oracle here is the reading-by-reading
loop it replaced, kept verbatim: the same spans, the same floats, the devices in the same order, whatever the
readings (counter resets, times that stand still or go back, layouts and sources that change, interval rows).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from typing import Dict, List, Optional

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from zfsmon.analysis import goose, goose_window
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Entity, Kind, Sample
from zfsmon.sources.kstat import text as kstat_text

FUSE = TEST_DATA / "zfsfuse"

COUNTERS = ("reads", "writes", "read_bytes", "write_bytes", "read_time_ns", "write_time_ns")


def reference_spans(samples) -> Dict[str, List[goose_window.Span]]:
    """``device_spans`` as it was before the column-wise path (2026-11-28): every reading in time order."""
    rows: Dict[str, List[goose_window.Span]] = {}
    counted: Dict[str, List[goose_window.Span]] = {}
    rates = RateDeriver()
    last: Dict[str, float] = {}
    for s in sorted((s for s in samples if s.entity.kind == Kind.DEVICE and not s.since_boot), key=lambda s: s.ts):
        name = s.entity.name
        prev, last[name] = last.get(name), s.ts
        if "read_ops" in s.metrics or "write_ops" in s.metrics:
            span = s.interval or (s.ts - prev if prev is not None else 0.0)
            if span > 0:
                rows.setdefault(name, []).append(goose_window.Span(s.ts - span, s.ts, goose.device_ops_per_s(s.metrics) or 0.0))
            continue
        d, _events = rates.update(s)
        ops = goose.device_ops_per_s(d.rates) if d is not None else None
        if d is not None and ops is not None:
            counted.setdefault(name, []).append(goose_window.Span(s.ts - d.elapsed, s.ts, ops))
    return {**counted, **rows}


@st.composite
def device_readings(draw) -> List[Sample]:
    """Readings of a few devices, interleaved: mostly one steady diskstats stream each, now and then a reset, a
    time that stands still or steps back, another layout or source, an interval row, a since-boot reading."""
    out: List[Sample] = []
    names = draw(st.lists(st.sampled_from(["vda", "vdb", "vdb1", "sda", "c0t1d0"]), min_size=1, max_size=4,
                          unique=True))
    for name in names:
        odd = draw(st.booleans())  # a device whose readings are not one steady stream
        layout = draw(st.sampled_from([COUNTERS, COUNTERS[:2], ("reads",), ("writes", "reads"), ("read_bytes",)]))
        values = [0] * len(COUNTERS)
        ts = draw(st.integers(0, 20)) + draw(st.sampled_from([0.0, 0.25, 0.001]))
        parent = draw(st.sampled_from(["", "leaf-" + name]))
        for _ in range(draw(st.integers(0, 12))):
            ts += draw(st.sampled_from([1.0, 1.0, 1.0, 0.999, 2.5])) if not odd else draw(
                st.sampled_from([1.0, 0.0, -1.0, 0.5, 3.0]))
            for j in range(len(values)):
                values[j] += draw(st.integers(0, 500))
            if odd and draw(st.integers(0, 5)) == 0:
                values[draw(st.integers(0, len(values) - 1))] = 0  # a counter that went back
            mine = layout
            if odd and draw(st.integers(0, 4)) == 0:
                mine = draw(st.sampled_from([COUNTERS, ("reads", "writes"), ("read_ops", "write_ops")]))
            metrics = {n: (values[COUNTERS.index(n)] if n in COUNTERS else draw(st.floats(0, 1e4)))
                       for n in mine}
            interval: Optional[float] = draw(st.sampled_from([None, 1.0])) if "read_ops" in metrics else None
            source = "diskstats" if not odd or draw(st.integers(0, 5)) else "iostat"
            out.append(Sample(ts, Entity(Kind.DEVICE, name, parent=parent), metrics, interval=interval,
                              source=source, since_boot=odd and draw(st.integers(0, 9)) == 0))
    return draw(st.permutations(out))


@settings(max_examples=300, deadline=None)
@given(device_readings())
def test_device_spans_are_the_reading_by_reading_ones(samples):
    got, want = goose_window.device_spans(samples), reference_spans(samples)
    assert list(got) == list(want)  # the devices in the same order: the leaves' candidates follow it
    assert got == want


def test_a_steady_stream_takes_the_column_wise_path_and_a_reset_costs_one_interval():
    readings = [Sample(100.0 + i, Entity(Kind.DEVICE, "vdb", parent="data0"),
                       {"reads": r, "writes": 2 * i, "read_bytes": 512 * r}, source="diskstats")
                for i, r in enumerate([10, 20, 40, 5, 15])]  # reads fall back at the fourth reading
    assert goose_window._counter_spans(readings) is not None
    assert goose_window.device_spans(readings) == {"vdb": [goose_window.Span(100.0, 101.0, 12.0), goose_window.Span(101.0, 102.0, 22.0),
                                                    goose_window.Span(103.0, 104.0, 12.0)]}
    assert goose_window.device_spans(readings) == reference_spans(readings)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1.0, 1.0, 0.5, 0.0, -2.0, 1e-3]),
                          st.lists(st.integers(-50, 1000), min_size=3, max_size=3)), min_size=1, max_size=15))
def test_column_deltas_say_what_update_says(steps):
    """Each reading after the first: the elapsed seconds and deltas update() gives, and whether it gives any."""
    ts, rows, t, vals = [], [], 50.0, [0, 0, 0]
    for dt, inc in steps:
        t += dt
        vals = [v + d for v, d in zip(vals, inc)]
        ts.append(t)
        rows.append(list(vals))
    elapsed, deltas, ok = goose_window.column_deltas(np.array(ts), np.array(rows, dtype=np.float64))
    rates = RateDeriver()
    for i, (t, row) in enumerate(zip(ts, rows)):
        d, _events = rates.update(Sample(t, Entity(Kind.DEVICE, "vda"), dict(zip(COUNTERS[:3], row))))
        if i == 0:
            assert d is None
            continue
        assert bool(ok[i - 1]) == (d is not None)
        if d is not None:
            assert d.elapsed == elapsed[i - 1]
            assert d.deltas == dict(zip(COUNTERS[:3], deltas[i - 1].tolist()))


#: what a CLI that scripts call every few seconds must not pay for (docs/performance.md, "Start-up")
HEAVY = ("numpy", "textual", "rich", "matplotlib", "prometheus_client", "psycopg", "psycopg2")

def _heavy_after(code: str) -> List[str]:
    """The HEAVY modules a fresh interpreter has loaded after running ``code`` (which must succeed)."""
    probe = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.splitlines()[-1])


def test_the_recorder_does_not_import_numpy():
    """docs/install.md and architecture.md promise it: ``zfsmon record`` (its sampler derives counter resets through
    :mod:`zfsmon.analysis.rates`) starts without numpy's import."""
    assert _heavy_after("import zfsmon.commands.record, zfsmon.engine.sampler") == []


def test_iostat_runs_without_numpy_or_any_other_heavy_library(tmp_path):
    """`zfsmon iostat POOL 1 1` to its end, its device column included (this host's own device source: its goose
    eggs are :mod:`~zfsmon.analysis.goose`'s, not the window's numpy pass), against a stand-in zpool that prints
    zfs-fuse's captures and refuses the flags that release lacks."""
    zpool = tmp_path / "zpool"
    zpool.write_text(f"""#!/bin/sh
case "$1" in
  status) exec cat "{FUSE / 'zpool_status_ziocap.txt'}" ;;
  iostat) shift
    for a in "$@"; do case "$a" in -v|ziocap|[0-9]*) ;; *) echo "invalid option '$a'" >&2; exit 2 ;; esac; done
    exec cat "{FUSE / 'zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt'}" ;;
esac
exit 1
""")
    zpool.chmod(0o755)
    out = tmp_path / "out"
    run = (f"from zfsmon import cli\nwith open({str(out)!r}, 'w') as sys.stdout:\n"
           f"    assert cli.main(['iostat', '--zpool', {str(zpool)!r}, 'ziocap', '1', '1']) == 0\n"
           "sys.stdout = sys.__stdout__")
    assert _heavy_after(run) == []
    table = out.read_text().splitlines()
    assert table[0].split()[:3] == ["capacity", "operations", "bandwidth"] and table[3].split()[0] == "ziocap"
    assert any(ln.split()[0] == "loop1" for ln in table)
    assert (table[0].split()[-1] == "device") == os.path.exists("/proc/diskstats")  # the device view ran


def test_arcstat_runs_without_numpy_or_any_other_heavy_library(tmp_path):
    """`zfsmon arcstat` prints its line from a zfs-fuse kstat directory (made from OpenZFS 2.1's arcstats) and
    loads none of the heavy libraries."""
    kstat = tmp_path / "arcstats"
    kstat.mkdir()
    for name, v in kstat_text.parse_proc_table((TEST_DATA / "openzfs-2.1" / "kstat" / "arcstats").read_text()
                                               ).values.items():
        (kstat / name).write_text(f"{int(v)}\n")
    out = tmp_path / "out"
    run = (f"from zfsmon import cli\nwith open({str(out)!r}, 'w') as sys.stdout:\n"
           f"    assert cli.main(['arcstat', '--kstat-dir', {str(kstat)!r}]) == 0\n"
           "sys.stdout = sys.__stdout__")
    assert _heavy_after(run) == []
    header, line = out.read_text().splitlines()[:2]
    assert header.split()[:4] == ["time", "read", "ddread", "ddh%"] and len(line.split()) == len(header.split())
