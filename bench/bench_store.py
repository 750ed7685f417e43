"""Recording benchmark: size, recorder CPU, export and read times of a long synthetic recording.

A pool with 8 raidz2 vdevs of 8 leaves (64 leaves) plus a log and a cache device, ARC, L2ARC and ZIL
kstats (every statistic in the metrics table) and a pgbench-like workload, sampled every second for
--hours. The zpool iostat numbers are humanised exactly as `zpool iostat -v` prints them and read back
with the same unit parser, so the recording and the text logs hold the same data. The text logs that
would hold the same data (`zpool iostat -v 1` and a loop of `cat arcstats` + `cat zil`) are rendered
alongside: their size is counted for the whole run, and the first --text-hours of them are written to
disk and re-parsed with zfsmon's own parsers to compare with exporting the recording.

    python3 bench/bench_store.py --hours 24 --dir /var/tmp/zfsmon-bench

Prints a markdown section for docs/performance.md.

With --compare FILE...: only bytes per value of those recordings, and of the same data as gzip -9'd
per-kind CSV (what `zfsmon export --csv` writes) and as Prometheus TSDB blocks (an OpenMetrics file
turned into blocks by `promtool tsdb create-blocks-from openmetrics`, when promtool is installed);
--compare-hours limits that to each file's first hours, --loop-minutes first plays each (short, real)
recording's samples again and again, counters continued, for that long:

    python3 bench/bench_store.py --compare run.zfsmon --compare-hours 2
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from array import array
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zfsmon import metrics  # noqa: E402
from zfsmon.model import Entity, Kind, Role, Sample  # noqa: E402
from zfsmon.sources import detect  # noqa: E402
from zfsmon.store import Recorder, Recording, codec, schema  # noqa: E402
from zfsmon.units import human_size, parse_size  # noqa: E402
from zfsmon.views import csv_export as view  # noqa: E402

POOL = "tank"
T0 = 1_700_000_000.0


class Synthetic:
    """Deterministic pseudo-random readings; every value is what a parser of the text would produce."""

    def __init__(self, seed: int = 1) -> None:
        self.rnd = random.Random(seed)
        self.rows: List[Tuple[Entity, int]] = [(Entity(Kind.POOL, POOL, POOL), 0)]
        for v in range(8):
            vname = f"raidz2-{v}"
            self.rows.append((Entity(Kind.VDEV, vname, POOL, Role.DATA, POOL), 1))
            for d in range(8):
                self.rows.append((Entity(Kind.LEAF, f"sd{chr(97 + v)}{d}", POOL, Role.DATA, vname), 2))
        self.rows.append((Entity(Kind.VDEV, "nvme0n1", POOL, Role.LOG, POOL), 1))
        self.rows.append((Entity(Kind.VDEV, "nvme1n1", POOL, Role.CACHE, POOL), 1))
        self.arc_names = sorted(s.name for s in metrics.specs_for(Kind.ARC))
        self.l2_names = sorted(s.name for s in metrics.specs_for(Kind.L2ARC))
        self.zil_names = sorted(s.name for s in metrics.specs_for(Kind.ZIL))
        self.kstat: Dict[Tuple[Kind, str], int] = {}
        for kind, names in ((Kind.ARC, self.arc_names), (Kind.L2ARC, self.l2_names), (Kind.ZIL, self.zil_names)):
            for n in names:
                self.kstat[(kind, n)] = self.rnd.randrange(0, 10 ** self.rnd.randrange(1, 11))
        self.alloc = 40 * 2 ** 40

    def _counter_step(self, kind: Kind, name: str) -> None:
        if metrics.is_counter(kind, name):
            if self.rnd.random() < 0.6:
                self.kstat[(kind, name)] += self.rnd.randrange(0, 5000)
        else:
            v = self.kstat[(kind, name)]
            self.kstat[(kind, name)] = max(0, v + self.rnd.randrange(-v // 100 - 2, v // 100 + 3))

    def tick(self, i: int, text: bool = True) -> Tuple[List[Sample], str, str]:
        """Samples of second i, plus the `zpool iostat -v` text and the kstat text of the same numbers
        (empty strings when ``text`` is false: the same samples, made faster)."""
        ts = T0 + i
        rnd = self.rnd
        out: List[Sample] = []
        lines = ["                  capacity     operations     bandwidth ",
                 "pool            alloc   free   read  write   read  write",
                 "--------------  -----  -----  -----  -----  -----  -----"]
        self.alloc += rnd.randrange(0, 2 ** 24)
        for ent, depth in self.rows:
            ro, wo = rnd.randrange(0, 400 if depth == 2 else 3000), rnd.randrange(0, 300 if depth == 2 else 2000)
            cells = {"read_ops": ro, "write_ops": wo, "read_bw": ro * rnd.randrange(4096, 131072),
                     "write_bw": wo * rnd.randrange(4096, 131072)}
            shown = {k: human_size(v) for k, v in cells.items()}
            m = {k: parse_size(s) for k, s in shown.items()}
            if depth < 2:
                alloc = self.alloc >> (3 if depth else 0)
                free = (60 * 2 ** 40 >> (3 if depth else 0)) - alloc
                a, f = human_size(alloc), human_size(free)
                m = {"alloc": parse_size(a), "free": parse_size(f), **m}
            else:
                a = f = "-"
            out.append(Sample(ts, ent, m, interval=1.0, source="zpool iostat"))
            if not text:
                continue
            name = "  " * depth + ent.name
            lines.append(f"{name:<14}  {a:>5}  {f:>5}  {shown['read_ops']:>5}  {shown['write_ops']:>5}  "
                         f"{shown['read_bw']:>5}  {shown['write_bw']:>5}")
        lines.append(lines[2])
        iostat = "\n".join(lines) + "\n" if text else ""
        kst = []
        for kind, names, ent in ((Kind.ARC, self.arc_names, Entity(Kind.ARC, "arc")),
                                 (Kind.L2ARC, self.l2_names, Entity(Kind.L2ARC, "l2arc"))):
            for n in names:
                self._counter_step(kind, n)
            out.append(Sample(ts, ent, {n: self.kstat[(kind, n)] for n in names}, source="arcstats"))
        for n in self.zil_names:
            self._counter_step(Kind.ZIL, n)
        out.append(Sample(ts, Entity(Kind.ZIL, "zil"), {n: self.kstat[(Kind.ZIL, n)] for n in self.zil_names},
                          source="zil"))
        tps = round(rnd.uniform(800, 1200), 1)
        lat = round(8000 / tps, 3)
        out.append(Sample(ts, Entity(Kind.WORKLOAD, "pgbench"), {"tps": tps, "latency_avg_ms": lat,
                                                                  "latency_stddev_ms": round(lat / 3, 3),
                                                                  "failed": 0, "clients": 8}, interval=1.0,
                          source="pgbench"))
        if not text:
            return out, "", ""
        arc_rows = [(n, self.kstat[(Kind.ARC, n)]) for n in self.arc_names]
        arc_rows += [("l2_" + n, self.kstat[(Kind.L2ARC, n)]) for n in self.l2_names]
        kst.append(f"22 1 0x01 {len(arc_rows)} 39984 2746799574 {int(i * 1e9) + 1351143854159630}")
        kst.append("name                            type data")
        kst += [f"{n:<31} 4    {v}" for n, v in arc_rows]
        zil_text = [f"26 1 0x01 {len(self.zil_names)} 5440 2747653314 {int(i * 1e9) + 1351144218241567}",
                    "name                            type data"]
        zil_text += [f"{'zil_' + n:<31} 4    {self.kstat[(Kind.ZIL, n)]}" for n in self.zil_names]
        kst_text = "\n".join(kst) + "\n"
        return out, iostat, kst_text + "\n".join(zil_text) + "\n"


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def narrow_layout_bytes(samples_per_tick: List[List[Sample]], path: str) -> Tuple[int, int]:
    """The alternative: one row per value (tick, entity, metric, value), interned names, no packing."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE v (tick INTEGER, entity INTEGER, metric INTEGER, value NUMERIC, "
               "PRIMARY KEY (tick, entity, metric)) WITHOUT ROWID")
    ents: Dict[str, int] = {}
    mets: Dict[str, int] = {}
    n = 0
    for t, batch in enumerate(samples_per_tick):
        rows = []
        for s in batch:
            e = ents.setdefault(s.entity.key, len(ents))
            for k, v in s.metrics.items():
                rows.append((t, e, mets.setdefault(f"{s.entity.kind}.{k}", len(mets)), v))
        db.executemany("INSERT INTO v VALUES (?, ?, ?, ?)", rows)
        db.commit()
        n += len(rows)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return os.path.getsize(path), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--text-hours", type=float, default=1.0, help="hours of text logs written and re-parsed")
    ap.add_argument("--dir", default="/var/tmp/zfsmon-bench")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--compare", nargs="+", metavar="FILE",
                    help="only compare these recordings with gzip'd CSV and a Prometheus TSDB of the same data")
    ap.add_argument("--compare-hours", type=float, help="with --compare: only each file's first hours")
    ap.add_argument("--loop-minutes", type=float,
                    help="with --compare: first play each file's samples again and again for this long")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    if args.compare and args.loop_minutes:
        for f in args.compare:
            dst = os.path.join(args.dir, "loop-" + os.path.basename(f))
            how = loop_real(f, args.loop_minutes, dst)
            print(f"- looped ({how}): " + compare(dst, args.compare_hours, os.path.join(args.dir, "compare")))
        return 0
    if args.compare:
        for f in args.compare:
            print("- " + compare(f, args.compare_hours, os.path.join(args.dir, "compare")))
        return 0
    path = os.path.join(args.dir, "bench.zfsmon")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    ticks = int(args.hours * 3600)
    text_ticks = int(min(args.text_hours, args.hours) * 3600)
    gen = Synthetic()
    iostat_log = open(os.path.join(args.dir, "zpool_iostat_v_1.txt"), "w")
    kstat_log = open(os.path.join(args.dir, "arcstats_zil.txt"), "w")
    text_bytes = {"zpool iostat -v 1": 0, "arcstats + zil": 0}
    write_cpu = 0.0
    rss: List[Tuple[float, int]] = []
    first_ticks: List[List[Sample]] = []
    t_start = time.time()
    with Recorder(path, {"host": "bench", "interval": "1", "argv": " ".join(sys.argv)}) as rec:
        for i in range(ticks):
            samples, iostat, kst = gen.tick(i)
            text_bytes["zpool iostat -v 1"] += len(iostat)
            text_bytes["arcstats + zil"] += len(kst)
            if i < text_ticks:
                iostat_log.write(iostat)
                kstat_log.write(kst)
            if i < 600:
                first_ticks.append(samples)
            c0 = time.process_time()
            rec.write(samples)
            write_cpu += time.process_time() - c0
            if i % 3600 == 0 or i == ticks - 1:
                rss.append((i / 3600, rss_kib()))
                print(f"  {i / 3600:.1f} h recorded, rss {rss[-1][1]} KiB, {time.time() - t_start:.0f} s",
                      file=sys.stderr)
        values_per_tick = sum(len(s.metrics) for s in samples)
    iostat_log.close()
    kstat_log.close()
    wall_record = time.time() - t_start
    size = os.path.getsize(path)
    hours = ticks / 3600

    with Recording.open(path) as r:
        values = r.value_count()
        nsamples = r.counts()["samples"]
    # the first --text-hours, three ways: from the recording (read; read + CSV) and from the text logs
    span_end = T0 + text_ticks - 1
    t0 = time.process_time()
    with Recording.open(path) as r:
        n_read = sum(1 for _ in r.samples(start=T0, end=span_end))
    read_text_span_s = time.process_time() - t0
    t0 = time.process_time()
    with Recording.open(path) as r:
        export_csv(r.samples(start=T0, end=span_end), stream_pairs(r), os.path.join(args.dir, "csv-span"))
    export_span_s = time.process_time() - t0
    t0 = time.process_time()
    with open(os.path.join(args.dir, "zpool_iostat_v_1.txt")) as fh:
        parsed = detect.parse(fh.read(), "iostat", "zpool-iostat", interval=1.0)
    with open(os.path.join(args.dir, "arcstats_zil.txt")) as fh:
        parsed += detect.parse(_only_arcstats(fh.read()), "arcstats", "arcstats")
    reparse_s = time.process_time() - t0
    t0 = time.process_time()
    parsed_samples = sorted((p for p in parsed if isinstance(p, Sample)), key=lambda p: p.ts)
    export_csv(parsed_samples, {(p.entity.kind, n) for p in parsed_samples for n in p.metrics},
               os.path.join(args.dir, "csv-text"))
    reparse_csv_s = reparse_s + time.process_time() - t0
    n_parsed = sum(1 for p in parsed if isinstance(p, Sample))
    del parsed, parsed_samples
    # everything: per-kind CSV of the whole recording
    out_dir = os.path.join(args.dir, "csv")
    t0 = time.process_time()
    with Recording.open(path) as r:
        export_csv(r.samples(), stream_pairs(r), out_dir)
    export_s = time.process_time() - t0
    csv_bytes = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    t0 = time.process_time()
    with Recording.open(path) as r:
        buf = io.StringIO()
        view.write_long(buf, view.rows(r.samples(start=T0, end=T0 + min(3600, ticks) - 1), 60.0))
    export_1m_hour_s = time.process_time() - t0
    # one hour of one leaf, from the middle
    mid = T0 + max(0, ticks // 2 - 1800)
    t0 = time.process_time()
    with Recording.open(path) as r:
        got = r.series(f"leaf:{POOL}/sdd3", "read_bw", mid, mid + 3599)
    read_hour_s = time.process_time() - t0
    assert len(got) == min(3600, ticks), len(got)
    # layout comparison on the first 600 ticks
    packed_path = os.path.join(args.dir, "packed10m.zfsmon")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(packed_path + suffix):
            os.remove(packed_path + suffix)
    with Recorder(packed_path, {"interval": "1"}) as rec:
        for b in first_ticks:
            rec.write(b)
    packed_bytes = os.path.getsize(packed_path)
    packed_values = sum(len(s.metrics) for b in first_ticks for s in b)
    narrow_bytes, narrow_values = narrow_layout_bytes(first_ticks, os.path.join(args.dir, "narrow10m.db"))
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    head_bytes, delta_rows, all_rows = db.execute(
        "SELECT coalesce(sum(length(vals)), 0), sum(substr(vals, 1, 1) = ?), count(*) FROM sample",
        (bytes([codec.DELTA]),)).fetchone()
    chunk_bytes, chunk_rows = db.execute("SELECT coalesce(sum(length(data)), 0), count(*) FROM chunk").fetchone()
    blob_bytes = head_bytes + chunk_bytes
    table_bytes = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    chunk_unused = db.execute("SELECT coalesce(sum(unused), 0) FROM dbstat WHERE name = 'chunk'").fetchone()[0]
    db.close()

    text_total = sum(text_bytes.values())
    cmd = "python3 bench/bench_store.py " + " ".join(sys.argv[1:])
    print(f"""
### Recording

Command: `{cmd}` ({ticks} one-second ticks = {hours:g} h; {values_per_tick} values per tick:
a pool with 8 raidz2 vdevs x 8 leaves = 64 leaves, a log and a cache device, ARC ({len(gen.arc_names)}),
L2ARC ({len(gen.l2_names)}) and ZIL ({len(gen.zil_names)}) kstats, a 5-value workload).

| measure | value |
|---|---|
| recording size | {size / 2**20:.1f} MiB for {values:,} values in {nsamples:,} samples |
| bytes per stored value (whole file) | {size / values:.2f} |
| value blobs alone (chunks + head rows) | {blob_bytes / values:.2f} bytes/value: {chunk_rows:,} chunks, {chunk_bytes / 2**20:.1f} MiB; {all_rows:,} head rows, {head_bytes / 2**10:.0f} KiB ({100 * (delta_rows or 0) / max(all_rows, 1):.1f} % delta rows) |
| pages of the chunk table / of the head table / everything else | {table_bytes.get('chunk', 0) / 2**20:.1f} MiB ({chunk_unused / 2**20:.1f} MiB of it unused space in pages) / {table_bytes.get('sample', 0) / 2**20:.1f} MiB / {(size - table_bytes.get('chunk', 0) - table_bytes.get('sample', 0)) / 2**20:.1f} MiB |
| same data as text logs (`zpool iostat -v 1` + arcstats/zil dumps) | {text_total / 2**20:.1f} MiB ({text_total / size:.1f}x the recording) |
| layout choice, first 600 ticks: packed rows vs one row per value | {packed_bytes / packed_values:.2f} vs {narrow_bytes / narrow_values:.2f} bytes/value |
| recorder CPU (Recorder.write only, synchronous=FULL) | {write_cpu:.1f} s total, {write_cpu / hours:.1f} s per recorded hour ({100 * write_cpu / (hours * 3600):.2f} % of one core) |
| wall time to record (incl. generating the data) | {wall_record:.0f} s |
| memory (RSS) at 0 h .. end | {rss[0][1] // 1024} MiB .. {rss[-1][1] // 1024} MiB (max {max(r for _, r in rss) // 1024} MiB) |
| export to per-kind CSV, everything (CPU) | {export_s:.1f} s ({export_s / hours:.1f} s per recorded hour), {csv_bytes / 2**20:.0f} MiB of CSV |
| export one hour downsampled to 1 min, long CSV (CPU) | {export_1m_hour_s:.2f} s |
| open + read one hour of one leaf's read_bw (CPU) | {read_hour_s * 1000:.0f} ms |
| first {text_ticks / 3600:g} h, read every sample from the recording (CPU) | {read_text_span_s:.1f} s ({n_read:,} samples) |
| first {text_ticks / 3600:g} h, re-parse the text logs with zfsmon's parsers (CPU) | {reparse_s:.1f} s ({n_parsed:,} samples) |
| first {text_ticks / 3600:g} h, recording -> per-kind CSV (CPU) | {export_span_s:.1f} s |
| first {text_ticks / 3600:g} h, text logs -> parse -> per-kind CSV (CPU) | {reparse_csv_s:.1f} s |
""")
    if not args.keep:
        for d in ("csv", "csv-span", "csv-text"):
            shutil.rmtree(os.path.join(args.dir, d), ignore_errors=True)
    return 0


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _om_name(kind: str, metric: str) -> str:
    return "zfsmon_" + "".join(c if c.isalnum() else "_" for c in f"{kind}_{metric}")


def write_openmetrics(r: Recording, start: Optional[float], end: Optional[float], path: str) -> int:
    """The recording's samples in [start, end] as an OpenMetrics file (one gauge family per kind and metric,
    the entity as a label, times in seconds), grouped by family as OpenMetrics wants. Returns the sample count."""
    series: Dict[Tuple[str, str], Dict[str, Tuple[array, array]]] = {}
    for s in r.samples(start=start, end=end):
        for k, v in s.metrics.items():
            fam = series.setdefault((s.entity.kind.value, k), {})
            got = fam.get(s.entity.key)
            if got is None:
                got = fam[s.entity.key] = (array("d"), array("d"))
            got[0].append(s.ts)
            got[1].append(float(v))
    n = 0
    with open(path, "w") as out:
        for (kind, metric), fam in sorted(series.items()):
            name = _om_name(kind, metric)
            out.write(f"# TYPE {name} gauge\n")
            for key, (ts, vals) in sorted(fam.items()):
                label = key.replace("\\", "\\\\").replace('"', '\\"')
                out.writelines(f'{name}{{entity="{label}"}} {v!r} {t!r}\n' for t, v in zip(ts, vals))
                n += len(ts)
        out.write("# EOF\n")
    return n


def compare(path: str, hours: Optional[float], work: str) -> str:
    """Bytes per value of a recording (whole file), and of the same data (its first ``hours``, or all of it) as
    gzip -9'd per-kind CSV (what `zfsmon export --csv` writes) and as Prometheus TSDB blocks made by promtool."""
    os.makedirs(work, exist_ok=True)
    with Recording.open(path) as r:
        lo, hi = r.time_range()
        values = r.value_count()
        nsamples = r.counts()["samples"]
        end = hi if hours is None else min(hi, lo + hours * 3600 - 1e-6)
        csv_dir = os.path.join(work, "csv")
        t0 = time.process_time()
        export_csv(r.samples(start=lo, end=end), stream_pairs(r), csv_dir)
        csv_s = time.process_time() - t0
        om = os.path.join(work, "data.om")
        n_om = write_openmetrics(r, lo, end, om)
        codec_bytes = chunk_codec_bytes(r, lo, end)
    size = os.path.getsize(path)
    csv_raw = _dir_bytes(csv_dir)
    gz = 0
    for f in sorted(os.listdir(csv_dir)):
        with open(os.path.join(csv_dir, f), "rb") as fh:
            gz += len(gzip.compress(fh.read(), 9))
    tsdb = os.path.join(work, "tsdb")
    shutil.rmtree(tsdb, ignore_errors=True)
    prom = "promtool not installed"
    if shutil.which("promtool"):
        t0 = time.time()
        p = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", om, tsdb],
                           capture_output=True, text=True)
        if p.returncode:
            prom = f"promtool failed: {p.stderr.strip().splitlines()[-1:]}"
        else:
            blocks = [d for d in os.listdir(tsdb) if os.path.isdir(os.path.join(tsdb, d))]
            tb = _dir_bytes(tsdb)
            chunks = sum(_dir_bytes(os.path.join(tsdb, d, "chunks")) for d in blocks)
            prom = (f"{tb / n_om:.2f} bytes/sample ({tb / 2**20:.2f} MiB in {len(blocks)} blocks of at most 2 h; "
                    f"chunks alone {chunks / n_om:.2f}; made in {time.time() - t0:.0f} s)")
    span = (end - lo) / 3600
    frac = "all of it" if hours is None or end >= hi else f"its first {span:g} h"
    os.remove(om)
    return (f"{os.path.basename(path)}: {(hi - lo) / 3600:.2f} h ({hi - lo:.0f} s), {nsamples:,} samples, "
            f"{values:,} values, {size:,} bytes = **{size / values:.2f} bytes/value**. Same data ({frac}, "
            f"{n_om:,} values): per-kind CSV {csv_raw / n_om:.2f} bytes/value ({csv_s:.1f} s CPU to export), "
            f"gzip -9 {gz / n_om:.2f}; schema-3 chunk codec alone (each stream's values as chunks of up to "
            f"{schema.CHUNK_TICKS} rows, no SQLite pages) {codec_bytes / n_om:.2f}; Prometheus TSDB "
            f"(promtool create-blocks-from openmetrics): {prom}")


