"""A recording for the dashboard's tests, built only from genuine captures run through zfsmon's own parsers.

* pool ``ziocap``: this machine's zfs-fuse lab (``zpool iostat -T u -v ziocap 1 4`` while writing, roles from
  ``zpool status ziocap``): two data mirrors, a log device and a cache device;
* pool ``testpool``: OpenZFS 2.1 ``zpool iostat -vl 30 5`` (raidz1 with latencies), dated to end with ziocap's;
* ARC/L2ARC: OpenZFS 2.3 ``/proc/spl/kstat/zfs/arcstats`` (one reading: since-boot ratios);
* workload: PostgreSQL 15.2 ``pgbench -c8 -P6 -T60`` (progress lines and its run summary);
* a user's mark.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

from tests.conftest import TEST_DATA, fixtures_root
from zfsmon.model import Event, EventKind, Record, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.pgbench.text import PgbenchTextParser
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool import status as zpool_status
from zfsmon.store import Recorder

ZFSFUSE = TEST_DATA / "zfsfuse"
ZIOCAP_IOSTAT = ZFSFUSE / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt"
ZIOCAP_STATUS = ZFSFUSE / "zpool_status_ziocap.txt"
T_END = 1795332274.0  # the last -T u stamp of the ziocap capture
MARK_TEXT = "fixture mark: fsync burst"


def _fx(sub: str, name: str) -> Path:
    return fixtures_root() / sub / name


RAIDZ = _fx("zpool_iostat", "linux-ubuntu-openzfs2.1__zpool_iostat_-vl_30_5_repeated-headers_ns-values.txt")
ARC23 = _fx("arcstats", "linux-openzfs-2.3__proc_spl_kstat_zfs_arcstats.txt")
PGBENCH = _fx("pgbench", "pg15.2-ubuntu__pgbench_-c8_-P6_-T60_progress_and_summary.txt")


def batches() -> List[Tuple[float, List[Record]]]:
    """(ts, records) in time order, as a sampler would have handed them over."""
    recs: List[Record] = []
    topo = zpool_status.parse_status(ZIOCAP_STATUS.read_text())
    recs += zpool_iostat.parse_text(ZIOCAP_IOSTAT.read_text(), interval=1.0, topology=topo)
    recs += zpool_iostat.parse_text(RAIDZ.read_text(), interval=30.0, start_ts=T_END - 120.0)
    recs += arcstats.parse_linux(ARC23.read_text(), T_END)
    parser = PgbenchTextParser()
    base = T_END - 66.0
    for i, line in enumerate(PGBENCH.read_text().splitlines()):
        recs += parser.feed(line, base + i * 0.001)
    recs += parser.flush(T_END)
    recs.append(Event(T_END - 2.0, EventKind.MARK, MARK_TEXT, source="user"))
    by_ts: dict = {}
    for r in recs:
        by_ts.setdefault(r.ts, []).append(r)
    return sorted(by_ts.items())


def records() -> List[Record]:
    return [r for _, b in batches() for r in b]


def samples() -> List[Sample]:
    return [r for r in records() if isinstance(r, Sample)]


def write_recording(path: str) -> str:
    with Recorder(path, {"host": "fixture-host", "platform": "Linux fixtures", "zfs_version": "captures",
                         "interval": "1"}) as rec:
        for _ts, batch in batches():
            rec.write(batch)
    return path
