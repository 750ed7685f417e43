"""Linux per-dataset (objset-*) and old per-pool (io) kstats from real captures (iostats, txgs: their own tests)."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fixture_files, fixture_ids
from tests.unit.mangle import variants
from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.kstat import objset

MISC = fixture_files("kstat_misc")
OBJSET = [p for p in MISC if "_objset-" in p.name]
IO = [p for p in MISC if p.name.endswith("_io.txt")]
IOSTATS = [p for p in MISC if p.name.endswith("_iostats.txt")]
TXGS = [p for p in MISC if "_txgs" in p.name]


def _one(paths, part):
    [p] = [x for x in paths if part in x.name]
    return p


@pytest.mark.parametrize("path", OBJSET, ids=fixture_ids(OBJSET))
def test_every_objset_capture(path, fixtures):
    text = path.read_text()
    s = objset.parse_objset(text, 5.0, path.name)
    ndata = int(text.split()[3])  # the kstat header says how many statistics follow
    assert ndata in (7, 27)
    assert len(s.metrics) == ndata - 1  # all but dataset_name
    assert s.entity.kind == Kind.DATASET and s.entity.pool == s.entity.name.split("/")[0]
    for k in ("reads", "writes", "read_bytes", "write_bytes", "unlinks", "unlinked"):
        assert k in s.metrics and metrics.is_counter(Kind.DATASET, k)
    assert all(metrics.lookup(Kind.DATASET, k) is not None for k in s.metrics)


def test_objset_7_fields(fixtures):
    s = objset.parse_objset(_one(OBJSET, "objset-2").read_text(), 5.0)
    assert s.entity.key == "dataset:pool1/pool1/dataset1"
    assert dict(s.metrics) == {"writes": 4, "write_bytes": 12302, "reads": 2, "read_bytes": 28, "unlinks": 3,
                               "unlinked": 3}
    root = objset.parse_objset(_one(OBJSET, "objset-1").read_text(), 5.0)
    assert root.entity.name == "pool1" and root.metrics["reads"] == 0


def test_objset_27_fields(fixtures):
    s = objset.parse_objset(_one(OBJSET, "objset-0x40b").read_text(), 5.0)
    assert (s.entity.name, s.entity.pool) == ("zroot-nas/00040b", "zroot-nas")
    assert s.metrics["reads"] == 5835313674
    assert s.metrics["read_bytes"] == 9207671590262
    assert s.metrics["write_bytes"] == 806560694570
    assert s.metrics["zil_commit_count"] == 45507459
    assert s.metrics["zil_itx_metaslab_normal_alloc"] == 517303713792
    assert s.metrics["zil_itx_metaslab_slog_count"] == 0
    store = objset.parse_objset(_one(OBJSET, "objset-0x36").read_text(), 5.0, pool="store")
    assert store.entity.name == "store" and len(store.metrics) == 26


def test_objset_rates(fixtures):
    s = objset.parse_objset(_one(OBJSET, "objset-0x40b").read_text(), 100.0)
    later = dict(s.metrics, reads=s.metrics["reads"] + 1000, read_bytes=s.metrics["read_bytes"] + 8192000)
    rd = RateDeriver()
    rd.update(s)
    d, ev = rd.update(Sample(110.0, s.entity, later, source=s.source))
    assert ev == [] and d is not None
    assert d.rates["reads"] == 100.0 and d.rates["read_bytes"] == 819200.0 and d.rates["writes"] == 0.0


@pytest.mark.parametrize("path", IO, ids=fixture_ids(IO))
def test_every_pool_io_capture(path, fixtures):
    s = objset.parse_pool_io(path.read_text(), 1.0, "p", path.name)
    assert s.entity.key == "pool:p/p"
    assert set(s.metrics) == set(objset.IO_FIELDS.values())
    for k in s.metrics:
        spec = metrics.lookup(Kind.POOL, k)
        assert spec is not None and (spec.kind == metrics.GAUGE) == k.endswith("_queue")


def test_pool_io_values(fixtures):
    s = objset.parse_pool_io(_one(IO, "pool1_io").read_text(), 1.0, "pool1")
    assert s.metrics["io_read_bytes"] == 1884160 and s.metrics["io_write_bytes"] == 3206144
    assert s.metrics["io_reads"] == 22 and s.metrics["io_writes"] == 132
    assert s.metrics["io_wait_ns"] == 7155162 and s.metrics["io_run_ns"] == 24168078
    z = objset.parse_pool_io(_one(IO, "zstore_io").read_text(), 1.0, "zstore")
    assert z.metrics["io_reads"] == 15944997 and z.metrics["io_writes"] == 44336169
    assert z.metrics["io_write_bytes"] == 2817338549248
    assert z.metrics["io_run_len_ns"] == pytest.approx(15480260499887487)


def test_not_an_objset(fixtures):
    with pytest.raises(ParseError, match="dataset_name"):
        objset.parse_objset(_one(IOSTATS, "store").read_text(), 1.0, "iostats")
    with pytest.raises(ParseError):
        objset.parse_pool_io(_one(OBJSET, "objset-2").read_text(), 1.0, "p")


def test_truncated_objset_is_an_error(fixtures):
    lines = _one(OBJSET, "objset-0x40b").read_text().splitlines()
    with pytest.raises(ParseError, match="announces 27"):
        objset.parse_objset("\n".join(lines[:10]), 1.0, "objset-0x40b")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(OBJSET + IO + IOSTATS), st.data())
def test_mangled_input_only_raises_parse_error(path, data):
    for variant in variants(path.read_text(), data):
        for fn in (lambda t: objset.parse_objset(t, 1.0), lambda t: objset.parse_pool_io(t, 1.0, "p")):
            try:
                fn(variant)
            except ParseError:
                pass


def _tree(tmp_path, fixtures):
    """A /proc/spl/kstat/zfs-shaped tree made of the real captures (real kernels name files objset-0xID)."""
    root = tmp_path / "zfs"
    (root / "zroot-nas").mkdir(parents=True)
    shutil.copy(_one(OBJSET, "objset-0x40b"), root / "zroot-nas" / "objset-0x40b")
    shutil.copy(_one(IOSTATS, "zroot-nas"), root / "zroot-nas" / "iostats")
    shutil.copy(_one(TXGS, "zroot-nas_txgs"), root / "zroot-nas" / "txgs")
    shutil.copy(_one(MISC, "zroot-nas_reads_empty"), root / "zroot-nas" / "reads")
    (root / "pool1").mkdir()
    shutil.copy(_one(IO, "pool1_io"), root / "pool1" / "io")
    shutil.copy(_one(OBJSET, "objset-2"), root / "pool1" / "objset-0x2")
    (root / "arcstats").write_text("not a pool directory, a file")
    return root


def test_collector_reads_every_pool(tmp_path, fixtures):
    root = _tree(tmp_path, fixtures)
    c = objset.ObjsetCollector(str(root), clock=lambda: 50.0)
    recs = c.poll()
    assert not [r for r in recs if isinstance(r, Event)], recs
    keys = sorted(r.entity.key for r in recs)
    # iostats and txgs lie beside them but are other sources' files
    assert keys == ["dataset:pool1/pool1/dataset1", "dataset:zroot-nas/zroot-nas/00040b", "pool:pool1/pool1"]
    assert all(r.ts == 50.0 for r in recs)


def test_collector_keeps_going_on_bad_files(tmp_path, fixtures):
    root = _tree(tmp_path, fixtures)
    (root / "pool1" / "io").write_text("12 3 0x00 1 80 1 2\nnread nwritten\n")
    c = objset.ObjsetCollector(str(root), pools=["pool1", "zroot-nas", "gone"], clock=lambda: 1.0)
    recs = c.poll()
    errors = [r for r in recs if isinstance(r, Event)]
    assert all(e.kind == EventKind.ERROR for e in errors) and len(errors) == 2
    assert any("gone" in e.text for e in errors) and any("pool1/io" in e.text for e in errors)
    assert len([r for r in recs if isinstance(r, Sample)]) == 2
    missing = objset.ObjsetCollector(str(tmp_path / "nope"), clock=lambda: 1.0).poll()
    assert len(missing) == 1 and missing[0].kind == EventKind.ERROR


def test_no_collector_without_spl_kstats(tmp_path):
    assert objset.collector_for_host(str(tmp_path / "absent")) is None
    if not os.path.isdir(objset.ROOT):  # this machine (zfs-fuse) has none
        assert objset.collector_for_host() is None
