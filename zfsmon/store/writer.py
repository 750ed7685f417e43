"""Writes records into a recording, one committed transaction per call.

Durability: WAL journal with ``synchronous=FULL``, one transaction per
:meth:`Recorder.write` (the sampler calls it once per interval), so a SIGKILL
or power loss loses at most the interval being written and the file opens
without repair. Memory stays flat: the only state kept is the interning caches,
which grow with the number of entities and metrics, never with time.

Compaction: an interval's samples go into the head table; once the tick ids
have left a block of :data:`~zfsmon.store.schema.CHUNK_TICKS`, the next write
also moves that block's head rows into compressed per-stream chunks, inside the
same transaction (see :mod:`zfsmon.store.schema`), at most
:data:`COMPACT_BLOCKS` blocks per write (an old, migrated recording catches up
gradually).

Topology is tracked here, because only the writer sees every reading in order:
an entity's first appearance, every change of its role or parent, and — for
vdevs and leaves — its absence from a later complete report of the same source
and pool become ``topology`` rows and ``topology`` events.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import stat
import time
from types import TracebackType
from typing import IO, Dict, Iterable, List, Literal, Mapping, Optional, Set, Tuple, Type

from zfsmon import __version__, metrics, names
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample, valid_ts
from zfsmon.outfile import os_message
from zfsmon.redact import redact
from zfsmon.store import codec, schema
from zfsmon.store.errors import RecordingError, RecordingFull

#: ``iv`` value meaning "this sample has no interval" (the stream has one)
NO_INTERVAL = -1.0
#: blocks compacted per write at most
COMPACT_BLOCKS = 2
_TREE_KINDS = (Kind.VDEV, Kind.LEAF)


def _sqlite_code(exc: sqlite3.Error) -> int:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF


def _is_full(exc: sqlite3.Error) -> bool:
    # SQLITE_FULL = 13, SQLITE_IOERR = 10 (ENOSPC while growing the WAL shows up as either)
    return _sqlite_code(exc) in (13, 10) or "full" in str(exc) or "disk I/O" in str(exc)


class Recorder:
    """Appends samples, events and topology to a recording file (created if missing)."""

    # set by _load_caches (and re-read after a rolled-back batch); written by the batches
    _head_min: Optional[int]  # the oldest tick of a head row, None when every row is in a chunk
    _max_tick: int
    _fresh: Set[int]  # entities first seen in the batch being written

    def __init__(self, path: str, meta: Optional[Mapping[str, object]] = None, clock=time.time) -> None:
        self.path = str(path)
        self.clock = clock
        self.failed: Optional[str] = None
        self.samples_written = 0
        self.events_written = 0
        if os.path.isdir(self.path):
            raise RecordingError(f"{self.path} is a directory: give a file name for the recording")
        self._refuse_links()
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if not existed:
            for suffix in schema.SIDE_FILES:  # SQLite would take a stray write-ahead log or journal in
                if os.path.lexists(self.path + suffix):
                    raise RecordingError(f"{self.path + suffix} exists without its recording: not zfsmon's to "
                                         "remove; move it away or give another name")
        if not os.path.exists(self.path):
            try:  # SQLite says only "unable to open database file": learn why (read-only, no permission, ...)
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
            except FileExistsError:
                pass
            except OSError as exc:
                raise RecordingError(os_message(self.path, exc, "cannot create the recording")) from None
        self._lock = self._take_lock()
        try:
            if existed:
                self._check_existing()  # read-only first: a foreign file is left untouched
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._check_same_file()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            if existed:
                schema.migrate(self._db)
            else:
                schema.create(self._db)
        except sqlite3.DatabaseError as exc:
            raise RecordingError(f"{self.path}: cannot write a recording here: {exc}") from None
        except ValueError as exc:
            raise RecordingError(f"{self.path}: {exc}") from None
        except OSError as exc:
            raise RecordingError(os_message(self.path, exc)) from None
        self._load_caches()
        info = {"created": repr(self.clock()), "zfsmon_version": __version__, "host": socket.gethostname()}
        info.update({k: redact(str(v)) for k, v in (meta or {}).items()})  # a --conn password is never kept
        with self._txn():
            have = {r[0] for r in self._db.execute("SELECT key FROM meta")}
            self._db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                                 [(k, v) for k, v in info.items() if k not in have])
            argv = info.get("argv", "")
            opened = names.RECORDING_RESUMED if existed else names.RECORDING_STARTED
            #: the event written on opening: ``recording resumed`` when the file existed (``top`` reads the readings
            #: from before it into its timeline), else ``recording started``
            self.opened = Event(self.clock(), EventKind.INFO, opened + (f": {argv}" if argv else ""), source="record")
            self._event(self.opened)

    def _refuse_links(self) -> None:
        """A symbolic link where the recording or its -wal/-shm/-journal goes is refused: SQLite writes through a
        link at the database's own name, and root must not write a file someone else chose."""
        for suffix in ("",) + schema.SIDE_FILES:
            if os.path.islink(self.path + suffix):
                raise RecordingError(f"{self.path + suffix} is a symbolic link: zfsmon does not write a recording "
                                     "through one; give the name of a file")

    def _check_same_file(self) -> None:
        """The name SQLite opened still is the regular file locked (opened without following a link): a link
        swapped in meanwhile is refused before anything is written."""
        st, held = os.lstat(self.path), os.fstat(self._lock.fileno())
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino):
            self._db.close()
            raise RecordingError(f"{self.path} was replaced while it was being opened: not recording into it")

    def _take_lock(self) -> IO[bytes]:
        """One writer per recording: an exclusive flock on the file, held while this Recorder lives (SQLite's own
        locks are POSIX locks, which flock does not touch; readers take none, so reading while recording works)."""
        try:  # O_NOFOLLOW: the file SQLite then opens is checked to be this one (_check_same_file)
            fh = os.fdopen(os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW), "rb")
        except OSError as exc:
            raise RecordingError(os_message(self.path, exc)) from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise RecordingError(f"{self.path} is being written by another zfsmon (record, top or soak): "
                                 "give this one another file") from None
        return fh

    # ----------------------------------------------------------------- public API
    def write(self, records: Iterable[Record]) -> None:
        """Store one interval's records and commit them. Raises RecordingFull when the disk is full."""
        if self.failed:
            raise RecordingError(f"{self.path}: recording stopped: {self.failed}")
        recs = list(records)
        bad = next((r for r in recs if not valid_ts(r.ts)), None)
        if bad is not None:  # checked before sorting: nan does not sort
            raise RecordingError(f"{self.path}: refusing an impossible time {bad.ts!r} (of {bad.source or 'a record'}"
                                 f"): not written")
        recs.sort(key=lambda r: r.ts)
        if not recs:
            return
        self._fresh = set()
        # a source that reports topology changes itself (zpool iostat does, per pool): don't say it twice
        if len(self._announced) > 4096:
            self._announced.clear()
        self._announced |= {(r.data.get("pool"), r.ts) for r in recs if isinstance(r, Event)
                            and r.kind == EventKind.TOPOLOGY and r.data.get("pool")}
        with self._txn():
            ticks: Dict[float, int] = {}
            used: Set[Tuple[int, int]] = set()
            rows: List[tuple] = []
            groups: Dict[Tuple[int, str, float], Set[int]] = {}
            for rec in recs:
                if isinstance(rec, Sample):
                    row = self._sample_row(rec, ticks, used)
                    if row is not None:
                        rows.append(row)
                        if rec.entity.kind in _TREE_KINDS:
                            gk = (self._source_id(rec.source), rec.entity.pool, rec.ts)
                            groups.setdefault(gk, set()).add(self._entities[rec.entity.key])
                else:
                    self._event(rec)
            self._db.executemany("INSERT INTO sample(tick, stream, vals, iv) VALUES (?, ?, ?, ?)", rows)
            for (src, pool, ts), members in sorted(groups.items(), key=lambda kv: kv[0][2]):
                self._collect_members(src, pool, ts, members)
            if rows:
                self._max_tick = max(self._max_tick, max(r[0] for r in rows))
                if self._head_min is None:
                    self._head_min = min(r[0] for r in rows)
                self._compact()
        self.samples_written += len(rows)

    def mark(self, text: str, ts: Optional[float] = None) -> None:
        """A user's annotation ("started VACUUM"), committed at once."""
        self.write([Event(self.clock() if ts is None else ts, EventKind.MARK, text, source="user")])

    def flush(self) -> None:
        """Everything written is already committed; this also moves the WAL into the main file."""
        if not self.failed:
            try:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass

    def close(self) -> None:
        """Note the end, fold the WAL into the file (so it reads without -wal/-shm), close. Safe twice."""
        db = getattr(self, "_db", None)
        if db is None:
            return
        if not self.failed:
            try:
                with self._txn():
                    self._event(Event(self.clock(), EventKind.INFO, "recording stopped", source="record"))
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.execute("PRAGMA journal_mode=DELETE")  # fails harmlessly while a reader has it open
            except (sqlite3.Error, RecordingError):
                pass
        try:
            db.close()
        except sqlite3.Error:
            pass
        self._db = None  # type: ignore[assignment]
        self._lock.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- internals
    def _check_existing(self) -> None:
        with open(self.path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise RecordingError(f"{self.path}: exists and is not a zfsmon recording (refusing to write into it)")
        ro = sqlite3.connect(schema.ro_uri(self.path), uri=True)
        try:
            app = ro.execute("PRAGMA application_id").fetchone()[0]
            ver = ro.execute("PRAGMA user_version").fetchone()[0]
            if app == schema.APPLICATION_ID:
                try:
                    schema.check_objects(ro, ver)
                except ValueError as exc:
                    raise RecordingError(f"{self.path}: damaged recording: {exc} (refusing to write into it)") from None
        finally:
            ro.close()
        if app != schema.APPLICATION_ID:
            raise RecordingError(f"{self.path}: exists and is not a zfsmon recording (refusing to write into it)")
        if ver > schema.SCHEMA_VERSION:
            raise RecordingError(f"{self.path}: written by a newer zfsmon (schema {ver}); cannot append")

    def _txn(self):
        return _Txn(self)

    def _load_caches(self) -> None:
        db = self._db
        self._sources: Dict[str, int] = {n: i for i, n in db.execute("SELECT id, name FROM source")}
        self._entities: Dict[str, int] = {k: i for i, k in db.execute("SELECT id, key FROM entity")}
        self._metrics: Dict[Tuple[str, str], int] = {}
        self._counter: Dict[int, bool] = {}
        for i, k, n, c in db.execute("SELECT id, kind, name, counter FROM metric"):
            self._metrics[(k, n)] = i
            self._counter[i] = bool(c)
        self._layouts: Dict[Tuple[int, ...], int] = {
            tuple(int(x) for x in m.split(",") if x): i for i, m in db.execute("SELECT id, metrics FROM layout")}
        self._layout_counters: Dict[int, Tuple[bool, ...]] = {
            i: tuple(self._counter[m] for m in mids) for mids, i in self._layouts.items()}
        # each stream's last row (tick, normalised values): the base of the next delta row
        self._last: Dict[int, Tuple[int, List[float]]] = {}
        self._streams: Dict[Tuple[int, int, int, int], Tuple[int, Optional[float]]] = {
            (e, s, ly, b): (i, iv) for i, e, s, ly, b, iv in
            db.execute("SELECT id, entity, source, layout, since_boot, interval FROM stream")}
        self._stream_counters: Dict[int, Tuple[bool, ...]] = {
            i: self._layout_counters[ly] for (_e, _s, ly, _b), (i, _iv) in self._streams.items()}
        self._head_min = db.execute("SELECT min(tick) FROM sample").fetchone()[0]
        self._max_tick = db.execute("SELECT max(id) FROM tick").fetchone()[0] or 0
        self._no_compact: str = ""  # why compaction stopped (a damaged head row), else ""
        self._topo: Dict[int, Tuple[Optional[str], str, int]] = {}
        for eid, role, parent, present in db.execute("SELECT entity, role, parent, present FROM topology ORDER BY id"):
            self._topo[eid] = (role, parent, present)
        # which vdevs/leaves the last complete report of (source, pool) listed; rebuilt from data as it arrives
        self._members: Dict[Tuple[int, str], Set[int]] = {}
        # the newest report of (source, pool) so far: (time, its vdevs/leaves, those first seen with it); complete
        # only once a newer report starts (a report can be split over two writes: a stream read mid-report)
        self._pending: Dict[Tuple[int, str], Tuple[float, Set[int], Set[int]]] = {}
        self._fresh = set()
        self._announced: Set[Tuple[object, float]] = set()  # (pool, ts) whose topology change a source reported

    def _insert(self, sql: str, params: Tuple[object, ...]) -> int:
        """The id of the row an INSERT made (sqlite gives every INSERT into these tables one)."""
        rowid = self._db.execute(sql, params).lastrowid
        assert rowid is not None
        return rowid

    def _source_id(self, name: str) -> int:
        sid = self._sources.get(name)
        if sid is None:
            sid = self._insert("INSERT INTO source(name) VALUES (?)", (name,))
            self._sources[name] = sid
        return sid

    def _entity_id(self, ent: Entity, ts: float) -> int:
        eid = self._entities.get(ent.key)
        if eid is None:
            eid = self._insert("INSERT INTO entity(key, kind, name, pool) VALUES (?, ?, ?, ?)",
                               (ent.key, ent.kind.value, ent.name, ent.pool))
            self._entities[ent.key] = eid
        role = ent.role.value if ent.role is not None else None
        old = self._topo.get(eid)
        if old is None or old[0] != role or old[1] != ent.parent or not old[2]:
            self._topology_row(eid, ts, role, ent.parent, 1)
            if old is None:
                self._fresh.add(eid)
            else:
                if not old[2]:
                    what = "is back"
                else:
                    changes = []
                    if old[0] != role:
                        changes.append(f"role {old[0] or '-'} -> {role or '-'}")
                    if old[1] != ent.parent:
                        changes.append(f"parent {old[1] or '-'} -> {ent.parent or '-'}")
                    what = ", ".join(changes)
                self._topology_event(ts, ent.pool, f"{ent.key}: {what}", ent.key,
                                     {"role": role, "parent": ent.parent})
        return eid

    def _topology_row(self, eid: int, ts: float, role: Optional[str], parent: str, present: int) -> None:
        self._db.execute("INSERT INTO topology(ts, entity, role, parent, present) VALUES (?, ?, ?, ?, ?)",
                         (ts, eid, role, parent, present))
        self._topo[eid] = (role, parent, present)

    def _collect_members(self, src: int, pool: str, ts: float, members: Set[int]) -> None:
        """Gather one report's vdevs and leaves; judge the previous report once a newer one starts."""
        pend = self._pending.get((src, pool))
        if pend is not None and ts == pend[0]:  # the rest of a report split over two writes
            pend[1].update(members)
            pend[2].update(members & self._fresh)
            return
        if pend is not None and ts < pend[0]:  # a late piece of an older report: already judged
            return
        self._pending[(src, pool)] = (ts, set(members), members & self._fresh)
        if pend is not None:
            self._note_members(src, pool, pend[0], pend[1], pend[2], members)

    def _note_members(self, src: int, pool: str, ts: float, members: Set[int], fresh: Set[int],
                      newer: Set[int]) -> None:
        """A complete report's members against the previous report's: added and removed devices. One missing
        from this report but listed again in the newer one is not called removed."""
        prev = self._members.get((src, pool))
        self._members[(src, pool)] = members
        if prev is None:
            return
        keys = {i: k for k, i in self._entities.items() if i in (prev ^ members)}
        for eid in sorted((members - prev) & fresh):
            self._topology_event(ts, pool, f"{keys[eid]}: added", keys[eid], {"added": True})
        for eid in sorted(prev - members - newer):
            role, parent, present = self._topo[eid]
            if present:
                self._topology_row(eid, ts, role, parent, 0)
                self._topology_event(ts, pool, f"{keys[eid]}: removed", keys[eid], {"removed": True})

    def _topology_event(self, ts: float, pool: str, text: str, key: str, data: Dict[str, object]) -> None:
        if (pool, ts) not in self._announced:
            self._event(Event(ts, EventKind.TOPOLOGY, text, source="record", entity=key, data=data))

    def _metric_id(self, kind: Kind, name: str) -> int:
        mid = self._metrics.get((kind.value, name))
        if mid is None:
            spec = metrics.lookup(kind, name)
            mid = self._insert(
                "INSERT INTO metric(kind, name, counter, unit) VALUES (?, ?, ?, ?)",
                (kind.value, name, int(metrics.is_counter(kind, name)), spec.unit if spec else ""))
            self._metrics[(kind.value, name)] = mid
            self._counter[mid] = metrics.is_counter(kind, name)
        return mid

    def _layout_id(self, mids: Tuple[int, ...]) -> int:
        lid = self._layouts.get(mids)
        if lid is None:
            lid = self._insert("INSERT INTO layout(metrics) VALUES (?)", (",".join(map(str, mids)),))
            self._layouts[mids] = lid
            self._layout_counters[lid] = tuple(self._counter[m] for m in mids)
        return lid

    def _sample_row(self, s: Sample, ticks: Dict[float, int], used: Set[Tuple[int, int]]) -> Optional[tuple]:
        kind = s.entity.kind
        pairs = sorted((self._metric_id(kind, n), v) for n, v in s.metrics.items() if v is not None)
        if not pairs:
            return None
        eid = self._entity_id(s.entity, s.ts)
        sid = self._source_id(s.source)
        lid = self._layout_id(tuple(p[0] for p in pairs))
        skey = (eid, sid, lid, int(bool(s.since_boot)))
        st = self._streams.get(skey)
        if st is None:
            stid = self._insert(
                "INSERT INTO stream(entity, source, layout, interval, since_boot) VALUES (?, ?, ?, ?, ?)",
                (eid, sid, lid, s.interval, skey[3]))
            st = self._streams[skey] = (stid, s.interval)
            self._stream_counters[stid] = self._layout_counters[lid]
        stid, interval = st
        iv = None if s.interval == interval else (NO_INTERVAL if s.interval is None else s.interval)
        tick = ticks.get(s.ts)
        if tick is None or (tick, stid) in used:
            tick = self._insert("INSERT INTO tick(ts) VALUES (?)", (s.ts,))
            ticks[s.ts] = tick
        used.add((tick, stid))
        vals = codec.normalise([p[1] for p in pairs])
        last = self._last.get(stid)
        k = schema.KEYFRAME_TICKS
        base = last[1] if last is not None and last[0] // k == tick // k else None
        self._last[stid] = (tick, vals)
        return (tick, stid, codec.encode_row(vals, base, self._layout_counters[lid]), iv)

    def _compact(self) -> None:
        """Move closed blocks of head rows into chunks, oldest first (inside the caller's transaction)."""
        size = schema.CHUNK_TICKS
        for _ in range(COMPACT_BLOCKS):
            if self._head_min is None or self._head_min // size >= self._max_tick // size or self._no_compact:
                return
            t0 = self._head_min // size * size
            by_stream: Dict[int, List[tuple]] = {}
            for tick, stid, blob, iv in self._db.execute(
                    "SELECT tick, stream, vals, iv FROM sample WHERE tick >= ? AND tick < ?", (t0, t0 + size)):
                by_stream.setdefault(stid, []).append((tick, blob, iv))
            chunks = []
            try:
                for stid, got in by_stream.items():
                    got.sort(key=lambda r: r[0])
                    flags = self._stream_counters[stid]
                    vals: List[List[float]] = []
                    base = None
                    for _tick, blob, _iv in got:
                        base = codec.decode_row(blob, base, flags)
                        vals.append(base)
                    chunks.append((t0, stid, len(got), codec.encode_chunk(
                        [r[0] - t0 for r in got], [r[2] for r in got], vals, len(flags))))
            except (ValueError, KeyError) as exc:  # a damaged head row: keep the head as it is, stop compacting
                self._no_compact = str(exc)
                return
            self._db.executemany("INSERT INTO chunk(tick0, stream, n, data) VALUES (?, ?, ?, ?)", chunks)
            self._db.execute("DELETE FROM sample WHERE tick >= ? AND tick < ?", (t0, t0 + size))
            self._head_min = self._db.execute("SELECT min(tick) FROM sample").fetchone()[0]

    def _event(self, ev: Event) -> None:
        data = json.dumps(dict(ev.data), sort_keys=True, default=str) if ev.data else ""
        self._db.execute("INSERT INTO event(ts, kind, text, source, entity, data) VALUES (?, ?, ?, ?, ?, ?)",
                         (ev.ts, ev.kind.value, ev.text, ev.source, ev.entity, data))
        self.events_written += 1


class _Txn:
    """BEGIN/COMMIT around a batch; on failure roll back, re-read the caches, and say why in one line."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def __enter__(self) -> None:
        self.rec._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, et: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]:
        db = self.rec._db
        if exc is None:
            try:
                db.execute("COMMIT")
                return False
            except sqlite3.Error as err:
                exc = err
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        if not isinstance(exc, sqlite3.Error):
            self.rec._load_caches()
            return False
        if _is_full(exc):
            self.rec.failed = f"disk full ({exc})"
            raise RecordingFull(f"{self.rec.path}: the disk is full: recording stopped; "
                                f"{self.rec.samples_written} samples written before are kept") from None
        self.rec.failed = str(exc)
        raise RecordingError(f"{self.rec.path}: cannot write: {exc}") from None
