"""Linux per-dataset kstats (and the old per-pool ``io`` kstat) under ``/proc/spl/kstat/zfs/POOL/``.

* ``objset-0xID`` (OpenZFS >= 0.8): one named kstat per mounted dataset, 7
  fields (reads/writes and their bytes, unlinks) or 27 with the per-dataset
  ZIL counters of 2.2+ (28 in 2.4: ``zil_commit_crash_count``). The dataset is named by its ``dataset_name`` string,
  not the file name (IDs are reused after a destroy).
* ``io`` (ZoL 0.6-0.8): the pool as one KSTAT_TYPE_IO "disk" (column line +
  value line), read by :mod:`zfsmon.sources.kstat.text`.

The per-pool ``iostats`` and ``txgs`` kstats beside them are sources of their
own (:mod:`zfsmon.sources.kstat.pool_iostats`, :mod:`zfsmon.sources.kstat.txgs`).

zfs-fuse has none of these (it serves only ARC-family kstats under
``/zfs-kstat``); :func:`collector_for_host` returns None there.
"""

from __future__ import annotations

import os
import re
from typing import List, Mapping, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Entity, Kind, ParseError, Record, Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.fields import FieldWatch
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.kstat.pool import ROOT, PoolDirCollector, pool_of_file, read_text
from zfsmon.sources.spec import Source, TextKind

#: the ``source`` of the records
RECORD_SOURCE = "objset"

#: objset kstat field -> metric name on the dataset entity (other numeric fields keep their own name)
OBJSET_FIELDS: Mapping[str, str] = {
    "reads": "reads", "writes": "writes", "nread": "read_bytes", "nwritten": "write_bytes",
    "nunlinks": "unlinks", "nunlinked": "unlinked",
}
#: io kstat column -> metric name on the pool entity (wupdate/rupdate are timestamps, dropped)
IO_FIELDS: Mapping[str, str] = {
    "reads": "io_reads", "writes": "io_writes", "nread": "io_read_bytes", "nwritten": "io_write_bytes",
    "wtime": "io_wait_ns", "wlentime": "io_wait_len_ns", "rtime": "io_run_ns", "rlentime": "io_run_len_ns",
    "wcnt": "io_wait_queue", "rcnt": "io_run_queue",
}
#: the column line of the ``io`` kstat (KSTAT_TYPE_IO), as the kernel prints it
IO_COLUMNS = ("nread", "nwritten", "reads", "writes", "wtime", "wlentime", "wupdate", "rtime", "rlentime", "rupdate",
              "wcnt", "rcnt")
_OBJSET_FILE = re.compile(r"^objset-(0x[0-9a-fA-F]+|\d+)$")


def pool_entity(pool: str) -> Entity:
    return Entity(Kind.POOL, pool, pool)


def _check_complete(table: kstat_text.KstatTable, where: str) -> None:
    """A named kstat whose header announces more rows than the text holds was cut short."""
    if table.header is not None and table.header.ks_type == 1 and table.rows != table.header.ndata:
        raise ParseError(where, None, f"kstat announces {table.header.ndata} statistics but holds {table.rows}")


def parse_objset(text: str, ts: float, where: str = "objset", source: str = RECORD_SOURCE,
                 pool: Optional[str] = None) -> Sample:
    """One ``objset-0xID`` kstat -> a dataset sample. ``pool`` defaults to the dataset name's first component."""
    table = kstat_text.parse_proc_table(text, where)
    _check_complete(table, where)
    name = table.strings.get("dataset_name", "").strip()
    if not name:
        raise ParseError(where, None, "no dataset_name: not an objset kstat")
    missing = [f for f in ("reads", "writes", "nread", "nwritten") if f not in table.values]
    if missing:
        raise ParseError(where, None, f"objset kstat without {', '.join(missing)}")
    metrics = {OBJSET_FIELDS.get(k, k): v for k, v in table.values.items()}
    ds = Entity(Kind.DATASET, name, pool or name.split("/", 1)[0].split("@", 1)[0])
    return Sample(ts, ds, metrics, source=source)


def parse_pool_io(text: str, ts: float, pool: str, where: str = "io", source: str = RECORD_SOURCE) -> Sample:
    """The ZoL 0.6-0.8 per-pool ``io`` kstat (KSTAT_TYPE_IO) -> a pool sample of ``io_*`` metrics."""
    table = kstat_text.parse_proc_table(text, where)
    if table.header is None or table.header.ks_type != 3:
        raise ParseError(where, 1, "not an io kstat (type 3)")
    missing = [c for c in IO_FIELDS if c not in table.values]
    if missing:
        raise ParseError(where, None, f"io kstat without {', '.join(missing)}")
    return Sample(ts, pool_entity(pool), {m: table.values[c] for c, m in IO_FIELDS.items()}, source=source)


# --- collector --------------------------------------------------------------------------------------------------

class ObjsetCollector(PoolDirCollector):
    """Polls every pool directory under ``/proc/spl/kstat/zfs``: objset-* and io.

    A file that vanishes between listing and reading (dataset unmounted, pool
    exported) is skipped silently; any other failure is an error event for
    that file while the rest are still read.
    """

    name = RECORD_SOURCE

    def poll(self) -> List[Record]:
        ts = self.clock()
        pools, out = self._listed()
        if pools is None:
            return out
        errors = 0  # a pool asked for that is not there is said, yet the others read well
        for pool in pools:
            d = os.path.join(self.root, pool)
            try:
                files = sorted(os.listdir(d))
            except OSError:
                continue  # exported between the two listings
            for fname in files:
                path = os.path.join(d, fname)
                try:
                    rec = self._read_one(fname, path, pool, ts)
                except FileNotFoundError:
                    continue
                except (OSError, ParseError) as exc:
                    errors += 1
                    out.append(self._error(f"{self.name}: {exc}"))
                    continue
                if rec is not None:
                    out.append(rec)
        if not errors:
            self._ok()
        return self._watched(out)

    def _read_one(self, fname: str, path: str, pool: str, ts: float) -> Optional[Sample]:
        if _OBJSET_FILE.match(fname):
            return parse_objset(read_text(path), ts, path, self.name, pool)
        if fname == "io":
            return parse_pool_io(read_text(path), ts, pool, path, self.name)
        return None


