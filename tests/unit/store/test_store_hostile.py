"""Recordings someone else made: crafted SQLite files and chunks that must be refused, quickly and in one line.

Each file is a real recording written by the Recorder, then altered with sqlite3 the way a hostile hand-over
would be: a table replaced by a view that never ends, a trigger, a chunk that inflates far past what it can
hold. The commands run in a child process, so a hang is a timeout of the test, not of the suite.
"""

from __future__ import annotations

import gzip as gz
import resource
import sqlite3
import subprocess
import sys
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.unit.store_data import records
from zfsmon.store import Recorder, Recording, RecordingError, arrays, codec, reader, schema

#: a view that yields nothing and never ends (UNION ALL streams: no memory grows while it runs)
_ENDLESS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT {cols} FROM c WHERE x < 0")
_COLUMNS = {"meta": "'k' AS key, 'v' AS value", "tick": "x AS id, 1.0 AS ts",
            "event": "x AS id, 1.0 AS ts, 'info' AS kind, '' AS text, '' AS source, '' AS entity, '' AS data"}
#: what a command may take to refuse a file, on a busy machine
_PATIENCE = 60


def _write(path: str, n: int) -> None:
    with Recorder(path, {"host": "h1", "interval": 1, "argv": "zfsmon record"}) as rec:
        for b in records(n):
            rec.write(b)


def _alter(path: str, *sql: str) -> None:
    db = sqlite3.connect(path)
    for s in sql:
        db.execute(s)
    db.commit()
    db.close()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _zfsmon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsmon", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=_PATIENCE, preexec_fn=_limit_memory)


def _refused_in_one_line(cp: subprocess.CompletedProcess, path: str) -> str:
    assert cp.returncode != 0, cp.stdout
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    assert path in lines[0]
    return lines[0]


@pytest.fixture
def small(tmp_path) -> str:
    path = str(tmp_path / "r.zfsmon")
    _write(path, 5)
    return path


@pytest.mark.parametrize("table", sorted(_COLUMNS))
def test_a_table_replaced_by_an_endless_view_is_refused(small, table):
    _alter(small, f"DROP TABLE {table}", f"CREATE VIEW {table} AS " + _ENDLESS.format(cols=_COLUMNS[table]))
    before = open(small, "rb").read()
    for cmd in ("info", "analyze"):
        line = _refused_in_one_line(_zfsmon(cmd, small), small)
        assert "damaged recording" in line and "view" in line
    assert open(small, "rb").read() == before


@pytest.mark.parametrize("extra", [
    "CREATE TRIGGER t AFTER INSERT ON tick BEGIN DELETE FROM sample; END",
    "CREATE VIEW v AS " + _ENDLESS.format(cols="x"),
    "CREATE VIRTUAL TABLE tick2 USING rtree(id, a, b)"])
def test_a_trigger_or_view_anywhere_is_refused_by_reader_and_recorder(small, extra):
    _alter(small, extra)
    before = open(small, "rb").read()
    with pytest.raises(RecordingError, match="damaged recording: .*(trigger|view|virtual table)"):
        Recording.open(small)
    with pytest.raises(RecordingError, match="refusing to write into it"):
        Recorder(small)
    assert open(small, "rb").read() == before


def test_a_recording_is_read_with_its_schema_untrusted_and_no_writes(small):
    with Recording.open(small) as r:
        assert r._db.execute("PRAGMA trusted_schema").fetchone()[0] == 0
        assert r._db.execute("PRAGMA query_only").fetchone()[0] == 1
        schema.check_objects(r._db, r.version)  # a recording as the Recorder writes it passes


# --- chunks that inflate past what they can hold ------------------------------------------------------------------

#: bytes a bomb chunk inflates to: far more than 256 samples of a few metrics can take
_BOMB = 16 << 20


@pytest.fixture
def chunked(tmp_path) -> str:
    """A recording whose first block is compacted into chunks (one per stream)."""
    path = str(tmp_path / "c.zfsmon")
    _write(path, schema.CHUNK_TICKS + 3)
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM chunk").fetchone()[0] > 0
    db.close()
    return path


