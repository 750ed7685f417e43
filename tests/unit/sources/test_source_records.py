"""One definition per source: every list of sources is derived from the modules' SOURCE records.

The host registry (record/top/exporter), the parse/import kinds, doctor's source lines and the sources
table of docs/metrics.md all come from :func:`zfsmon.sources.spec.discover`; a new module with a SOURCE
appears in each of them without editing anything else.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterator, Set

import pytest

import zfsmon.sources
from zfsmon import host as hostmod
from zfsmon import metrics
from zfsmon.commands import doctor
from zfsmon.commands import metrics as metrics_command
from zfsmon.errors import UserError
from zfsmon.host import Host
from zfsmon.model import Event, Sample
from zfsmon.sources import detect, registry
from zfsmon.sources.base import Collector
from zfsmon.sources.devices import diskstats
from zfsmon.sources.spec import Source, discover

SOURCES_DIR = Path(zfsmon.sources.__file__).parent
DERIVED = {"zfsmon.sources.registry", "zfsmon.sources.detect"}
REPO = SOURCES_DIR.parent.parent


def _host(system: str = "Linux") -> Host:
    return Host(system=system, release="test", hostname="test", flavour="none", zfs_version="")


# --- the records of this tree ---------------------------------------------------------------------------------

def _module_name(path: Path) -> str:
    """zfsmon/sources/zpool/status.py -> zfsmon.sources.zpool.status; a package's __init__.py -> the package."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    where = REPO.joinpath(*dotted.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _modules() -> Dict[str, ast.Module]:
    """Every module of zfsmon.sources and its subpackages (a subpackage's __init__ too, but not the top one)."""
    return {_module_name(p): ast.parse(p.read_text()) for p in sorted(SOURCES_DIR.rglob("*.py"))
            if p != SOURCES_DIR / "__init__.py"}


def _imports(tree: ast.Module) -> Set[str]:
    """The zfsmon.sources modules a module imports, wherever in it (function-local imports count too):
    ``from zfsmon.sources.zpool import status`` is the module zfsmon.sources.zpool.status."""
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("zfsmon.sources."))
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "zfsmon.sources" or node.module.startswith("zfsmon.sources."):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    out.add(sub if _is_module(sub) else node.module)
    return out


def _declares_source(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SOURCE" for t in n.targets)
               for n in tree.body)


def _reads_something(tree: ast.Module) -> bool:
    """A top-level parse function, or a collector or stream parser class."""
    readers = {"Collector", "PolledCollector", "StreamCollector", "StreamParser", "KstatFileCollector"}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name.startswith("parse"):
            return True
        if isinstance(n, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in readers for b in n.bases):
            return True
    return False


def _reachable(start: Set[str], graph: Dict[str, Set[str]]) -> Set[str]:
    seen: Set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def test_every_reader_module_belongs_to_a_source_record():
    """A module that parses or collects either declares SOURCE or is part of a module that does."""
    mods = _modules()
    graph = {name: _imports(tree) for name, tree in mods.items()}
    with_record = {name for name, tree in mods.items() if _declares_source(tree)}
    covered = _reachable(with_record, graph)
    orphans = [name for name, tree in mods.items()
               if _reads_something(tree) and name not in covered | DERIVED]
    assert not orphans, f"parsers/collectors no SOURCE record reaches: {orphans}"


def test_source_modules_never_import_the_derived_lists():
    """discover() imports every module; a source importing registry/detect would see them half-built."""
    offenders = {name: sorted(_imports(tree) & DERIVED) for name, tree in _modules().items()
                 if name not in DERIVED and _imports(tree) & DERIVED}
    assert not offenders
    assert not any(_declares_source(_modules()[d]) for d in DERIVED)


def test_records_are_discovered_and_every_module_record_is_found():
    found = discover()
    declared = {name for name, tree in _modules().items() if _declares_source(tree)}
    assert {sys.modules[n].SOURCE.name for n in declared} == {s.name for s in found}
    assert [(s.order, s.name) for s in found] == sorted((s.order, s.name) for s in found)
    assert all(isinstance(s, Source) for s in found)


def test_derived_lists_come_from_the_records():
    found = discover()
    assert registry.SOURCES == found
    assert registry.NAMES == tuple(s.name for s in found if s.collector is not None)
    assert list(detect.KINDS) == [k.name for s in found for k in s.kinds]
    host = _host()
    assert [c.name for c in registry.source_checks(host)] == [s.name for s in found if s.check]
    assert all(c.category == "source" for c in registry.source_checks(host))
    table = metrics_command.sources_markdown(found)
    assert [ln.split("|")[1].strip(" `") for ln in table.splitlines() if ln.startswith("| `")] == \
        [s.name for s in found]


