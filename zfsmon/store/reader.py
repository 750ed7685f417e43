"""Reads a recording, strictly read-only, even while a recorder is still writing it.

The file is opened through a ``file:...?mode=ro`` URI, so nothing a reader does
can change it; a file that is not a recording, is damaged, or comes from a
newer zfsmon raises :class:`~zfsmon.store.errors.RecordingError` (a UserError:
one line, no traceback) instead of a sqlite3 exception.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import shutil
import sqlite3
import tempfile
import zlib
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

from zfsmon.model import (
    Column,
    Entity,
    Event,
    EventKind,
    Kind,
    Role,
    Sample,
    SampleBlock,
    typical_gap,
    valid_ts,
)
from zfsmon.redact import redact
from zfsmon.store import codec, schema
from zfsmon.store.errors import RecordingError
from zfsmon.store.writer import NO_INTERVAL

T = TypeVar("T")
#: what a recording edited into inconsistency raises while it is read (a stream pointing at a missing entity,
#: text in a numeric column, an unknown kind or role): reported as damage, never as a traceback
_DAMAGE = (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError)
_ROLES = {r.value for r in Role}


@dataclass(frozen=True)
class MetricInfo:
    """A stored metric: its entity kind, name, whether it is a counter, its unit (as recorded)."""

    id: int
    kind: Kind
    name: str
    counter: bool
    unit: str


@dataclass(frozen=True)
class Stream:
    """What stays the same between samples of one entity from one source (see :mod:`zfsmon.store.schema`)."""

    id: int
    entity_key: str
    source: str
    metrics: Tuple[MetricInfo, ...]
    interval: Optional[float]
    since_boot: bool

    @functools.cached_property
    def names(self) -> Tuple[str, ...]:
        """The metrics' names in value order (a sample's dict is made from them with one C call)."""
        return tuple(m.name for m in self.metrics)


@dataclass(frozen=True)
class TopologyChange:
    ts: float
    entity: Entity
    present: bool


def _read_error(rec: Recording, exc: BaseException) -> RecordingError:
    """SQLite's error, or the damage a read ran into, as one line naming the file."""
    if isinstance(exc, sqlite3.DatabaseError):
        return RecordingError(f"{rec.path}: damaged or unreadable recording: {exc}")
    # a damaged value blob, a row pointing at nothing, text where a number goes
    return RecordingError(f"{rec.path}: damaged recording: {_damage_text(exc)}")


def _guard(fn: Callable[..., T]) -> Callable[..., T]:
    """Turn SQLite's errors into one-line RecordingErrors naming the file."""

    @functools.wraps(fn)
    def wrapper(self: Recording, *a, **kw):
        try:
            return fn(self, *a, **kw)
        except (sqlite3.DatabaseError, *_DAMAGE) as exc:
            raise _read_error(self, exc) from None

    return wrapper


def _guard_iter(fn: Callable[..., Iterator[T]]) -> Callable[..., Iterator[T]]:
    """:func:`_guard` for a generator: its errors come while it is iterated, not when it is called."""

    @functools.wraps(fn)
    def wrapper(self: Recording, *a, **kw):
        try:
            yield from fn(self, *a, **kw)
        except (sqlite3.DatabaseError, *_DAMAGE) as exc:
            raise _read_error(self, exc) from None

    return wrapper


