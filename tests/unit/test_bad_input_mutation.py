"""The mutation loop of issue 16's standing rule: every text kind, several hundred damaged captures each.

For each kind in the registry (``zfsmon parse --list``; a kind added later is covered without a change here,
and one without a real capture in tests/data or the shared fixtures fails the test), real captures are damaged
by a seeded fuzzer: cut at a random point, random bytes flipped, inserted or deleted, lines repeated, dropped or
swapped, a tool's stderr line spliced in, a number made huge, negative, ``nan`` or ``1e308``, NUL bytes, CRLF.
Each damaged text goes through ``zfsmon parse`` (detected, and with ``--kind`` so the kind's own parser reads
it whatever detection says) and every tenth through ``zfsmon import`` and then ``info`` and ``export`` of the
recording made. Every answer is either a success or one line and a non-zero exit; no case may take more than
:data:`CASE_SECONDS`; the input file is byte-identical afterwards.

Seeded (``ZFSMON_FUZZ_SEED`` changes the seed, ``ZFSMON_FUZZ_CASES`` the cases per kind), so a failure
reproduces. Time, measured on the project's 2-core CI machine while other work ran: 300 cases per kind over the
18 kinds registered on 2026-11-23 (5,400 parse runs, 540 imports) take 41 s (printed at the end). The whole
loop is not timed: on a busy machine it took 90 s (load average 8), which says nothing about the code; a hang
still fails, as one case past :data:`CASE_SECONDS`.
"""

from __future__ import annotations

import os
import random
import re
import time
from typing import Callable, List, Tuple

from tests.unit.bad_input import answer, kind_samples, one_line, sample_text, sha
from zfsmon.sources import detect

SEED = int(os.environ.get("ZFSMON_FUZZ_SEED", "16"))
CASES = int(os.environ.get("ZFSMON_FUZZ_CASES", "300"))
#: no single damaged capture may take longer (a hang shows as this, not as a stuck CI job)
CASE_SECONDS = 5.0

STRAY = [b"cannot open 'tank': no such pool\n", b"internal error: Invalid argument\n",
         b"bash: zpool: command not found\n", b"pgbench: error: connection to server failed\n"]
NUMBER = re.compile(rb"\d+")
HUGE = [b"9" * 4301, b"-1", b"nan", b"1e308", b"inf", b"0x10", b"18446744073709551616", b"-0", b"1" * 40]


def _lines(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True) or [data]


def _truncate(r: random.Random, d: bytes) -> bytes:
    return d[: r.randrange(len(d) + 1)]


def _flip(r: random.Random, d: bytes) -> bytes:
    b = bytearray(d)
    for _ in range(r.randint(1, 8)):
        if b:
            b[r.randrange(len(b))] ^= 1 << r.randrange(8)
    return bytes(b)


def _insert(r: random.Random, d: bytes) -> bytes:
    at = r.randrange(len(d) + 1)
    return d[:at] + r.randbytes(r.randint(1, 40)) + d[at:]


def _delete(r: random.Random, d: bytes) -> bytes:
    at = r.randrange(len(d) + 1)
    return d[:at] + d[at + r.randint(1, 200):]


def _repeat_line(r: random.Random, d: bytes) -> bytes:
    ls = _lines(d)
    i = r.randrange(len(ls))
    return b"".join(ls[: i + 1] + [ls[i]] * r.randint(1, 3) + ls[i + 1:])


def _drop_line(r: random.Random, d: bytes) -> bytes:
    ls = _lines(d)
    del ls[r.randrange(len(ls))]
    return b"".join(ls)


def _swap_lines(r: random.Random, d: bytes) -> bytes:
    ls = _lines(d)
    i, j = r.randrange(len(ls)), r.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return b"".join(ls)


def _stray(r: random.Random, d: bytes) -> bytes:
    ls = _lines(d)
    ls.insert(r.randrange(len(ls) + 1), r.choice(STRAY))
    return b"".join(ls)


def _number(r: random.Random, d: bytes) -> bytes:
    ms = list(NUMBER.finditer(d))
    if not ms:
        return _flip(r, d)
    m = r.choice(ms)
    return d[: m.start()] + r.choice(HUGE) + d[m.end():]


def _nul(r: random.Random, d: bytes) -> bytes:
    at = r.randrange(len(d) + 1)
    return d[:at] + b"\x00" * r.randint(1, 4) + d[at:]


def _crlf(r: random.Random, d: bytes) -> bytes:
    return _truncate(r, d.replace(b"\n", b"\r\n"))


MUTATIONS: List[Callable[[random.Random, bytes], bytes]] = [
    _truncate, _flip, _insert, _delete, _repeat_line, _drop_line, _swap_lines, _stray, _number, _number, _nul,
    _crlf]


def _check(argv: List[str], where: str) -> Tuple[float, str]:
    t = time.monotonic()
    a = answer(argv)
    took = time.monotonic() - t
    if a.code != 0:
        try:
            one_line(a)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {' '.join(argv)}: {exc}") from None
    assert took < CASE_SECONDS, f"{where}: {' '.join(argv)} took {took:.1f} s"
    return took, a.err[-1] if a.err else ""


def test_every_kind_has_a_real_capture():
    samples = kind_samples()
    missing = sorted(set(detect.KINDS) - set(samples))
    assert not missing, (f"no real capture of kind(s) {missing} in tests/data or the shared fixtures: the mutation "
                         "loop cannot cover them; add one (with its provenance)")


def test_mutation_loop(tmp_path):
    """Seeded fuzzer over every kind; see the module's text for what, and for the time it takes."""
    started = time.monotonic()
    samples = kind_samples()
    assert samples, "no captures found at all"
    slowest = (0.0, "")
    cases = 0
    for kind, paths in samples.items():
        r = random.Random(f"{SEED}:{kind}")
        originals = [sample_text(p) for p in paths]
        for i in range(CASES):
            data = originals[i % len(originals)]
            for _ in range(r.choice((1, 1, 1, 2, 3))):
                data = r.choice(MUTATIONS)(r, data) if data else data
            f = tmp_path / f"{kind}-{i}.txt"
            f.write_bytes(data)
            before = sha(f)
            where = f"kind {kind}, case {i} (seed {SEED}; from {paths[i % len(paths)].name})"
            argv = ["parse", str(f)] if i % 2 else ["parse", "--kind", kind, str(f)]
            took, _ = _check(argv, where)
            slowest = max(slowest, (took, where))
            if i % 10 == 0:
                into = tmp_path / f"{kind}-{i}.zfsmon"
                _check(["import", "--kind", kind, "--interval", "5", str(f), "--into", str(into)], where)
                if into.exists():
                    for cmd in (["info", str(into)], ["export", str(into), "--json", str(tmp_path / "o.jsonl")]):
                        assert answer(cmd).code == 0, f"{where}: an imported recording does not read back: {cmd}"
            assert sha(f) == before, f"{where}: the input file changed"
            f.unlink()
            cases += 1
    took = time.monotonic() - started
    print(f"mutation loop: {cases} cases over {len(samples)} kinds in {took:.1f} s; slowest {slowest[0]:.2f} s "
          f"({slowest[1]})")