def test_the_registry_table_is_where_each_record_lives():
    """``registry.MODULES`` (what naming a source imports) is the records' names, in their order, each with the
    module that declares it."""
    found = discover()
    declaring = {sys.modules[n].SOURCE.name: n for n, tree in _modules().items() if _declares_source(tree)}
    assert list(registry.MODULES) == [s.name for s in found]
    assert registry.MODULES == declaring
    assert all(registry.record(s.name) is s for s in found)


def test_naming_a_source_imports_its_module_alone():
    """`zfsmon iostat`'s device view names one source: it must not import the others (0.2 s at start)."""
    probe = ("import sys; from zfsmon.sources import registry; from zfsmon.host import Host\n"
             "made, _ = registry.build_collectors(Host('Linux', 't', 't', 'none', ''), 1.0, names=['diskstats'])\n"
             "print(made[0].name, *sorted(m for m in registry.MODULES.values() if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["diskstats", "zfsmon.sources.devices.diskstats"]


def test_behaviour_the_commands_depend_on_is_kept():
    """`record SOURCES` names and the parse/import kinds, in their order."""
    assert registry.NAMES == ("zpool", "zpool-influxdb", "latency", "status", "vdevprops", "arcstats", "zil", "zio_stats", "objset", "iostats", "txgs",
                              "diskstats", "iostat", "fsstat")
    assert list(detect.KINDS) == ["zpool-iostat", "zpool-status-json", "zpool-status", "pool-state-kstat", "zpool-get-vdevs", "arcstats",
                                  "zilstat", "arcstat", "zil-kstat", "zio-kstat", "objset-kstat", "pool-io-kstat", "iostats-kstat", "txgs-kstat", "diskstats",
                                  "iostat-xn", "iostat-x", "fsstat", "bcc-hist", "bcc-slower", "bpftrace-hist",
                                  "pgbench", "fio"]


def test_every_family_a_record_names_is_a_metrics_module():
    assert {s.family for s in discover() if s.family} <= set(metrics.FAMILIES)
    assert set(metrics.FAMILIES) == {p.stem for p in (REPO / "zfsmon" / "metrics").glob("*.py")
                                     if "SPECS" in p.read_text() and p.stem not in ("__init__", "spec")}


def test_docs_metrics_md_holds_the_sources_table():
    doc = (REPO / "docs" / "metrics.md").read_text()
    assert metrics_command.sources_markdown(registry.SOURCES) in doc


def test_doctor_prints_each_record_check(capsys, monkeypatch):
    monkeypatch.setattr(hostmod, "probe", lambda: _host("Plan9"))  # a host without host-wide checks
    doctor.run(type("Args", (), {"json": False})())
    lines = capsys.readouterr().out.splitlines()[1:]
    checks = registry.source_checks(_host("Plan9"))
    assert [ln.split()[1] for ln in lines] == ["source"] * len(checks) == ["source"] * len(
        [s for s in registry.SOURCES if s.check])
    assert [ln.split(None, 2)[2].startswith(c.name) for ln, c in zip(lines, checks)] == [True] * len(checks)


# --- a new source module appears everywhere -------------------------------------------------------------------

FAKE = '''
from typing import List, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Entity, Kind, Record, Sample
from zfsmon.sources.base import Collector, PolledCollector
from zfsmon.sources.spec import Source, TextKind


def parse_fake(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    return [Sample(float(i), Entity(Kind.DEVICE, "fake0"), {"reads": float(ln.split()[1])}, source="fake")
            for i, ln in enumerate(text.splitlines()) if ln.startswith("fakestat ")]


class FakeCollector(PolledCollector):
    name = "fake"

    def read_text(self) -> str:
        return "fakestat 1\\n"

    def parse(self, text: str, ts: float) -> List[Record]:
        return parse_fake(text, self.name)


def check_host(host: Host) -> Check:
    return Check("fake stats", host.system == "Linux", "fake device" if host.system == "Linux" else "Linux only")


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return FakeCollector()


SOURCE = Source(name="fake", help="a made-up device counter", order=65, check=check_host, collector=_collector,
                kinds=(TextKind("fakestat", "fakestat lines", lambda t: t.startswith("fakestat "), parse_fake,
                                "fakestat 5"),),
                family="device")
'''


@pytest.fixture
def fake_package(tmp_path: Path) -> Iterator[str]:
    """A throw-away package holding one source module (and a helper module without a record)."""
    pkg = tmp_path / "fakesources"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fake.py").write_text(textwrap.dedent(FAKE))
    (pkg / "helper.py").write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    yield "fakesources"
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m == "fakesources" or m.startswith("fakesources.")]:
        del sys.modules[name]