def _damage_text(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"a row refers to a missing entry ({exc.args[0]!r})" if exc.args else "a row refers to a missing entry"
    return str(exc) or type(exc).__name__


def _check_ts(ts: object, what: str) -> float:
    if not valid_ts(ts):
        raise ValueError(f"{what} has an impossible time {ts!r}")
    return ts  # type: ignore[return-value]


def _connect(path: str, head: bytes) -> sqlite3.Connection:
    """Read-only. A file in WAL mode without a write-ahead log beside it (a recorder stopped uncleanly and the log
    was removed, or a copy of the file alone) is opened immutable: SQLite would otherwise create ``-wal`` and
    ``-shm`` files beside it and leave them there."""
    wal_mode = len(head) >= 20 and head[18] == 2 and head[19] == 2
    uri = schema.ro_uri(path)
    if wal_mode and not os.path.exists(path + "-wal"):
        uri += "&immutable=1"
    db = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        db.execute("PRAGMA schema_version").fetchone()  # opens the file (and its WAL) now
        # functions the file's schema names run only where they cannot do harm; no statement may write
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA query_only = 1")
    except sqlite3.Error:
        db.close()
        raise
    return db


def _private_copy(path: str) -> str:
    """The recording and its write-ahead log copied into a private temporary directory (removed on close)."""
    tmp = tempfile.mkdtemp(prefix="zfsmon-read.")
    try:
        for suffix in ("", "-wal"):
            if suffix == "" or os.path.exists(path + suffix):
                shutil.copyfile(path + suffix, os.path.join(tmp, os.path.basename(path) + suffix))
    except OSError:
        _remove_tree(tmp)
        raise
    return tmp


#: a gzipped recording (``zfsmon export``-free sharing, the project's test data) is unpacked to at most this many
#: times its own size (recordings pack 1.5-4x; gzip's utmost is about 1000x) plus :data:`GUNZIP_SLACK` bytes
GUNZIP_RATIO = 64
GUNZIP_SLACK = 64 << 20
GZIP_MAGIC = b"\x1f\x8b"


def _private_gunzip(path: str) -> str:
    """A gzipped recording unpacked into a private temporary directory (removed on close; the file itself is only
    read). Bounded: an archive that unpacks past :data:`GUNZIP_RATIO` times its size is refused, not followed to
    the end of the disk."""
    limit = os.path.getsize(path) * GUNZIP_RATIO + GUNZIP_SLACK
    tmp = tempfile.mkdtemp(prefix="zfsmon-read.")
    name = os.path.basename(path)
    out = os.path.join(tmp, name[:-3] if name.endswith(".gz") and len(name) > 3 else name + ".unpacked")
    written = 0
    try:
        with gzip.open(path, "rb") as src, open(out, "xb") as dst:
            while chunk := src.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    raise RecordingError(f"{path}: a gzip file that unpacks to more than {limit >> 20} MiB "
                                         f"({GUNZIP_RATIO} times its size): not unpacked")
                dst.write(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        _remove_tree(tmp)
        raise RecordingError(f"{path}: a damaged gzip file: {exc}") from None
    except BaseException:
        _remove_tree(tmp)
        raise
    return out


def _remove_tree(path: Optional[str]) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


#: what a recording made before zfsmon stored its origin says in headers
NOT_RECORDED = "not recorded"


def zfs_of(meta: Mapping[str, str]) -> str:
    """The recording's ZFS as one phrase: ``openzfs-kmod 2.3.2-2~bpo12+2 (tools zfs-2.3.2-2~bpo12+2)``,
    ``zfs-fuse 0.7.0-25+b1 (pool v23)``; :data:`NOT_RECORDED` for older recordings (or imported text)."""
    text = " ".join(x for x in (meta.get("zfs_flavour", ""), meta.get("zfs_version", "")) if x)
    tools = meta.get("zfs_userland", "")
    if tools and tools.split("zfs-", 1)[-1] != meta.get("zfs_version", ""):
        text += f" (tools {tools})"
    return text or NOT_RECORDED


def platform_of(meta: Mapping[str, str]) -> str:
    """The recording's platform (``Linux 6.1.0-50-amd64 x86_64``), or :data:`NOT_RECORDED`."""
    return meta.get("platform", "") or NOT_RECORDED


class Recording:
    """A read-only view of one recording file. Use :meth:`open`."""

    path: str
    version: int
    _db: sqlite3.Connection
    _copy_dir: Optional[str]
    _tick_cache: Dict[int, Dict[int, float]]

    @classmethod
    def open(cls, path: str) -> Recording:
        path = str(path)
        if not os.path.isfile(path):
            raise RecordingError(f"{path}: " + ("a directory, not a recording" if os.path.isdir(path) else
                                                "not a regular file: a recording is a file" if os.path.exists(path)
                                                else "no such recording"))
        try:
            with open(path, "rb") as f:
                head = f.read(100)  # the SQLite header
        except OSError as exc:
            raise RecordingError(f"{path}: cannot read: {exc.strerror}") from None
        copy_dir: Optional[str] = None
        file = path  # the SQLite file read: the recording itself, or its unpacked copy
        if head[:2] == GZIP_MAGIC:
            file = _private_gunzip(path)
            copy_dir = os.path.dirname(file)
            with open(file, "rb") as f:
                head = f.read(100)
        if head[:16] != b"SQLite format 3\x00":
            _remove_tree(copy_dir)
            raise RecordingError(f"{path}: not a zfsmon recording (not an SQLite file"
                                 f"{', once unpacked' if copy_dir else ''})")
        try:
            try:
                db = _connect(file, head)
            except sqlite3.OperationalError:
                if copy_dir:
                    raise
                # a WAL recording on read-only media, or one whose -shm another user owns: SQLite cannot open
                # it in place read-only; a private copy (file and its write-ahead log) reads the same data
                copy_dir = _private_copy(path)
                db = _connect(os.path.join(copy_dir, os.path.basename(path)), head)
            app = db.execute("PRAGMA application_id").fetchone()[0]
            ver = db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            _remove_tree(copy_dir)
            raise RecordingError(f"{path}: damaged or unreadable recording: {exc}") from None
        except OSError as exc:
            _remove_tree(copy_dir)
            raise RecordingError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if app != schema.APPLICATION_ID:
            db.close()
            _remove_tree(copy_dir)
            if app == 0 and head[18:20] == b"\x02\x02" and not os.path.exists(path + "-wal"):
                raise RecordingError(f"{path}: damaged recording: its write-ahead log ({os.path.basename(path)}-wal), "
                                     "which held its contents, is missing")
            raise RecordingError(f"{path}: an SQLite file, but not a zfsmon recording")
        if ver not in schema.READABLE:
            db.close()
            _remove_tree(copy_dir)
            raise RecordingError(f"{path}: recording schema version {ver} is not readable by this zfsmon "
                                 f"(reads {', '.join(map(str, schema.READABLE))}); upgrade zfsmon")
        rec = cls.__new__(cls)
        rec.path, rec._db, rec.version, rec._copy_dir = path, db, ver, copy_dir
        rec._tick_cache = {}
        try:
            rec._load()
        except RecordingError:
            rec.close()
            raise
        return rec

    def close(self) -> None:
        self._db.close()
        _remove_tree(getattr(self, "_copy_dir", None))
        self._copy_dir = None

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- loading
    @_guard
    def _load(self) -> None:
        db = self._db
        schema.check_objects(db, self.version)  # before any table is read: a view in its place may never end
        # hidden again: recordings made before the recorder hid them hold --conn passwords
        self.meta: Dict[str, str] = {k: redact(v) if isinstance(v, str) else v
                                     for k, v in db.execute("SELECT key, value FROM meta")}
        self.metrics: Dict[int, MetricInfo] = {}
        self._reload_streams()

    def _reload_streams(self) -> None:
        db = self._db
        self.metrics.update({i: MetricInfo(i, Kind(k), n, bool(c), u) for i, k, n, c, u in
                             db.execute("SELECT id, kind, name, counter, unit FROM metric")})
        ents = {i: (k, Kind(kind), name, pool) for i, k, kind, name, pool in
                db.execute("SELECT id, key, kind, name, pool FROM entity")}
        self._entity_rows = ents
        self._sources = dict(db.execute("SELECT id, name FROM source"))
        layouts = {i: tuple(self.metrics[int(x)] for x in m.split(",") if x)
                   for i, m in db.execute("SELECT id, metrics FROM layout")}
        self.streams: Dict[int, Stream] = {
            i: Stream(i, ents[e][0], self._sources[s], layouts[ly], iv, bool(b))
            for i, e, s, ly, iv, b in db.execute("SELECT id, entity, source, layout, interval, since_boot FROM stream")}
        self._topo = [(_check_ts(ts, "a topology row"), ents[e], role, str(parent), bool(p)) for ts, e, role, parent, p
                      in db.execute("SELECT ts, entity, role, parent, present FROM topology ORDER BY ts, id")]
        for row in self._topo:
            if row[2] and row[2] not in _ROLES:
                raise ValueError(f"{row[1][0]} has an unknown role {row[2]!r}")
        for i, (key, _kind, name, pool) in ents.items():
            if not all(isinstance(x, str) for x in (key, name, pool)):
                raise ValueError(f"entity {i} is not described by text")

    @_guard
    def refresh(self) -> None:
        """Pick up entities, metrics and streams a live recorder added since opening."""
        self._reload_streams()

    # -------------------------------------------------------------- questions
    @_guard
    def time_range(self) -> Optional[Tuple[float, float]]:
        """First and last sample time, or None for a recording without samples."""
        lo, hi = self._db.execute("SELECT min(ts), max(ts) FROM tick").fetchone()
        if lo is None:
            return None
        return _check_ts(lo, "the first reading"), _check_ts(hi, "the last reading")

    @_guard
    def counts(self) -> Dict[str, int]:
        q = self._db.execute
        chunked = q("SELECT total(n) FROM chunk").fetchone()[0] if self.version >= 3 else 0
        return {"samples": q("SELECT count(*) FROM sample").fetchone()[0] + int(chunked),
                "events": q("SELECT count(*) FROM event").fetchone()[0],
                "entities": len(self._entity_rows), "streams": len(self.streams),
                "topology_changes": q("SELECT count(*) FROM event WHERE kind = 'topology'").fetchone()[0]}

    @_guard
    def nominal_interval(self) -> Optional[float]:
        """The interval the recorder was asked for, else the most common interval of the samples."""
        try:
            return float(self.meta["interval"])
        except (KeyError, ValueError):
            pass
        ivs = [s.interval for s in self.streams.values() if s.interval]
        if ivs:
            return max(set(ivs), key=ivs.count)
        return typical_gap(r[0] for r in self._db.execute("SELECT DISTINCT ts FROM tick ORDER BY id LIMIT 2000"))

    @_guard
    def value_count(self) -> int:
        """How many numbers the file holds (for bytes-per-value)."""
        per_stream = {i: len(s.metrics) for i, s in self.streams.items()}
        total = 0
        for stream, n in self._db.execute("SELECT stream, count(*) FROM sample GROUP BY stream"):
            total += per_stream.get(stream, 0) * n
        if self.version >= 3:
            for stream, n in self._db.execute("SELECT stream, sum(n) FROM chunk GROUP BY stream"):
                total += per_stream.get(stream, 0) * n
        return total

    def _entity_at(self, ek: Tuple[str, Kind, str, str], role: Optional[str], parent: str) -> Entity:
        return Entity(ek[1], ek[2], ek[3], Role(role) if role else None, parent)

    @_guard
    def entities(self) -> List[Entity]:
        """Every entity ever recorded, with its latest role and parent."""
        last: Dict[str, Entity] = {}
        for _ts, ek, role, parent, _p in self._topo:
            last[ek[0]] = self._entity_at(ek, role, parent)
        return list(last.values())

    @_guard
    def topology(self, at: Optional[float] = None) -> List[Entity]:
        """The entities present at time ``at`` (default: the end), with their roles and parents then."""
        now: Dict[str, Optional[Entity]] = {}
        for ts, ek, role, parent, present in self._topo:
            if at is not None and ts > at:
                continue
            now[ek[0]] = self._entity_at(ek, role, parent) if present else None
        return [e for e in now.values() if e is not None]

    def topology_changes(self) -> List[TopologyChange]:
        """Every topology row in order: first appearances, role/parent changes, removals."""
        return [TopologyChange(ts, self._entity_at(ek, role, parent), present)
                for ts, ek, role, parent, present in self._topo]

    @_guard
    def select_streams(self, entity_keys: Optional[Iterable[str]] = None,
                       kinds: Optional[Iterable[Kind]] = None, sources: Optional[Iterable[str]] = None) -> List[int]:
        keys = set(entity_keys) if entity_keys is not None else None
        ks = {Kind(k) for k in kinds} if kinds is not None else None
        srcs = set(sources) if sources is not None else None
        out = []
        for sid, st in self.streams.items():
            if keys is not None and st.entity_key not in keys:
                continue
            if ks is not None and self._kind_of(st) not in ks:
                continue
            if srcs is not None and st.source not in srcs:
                continue
            out.append(sid)
        return out

    def _kind_of(self, st: Stream) -> Kind:
        return Kind(st.entity_key.split(":", 1)[0])

    def _tick_bounds(self, start: Optional[float], end: Optional[float]) -> Tuple[int, int]:
        q = "SELECT min(id), max(id) FROM tick WHERE ts >= ? AND ts <= ?"
        lo, hi = self._db.execute(q, (float("-inf") if start is None else start,
                                      float("inf") if end is None else end)).fetchone()
        return (lo, hi) if lo is not None else (1, 0)

    def _query(self, streams, start, end) -> Optional[Tuple[str, List[object], Optional[set]]]:
        """The statement that reads the head rows (and, schema 3+, the chunks) of ``streams`` between ``start``
        and ``end`` in (tick, stream) order, widened to whole keyframe blocks; None when no stream is wanted."""
        lo, hi = self._tick_bounds(start, end)
        if self.version >= 2:  # start at a keyframe block: counters may be deltas from earlier rows
            lo = (lo // schema.KEYFRAME_TICKS) * schema.KEYFRAME_TICKS
        size = schema.CHUNK_TICKS
        args: List[object] = [lo, hi]
        wanted = None
        if streams is None:
            head = ("SELECT s.tick, s.stream, t.ts, s.vals, s.iv FROM sample s JOIN tick t ON t.id = s.tick "
                    "WHERE s.tick BETWEEN ? AND ?")
            chunks = "SELECT tick0, stream, NULL, data, n FROM chunk WHERE tick0 BETWEEN ? AND ?"
            cargs: List[object] = [lo // size * size, hi]
        else:
            wanted = set(streams)
            if not wanted:
                return None
            marks = ",".join("?" * len(wanted))
            chunks = f"SELECT tick0, stream, NULL, data, n FROM chunk WHERE tick0 BETWEEN ? AND ? AND stream IN ({marks})"
            cargs = [lo // size * size, hi] + sorted(wanted)
            if len(wanted) <= 16:  # a few series: one primary-key probe per tick beats scanning every row
                head = ("SELECT t.id, s.stream, t.ts, s.vals, s.iv FROM tick t CROSS JOIN sample s "
                        f"ON s.tick = t.id AND s.stream IN ({marks}) WHERE t.id BETWEEN ? AND ?")
                args = sorted(wanted) + args
            elif len(wanted) <= 500:
                head = ("SELECT s.tick, s.stream, t.ts, s.vals, s.iv FROM sample s JOIN tick t ON t.id = s.tick "
                        f"WHERE s.tick BETWEEN ? AND ? AND s.stream IN ({marks})")
                args += sorted(wanted)
            else:
                head = ("SELECT s.tick, s.stream, t.ts, s.vals, s.iv FROM sample s JOIN tick t ON t.id = s.tick "
                        "WHERE s.tick BETWEEN ? AND ?")
                chunks = "SELECT tick0, stream, NULL, data, n FROM chunk WHERE tick0 BETWEEN ? AND ?"
                cargs = [lo // size * size, hi]
        if self.version >= 3:  # one statement, so one snapshot: a block a live recorder compacts meanwhile is seen once
            return f"{chunks} UNION ALL {head} ORDER BY 1, 2", cargs + args, wanted
        return head + " ORDER BY 1, 2", args, wanted

    @_guard_iter
    def rows(self, streams: Optional[Sequence[int]] = None, start: Optional[float] = None,
             end: Optional[float] = None) -> Iterator[Tuple[float, Stream, List[float], Optional[float]]]:
        """The raw material of :meth:`samples`: (ts, stream, values, interval), in recording order."""
        q = self._query(streams, start, end)
        if q is None:
            return
        sql, args, wanted = q
        if self.version >= 3:
            rows = self._merge_blocks(self._db.execute(sql, args), schema.CHUNK_TICKS)
        else:
            rows = self._db.execute(sql, args)
        st_map = self.streams
        unpack = codec.unpack
        decode = codec.decode_row
        flagged = self.version >= 2
        last: Dict[int, List[float]] = {}
        counters: Dict[int, Tuple[bool, ...]] = {}
        for _tick, sid, ts, blob, iv in rows:
            if wanted is not None and sid not in wanted:
                continue
            st = st_map.get(sid)
            if st is None:  # written after we loaded: a live recorder
                self._reload_streams()
                st_map = self.streams
                st = st_map[sid]
            if blob is None:  # from a chunk: values decoded already
                vals = iv[0]
                iv = iv[1]
            elif flagged:
                flags = counters.get(sid)
                if flags is None:
                    flags = counters[sid] = tuple(m.counter for m in st.metrics)
                vals = last[sid] = decode(blob, last.get(sid), flags)
            else:
                vals = unpack(blob)
            if not valid_ts(ts):
                raise ValueError(f"a reading of {st.entity_key} has an impossible time {ts!r}")
            if (start is not None and ts < start) or (end is not None and ts > end):
                continue
            if len(vals) != len(st.metrics):
                raise ValueError(f"sample of {st.entity_key} holds {len(vals)} values for {len(st.metrics)} metrics")
            yield ts, st, vals, _interval(st, iv)

    @_guard_iter
    def blocks(self, streams: Optional[Sequence[int]] = None, start: Optional[float] = None,
               end: Optional[float] = None, metrics: Optional[Callable[[Kind, str], bool]] = None,
               column: Optional[Callable[[bytes, int], Column]] = None) -> Iterator[List[SampleBlock]]:
        """The samples of :meth:`samples`, a block of :data:`~zfsmon.store.schema.CHUNK_TICKS` tick ids at a time,
        each stream's as columns (a compacted chunk's columns as they are decoded, never a Sample per reading):
        what downsampling a long recording reads. Blocks come in time order; a block's list in stream order.
        ``metrics(kind, name)``, when given, says which columns are kept (the others of a chunk are not decoded);
        ``column``, a chunk column's decoder other than the lists' (:func:`zfsmon.store.arrays.blocks`)."""
        q = self._query(streams, start, end)
        if q is None:
            return
        sql, args, wanted = q
        size = schema.CHUNK_TICKS
        decode = codec.decode_row
        flagged = self.version >= 2
        topo = _TopologyCursor(self._topo)
        last: Dict[int, List[float]] = {}  # head rows: a stream's previous values (counters may be deltas)
        counters: Dict[int, Tuple[bool, ...]] = {}
        current = None
        plans: Dict[int, Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]]] = {}  # stream: names kept, where
        # stream: (times, columns or rows, columnar, intervals)
        pending: Dict[int, Tuple[List[float], list, bool, List[Optional[float]]]] = {}
        for tick, sid, ts, blob, n in self._db.execute(sql, args):
            if tick // size != current:
                if pending:
                    yield self._finish_block(pending, topo, start, end, plans)
                pending, current = {}, tick // size
            if wanted is not None and sid not in wanted:
                continue
            st = self.streams.get(sid)
            if st is None:  # written after we loaded: a live recorder
                self._reload_streams()
                st = self.streams[sid]
            plan = plans.get(sid)
            if plan is None:
                plan = plans[sid] = (st.names, None) if metrics is None else _keep(st, metrics)
            if ts is None:  # a chunk: tick0, stream, NULL, data, n
                offsets, ivs, cols = codec.decode_chunk_columns(blob, len(st.metrics), n, plan[1], column)
                if len(offsets) != n:
                    raise ValueError(f"a chunk of stream {sid} holds {len(offsets)} samples, not {n}")
                ts_of = self._tick_ts(tick, size)
                own = len(ivs) - ivs.count(None)  # rows with an interval of their own are rare
                pending[sid] = ([ts_of[tick + o] for o in offsets], cols, True,
                                [_interval(st, iv) for iv in ivs] if own else [st.interval] * len(ivs))
            else:
                if flagged:
                    flags = counters.get(sid)
                    if flags is None:
                        flags = counters[sid] = tuple(m.counter for m in st.metrics)
                    vals = last[sid] = decode(blob, last.get(sid), flags)
                else:
                    vals = codec.unpack(blob)
                got = pending.get(sid)
                if got is None:
                    got = pending[sid] = ([], [], False, [])
                got[0].append(ts)
                got[1].append(vals)
                got[3].append(_interval(st, n))  # a head row's last column is its interval
        if pending:
            yield self._finish_block(pending, topo, start, end, plans)

    def _finish_block(self, pending: Dict[int, Tuple[List[float], list, bool, List[Optional[float]]]],
                      topo: _TopologyCursor, start: Optional[float], end: Optional[float],
                      plans: Dict[int, Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]]]) -> List[SampleBlock]:
        """One block's streams as SampleBlocks: rows turned into columns, checked, cut to [start, end] (and to the
        columns kept: a chunk's were decoded so already)."""
        out = []
        lo = min(times[0] for times, _c, _f, _i in pending.values() if times)
        for sid in sorted(pending):
            times, data, columnar, intervals = pending[sid]
            st = self.streams[sid]
            names, idx = plans[sid]
            width = len(st.metrics)
            if not columnar:
                if any(len(r) != width for r in data):
                    raise ValueError(f"sample of {st.entity_key} holds values for other metrics than its own")
                data = [list(c) for c in zip(*data)] if width else []
                if idx is not None and data:
                    data = [data[i] for i in idx]
            elif len(data) != (len(names) if times else 0):
                raise ValueError(f"a chunk of {st.entity_key} holds {len(data)} columns for {len(names)} metrics")
            if not columnar and not all(map(valid_ts, times)):  # a chunk's times were checked with its ticks
                raise ValueError(f"a reading of {st.entity_key} has an impossible time")
            if times and ((start is not None and min(times) < start) or (end is not None and max(times) > end)):
                keep = [i for i, t in enumerate(times) if (start is None or t >= start) and (end is None or t <= end)]
                times = [times[i] for i in keep]
                if keep and keep[-1] - keep[0] == len(keep) - 1:  # a window's edge: one slice
                    data = [c[keep[0]:keep[-1] + 1] for c in data]
                else:  # a list's items, or an array decoder's array indexed by the list
                    data = [[c[i] for i in keep] if isinstance(c, list) else c[keep] for c in data]
                intervals = [intervals[i] for i in keep]
            if not times:
                continue
            out.append(SampleBlock(times, topo.span(st.entity_key, lo, times[-1]), names,
                                   data, st.source, st.since_boot, intervals))
        return out

    def _merge_blocks(self, cursor, size: int) -> Iterator[tuple]:
        """Rows of chunks and of the head, block by block, in (tick, stream) order. A chunk row becomes one row
        per sample: (tick, stream, ts, None, (values, interval)); head rows pass as they are."""
        block: List[tuple] = []
        current = None
        chunked = False
        for row in cursor:
            b = row[0] // size
            if b != current:
                if block:
                    if chunked:
                        block.sort(key=_tick_stream)
                    yield from block
                block, current, chunked = [], b, False
            if row[2] is None:  # a chunk: tick0, stream, NULL, data, n
                tick0, sid, _n, data, n = row
                st = self.streams.get(sid)
                if st is None:  # written after we loaded: a live recorder
                    self._reload_streams()
                    st = self.streams[sid]
                offsets, ivs, vals = codec.decode_chunk(data, len(st.metrics), n)
                if len(offsets) != n:
                    raise ValueError(f"a chunk of stream {sid} holds {len(offsets)} samples, not {n}")
                ts_of = self._tick_ts(tick0, size)
                block.extend((tick0 + o, sid, ts_of[tick0 + o], None, (v, iv))
                             for o, v, iv in zip(offsets, vals, ivs))
                chunked = True
            else:
                block.append(row)
        if block:
            if chunked:
                block.sort(key=_tick_stream)
            yield from block

    def _tick_ts(self, tick0: int, size: int) -> Dict[int, float]:
        """Timestamps of one block's tick ids (ticks are never changed once written: cached)."""
        got = self._tick_cache.get(tick0)
        if got is None:
            got = dict(self._db.execute("SELECT id, ts FROM tick WHERE id >= ? AND id < ?", (tick0, tick0 + size)))
            if not all(map(valid_ts, got.values())):
                raise ValueError("a reading has an impossible time")
            if len(self._tick_cache) > 64:
                self._tick_cache.clear()
            self._tick_cache[tick0] = got
        return got

    def samples(self, entity_keys: Optional[Iterable[str]] = None, kinds: Optional[Iterable[Kind]] = None,
                start: Optional[float] = None, end: Optional[float] = None,
                metrics: Optional[Callable[[Kind, str], bool]] = None,
                sources: Optional[Iterable[str]] = None) -> Iterator[Sample]:
        """Samples in recording order (time order within each written interval), as the model's Sample.

        ``metrics(kind, name)``, when given, says which metrics a sample keeps (a long window's analysis reads a
        few of a ``zpool iostat`` row's dozens: the others are not made into its dict); ``sources``: only the
        samples of those sources (``status``: the health readings, not the same leaves' ``zpool iostat`` rows)."""
        streams = (None if entity_keys is None and kinds is None and sources is None
                   else self.select_streams(entity_keys, kinds, sources))
        topo = _TopologyCursor(self._topo)
        plans: Dict[int, Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]]] = {}
        for ts, st, vals, interval in self.rows(streams, start, end):
            try:
                ent = topo.entity(st.entity_key, ts)
            except _DAMAGE as exc:
                raise RecordingError(f"{self.path}: damaged recording: {_damage_text(exc)}") from None
            if metrics is None:
                values = dict(zip(st.names, vals))
            else:
                plan = plans.get(st.id)
                if plan is None:
                    plan = plans[st.id] = _keep(st, metrics)
                names, idx = plan
                values = dict(zip(names, vals if idx is None else [vals[i] for i in idx]))
            yield Sample(ts, ent, values, interval=interval, since_boot=st.since_boot, source=st.source)

    @_guard
    def events(self, start: Optional[float] = None, end: Optional[float] = None,
               kinds: Optional[Iterable[EventKind]] = None) -> List[Event]:
        sql = "SELECT ts, kind, text, source, entity, data FROM event WHERE ts >= ? AND ts <= ?"
        args: List[object] = [float("-inf") if start is None else start, float("inf") if end is None else end]
        if kinds is not None:
            ks = [EventKind(k).value for k in kinds]
            sql += f" AND kind IN ({','.join('?' * len(ks))})"
            args += ks
        out = []
        for ts, kind, text, source, entity, data in self._db.execute(sql + " ORDER BY ts, id", args):
            try:
                ek = EventKind(kind)
            except ValueError:
                ek = EventKind.INFO
            info = json.loads(data) if data else {}
            if not isinstance(info, dict):
                raise ValueError(f"an event's data is not an object: {str(data)[:40]!r}")
            out.append(Event(_check_ts(ts, "an event"), ek, redact(str(text)), str(source), str(entity), info))
        return out

    def series(self, entity_key: str, metric: str, start: Optional[float] = None,
               end: Optional[float] = None) -> List[Tuple[float, float]]:
        """One metric of one entity as (ts, value) pairs: what a chart needs."""
        streams = [sid for sid in self.select_streams([entity_key])
                   if any(m.name == metric for m in self.streams[sid].metrics)]
        out = []
        for ts, st, vals, _iv in self.rows(streams, start, end):
            for m, v in zip(st.metrics, vals):
                if m.name == metric:
                    out.append((ts, v))
                    break
        return out

    def size_bytes(self) -> int:
        """The file plus its write-ahead log, if a recorder is (or was) writing."""
        total = os.path.getsize(self.path)
        wal = self.path + "-wal"
        return total + (os.path.getsize(wal) if os.path.exists(wal) else 0)

    @_guard
    def integrity(self) -> str:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0]


