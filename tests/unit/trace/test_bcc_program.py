"""The bcc backend's C program, generated from data: the right probes for each selection, the same probes and
constants as the bpftrace twins, tracepoint field offsets from real tracefs format files (no bcc needed)."""

from __future__ import annotations

import re
from typing import Dict, Set

import pytest

from tests.conftest import REPO, TEST_DATA
from zfsmon import host
from zfsmon.errors import UserError
from zfsmon.host import BccFacts
from zfsmon.trace import bcc_collector, bcc_program, catalog
from zfsmon.trace.bcc_program import TRACES, generate, parse_format, probes, select, tracepoints

#: tracefs format files captured in the OpenZFS 2.3 guest (kernel 6.1; PROVENANCE.md there)
FORMATS = TEST_DATA / "openzfs-2.3" / "bcc" / "formats"


#: OpenZFS's own tracepoints: Debian's zfs-dkms module has none (the guest's tracefs has no zfs/ events), so no
#: real format file exists here. A stand-in for the pure generator: arbitrary offsets, checked to be used as given.
ZFS_STAND_IN = {"zfs:zfs_arc__hit": {"hdr_flags": (52, 4)}, "zfs:zfs_arc__miss": {"hdr_flags": (52, 4)},
                "zfs:zfs_l2arc__write": {"zio_size": (88, 8)}}


def _formats(zfs: bool = True) -> Dict[str, Dict[str, tuple]]:
    """The block tracepoints' real format files from the guest (kernel 6.1), plus the zfs stand-in."""
    out = {}
    for path in sorted(FORMATS.glob("*.format")):
        cat, event = path.stem.split("_", 1)
        out[f"{cat}:{event}"] = parse_format(path.read_text())
    if zfs:
        out.update(ZFS_STAND_IN)
    return out


def _bt_probes(name: str) -> Set[str]:
    """The probes a bpftrace script declares (kprobe:f, kretprobe:f, tracepoint:cat:event), BEGIN/END/interval aside."""
    text = (REPO / "bpftrace" / f"{name}.bt").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    found = set()
    for m in re.finditer(r"^((?:kprobe|kretprobe|tracepoint):[\w:]+)", text, flags=re.M):
        found.add(m.group(1))
    return found


def test_real_format_files_give_the_offsets():
    f = _formats(zfs=False)
    assert set(f) == {"block:block_rq_issue", "block:block_rq_complete"}
    # kernel 6.1's block_rq_complete: dev_t dev at 8 (4 bytes), sector_t sector at 16, nr_sector at 24, rwbs[8]
    assert f["block:block_rq_complete"]["dev"] == (8, 4)
    assert f["block:block_rq_complete"]["sector"] == (16, 8)
    assert f["block:block_rq_complete"]["nr_sector"] == (24, 4)
    assert f["block:block_rq_complete"]["rwbs"] == (32, 8)
    assert f["block:block_rq_issue"]["rwbs"] == (32, 8) and f["block:block_rq_issue"]["comm"] == (40, 16)
    assert f["block:block_rq_issue"]["common_type"] == (0, 2)
    prog = generate(select(["blklat"]), f)
    assert "#define OFF_block_rq_complete_rwbs 32" in prog and "#define SIZE_block_rq_complete_sector 8" in prog


@pytest.mark.parametrize("name", sorted(TRACES))
def test_each_trace_has_exactly_its_bpftrace_twins_probes(name: str):
    mine = {p.label() for p in TRACES[name].probes}
    assert mine == _bt_probes(name)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_a_selection_of_one_trace_has_its_probes_and_no_other(name: str):
    text = generate(select([name]), _formats(), slow_ms=20)
    for p in TRACES[name].probes:
        assert re.search(rf"^int {p.fn}\((void|struct pt_regs) \*ctx\)", text, flags=re.M), p.fn
    for other in set(TRACES) - {name}:
        for p in TRACES[other].probes:
            assert f"int {p.fn}(" not in text, (other, p.fn)
        assert f"#define T_{other} " not in text
    assert f"#define T_{name} {TRACES[name].tid}" in text
    assert "#define SLOW_NS 20000000ULL" in text
    # the shared helpers are there once, and brace pairs balance
    assert text.count("static __always_inline u64 bucket_of(u64 v)") == 1
    assert text.count("{") == text.count("}")


