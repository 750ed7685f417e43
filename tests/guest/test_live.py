"""Live OpenZFS in the guest: zfsmon's numbers against the tools' own, same pool, same interval.

All of it comes from the session's one guest run (conftest.guest_out): the scenario records with
zfsmon while `zpool iostat -vp` runs beside it around a fio workload with idle time before and after,
so both see the whole of the workload; it reads arcstats raw before and after; it captures every
`zpool iostat` variant. Expected leaves: the runner's layout (2 mirrors, SLOG, L2ARC, by serial).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from tests.conftest import need
from tests.guest.roles import EXPECTED, POOL, check_roles, iostat_capture_names
from zfsmon.analysis.arc import derive_arc
from zfsmon.metrics import is_counter
from zfsmon.metrics.latency import LAT_BUCKETS
from zfsmon.model import Kind, Record, Sample
from zfsmon.sources.kstat.arcstats import parse_linux
from zfsmon.sources.zpool.influxdb import (
    FIRST_LAT_BUCKET,
    LAT_FIELDS,
    QUEUE_FIELDS,
    PoolSnapshot,
    entities,
    parse_snapshots,
)
from zfsmon.sources.zpool.iostat import parse_text
from zfsmon.sources.zpool.latency import histogram_records
from zfsmon.sources.zpool.status import Topology, parse_status
from zfsmon.trace.protocol import TraceParser

pytestmark = pytest.mark.guest

INTERVAL = 5.0  # scenario.sh's recording interval


def _rows(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _num(text: str) -> float:
    return float(text) if text not in ("", "-") else 0.0


def _raw_kstat(path: Path) -> Dict[str, int]:
    """A raw `cat /proc/spl/kstat/zfs/...` read: two header lines, then `name type value`."""
    out = {}
    for line in path.read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].lstrip("-").isdigit():
            out[parts[0]] = int(parts[2])
    return out


def test_scenario_ran_to_the_end(guest_out: Path) -> None:
    steps = (guest_out / "steps.tsv").read_text()
    assert steps.rstrip().endswith("done"), steps
    assert (guest_out / "record.exit").read_text().split() == ["record", "exit", "0"]
    assert (guest_out / "export.log").read_text().rstrip().endswith("export exit 0")


def test_doctor_sees_kernel_openzfs(guest_out: Path, guest_zfs: str) -> None:
    doc = json.loads((guest_out / "doctor.json").read_text())
    assert doc["system"] == "Linux"
    assert doc["flavour"] == "openzfs-kmod"
    assert doc["zfs_version"].startswith(guest_zfs + "."), doc["zfs_version"]
    ok = {c["name"] for c in doc["checks"] if c["ok"]}
    assert {"zpool", "arcstats", "zil", "objset"} <= ok, doc["checks"]


# --- per-leaf I/O: zfsmon's recording against `zpool iostat -vp` run beside it -----------------------------

def _beside_reports(text: str) -> List[Dict[str, Tuple[str, List[float]]]]:
    """`zpool iostat -vp -T u POOL N`, read independently of zfsmon: per report, leaf -> (role, numbers)."""
    reports: List[Dict[str, Tuple[str, List[float]]]] = []
    role = "data"
    for line in text.splitlines():
        tokens = line.split()
        if re.fullmatch(r"\d{9,11}", line.strip()):
            reports.append({})
            role = "data"
        elif tokens and tokens[0] in ("logs", "cache", "special", "dedup", "spares"):
            role = {"logs": "log", "spares": "spare"}.get(tokens[0], tokens[0])
        elif tokens and tokens[0].startswith("virtio-") and len(tokens) == 7 and reports:
            reports[-1][tokens[0]] = (role, [_num(t) for t in tokens[1:]])
    return reports


def _recorded_leaves(guest_out: Path) -> List[Dict[str, str]]:
    """Rows of the disks: data leaves, and the log and cache disks (top-level vdevs that are also leaves)."""
    return [r for r in _rows(guest_out / "export" / "vdev.csv") if r["name"] in EXPECTED and r["pool"] == POOL]


def test_recording_has_every_disk_with_its_role_and_parent(guest_out: Path) -> None:
    rows = _recorded_leaves(guest_out)
    assert {r["name"] for r in rows} == set(EXPECTED)
    for r in rows:
        role, parent = EXPECTED[r["name"]]
        assert r["role"] == role, r
        if parent:
            assert (r["kind"], r["parent"]) == ("leaf", parent), r


@pytest.mark.parametrize("metric,column", [("read_ops", 2), ("write_ops", 3), ("read_bw", 4), ("write_bw", 5)])
def test_leaf_totals_equal_zpool_iostat_beside(guest_out: Path, metric: str, column: int) -> None:
    """Both bracket the whole workload with idle time, so each leaf's total over the window is the same.

    Each report's rate is printed as a whole number (ops/s, B/s) and divides by the real time since the
    previous report, which under emulation strays from the nominal interval (two processes, two series
    of sleeps on a contended host): so totals (rate x interval) agree within 8 % plus N intervals'
    rounding each way. Seen: 2.3 ops equal and bandwidth 0.25 % apart; 2.1 on a busier host up to 1.5 %;
    2.3 with an image build running beside the guest 5.1 % (write bandwidth of one disk).
    A wrong column, unit (x1024) or role is far outside.
    """
    beside = _beside_reports((guest_out / "beside-iostat-vp.txt").read_text())[1:]  # first: since import
    assert len(beside) >= 8, "the beside run printed too few reports"
    oracle = {name: sum(r[name][1][column] for r in beside) * INTERVAL for name in EXPECTED}
    rows = [r for r in _in_window(guest_out, _recorded_leaves(guest_out)) if r["since_boot"] == "0"]
    ours = {name: sum(_num(r[metric]) * _num(r["interval"]) for r in rows if r["name"] == name) for name in EXPECTED}
    n_ours = max(sum(1 for r in rows if r["name"] == name) for name in EXPECTED)
    slack = INTERVAL * (len(beside) + n_ours)
    for name in EXPECTED:
        allowed = slack + 0.08 * oracle[name]
        assert abs(ours[name] - oracle[name]) <= allowed, (name, metric, ours[name], oracle[name], allowed)
    data_total = sum(oracle[n] for n in EXPECTED if EXPECTED[n][0] == "data")
    if metric.startswith("write"):
        assert data_total > 5 * slack, f"too little {metric} on the data leaves for the comparison to mean much"


def test_beside_run_roles(guest_out: Path) -> None:
    for report in _beside_reports((guest_out / "beside-iostat-vp.txt").read_text()):
        assert {name: role for name, (role, _) in report.items()} == {n: r for n, (r, _) in EXPECTED.items()}


# --- every captured `zpool iostat` variant: zfsmon's parser puts each leaf in its role ---------------------

@pytest.mark.parametrize("name", iostat_capture_names())
def test_roles_in_every_iostat_variant(guest_out: Path, name: str) -> None:
    check_roles(guest_out / "captures", name)


# --- ARC hit %: zfsmon's against two raw arcstats reads, by hand ------------------------------------------

def _hit_pct(d_hits: float, d_iohits: float, d_misses: float) -> float:
    return 100.0 * d_hits / (d_hits + d_iohits + d_misses)


def _deltas(before: Dict[str, int], after: Dict[str, int], names) -> List[float]:
    """Counter increases; a counter this version lacks (iohits before 2.2) counts as 0, as zfsmon counts it."""
    return [float(after.get(k, 0) - before.get(k, 0)) for k in names]


ACCESS = ("hits", "iohits", "misses")


def test_arc_hit_pct_equals_raw_reads_by_hand(guest_out: Path) -> None:
    """zfsmon's reading and arithmetic of two live raw arcstats reads give the hand-computed hit %."""
    before_text, after_text = (guest_out / "arcstats.before").read_text(), (guest_out / "arcstats.after").read_text()
    before, after = _raw_kstat(guest_out / "arcstats.before"), _raw_kstat(guest_out / "arcstats.after")
    d = _deltas(before, after, ACCESS)
    assert d[2] > 0 and d[0] > 0, f"the workload should both hit and miss the ARC: {dict(zip(ACCESS, d))}"
    by_hand = _hit_pct(*d)
    (s0,), (s1,) = ([x for x in parse_linux(t, ts) if x.entity.kind == Kind.ARC] for t, ts in
                    ((before_text, 0.0), (after_text, 60.0)))
    deltas = {k: s1.metrics[k] - s0.metrics[k] for k in s1.metrics if is_counter(Kind.ARC, k) and k in s0.metrics}
    ours = derive_arc(deltas, 60.0, s1.metrics)
    assert ours["hit_pct"] == pytest.approx(by_hand, rel=1e-12)
    if "iohits" in after:  # OpenZFS 2.2+
        assert ours["iohit_pct"] == pytest.approx(100.0 * d[1] / sum(d), rel=1e-12)
    else:
        assert "iohit_pct" not in ours
    assert ours["miss_pct"] == pytest.approx(100.0 * d[2] / sum(d), rel=1e-12)
    dd = _deltas(before, after, ("demand_data_hits", "demand_data_iohits", "demand_data_misses"))
    assert ours["demand_data_hit_pct"] == pytest.approx(_hit_pct(*dd), rel=1e-12)