def collector_for_host(root: str = ROOT, pools: Optional[Sequence[str]] = None) -> Optional[Collector]:
    """The per-dataset collector when this host has Linux SPL kstats; None elsewhere (zfs-fuse, illumos, FreeBSD)."""
    return ObjsetCollector(root, pools) if os.path.isdir(root) else None


# --- the source ------------------------------------------------------------------------------------------------

def _objset_count(root: str) -> int:
    n = 0
    for pool in os.listdir(root):
        try:
            n += sum(1 for f in os.listdir(os.path.join(root, pool)) if _OBJSET_FILE.match(f))
        except OSError:  # a file, or a pool exported meanwhile
            continue
    return n


def check_host(host: Host, root: str = ROOT) -> Check:
    """Doctor's line: the per-pool kstat directories (how many per-dataset objset kstats), or why there are none."""
    try:
        n = _objset_count(root)
    except OSError:
        return Check("objset kstats", False, "no per-dataset objset kstats (OpenZFS >= 0.8 kernel module has them)")
    if n:
        return Check("objset kstats", True, f"{n} under {root}")
    return Check("objset kstats", True, f"per-pool kstats under {root}, no per-dataset objset kstats yet "
                 "(OpenZFS >= 0.8 kernel module has them, for mounted datasets)")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return ObjsetCollector(ROOT, list(pools) or None)


# --- saved dumps (`zfsmon parse` / `zfsmon import`) ----------------------------------------------------------

def looks_like(text: str) -> bool:
    """A Linux ``objset-0xID`` kstat dump (``dataset_name`` and the ``writes``/``nwritten`` counters)."""
    return kstat_text.looks_like_proc(text, "dataset_name") and bool(re.search(r"^nwritten\s+\d+\s", text, re.M))


def parse_dumps(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """``cat /proc/spl/kstat/zfs/*/objset-*`` once or in a loop: one dataset sample per dump, named by its
    ``dataset_name``; timed by snaptime as :func:`zfsmon.sources.kstat.text.timed_proc_dumps` says. With
    ``interval``, dumps are numbered per dataset: a loop's *i*-th round is at ``i * interval``. Statistics zfsmon
    has no row for, and those that came or went, are notes (:class:`~zfsmon.sources.fields.FieldWatch`)."""
    return FieldWatch(RECORD_SOURCE, source).watched(_dumps(text, source, interval))


def _dumps(text: str, source: str, interval: Optional[float]) -> List[Record]:
    if interval is None:
        return kstat_text.timed_proc_dumps(text, source, None, lambda dump, ts, where: [parse_objset(dump, ts, where)])
    out: List[Record] = []
    rounds: dict = {}
    for dump, no in kstat_text.proc_dumps(text):
        sample = parse_objset(dump, 0.0, f"{source} (line {no})")
        i = rounds[sample.entity.key] = rounds.get(sample.entity.key, -1) + 1
        out.append(Sample(i * interval, sample.entity, sample.metrics, source=sample.source))
    if not out:
        raise ParseError(source, None, "no kstat dump (no `KID TYPE FLAGS NDATA SIZE CRTIME SNAPTIME` line)")
    return out


def looks_like_io(text: str) -> bool:
    """A Linux per-pool ``io`` kstat dump (ZoL 0.6-0.8): a type-3 header and the io kstat's column line."""
    first = kstat_text.head(text)
    return (len(first) >= 2 and bool(kstat_text.HEADER_RE.match(first[0])) and first[0].split()[1] == "3"
            and tuple(first[1].split()) == IO_COLUMNS)


def parse_io_dumps(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """``cat /proc/spl/kstat/zfs/POOL/io`` once or in a loop: one pool sample (``io_*`` counters) per dump, of the
    pool named after the file (``POOL.io``), timed by snaptime as :func:`zfsmon.sources.kstat.text.timed_proc_dumps`
    says (or dump *i* at ``i * interval``)."""
    pool = pool_of_file(source)
    return kstat_text.timed_proc_dumps(text, source, interval,
                                       lambda dump, ts, where: [parse_pool_io(dump, ts, pool, where)])


SOURCE = Source(
    name=RECORD_SOURCE, help="per-dataset activity (Linux objset kstats; the 0.6-0.8 per-pool io kstat)", order=50,
    check=check_host, collector=_collector, family="dataset",
    kinds=(TextKind("objset-kstat", "per-dataset objset-0xID kstat dumps (Linux, OpenZFS 0.8+; one or many)",
                    looks_like, parse_dumps, "for f in /proc/spl/kstat/zfs/*/objset-*; do cat $f; done > objset.log"),
           TextKind("pool-io-kstat", "`/proc/spl/kstat/zfs/POOL/io` dumps (ZoL 0.6-0.8; one or a loop; pool named "
                    "after the file: POOL.io)", looks_like_io, parse_io_dumps,
                    "while sleep 10; do cat /proc/spl/kstat/zfs/tank/io; done > tank.io")),
    feeds=(Kind.POOL, Kind.DATASET),
)
