"""Issue 16's standing rule: every command that reads a file or a stream, fed bad input, answers in one line.

Commands that read a text (parse, import, trace --from, attach) and commands that read a recording (info,
export, analyze, report, replay) are each fed: an empty file, binary garbage, one line longer than the bounded
read, a directory, a FIFO, an unreadable file; the texts also CRLF, UTF-16 and a tool's stderr lines among
the lines of a real capture of every kind; the recordings also truncated, zero-paged, a foreign SQLite file and
one whose write-ahead log is missing. For each: a one-line message and a non-zero exit (a text that is still
the capture, only encoded or interleaved differently, may instead read as the capture does), and the input
byte-identical afterwards. Truncation at random points and byte flips of every kind: the mutation loop,
tests/unit/test_bad_input_mutation.py. The 200 MB line in bounded memory: the last test here.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from tests.conftest import REPO
from tests.unit.bad_input import Answer, answer, kind_samples, make_recording, one_line, sample_text, sha
from zfsmon.commands._readtext import MAX_LINE

TEXT_COMMANDS: Dict[str, Callable[[str, Path], List[str]]] = {
    "parse": lambda p, out: ["parse", p],
    "import": lambda p, out: ["import", p, "--into", str(out / "i.zfsmon")],
    "trace --from": lambda p, out: ["trace", "--from", p],
    "attach": lambda p, out: ["attach", p, "--from-start", "--no-zfs", "--duration", "1s", "--interval", "1",
                              "--out", str(out / "a.zfsmon")],
}
RECORDING_COMMANDS: Dict[str, Callable[[str, Path], List[str]]] = {
    "info": lambda p, out: ["info", p],
    "export": lambda p, out: ["export", p, "--json", str(out / "o.jsonl")],
    "analyze": lambda p, out: ["analyze", p],
    "report": lambda p, out: ["report", p, "--out", str(out / "r.pdf")],
    "replay": lambda p, out: ["replay", p],
}
ALL_COMMANDS = {**TEXT_COMMANDS, **RECORDING_COMMANDS}


def _garbage(seed: str, n: int = 65536) -> bytes:
    return random.Random(seed).randbytes(n)


# ------------------------------------------------------------------------------------- inputs every command gets
def _empty(d: Path) -> Path:
    (d / "empty").write_bytes(b"")
    return d / "empty"


def _binary(d: Path) -> Path:
    (d / "garbage.bin").write_bytes(_garbage("binary"))
    return d / "garbage.bin"


def _long_line(d: Path) -> Path:
    (d / "long").write_bytes(b"9" * (MAX_LINE * 3))
    return d / "long"


def _directory(d: Path) -> Path:
    (d / "adir").mkdir()
    return d / "adir"


BAD_FILES = {"empty": _empty, "binary garbage": _binary, "a line over the bounded read": _long_line,
             "a directory": _directory}


@pytest.mark.parametrize("what", list(BAD_FILES))
@pytest.mark.parametrize("cmd", list(ALL_COMMANDS))
def test_bad_files(cmd, what, tmp_path):
    path = BAD_FILES[what](tmp_path)
    before = sha(path) if path.is_file() else None
    out = tmp_path / "out"
    out.mkdir()
    t = time.monotonic()
    one_line(answer(ALL_COMMANDS[cmd](str(path), out)))
    assert time.monotonic() - t < 20
    if before is not None:
        assert sha(path) == before
    assert not (out / "i.zfsmon").exists(), "import left a recording behind"


@pytest.mark.parametrize("cmd", list(ALL_COMMANDS))
def test_a_fifo(cmd, tmp_path):
    """A FIFO that a writer fills with garbage and closes (as `cmd <(something)` gives)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()

    def writer() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY)  # waits for the command to open it
        except OSError:
            return
        try:
            os.write(fd, _garbage("fifo", 4096).replace(b"\n", b"") + b"\nnot a capture\n")
        except OSError:
            pass
        finally:
            os.close(fd)

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    try:
        one_line(answer(ALL_COMMANDS[cmd](str(fifo), out)))
    finally:
        if w.is_alive():  # the command never opened it: release the writer
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            w.join(5)
            os.close(fd)
    assert not w.is_alive()


