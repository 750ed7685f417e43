"""What each D script counted on kernel OpenZFS, against ZFS's own counters over the same window.

A run of bench/guest_dtrace.sh leaves, per trace, the script's protocol text (``NAME/dtrace.out``) and the
ground truth read at both ends of its window (``NAME/raw.before.*``, ``NAME/raw.after.*``: txgs, zil, arcstats,
the dataset's objset kstat, /proc/diskstats, each vdev's op counts). Both ends are idle (the script reported an
interval before the workload, and two after it), so the intervals that end inside the window hold everything the
kernel counted in it. The tolerances are the bpftrace twins' (tests/guest/test_live.py) unless a row says why.
Used by bench/bench_guest_dtrace.py and tests/unit/trace/test_dtrace_openzfs23.py.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Tuple

from zfsmon.model import Event, Sample
from zfsmon.sources.devices.diskstats import parse_diskstats
from zfsmon.sources.kstat.text import parse_proc_table
from zfsmon.sources.kstat.txgs import parse_txgs
from zfsmon.sources.zpool.iostat import parse_text as parse_iostat
from zfsmon.trace.protocol import TraceParser

#: the arcstats counters the ARC trace splits (demand/prefetch x data/metadata x hits/iohits/misses)
ARC_KINDS = tuple(f"{dp}_{dm}_{hm}" for dp in ("demand", "prefetch") for dm in ("data", "metadata")
                  for hm in ("hits", "iohits", "misses"))
_TXG = re.compile(r"\btxg=(\d+)\b")
#: txg.d runs with SLOW_MS 1: each sync longer than that prints its own line with its txg number
SLOW_TXG_NS = 1_000_000


@dataclass(frozen=True)
class Row:
    """One comparison: what the script counted, what ZFS counted, and how far apart they may be."""

    trace: str
    what: str
    traced: float
    truth: float
    tolerance: float
    why: str = ""

    @property
    def ok(self) -> bool:
        return abs(self.traced - self.truth) <= self.tolerance

    def as_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def records(text: str) -> Tuple[List[Sample], List[Event]]:
    """A script's protocol text: its interval samples (entities as the script named them) and slow-op events."""
    parser = TraceParser("trace")
    samples: List[Sample] = []
    events: List[Event] = []
    for line in text.splitlines():
        for r in parser.feed(line, 0.0):
            if isinstance(r, Sample):
                samples.append(r)
            elif isinstance(r, Event):
                events.append(r)
    return samples, events


def window(trace_dir: Path) -> Tuple[float, float]:
    return (float((trace_dir / "raw.before.time").read_text()), float((trace_dir / "raw.after.time").read_text()))


def inside(samples: List[Sample], t0: float, t1: float) -> List[Sample]:
    """The intervals that end inside the window (its edges are idle)."""
    return [s for s in samples if t0 < s.ts <= t1]


def total(samples: List[Sample], metric: str, entity: str = "") -> float:
    return sum(s.metrics.get(metric, 0.0) for s in samples if not entity or s.entity.name == entity)


def named_delta(trace_dir: Path, kstat: str) -> Dict[str, float]:
    """A named kstat's counters, after minus before (arcstats, zil, the dataset's objset)."""
    before = parse_proc_table((trace_dir / f"raw.before.{kstat}").read_text(), kstat).values
    after = parse_proc_table((trace_dir / f"raw.after.{kstat}").read_text(), kstat).values
    return {k: after[k] - before.get(k, 0.0) for k in after}


def synced_txgs(trace_dir: Path) -> Dict[int, int]:
    """txg -> its sync time (stime, ns) for each txg committed inside the window (the pool's txgs kstat)."""
    before = {r.txg for r in parse_txgs((trace_dir / "raw.before.txgs").read_text()) if r.state == "C"}
    return {r.txg: r.values["stime"] for r in parse_txgs((trace_dir / "raw.after.txgs").read_text())
            if r.state == "C" and r.txg not in before}


