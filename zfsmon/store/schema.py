"""The recording file: one SQLite database per recording, its tables and versions.

Layout (chosen by measurement, see docs/performance.md "Recording"): names are
interned once (``entity``, ``metric``, ``source``, ``layout``, ``stream``).
A *stream* is what stays the same from one sample to the next of an entity:
which entity, which source, which metrics in which order, the nominal interval
and the since-boot flag. ``tick`` interns the timestamp shared by all samples of
one reading; tick ids only grow.

Samples live in two tables, like a time-series database's head block and its
compacted blocks:

- ``sample`` (the head): every interval's samples are committed here, one narrow
  row ``(tick, stream, vals)`` per sample whose BLOB holds the values packed by
  :mod:`zfsmon.store.codec`, counters as deltas from the stream's previous row
  except in each stream's first row of a :data:`KEYFRAME_TICKS` block. Clustered
  on ``(tick, stream)``: appends are sequential, a time range is one range scan.
- ``chunk`` (schema 3): once the tick ids have moved past a block of
  :data:`CHUNK_TICKS`, the recorder moves that block's head rows into one
  compressed, column-wise chunk per stream (:func:`zfsmon.store.codec.encode_chunk`)
  in the same transaction as an interval's samples, so a kill at any moment
  leaves each block either wholly in the head or wholly in chunks. A block is
  never in both, and compaction goes oldest block first.

Files are marked with ``PRAGMA application_id`` (so a foreign SQLite file is
refused) and versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` upgrades
an older file in place when a recorder appends to it. Readers never migrate:
they read every version listed in :data:`READABLE`.
"""

from __future__ import annotations

import os
import re
import sqlite3
from typing import Callable, Dict, Tuple
from urllib.parse import quote

#: "zfsm" — identifies a zfsmon recording among SQLite files.
APPLICATION_ID = 0x7A66736D
SCHEMA_VERSION = 3
#: versions a reader of this code understands (1: rows without the delta flag byte; 2: no chunks)
READABLE: Tuple[int, ...] = (1, 2, 3)
#: a stream's first row in each block of this many tick ids stores absolute values (a keyframe), so a
#: reader can start anywhere by starting at the block's first tick
KEYFRAME_TICKS = 64
#: tick ids per chunk (a multiple of KEYFRAME_TICKS, so a block's head rows start at a keyframe); of 64..1024,
#: 256 gives the best size against the cost of decoding a whole chunk for a short read
CHUNK_TICKS = 256
#: the suffix ``zfsmon record`` gives its files
SUFFIX = ".zfsmon"

TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE source (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE entity (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    pool TEXT NOT NULL
);
-- one row when an entity first appears and one at every change of role or parent, or removal
CREATE TABLE topology (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    entity INTEGER NOT NULL REFERENCES entity(id),
    role TEXT,
    parent TEXT NOT NULL,
    present INTEGER NOT NULL
);
CREATE TABLE metric (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    counter INTEGER NOT NULL,
    unit TEXT NOT NULL,
    UNIQUE (kind, name)
);
-- metric ids of a packed sample, comma separated, in value order
CREATE TABLE layout (id INTEGER PRIMARY KEY, metrics TEXT NOT NULL UNIQUE);
CREATE TABLE stream (
    id INTEGER PRIMARY KEY,
    entity INTEGER NOT NULL REFERENCES entity(id),
    source INTEGER NOT NULL REFERENCES source(id),
    layout INTEGER NOT NULL REFERENCES layout(id),
    interval REAL,
    since_boot INTEGER NOT NULL,
    UNIQUE (entity, source, layout, since_boot)
);
CREATE TABLE tick (id INTEGER PRIMARY KEY, ts REAL NOT NULL);
-- vals: flag byte (0 absolute, 1 counters as deltas from the stream's previous row) + packed values
-- iv: the sample's interval where it differs from the stream's
CREATE TABLE sample (
    tick INTEGER NOT NULL,
    stream INTEGER NOT NULL,
    vals BLOB NOT NULL,
    iv REAL,
    PRIMARY KEY (tick, stream)
) WITHOUT ROWID;
-- compacted samples: one stream's rows of the tick ids tick0 .. tick0 + CHUNK_TICKS - 1 (n rows), column-wise
CREATE TABLE chunk (
    tick0 INTEGER NOT NULL,
    stream INTEGER NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (tick0, stream)
);
CREATE TABLE event (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    entity TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX event_ts ON event (ts);
"""


#: the files SQLite keeps beside a recording while it is written (write-ahead log, its index, a rollback journal)
SIDE_FILES = ("-wal", "-shm", "-journal")

#: the tables of each readable version (chunk came with version 3)
_TABLE_NAMES = tuple(re.findall(r"^CREATE TABLE (\w+)", TABLES, re.MULTILINE))
#: sqlite_master types a recording may hold besides its tables: SQLite's own indexes and ours
_HARMLESS = ("table", "index")


def check_objects(conn: sqlite3.Connection, version: int) -> None:
    """Refuse a file whose schema is not a recording's before anything reads it: a table replaced by a view (a
    recursive one runs forever), a trigger (it would run on a recorder's writes) or another database attached.
    ValueError names the object."""
    found: Dict[str, str] = {}
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"):
        kind, name = str(kind), str(name)
        if kind not in _HARMLESS:
            raise ValueError(f"the file holds a {kind} ({name!r}), which no recording has")
        if kind == "table" and str(sql or "").upper().startswith("CREATE VIRTUAL"):
            raise ValueError(f"{name!r} is a virtual table, which no recording has")
        found[name] = kind
    for name in _TABLE_NAMES:
        if name == "chunk" and version < 3:
            continue
        if found.get(name) != "table":
            raise ValueError(f"its {name} table is missing")
    for _seq, name, _file in conn.execute("PRAGMA database_list"):
        if name not in ("main", "temp"):
            raise ValueError(f"another database is attached ({name!r})")


def ro_uri(path: str) -> str:
    """A read-only SQLite URI: nothing done through it can change the file."""
    return "file:" + quote(os.path.abspath(path)) + "?mode=ro"


def create(conn: sqlite3.Connection) -> None:
    """Lay out an empty file (inside the caller's transaction)."""
    conn.executescript("BEGIN;" + TABLES + f"PRAGMA application_id = {APPLICATION_ID};"
                       f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")


Migration = Callable[[sqlite3.Connection], None]
def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Version 2 rows start with a flag byte; every version 1 row holds absolute values."""
    conn.execute("UPDATE sample SET vals = CAST(X'00' || vals AS BLOB)")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """Version 3 adds the chunk table; the recorder compacts the old rows into it a few blocks per interval."""
    conn.execute("CREATE TABLE chunk (tick0 INTEGER NOT NULL, stream INTEGER NOT NULL, n INTEGER NOT NULL, "
                 "data BLOB NOT NULL, PRIMARY KEY (tick0, stream))")


#: MIGRATIONS[v] upgrades a version-v file to version v+1 (run in one transaction)
MIGRATIONS: Dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(conn: sqlite3.Connection) -> int:
    """Bring a writable file up to :data:`SCHEMA_VERSION`; returns the version it had."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    version = found
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ValueError(f"no migration from recording schema version {version}")
        conn.execute("BEGIN")
        step(conn)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    return found