@pytest.mark.parametrize("cmd", list(ALL_COMMANDS))
def test_an_unreadable_file(cmd, tmp_path):
    """A file the user may not read (as root, the command runs as nobody in a child process)."""
    base = Path(tempfile.mkdtemp(prefix="zfsmon-unreadable."))  # pytest's own directories are private to root
    try:
        os.chmod(base, 0o777)
        src = base / "secret"
        src.write_bytes(sample_text(next(iter(kind_samples(1).values()))[0]) if cmd in TEXT_COMMANDS
                        else make_recording(base / "r.zfsmon").read_bytes())
        os.chmod(src, 0)
        before = sha(src)
        a = _as_nobody(ALL_COMMANDS[cmd](str(src), base))
        one_line(a, contains="permission denied")
        assert sha(src) == before
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(argv: List[str]) -> Answer:
    """``answer(argv)`` as user nobody when this is root (in a forked child), else as this user."""
    if os.geteuid() != 0:
        return answer(argv)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            a = answer(argv)
            os.write(w, repr((a.code, a.out[:1000], a.err)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    code, out, err = eval(data.decode())  # noqa: S307 (our own child's repr of three plain values)
    return Answer(code, out, err)


# ------------------------------------------------------------------------- texts: a real capture of every kind
def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _utf16(data: bytes) -> bytes:
    return data.decode("utf-8", "replace").encode("utf-16")


def _stderr_lines(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    for at, line in ((len(lines) // 3, b"cannot open 'tank': no such pool\n"),
                     (2 * len(lines) // 3, b"internal error: Invalid argument\n")):
        lines.insert(at, line)
    return b"".join(lines)


ENCODINGS = {"CRLF": _crlf, "UTF-16": _utf16, "stderr lines interleaved": _stderr_lines}
SAMPLES = kind_samples(1)


@pytest.mark.parametrize("how", list(ENCODINGS))
@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_capture_encoded_or_interleaved(kind, how, tmp_path):
    """Parse and import read it as the capture itself, or refuse it in one line; the recording readers refuse
    it in one line (it is no recording)."""
    (tmp_path / "clean").mkdir()
    clean = tmp_path / "clean" / "c.txt"  # the same name: some kinds name the pool after the file
    clean.write_bytes(sample_text(SAMPLES[kind][0]))
    f = tmp_path / "c.txt"
    f.write_bytes(ENCODINGS[how](clean.read_bytes()))
    os.utime(f, ns=(clean.stat().st_atime_ns, clean.stat().st_mtime_ns))  # kstat dumps are placed at the file's time
    before = sha(f)
    out = tmp_path / "out"
    out.mkdir()
    plain = answer(["parse", "--kind", kind, str(clean)])
    a = answer(["parse", "--kind", kind, str(f)])
    if a.code == 0:
        assert plain.code == 0 and _values(a.out) == _values(plain.out), f"{kind} {how}: read differently"
    else:
        one_line(a)
    for cmd in ("import", "trace --from"):
        b = answer(TEXT_COMMANDS[cmd](str(f), out))
        if b.code:
            one_line(b)
    for cmd in RECORDING_COMMANDS:
        one_line(answer(RECORDING_COMMANDS[cmd](str(f), out)), contains="recording")
    assert sha(f) == before


def _values(csv_text: str) -> List[tuple]:
    import csv
    return sorted((r["kind"], r["pool"], r["name"], r["metric"], r["value"], r["epoch"])
                  for r in csv.DictReader(csv_text.splitlines()))


def test_attach_reads_crlf_pgbench_output(tmp_path):
    """attach, the text command that follows a file, on a CRLF pgbench log: it reads it."""
    log = tmp_path / "soak.log"
    log.write_bytes(_crlf((REPO / "tests" / "data" / "pgbench" /
                           "pg15.18-local__loop_3x_pgbench_-T2_sleep1_tee.txt").read_bytes()))
    before = sha(log)
    a = answer(TEXT_COMMANDS["attach"](str(log), tmp_path))
    assert a.code == 0, a.err
    assert sha(log) == before


# ------------------------------------------------------------------------------------------ damaged recordings
def _truncated(rec: Path, seed: int) -> None:
    data = rec.read_bytes()
    cut = random.Random(seed).randrange(100, len(data))
    rec.write_bytes(data[:cut])


def _zero_paged(rec: Path, seed: int) -> None:
    """One page of the recording's samples zeroed (SQLite's dbstat says which pages hold them: a page of an
    empty table or an unused index is no test of whether damage is noticed)."""
    db = sqlite3.connect(str(rec))
    try:
        size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = sorted(n for (n,) in db.execute("SELECT pageno FROM dbstat WHERE name IN ('sample', 'chunk') "
                                                "AND ncell > 0"))
    finally:
        db.close()
    assert len(pages) >= 4, pages
    page = random.Random(seed).choice(pages) - 1  # dbstat counts from 1
    data = bytearray(rec.read_bytes())
    data[page * size:(page + 1) * size] = bytes(size)
    rec.write_bytes(bytes(data))


def _foreign(rec: Path, seed: int) -> None:
    rec.unlink()
    db = sqlite3.connect(str(rec))
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.commit()
    db.close()


def _missing_wal(rec: Path, seed: int) -> None:
    rec.unlink()
    code = (f"import os, sys\nsys.path.insert(0, {str(REPO)!r})\nfrom tests.unit.store_data import records\n"
            f"from zfsmon.store import Recorder\nr = Recorder({str(rec)!r}, {{'interval': '1'}})\n"
            "[r.write(b) for b in records(20)]\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    os.unlink(str(rec) + "-wal")
    os.unlink(str(rec) + "-shm")


DAMAGE = {"truncated": _truncated, "zero-paged": _zero_paged, "foreign SQLite": _foreign,
          "missing WAL": _missing_wal}
SEEDS = range(6)


@pytest.fixture(scope="module")
def whole_recording(tmp_path_factory) -> bytes:
    """A recording's bytes (200 intervals), made once: each case damages a copy."""
    return make_recording(tmp_path_factory.mktemp("whole") / "r.zfsmon", 200).read_bytes()


@pytest.mark.parametrize("cmd", list(RECORDING_COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_recordings(damage, cmd, tmp_path, whole_recording):
    """Each damage at several seeded places. A damaged page the command does not read (free space, an index it
    does not use) may go unnoticed: then it answers as for a whole file; every other time it says so in one
    line. Most must be noticed (the test fails if damage stops being detected)."""
    refused = 0
    seeds = SEEDS if damage in ("truncated", "zero-paged") else range(1)
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "r.zfsmon").write_bytes(whole_recording)
    assert answer(RECORDING_COMMANDS[cmd](str(whole / "r.zfsmon"), whole)).code == (2 if cmd == "replay" else 0)
    for seed in seeds:
        d = tmp_path / f"s{seed}"
        d.mkdir()
        rec = d / "r.zfsmon"
        rec.write_bytes(whole_recording)
        DAMAGE[damage](rec, seed)
        before = sha(rec)
        a = answer(RECORDING_COMMANDS[cmd](str(rec), d))
        if a.code != 0:
            one_line(a)
            refused += 1
        elif cmd == "export":  # unnoticed damage must not change the answer
            assert (d / "o.jsonl").read_bytes() == (whole / "o.jsonl").read_bytes(), seed
        assert sha(rec) == before
        assert sorted(p.name for p in d.iterdir() if p.name.startswith("r.zfsmon")) == ["r.zfsmon"], \
            "a reader left files beside the recording"
    if cmd != "replay":  # replay refuses any input without a terminal: nothing to learn from its count
        assert refused >= len(seeds) // 2, f"only {refused} of {len(seeds)} damaged recordings noticed"


# ---------------------------------------------------------------------------------- one 200 MB line, streamed
def test_a_200_mb_line_in_bounded_memory():
    """`zfsmon parse -` fed one 200 MB line through a pipe, under an address-space limit of what parsing a small
    capture needs plus 64 MiB: refused in one line after the bounded read (the whole line would need 200 MB;
    reading it whole peaked at 600 MB RSS)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    probe = subprocess.run([sys.executable, "-c", "import resource, runpy, sys; sys.argv = ['zfsmon', 'parse', "
                            f"{str(REPO / 'tests/data/openzfs-2.3/arcstats.before')!r}]\ntry:\n"
                            " runpy.run_module('zfsmon', run_name='__main__')\nexcept SystemExit: pass\n"
                            "print(open('/proc/self/status').read().split('VmPeak:')[1].split()[0], "
                            "file=sys.stderr)"], env=env, capture_output=True, text=True, timeout=120)
    base_kib = int(probe.stderr.strip().splitlines()[-1])
    limit = (base_kib + 64 * 1024) * 1024

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    p = subprocess.Popen([sys.executable, "-m", "zfsmon", "parse", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=limited)
    sent = 0
    block = b"7" * (1 << 20)
    try:
        while sent < 200 * (1 << 20):
            p.stdin.write(block)  # type: ignore[union-attr]
            sent += len(block)
    except BrokenPipeError:
        pass
    try:
        p.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass
    out, err = p.stdout.read(), p.stderr.read()  # type: ignore[union-attr]
    p.wait(120)
    one_line(Answer(p.returncode, out.decode(), err.decode().splitlines()), contains="longer than 1 MiB")
    assert sent < 200 * (1 << 20), "the whole line was read: it was not refused at the bound"