def test_a_new_source_module_appears_in_every_derived_list(fake_package):
    found = discover(fake_package) + registry.SOURCES
    found = tuple(sorted(found, key=lambda s: (s.order, s.name)))
    assert [s.name for s in discover(fake_package)] == ["fake"]
    linux = _host("Linux")
    # record / top / exporter
    assert "fake" in [s.name for s in registry.collectable(found)]
    made, skipped = registry.build_collectors(linux, 1.0, names=["fake"], sources=found)
    assert [c.name for c in made] == ["fake"] and not skipped
    assert isinstance(made[0], Collector) and made[0].poll()[0].metrics == {"reads": 1.0}
    _, skipped = registry.build_collectors(_host("SunOS"), 1.0, sources=discover(fake_package))
    assert skipped == ["fake: Linux only"]  # the reason doctor prints
    with pytest.raises(UserError, match="source fake is not available here: Linux only"):
        registry.build_collectors(_host("SunOS"), 1.0, names=["fake"], sources=found)
    # parse / import
    kinds = detect.kinds_of(found)
    assert list(kinds)[-1] == "fio" and "fakestat" in kinds
    assert detect.detect("fakestat 7\n", kinds) is kinds["fakestat"]
    # doctor
    assert "fake" in [c.name for c in registry.source_checks(linux, found)]
    # docs/metrics.md
    assert "| `fake` | a made-up device counter | yes | `fakestat`: fakestat lines (e.g. `fakestat 5`) | `device` |" \
        in metrics_command.sources_markdown(found)


def test_a_module_dropped_into_zfsmon_sources_is_discovered(tmp_path, monkeypatch):
    """The real package: one more file on its path is one more source."""
    (tmp_path / "zz_fake_source.py").write_text(textwrap.dedent(FAKE))
    monkeypatch.setattr(zfsmon.sources, "__path__", [*zfsmon.sources.__path__, str(tmp_path)])
    try:
        names = [s.name for s in discover()]
    finally:
        sys.modules.pop("zfsmon.sources.zz_fake_source", None)
    assert names[names.index("diskstats") + 1] == "fake"  # order 65: between diskstats (60) and iostat (70)


def _contributing_example() -> str:
    doc = (REPO / "docs" / "contributing.md").read_text()
    block = doc.split("<!-- example-source -->", 1)[1]
    return block.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_contributing_example_is_a_working_source(fake_package, tmp_path, fixtures):
    """docs/contributing.md's module, as written, is discovered, checked, started and parses a real capture."""
    (tmp_path / fake_package / "zfetch.py").write_text(_contributing_example())
    found = {s.name: s for s in discover(fake_package)}
    zfetch = found["zfetch"]
    assert zfetch.family in metrics.FAMILIES
    on = registry.source_checks(_host("SunOS"), [zfetch])
    assert [(c.name, c.ok) for c in on] == [("zfetch", False)]
    _, skipped = registry.build_collectors(_host("SunOS"), 1.0, sources=[zfetch])
    assert skipped == ["zfetch: no /proc/spl/kstat/zfs/zfetchstats"]
    mod = sys.modules[f"{fake_package}.zfetch"]
    text = (fixtures / "kstat_misc" / "linux-zol-0.6.4__proc_spl_kstat_zfs_zfetchstats.txt").read_text()
    (sample,) = mod.parse_zfetch(text, 1.0)
    assert sample.metrics["hits"] == 7812959060 and sample.entity.name == "zfetch"


def test_a_source_in_a_family_subpackage_is_discovered_in_order(fake_package, tmp_path):
    """A family's modules live in a subpackage (zfsmon.sources.zpool, .kstat, ...): discovery walks into it, a
    record there sorts by (order, name) with the others, and a subpackage module that fails to import is an error."""
    family = tmp_path / fake_package / "family"
    family.mkdir()
    (family / "__init__.py").write_text('"""A family of fake sources."""\n')
    (family / "early.py").write_text(
        "import dataclasses\nfrom fakesources.fake import SOURCE as _S\n"
        "SOURCE = dataclasses.replace(_S, name='early', order=5, kinds=())\n")
    found = discover(fake_package)
    assert [(s.name, s.order) for s in found] == [("early", 5), ("fake", 65)]
    (family / "broken.py").write_text("import zfsmon.no_such_module\n")
    with pytest.raises(ModuleNotFoundError, match="zfsmon.no_such_module"):
        discover(fake_package)


