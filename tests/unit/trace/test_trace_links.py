"""Block tracepoints name the kernel's device (``vdb``); a pool made from /dev/disk/by-id lists ``virtio-data0``.

The guest's pool is such a pool: its plain ``zpool status`` and ``zpool status -L`` (which prints the resolved
kernel names) were captured in the same run (tests/data/openzfs-2.3/bcc, PROVENANCE.md). Pairing their rows
gives the real symlink resolution, so the bcc capture's blklat blocks must resolve to leaves with roles through
the by-id listing too, as they do on the live guest.
"""

from __future__ import annotations

from typing import Dict, List

from tests.conftest import TEST_DATA
from zfsmon.model import Role, Sample
from zfsmon.sources.devices.diskstats import disk_partitions
from zfsmon.sources.zpool.status import parse_status
from zfsmon.trace.protocol import TraceParser
from zfsmon.trace.resolve import Names, kernel_links

DATA = TEST_DATA / "openzfs-2.3" / "bcc"


def _by_id_resolution(leaves: List[str]) -> Dict[str, List[str]]:
    """What /dev/disk/by-id said in the guest: the two listings' leaves, row by row."""
    by_id = [line.split()[0] for line in (DATA / "zpool-status.txt").read_text().splitlines()
             if line.strip().startswith("virtio-")]
    kernel = [line.split()[0] for line in (DATA / "zpool-status-L.txt").read_text().splitlines()
              if line.strip().startswith("vd")]
    pairs = dict(zip(by_id, kernel))
    return {leaf: [pairs[leaf]] for leaf in leaves if leaf in pairs}


def test_kernel_links_map_kernel_names_to_the_leaves_zpool_lists() -> None:
    topo = parse_status((DATA / "zpool-status.txt").read_text())
    links = kernel_links(topo, resolve=_by_id_resolution)
    assert links == {"vdb": "virtio-data0", "vdc": "virtio-data1", "vdd": "virtio-data2", "vde": "virtio-data3",
                     "vdf": "virtio-log0", "vdg": "virtio-cache0"}


def test_blklat_resolves_roles_through_by_id_names() -> None:
    topo = parse_status((DATA / "zpool-status.txt").read_text())
    devices = dict(reversed(line.split()) for line in (DATA / "block-devs.txt").read_text().splitlines())
    names = Names(topology=topo, devices=devices, links=kernel_links(topo, resolve=_by_id_resolution))
    parser = TraceParser("trace:bcc", names)
    samples = [r for line in (DATA / "bcc-all.out").read_text().splitlines() for r in parser.feed(line, 0.0)
               if isinstance(r, Sample) and r.source == "trace:blklat"]
    roles = {s.entity.name: (s.entity.role, s.entity.parent) for s in samples}
    assert roles["virtio-data0"] == (Role.DATA, "mirror-0")
    assert roles["virtio-data3"] == (Role.DATA, "mirror-1")
    assert roles["virtio-log0"][0] == Role.LOG
    # without the links the same stream names bare kernel devices, with no role
    bare = TraceParser("trace:bcc", Names(topology=topo, devices=devices))
    plain = {r.entity.name for line in (DATA / "bcc-all.out").read_text().splitlines() for r in bare.feed(line, 0.0)
             if isinstance(r, Sample) and r.source == "trace:blklat"}
    assert "vdb" in plain and "virtio-data0" not in plain


def test_a_whole_disk_leaf_claims_its_partitions_and_its_part1_path() -> None:
    """D's io provider names a bio's partition (vdb1: ZFS puts a whole disk's data in partition 1), and zil.d the
    vdev's own path (/dev/disk/by-id/virtio-log0-part1): both resolve to the leaf zpool lists, with its role."""
    topo = parse_status((DATA / "zpool-status.txt").read_text())
    links = kernel_links(topo, resolve=_by_id_resolution, partitions=lambda disk: [f"{disk}1", f"{disk}9"])
    assert links["vdb"] == links["vdb1"] == links["vdb9"] == "virtio-data0"
    assert links["vdf1"] == "virtio-log0" and links["vdg1"] == "virtio-cache0"
    names = Names(topology=topo, links=links)
    data = names("name", "vdb1")
    assert (data.name, data.role, data.parent, data.pool) == ("virtio-data0", Role.DATA, "mirror-0", "zguest")
    log = names("name", "/dev/disk/by-id/virtio-log0-part1")
    assert (log.name, log.role, log.pool) == ("virtio-log0", Role.LOG, "zguest")
    assert names("name", "vdz1").pool == ""  # no leaf: left as the script named it


def test_disk_partitions_reads_sysfs(tmp_path) -> None:
    for part in ("vdb1", "vdb9"):
        (tmp_path / "vdb" / part).mkdir(parents=True)
        (tmp_path / "vdb" / part / "partition").write_text("1\n")
    (tmp_path / "vdb" / "queue").mkdir()
    assert disk_partitions("vdb", str(tmp_path)) == ["vdb1", "vdb9"]
    assert disk_partitions("vdb1", str(tmp_path)) == [] and disk_partitions("nope", str(tmp_path)) == []
