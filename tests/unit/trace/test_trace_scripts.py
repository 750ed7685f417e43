"""Every D and bpftrace script: well-formed, documented, and printing exactly what the protocol parser reads.

No D compiler runs here (illumos kernels only; Oracle's Linux DTrace is optional and not installed), so
the D scripts are checked by structure: balanced clauses, probes declared in their header, and every
printf/printa format instantiated and fed to the real parser. The bpftrace scripts get the same checks
here and a real ``bpftrace -d`` compile in tests/bpftrace/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.conftest import REPO, TEST_DATA
from zfsmon.model import ParseError, Sample
from zfsmon.trace import catalog
from zfsmon.trace.protocol import MAPS, TOTAL_MAPS, TraceParser, parse_text

SCRIPTS = sorted((REPO / "dtrace").glob("*.d")) + sorted((REPO / "bpftrace").glob("*.bt"))
IDS = [f"{p.parent.name}/{p.name}" for p in SCRIPTS]
SECTIONS = ("PURPOSE", "USAGE", "PLATFORM", "PROBES", "CONSTANTS", "OVERHEAD", "OUTPUT")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _header(text: str) -> str:
    m = re.search(r"/\*(.*?)\*/", text, re.S)
    assert m, "no header comment"
    return m.group(1)


def _code(text: str) -> str:
    """Comments removed, string literals emptied: what brace counting and clause splitting look at."""
    return _STRING.sub('""', _COMMENT.sub(" ", text))


def _clauses(text: str) -> List[Tuple[List[str], str, str]]:
    """(probe descriptions, predicate, body) of every top-level clause."""
    code = "\n".join(ln for ln in _code(text).splitlines()
                     if not ln.startswith(("#pragma", "#!", "#define", "inline ")))
    out = []
    i, depth, start = 0, 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                head, start = code[start:i].strip(), i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            assert depth >= 0, "unbalanced }"
            if depth == 0:
                probes_text, _, pred = head.partition("/")
                probes = [p.strip() for p in probes_text.split(",") if p.strip()]
                out.append((probes, pred.rstrip("/").strip(), code[start:i]))
                start = i + 1
    assert depth == 0 and not code[start:].strip(), "text after the last clause or unclosed {"
    return out


def _formats(text: str, func: str) -> List[str]:
    return [m.group(1) for m in re.finditer(func + r'\(\s*"((?:[^"\\]|\\.)*)"', text)]


def _instantiate(fmt: str) -> str:
    """A format filled with plausible values: every conversion becomes 7 (a valid number, token and bucket)."""
    return re.sub(r"%@d|%0?\d*(?:ll|l)?[dsu]", "7", fmt).replace("\\n", "\n")


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_header_documents_the_script(path: Path):
    head = _header(path.read_text())
    for sec in SECTIONS:
        assert re.search(rf"^\s*\*\s+{sec}\b", head, re.M), f"header lacks {sec}"
    example = path.parent / f"{path.stem}_example.txt"
    assert example.name in head and example.is_file()
    assert f"{path.name} INTERVAL_S" in head  # the usage line


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_balanced_and_clauses_use_declared_probes(path: Path):
    text = path.read_text()
    code = _code(text)
    for a, b in ("{}", "()", "[]"):
        assert code.count(a) == code.count(b), f"unbalanced {a}{b}"
    head = _header(text)
    probes_doc = head[head.index("PROBES"):head.index("OVERHEAD")]
    clauses = _clauses(text)
    assert len(clauses) >= 3
    for probes, _pred, body in clauses:
        assert probes and body.strip()
        for probe in probes:
            if path.suffix == ".d":
                assert re.fullmatch(r"[\w$-]*:[\w$-]*:[\w$-]*:[\w$-]*", probe), probe
                provider, _mod, func, name = probe.split(":")
                key = func or name
                assert provider in probes_doc and key in probes_doc, f"{probe} not declared in PROBES"
            else:
                assert re.fullmatch(r"BEGIN|END|interval:s:\$1|(tracepoint:\w+|k(ret)?probe|u(ret)?probe:libc):\w+",
                                    probe), probe
                if probe not in ("BEGIN", "END", "interval:s:$1"):
                    assert probe.rsplit(":", 1)[1] in probes_doc, f"{probe} not declared in PROBES"


def _assignments(code: str) -> List[Tuple[str, List[str]]]:
    """(map name, top-level keys) of every ``@name[...] =`` in the code (keys may hold brackets themselves)."""
    out = []
    for m in re.finditer(r"@(\w+)\[", code):
        depth, i, keys, cur = 1, m.end(), [], ""
        while i < len(code) and depth:
            ch = code[i]
            depth += ch in "[(" and 1 or 0
            depth -= ch in "])" and 1 or 0
            if depth == 1 and ch == ",":
                keys.append(cur)
                cur = ""
            elif depth:
                cur += ch
            i += 1
        if re.match(r"\s*=(?!=)", code[i:]):
            out.append((m.group(1), keys + [cur]))
    return out


def _protocol_maps(text: str) -> Dict[str, int]:
    """Map name -> key count of every protocol map the script fills."""
    out: Dict[str, int] = {}
    for name, keys in _assignments(_code(text)):
        if name in MAPS:
            assert out.setdefault(name, len(keys)) == len(keys), f"@{name} filled with different key counts"
    return out


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_maps_match_the_protocol_and_are_printed_and_cleared(path: Path):
    text = path.read_text()
    maps = _protocol_maps(text)
    assert maps, "fills no protocol map"
    for name, n in maps.items():
        assert n == MAPS[name], f"@{name} has {n} keys, the protocol says {MAPS[name]}"
    clauses = _clauses(text)
    tick = [b for p, _, b in clauses if any(x.startswith(("interval:", "profile:::tick")) for x in p)]
    end = [b for p, _, b in clauses if p in (["END"], ["dtrace:::END"])]
    assert len(tick) == 1 and len(end) == 1
    clear = "trunc" if path.suffix == ".d" else "clear"
    for name in maps:
        if path.suffix == ".d":
            assert re.search(rf'printa\("@{name}\[[^"]*\]: %@d\\n", @{name}\)', text), f"@{name} format"
            assert f'printa("", @{name})' in tick[0], f"@{name} not printed"
        else:
            assert f"print(@{name})" in tick[0], f"@{name} not printed"
        assert f"{clear}(@{name})" in end[0], f"@{name} not cleared at the end"
        if path.suffix == ".d" and name in TOTAL_MAPS:
            # D prints totals (header totals=1): DTrace for Linux clears a map by generation, and the events
            # between its snapshot and the clear were lost (zil.d's @count: 11,024 of 21,274 commits)
            assert f"{clear}(@{name})" not in tick[0], f"@{name} is a total: not cleared per interval"
            assert "totals=1" in next(f for f in _formats(text, "printf") if f.startswith("zfsmon-trace"))
        else:
            assert f"{clear}(@{name})" in tick[0], f"@{name} not cleared"
    if path.suffix == ".bt":  # bpftrace dumps every non-empty map at exit: END must clear them all
        for name in set(re.findall(r"@(\w+)\[", _code(text))):
            assert f"clear(@{name})" in end[0], f"@{name} would be dumped at exit"


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_every_format_is_read_by_the_parser(path: Path):
    text = path.read_text()
    printfs = _formats(text, "printf")
    headers = [f for f in printfs if f.startswith("zfsmon-trace")]
    assert len(headers) == 1
    # a variant (arc_kprobe.bt, arc_linux.d: catalog.variant_specs) prints its trace's name: the same protocol under
    # the same name
    name = next((v.name for v in catalog.variant_specs() if any(REPO / f == path for f in v.files.values())),
                path.stem)
    assert re.match(rf"zfsmon-trace 1 {name} entity=(devt|fd|name) interval=%d", headers[0])
    maps = _protocol_maps(text)
    map_lines = _formats(text, "printa") if path.suffix == ".d" else [
        "@{}[{}]: %d\\n".format(name, ", ".join(["%d"] * n)) for name, n in maps.items()]
    intervals = [f for f in printfs if f.startswith("interval ")]
    assert len(intervals) == 1 and len(map_lines) == len(maps)
    other = [f for f in printfs if f not in headers + intervals]
    assert "end\\n" in other
    lines = [_instantiate(headers[0]), _instantiate(intervals[0])] + [_instantiate(f) for f in map_lines]
    lines += ["end"] + [_instantiate(f) for f in other if f != "end\\n"]
    parser = TraceParser(path.name)
    recs = []
    for line in "".join(x if x.endswith("\n") else x + "\n" for x in lines).splitlines():
        recs += parser.feed(line, 0.0)  # a ParseError here is a format the parser does not read
    assert any(isinstance(r, Sample) for r in recs)
    assert parser.script == name


_BUCKET = ["$p = $v | ($v >> 1);", "$p = $p | ($p >> 2);", "$p = $p | ($p >> 4);", "$p = $p | ($p >> 8);",
           "$p = $p | ($p >> 16);", "$p = $p | ($p >> 32);", "$p = $p - ($p >> 1);", "$q = $p >> 2;",
           "$b = $q > 0 ? $p + ($v - $p) / $q * $q : $v;"]


@pytest.mark.parametrize("path", [p for p in SCRIPTS if "@lat[" in p.read_text()],
                         ids=[i for p, i in zip(SCRIPTS, IDS) if "@lat[" in p.read_text()])
def test_bucket_arithmetic_is_the_one_the_parser_assumes(path: Path):
    """zfsmon.trace.histogram.bucket_of is this arithmetic; D writes this-> where bpftrace writes $."""
    lines = [ln.strip().replace("this->", "$") for ln in path.read_text().splitlines()]
    starts = [i for i, ln in enumerate(lines) if ln == _BUCKET[0]]
    assert starts
    for i in starts:
        assert lines[i:i + len(_BUCKET)] == _BUCKET


def _example_block(path: Path) -> List[str]:
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(("# bpftrace ", "# dtrace ")))
    block = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        block.append(ln)
    return block


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_example_output_is_the_recorded_one_and_parses(path: Path):
    block = _example_block(path.parent / f"{path.stem}_example.txt")
    data = TEST_DATA / "trace" / f"{path.stem}.{path.suffix[1:]}.out"
    recorded = [ln for ln in data.read_text().splitlines() if ln.strip()]
    if "illustration" in (path.parent / f"{path.stem}_example.txt").read_text():
        assert block == recorded  # the example and the parser test read the same lines
    else:
        assert block[0] == recorded[0] and set(block) <= set(recorded)  # an excerpt of a real capture
    assert any(isinstance(r, Sample) for r in parse_text("\n".join(block)))


def test_catalog_names_existing_scripts_and_every_script_is_in_it():
    listed = {REPO / f for spec in [*catalog.SCRIPTS.values(), *catalog.variant_specs()] for f in spec.files.values()}
    assert all(p.is_file() for p in listed)
    assert set(SCRIPTS) == listed


def test_instantiate_rejects_what_the_parser_rejects():
    """The format check above can fail: a format with a field missing is a ParseError."""
    with pytest.raises(ParseError):
        parse_text("zfsmon-trace 1 x\n" + _instantiate("interval %s\\n"))


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.suffix == ".bt"], ids=[i for p, i in zip(SCRIPTS, IDS)
                                                                               if p.suffix == ".bt"])
def test_bpftrace_slow_lines_print_64_bit_values(path: Path):
    """bpftrace 0.17's %d prints the low 32 bits: a 4.18 s write in the OpenZFS guest came out as
    -795914866 ns and zfsmon rightly refused the line. Latency, bytes, sectors and txg numbers need %llu/%lld."""
    for fmt in _formats(path.read_text(), "printf"):
        if fmt.startswith("slow "):
            fields = fmt.split()
            assert "%d" not in fields[3:6], f"{path.name}: {fmt}"