def test_all_is_one_program_with_every_probe_and_real_offsets():
    sel = select(["all"])
    assert sel == ("blklat", "zfsslower", "arc", "zil")
    text = generate(sel, _formats())
    labels = [p.label() for p in probes(sel)]
    assert len(labels) == 2 + 8 + 5 + 2
    for p in probes(sel):
        assert f"int {p.fn}(" in text
    f = _formats()
    assert "#define OFF_zfs_arc__hit_hdr_flags 52" in text and "#define SIZE_zfs_l2arc__write_zio_size 8" in text
    assert f"#define OFF_block_rq_complete_rwbs {f['block:block_rq_complete']['rwbs'][0]}" in text
    assert "#define SLOW_NS 0ULL" in text
    assert tracepoints(sel) == ["block:block_rq_issue", "block:block_rq_complete", "zfs:zfs_arc__hit",
                                "zfs:zfs_arc__miss", "zfs:zfs_l2arc__write"]


def test_selection_aliases_order_and_errors():
    assert select(["vdevlat"]) == ("blklat",)
    assert select(["zfsslower,arc,vdevlat"]) == ("blklat", "zfsslower", "arc")  # the program's order, once each
    assert select(["arc", "arc,blklat,vdevlat"]) == ("blklat", "arc")
    with pytest.raises(UserError, match="no trace 'txg'"):
        select(["txg"])
    with pytest.raises(UserError, match="which traces"):
        select([" , "])


def test_a_missing_tracepoint_or_field_is_one_clear_line():
    f = _formats()
    no_l2 = {k: v for k, v in f.items() if k != "zfs:zfs_l2arc__write"}
    with pytest.raises(UserError, match=r"zfs:zfs_l2arc__write is absent .*OpenZFS kernel module is not loaded"):
        generate(select(["arc"]), no_l2)
    renamed = dict(f)
    renamed["block:block_rq_complete"] = {k: v for k, v in f["block:block_rq_complete"].items() if k != "rwbs"}
    with pytest.raises(UserError, match="has no field 'rwbs'"):
        generate(select(["blklat"]), renamed)


def test_arc_constants_are_arc_bt_s_with_their_provenance():
    text = (REPO / "bpftrace" / "arc.bt").read_text()
    defines = {m.group(1): eval(m.group(2)) for m in re.finditer(r"^#define (ARC_\w+) \((.+)\)$", text, flags=re.M)}
    assert defines == {"ARC_FLAG_PREFETCH": bcc_program.ARC_FLAG_PREFETCH,
                       "ARC_FLAG_BUFC_METADATA": bcc_program.ARC_FLAG_BUFC_METADATA}
    src = (REPO / "zfsmon" / "trace" / "bcc_program.py").read_text()
    for name, value in (("ARC_FLAG_PREFETCH", "1 << 2"), ("ARC_FLAG_BUFC_METADATA", "1 << 17")):
        [revs] = re.findall(rf"provenance: openzfs/zfs include/sys/arc.h ([\w.,-]+): {name} = {value} \*/", text)
        assert "zfs-2.3.9" in revs  # the newest release tag both were checked in
        prov = f"# provenance: openzfs/zfs include/sys/arc.h {revs}: {name} = {value}\n{name} = "
        assert prov in src
    prog = generate(select(["arc"]), _formats())
    assert f"#define ARC_FLAG_PREFETCH {1 << 2}" in prog and f"#define ARC_FLAG_BUFC_METADATA {1 << 17}" in prog


def test_arc_is_refused_before_openzfs_0_8_as_the_catalog_does():
    with pytest.raises(UserError, match="0.8"):
        catalog.check_openzfs(catalog.SCRIPTS["arc"], "bpftrace", "0.7.13-1")
    catalog.check_openzfs(catalog.SCRIPTS["arc"], "bpftrace", "2.3.2-2~bpo12+2")