def test_recording_spans_the_raw_reads(guest_out: Path) -> None:
    """The recorded ARC counters over the window are the raw reads' deltas.

    The raw reads are taken in idle time (the recording, its four tracers and their start-up I/O came
    before): the rows recorded last before each read hold the same counters as the read, but for the odd
    ARC access of an idle pool (13 of ~9000 seen): within 0.5 %, and the hit % within 0.1 point.
    """
    arc = _export(guest_out, "arc")
    assert len(arc) >= 8
    before, after = _raw_kstat(guest_out / "arcstats.before"), _raw_kstat(guest_out / "arcstats.after")
    a, b = _at(arc, _t(guest_out, "before")), _at(arc, _t(guest_out, "after"))
    for k in ACCESS:
        if k not in after:  # iohits before 2.2: neither the kernel nor the recording has it
            assert k not in arc[0] or arc[0][k] == "", k
            continue
        assert _num(arc[0][k]) <= before[k] <= _num(arc[-1][k]) <= after[k], k
        assert sum(_num(r[k + "_delta"]) for r in arc[1:]) == _num(arc[-1][k]) - _num(arc[0][k]), k
        # idle is not quite idle for the ARC: seen 13 accesses (of ~9000) between a reading and a raw read
        assert _num(b[k]) - _num(a[k]) == pytest.approx(after[k] - before[k], rel=0.005, abs=5), k
    by_hand = _hit_pct(*_deltas(before, after, ACCESS))
    ours = _hit_pct(*(_num(b.get(k, "")) - _num(a.get(k, "")) for k in ACCESS))
    assert ours == pytest.approx(by_hand, abs=0.1)


def test_zfsmon_arcstat_prints_hit_pct(guest_out: Path) -> None:
    rows = _rows(guest_out / "zfsmon-arcstat.csv")
    assert len(rows) == 3
    for field in ("ddh%", "dmh%", "l2hit%", "zcmt", "zslog"):  # L2ARC and ZIL columns: the machine has them
        assert field in rows[0], rows[0].keys()
    for r in _rows(guest_out / "zfsmon-arcstat-f.csv"):
        read, hits, iohs, miss = (_num(r[k]) for k in ("read", "hits", "iohs", "miss"))  # iohs: "-" before 2.2
        assert read == pytest.approx(hits + iohs + miss, rel=1e-3)
        if read:
            assert float(r["hit%"]) == pytest.approx(100.0 * hits / read, abs=0.01)


# --- the window: raw kstat reads at known times, in idle time on both sides of the workload --------------

def _t(guest_out: Path, which: str) -> float:
    return float((guest_out / f"raw-time.{which}").read_text().split()[0])


def _in_window(guest_out: Path, rows: List[Dict[str, str]]) -> List[Dict[str, str]]:
    """Rows recorded after the raw "before" read (and so before the "after" one: the recording stops first).

    The pool is idle for several intervals on both sides of each raw read, so an interval that straddles a
    read holds nothing on the far side of it: sums over these rows cover exactly the raw reads' window.
    """
    t0 = _t(guest_out, "before")
    return [r for r in rows if float(r["epoch"]) > t0]


def _at(rows: List[Dict[str, str]], t: float) -> Dict[str, str]:
    """The last row recorded at or before ``t`` (cumulative counters as they stood then)."""
    before = [r for r in rows if float(r["epoch"]) <= t]
    assert before, f"no row recorded before {t}"
    return before[-1]


def _fio(guest_out: Path) -> Dict[str, int]:
    job = json.loads((guest_out / "fio.json").read_text())["jobs"][0]
    return {"reads": job["read"]["total_ios"], "writes": job["write"]["total_ios"],
            "fsyncs": job["sync"]["total_ios"], "read_bytes": job["read"]["io_bytes"],
            "write_bytes": job["write"]["io_bytes"]}


def _raw_delta(guest_out: Path, name: str, key: str, a: str = "before", b: str = "after") -> int:
    return _raw_kstat(guest_out / f"{name}.{b}")[key] - _raw_kstat(guest_out / f"{name}.{a}")[key]


def _export(guest_out: Path, kind: str) -> List[Dict[str, str]]:
    return _rows(guest_out / "export" / f"{kind}.csv")


def _trace(guest_out: Path, script: str, name: str = "") -> List[Dict[str, str]]:
    return [r for r in _in_window(guest_out, _export(guest_out, "trace"))
            if r["source"] == f"trace:{script}" and (not name or r["name"] == name)]


def _total(rows: List[Dict[str, str]], column: str) -> float:
    return sum(_num(r.get(column, "")) for r in rows)


def _has_zfs_tracepoints(guest_out: Path) -> bool:
    """Whether the module has OpenZFS's own tracepoints (zfs:zfs_arc__hit...), which arc.bt needs.

    Debian's zfs-dkms builds without them (OpenZFS's configure finds DECLARE_EVENT_CLASS unusable from a
    CDDL module), so on the guest's 2.1 and 2.3 they are absent; kprobes work.
    """
    return "zfs_arc__hit" in (guest_out / "zfs-tracepoints.txt").read_text()


