"""Kernel constants in the D and bpftrace scripts: a number is written only with where it comes from.

Issue 17: dtrace/arc.d once counted metadata with ``inline uint64_t ARC_METADATA = 1 << 15``, right on
illumos until 2019 and silently wrong after ("8727 Native data and metadata encryption" moved
ARC_FLAG_BUFC_METADATA to 1 << 17; 1 << 15 became ARC_FLAG_PROTECTED), and bpftrace/arc.bt tested
``hdr_type == 1``, which OpenZFS 2.1 means as data and 2.2 as metadata. So:

- a numeric flag, enum, type or offset constant in a script (``1 << N``, a mask ``& N``, an equality
  with a literal, a D ``inline`` or a ``#define`` with a number, an offset in a ``uptr()`` read, a
  literal applied to a probe field) needs a provenance comment beside it, ``provenance: <owner/repo>
  <path> <revision>: NAME = VALUE``, whose VALUE is the number written;
- in D the kernel's own names are used instead where its CTF has them; D shows a kernel enumerator
  only as the right operand of a comparison with a value of its enum type (Dynamic Tracing Guide,
  "Enumerations"), which is checked here because the compile check declares them as global names;
- every script's header says in a CONSTANTS section what was checked against which source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Set, Tuple

import pytest

from tests.conftest import REPO
from zfsmon.errors import UserError
from zfsmon.trace import catalog

SCRIPTS = sorted((REPO / "dtrace").glob("*.d")) + sorted((REPO / "bpftrace").glob("*.bt"))
IDS = [f"{p.parent.name}/{p.name}" for p in SCRIPTS]
PRELUDE = REPO / "tests" / "data" / "dtrace" / "illumos-types.d"

_LIT = r"(?:0[xX][0-9a-fA-F]+|\d+)"
_PROVENANCE = re.compile(
    r"provenance:\s*(?P<repo>[\w.-]+/[\w.-]+)\s+(?P<path>[\w.+-]*/[\w./+-]+)\s+"
    r"(?P<rev>[\w.,@+-]*\d[\w.,@+-]*):\s*(?P<defs>.*?)\s*(?:\*/|$)")
_DEF = re.compile(r"([A-Za-z_]\w*(?:\([^)]*\))?)\s*=\s*(" + _LIT + r"(?:\s*<<\s*\d+)?)")


@dataclass
class Line:
    code: str  # strings emptied, comments removed
    comment: str  # the comment text on this line
    text: str


def split_lines(text: str) -> List[Line]:
    """Each line's code and comment parts (block comments may span lines)."""
    out: List[Line] = []
    in_block = False
    for raw in text.splitlines():
        code, comment, i = "", "", 0
        while i < len(raw):
            if in_block:
                end = raw.find("*/", i)
                comment += raw[i:] if end < 0 else raw[i:end]
                i = len(raw) if end < 0 else end + 2
                in_block = end < 0
            elif raw.startswith("/*", i):
                in_block, i = True, i + 2
            elif raw.startswith("//", i):
                comment += raw[i + 2:]
                break
            elif raw[i] == '"':
                j = i + 1
                while j < len(raw) and raw[j] != '"':
                    j += 2 if raw[j] == "\\" else 1
                code += '""'
                i = j + 1
            else:
                code += raw[i]
                i += 1
        out.append(Line(code, comment, raw))
    return out


def _value(expr: str) -> Optional[int]:
    """The value of a constant expression of literals, ``<<``, ``|`` and parentheses, else None."""
    expr = expr.strip().rstrip(",;")
    if not expr or not re.fullmatch(r"[\s()0-9a-fA-FxX<|+]+", expr):
        return None
    try:
        return int(eval(expr, {"__builtins__": {}}))  # noqa: S307 - digits and operators only, checked above
    except (SyntaxError, ValueError, TypeError):
        return None


def _literals(code: str, after_ops: bool = False) -> Set[int]:
    """Numeric literals of an expression (other than 0); ``after_ops``: only those after ``+`` or ``*``."""
    pat = r"[+*]\s*(" + _LIT + r")\b" if after_ops else r"(?<![\w.$])(" + _LIT + r")\b"
    return {int(m, 0) for m in re.findall(pat, code)} - {0}


