"""The recording file: one SQLite database per recording, its tables and versions.

Layout (chosen by measurement, see docs/performance.md "Recording"): names are
interned once (``entity``, ``metric``, ``source``, ``layout``, ``stream``) and a
sample is one narrow row ``(tick, stream, vals)`` whose BLOB holds the values
packed by :mod:`zfsmon.store.codec`, counters as deltas from the stream's
previous row except in each stream's first row of a :data:`KEYFRAME_TICKS` block. A *stream* is what stays the same from one
sample to the next of an entity: which entity, which source, which metrics in
which order, the nominal interval and the since-boot flag. ``tick`` interns the
timestamp shared by all samples of one reading. The sample table is clustered
on ``(tick, stream)`` so appends are sequential and a time range is one range
scan, with no extra index.

Files are marked with ``PRAGMA application_id`` (so a foreign SQLite file is
refused) and versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` upgrades
an older file in place when a recorder appends to it. Readers never migrate:
they read every version listed in :data:`READABLE`.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Callable, Dict, Tuple
from urllib.parse import quote

#: "zfsm" — identifies a zfsmon recording among SQLite files.
APPLICATION_ID = 0x7A66736D
SCHEMA_VERSION = 2
#: versions a reader of this code understands (1: rows without the delta flag byte)
READABLE: Tuple[int, ...] = (1, 2)
#: a stream's first row in each block of this many tick ids stores absolute values (a keyframe), so a
#: reader can start anywhere by starting at the block's first tick
KEYFRAME_TICKS = 64
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


#: MIGRATIONS[v] upgrades a version-v file to version v+1 (run in one transaction)
MIGRATIONS: Dict[int, Migration] = {1: _v1_to_v2}


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