def _arc_untraceable(guest_out: Path) -> str:
    """Why the kprobe ARC variant cannot attach on this guest, or "": Debian's OpenZFS 2.1.11 build inlines
    arc_access (absent from available_filter_functions), so with no tracepoints either, arc cannot be traced
    there; 2.3.2's build has it. The scenario records the check (arc-traceable.txt); the bcc run says it too."""
    flag = guest_out / "arc-traceable.txt"
    if flag.exists():
        return "" if flag.read_text().strip() == "1" else \
            "arc_access is not traceable in this OpenZFS build (inlined) and there are no zfs tracepoints"
    err = (guest_out / "bcc.err").read_text()
    return "arc_access is not traceable in this OpenZFS build (inlined)" if "arc_access" in err and \
        "not traceable" in err else ""


def test_every_trace_script_recorded(guest_out: Path) -> None:
    """`zfsmon record --trace` ran the four OpenZFS scripts on the live module; where the module has no
    tracepoints (Debian's zfs-dkms), `arc` ran arc_kprobe.bt instead of arc.bt, and the recording says so."""
    sources = {r["source"] for r in _export(guest_out, "trace")}
    events = [r["text"] for r in _rows(guest_out / "export" / "events.csv") if "arc" in r["source"]]
    if _arc_untraceable(guest_out):  # 2.1: said in one line, the other three recorded
        assert {"trace:zil", "trace:txg", "trace:zfsslower"} <= sources and "trace:arc" not in sources, sources
        assert any("arc_access" in t and ("not traceable" in t or "cannot attach" in t) for t in events), events
        return
    assert {"trace:zil", "trace:txg", "trace:zfsslower", "trace:arc"} <= sources, sources
    kprobe = [t for t in events if "no zfs tracepoints" in t and "arc_kprobe.bt" in t]
    assert bool(kprobe) != _has_zfs_tracepoints(guest_out), events


# --- tracing against the tools' own counts ----------------------------------------------------------------

def _dataset_trace(guest_out: Path) -> List[Dict[str, str]]:
    rows = _trace(guest_out, "zfsslower")
    names = {r["name"] for r in rows}
    ours = [r for r in rows if _is_dataset(r) or r["name"] == "/" + DATASET]
    assert ours, f"zfsslower rows name no dataset zguest/db: {names}"
    return ours


@pytest.mark.parametrize("op", ["read", "write"])
def test_traced_reads_writes_agree_with_fio(guest_out: Path, op: str) -> None:
    """zfsslower's per-dataset read/write counts (ZPL entry and completion) against fio's own, within 2 %."""
    rows, fio = _dataset_trace(guest_out), _fio(guest_out)
    want = fio[op + "s"]
    assert want > 500, fio
    assert _total(rows, f"op_{op}") == pytest.approx(want, rel=0.02)
    assert _total(rows, f"{op}_ops") == pytest.approx(want, rel=0.02)
    assert _total(rows, f"{op}_bytes") == pytest.approx(fio[op + "_bytes"], rel=0.02)  # bytes, not KiB


def test_zfsslower_catches_the_slow_write_by_file_name(guest_out: Path) -> None:
    """One 64 MiB write call made slow on purpose (zfs_dirty_data_max at 1 MiB) is reported, with its file."""
    s0, s1 = (float(x) for x in (guest_out / "slow-write.time").read_text().split())
    text = (guest_out / "trace-zfsslower.txt").read_text()
    slow = [ln for ln in text.splitlines() if ln.startswith("slow write") and "file=slow-on-purpose.dat" in ln]
    assert slow, text[-3000:]
    ms = float(slow[0].split()[2])
    assert 1000 <= ms <= (s1 - s0) * 1000 + 100, (slow[0], s1 - s0)
    assert "comm=dd" in slow[0]


_ARC_KINDS = [f"{dp}_{dm}" for dp in ("demand", "prefetch") for dm in ("data", "metadata")]


def _arc_expected(deltas: Dict[str, int], guest_zfs: str) -> Dict[str, float]:
    """What arc_kprobe.bt (or bcc's kprobe arc) should count, per counter, from arcstats' deltas.

    OpenZFS 2.2+ counts a read that joins an I/O in progress as an "iohit" (demand_data_iohits ...), which the
    kprobes see as a miss (arc_read sets no ARC_FLAG_CACHED for it): misses = arcstats' misses + iohits. 2.1 has
    no iohits, counts no such NOWAIT read at all (the trace: a hit), and splits demand/prefetch by the header's
    prefetch flag after arc_access rather than the caller's flag: there only data/metadata x hit/miss compare.
    """
    out: Dict[str, float] = {}
    for kind in _ARC_KINDS:
        out[f"{kind}_hits"] = deltas.get(f"{kind}_hits", 0)
        out[f"{kind}_misses"] = deltas.get(f"{kind}_misses", 0) + deltas.get(f"{kind}_iohits", 0)
    if guest_zfs == "2.1":
        return {f"{dm}_{hm}": out[f"demand_{dm}_{hm}"] + out[f"prefetch_{dm}_{hm}"]
                for dm in ("data", "metadata") for hm in ("hits", "misses")}
    return out


def _arc_traced(totals: Dict[str, float], guest_zfs: str) -> Dict[str, float]:
    if guest_zfs == "2.1":
        return {f"{dm}_{hm}": totals.get(f"demand_{dm}_{hm}", 0) + totals.get(f"prefetch_{dm}_{hm}", 0)
                for dm in ("data", "metadata") for hm in ("hits", "misses")}
    return {k: totals.get(k, 0) for k in (f"{kind}_{hm}" for kind in _ARC_KINDS for hm in ("hits", "misses"))}


def _arc_compare(traced: Dict[str, float], raw: Dict[str, int], guest_zfs: str, slack: float = 0.0,
                 edge: Optional[Dict[str, float]] = None) -> None:
    """``edge``: per counter, what the window's untraced edges may hold (:func:`_arc_edge`), on top of the
    tolerance."""
    want, got = _arc_expected(raw, guest_zfs), _arc_traced(traced, guest_zfs)
    bad = {k: (got[k], want[k]) for k in want
           if abs(got[k] - want[k]) > max(slack, arc_tolerance(want[k], guest_zfs) + (edge or {}).get(k, 0.0))}
    assert not bad, f"traced vs arcstats (+iohits) per counter, beyond tolerance: {bad}; all: {got} vs {want}"


def arc_tolerance(n: float, guest_zfs: str) -> float:
    """0.2 % or 3 events (2.2+), 2 % or 5 events (2.1, whose uncounted NOWAIT reads of a block in flight the
    kprobes see as hits): an idle pool still makes a few ARC accesses at the window's edges, and bpftrace's
    print-then-clear loses an event now and then (as zil.bt's). Measured on 2.3 (23 Nov): 17393 / 17394 demand
    data hits, 59196 / 59207 demand metadata hits, 8583 / 8583 demand data misses, 14 / 13 + 1 iohit."""
    return max(5.0, 0.02 * n) if guest_zfs == "2.1" else max(3.0, 0.002 * n)


