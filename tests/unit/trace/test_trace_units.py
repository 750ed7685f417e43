"""Histogram arithmetic, name resolution, the script catalogue, error explanations and the report."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from zfsmon.errors import UserError
from zfsmon.model import Entity, Kind, Role, Sample
from zfsmon.sources.zpool.status import parse_status
from zfsmon.trace import catalog
from zfsmon.trace.collector import TraceCollector, explain_stderr, preflight
from zfsmon.trace.histogram import Histogram, bucket_of, bucket_upper, is_bucket
from zfsmon.trace.protocol import hist_from_metrics, parse_text
from zfsmon.trace.resolve import Names, mounted_filesystems
from zfsmon.views.trace_text import Totals, csv_rows, histogram_lines, table

DATA = TEST_DATA / "trace"


# --- histogram ---------------------------------------------------------------------------------------------

@given(st.integers(0, 1 << 62))
def test_every_value_falls_in_its_bucket(v: int):
    lo = bucket_of(v)
    assert is_bucket(lo) and lo <= v < bucket_upper(lo)
    assert bucket_upper(lo) - lo <= max(1, lo // 4)  # at most 25 % wide


def test_buckets_of_known_values():
    # what bpftrace computed for 1500 with the same arithmetic, run on this machine: b=1280
    assert [bucket_of(v) for v in (0, 3, 4, 7, 8, 9, 1500, 1535, 1536)] == [0, 3, 4, 7, 8, 8, 1280, 1280, 1536]
    assert not is_bucket(1281) and not is_bucket(-4)


@given(st.lists(st.integers(0, 10 ** 10), min_size=1, max_size=300))
def test_percentiles_are_monotonic_and_bounded(values):
    h = Histogram()
    for v in values:
        h.add(bucket_of(v), 1)
    h.max = max(values)
    ps = [h.percentile(q) for q in (0.01, 0.5, 0.9, 0.95, 0.99, 1.0)]
    assert ps == sorted(ps) and ps[-1] <= h.max
    # never below the true quantile's bucket, never above its bucket's top
    exact = sorted(values)[max(0, -(-len(values) // 2) - 1)]
    assert bucket_of(exact) <= h.percentile(0.5) <= bucket_upper(bucket_of(exact))


def test_merge_is_exact():
    a, b = Histogram({1024: 3}, max=1200, sum=3300), Histogram({1024: 1, 4096: 2}, max=5000, sum=10000)
    a.merge(b)
    assert a.buckets == {1024: 4, 4096: 2} and a.max == 5000 and a.sum == 13300 and a.count == 6


def test_hist_round_trips_through_sample_metrics():
    recs = parse_text((DATA / "blklat.bt.out").read_text())
    s = next(r for r in recs if isinstance(r, Sample) and r.metrics.get("read_ops", 0) > 20)
    h = hist_from_metrics(dict(s.metrics), "read")
    assert h.count == s.metrics["read_ops"] and h.percentile(0.99) == pytest.approx(s.metrics["read_lat_p99_ns"])


# --- resolving raw tokens ----------------------------------------------------------------------------------

def _names() -> Names:
    devices = dict(line.split() for line in (DATA / "blklat.devices").read_text().splitlines())
    fds = dict(line.split(None, 1) for line in (DATA / "fusevdevlat_syscalls.fds").read_text().splitlines())
    return Names(topology=parse_status((DATA / "lab.zpool_status").read_text()), devices=devices, fds=fds)


def test_resolves_devt_fd_and_names():
    n = _names()
    loop24 = n("devt", str(7 << 20 | 24))
    assert (loop24.kind, loop24.name, loop24.pool, loop24.role, loop24.parent) == (
        Kind.TRACE, "loop24", "ztrcap", Role.CACHE, "ztrcap")
    assert n("fd", "37").name == "loop19" and n("fd", "37").parent == "mirror-0"
    assert n("fd", "36").role == Role.LOG
    assert n("fd", "8").name == "/dev/fuse" and n("fd", "999").name == "fd999"
    assert n("devt", str(254 << 20)).name == "vda" and n("devt", str(1 << 20 | 77)).name == "1:77"
    assert n("name", "ztrcap").pool == "ztrcap" and n("name", "arc").name == "arc"


def test_unknown_token_triggers_one_refresh():
    calls = []

    def refresh(names: Names) -> None:
        calls.append(1)
        names.fds["50"] = "/dev/loop22"

    n = Names(topology=parse_status((DATA / "lab.zpool_status").read_text()), refresh=refresh)
    assert n("fd", "50").role == Role.DATA and len(calls) == 1
    n("fd", "51")
    n("fd", "51")
    assert len(calls) == 2  # once per unknown token, not per interval


def test_mountinfo_names_filesystems_by_superblock_device():
    """Lines of this machine's /proc/self/mountinfo with the lab's zfs-fuse datasets mounted."""
    mounts = mounted_filesystems(str(DATA / "mountinfo"))
    zfs = {k: v for k, v in mounts.items() if v[1] == "fuse.zfs"}
    assert {v[2] for v in zfs.values()} >= {"ztrcap", "ztrcap/db"}
    for majmin, (_mnt, _fstype, source) in zfs.items():
        maj, mnr = majmin.split(":")
        ent = Names(mounts=mounts)("devt", str(int(maj) << 20 | int(mnr)))
        assert (ent.name, ent.pool) == (source, "ztrcap")
    root = next(v for v in mounts.values() if v[0] == "/")
    assert root[1] != "fuse.zfs"


# --- catalogue, argv, errors -------------------------------------------------------------------------------

def test_vdevlat_picks_the_zfs_fuse_script_only_with_a_daemon():
    assert catalog.resolve("vdevlat", "linux", fuse_pid=4242).name == "fusevdevlat"
    assert catalog.resolve("vdevlat", "linux", fuse_pid=None).name == "vdevlat"
    assert catalog.resolve("vdevlat", "sunos5", fuse_pid=4242).files["dtrace"] == "dtrace/vdevlat.d"
    with pytest.raises(UserError, match="no trace script called 'nope'"):
        catalog.resolve("nope")


def test_fusevdevlat_runs_its_syscall_variant_only_where_uprobes_or_x86_64_numbers_are_missing(monkeypatch):
    assert catalog.variant_reason("fusevdevlat", machine="x86_64", uprobes=True) is None
    why = catalog.variant_reason("fusevdevlat", machine="aarch64", uprobes=True)
    assert why and "aarch64" in why and "fusevdevlat_syscalls.bt" in why
    assert "no uprobes" in catalog.variant_reason("fusevdevlat", machine="x86_64", uprobes=False)
    monkeypatch.setattr(catalog.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(catalog, "uprobes_available", lambda: True)
    own = catalog.resolve("vdevlat", "linux", fuse_pid=4242)
    assert own is catalog.SCRIPTS["fusevdevlat"] and own.files["bpftrace"] == "bpftrace/fusevdevlat.bt"
    monkeypatch.setattr(catalog, "uprobes_available", lambda: False)
    for name in ("vdevlat", "fusevdevlat"):  # vdevlat on zfs-fuse is fusevdevlat, and so is its variant
        spec = catalog.resolve(name, "linux", fuse_pid=4242)
        assert spec is catalog.VARIANTS["fusevdevlat"] and spec.name == "fusevdevlat"
        assert spec.files["bpftrace"] == "bpftrace/fusevdevlat_syscalls.bt" and spec.args == own.args
    assert catalog.resolve("vdevlat", "linux", fuse_pid=None).name == "vdevlat"  # no daemon: the block script


def test_argv():
    spec = catalog.SCRIPTS["fusevdevlat"]
    argv = catalog.argv_for(spec, 2, "bpftrace", pid=4242, slow_ms=20)
    assert argv[:4] == ["bpftrace", "-q", "-B", "line"] and argv[4].endswith("bpftrace/fusevdevlat.bt")
    assert argv[5:] == ["2", "4242", "20"]
    d = catalog.argv_for(catalog.SCRIPTS["zil"], 1, "dtrace", slow_ms=5)
    assert d[:3] == ["dtrace", "-q", "-s"] and d[3].endswith("dtrace/zil.d") and d[4:] == ["1", "5"]
    assert catalog.argv_for(catalog.SCRIPTS["arc"], 1, "dtrace", slow_ms=5)[4:] == ["1"]
    with pytest.raises(UserError, match="needs the zfs-fuse daemon's pid"):
        catalog.argv_for(spec, 1, "bpftrace", pid=None)
    with pytest.raises(UserError, match="has no dtrace script"):
        catalog.argv_for(spec, 1, "dtrace")


def test_explain_real_bpftrace_errors():
    """stderr captured on this machine: no zfs module (tracepoints absent), no kprobes."""
    assert explain_stderr((DATA / "arc.bt.stderr").read_text()) == (
        "probe tracepoint:zfs:zfs_arc__hit is absent on this kernel (the OpenZFS kernel module is not loaded)")
    assert explain_stderr((DATA / "zil.bt.stderr").read_text()) == (
        "cannot attach kretprobe:zil_commit (kprobes are unavailable on this kernel, or the function does not exist)")
    assert "tracing needs root" in explain_stderr("ERROR: bpf() syscall failed: Operation not permitted\n")


def test_preflight_names_a_missing_tracer():
    msg = preflight(catalog.SCRIPTS["blklat"], "bpftrace", tracer="no-such-bpftrace")
    assert msg is not None and msg.startswith("no-such-bpftrace not found on PATH")


def test_module_scripts_refuse_without_the_zfs_module(monkeypatch, tmp_path):
    from zfsmon.trace import collector

    monkeypatch.setattr(collector.os, "geteuid", lambda: 0)
    monkeypatch.setattr(collector, "ensure_tracefs", lambda path=collector.TRACEFS: None)
    monkeypatch.setattr(collector, "ZFS_MODULE", str(tmp_path / "no-zfs-module"))
    msg = preflight(catalog.SCRIPTS["arc"], "bpftrace", tracer=sys.executable)
    assert msg is not None and "needs the OpenZFS kernel module" in msg
    assert preflight(catalog.SCRIPTS["blklat"], "bpftrace", tracer=sys.executable) is None
    monkeypatch.setattr(collector, "ZFS_MODULE", str(tmp_path))
    assert preflight(catalog.SCRIPTS["arc"], "bpftrace", tracer=sys.executable) is None


def test_collector_reports_a_failed_preflight_as_an_event_and_never_raises():
    c = TraceCollector("blklat", 1, tracer="no-such-bpftrace", platform="linux")
    c.start()
    recs = c.poll()
    assert len(recs) == 1 and "no-such-bpftrace not found" in recs[0].text and c.ended()
    assert c.poll() == []
    c.stop()


# --- report --------------------------------------------------------------------------------------------------

def test_table_csv_and_histograms_from_the_lab_capture():
    recs = parse_text((DATA / "fusevdevlat_syscalls.bt.out").read_text(), resolve=_names())
    samples = [r for r in recs if isinstance(r, Sample)]
    busiest_ts = max({s.ts for s in samples}, key=lambda t: sum(s.metrics.get("read_ops", 0) for s in samples if s.ts == t))
    one = [s for s in samples if s.ts == busiest_ts]
    rows = table(one)
    assert rows[0].split()[:3] == ["DEVICE", "ROLE", "OP"]
    mirror = next(i for i, r in enumerate(rows) if r.startswith("ztrcap/mirror-0"))
    assert rows[mirror + 1].startswith("  loop19") or rows[mirror + 1].startswith("  loop20")
    assert rows.index(next(r for r in rows if "cache" in r)) > mirror  # data vdevs first
    text = csv_rows(one, header=True).splitlines()
    assert text[0].startswith("ts,script,entity,pool,role,parent,op,ops")
    loop24 = next(line.split(",") for line in text if ",loop24," in line and ",read," in line)
    s24 = next(s for s in one if s.entity.name == "loop24")
    assert int(loop24[7]) == s24.metrics["read_ops"] and float(loop24[12]) == round(s24.metrics["read_lat_p99_ns"])
    totals = Totals()
    for s in samples:
        totals.add(s)
    out = totals.render()
    head = next(line for line in out if line.startswith("ztrcap/loop24 [cache] read:"))
    assert int(head.split()[3]) == sum(s.metrics.get("read_ops", 0) for s in samples if s.entity.name == "loop24")
    h = totals.hists[(s24.entity, "read")]
    bars = histogram_lines(h)
    assert sum(int(b.split(")")[1].split("|")[0]) for b in bars) == h.count


# --- the command, on a recorded output (no root needed) ---------------------------------------------------------

def test_trace_command_reads_a_saved_output(capsys):
    from zfsmon.cli import main

    assert main(["trace", "--from", str(DATA / "zil.d.out")]) == 0  # zil.d in the OpenZFS guest (totals=1)
    out = capsys.readouterr().out
    assert "zguest: commits=1858" in out and "zguest: commits=2756" in out
    assert "zguest commit: 4614 ops" in out  # the closing histogram sums both intervals (1858 + 2756)
    assert main(["trace", "--from", str(DATA / "txg.d.out")]) == 0
    assert "slow sync 86.0 ms on zguest (txg=21)" in capsys.readouterr().out
    assert main(["trace", "--from", str(DATA / "txg.bt.out"), "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("ts,script,entity") and len(rows) == 1 + 4  # 2 pools x 2 intervals


def test_trace_command_errors_are_one_line(capsys):
    from zfsmon.cli import main

    assert main(["trace"]) == 2
    assert main(["trace", "nope"]) == 2
    assert main(["trace", "--from", "/nonexistent/out"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["zfsmon: which trace? give NAME (see `zfsmon trace --list`)",
                   "zfsmon: no trace script called 'nope' (known: arc, blklat, fusevdevlat, txg, vdevlat, zfsslower, zil)",
                   "zfsmon: /nonexistent/out: cannot read: no such file or directory"]


def test_every_script_gets_the_arguments_it_reads():
    """A script's highest $N is INTERVAL plus the catalog's extra arguments: no threshold silently dropped
    (zil and txg once read $2 while zfsmon passed only $1), no extra argument D would refuse."""
    import re

    for spec in catalog.SCRIPTS.values():
        for rel in spec.files.values():
            text = (catalog.scripts_root() / rel).read_text()
            code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("*", "/*", "//", "#")))
            used = max((int(n) for n in re.findall(r"\$(\d+)", code)), default=0)
            assert used == 1 + len(spec.args), (spec.name, rel, used, spec.args)


def test_table_names_a_dataset_once_with_its_pool():
    """zfsslower's per-filesystem rows are datasets (`zguest/db`, pool zguest): shown as is, not `zguest/zguest/db`;
    a pool-level entity of another name still gets its pool in front (the bcc capture of the OpenZFS guest)."""
    rows = table([Sample(0.0, Entity(Kind.TRACE, "zguest/db", "zguest"), {"read_ops": 1.0, "read_ops_s": 1.0}, interval=1.0),
                  Sample(0.0, Entity(Kind.TRACE, "zil", "zguest"), {"write_ops": 2.0, "write_ops_s": 2.0},
                         interval=1.0)])
    names = [r.split()[0] for r in rows[1:]]
    assert names == ["zguest/db", "zguest/zil"]