def test_a_broken_source_module_is_an_error_not_a_missing_source(fake_package, tmp_path):
    (tmp_path / fake_package / "broken.py").write_text("import zfsmon.no_such_module\n")
    with pytest.raises(ModuleNotFoundError, match="zfsmon.no_such_module"):
        discover(fake_package)


def test_two_records_with_one_name_are_refused(fake_package, tmp_path):
    (tmp_path / fake_package / "again.py").write_text(
        "from fakesources.fake import SOURCE as _S\nimport dataclasses\nSOURCE = dataclasses.replace(_S, kinds=())\n")
    with pytest.raises(ValueError, match="source name.*fake"):
        discover(fake_package)


def test_a_collector_without_a_check_is_refused():
    with pytest.raises(ValueError, match="needs a check"):
        Source("x", "x", 1, collector=lambda h, i, p: None)  # type: ignore[arg-type,return-value]


def test_unknown_source_name_lists_the_known_ones():
    with pytest.raises(UserError, match="unknown source nope .known: zpool, zpool-influxdb, latency, status, vdevprops, arcstats"):
        registry.build_collectors(_host(), 1.0, names=["nope"])
    with pytest.raises(UserError, match="unknown source fio .known: zpool, zpool-influxdb, latency, status, vdevprops, arcstats"):
        registry.build_collectors(_host(), 1.0, names=["diskstats", "fio"])  # a source, but parse-only


# --- one name per source: what a source's readers emit carries its record's name -------------------------------

#: a record whose samples carry another name by design: the stock tracing tools' output is named after each tool
#: (``trace:zfsdist``), as zfsmon's own tracing scripts' samples are
NAMED_PER_TOOL = {"trace-tools"}


def test_every_record_a_source_reads_from_a_capture_carries_its_records_name(fixtures):
    """Each shared capture, read by the source whose text kind it is: every sample's and event's ``source`` is that
    record's name, the one the dashboard's error areas, doctor and the exporter's labels route by."""
    owner = {k.name: s for s in registry.SOURCES for k in s.kinds}
    read: Dict[str, int] = {}
    for path in sorted(p for p in fixtures.rglob("*") if p.is_file() and p.suffix != ".md"):
        text = path.read_text(errors="replace")
        kind = detect.detect(text)
        if kind is None or owner[kind.name].name in NAMED_PER_TOOL:
            continue
        rec = owner[kind.name]
        try:
            records = kind.read(text, path.name, None)
        except Exception:  # a capture its kind refuses (truncated on purpose): another test's business
            continue
        names = {r.source for r in records if isinstance(r, Sample)}
        assert names <= {rec.name}, f"{path.name} ({kind.name}): samples of {names - {rec.name}}, record {rec.name}"
        # the reader's notes about the text itself (its clock, a guessed tree) are named after the text, as
        # `zfsmon parse`'s own are; every other event is the source's
        told = {r.source for r in records if isinstance(r, Event) and r.source}
        assert told <= {rec.name, path.name}, f"{path.name} ({kind.name}): events of {told}, record {rec.name}"
        read[rec.name] = read.get(rec.name, 0) + sum(1 for r in records if isinstance(r, Sample))
    # the kstat, zpool, block-device and workload families are all among the captures
    assert {"arcstats", "zil", "zpool", "status", "objset", "txgs", "iostat", "pgbench"} <= {n for n, c in read.items() if c}, \
        sorted(read)


def test_every_collector_is_named_and_names_its_records_by_its_record(tmp_path):
    """Each record's own collector (as `record` and `top` make it) is called by the record's name and names its
    error events so; the block-device collector, reading a /proc/diskstats line, names its samples so too."""
    linux = Host("Linux", "6.1", "lab", "openzfs-kmod", "2.2.2", zfs_userland="zfs-2.2.2-1")
    made = [(rec, rec.collector(linux, 1.0, ("tank",))) for rec in registry.SOURCES if rec.collector is not None]
    assert {rec.name for rec, _ in made} >= {"zpool", "latency", "status", "arcstats", "zil", "diskstats"}
    for rec, col in made:
        assert col.name == rec.name
        assert col._error(f"{col.name}: cannot read: Permission denied").source == rec.name
    disks = tmp_path / "diskstats"
    disks.write_text("   8       0 sda 100 0 800 10 50 0 400 5 0 15 15 0 0 0 0 0 0\n")
    col = diskstats.DiskstatsCollector(path=str(disks), clock=lambda: 1.0)
    col.start()
    try:
        records = col.poll()
    finally:
        col.stop()
    assert records and {r.source for r in records} == {diskstats.SOURCE.name}, records