def _bomb_first_chunk(path: str, body: bytes) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE chunk SET data = ? WHERE rowid = (SELECT min(rowid) FROM chunk)",
               (bytes((codec.CHUNK_ZLIB,)) + zlib.compress(body, 9),))
    db.commit()
    db.close()


def _peak_while(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("read", ["samples", "blocks", "arrays"])
def test_a_zlib_bomb_chunk_is_damage_without_inflating_it(chunked, read):
    """A valid chunk header followed by 16 MiB of zeros: 16 KiB in the file. Inflating stops at what 256 samples
    of the stream's metrics can take, and the chunk is damage."""
    with Recording.open(chunked) as r:
        sid, width = next((i, len(s.metrics)) for i, s in r.streams.items())
    head = codec.pack([1, width, 0])
    body = bytes((len(head),)) + head + b"\0" * _BOMB
    _bomb_first_chunk(chunked, body)
    before = open(chunked, "rb").read()

    def run() -> None:
        with Recording.open(chunked) as r:
            with pytest.raises(RecordingError, match="damaged recording: damaged chunk: it inflates past"):
                if read == "samples":
                    list(r.samples())
                elif read == "blocks":
                    list(r.blocks())
                else:
                    list(arrays.blocks(r))

    assert _peak_while(run) < _BOMB // 8
    assert open(chunked, "rb").read() == before


def test_export_of_a_zlib_bomb_is_one_line(chunked, tmp_path):
    _bomb_first_chunk(chunked, b"\0" * _BOMB)
    cp = _zfsmon("export", "--csv", str(tmp_path / "out"), chunked)
    line = _refused_in_one_line(cp, chunked)
    assert "damaged recording" in line


def test_a_varint_longer_than_any_number_is_damage_at_once():
    """A head row of continuation bytes made unpack build one ever-growing integer (quadratic time in its length:
    a 1 MB row ran for hours); no stored number is longer than 20 bytes."""
    with pytest.raises(ValueError, match="longer than any stored number"):
        codec.unpack(b"\xff" * 40 + b"\x01")
    with pytest.raises(ValueError, match="beyond what a recording holds"):
        codec.pack([2 ** 200])
    assert codec.normalise([2 ** 200, -(2 ** 136), 2 ** 64 - 1]) == [float(2 ** 200), float(-(2 ** 136)), 2 ** 64 - 1]


def test_gzipped_recordings_unpack_bounded_and_damage_is_one_line(tmp_path) -> None:
    """A gzipped recording is read through a private unpacked copy; a gzip bomb, a truncated gzip file and a
    gzipped non-recording are each refused in one line, leaving no copy behind (and the file unchanged)."""
    before = set(Path(tempfile.gettempdir()).glob("zfsmon-read.*"))
    path = str(tmp_path / "r.zfsmon")
    _write(path, 20)
    packed = tmp_path / "r.zfsmon.gz"
    packed.write_bytes(gz.compress(Path(path).read_bytes()))
    with Recording.open(str(packed)) as rec, Recording.open(path) as plain:
        assert [s.ts for s in rec.samples()] == [s.ts for s in plain.samples()]
    bomb = tmp_path / "bomb.zfsmon.gz"
    bomb.write_bytes(gz.compress(b"SQLite format 3\x00" + bytes(2 * reader.GUNZIP_SLACK)))
    with pytest.raises(RecordingError, match=r"bomb.zfsmon.gz: a gzip file that unpacks to more than \d+ MiB"):
        Recording.open(str(bomb))
    cut = tmp_path / "cut.zfsmon.gz"
    cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    with pytest.raises(RecordingError, match="cut.zfsmon.gz: a damaged gzip file"):
        Recording.open(str(cut))
    text = tmp_path / "notes.gz"
    text.write_bytes(gz.compress(b"not a recording\n" * 10))
    with pytest.raises(RecordingError, match=r"notes.gz: not a zfsmon recording \(not an SQLite file, once unpacked\)"):
        Recording.open(str(text))
    assert set(Path(tempfile.gettempdir()).glob("zfsmon-read.*")) == before