def test_arc_trace_split_equals_arcstats(guest_out: Path, guest_zfs: str) -> None:
    """Issue 17: the ARC trace's data/metadata (and demand/prefetch) split of hits and misses = arcstats' counters
    over the same window, per counter within arc_tolerance.

    On this guest the module has no zfs tracepoints, so `zfsmon record --trace arc` ran arc_kprobe.bt
    (kprobes on arc_read, arc_buf_access, arc_access). Exact equality is not possible: arcstats' "iohits"
    (2.2+) are misses to the kprobes (see _arc_expected), a few accesses fall on the far side of a raw read,
    and bpftrace's print-then-clear loses an event now and then. With tracepoints (arc.bt) it would be the
    same comparison. On OpenZFS 2.1 (Debian's 2.1.11) arc_access is inlined, so the kprobe variant cannot
    attach: xfail there with that reason (test_every_trace_script_recorded checks the one-line message)."""
    why = _arc_untraceable(guest_out)
    if why:
        pytest.xfail(why)
    rows = _trace(guest_out, "arc", "arc")
    assert rows
    totals = {k: _total(rows, k) for k in (f"{kind}_{hm}" for kind in _ARC_KINDS for hm in ("hits", "misses"))}
    raw = {k: _raw_delta(guest_out, "arcstats", k) for k in _raw_kstat(guest_out / "arcstats.after")
           if k.startswith(("demand_", "prefetch_"))}
    assert raw["demand_data_hits"] > 100 and raw["demand_metadata_hits"] > 100, raw
    assert raw["demand_data_misses"] > 100, raw
    _arc_compare(totals, raw, guest_zfs, edge=_arc_traced(_arc_edge(guest_out, rows, totals), guest_zfs))


def _arc_edge(guest_out: Path, rows: List[Dict[str, str]], totals: Dict[str, float]) -> Dict[str, float]:
    """What the window's untraced edges may hold, per counter. The first traced interval starts up to one interval
    before the "before" read, and the recorder (its last row) stops a few seconds before the "after" read. Both
    edges are idle, but an idle pool still makes a few ARC metadata accesses (8-18 per 5 s interval on 2.3; a run
    traced 58 fewer of 17,566 than arcstats counted, with 5.6 s untraced at the end): the idle tail's own
    intervals (the scenario idles 4 intervals after the workload) say how many per interval."""
    tail = rows[-3:]
    assert sum(_total(tail, k) for k in totals) < 0.01 * sum(totals.values()), "the tail is not idle"
    uncovered = INTERVAL + max(0.0, _t(guest_out, "after") - float(rows[-1]["epoch"]))
    return {k: max(_total([r], k) for r in tail) * uncovered / INTERVAL for k in totals}


def test_bcc_arc_split_equals_arcstats(guest_out: Path, guest_zfs: str) -> None:
    """The bcc backend's arc (kprobes on this guest) over its fio window = arcstats' deltas, as arc_kprobe.bt's."""
    why = _arc_untraceable(guest_out)
    if why:
        pytest.xfail(why)
    t1 = _t(guest_out, "bcc-after")
    samples = [s for s in _bcc_samples(guest_out, "arc") if s.ts <= t1 + INTERVAL and s.entity.name == "arc"]
    assert samples
    totals: Dict[str, float] = {}
    for s in samples:
        for k, v in s.metrics.items():
            totals[k] = totals.get(k, 0.0) + v
    raw = {k: _raw_delta(guest_out, "arcstats", k, "bcc-before", "bcc-after")
           for k in _raw_kstat(guest_out / "arcstats.bcc-after") if k.startswith(("demand_", "prefetch_"))}
    assert raw["demand_data_hits"] > 100, raw
    _arc_compare(totals, raw, guest_zfs)


def test_zil_trace_commits_agree_with_zil_kstat(guest_out: Path) -> None:
    """zil.bt's commits against the zil kstat's delta over the same window, within 1 % (at least 2).

    Not exact: bpftrace prints a map and then clears it, and an event landing between the two is lost
    (seen: 334 of 335, 592 of 594; the bcc backend, which reads and deletes in one batch, is exact). zfsmon's
    own ZIL figures come from the kstat and are checked exactly (test_zil_recorded_equals_zil_kstat)."""
    rows = _trace(guest_out, "zil", "zil")
    commits = _raw_delta(guest_out, "zil", "zil_commit_count")
    assert commits > 0
    tolerance = max(2.0, 0.01 * commits)
    assert commits - tolerance <= _total(rows, "commits") <= commits
    assert commits - tolerance <= _total(rows, "commit_ops") <= commits


def _txgs(path: Path) -> Dict[int, Dict[str, str]]:
    lines = path.read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["txg"])
    cols = lines[head].split()
    return {int(p[0]): dict(zip(cols, p)) for p in (ln.split() for ln in lines[head + 1:]) if len(p) == len(cols)}


def test_txg_trace_sync_times_plausible_against_txgs_kstat(guest_out: Path) -> None:
    """txg.bt's spa_sync count and times against the pool's txgs kstat (stime) over the window."""
    before, after = _txgs(guest_out / "txgs.before"), _txgs(guest_out / "txgs.after")
    last = max(t for t, r in before.items() if r["state"] == "C")
    synced = [int(r["stime"]) for t, r in after.items() if t > last and r["state"] == "C"]
    rows = _trace(guest_out, "txg", POOL)
    n = _total(rows, "sync_ops")
    assert synced and n, (synced, rows)
    assert abs(n - len(synced)) <= max(2, 0.1 * len(synced)), (n, len(synced))
    traced_mean = sum(_num(r["sync_lat_mean_ns"]) * _num(r["sync_ops"]) for r in rows) / n
    kstat_mean = sum(synced) / len(synced)
    assert 0.5 <= traced_mean / kstat_mean <= 2.0, (traced_mean, kstat_mean)
    assert max(_num(r["sync_lat_max_ns"]) for r in rows) == pytest.approx(max(synced), rel=0.5)


# --- ZIL/SLOG and per-dataset: zfsmon's recording against the kstats' deltas and fio ------------------------

DATASET = "zguest/db"  # the runner's dataset: fio runs on its mount point


def _is_dataset(row: Dict[str, str]) -> bool:
    return row["name"] == DATASET or (row.get("pool") == POOL and row["name"] == DATASET.split("/", 1)[1])


def _recorded_delta(guest_out: Path, kind: str, column: str) -> float:
    rows = [r for r in _export(guest_out, kind) if kind != "dataset" or _is_dataset(r)]
    assert rows, f"no {kind} rows recorded"
    a, b = _at(rows, _t(guest_out, "before")), _at(rows, _t(guest_out, "after"))
    return _num(b[column]) - _num(a[column])


@pytest.mark.parametrize("ours,kstat", [("commit_count", "zil_commit_count"),
                                        ("itx_metaslab_slog_bytes", "zil_itx_metaslab_slog_bytes"),
                                        ("itx_metaslab_slog_count", "zil_itx_metaslab_slog_count"),
                                        ("itx_count", "zil_itx_count")])
def test_zil_recorded_equals_zil_kstat(guest_out: Path, ours: str, kstat: str) -> None:
    want = _raw_delta(guest_out, "zil", kstat)
    assert want > 0, kstat
    assert _recorded_delta(guest_out, "zil", ours) == want


def test_zil_commits_follow_fio_fsyncs(guest_out: Path) -> None:
    """fio's fsyncs (one per 16 writes) are the window's only ZIL commits: one zil_commit each."""
    fsyncs = _fio(guest_out)["fsyncs"]
    assert fsyncs > 20
    assert _raw_delta(guest_out, "zil", "zil_commit_count") == pytest.approx(fsyncs, rel=0.02, abs=2)


@pytest.mark.parametrize("ours,kstat,fio_key", [("reads", "reads", "reads"), ("writes", "writes", "writes"),
                                                ("read_bytes", "nread", "read_bytes"),
                                                ("write_bytes", "nwritten", "write_bytes")])