def test_bucket_lines_are_the_protocols():
    """The C bucket function is the nine integer lines of every script (docs/tracing.md), line for line."""
    bt = (REPO / "bpftrace" / "blklat.bt").read_text()
    bt_lines = [ln.strip().replace("$", "") for ln in bt.splitlines() if ln.strip().startswith(("$p =", "$q =", "$b ="))]
    assert len(bt_lines) == 9
    c = generate(select(["blklat"]), _formats())
    c = c.replace("u64 p = ", "p = ").replace("u64 q = ", "q = ").replace("return q > 0 ?", "b = q > 0 ?")
    for ln in bt_lines:
        assert ln in c, ln


def test_backend_choice():
    assert catalog.choose_backend("bcc", ["vdevlat"], "linux") == "bcc"
    assert catalog.choose_backend(None, ["zfsslower", "arc"], "linux") == "bcc"
    assert catalog.choose_backend(None, ["all"], "linux") == "bcc"
    assert catalog.choose_backend(None, ["vdevlat"], "sunos5") == "dtrace"
    with pytest.raises(UserError, match="for Linux"):
        catalog.choose_backend("bcc", ["vdevlat"], "sunos5")
    assert catalog.bcc_offers("vdevlat") and catalog.bcc_offers("all") and not catalog.bcc_offers("txg")


def test_bcc_problems_say_precisely_why(monkeypatch):
    def facts(**kw):
        base = dict(root=True, version="0.26.0", import_error="", headers="/lib/modules/6.1.0-50-amd64/build",
                    kprobes=True, zfs_module=True)
        base.update(kw)
        return lambda: BccFacts(**base)

    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts())
    assert bcc_collector.bcc_problem(select(["all"])) is None
    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts(version=None, import_error="No module named 'bcc'"))
    assert "apt install python3-bpfcc" in bcc_collector.bcc_problem(("blklat",))
    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts(root=False))
    assert "needs root" in bcc_collector.bcc_problem(("blklat",))
    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts(headers=None))
    assert "no kernel headers" in bcc_collector.bcc_problem(("blklat",))
    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts(kprobes=False))
    assert bcc_collector.bcc_problem(("blklat", "arc")) is None  # tracepoints only
    assert bcc_collector.bcc_problem(select(["all"])) is None  # the runner skips zfsslower and zil, says why
    assert bcc_collector.bcc_problem(("zfsslower", "zil")) == ("zfsslower needs kprobes, and this kernel has none; "
                                                               "zil needs kprobes, and this kernel has none")
    monkeypatch.setattr(bcc_collector.host, "bcc_facts", facts(zfs_module=False))
    assert bcc_collector.bcc_problem(("blklat",)) is None
    assert "needs the OpenZFS kernel module" in bcc_collector.bcc_problem(("zfsslower",))


def test_traces_this_kernel_cannot_serve_are_named_with_the_reason():
    f = _formats()
    assert bcc_program.unavailable(select(["all"]), f) == {}
    no_zfs_tp = _formats(zfs=False)
    # Debian's zfs-dkms: the module is loaded but has no tracepoints (seen in the guest: tracefs-events.txt); arc
    # then runs on kprobes (its kprobe variant), and only without kprobes too is it refused
    assert bcc_program.unavailable(select(["all"]), no_zfs_tp) == {}
    assert bcc_program.unavailable(select(["arc"]), no_zfs_tp, kprobes=False) == {
        "arc": "tracepoint zfs:zfs_arc__hit is absent on this kernel (the OpenZFS module is loaded but has no "
               "tracepoints: built without them, as Debian's zfs-dkms is)"}
    assert bcc_program.unavailable(select(["all"]), no_zfs_tp, kprobes=False, zfs_module=False) == {
        "zfsslower": "needs the OpenZFS kernel module, and none is loaded",
        "arc": "needs the OpenZFS kernel module, and none is loaded",
        "zil": "needs the OpenZFS kernel module, and none is loaded"}
    assert bcc_program.unavailable(select(["zil"]), f, kprobes=False) == {"zil": "needs kprobes, and this kernel has none"}


def test_the_child_command_line():
    argv = bcc_collector.bcc_argv(("blklat", "arc"), 5, 20, python="/usr/bin/python3")
    assert argv == ["/usr/bin/python3", "-m", "zfsmon.trace.bcc_tool", "blklat,arc", "5", "20"]