def constants(line: Line, in_enum: bool) -> Set[int]:
    """The numbers this line writes that stand for a kernel constant (empty if none)."""
    code = line.code
    found: Set[int] = set()
    zero = False  # an equality with 0 is a constant too (IOCB_CMD_PREAD is 0); a mask or a shift by 0 is not
    m = re.match(r"\s*(?:inline\b[^=]*=|#define\s+\w+)\s*(.*?);?\s*$", code)
    if m:  # a named constant: its value
        v = _value(m.group(1))
        found |= {v} if v is not None else _literals(m.group(1))
        return found
    if in_enum:
        m = re.match(r"\s*\w+\s*=\s*(.*?),?\s*$", code)
        if m:
            v = _value(m.group(1))
            found |= {v} if v is not None else _literals(m.group(1))
            return found
    for a, b in re.findall(r"(?<![\w)$])(" + _LIT + r")\s*<<\s*(\d+)", code):
        found.add(int(a, 0) << int(b))
    for m in re.finditer(r"(?<![&|])[&|^](?![&|=])\s*(" + _LIT + r")\b", code):
        found.add(int(m.group(1), 0))
    for m in re.finditer(r"(?<![\w$])(" + _LIT + r")\s*[&|^](?![&|])", code):
        found.add(int(m.group(1), 0))
    for m in re.finditer(r"(\S+)\s*(==|!=)\s*(-?" + _LIT + r")\b", code):
        left, lit = m.group(1), int(m.group(3), 0)
        if re.fullmatch(r"\(*\$\d+", left) or (lit == 0 and left.endswith(")")):
            continue  # a positional argument, or a function's result tested for zero
        found.add(lit)
        zero = zero or lit == 0
    for m in re.finditer(r"->\w+\s*(?:<=|>=|<|>|[*/%])\s*(" + _LIT + r")\b", code):
        found.add(int(m.group(1), 0))
    for m in re.finditer(r"(?<![\w$])(" + _LIT + r")\s*\*\s*args\b", code):
        found.add(int(m.group(1), 0))
    if re.search(r"\b[uk]ptr\(", code):
        found |= _literals(code, after_ops=True)
    return {v for v in found if v != 0 or in_enum or zero}


def provenance_near(lines: List[Line], i: int, start: int) -> List[Tuple[str, int]]:
    """(name, value) pairs of the provenance comments on line ``i`` and in the comment block just above
    line ``start`` (the line itself, or the first of its run of ``#define`` lines, or its enum's start)."""
    text = [lines[i].comment]
    j = start
    while j > 0 and lines[j - 1].text.lstrip().startswith("#define") and not lines[j - 1].comment:
        j -= 1
    while j > 0 and not lines[j - 1].code.strip() and lines[j - 1].comment.strip():
        j -= 1
        text.append(lines[j].comment)
    pairs: List[Tuple[str, int]] = []
    for chunk in text:
        for m in _PROVENANCE.finditer(chunk):
            for name, val in _DEF.findall(m.group("defs")):
                v = _value(val)
                if v is not None:
                    pairs.append((name, v))
    return pairs


def unsourced(text: str) -> Iterator[Tuple[int, str, Set[int]]]:
    """(line number, line, numbers) of every constant written without a provenance that gives its value."""
    lines = split_lines(text)
    enum_start: Optional[int] = None
    for i, line in enumerate(lines):
        if re.search(r"\benum\b[^;]*\{", line.code):
            enum_start = i
        in_enum = enum_start is not None and i > enum_start
        values = constants(line, in_enum)
        if values:
            start = enum_start if in_enum and enum_start is not None else i
            pairs = provenance_near(lines, i, start)
            known = {v for _n, v in pairs}
            name = re.match(r"\s*(\w+)\s*=", line.code)
            if in_enum and name:  # an enumerator must be named in the provenance, with its value
                known = {v for n, v in pairs if n == name.group(1)}
            missing = values - known
            if missing:
                yield i + 1, line.text, missing
        if enum_start is not None and "}" in line.code and i > enum_start:
            enum_start = None


# --- the rule itself can fail ------------------------------------------------------------------------

BARE = "inline uint64_t ARC_METADATA = 1 << 15;\n"
SOURCED = ("/* provenance: illumos/illumos-gate usr/src/uts/common/fs/zfs/sys/arc.h 356e1b4941ba: "
           "ARC_FLAG_PROTECTED = 1 << 15 */\n" + BARE)


def test_a_bare_flag_constant_is_refused():
    assert list(unsourced(BARE)) == [(1, BARE.rstrip("\n"), {1 << 15})]


