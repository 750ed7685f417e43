"""`--backend dtrace` on Linux: the D scripts under a DTrace the user has (Oracle's DTrace for Linux).

Which script runs for each trace (the illumos one, or its Linux variant from catalog.LINUX_D), the command line,
the OpenZFS gate of arc_linux.d, and the collectors `record`/`top`/`trace` build with it. The scripts themselves
ran under DTrace in the OpenZFS guest: tests/unit/trace/test_dtrace_openzfs23.py checks those outputs.
"""

from __future__ import annotations

import pytest

from zfsmon import host
from zfsmon.cli import build_parser
from zfsmon.engine.collectors import pick_collectors
from zfsmon.errors import UserError
from zfsmon.trace import catalog
from zfsmon.trace.collector import TraceCollector


@pytest.mark.parametrize("name,linux,illumos", [
    ("arc", "dtrace/arc_linux.d", "dtrace/arc.d"),
    ("zfsslower", "dtrace/zfsslower_linux.d", "dtrace/zfsslower.d"),
    ("zil", "dtrace/zil.d", "dtrace/zil.d"),
    ("txg", "dtrace/txg.d", "dtrace/txg.d"),
    ("vdevlat", "dtrace/vdevlat.d", "dtrace/vdevlat.d"),
])
def test_each_trace_runs_its_linux_variant_under_d_on_linux_and_its_own_script_elsewhere(name, linux, illumos):
    assert catalog.resolve(name, "linux", family="dtrace").files["dtrace"] == linux
    assert catalog.resolve(name, "sunos5").files["dtrace"] == illumos
    assert catalog.resolve(name, "freebsd14").files["dtrace"] == illumos


def test_the_family_follows_the_backend_on_linux_only():
    assert catalog.tracer_family("linux", "dtrace") == "dtrace"
    assert catalog.tracer_family("linux", "bcc") == "bpftrace" == catalog.tracer_family("linux")
    assert catalog.tracer_family("sunos5") == "dtrace"
    assert catalog.choose_backend("dtrace", ["zil"], "linux") == "dtrace"
    with pytest.raises(UserError, match="no tracing backend"):
        catalog.choose_backend("systemtap", ["zil"], "linux")


def test_arc_linux_is_refused_on_an_openzfs_without_arc_access_s_hit_argument():
    spec = catalog.LINUX_D["arc"]
    with pytest.raises(UserError, match="OpenZFS 2.2 and later"):
        catalog.argv_for(spec, 5, "dtrace", zfs_version="2.1.11-1")
    argv = catalog.argv_for(spec, 5, "dtrace", zfs_version="2.3.2-2~bpo12+2")
    assert argv[:3] == ["dtrace", "-q", "-s"] and argv[3].endswith("dtrace/arc_linux.d") and argv[4:] == ["5"]
    # the illumos arc.d is not gated by arc.bt's OpenZFS constants
    assert catalog.argv_for(catalog.SCRIPTS["arc"], 5, "dtrace", zfs_version="0.7.13-1")[4:] == ["5"]


def test_zfsslower_linux_gets_the_slow_threshold():
    argv = catalog.argv_for(catalog.LINUX_D["zfsslower"], 2, "dtrace", slow_ms=20, zfs_version="2.3.2")
    assert argv[3].endswith("dtrace/zfsslower_linux.d") and argv[4:] == ["2", "20"]


def test_a_collector_with_the_dtrace_backend_runs_dtrace_on_the_linux_variant():
    coll = TraceCollector("zfsslower", 5, slow_ms=10, platform="linux", backend="dtrace")
    assert coll.family == "dtrace" and coll.spec is catalog.LINUX_D["zfsslower"]
    assert coll.argv[0] == "dtrace" and coll.argv[3].endswith("dtrace/zfsslower_linux.d")


def test_record_and_top_pass_the_backend_to_their_trace_collectors():
    colls, _ = pick_collectors(host.probe(), 5.0, None, ["diskstats"], ["txg", "zil"], "dtrace")
    traces = [c for c in colls if isinstance(c, TraceCollector)]
    assert [c.spec.name for c in traces if c.spec] == ["txg", "zil"]
    assert all(c.family == "dtrace" and c.argv[0] == "dtrace" for c in traces)


@pytest.mark.parametrize("argv", [["trace", "--backend", "dtrace", "zil", "5"],
                                  ["record", "--backend", "dtrace", "--trace", "zil"],
                                  ["top", "--backend", "dtrace", "--trace", "zil"],
                                  ["soak", "--fio", "job.fio", "--backend", "dtrace", "--trace", "vdevlat"]])
def test_the_commands_take_the_dtrace_backend(argv):
    assert build_parser().parse_args(argv).backend == "dtrace"


def test_without_bpftrace_an_installed_dtrace_runs_the_scripts(monkeypatch, tmp_path):
    """Oracle Linux: dtrace installed, no bpftrace. `record --trace` and `trace` pick D by themselves."""
    fake = tmp_path / "dtrace"
    fake.write_text("#!/bin/sh\necho 'dtrace: Oracle D 2.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert catalog.script_backend("linux") == "dtrace"
    assert catalog.choose_backend(None, ["zil"], "linux") == "dtrace"
    colls, _ = pick_collectors(host.probe(), 5.0, None, ["diskstats"], ["zil"])
    assert [c.family for c in colls if isinstance(c, TraceCollector)] == ["dtrace"]
    monkeypatch.setenv("PATH", "/nonexistent")
    assert catalog.script_backend("linux") == "bpftrace"  # neither: bpftrace's absence gives the error
    assert catalog.script_backend("sunos5") == "dtrace"