def test_dataset_recorded_equals_objset_kstat_and_fio(guest_out: Path, ours: str, kstat: str, fio_key: str) -> None:
    want = _raw_delta(guest_out, "objset", kstat)
    assert _recorded_delta(guest_out, "dataset", ours) == want
    assert want == pytest.approx(_fio(guest_out)[fio_key], rel=0.03)


# --- the exporter, scraped under load, between two raw reads -----------------------------------------------

def _scrape(guest_out: Path):
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        need(False, "prometheus_client is not installed (pip install -e '.[test]')")
    samples = {}
    for fam in text_string_to_metric_families((guest_out / "scrape.2").read_text()):
        for s in fam.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples


def test_exporter_serves_every_disk_with_its_role(guest_out: Path) -> None:
    samples = _scrape(guest_out)
    series = [labels for name, got in samples.items() if name.startswith("zfsmon_leaf_")
              or name.startswith("zfsmon_vdev_") for labels, _ in got]
    seen = {(lb.get("device") or lb.get("vdev")): lb.get("role") for lb in series
            if (lb.get("device") or lb.get("vdev")) in EXPECTED}
    assert seen == {n: r for n, (r, _) in EXPECTED.items()}, seen


@pytest.mark.parametrize("series,kstat,key,moves", [
    ("zfsmon_arc_hits_total", "arcstats", "hits", True),
    ("zfsmon_arc_misses_total", "arcstats", "misses", False),  # the 96 MiB file fits the ARC by then
    ("zfsmon_zil_commit_total", "zil", "zil_commit_count", True),
    ("zfsmon_zil_itx_metaslab_slog_bytes_total", "zil", "zil_itx_metaslab_slog_bytes", True)])
def test_exporter_values_between_raw_reads(guest_out: Path, series: str, kstat: str, key: str, moves: bool) -> None:
    """Raw read, a scrape whose sample is newer than it, raw read: the served counter lies between."""
    got = _scrape(guest_out).get(series)
    assert got, f"{series} not served"
    lo = _raw_kstat(guest_out / f"{kstat}.scrape-before")[key]
    hi = _raw_kstat(guest_out / f"{kstat}.scrape-after")[key]
    assert lo <= got[0][1] <= hi, (series, lo, got[0][1], hi)
    assert hi > lo or not moves, f"{key} did not move under load"


# --- newer OpenZFS sources: txgs and iostats kstats, health from zpool status, where the recording was made ---

def _pool_rows(guest_out: Path, column: str) -> List[Dict[str, str]]:
    """The pool's rows that carry ``column`` (pool.csv mixes the pool's sources, one row each)."""
    rows = [r for r in _export(guest_out, "pool") if r["name"] == POOL and r.get(column, "") not in ("", "-")]
    assert rows, f"no pool row carries {column}"
    return rows


def test_txgs_recorded_equal_txgs_kstat(guest_out: Path) -> None:
    """zfsmon's txgs source: the txgs committed between two recorded rows are counted once each, and their
    sync time is the sum of the kstat's stime over exactly those txg numbers (read from the raw kstat)."""
    rows = _pool_rows(guest_out, "txg_committed")
    a, b = _at(rows, _t(guest_out, "before")), _at(rows, _t(guest_out, "after"))
    c1, c2 = int(_num(a["txg_committed"])), int(_num(b["txg_committed"]))
    after = _txgs(guest_out / "txgs.after")
    assert c2 > c1 and all(t in after for t in range(c1 + 1, c2 + 1)), (c1, c2, sorted(after)[:3])
    assert _num(b["txgs_synced"]) - _num(a["txgs_synced"]) == c2 - c1
    assert _num(b["txgs_unseen"] or "0") - _num(a["txgs_unseen"] or "0") == 0
    stime = sum(int(after[t]["stime"]) for t in range(c1 + 1, c2 + 1))
    assert _num(b["txg_sync_time_ns"]) - _num(a["txg_sync_time_ns"]) == stime
    written = sum(int(after[t]["nwritten"]) for t in range(c1 + 1, c2 + 1))
    assert _num(b["txg_written_synced_bytes"]) - _num(a["txg_written_synced_bytes"]) == written


def test_pool_iostats_recorded_equal_kstat(guest_out: Path, guest_zfs: str) -> None:
    """The per-pool iostats kstat: 2.3 counts DMU reads/writes through the ARC (2.1 has only trim counters)."""
    raw_after = _raw_kstat(guest_out / "iostats.after")
    if guest_zfs == "2.1":
        assert "arc_read_count" not in raw_after
        assert all(r.get("arc_read_count", "") in ("", "-") for r in _export(guest_out, "pool"))
        keys = ("trim_bytes_written", "autotrim_bytes_written")
    else:
        keys = ("arc_read_count", "arc_read_bytes", "arc_write_count", "arc_write_bytes")
        assert _raw_delta(guest_out, "iostats", "arc_read_count") > 100
    rows = _pool_rows(guest_out, keys[0])
    a, b = _at(rows, _t(guest_out, "before")), _at(rows, _t(guest_out, "after"))
    for k in keys:
        assert _num(b[k]) - _num(a[k]) == _raw_delta(guest_out, "iostats", k), k


def test_health_online_everywhere(guest_out: Path) -> None:
    """The pool and every disk are recorded ONLINE (state code 0) with their roles."""
    pool = _pool_rows(guest_out, "state")
    assert {r["state"] for r in pool} == {"0"}
    disks = [r for r in _recorded_leaves(guest_out) if r.get("state", "") not in ("", "-")]
    assert {r["name"] for r in disks} == set(EXPECTED)
    assert {r["state"] for r in disks} == {"0"}


def test_recording_says_where_it_was_made(guest_out: Path, guest_zfs: str) -> None:
    meta = {r["key"]: r["value"] for r in _rows(guest_out / "export" / "meta.csv")}
    kmod = re.search(r"zfs-kmod-(\S+)", (guest_out / "captures" / "zfs-version.txt").read_text()).group(1)
    assert meta["zfs_version"] == kmod, meta
    assert meta["zfs_flavour"] == "openzfs-kmod"
    assert meta["platform"].startswith("Linux"), meta
    assert kmod.startswith(guest_zfs + ".")


# --- the bcc backend: one program, its counts against fio's -----------------------------------------------

def _bcc_samples(guest_out: Path, script: str) -> List[Sample]:
    """The bcc tool's raw protocol output, parsed by zfsmon's own trace parser, after the raw "before" time."""
    parser = TraceParser("trace:bcc")
    recs: List[Record] = []
    for line in (guest_out / "bcc.out").read_text().splitlines():
        recs += parser.feed(line, 0.0)
    t0 = float((guest_out / "bcc-time.before").read_text())
    return [r for r in recs if isinstance(r, Sample) and r.source == f"trace:{script}" and r.ts > t0]