def test_doctor_has_a_bcc_line_with_its_reason():
    check = host.probe_bcc()
    facts = host.bcc_facts()
    assert check.name == "bcc" and check.category == "tracing"
    assert check.ok == (facts.problem() is None)
    if facts.version is None:
        assert "apt install python3-bpfcc" in check.detail
    elif check.ok:
        assert f"bcc {facts.version}" in check.detail and "kprobes" in check.detail


# --- arc without tracepoints: the kprobe variant (issue 17) ------------------------------------------------

def test_arc_without_zfs_tracepoints_is_the_kprobe_variant_in_the_same_protocol():
    """No zfs:zfs_arc__hit format file (Debian's zfs-dkms): kprobe + kretprobe arc_read, same trace number and
    name, so the printer and the parser see `arc` either way; with the tracepoints: arc.bt's twin as before."""
    no_zfs_tp = _formats(zfs=False)
    assert bcc_program.variant("arc", no_zfs_tp) is bcc_program.ARC_KPROBE
    assert bcc_program.variant("arc", _formats()) is bcc_program.TRACES["arc"]
    assert bcc_program.variant("zil", no_zfs_tp) is bcc_program.TRACES["zil"]
    k, t = bcc_program.ARC_KPROBE, bcc_program.TRACES["arc"]
    assert (k.name, k.tid, k.entity, k.header_opts, k.entities) == (t.name, t.tid, t.entity, t.header_opts, t.entities)
    assert [p.label() for p in bcc_program.probes(("arc",), no_zfs_tp)] == [
        "kprobe:arc_read", "kretprobe:arc_read", "kprobe:arc_buf_access", "kprobe:arc_access"]
    assert [p.label() for p in bcc_program.probes(("arc",), _formats())][0] == "tracepoint:zfs:zfs_arc__hit"
    assert bcc_program.ARC_KPROBE.probes[1].maxactive > 0  # sleeping arc_read calls must not exhaust kretprobes
    prog = generate(select(["zfsslower,arc,zil"]), no_zfs_tp)
    assert "int arck_entry(struct pt_regs *ctx)" in prog and "int arck_return(struct pt_regs *ctx)" in prog
    assert "arc_hit(void *ctx)" not in prog and "OFF_zfs_arc__hit" not in prog
    for name in re.findall(r"\b(?:ARC_FLAG|ARC_FLAGS|BLK|BP|DMU_OT)_\w+", bcc_program._ARC_KPROBE_C):
        assert re.search(rf"^#define {name} ", prog, flags=re.M), name


def test_kprobe_arc_constants_are_arc_kprobe_bt_s():
    """The C variant and bpftrace/arc_kprobe.bt write the same numbers (each with its provenance, which
    tests/unit/trace/test_script_constants.py checks in the script)."""
    text = (REPO / "bpftrace" / "arc_kprobe.bt").read_text()
    defines = {m.group(1): int(eval(m.group(2))) for m in re.finditer(r"^#define (\w+) (.+)$", text, flags=re.M)}
    assert defines.pop("ARC_FLAG_PREFETCH") == bcc_program.ARC_FLAG_PREFETCH
    assert defines.pop("ARC_FLAG_BUFC_METADATA") == bcc_program.ARC_FLAG_BUFC_METADATA
    assert defines == bcc_program.ARC_KPROBE_DEFINES
    src = (REPO / "zfsmon" / "trace" / "bcc_program.py").read_text()
    for name, value in bcc_program.ARC_KPROBE_DEFINES.items():
        [(path, revs)] = re.findall(rf"provenance: openzfs/zfs (\S+) ([\w.,-]+): {name} = ", text)
        assert "zfs-2.3.9" in revs.split(","), name
        assert re.search(rf"# provenance: openzfs/zfs {re.escape(path)} {re.escape(revs)}: {name} = [^\n]*\n{name} = ",
                         src), name
        assert bcc_program.ARC_KPROBE_DEFINES[name] == value


