"""Helpers of the bad-input tests (issue 16): run a command as a user would, check it answered in one line.

``answer`` runs ``zfsmon ARGS`` in this process (so hundreds of cases take seconds) and returns its exit code
and what it printed; ``one_line`` asserts the promise: a non-zero exit and exactly one line on standard error,
starting with ``zfsmon:``, with no control characters. ``in_mount`` runs a command in a private mount
namespace, over a small tmpfs (a full disk) or a read-only bind mount: only root can, so it goes through
``need`` (a failure in CI).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

from tests.conftest import REPO, TEST_DATA, fixtures_root, need
from tests.unit.store_data import records
from zfsmon import cli
from zfsmon.cli import build_parser as _build_parser
from zfsmon.cli import main
from zfsmon.sources import detect
from zfsmon.store import Recorder


class Answer(NamedTuple):
    code: int
    out: str
    err: List[str]


_PARSER: List[object] = []


def _cached_parser(only: Optional[str] = None):
    """The whole argument parser, built once (building it is most of a small command's time); it parses what
    the parser of ``only`` alone would."""
    if not _PARSER:
        _PARSER.append(_build_parser())
    return _PARSER[0]


def answer(argv: Sequence[str], stdin: bytes = b"") -> Answer:
    """``zfsmon ARGV`` in this process; an argparse exit is an exit code like any other."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin, cli.build_parser = sys.stdin, _cached_parser
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin, cli.build_parser = old_stdin, _build_parser
    return Answer(code, out.getvalue(), [ln for ln in err.getvalue().splitlines() if ln.strip()])


def one_line(a: Answer, *, contains: str = "") -> str:
    """The promise for refused input: a non-zero exit, one line on stderr, no terminal control characters."""
    assert a.code != 0, f"exit 0 for bad input; stderr: {a.err}"
    # what a command that ran says besides (its start, its closing count, notes) is not the refusal
    refusals = [ln for ln in a.err if not ln.startswith(("note:", "zfsmon: following", "zfsmon: recording"))
                and not re.match(r"^zfsmon: .*: \d+ intervals, ", ln)]
    assert len(refusals) == 1, f"expected one line, got {a.err}"
    line = refusals[0]
    assert line.startswith("zfsmon: "), line
    assert "Traceback" not in line and not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in line), repr(line)
    assert contains.lower() in line.lower(), f"{contains!r} not in {line!r}"
    return line


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def make_recording(path: Path, n: int = 15) -> Path:
    with Recorder(str(path), {"host": "h1", "interval": 1}) as rec:
        for batch in records(n):
            rec.write(batch)
    return path


def can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("unshare") is not None and shutil.which("mount") is not None


def in_mount(where: Path, how: str, argv: Sequence[str], cwd: Path, stdout: str = "") -> subprocess.CompletedProcess:
    """``python -m zfsmon ARGV`` with ``where`` mounted ``how``: ``full`` (a 32 KiB tmpfs, filled to the last
    byte so the first write fails with ENOSPC) or ``ro`` (``where`` bind-mounted read-only). ``stdout``: a
    file for standard output (inside the namespace)."""
    need(can_mount(), "root and unshare(1), for a full or read-only file system in a private mount namespace")
    if how == "full":
        setup = (f"mount -t tmpfs -o size=32k tmpfs {where} && "
                 f"(dd if=/dev/zero of={where}/filler bs=4k 2>/dev/null; true) && ")
    else:
        setup = f"mount --bind {where} {where} && mount -o remount,ro,bind {where} && "
    cmd = " ".join(_q(a) for a in [sys.executable, "-m", "zfsmon", *argv])
    if stdout:
        cmd += f" > {_q(stdout)}"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(["unshare", "-m", "sh", "-c", setup + cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _q(s: str) -> str:
    return "'" + str(s).replace("'", "'\\''") + "'"


def refused_in_one_line(p: subprocess.CompletedProcess, contains: str = "") -> str:
    """:func:`one_line` for a command run in a subprocess."""
    return one_line(Answer(p.returncode, p.stdout, [ln for ln in p.stderr.splitlines() if ln.strip()]),
                    contains=contains)


#: captures larger than this are cut (at a line end) for mutation: the parsers' speed is not under test here
SAMPLE_BYTES = 48 * 1024


def kind_samples(per_kind: int = 2) -> Dict[str, List[Path]]:
    """For every text kind of the registry (``zfsmon parse --list``), up to ``per_kind`` real captures of it:
    tests/data first, then the shared fixtures. A kind added to the registry is covered without a change here;
    one with no capture anywhere is missing from the result (the tests fail on that)."""
    found: Dict[str, List[Path]] = {k: [] for k in detect.KINDS}
    roots = [TEST_DATA] + ([fixtures_root()] if fixtures_root().is_dir() else [])
    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.suffix in (".md", ".py") or p.stat().st_size > 4_000_000:
                continue
            try:
                text = p.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            k = detect.detect(text)
            if k is not None and len(found[k.name]) < per_kind:
                found[k.name].append(p)
    return {k: v for k, v in found.items() if v}


def sample_text(path: Path) -> bytes:
    data = path.read_bytes()
    if len(data) <= SAMPLE_BYTES:
        return data
    return data[: data.rindex(b"\n", 0, SAMPLE_BYTES) + 1]