def test_bcc_ready_in_one_program(guest_out: Path) -> None:
    text = (guest_out / "bcc.out").read_text()
    ready = [ln for ln in text.splitlines() if ln.startswith("# zfsmon-bcc ready")]
    assert len(ready) == 1, (guest_out / "bcc.err").read_text()[-2000:]
    assert "zfsslower" in ready[0] and "zil" in ready[0], ready
    if _arc_untraceable(guest_out):  # 2.1: arc left out of the program, said in the stream and on stderr
        assert "not traced: arc" in ready[0], ready
        return
    assert "arc" in ready[0] and "not traced" not in ready[0], ready
    if not _has_zfs_tracepoints(guest_out):  # arc on kprobes: said on stderr, no `error arc` line
        assert "kprobes on arc_read" in (guest_out / "bcc.err").read_text()
        assert not [ln for ln in text.splitlines() if ln.startswith("error arc")]


@pytest.mark.parametrize("op", ["read", "write"])
def test_bcc_reads_writes_agree_with_fio(guest_out: Path, op: str) -> None:
    """bcc's zfsslower counts on the dataset (its s_dev, as `mountpoint -d` prints it) = fio's within 2 %."""
    devt = (guest_out / "dataset.devt").read_text().strip()
    job = json.loads((guest_out / "fio-bcc.json").read_text())["jobs"][0]
    want = job[op]["total_ios"]
    samples = [s for s in _bcc_samples(guest_out, "zfsslower") if s.entity.name == devt]
    assert samples, f"no bcc zfsslower samples for {devt}"
    assert want > 200
    assert sum(s.metrics.get(f"op_{op}", 0.0) for s in samples) == pytest.approx(want, rel=0.02)
    assert sum(s.metrics.get(f"{op}_ops", 0.0) for s in samples) == pytest.approx(want, rel=0.02)


def test_bcc_zil_commits_follow_fio_fsyncs(guest_out: Path) -> None:
    job = json.loads((guest_out / "fio-bcc.json").read_text())["jobs"][0]
    commits = sum(s.metrics.get("commits", 0.0) for s in _bcc_samples(guest_out, "zil"))
    assert job["sync"]["total_ios"] > 5
    assert commits == pytest.approx(job["sync"]["total_ios"], rel=0.02, abs=2)


# --- pgbench in the guest: a known number of commits against the zil kstat; analyze and export inside ------

PGTX = 300  # scenario.sh: pgbench -N -c 1 -t PGTX


def _pg_rows(guest_out: Path, kind: str) -> List[Dict[str, str]]:
    return _rows(guest_out / "pgexport" / f"{kind}.csv")


def test_pgbench_ran_its_known_number_of_transactions(guest_out: Path) -> None:
    text = (guest_out / "pgbench.txt").read_text()
    assert "pgbench exit 0" in text, text[-2000:]
    m = re.search(r"number of transactions actually processed: (\d+)/(\d+)", text)
    assert m and int(m.group(1)) == int(m.group(2)) == PGTX, text
    assert (guest_out / "pg-record.exit").read_text().split() == ["record", "exit", "0"]
    assert (guest_out / "pg-export.log").read_text().rstrip().endswith("export exit 0")


@pytest.mark.parametrize("ours,kstat", [("commit_count", "zil_commit_count"),
                                        ("itx_metaslab_slog_bytes", "zil_itx_metaslab_slog_bytes"),
                                        ("itx_count", "zil_itx_count")])
def test_pgbench_zil_recorded_equals_zil_kstat(guest_out: Path, ours: str, kstat: str) -> None:
    """zfsmon's ZIL figures over pgbench's window (recorded, exported in the guest) = the zil kstat's deltas."""
    rows = _pg_rows(guest_out, "zil")
    assert rows
    t0, t1 = _t(guest_out, "pg-before"), _t(guest_out, "pg-after")
    a, b = _at(rows, t0), _at(rows, t1)
    first = next(r for r in rows if float(r["epoch"]) > t0)
    nxt = next((r for r in rows if float(r["epoch"]) > t1), b)
    want = _raw_delta(guest_out, "zil", kstat, "pg-before", "pg-after")
    assert want > 0, kstat
    # The scenario waits for an idle ZIL before the "before" read and stops PostgreSQL before the "after" read, so
    # both edges are idle and the recorded delta is the kstat's exactly. Should a background writer still flush
    # at an edge, the kstat's delta lies between the recorded delta of the readings inside the window (the first
    # after the "before" read to the last before the "after" read) and that of the readings around it (the last
    # before to the first after; seen once at the end: 348, 357, 357, and once at the start: 347 recorded from the
    # reading before, 345 read).
    lo, hi = _num(b[ours]) - _num(first[ours]), _num(nxt[ours]) - _num(a[ours])
    assert lo <= want <= hi, (lo, want, hi)


def test_pgbench_commits_are_zil_commits(guest_out: Path) -> None:
    """Each -N transaction's COMMIT flushes the WAL (fdatasync -> zil_commit), and the window has nothing else
    but PostgreSQL's own background flushes: at least one ZIL commit per transaction, and not many more; the
    SLOG took the log blocks."""
    commits = _raw_delta(guest_out, "zil", "zil_commit_count", "pg-before", "pg-after")
    assert PGTX <= commits <= 1.5 * PGTX + 20, commits
    assert _raw_delta(guest_out, "zil", "zil_itx_metaslab_slog_bytes", "pg-before", "pg-after") > 0


def test_doctor_says_arc_runs_on_kprobes(guest_out: Path) -> None:
    """Without zfs tracepoints, doctor's bpftrace and bcc lines say arc uses kprobes on arc_read."""
    if _has_zfs_tracepoints(guest_out):
        return
    doc = json.loads((guest_out / "doctor.json").read_text())
    lines = {c["name"]: c["detail"] for c in doc["checks"] if c["name"] in ("bpftrace", "bcc")}
    want = "arc_access not traceable in this build (inlined): arc cannot run" if _arc_untraceable(guest_out) \
        else "arc uses kprobes on arc_read"
    assert lines and all(want in d for d in lines.values()), lines


def test_pgbench_log_analyzed_and_exported_in_the_guest(guest_out: Path) -> None:
    """`zfsmon import` put pgbench's per-transaction log (-l) into the recording; `zfsmon export --csv` and
    `zfsmon analyze --json`, run inside the guest on it, carry it: the workload rows sum to exactly pgbench's
    transactions, their latency (weighted by transactions) is pgbench's own average, and analyze aligns the TPS
    series with the ARC, L2ARC and disk series of the same recording."""
    assert (guest_out / "pg-import.log").read_text().rstrip().endswith("import exit 0")
    rows = [r for r in _pg_rows(guest_out, "workload") if r["name"] == "pgbench"]
    assert rows
    n = sum(_num(r["transactions"]) for r in rows)
    assert n == PGTX
    for r in rows:
        assert _num(r["tps"]) == pytest.approx(_num(r["transactions"]) / _num(r["interval"]))
    avg = float(re.search(r"latency average = ([\d.]+) ms", (guest_out / "pgbench.txt").read_text()).group(1))
    assert sum(_num(r["latency_avg_ms"]) * _num(r["transactions"]) for r in rows) / n == pytest.approx(avg, abs=0.001)
    assert "pgbench_log" in (guest_out / "pg-import.log").read_text()
    assert (guest_out / "pg-analyze.err").read_text().rstrip().endswith("analyze exit 0")
    doc = json.loads((guest_out / "pg-analyze.json").read_text())
    assert doc["series"]["tps"] == len(rows), doc["series"]
    assert doc["series"]["arc_hits"] >= 3 and doc["series"]["data_reads_per_disk"] >= 3, doc["series"]
    assert doc["start"] <= float(rows[0]["epoch"]) and float(rows[-1]["epoch"]) <= doc["end"] + doc["step_s"]
    topics = {f["topic"] for f in doc["findings"]}
    assert {"read_path", "l2arc_fill", "disk_reads"} <= topics, topics
    assert "Read path" in (guest_out / "pg-analyze.txt").read_text()
    meta = {r["key"]: r["value"] for r in _pg_rows(guest_out, "meta")}
    assert meta["zfs_flavour"] == "openzfs-kmod" and meta["zfs_version"].startswith("2."), meta