def chunk_codec_bytes(r: Recording, start: float, end: float) -> int:
    """Bytes of the window's values encoded as schema-3 chunks (consecutive rows of each stream, at most
    CHUNK_TICKS per chunk), without the file around them."""
    per: Dict[int, Tuple[int, List[list]]] = {}
    for _ts, st, vals, _iv in r.rows(start=start, end=end):
        per.setdefault(id(st), (len(st.metrics), []))[1].append(codec.normalise(vals))
    total = 0
    for width, rows in per.values():
        for i in range(0, len(rows), schema.CHUNK_TICKS):
            part = rows[i:i + schema.CHUNK_TICKS]
            total += len(codec.encode_chunk(list(range(len(part))), [None] * len(part), part, width))
    return total


def loop_real(src: str, minutes: float, dst: str) -> str:
    """A longer recording made of a real one's samples played again and again (each pass shifted by the
    recording's length, counters continued from where the last pass ended so their increases stay the real
    ones), written by the Recorder one reading at a time as `zfsmon record` would. Events are not copied."""
    with Recording.open(src) as r:
        lo, hi = r.time_range()
        period = hi - lo + (r.nominal_interval() or 1.0)
        by_ts: Dict[float, List[Sample]] = {}
        for s in r.samples():
            by_ts.setdefault(s.ts, []).append(s)
    first: Dict[Tuple[str, str], float] = {}
    last: Dict[Tuple[str, str], float] = {}
    for ts in sorted(by_ts):
        for s in by_ts[ts]:
            for k, v in s.metrics.items():
                if metrics.is_counter(s.entity.kind, k):
                    first.setdefault((s.entity.key, k), v)
                    last[(s.entity.key, k)] = v
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(dst + suffix):
            os.remove(dst + suffix)
    passes = max(1, int(minutes * 60 // period))
    with Recorder(dst, {"interval": "1", "argv": f"loop of {os.path.basename(src)}"}, clock=lambda: lo) as rec:
        for k in range(passes):
            for ts in sorted(by_ts):
                batch = []
                for s in by_ts[ts]:
                    m = {n: (v + k * (last[(s.entity.key, n)] - first[(s.entity.key, n)])
                             if (s.entity.key, n) in first else v) for n, v in s.metrics.items()}
                    batch.append(Sample(ts + k * period, s.entity, m, s.interval, s.since_boot, s.source))
                rec.write(batch)
    return f"{passes} passes of {period:.0f} s"


def export_csv(samples, pairs, out_dir: str) -> None:
    """What `zfsmon export --csv` does, for samples from anywhere."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    wide = view.WideCSV(out_dir, view.wide_columns(pairs, False), False)
    for row in view.rows(samples):
        wide.write(row)
    wide.close()


def stream_pairs(r: Recording) -> set:
    return {(m.kind, m.name) for st in r.streams.values() for m in st.metrics}


def _only_arcstats(text: str) -> str:
    """The kstat log holds arcstats and zil dumps; the arcstats parser wants arcstats (zil has its own)."""
    out, keep = [], True
    for line in text.splitlines():
        if line.startswith(("22 1 0x01", "26 1 0x01")):
            keep = line.startswith("22 ")
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