def test_the_same_constant_with_its_provenance_is_accepted():
    assert list(unsourced(SOURCED)) == []
    same_line = BARE.rstrip("\n") + " /* provenance: openzfs/zfs include/sys/arc.h zfs-2.3.9: ARC_FLAG_PROTECTED = 1 << 15 */"
    assert list(unsourced(same_line)) == []


@pytest.mark.parametrize("text", [
    # a provenance whose value is not the number written (the drift this test exists for)
    "/* provenance: openzfs/zfs include/sys/arc.h zfs-2.3.9: ARC_FLAG_BUFC_METADATA = 1 << 17 */\n" + BARE,
    # no revision, no repository, no path
    "/* provenance: openzfs/zfs include/sys/arc.h: ARC_FLAG_PROTECTED = 1 << 15 */\n" + BARE,
    "/* provenance: include/sys/arc.h zfs-2.3.9: ARC_FLAG_PROTECTED = 1 << 15 */\n" + BARE,
    "/* provenance: openzfs/zfs zfs-2.3.9: ARC_FLAG_PROTECTED = 1 << 15 */\n" + BARE,
    # a provenance separated from the constant by code
    "/* provenance: openzfs/zfs include/sys/arc.h zfs-2.3.9: ARC_FLAG_PROTECTED = 1 << 15 */\nx = 1;\n" + BARE,
], ids=["wrong-value", "no-revision", "no-repo", "no-path", "not-adjacent"])
def test_a_provenance_that_does_not_source_the_number_is_refused(text: str):
    assert [n for _ln, _t, n in unsourced(text)] == [{1 << 15}]


@pytest.mark.parametrize("code,value", [
    ("\tif (args->hdr_flags & 4) {", 4),
    ("\tif (args->hdr_type == 1) {", 1),
    ("/this->hdr->b_flags & 0x8000/", 0x8000),
    ("\t@fd[$cb] = *uptr((uint32 *)($cb + 20));", 20),
    ("\t@bytes[args->dev, $op] = sum(args->nr_sector * 512);", 512),
    ("#define IOCB_CMD_PREADV 7", 7),
    ("\tif ($o == 7) { $op = \"read\"; }", 7),
    ("\tif ($o == 0) { $op = \"read\"; }", 0),
    ("\tif (args->hdr_type >= 2) {", 2),
])
def test_each_kind_of_constant_is_seen(code: str, value: int):
    assert [n for _ln, _t, n in unsourced(code)] == [{value}]


@pytest.mark.parametrize("code", [
    "\t$p = $p | ($p >> 16);",  # the protocol's bucket arithmetic
    "\tif ($2 > 0 && $v > (uint64)$2 * 1000000) {",  # ms -> ns of the script's own argument
    "\tif ($2 == 0) {",  # a positional argument
    "\tif (strncmp(args->rwbs, \"R\", 1) == 0) { $op = \"read\"; }",  # a function's result
    "\twhile ($i < $n && $i < 64) {",  # the script's own bound
    "\tthis->f = (arc_flags_t)(1 << (this->bit + 16));",  # a search over bits, not a kernel number
    "\tprintf(\"interval %d.%06d %d\\n\", walltimestamp / 1000000000, 1, 2);",
])
def test_script_arithmetic_is_not_a_kernel_constant(code: str):
    assert list(unsourced(code)) == []


def test_enumerators_need_their_own_name_and_value():
    head = "/* provenance: illumos/illumos-gate usr/src/uts/common/sys/fs/zfs.h db860a9da66f: ZIO_TYPE_WRITE = 2 */\n"
    assert list(unsourced(head + "typedef enum zio_type {\n\tZIO_TYPE_WRITE = 2\n} zio_type_t;\n")) == []
    bad = list(unsourced(head + "typedef enum zio_type {\n\tZIO_TYPE_READ = 2\n} zio_type_t;\n"))
    assert [n for _ln, _t, n in bad] == [{2}]


# --- the shipped scripts -----------------------------------------------------------------------------

@pytest.mark.parametrize("path", SCRIPTS + [PRELUDE], ids=IDS + ["tests/data/dtrace/illumos-types.d"])
def test_every_constant_written_has_its_provenance(path: Path):
    bad = [f"line {n}: {t.strip()} ({', '.join(hex(v) for v in sorted(vals))})"
           for n, t, vals in unsourced(path.read_text())]
    assert not bad, "constants without a provenance comment giving their value:\n" + "\n".join(bad)