def test_pgbench_bcc_traces_recorded_against_the_kstats(guest_out: Path, guest_zfs: str) -> None:
    """`zfsmon record --trace zil --trace arc --backend bcc` (both traces in one bcc program, a child of the
    recorder) over pgbench's window: its ZIL commits = the zil kstat's delta within 1 (bcc takes each map's
    entries out with one lookup-and-delete batch), its ARC split = arcstats' as in the other ARC checks."""
    untraceable = _arc_untraceable(guest_out)
    assert f"traced {1 if untraceable else 2}" in (guest_out / "pg-traced.txt").read_text()
    events = [r["text"] for r in _pg_rows(guest_out, "events")]
    assert any(t.startswith("bcc ready") and ("zil" if untraceable else "arc,zil") in t for t in events), events
    t0, t1 = _t(guest_out, "pg-before"), _t(guest_out, "pg-after")
    rows = [r for r in _pg_rows(guest_out, "trace") if t0 < float(r["epoch"]) <= t1 + INTERVAL]
    commits = _raw_delta(guest_out, "zil", "zil_commit_count", "pg-before", "pg-after")
    zil = [r for r in rows if r["source"] == "trace:zil"]
    traced = _total(zil, "commits")
    # a traced interval covers the INTERVAL before its row: the first row's may start before the "before" read.
    # The scenario waits for an idle ZIL there, so it holds no commit; should one come all the same, the kstat's
    # delta lies between the intervals wholly inside the window and all of them (within bcc's 1)
    inside = _total([r for r in zil if float(r["epoch"]) - INTERVAL >= t0], "commits")
    assert commits >= PGTX and inside - 1 <= commits <= traced + 1, (inside, commits, traced)
    if untraceable:
        pytest.xfail(f"the ZIL part holds; arc: {untraceable}")
    counters = [f"{kind}_{hm}" for kind in _ARC_KINDS for hm in ("hits", "misses")]
    arc = [r for r in rows if r["source"] == "trace:arc" and r["name"] == "arc"]
    totals = {k: _total(arc, k) for k in counters}
    raw = {k: _raw_delta(guest_out, "arcstats", k, "pg-before", "pg-after")
           for k in _raw_kstat(guest_out / "arcstats.pg-after") if k.startswith(("demand_", "prefetch_"))}
    assert raw["demand_metadata_hits"] > 100, raw
    # the first traced interval starts up to one interval before the "before" read, while PostgreSQL idles: its
    # background processes' accesses come in bursts (a tier run saw 8, 8, 112, 112 metadata hits in the four
    # intervals before the window and traced 91 more than arcstats over it). The edge may hold one such interval:
    # its size is taken from the same recording's intervals just before the window.
    idle = [r for r in _pg_rows(guest_out, "trace") if r["source"] == "trace:arc" and r["name"] == "arc"
            and t0 - 4 * INTERVAL < float(r["epoch"]) <= t0]
    assert idle, "no traced interval before the window"
    edge = max(_total([r], k) for r in idle for k in counters)
    _arc_compare(totals, raw, guest_zfs, slack=0.01 * sum(raw.values()) + edge)


# --- the zpool-influxdb source beside the text path (scenario.sh: "zpool_influxdb beside the text path") -------
# One-shot zpool_influxdb reads and since-import `zpool iostat -vwp` (exact counts) at two quiet edges, a
# `zpool iostat -vpq POOL SPAN 2` whose second report covers the span, and the collector running across it.

INFLUX_SPAN = 24.0  # scenario.sh's INFLUX_SPAN


def _influx_snap(guest_out: Path, name: str) -> PoolSnapshot:
    [snap] = parse_snapshots((guest_out / name).read_text(), name)
    return snap


def _influx_topology(guest_out: Path) -> Topology:
    return parse_status((guest_out / "influx-status.txt").read_text())


def _tree(entity) -> Tuple[str, str, Optional[str], str]:
    return (entity.kind.value, entity.name, entity.role.value if entity.role else None, entity.parent)


def test_influx_span_has_quiet_edges(guest_out: Path) -> None:
    """Counters did not move at either edge (the equality below needs it), and the span saw the load."""
    assert (guest_out / "influx-quiet.txt").read_text().split() == ["before", "0", "after", "0"]
    after, again = _influx_snap(guest_out, "influx-after.txt"), _influx_snap(guest_out, "influx-after2.txt")
    assert {t: v.counters for t, v in after.vdevs.items()} == {t: v.counters for t, v in again.vdevs.items()}
    before = _influx_snap(guest_out, "influx-before.txt")
    assert after.vdevs["root"].counters["write_ops"] - before.vdevs["root"].counters["write_ops"] > 100


def test_influx_entity_tree_and_roles_equal_the_text_paths_cache_aside(guest_out: Path) -> None:
    """Every vdev zpool_influxdb prints is the text path's entity with its role and parent; the L2ARC is the
    one entity it lacks (it walks the vdev tree's children, and cache devices are not among them)."""
    topo = _influx_topology(guest_out)
    text = parse_text((guest_out / "influx-iostat-vpq.txt").read_text(), "vpq", INFLUX_SPAN, flags="qp",
                      topology=topo, pools=[POOL])
    text_tree = {_tree(s.entity) for s in text if isinstance(s, Sample)}
    ours = {_tree(e) for e in entities(_influx_snap(guest_out, "influx-after.txt"), topo).values()}
    assert text_tree - ours == {("vdev", "virtio-cache0", "cache", POOL)}
    assert ours <= text_tree


def _span_deltas(guest_out: Path) -> Dict[str, Dict[str, int]]:
    before, after = _influx_snap(guest_out, "influx-before.txt"), _influx_snap(guest_out, "influx-after.txt")
    ents = entities(after, _influx_topology(guest_out))
    return {ents[t].name: {k: v.counters[k] - before.vdevs[t].counters[k]
                           for k in ("read_ops", "write_ops", "read_bytes", "write_bytes")}
            for t, v in after.vdevs.items()}


@pytest.mark.parametrize("metric,counter", [("read_ops", "read_ops"), ("write_ops", "write_ops"),
                                            ("read_bw", "read_bytes"), ("write_bw", "write_bytes")])
def test_influx_ops_and_bytes_over_the_span_equal_the_text_paths_rates(guest_out: Path, metric: str,
                                                                       counter: str) -> None:
    """The span's counter deltas (before/after, exact) against the text's one report over the span (``-p``: the
    rate truncated to a whole number per second, over the kernel's time between its two reads, which is the
    nominal span plus the command's own delays): within a unit per second of the span and 5 %."""
    text = [s for s in parse_text((guest_out / "influx-iostat-vpq.txt").read_text(), "vpq", INFLUX_SPAN,
                                  flags="qp", topology=_influx_topology(guest_out), pools=[POOL])
            if isinstance(s, Sample) and not s.since_boot]
    rates = {s.entity.name: s.metrics[metric] for s in text}
    deltas = _span_deltas(guest_out)
    for name, d in deltas.items():
        allowed = INFLUX_SPAN + 0.05 * d[counter]
        assert abs(rates[name] * INFLUX_SPAN - d[counter]) <= allowed, (name, metric, rates[name], d[counter])


