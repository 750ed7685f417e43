"""``zpool_influxdb``'s line protocol read into per-pool snapshots, and two snapshots into the zpool source's samples.

OpenZFS ships ``zpool_influxdb`` (Debian: ``/usr/lib/zfs-linux/zpool_influxdb``):
one libzfs pass over every pool prints, as influx line protocol, each vdev's
cumulative counters (``zpool_stats``: ops, bytes, errors, alloc/free/size),
its latency and request-size histograms (``zpool_latency``,
``zpool_io_size``, one line per bucket ``le``) and the pool root's queues
(``zpool_vdev_stats``, ``zpool_vdev_queue``), each line ending in one
nanosecond timestamp per pool. Counters print as ``123u`` (uint64) and are
kept as exact Python ints.

Vdevs are tagged ``vdev=root/mirror-0/disk-0`` (type and vdev id below the
root) and leaves also ``path=/dev/...``. What it does not print: cache
(L2ARC) and spare devices (it walks the tree's children only), the role of a
top-level vdev (a log device is just ``root/disk-2``) and queues below the
root. Roles, parents and the names ``zpool status`` gives (``raidz2-0`` for
``root/raidz-0``, ``virtio-data0`` for ``/dev/disk/by-id/virtio-data0-part1``)
come from a :class:`~zfsmon.sources.zpool.status.Topology` when one is given.

Its latency histograms fold buckets 0..10 (up to 2047 ns) into its first
printed bucket ``le=0.000001``; zfsmon stores that count as bucket 10
(``2us``) and no finer ones, and averages (``total_wait_read`` ...) are
computed as ``zpool iostat -l`` does (each I/O at its bucket's midpoint), so
the I/Os under 2 us all weigh 1536 ns there.

Parsing is pure: :func:`parse_lines` / :class:`InfluxParser` read text,
:func:`derive` turns two snapshots of one pool into
:class:`~zfsmon.model.Sample` s. The collector is
:mod:`zfsmon.sources.zpool.influxdb_collector`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Collection, Dict, Iterable, List, Mapping, Optional, Tuple

from zfsmon.metrics.latency import LAT_BUCKETS
from zfsmon.model import Entity, Kind, ParseError, Role, Sample
from zfsmon.names import whole_disk
from zfsmon.sources.zpool.status import Topology

__all__ = ["VdevStats", "PoolSnapshot", "InfluxParser", "parse_lines", "parse_snapshots", "derive",
           "histogram_delta", "latency_sample", "leaf_name", "entities", "Point", "parse_point", "FIRST_LAT_BUCKET"]

#: zpool_influxdb's first printed latency bucket (2^10 ns); it holds the counts of buckets 0..10
FIRST_LAT_BUCKET = 10
#: the measurement that ends one pool's lines when histograms are printed (the scan line after it is not used)
END_WITH_HISTOGRAMS = "zpool_vdev_queue"
#: ... and when they are not (``--no-histograms``)
END_WITHOUT_HISTOGRAMS = "zpool_vdev_stats"

#: the most series texts a parser remembers (a pool of 100 vdevs prints ~6,000 lines a pass)
SERIES_CACHE = 20000

#: zpool_latency's field -> the ``zpool iostat -l`` average it gives (ns)
WAIT_FIELDS: Dict[str, str] = {
    "total_read": "total_wait_read", "total_write": "total_wait_write",
    "disk_read": "disk_wait_read", "disk_write": "disk_wait_write",
    "sync_read": "syncq_wait_read", "sync_write": "syncq_wait_write",
    "async_read": "asyncq_wait_read", "async_write": "asyncq_wait_write",
    "scrub": "scrub_wait", "trim": "trim_wait", "rebuild": "rebuild_wait",
}
#: zpool_latency's field -> zfsmon's histogram metric prefix (:data:`zfsmon.metrics.latency.COLUMNS`):
#: ``lat_total_wait_read`` ... and ``lat_scrub``, ``lat_trim``, ``lat_rebuild`` (one kind of I/O each)
LAT_FIELDS: Dict[str, str] = {f: "lat_" + (w[:-len("_wait")] if w.endswith("_wait") else w)
                              for f, w in WAIT_FIELDS.items()}
#: zpool_vdev_queue's field -> the ``zpool iostat -q`` column metric
QUEUE_FIELDS: Dict[str, str] = {
    f"{q}_{s}": f"{z}_{'activ' if s == 'active' else 'pend'}"
    for q, z in (("sync_r", "syncq_read"), ("sync_w", "syncq_write"), ("async_r", "asyncq_read"),
                 ("async_w", "asyncq_write"), ("async_scrub", "scrubq_read"), ("rebuild", "rebuildq_write"))
    for s in ("active", "pend")
}


@dataclass
class VdevStats:
    """One vdev of one pool as zpool_influxdb printed it: counters exact, histograms per bucket."""

    vdev: str  # the tag as printed, unescaped: root, root/mirror-0, root/mirror-0/disk-0
    path: Optional[str] = None  # the device path of a leaf
    state: str = ""
    counters: Dict[str, int] = field(default_factory=dict)
    #: bucket index -> zpool_latency field -> I/Os in that bucket (not summed over lower buckets), as parsed:
    #: a line that did not change since the previous pass is the same mapping, so its delta costs nothing
    lat_rows: Dict[int, Mapping[str, float]] = field(default_factory=dict)
    #: zpool_io_size field -> bucket index (2^j bytes) -> I/Os
    sizes: Dict[str, Dict[int, int]] = field(default_factory=dict)
    #: the root's queue gauges (zpool_vdev_queue, else zpool_vdev_stats without the ``_queue`` suffix)
    queues: Dict[str, int] = field(default_factory=dict)

    @property
    def latency(self) -> Dict[str, Dict[int, int]]:
        """zpool_latency field -> bucket index -> I/Os in that bucket."""
        out: Dict[str, Dict[int, int]] = {}
        for j, row in self.lat_rows.items():
            for name, n in row.items():
                out.setdefault(name, {})[j] = int(n)
        return out

    @property
    def depth(self) -> int:
        """0 for the root (the pool), 1 for a top-level vdev, 2+ below."""
        return self.vdev.count("/")


@dataclass
class PoolSnapshot:
    """Everything one pass printed for one pool, at its one timestamp (ns since the epoch)."""

    pool: str
    ts_ns: int
    vdevs: Dict[str, VdevStats] = field(default_factory=dict)  # by the vdev tag, in printed order

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9


# --- line protocol -------------------------------------------------------------------------------------------

def _split_unescaped(text: str, sep: str) -> List[str]:
    """``text`` split at each ``sep`` not preceded by a backslash escape (escapes kept for :func:`_unescape`)."""
    out: List[str] = []
    cur: List[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if c == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(text: str) -> str:
    r"""Line protocol escapes ``\ ``, ``\,``, ``\=`` and ``\\`` (zpool_influxdb escapes all four) undone."""
    if "\\" not in text:
        return text
    out: List[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in " ,=\\":
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Point:
    """One line: measurement, tags (unescaped), fields (ints exact; floats for what prints a float), time (ns)."""

    measurement: str
    tags: Dict[str, str]
    fields: Dict[str, float]
    ts_ns: int
    #: the line without its time (what :class:`InfluxParser` remembers a series by)
    series: str = ""


def _value(raw: str) -> float:
    """``123u`` / ``123i`` -> int, ``12.5`` -> float; strings and booleans are not numbers here (ValueError)."""
    if raw[-1:] in ("u", "i"):
        return int(raw[:-1], 10)
    v = float(raw)
    if not math.isfinite(v):
        raise ValueError(raw)
    return v


def parse_point(line: str, source: str = "zpool_influxdb", line_no: Optional[int] = None) -> Point:
    """One line of line protocol. Raises :class:`ParseError` for anything else (one line, the text quoted)."""
    head_fields, sep, ts_text = line.rpartition(" ")
    if not sep or not ts_text.isdigit():
        raise ParseError(source, line_no, "no time of nanoseconds at the end", line)
    measurement, tags, fields = _parse_series(head_fields, source, line_no, line)
    return Point(measurement, tags, fields, int(ts_text))


def _parse_series(text: str, source: str, line_no: Optional[int], line: str
                  ) -> Tuple[str, Dict[str, str], Dict[str, float]]:
    """``measurement,tags fields`` (a line without its time). A text without a backslash (nearly every line) is
    split with ``str.split``; one with escapes character by character (:func:`_split_unescaped`)."""
    plain = "\\" not in text
    parts = text.split(" ") if plain else _split_unescaped(text, " ")
    if len(parts) != 2:
        raise ParseError(source, line_no, f"not `measurement,tags fields time` ({len(parts) + 1} parts)", line)
    head, fields_text = parts
    keys = head.split(",") if plain else _split_unescaped(head, ",")
    measurement = keys[0] if plain else _unescape(keys[0])
    if not measurement:
        raise ParseError(source, line_no, "no measurement name", line)
    tags: Dict[str, str] = {}
    for kv in keys[1:]:
        pair = kv.split("=") if plain else _split_unescaped(kv, "=")
        if len(pair) != 2 or not pair[0]:
            raise ParseError(source, line_no, "a tag that is not key=value", line)
        if plain:
            tags[pair[0]] = pair[1]
        else:
            tags[_unescape(pair[0])] = _unescape(pair[1])
    fields: Dict[str, float] = {}
    for kv in fields_text.split(",") if plain else _split_unescaped(fields_text, ","):
        key, eq, raw = kv.partition("=") if plain else _partition_unescaped(kv)
        if not eq or not key or not raw or "=" in raw:
            raise ParseError(source, line_no, "a field that is not key=value", line)
        try:
            fields[key] = _value(raw)
        except ValueError:
            raise ParseError(source, line_no, f"field {key!r} is not a number", line) from None
    return measurement, tags, fields


def _partition_unescaped(kv: str) -> Tuple[str, str, str]:
    """``key=value`` with escapes: (key unescaped, ``=``, raw value), or ("", "", "") if not one pair."""
    pair = _split_unescaped(kv, "=")
    if len(pair) != 2:
        return "", "", ""
    return _unescape(pair[0]), "=", pair[1]


def _bucket(le: str, source: str, line_no: Optional[int], line: str, previous: Optional[int]) -> int:
    """A ``zpool_latency`` ``le`` tag (seconds, ``%0.6f`` of 2^j ns, or ``+Inf``) -> bucket index j."""
    if le == "+Inf":
        return FIRST_LAT_BUCKET if previous is None else previous + 1
    try:
        secs = float(le)
    except ValueError:
        raise ParseError(source, line_no, f"le={le!r} is not a number of seconds", line) from None
    if not secs > 0 or not math.isfinite(secs):
        raise ParseError(source, line_no, f"le={le!r} is not a bucket", line)
    j = round(math.log2(secs * 1e9))
    if j < 0 or j >= len(LAT_BUCKETS) or f"{(1 << j) * 1e-9:.6f}" != le:
        raise ParseError(source, line_no, f"le={le!r} is not 2^j ns", line)
    return j


def _size_bucket(le: str, source: str, line_no: Optional[int], line: str, previous: Optional[int]) -> int:
    """A ``zpool_io_size`` ``le`` tag (bytes, 2^j, or ``+Inf``) -> bucket index j."""
    if le == "+Inf":
        return 0 if previous is None else previous + 1
    if not le.isdigit() or int(le) <= 0 or int(le) & (int(le) - 1):
        raise ParseError(source, line_no, f"le={le!r} is not 2^j bytes", line)
    return int(le).bit_length() - 1


class InfluxParser:
    """Lines in, one :class:`PoolSnapshot` out each time a pool's lines end.

    A pool's lines start with its root ``zpool_stats`` line and end with its
    root :data:`END_WITH_HISTOGRAMS` line (:data:`END_WITHOUT_HISTOGRAMS` with
    ``histograms=False``): zpool_influxdb prints the measurements of one pool
    in that order, so the end needs no look at the next line nor a time-out.
    ``summed``: the histograms were printed with ``--sum-histogram-buckets``
    (each bucket holds the lower ones too); they are stored per bucket all
    the same. A bad line raises :class:`ParseError` and drops its pool's
    sample (the pool's other lines are passed over, without an error each);
    the parser goes on with the next pool's lines. A pool whose lines stop
    before their end is said when the next pool's lines start.
    """

    def __init__(self, source: str = "zpool_influxdb", histograms: bool = True, summed: bool = False,
                 sizes: bool = True) -> None:
        self.source = source
        self.end = END_WITH_HISTOGRAMS if histograms else END_WITHOUT_HISTOGRAMS
        self.summed = summed
        #: keep the request-size histograms (``zpool_io_size``); the collector does not (nothing reads them)
        self.sizes = sizes
        #: a series' text (a line without its time) -> what it parsed to: an idle vdev prints the same text
        #: pass after pass, read once (bounded: hostile input of ever new lines empties it)
        self._series: Dict[str, Tuple[str, Dict[str, str], Dict[str, float]]] = {}
        #: a histogram series' text -> its bucket index
        self._bucket_of: Dict[str, int] = {}
        self.line_no = 0
        self._open: Optional[PoolSnapshot] = None
        #: after a damaged pool's lines: skip lines until the next pool's start (one error, not one per line)
        self._skipping = False
        self._last_bucket: Dict[Tuple[str, str], int] = {}
        #: with ``summed``: per histogram, each field's summed count at the bucket before
        self._below: Dict[Tuple[str, str], Dict[str, int]] = {}

    def feed(self, line: str) -> Optional[PoolSnapshot]:
        """One line (its newline stripped or not); the pool's snapshot when this line ended it."""
        self.line_no += 1
        text = line.rstrip("\r\n")
        if not text.strip():
            return None
        if not self.sizes and text.startswith("zpool_io_size,"):
            return None
        try:
            p = self._point(text)
        except ParseError:
            self._drop()
            raise
        if p.measurement == "zpool_scan_stats":
            return None  # scrub/resilver progress: the status source's
        pool = p.tags.get("name")
        vdev = p.tags.get("vdev")
        if not pool or not vdev or (vdev != "root" and not vdev.startswith("root/")):
            self._drop()
            raise ParseError(self.source, self.line_no, "no name= (pool) tag, or a vdev= tag not below root", text)
        unfinished = None
        if p.measurement == "zpool_stats" and vdev == "root":
            unfinished = self._open.pool if self._open is not None else None
            self._open = PoolSnapshot(pool, p.ts_ns)
            self._skipping = False
            self._last_bucket.clear()
            self._below.clear()
        snap = self._open
        if snap is None:
            if self._skipping:
                return None
            raise ParseError(self.source, self.line_no, "a line before any pool's root zpool_stats line", text)
        if snap.pool != pool or snap.ts_ns != p.ts_ns:
            self._drop()
            raise ParseError(self.source, self.line_no, f"pool {snap.pool}: a line of another pool or time "
                             "among its lines; that sample is dropped", text)
        self._add(snap, p, vdev, text)
        if unfinished is not None:
            raise ParseError(self.source, self.line_no, f"pool {unfinished}: its lines did not end with "
                             f"{self.end}; that sample is dropped")
        if p.measurement == self.end and vdev == "root":
            self._open = None
            return snap
        return None

    def _point(self, text: str) -> Point:
        """:func:`parse_point`, a series seen before (same text but the time) read from :attr:`_series`."""
        series, sep, ts_text = text.rpartition(" ")
        if not sep or not ts_text.isdigit():
            raise ParseError(self.source, self.line_no, "no time of nanoseconds at the end", text)
        known = self._series.get(series)
        if known is None:
            known = _parse_series(series, self.source, self.line_no, text)
            if len(self._series) >= SERIES_CACHE:
                self._series.clear()
                self._bucket_of.clear()
            self._series[series] = known
        return Point(known[0], known[1], known[2], int(ts_text), series)

    def _drop(self) -> None:
        """A damaged line: the open pool's sample is lost, and so are its other lines."""
        self._open = None
        self._skipping = True

    def _add(self, snap: PoolSnapshot, p: Point, vdev: str, text: str) -> None:
        v = snap.vdevs.get(vdev)
        if v is None:
            if p.measurement != "zpool_stats":
                self._drop()
                raise ParseError(self.source, self.line_no, f"vdev {vdev!r} has no zpool_stats line", text)
            v = snap.vdevs[vdev] = VdevStats(vdev, p.tags.get("path"), p.tags.get("state", ""))
        if p.measurement == "zpool_stats":
            v.counters.update((k, int(x)) for k, x in p.fields.items())
        elif p.measurement in ("zpool_latency", "zpool_io_size"):
            try:
                self._histogram(p, v, text)
            except ParseError:
                self._drop()
                raise
        elif p.measurement == "zpool_vdev_queue":
            v.queues.update((k, int(x)) for k, x in p.fields.items())
        elif p.measurement == "zpool_vdev_stats":
            for k, x in p.fields.items():
                v.queues.setdefault(k[:-len("_queue")] if k.endswith("_queue") else k, int(x))

    def _histogram(self, p: Point, v: VdevStats, line: str) -> None:
        le = p.tags.get("le")
        if le is None:
            raise ParseError(self.source, self.line_no, "a histogram line without le=", line)
        key = (p.measurement, v.vdev)
        previous = self._last_bucket.get(key)
        latency = p.measurement == "zpool_latency"
        known = self._bucket_of.get(p.series) if previous is not None else None
        if known is not None:
            j = known  # a bucket's le read before (only +Inf depends on the line before it, and it is the last)
        elif latency:
            j = _bucket(le, self.source, self.line_no, line, previous)
        else:
            j = _size_bucket(le, self.source, self.line_no, line, previous)
        if p.series and le != "+Inf":
            self._bucket_of[p.series] = j
        if previous is not None and j <= previous:
            raise ParseError(self.source, self.line_no, f"bucket le={le} is not above the one before it", line)
        self._last_bucket[key] = j
        if latency and not self.summed:
            v.lat_rows[j] = p.fields
            return
        row: Dict[str, float] = {}
        below_of = self._below.setdefault(key, {})
        for name, x in p.fields.items():
            n = int(x)
            if self.summed:
                below = below_of.get(name, 0)
                if n < below:
                    raise ParseError(self.source, self.line_no, f"{name}: summed bucket le={le} below the "
                                     "ones before it", line)
                below_of[name] = n
                n -= below
            row[name] = n
        if latency:
            v.lat_rows[j] = row
        else:
            for name, count in row.items():
                v.sizes.setdefault(name, {})[j] = int(count)

    def flush(self) -> Optional[str]:
        """End of text: the pool whose lines did not end (its sample is dropped), or None."""
        unfinished = self._open.pool if self._open is not None else None
        self._open = None
        return unfinished


def parse_lines(lines: Iterable[str], source: str = "zpool_influxdb", histograms: bool = True,
                summed: bool = False) -> List[PoolSnapshot]:
    """Every complete pool snapshot of a text, in order. The first bad line raises :class:`ParseError`."""
    parser = InfluxParser(source, histograms, summed)
    out: List[PoolSnapshot] = []
    for line in lines:
        snap = parser.feed(line)
        if snap is not None:
            out.append(snap)
    unfinished = parser.flush()
    if unfinished is not None:
        raise ParseError(source, parser.line_no, f"pool {unfinished}: its lines did not end with {parser.end}")
    return out


def parse_snapshots(text: str, source: str = "zpool_influxdb", histograms: bool = True,
                    summed: bool = False) -> List[PoolSnapshot]:
    """:func:`parse_lines` of one text."""
    return parse_lines(text.splitlines(), source, histograms, summed)


# --- names and entities --------------------------------------------------------------------------------------

def leaf_name(path: str, known: Collection[str] = ()) -> str:
    """The name ``zpool status`` gives the device at ``path``: among ``known`` (the pool's names from a topology)
    the path itself, its name below /dev, its basename or the disk of that partition; else zpool's own rule for
    a whole-disk vdev (a /dev path without its directory and its partition 1, via :func:`zfsmon.names.whole_disk`)
    and any other path (a file vdev) as it is."""
    if not path.startswith("/dev/"):
        return path
    base = path.rsplit("/", 1)[-1]
    disk = whole_disk(base)
    for cand in (path, path[len("/dev/"):], base, disk):
        if cand and cand in known:
            return cand
    if disk and base[len(disk):] in ("1", "p1", "-part1"):
        return disk
    return base


def _vdev_name(v: VdevStats, pool: str, topology: Optional[Topology]) -> str:
    """A vdev's name as the text path names it: a device by its leaf name, a grouping vdev by ``type-id``
    (``raidz-0`` becomes the topology's ``raidz2-0``)."""
    known = [e.name for e in topology.of_pool(pool)] if topology is not None else []
    if v.path:
        return leaf_name(v.path, known)
    own = v.vdev.rsplit("/", 1)[-1]
    if own in known or "-" not in own:
        return own
    kind, _, vid = own.rpartition("-")
    for name in known:  # raidz-0 -> raidz2-0, draid-1 -> draid2:4d:8c:1s-1
        if name.startswith(kind) and name.endswith(f"-{vid}"):
            return name
    return own


def entities(snap: PoolSnapshot, topology: Optional[Topology] = None) -> Dict[str, Entity]:
    """Each printed vdev tag -> its entity: the pool, top-level vdevs (roles and parents from ``topology``, else
    data vdevs of the pool) and leaves below them."""
    out: Dict[str, Entity] = {}
    names: Dict[str, str] = {}
    for tag, v in snap.vdevs.items():
        if v.depth == 0:
            out[tag] = Entity(Kind.POOL, snap.pool, snap.pool)
            names[tag] = snap.pool
            continue
        name = names[tag] = _vdev_name(v, snap.pool, topology)
        known = topology.lookup(snap.pool, name) if topology is not None else None
        if known is not None:
            out[tag] = Entity(known.kind, name, snap.pool, known.role, known.parent)
            continue
        parent_tag = tag.rsplit("/", 1)[0]
        parent = names.get(parent_tag, snap.pool)
        kind = Kind.VDEV if v.depth == 1 else Kind.LEAF
        role = Role.DATA
        if v.depth > 1 and parent_tag in out:
            role = out[parent_tag].role or Role.DATA
        out[tag] = Entity(kind, name, snap.pool, role, parent)
    return out


# --- two snapshots -> samples --------------------------------------------------------------------------------

def _avg_ns(counts: Dict[int, int]) -> Optional[float]:
    """``zpool iostat -l``'s average of a histogram's deltas (zpool_main.c single_histo_average): each I/O at its
    bucket's midpoint 2^j + 2^j/2, integer division; None if the histogram is empty."""
    n = sum(counts.values())
    if n <= 0:
        return None
    return float(sum(c * ((1 << j) + (1 << j) // 2) for j, c in counts.items()) // n)


def histogram_delta(new: VdevStats, old: VdevStats, dense: bool = False) -> Dict[str, Dict[int, int]]:
    """Per field and bucket, the I/Os between two snapshots (a bucket that went back: the vdev was reset; 0).

    Buckets whose line did not change are left out, unless ``dense`` (every field and bucket, zeros too)."""
    out: Dict[str, Dict[int, int]] = {}
    for j, row in new.lat_rows.items():
        before = old.lat_rows.get(j)
        if before is row:  # the same line as the pass before: the parser gave back its mapping
            if dense:
                for name in row:
                    out.setdefault(name, {})[j] = 0
            continue
        for name, n in row.items():
            d = int(n) - int(before.get(name, 0)) if before is not None else int(n)
            if d > 0 or dense:
                out.setdefault(name, {})[j] = max(0, d)
    return out


def latency_sample(entity: Entity, ts: float, interval: float, delta: Dict[str, Dict[int, int]],
                   source: str) -> Optional[Sample]:
    """Histogram deltas (:func:`histogram_delta` with ``dense``) as the ``latency`` source's metrics
    (``lat_<queue>_<op>_<label>`` = I/Os in the interval), from bucket 10 (``2us``, which holds everything
    faster) up."""
    metrics: Dict[str, float] = {}
    for name, buckets in delta.items():
        prefix = LAT_FIELDS.get(name)
        if prefix is None:
            continue  # total_flush/disk_flush (2.4+ masters): no zpool iostat -w column
        for j, n in buckets.items():
            if FIRST_LAT_BUCKET <= j < len(LAT_BUCKETS):
                metrics[f"{prefix}_{LAT_BUCKETS[j]}"] = float(n)
    if not metrics:
        return None
    return Sample(ts, entity, metrics, interval=interval, source=source)


def _counter(new: VdevStats, old: VdevStats, key: str) -> int:
    return max(0, new.counters.get(key, 0) - old.counters.get(key, 0))


def derive(new: PoolSnapshot, old: PoolSnapshot, topology: Optional[Topology] = None, source: str = "zpool",
           ) -> List[Sample]:
    """The interval between two snapshots of one pool as the ``zpool iostat -vlq -p`` text path gives it: per
    entity ``read_ops``/``write_ops``/``read_bw``/``write_bw`` per second (counter deltas over the elapsed
    time), ``alloc``/``free`` now, the ``-l`` averages of the histograms' deltas, and the root's ``-q`` queues.
    A vdev missing from ``old`` (just added) waits for the next interval. An empty list if the time did not
    move forward."""
    if new.pool != old.pool:
        raise ValueError(f"snapshots of two pools: {new.pool}, {old.pool}")
    dt = (new.ts_ns - old.ts_ns) / 1e9
    if dt <= 0:
        return []
    ents = entities(new, topology)
    out: List[Sample] = []
    for tag, v in new.vdevs.items():
        before = old.vdevs.get(tag)
        if before is None:
            continue
        metrics: Dict[str, float] = {}
        for key in ("alloc", "free"):
            if key in v.counters:
                metrics[key] = float(v.counters[key])
        metrics["read_ops"] = _counter(v, before, "read_ops") / dt
        metrics["write_ops"] = _counter(v, before, "write_ops") / dt
        metrics["read_bw"] = _counter(v, before, "read_bytes") / dt
        metrics["write_bw"] = _counter(v, before, "write_bytes") / dt
        for name, counts in histogram_delta(v, before).items():
            wait = WAIT_FIELDS.get(name)
            avg = _avg_ns(counts) if wait else None
            if wait and avg is not None:
                metrics[wait] = avg
        for name, q in v.queues.items():
            if name in QUEUE_FIELDS:
                metrics[QUEUE_FIELDS[name]] = float(q)
        out.append(Sample(new.ts, ents[tag], metrics, interval=dt, source=source))
    return out