def _delta(before: Dict[str, Dict[str, float]], after: Dict[str, Dict[str, float]]) -> Dict[str, Dict[str, float]]:
    """Per entity, each counter after minus before (one absent before counts from 0)."""
    return {n: {k: v - before.get(n, {}).get(k, 0.0) for k, v in m.items()} for n, m in after.items()}


def disk_delta(trace_dir: Path) -> Dict[str, Dict[str, float]]:
    """Kernel device -> /proc/diskstats counters, after minus before."""
    def read(tag: str) -> Dict[str, Dict[str, float]]:
        text = (trace_dir / f"raw.{tag}.diskstats").read_text()
        return {s.entity.name: s.metrics for s in parse_diskstats(text, 0.0)}
    return _delta(read("before"), read("after"))


def vdev_ops(text: str) -> Dict[str, Dict[str, float]]:
    """``zpool get -Hp read_ops,write_ops,... POOL all-vdevs`` (NAME, PROPERTY, VALUE, SOURCE by tabs) -> vdev ->
    its counters since import. A line that is not four fields, or a value that is not a count, is left out."""
    out: Dict[str, Dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[2].isdigit():
            out.setdefault(parts[0], {})[parts[1]] = float(parts[2])
    return out


def leaf_ops_delta(trace_dir: Path) -> Dict[str, Dict[str, float]]:
    """Vdev name -> its operation and byte counts (vdev properties), after minus before."""
    return _delta(vdev_ops((trace_dir / "raw.before.vdev-ops").read_text()),
                  vdev_ops((trace_dir / "raw.after.vdev-ops").read_text()))


def _txg_rows(trace_dir: Path) -> List[Row]:
    t0, t1 = window(trace_dir)
    samples, events = records((trace_dir / "dtrace.out").read_text())
    truth = synced_txgs(trace_dir)
    rows = [Row("txg", "spa_sync calls = txgs committed", total(inside(samples, t0, t1), "sync_ops"), len(truth),
                max(2.0, 0.1 * len(truth)), "txg.bt's tolerance")]
    per = {int(m.group(1)): float(e.data["lat_ns"]) for e in events if t0 < e.ts <= t1
           for m in [_TXG.search(str(e.data.get("detail", "")))] if m}
    # a slow line is printed for a sync over SLOW_MS (1 ms, the least the argument can say): the txgs whose stime
    # is over it must each have one, under its own number; the two clocks may put one near 1 ms on either side
    slow = {t for t, ns in truth.items() if ns > SLOW_TXG_NS}
    rows.append(Row("txg", "txgs over 1 ms named by their slow line", len(slow & set(per)), len(slow), 1.0))
    rows.append(Row("txg", "slow lines naming a txg not committed in the window", len(set(per) - set(truth)), 0, 0.0))
    off = [abs(per[t] - truth[t]) / truth[t] for t in sorted(set(per) & set(truth)) if truth[t]]
    rows.append(Row("txg", "largest sync-time difference per txg (fraction of stime)", max(off, default=1.0), 0.0,
                    0.1, "stime is the sync thread's own clock around spa_sync"))
    return rows


def _zil_rows(trace_dir: Path) -> List[Row]:
    t0, t1 = window(trace_dir)
    samples, _ = records((trace_dir / "dtrace.out").read_text())
    commits = named_delta(trace_dir, "zil")["zil_commit_count"]
    got = inside(samples, t0, t1)
    rows = [Row("zil", "zil_commit calls = zil_commit_count", total(got, "commits"), commits,
                max(2.0, 0.01 * commits), "zil.bt's tolerance"),
            Row("zil", "zil_commit latencies (commit_ops)", total(got, "commit_ops"), commits,
                max(2.0, 0.01 * commits), "zil.bt's tolerance")]
    slog = {s.entity.name for s in got if s.metrics.get("slog_write_ops")}
    leaves = leaf_ops_delta(trace_dir)
    for dev in sorted(slog):
        leaf = Path(dev).name.rsplit("-part", 1)[0]
        want = leaves.get(leaf, {}).get("write_ops", 0.0)
        rows.append(Row("zil", f"SLOG writes on {leaf} = its write_ops", total(got, "slog_write_ops", dev),
                        want, max(2.0, 0.01 * want)))
    return rows


def _zfsslower_rows(trace_dir: Path) -> List[Row]:
    t0, t1 = window(trace_dir)
    samples, _ = records((trace_dir / "dtrace.out").read_text())
    got = inside(samples, t0, t1)
    objset = named_delta(trace_dir, "objset")
    return [Row("zfsslower", f"{op}s = the dataset's objset {kstat}", total(got, f"{op}_ops"), objset[kstat],
                max(2.0, 0.01 * objset[kstat]))
            for op, kstat in (("read", "reads"), ("write", "writes"))] + \
           [Row("zfsslower", f"{op} bytes = the dataset's objset {kstat}", total(got, f"{op}_bytes"), objset[kstat],
                max(16384.0, 0.01 * objset[kstat]))
            for op, kstat in (("read", "nread"), ("write", "nwritten"))]


#: vdevlat.d's latency histograms hold the I/Os io:::done reported; under DTrace for Linux it fires for fewer than
#: io:::start (0.3 % fewer on this machine's loop devices, up to 3.3 % in the OpenZFS guest), so they are held to this
IO_DONE_SHORTFALL = 0.05
#: a device's mean latency, the block layer's (diskstats: request start to completion) against D's (bio queued to
#: completed): 0.2-2 % apart on the guest's data and cache disks, 20 % on its fast log device (0.39 vs 0.49 ms)
MEAN_LATENCY_REL = 0.25


def by_id_leaves(ls_text: str) -> Dict[str, str]:
    """``ls -l /dev/disk/by-id``: kernel device -> the leaf name zpool shows (``vdb1`` -> ``virtio-data0``)."""
    out: Dict[str, str] = {}
    for line in ls_text.splitlines():
        left, arrow, target = line.partition(" -> ")
        if arrow and left.split():
            out[Path(target.strip()).name] = re.sub(r"-part\d+$", "", left.split()[-1])
    return out


def disk_wait(trace_dir: Path, op: str) -> Dict[str, Dict[int, float]]:
    """Leaf -> its ``zpool iostat -vwp`` disk_wait histogram for ``op`` over the window: upper bound (ns) -> I/Os."""
    def read(tag: str) -> Dict[str, Dict[str, float]]:
        text = (trace_dir / f"raw.{tag}.iostat-vwp").read_text()
        return {s.entity.name: s.metrics for s in parse_iostat(text) if isinstance(s, Sample)}
    before, after = read("before"), read("after")
    prefix = f"lat_disk_wait_{op}_"
    out: Dict[str, Dict[int, float]] = {}
    for leaf, m in after.items():
        for k, v in m.items():
            if k.startswith(prefix):
                out.setdefault(leaf, {})[_ns(k[len(prefix):])] = v - before.get(leaf, {}).get(k, 0.0)
    return out


_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _ns(label: str) -> int:
    """``262us`` -> 262143: zpool iostat -w labels a bucket by its power of two, printed rounded down."""
    m = re.fullmatch(r"(\d+)(ns|us|ms|s)", label)
    assert m, label
    shown = int(m.group(1)) * _UNITS[m.group(2)]
    return (1 << max(0, (shown).bit_length())) - 1 if shown & (shown + 1) else shown


def median_bucket(hist: Dict[int, float]) -> int:
    """The index (log2 of the bound) of the bucket holding the median of a histogram of upper bounds."""
    n = sum(hist.values())
    seen = 0.0
    for bound in sorted(hist):
        seen += hist[bound]
        if seen >= n / 2:
            return bound.bit_length()
    return 0


def _vdevlat_rows(trace_dir: Path) -> List[Row]:
    t0, t1 = window(trace_dir)
    samples, _ = records((trace_dir / "dtrace.out").read_text())
    got = inside(samples, t0, t1)
    disks = disk_delta(trace_dir)
    ids = trace_dir.parent / "by-id.txt"
    leaves = by_id_leaves(ids.read_text()) if ids.is_file() else {}
    rows: List[Row] = []
    for dev in sorted({s.entity.name for s in got}):
        if dev not in disks or (leaves and dev not in leaves):  # the pool's disks (not the guest's root disk)
            continue
        for op in ("read", "write"):
            want = disks[dev].get(f"{op}s", 0.0)
            rows.append(Row("vdevlat", f"{dev} {op}s issued (io:::start) = /proc/diskstats",
                            total(got, f"issued_{op}s", dev), want, 0.0))
            timed = total(got, f"{op}_ops", dev)
            rows.append(Row("vdevlat", f"{dev} {op}s timed (io:::done) <= issued, short by at most 5 %",
                            timed, want, IO_DONE_SHORTFALL * want if timed <= want else 0.0,
                            "the io provider reports fewer completions than starts"))
            if timed >= 100 and want:
                mean = sum(m.metrics.get(f"{op}_lat_mean_ns", 0.0) * m.metrics.get(f"{op}_ops", 0.0)
                           for m in got if m.entity.name == dev) / timed
                truth = disks[dev].get(f"{op}_time_ns", 0.0) / want
                rows.append(Row("vdevlat", f"{dev} mean {op} latency (ns) = /proc/diskstats' time / {op}s",
                                round(mean), round(truth), MEAN_LATENCY_REL * truth,
                                "request start to completion against bio queued to completed"))
    if leaves:
        wait = disk_wait(trace_dir, "write")
        for dev in sorted({s.entity.name for s in got}):
            leaf = leaves.get(dev, "")
            if leaf not in wait or sum(wait[leaf].values()) < 100:
                continue
            hist: Dict[int, float] = {}
            for smp in got:
                if smp.entity.name == dev:
                    for k, v in smp.metrics.items():
                        if k.startswith("write_hist_"):
                            lo = int(k[len("write_hist_"):])
                            hist[lo] = hist.get(lo, 0.0) + v
            rows.append(Row("vdevlat", f"{dev} ({leaf}) median write: power-of-two bucket vs zpool iostat -w disk_wait",
                            median_bucket(hist), median_bucket(wait[leaf]), 2.0,
                            "ZFS's disk_wait runs from its own issue to its completion handling, and an aggregated "
                            "write charges its time to every write in it: up to 4x the block layer's"))
    return rows


def _arc_rows(trace_dir: Path) -> List[Row]:
    t0, t1 = window(trace_dir)
    samples, _ = records((trace_dir / "dtrace.out").read_text())
    got = inside(samples, t0, t1)
    arc = named_delta(trace_dir, "arcstats")
    rows = [Row("arc", f"{k} = arcstats", total(got, k, "arc"), arc.get(k, 0.0), max(3.0, 0.002 * arc.get(k, 0.0)),
                "arc_kprobe.bt's tolerance (2.2+)") for k in ARC_KINDS]
    rows.append(Row("arc", "L2ARC reads done = arcstats l2_hits", total(got, "hits", "l2arc"), arc["l2_hits"],
                    max(3.0, 0.002 * arc["l2_hits"])))
    return rows


COMPARE = {"txg": _txg_rows, "zil": _zil_rows, "zfsslower": _zfsslower_rows, "vdevlat": _vdevlat_rows,
           "arc": _arc_rows}


def compare(cap: Path) -> dict:
    """Every trace of a run (``$ZFSMON_OUT/dtrace``), compared: {"versions": [...], "rows": [...]}."""
    rows: List[Row] = []
    for name, fn in COMPARE.items():
        if (cap / name / "raw.after.time").is_file():
            rows += fn(cap / name)
    versions = (cap / "versions.txt").read_text().splitlines() if (cap / "versions.txt").is_file() else []
    return {"versions": versions, "rows": [r.as_dict() for r in rows]}
