"""Linux /proc/diskstats: a capture from this machine, the live file, and a real loop device being read."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA, need
from zfsmon import metrics
from zfsmon.analysis.rates import RateDeriver
from zfsmon.model import Event, EventKind, Kind, ParseError, Sample
from zfsmon.sources.devices import diskstats

CAPTURE = TEST_DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt"


def _by_name(samples):
    return {s.entity.name: s for s in samples}


def test_capture_every_line():
    text = CAPTURE.read_text()
    samples = diskstats.parse_diskstats(text, 3.0, str(CAPTURE))
    assert len(samples) == len(text.splitlines()) == 15
    for s in samples:
        assert s.entity.kind == Kind.DEVICE and s.entity.key == f"device:{s.entity.name}"
        assert len(s.metrics) == 17
        for name in s.metrics:
            spec = metrics.lookup(Kind.DEVICE, name)
            assert spec is not None and (spec.kind == metrics.COUNTER) == (name != "in_flight")


def test_capture_exact_values():
    d = _by_name(diskstats.parse_diskstats(CAPTURE.read_text(), 3.0))
    # "254 0 vda 131950 94225 8319546 64392 281562 16140 6908352 37486 0 26084 107573 5769 41 1943272 581 118070 5113"
    vda = d["vda"].metrics
    assert vda["reads"] == 131950 and vda["reads_merged"] == 94225
    assert vda["read_bytes"] == 8319546 * 512 and vda["read_time_ns"] == 64392 * 1_000_000
    assert vda["writes"] == 281562 and vda["write_bytes"] == 6908352 * 512
    assert vda["in_flight"] == 0 and vda["busy_ns"] == 26084e6 and vda["weighted_ns"] == 107573e6
    assert vda["discards"] == 5769 and vda["discard_bytes"] == 1943272 * 512
    assert vda["flushes"] == 118070 and vda["flush_time_ns"] == 5113e6
    # "7 3 loop3 272 0 67008 202 5538 64 188229 1650 0 608 1971 0 0 0 0 282 118"
    loop3 = d["loop3"].metrics
    assert (loop3["reads"], loop3["writes"], loop3["writes_merged"]) == (272, 5538, 64)
    assert loop3["write_bytes"] == 188229 * 512
    assert all(v == 0 for v in d["zram0"].metrics.values())  # idle devices are kept: zeros are the point


def test_older_kernel_layouts():
    """Kernels before 4.18 print 11 fields, before 5.5 print 15: same values, fewer metrics."""
    line = CAPTURE.read_text().splitlines()[8].split()  # vda
    for n in (11, 15):
        [s] = diskstats.parse_diskstats(" ".join(line[:3 + n]), 1.0)
        assert len(s.metrics) == n and s.metrics["weighted_ns"] == 107573e6
    with pytest.raises(ParseError, match="11, 15 or 17"):
        diskstats.parse_diskstats(" ".join(line[:3 + 12]), 1.0)


def test_filter_and_rates():
    text = CAPTURE.read_text()
    a = diskstats.parse_diskstats(text, 10.0, keep={"loop3"}.__contains__)
    assert [s.entity.name for s in a] == ["loop3"]
    later = dict(a[0].metrics, reads=a[0].metrics["reads"] + 50, busy_ns=a[0].metrics["busy_ns"] + 1e9)
    rd = RateDeriver()
    rd.update(a[0])
    d, _ = rd.update(Sample(12.0, a[0].entity, later, source=a[0].source))
    assert d.rates["reads"] == 25.0 and d.rates["busy_ns"] == 0.5e9 and "in_flight" not in d.rates


def test_bad_input():
    with pytest.raises(ParseError, match="no devices"):
        diskstats.parse_diskstats("", 1.0)
    with pytest.raises(ParseError, match="twice"):
        line = CAPTURE.read_text().splitlines()[0]
        diskstats.parse_diskstats(line + "\n" + line, 1.0)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10_000), st.text(max_size=30))
def test_mangled_input_only_raises_parse_error(cut, junk):
    text = CAPTURE.read_text()
    cut = min(cut, len(text))
    for variant in (text[:cut], text[:cut] + junk + text[cut:], junk):
        try:
            diskstats.parse_diskstats(variant, 1.0)
        except ParseError:
            pass


def test_live_proc_diskstats():
    need(os.path.exists(diskstats.PATH), "no /proc/diskstats (not Linux)")
    c = diskstats.DiskstatsCollector(clock=lambda: 5.0)
    recs = c.poll()
    assert recs and all(isinstance(r, Sample) for r in recs)
    names = {r.entity.name for r in recs}
    assert names == {ln.split()[2] for ln in Path(diskstats.PATH).read_text().splitlines()}


def test_collector_missing_device_and_file(tmp_path):
    recs = diskstats.DiskstatsCollector(["vda", "nosuchdisk"], path=str(CAPTURE), clock=lambda: 1.0).poll()
    assert [r.entity.name for r in recs if isinstance(r, Sample)] == ["vda"]
    [ev] = [r for r in recs if isinstance(r, Event)]
    assert ev.kind == EventKind.ERROR and "nosuchdisk" in ev.text
    [gone] = diskstats.DiskstatsCollector(path=str(tmp_path / "x")).poll()
    assert isinstance(gone, Event) and gone.kind == EventKind.ERROR


@pytest.fixture
def loop_device(require_root):
    need(shutil.which("losetup") is not None, "losetup not installed")
    with tempfile.NamedTemporaryFile(dir="/var/tmp", delete=False) as f:
        f.truncate(8 << 20)
        backing = f.name
    dev = subprocess.run(["losetup", "-f", "--show", backing], capture_output=True, text=True)
    need(dev.returncode == 0, f"cannot attach a loop device: {dev.stderr.strip()}")
    path = dev.stdout.strip()
    try:
        yield path
    finally:
        subprocess.run(["losetup", "-d", path], check=False)
        os.unlink(backing)


@pytest.mark.lab  # root: a loop device
def test_reads_on_a_real_loop_device_are_counted(loop_device):
    name = os.path.basename(loop_device)
    assert diskstats.resolve_kernel_name(loop_device) == name
    c = diskstats.DiskstatsCollector([name])
    [before] = c.poll()
    fd = os.open(loop_device, os.O_RDONLY | os.O_DIRECT)
    try:
        import mmap

        buf = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT requires
        for i in range(4):
            os.preadv(fd, [buf], i << 20)
    finally:
        os.close(fd)
    [after] = c.poll()
    assert after.metrics["reads"] - before.metrics["reads"] >= 4
    assert after.metrics["read_bytes"] - before.metrics["read_bytes"] >= 4 << 20


def test_resolver_follows_symlinks(tmp_path):
    """A by-id style symlink to a real block device resolves to its kernel name."""
    sysblk = Path(diskstats.SYS_BLOCK)
    need(sysblk.is_dir() and any(sysblk.iterdir()), "no /sys/class/block")
    name = sorted(p.name for p in sysblk.iterdir())[0]
    link = tmp_path / "wwn-0xdeadbeef"
    link.symlink_to(f"/dev/{name}")
    if os.path.exists(f"/dev/{name}"):
        assert diskstats.resolve_kernel_name(str(link)) == name
    assert diskstats.resolve_kernel_name(str(tmp_path / "plain-file")) is None
    assert diskstats.resolve_kernel_name("/dev/definitely-not-a-disk") is None


def _fake_sysfs(tmp_path):
    """The shape of /sys/class/block for a disk with one partition (symlinks into /sys/devices)."""
    dev = tmp_path / "devices" / "sdb"
    (dev / "sdb1").mkdir(parents=True)
    (dev / "sdb1" / "partition").write_text("1\n")
    cls = tmp_path / "class_block"
    cls.mkdir()
    (cls / "sdb").symlink_to(dev)
    (cls / "sdb1").symlink_to(dev / "sdb1")
    return str(cls)


def test_partition_leaf_resolves_to_partition_then_disk(tmp_path):
    sysblk = _fake_sysfs(tmp_path)
    byid = tmp_path / "by-id"
    byid.mkdir()
    (byid / "wwn-0x5000c5002e38e0eb-part1").symlink_to("/dev/sdb1")  # as udev makes them
    leaf = str(byid / "wwn-0x5000c5002e38e0eb-part1")
    assert diskstats.resolve_kernel_name(leaf, sysblk) == "sdb1"
    assert diskstats.parent_disk("sdb1", sysblk) == "sdb"
    assert diskstats.parent_disk("sdb", sysblk) is None
    assert diskstats.resolve_leaves([leaf, "gpt/nowhere"], sysblk) == {leaf: ["sdb1", "sdb"]}