def _keep(st: Stream, metrics: Callable[[Kind, str], bool]) -> Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]]:
    """The names a stream's samples keep, and their places among its values (None: all of them, in order)."""
    idx = tuple(i for i, m in enumerate(st.metrics) if metrics(m.kind, m.name))
    if len(idx) == len(st.metrics):
        return st.names, None
    return tuple(st.metrics[i].name for i in idx), idx


def _interval(st: Stream, iv: Optional[float]) -> Optional[float]:
    """A row's interval: the stream's, unless the row stored its own (NO_INTERVAL: none)."""
    return st.interval if iv is None else (None if iv == NO_INTERVAL else iv)


def _tick_stream(row: tuple) -> Tuple[int, int]:
    return row[0], row[1]


class _TopologyCursor:
    """Role and parent of each entity at a moving time, without re-reading the topology table."""

    def __init__(self, topo: List[tuple]) -> None:
        self._topo = topo
        self._i = 0
        self._now: Dict[str, Entity] = {}
        self._ts = float("-inf")

    def entity(self, key: str, ts: float) -> Entity:
        if ts < self._ts:  # out-of-order sample: rewind
            self._i, self._now = 0, {}
        self._ts = ts
        topo = self._topo
        while self._i < len(topo) and topo[self._i][0] <= ts:
            row = topo[self._i]
            self._now[row[1][0]] = _topo_entity(row)
            self._i += 1
        ent = self._now.get(key)
        if ent is None:  # only ever seen later than ts (should not happen): use its first description
            for row in topo:
                if row[1][0] == key:
                    return _topo_entity(row)
            kind, rest = key.split(":", 1)
            pool, _, name = rest.rpartition("/")
            return Entity(Kind(kind), name, pool)
        return ent

    def span(self, key: str, t0: float, t1: float) -> List[Tuple[float, Entity]]:
        """The entity at ``t0``, then each change of its description up to ``t1`` (the cursor moves to t0)."""
        out = [(t0, self.entity(key, t0))]
        topo = self._topo
        j = self._i
        while j < len(topo) and topo[j][0] <= t1:
            if topo[j][1][0] == key:
                out.append((topo[j][0], _topo_entity(topo[j])))
            j += 1
        return out


def _topo_entity(row: tuple) -> Entity:
    _t, ek, role, parent, _p = row
    return Entity(ek[1], ek[2], ek[3], Role(role) if role else None, parent)
