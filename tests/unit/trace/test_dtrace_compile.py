"""Compile (not run) every D script with Oracle's DTrace for Linux: `dtrace -e -Z`.

There is no illumos here, so the illumos ZFS types the scripts read are declared in
tests/data/dtrace/illumos-types.d and put in front of each script. `-Z` lets clauses whose
probes do not exist on Linux (fbt::zfs_*, sdt:zfs::*, fsinfo:::) compile; their bodies are
still type-checked: members, printf/printa conversions against their arguments, aggregations.

The compiler is built beside the project, never committed (docs/tracing.md, "Compile check"):
point ZFSMON_DTRACE at it, or have Oracle's `dtrace` on PATH. Without it these tests skip, in
CI too: CI cannot build it (its source comes from outside the registries CI reaches).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from tests.conftest import REPO
from zfsmon.trace import catalog

#: the D scripts for OpenZFS on Linux (catalog.LINUX_D) read Linux's types, not illumos's: zfsslower_linux.d only
#: the kernel's (BTF of the running kernel, so it compiles here without the prelude), arc_linux.d the zfs module's,
#: which only a kernel with that module and its BTF has: it is compiled and run in the OpenZFS guest
#: (bench/bench_guest_dtrace.py; its outputs, tests/data/openzfs-2.3/dtrace, are checked in every test run)
LINUX = sorted(REPO / s.files["dtrace"] for s in catalog.LINUX_D.values())
SCRIPTS = sorted(p for p in (REPO / "dtrace").glob("*.d") if p not in LINUX)
KERNEL_TYPES_ONLY = [REPO / "dtrace" / "zfsslower_linux.d"]
TYPES = REPO / "tests" / "data" / "dtrace" / "illumos-types.d"


def _oracle_dtrace() -> Optional[str]:
    for cand in (os.environ.get("ZFSMON_DTRACE"), shutil.which("dtrace")):
        if not cand:
            continue
        try:
            out = subprocess.run([cand, "-V"], capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if "Oracle D" in out.stdout + out.stderr:  # not systemtap's dtrace(1), which only makes SDT headers
            return cand
    return None


DTRACE = _oracle_dtrace()
pytestmark = pytest.mark.skipif(
    DTRACE is None or os.geteuid() != 0,
    reason="Oracle DTrace for Linux not found (ZFSMON_DTRACE) or not root: D scripts not compiled")


def compile_d(text: str, tmp_path: Path, *args: str, illumos: bool = True) -> Tuple[int, str]:
    """Compile TYPES (``illumos``) + the script (its #! line dropped); error line numbers are mapped back to the
    script."""
    prelude = TYPES.read_text() if illumos else ""
    lines = text.splitlines(keepends=True)
    dropped = 1 if lines and lines[0].startswith("#!") else 0
    src = tmp_path / "check.d"
    src.write_text(prelude + "".join(lines[dropped:]))
    cp = subprocess.run([DTRACE, "-e", "-Z", "-s", str(src), *args], capture_output=True, text=True,
                        timeout=120, cwd=tmp_path)
    offset = prelude.count("\n") - dropped

    def back(m: re.Match) -> str:
        n = int(m.group(1)) - offset
        return f"line {n}" if n > 0 else f"illumos-types.d line {int(m.group(1))}"
    return cp.returncode, re.sub(r"line (\d+)", back, cp.stderr + cp.stdout)


def _args(script: Path) -> List[str]:
    """The arguments `zfsmon trace` passes the script (after the file): INTERVAL [SLOW_MS]."""
    specs = [s for s in [*catalog.SCRIPTS.values(), *catalog.variant_specs()]
             if s.files.get("dtrace") == f"dtrace/{script.name}"]
    assert specs, f"{script.name} is in no catalog entry"
    argvs = {tuple(catalog.argv_for(s, 1, "dtrace", slow_ms=10)[4:]) for s in specs}
    assert len(argvs) == 1, argvs
    return list(argvs.pop())


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_d_script_compiles(script: Path, tmp_path):
    rc, out = compile_d(script.read_text(), tmp_path, *_args(script))
    assert rc == 0, f"{script.name}: {out}"


@pytest.mark.parametrize("script", KERNEL_TYPES_ONLY, ids=[p.name for p in KERNEL_TYPES_ONLY])
def test_linux_d_script_compiles_against_the_running_kernel(script: Path, tmp_path):
    """A Linux D script that reads only kernel types: compiled against this kernel's BTF, no prelude."""
    rc, out = compile_d(script.read_text(), tmp_path, *_args(script), illumos=False)
    assert rc == 0, f"{script.name}: {out}"
    broken = script.read_text().replace("->i_sb->s_dev, \"op_open\"", "->i_sbx->s_dev, \"op_open\"", 1)
    assert broken != script.read_text()
    rc, out = compile_d(broken, tmp_path, *_args(script), illumos=False)
    assert rc != 0 and "i_sbx is not a member" in out, out


BREAKS: List[Tuple[str, str, str, str]] = [
    ("txg.d", "spa_name)", "spa_nam)", "spa_nam is not a member"),
    ("zil.d", "->io_size)", "->io_sizes)", "io_sizes is not a member"),
    ("vdevlat.d", "%s %s %d %d blkno", "%d %s %d %d blkno", "incompatible with conversion"),
    ("zfsslower.d", "printa(\"@count[%s, %s]: %@d\\n\", @count);", "printa(\"@count[%s, %s]: %@d\\n\", @cnt);",
     "@cnt"),
    ("arc.d", "b_type == ARC_BUFC_METADATA ?", "b_type == ARC_BUFC_METADATAX ?", "failed to resolve ARC_BUFC_METADATAX"),
    ("zil.d", "io_type == ZIO_TYPE_WRITE &&", "io_type == ZIO_TYPE_WRITES &&", "failed to resolve ZIO_TYPE_WRITES"),
]


@pytest.mark.parametrize("name,old,new,expect", BREAKS, ids=[b[0] for b in BREAKS])
def test_the_check_refuses_a_broken_script(name: str, old: str, new: str, expect: str, tmp_path):
    """The check can fail: a misspelt member, a printf conversion that does not fit, an unknown aggregation,
    an enumerator the kernel does not have."""
    text = (REPO / "dtrace" / name).read_text()
    assert old in text
    broken = text.replace(old, new, 1)
    rc, out = compile_d(broken, tmp_path, *_args(REPO / "dtrace" / name))
    assert rc != 0 and expect in out, out
    m = re.search(r"line (\d+)", out)
    assert m and new.split("(")[0].strip() in broken.splitlines()[int(m.group(1)) - 1] or expect == "@cnt", out


ENUM_USES: List[Tuple[str, bool]] = [
    ("this->o == REQ_OP_DISCARD", True),
    ("this->o <= REQ_OP_DISCARD ? 1 : 0", True),
    ("this->o & REQ_OP_DISCARD", False),
    ("REQ_OP_DISCARD == this->o", False),
    ("REQ_OP_DISCARD", False),
]


@pytest.mark.parametrize("expr,resolves", ENUM_USES, ids=[e for e, _ in ENUM_USES])
def test_kernel_enumerators_resolve_only_on_the_right_of_a_comparison(expr: str, resolves: bool, tmp_path):
    """The rule tests/unit/trace/test_script_constants.py holds the D scripts to, shown on a kernel enum this
    compiler reads from the running kernel's type data (enum req_op, Linux >= 4.10): an enumerator is seen
    only as the right operand of a comparison with a value of its enum type. illumos-types.d declares the
    illumos enums as D enums, whose enumerators are global, so this compile check alone cannot show it."""
    src = tmp_path / "enum.d"
    src.write_text(f"BEGIN\n{{\n\tthis->o = (enum req_op)3;\n\ttrace({expr});\n\texit(0);\n}}\n")
    cp = subprocess.run([DTRACE, "-e", "-s", str(src)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    if resolves:
        assert cp.returncode == 0, cp.stderr
    else:
        assert cp.returncode != 0 and "failed to resolve REQ_OP_DISCARD" in cp.stderr, cp.stderr
