"""The device view on the zfs-fuse lab: diskstats sees the loop devices ZFS uses, and the verdict is no goose egg."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.lab.helpers import drop_host_caches, interval_leaf_ops, random_reads, write_file
from zfsmon.analysis import goose
from zfsmon.analysis.rates import RateDeriver
from zfsmon.lab.config import KSTAT_DIR
from zfsmon.model import Sample
from zfsmon.sources.devices import diskstats
from zfsmon.sources.kstat import objset

pytestmark = [pytest.mark.lab]


def _device_ops(before, after):
    """Device name -> ops/s between two diskstats polls, through the same rate code the tools use."""
    rd = RateDeriver()
    out = {}
    for b, a in zip(before, after):
        assert isinstance(b, Sample) and isinstance(a, Sample) and b.entity == a.entity
        rd.update(b)
        d, ev = rd.update(a)
        assert not ev and d is not None
        out[a.entity.name] = goose.device_ops_per_s(d.rates)
    return out


def test_data_loop_devices_count_the_workload_and_no_goose_egg(lab):
    data = lab.devices["data"]
    leaf_devs = diskstats.resolve_leaves(data)
    assert set(leaf_devs) == set(data), f"unresolved data devices: {set(data) - set(leaf_devs)}"
    names = sorted({v[0] for v in leaf_devs.values()})
    assert all(n.startswith("loop") for n in names)
    collector = diskstats.DiskstatsCollector(names)
    path = os.path.join(lab.mountpoint, "device-lab.bin")

    def workload() -> None:
        # larger than the lab's ARC, so that the random reads reach the leaves too: the ZFS side is then busy for as
        # long as the workload runs, and its ops per second do not fall below the judge's threshold when a busy
        # machine stretches the work out (16 MiB stayed in the ARC: only the write's burst reached the leaves, and
        # under load it came to 0.5-0.8 ops/s over the window)
        write_file(path, 96)
        drop_host_caches()
        random_reads(path, 200)

    before = collector.poll()
    t0 = time.time()
    zfs_ops = interval_leaf_ops(lab.pool, data, workload)  # sums of ops/s over the interval reports
    after = collector.poll()
    elapsed = time.time() - t0
    dev_rates = _device_ops(before, after)
    assert all(v > 0 for v in dev_rates.values()), dev_rates
    # zpool iostat names leaves by basename; give both sides per-second rates over the same window
    zfs_rates = {leaf: total / elapsed for leaf, total in zfs_ops.items()}
    by_name = {os.path.basename(p): devs for p, devs in leaf_devs.items()}
    assert all(zfs_rates[leaf] > 0 for leaf in by_name), zfs_ops
    verdicts = goose.judge(zfs_rates, dev_rates, by_name)
    assert [v.verdict for v in verdicts] == [goose.NOT_GOOSE_EGG] * len(by_name), [v.why for v in verdicts]
    for v in verdicts:
        assert v.device == v.leaf and v.ratio is not None and v.ratio > 0.1


def test_device_reads_rise_when_a_lab_file_is_read(lab):
    """Reading a file of the dataset (host caches dropped, ARC too small to hold it) reaches the data loop devices."""
    names = [diskstats.resolve_kernel_name(p) for p in lab.devices["data"]]
    assert all(names), lab.devices["data"]
    path = os.path.join(lab.mountpoint, "device-read.bin")
    write_file(path, 96)  # larger than the lab's ARC
    drop_host_caches()
    c = diskstats.DiskstatsCollector(names)
    before = {s.entity.name: s.metrics["reads"] for s in c.poll()}
    done = threading.Event()

    def reader() -> None:
        with open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(120), "reading the lab file took over 2 minutes"
    after = {s.entity.name: s.metrics["reads"] for s in c.poll()}
    grown = {n: after[n] - before[n] for n in names}
    assert sum(grown.values()) > 0 and sum(1 for g in grown.values() if g > 0) >= 2, grown


def test_zfs_fuse_has_no_objset_kstats(lab):
    """zfs-fuse serves only ARC-family kstats: per-dataset numbers must come from elsewhere here."""
    tree = list(os.walk(KSTAT_DIR))  # the whole /zfs-kstat, not only its zfs/ part
    assert tree, f"{KSTAT_DIR} is empty"
    found = [os.path.join(d, f) for d, _dirs, files in tree for f in files
             if f.startswith("objset") or f in ("io", "iostats", "txgs")]
    found += [d for d, _dirs, _files in tree if os.path.basename(d).startswith(("objset", lab.pool))]
    assert found == []
    assert sorted(os.listdir(lab.kstat_dir)) == ["arcstats", "vdev_cache_stats", "zfetchstats"]
    assert objset.collector_for_host() is None  # no /proc/spl/kstat/zfs on a zfs-fuse host