def _text_lifetime_histograms(guest_out: Path, name: str) -> Dict[str, Dict[str, float]]:
    recs = histogram_records((guest_out / name).read_text(), pools=[POOL], topology=_influx_topology(guest_out))
    return {s.entity.name: dict(s.metrics) for s in recs if isinstance(s, Sample)}


@pytest.mark.parametrize("edge", ["before", "after"])
def test_influx_latency_histograms_equal_zpool_iostat_w_per_bucket(guest_out: Path, edge: str) -> None:
    """At a quiet edge both read the same lifetime histograms: every bucket from 4us up is equal, and
    zpool_influxdb's first bucket (le=0.000001) holds zpool iostat -w's buckets 1ns..2us."""
    snap = _influx_snap(guest_out, f"influx-{edge}.txt")
    ents = entities(snap, _influx_topology(guest_out))
    text = _text_lifetime_histograms(guest_out, f"influx-iostat-w-{edge}.txt")
    assert set(text) - {e.name for e in ents.values()} == {"virtio-cache0"}
    compared = 0
    for tag, v in snap.vdevs.items():
        t = text[ents[tag].name]
        for fld, prefix in LAT_FIELDS.items():
            if fld not in v.latency or f"{prefix}_1ns" not in t:
                continue
            mine = v.latency[fld]
            assert mine[FIRST_LAT_BUCKET] == sum(t[f"{prefix}_{LAT_BUCKETS[j]}"] for j in range(FIRST_LAT_BUCKET + 1))
            for j in range(FIRST_LAT_BUCKET + 1, len(LAT_BUCKETS)):
                assert mine[j] == t[f"{prefix}_{LAT_BUCKETS[j]}"], (ents[tag].name, fld, j)
            compared += 1
    assert compared >= 8 * 9, compared  # 8 entities x (the 9 columns 2.1 has at least)


def test_influx_pool_queues_equal_the_text_paths(guest_out: Path) -> None:
    """zpool_influxdb has queues for the pool only: at the quiet end they equal the text's last report."""
    text = [s for s in parse_text((guest_out / "influx-iostat-vpq.txt").read_text(), "vpq", INFLUX_SPAN,
                                  flags="qp", pools=[POOL]) if isinstance(s, Sample) and not s.since_boot]
    pool = next(s for s in text if s.entity.kind == Kind.POOL)
    root = _influx_snap(guest_out, "influx-after.txt").vdevs["root"].queues
    mapped = {QUEUE_FIELDS[k]: float(v) for k, v in root.items() if k in QUEUE_FIELDS}
    assert len(mapped) >= 10 and mapped == {k: pool.metrics[k] for k in mapped}


def test_influx_collector_across_the_span_sums_to_the_counter_deltas(guest_out: Path) -> None:
    """The collector (1 s passes, running before the first edge and after the last) adds up, rate x interval,
    to the exact deltas, with the text path's entities and roles."""
    rows = [json.loads(line) for line in (guest_out / "influx-collector.jsonl").read_text().splitlines()]
    rates = [r for r in rows if "read_ops" in r["metrics"]]
    assert len({r["ts"] for r in rates}) >= INFLUX_SPAN / 2
    topo = _influx_topology(guest_out)
    want = {_tree(e) for e in entities(_influx_snap(guest_out, "influx-after.txt"), topo).values()}
    got = {(r["entity"]["kind"], r["entity"]["name"], r["entity"]["role"], r["entity"]["parent"]) for r in rates}
    assert got == want
    deltas = _span_deltas(guest_out)
    for name, d in deltas.items():
        mine = [r for r in rates if r["entity"]["name"] == name]
        for metric, counter in (("read_ops", "read_ops"), ("write_ops", "write_ops"), ("read_bw", "read_bytes"),
                                ("write_bw", "write_bytes")):
            total = sum(r["metrics"][metric] * r["interval"] for r in mine)
            assert round(total) == d[counter], (name, metric, total, d[counter])
    lat = [r for r in rows if any(k.startswith("lat_") for k in r["metrics"])]
    assert lat and all(r["interval"] >= 9.5 for r in lat)


@pytest.mark.parametrize("name,summed", [("zpool_influxdb.txt", False), ("zpool_influxdb-s.txt", True)])
def test_influx_captures_parse(guest_out: Path, name: str, summed: bool) -> None:
    [snap] = parse_snapshots((guest_out / "captures" / name).read_text(), name, summed=summed)
    names = {e.name for e in entities(snap, parse_status((guest_out / "captures" / "zpool-status.txt").read_text()))
             .values()}
    assert names == {POOL, "mirror-0", "mirror-1", *(f"virtio-data{i}" for i in range(4)), "virtio-log0"}


def test_influx_collection_cpu_measured(guest_out: Path) -> None:
    cpu = json.loads((guest_out / "influx-cpu.json").read_text())
    assert set(cpu) == {"zpool-influxdb", "zpool", "zpool + latency", "zpool iostat -v 1 (child alone)"}
    assert all(arm["wall_s"] >= 14 and arm["cpu_s"] > 0 for arm in cpu.values()), cpu
    assert cpu["zpool-influxdb"]["samples"] > 0 and cpu["zpool"]["samples"] > 0


def test_zpool_iostat_w_interval_histograms_are_read_as_counts(guest_out: Path) -> None:
    """What the span's `zpool iostat -vwp POOL SPAN 2` second report holds: not the span's I/Os per bucket but
    per second (zpool_main.c scales every histogram bucket by 1e9 / the interval's ns and cuts it to a whole
    number); read with its interval, the latency source's samples are counts again, within the cut of the
    buckets (at most SPAN I/Os each) of zpool_influxdb's exact differences."""
    topo = _influx_topology(guest_out)
    text = (guest_out / "influx-iostat-vwp-span.txt").read_text()

    def writes(interval):
        span = [s for s in histogram_records(text, pools=[POOL], topology=topo, interval=interval)
                if isinstance(s, Sample) and not s.since_boot]
        return {s.entity.name: [v for k, v in s.metrics.items() if k.startswith("lat_total_wait_write_")]
                for s in span}

    per_s, counts = writes(None), writes(float(INFLUX_SPAN))
    before, after = _influx_snap(guest_out, "influx-before.txt"), _influx_snap(guest_out, "influx-after.txt")
    ents = entities(after, topo)
    for tag, v in after.vdevs.items():
        ios = sum(v.latency["total_write"].values()) - sum(before.vdevs[tag].latency["total_write"].values())
        rates, got = per_s[ents[tag].name], counts[ents[tag].name]
        nonzero = sum(1 for r in rates if r) + 1
        assert got == [r * INFLUX_SPAN for r in rates]
        assert ios - INFLUX_SPAN * nonzero - 0.05 * ios <= sum(got) <= ios * 1.02, (tag, ios, got)
        assert ios > 2 * sum(rates), (tag, ios, sum(rates))  # printed per second, not as the span's counts