def test_the_kprobe_variant_is_version_gated_like_its_bpftrace_twin():
    spec = catalog.VARIANTS["arc"]
    assert spec.openzfs_min == (2, 1) and spec.files == {"bpftrace": "bpftrace/arc_kprobe.bt"}
    with pytest.raises(UserError, match=r"checked for OpenZFS 2\.1 and later"):
        catalog.check_openzfs(spec, "bpftrace", "2.0.7-1")
    catalog.check_openzfs(spec, "bpftrace", "2.3.2-2~bpo12+2")


def test_catalog_picks_arc_kprobe_bt_where_the_module_has_no_tracepoints(monkeypatch):
    monkeypatch.setattr(catalog.os.path, "isdir", lambda p: p == "/sys/module/zfs")
    monkeypatch.setattr(catalog, "zfs_tracepoints", lambda: False)
    assert catalog.resolve("arc", "linux") is catalog.VARIANTS["arc"]
    assert "no zfs tracepoints" in catalog.variant_reason("arc")
    assert catalog.resolve("arc", "sunos5") is catalog.SCRIPTS["arc"]  # D reads the kernel's names
    assert catalog.resolve("zil", "linux") is catalog.SCRIPTS["zil"]
    monkeypatch.setattr(catalog, "zfs_tracepoints", lambda: True)
    assert catalog.resolve("arc", "linux") is catalog.SCRIPTS["arc"] and catalog.variant_reason("arc") is None
    monkeypatch.setattr(catalog.os.path, "isdir", lambda p: False)  # no module: arc.bt, whose preflight says why
    monkeypatch.setattr(catalog, "zfs_tracepoints", lambda: False)
    assert catalog.resolve("arc", "linux") is catalog.SCRIPTS["arc"]


def test_doctor_says_which_arc_runs(monkeypatch):
    """doctor's bpftrace and bcc lines: without zfs tracepoints arc runs on kprobes (and without kprobes too, not)."""
    monkeypatch.setattr(host, "zfs_tracepoints", lambda: False)
    monkeypatch.setattr(host, "untraceable", lambda _fns: [])  # this host lists no zfs functions
    assert "arc uses kprobes on arc_read (arc_kprobe.bt)" in host._zfs_detail(True, True)
    assert "arc cannot run" in host._zfs_detail(True, False)
    monkeypatch.setattr(host, "zfs_tracepoints", lambda: True)
    assert host._zfs_detail(True, True) == "OpenZFS module yes, with tracepoints"


def test_record_with_backend_bcc_is_one_collector_for_every_trace():
    """`zfsmon record --trace zil --trace arc --backend bcc`: both traces in one bcc program (one child)."""
    from zfsmon.engine.collectors import pick_collectors
    colls, _ = pick_collectors(host.probe(), 5.0, None, ["diskstats"], ["zil", "arc"], "bcc")
    bcc = [c for c in colls if isinstance(c, bcc_collector.BccCollector)]
    assert len(bcc) == 1 and bcc[0].selection == ("arc", "zil")
    assert bcc[0].argv[-3:] == ["arc,zil", "5", "0"]
    plain, _ = pick_collectors(host.probe(), 5.0, None, ["diskstats"], ["zil", "arc"])
    assert not [c for c in plain if isinstance(c, bcc_collector.BccCollector)]
    with pytest.raises(UserError, match="no tracing backend"):
        pick_collectors(host.probe(), 5.0, None, ["diskstats"], ["zil"], "systemtap")


def test_a_bcc_collector_starts_under_record(monkeypatch):
    """The bcc collector has no script (spec None): starting it must not look up a script variant (the 2.3 guest
    tier's `record --backend bcc` failed with "'NoneType' object has no attribute 'name'" before this)."""
    from zfsmon.sources.child import StreamCollector
    coll = bcc_collector.BccCollector(["zil", "arc"], 5)
    monkeypatch.setattr(coll, "preflight", lambda: None)
    monkeypatch.setattr(coll, "_load_topology", lambda: None)
    monkeypatch.setattr(coll, "_read_names", lambda: None)
    started = []
    monkeypatch.setattr(StreamCollector, "start", lambda self: started.append(self))
    coll.start()
    assert started == [coll]