def _enumerators() -> Set[str]:
    """The kernel enumerators the compile check declares (tests/data/dtrace/illumos-types.d)."""
    names: Set[str] = set()
    for body in re.findall(r"\benum\s+\w+\s*\{(.*?)\}", "\n".join(ln.code for ln in split_lines(PRELUDE.read_text())),
                           re.S):
        names |= set(re.findall(r"\b([A-Z][A-Z0-9_]+)\s*=", body))
    return names


@pytest.mark.parametrize("path", sorted((REPO / "dtrace").glob("*.d")), ids=lambda p: p.name)
def test_d_uses_kernel_enumerators_only_where_d_resolves_them(path: Path):
    """On illumos a kernel enumerator is visible only as the right operand of a comparison with a value
    of its enum type; the compile check declares them as global names, so it would not notice."""
    names = _enumerators()
    code = "\n".join(ln.code for ln in split_lines(path.read_text()))
    for m in re.finditer(r"\b(" + "|".join(sorted(names)) + r")\b", code):
        before = code[:m.start()].rstrip()
        assert re.search(r"(==|!=|<=|>=|<|>)$", before), (
            f"{path.name}: {m.group(1)} is not the right operand of a comparison: "
            f"...{code[max(0, m.start() - 60):m.end()]}")


def test_the_enumerator_rule_can_fail(tmp_path):
    bad = tmp_path / "bad.d"
    bad.write_text("sdt:::x\n{\n\tthis->m = ((arc_buf_hdr_t *)arg0)->b_flags & ARC_FLAG_BUFC_METADATA;\n}\n")
    with pytest.raises(AssertionError, match="ARC_FLAG_BUFC_METADATA is not the right operand"):
        test_d_uses_kernel_enumerators_only_where_d_resolves_them(bad)


def _constants_section(path: Path) -> str:
    head = re.search(r"/\*(.*?)\*/", path.read_text(), re.S)
    assert head, "no header comment"
    m = re.search(r"^\s*\*\s+CONSTANTS\b(.*?)(?=^\s*\*\s+[A-Z]{4,}\b|\Z)", head.group(1), re.S | re.M)
    assert m, "header lacks a CONSTANTS section"
    return m.group(1)


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_header_says_what_was_checked_against_which_source(path: Path):
    section = _constants_section(path)
    assert re.search(r"illumos-gate|openzfs/zfs|OpenZFS|torvalds/linux", section), "names no source"
    assert re.search(r"zfs-\d+\.\d+\.\d+|\bv\d+\.\d+|\b[0-9a-f]{12}\b|master of", section), "names no revision"


# --- where a number depends on the OpenZFS release: the catalog refuses releases it was not checked for --

def test_arc_bt_is_refused_on_an_openzfs_whose_flags_differ():
    """arc.bt's ARC_FLAG_BUFC_METADATA is 1 << 17 from 0.8.0 on; 0.7 had 1 << 14: refused, not miscounted."""
    arc = catalog.SCRIPTS["arc"]
    assert arc.openzfs_min == (0, 8) and "0.8" in _constants_section(REPO / arc.files["bpftrace"])
    with pytest.raises(UserError, match=r"checked for OpenZFS 0\.8 and later .* this host runs 0\.7\.13-1"):
        catalog.argv_for(arc, 1, "bpftrace", zfs_version="0.7.13-1")
    for ok in ("0.8.0-1", "2.1.16-1", "2.2.11-1", "2.3.9-1", "2.4.4"):
        assert catalog.argv_for(arc, 1, "bpftrace", zfs_version=ok)[5:] == ["1"]
    assert catalog.argv_for(arc, 1, "bpftrace", zfs_version="")[5:] == ["1"]  # unknown: the preflight decides
    assert catalog.argv_for(arc, 1, "dtrace", zfs_version="0.7.13-1")[4:] == ["1"]  # D reads the kernel's names


def test_only_scripts_that_write_openzfs_numbers_are_gated():
    for spec in [*catalog.SCRIPTS.values(), *catalog.VARIANTS.values()]:
        bt = spec.files.get("bpftrace")
        writes = bt is not None and "openzfs/zfs" in "".join(
            ln.comment for ln in split_lines((REPO / bt).read_text()) if "provenance:" in ln.comment)
        assert bool(spec.openzfs_min) == writes, spec.name
