"""A recording built from genuine captures through the real parsers, for the report and exporter tests.

Timeline (seconds after T0), every value read by a parser from a capture:

* pgbench run 1 (pg15.2 ``-P6 -T60``): RUN_START at 0, progress every 6 s, summary and RUN_END at 60;
* ``zpool iostat -T u -v ziocap 1 4`` (this machine's zfs-fuse lab, writes hitting the SLOG) at its own
  stamps 21..24, then ``zpool iostat -v ziocap 1 8`` (cache device removed and re-added) at 30..37, both
  with roles from ``zpool status ziocap`` (log loop5, cache loop6);
* ``arcstat.pl -f arcsz,l2size,l2hit%,hit% 10`` every 10 s from 0 (ARC/L2ARC hit % as the tool computed);
* raw Linux arcstats snapshots at 20, 40, 60, 80: ZoL 0.6.5 then OpenZFS 2.3 (every ARC counter happens to
  grow: one ARC hit % from counters), OpenZFS 2.1 (counters go backwards: a reset, no rate), ZoL 0.6.4
  (grow again: a second ARC hit %, and the only L2ARC hit % from counters); ZIL kstats (ZoL 0.7, OpenZFS 2.3) at 20, 50;
* a mark at 45 and a source error at 33.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from tests.conftest import TEST_DATA, fixtures_root
from zfsmon.model import Event, EventKind, Record
from zfsmon.sources import arcstat_tool, detect
from zfsmon.sources.kstat import arcstats, zil
from zfsmon.sources.pgbench import text as pgbench_text
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recorder

T0 = 1795332250.0
FUSE = TEST_DATA / "zfsfuse"
ARCSTATS = ("linux-zol-0.6.5__proc_spl_kstat_zfs_arcstats.txt",
            "linux-openzfs-2.3__proc_spl_kstat_zfs_arcstats.txt",
            "linux-openzfs-2.1__proc_spl_kstat_zfs_arcstats_no-trailing-newline.txt",
            "linux-zol-0.6.4__proc_spl_kstat_zfs_arcstats.txt")
ZIL = ("linux-zol-0.7__proc_spl_kstat_zfs_zil.txt", "linux-openzfs-2.3__proc_spl_kstat_zfs_zil.txt")
PGBENCH = "pg15.2-ubuntu__pgbench_-c8_-P6_-T60_progress_and_summary.txt"
ARCSTAT_TOOL = "linux-esos-zol0.6__arcstat.pl_-f_arcsz,l2size,l2hit%,hit%_10.txt"
MARK = "switched sync=always"


def _read(path: Path) -> str:
    return path.read_text()


def records() -> List[Record]:
    """Every record of the timeline above, in time order."""
    fx = fixtures_root()
    topo = parse_status(_read(FUSE / "zpool_status_ziocap.txt"))
    out: List[Record] = []
    out += detect.shift(pgbench_text.parse_text(_read(fx / "pgbench" / PGBENCH)), T0)
    out += zpool_iostat.parse_text(_read(FUSE / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt"), interval=1.0,
                                   topology=topo)
    out += zpool_iostat.parse_text(_read(FUSE / "zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt"),
                                   interval=1.0, start_ts=T0 + 30, topology=topo)
    out += arcstat_tool.parse_arcstat(_read(fx / "arcstat_tools" / ARCSTAT_TOOL), ts=T0, interval=10.0)
    for i, name in enumerate(ARCSTATS):
        out += arcstats.parse_linux(_read(fx / "arcstats" / name), T0 + 20 + 20 * i)
    for ts, name in zip((T0 + 20, T0 + 50), ZIL):
        out += zil.parse_linux(_read(fx / "kstat_misc" / name), ts)
    out.append(Event(T0 + 45, EventKind.MARK, MARK, source="user"))
    out.append(Event(T0 + 33, EventKind.ERROR, "zpool iostat: cannot open 'ziocap': no such pool",
                     source="zpool iostat"))
    return sorted(out, key=lambda r: r.ts)


def write_recording(path: str, extra: Sequence[Record] = ()) -> List[Record]:
    """Write :func:`records` (and ``extra``) one timestamp per transaction, as a sampler would; returns what went
    in, in time order."""
    recs = sorted(records() + list(extra), key=lambda r: r.ts)
    batches: Dict[float, List[Record]] = {}
    for r in recs:
        batches.setdefault(r.ts, []).append(r)
    with Recorder(path, {"host": "lab", "platform": "Linux test", "interval": "1", "argv": "fixtures"}) as rec:
        for ts in sorted(batches):
            rec.write(batches[ts])
    return recs
