"""The docs give every benchmark number with the command that reproduces it: those commands must still run.

Each ``bench/NAME.py ...`` command quoted in docs/*.md names a script under bench/ and only options that script's
``--help`` lists (a renamed or dropped option would leave the doc's command failing). And the status table at the
top of docs/performance.md names sections that are headings of that document.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: a quoted command: the script, then its words up to the end of the command (a quote, a pipe, a comment, ...)
#: (a path inside another folder that ends in "bench", zfsmon/sources/pgbench/log.py, is not one)
_COMMAND = re.compile(r"(?<!\w)bench/([a-z_]+)\.py((?:[ \t]+[^\s`'|;#&]+)*)")
#: a long option's name, in a doc's command and in a script's --help alike
_OPTION = re.compile(r"--[a-z][a-z0-9-]*")


def doc_commands(text: str) -> List[Tuple[str, List[str]]]:
    """``(script, options)`` of each bench command in a markdown text (``\\``-continued lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for m in _COMMAND.finditer(joined):
        words = m.group(2).split()
        out.append((m.group(1), [o.group(0) for o in map(_OPTION.match, words) if o]))
    return out


def test_doc_commands_are_read_with_their_continued_lines():
    text = ("run `python3 bench/bench_top.py --refresh-only --refreshes 120` then\n"
            "    python3 bench/bench_overhead.py --arm record --switch 3 \\\n"
            "        --select-only --pool zsw35 --port 5585\n"
            "(bench/bench_top.py, the refresh) and 'cd x && bench/bench_collect.py --seconds 9' | tee\n"
            "the parser (`zfsmon/sources/pgbench/log.py`), ./bench/bench_store.py\n")
    assert doc_commands(text) == [
        ("bench_top", ["--refresh-only", "--refreshes"]),
        ("bench_overhead", ["--arm", "--switch", "--select-only", "--pool", "--port"]),
        ("bench_top", []),
        ("bench_collect", ["--seconds"]),
        ("bench_store", []),
    ]


def _all_commands() -> Dict[str, List[Tuple[str, str]]]:
    """script -> [(doc, option)] over every doc."""
    by_script: Dict[str, List[Tuple[str, str]]] = {}
    for doc in sorted(DOCS.glob("*.md")):
        for script, options in doc_commands(doc.read_text()):
            by_script.setdefault(script, []).extend((doc.name, o) for o in options)
    return by_script


COMMANDS = _all_commands()


def test_the_docs_quote_bench_commands():
    assert {"bench_overhead", "bench_top", "bench_soak", "bench_store", "bench_collect"} <= set(COMMANDS)


@pytest.mark.parametrize("script", sorted(COMMANDS))
def test_a_documented_bench_command_names_a_script_and_options_it_has(script):
    path = ROOT / "bench" / f"{script}.py"
    assert path.is_file(), f"docs quote bench/{script}.py, which does not exist"
    cp = subprocess.run([sys.executable, str(path), "--help"], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr
    known = set(_OPTION.findall(cp.stdout))
    unknown = sorted({f"{doc}: {opt}" for doc, opt in COMMANDS[script] if opt not in known})
    assert not unknown, f"bench/{script}.py has no such option: {unknown}"


def test_the_performance_status_table_names_sections_of_the_document():
    text = (DOCS / "performance.md").read_text()
    headings = {ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("## ")}
    rows = [ln for ln in text.splitlines() if re.match(r"\| \d\. ", ln)]
    assert len(rows) == 6, "one row per target of issue 15"
    named = {part.strip() for row in rows for part in row.rstrip(" |").rsplit("|", 1)[1].split(";")}
    assert named and named <= headings, f"not a section: {sorted(named - headings)}"
