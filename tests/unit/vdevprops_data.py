"""The OpenZFS 2.4.4 guest's captures (tests/data/openzfs-2.4) made a RAIDZ pool with a leaf sitting out and error
counts, for the vdevprops source's tests and the dashboard's.

Neither is among the captures: the guest's pool is two mirrors, its counters are all 0, and no capture of a
raidz pool or of a counted error holds `zpool status -s`'s SLOW or vdev properties. So the real texts are edited
by OpenZFS 2.4.4's own rules (module/zfs/vdev.c, cmd/zpool): zpool names the first vdev ``raidz1-0`` where the
kernel says ``raidz-0`` (its leaves' ``parent``, the root's ``children``), a raidz leaf also lists ``sit_out``
and its vdev ``autosit`` (after ``slow_ios``, in vdev_prop_t's order), and a count is a number in its column.
"""

from __future__ import annotations

import re
from typing import List

from tests.conftest import TEST_DATA
from zfsmon.model import Record
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool import vdev_props
from zfsmon.sources.zpool.status import parse_status

D24 = TEST_DATA / "openzfs-2.4"
LISTING = (D24 / "zpool-get-all-vdevs.txt").read_text()
STATUS = (D24 / "zpool-status.txt").read_text()
#: `zpool status -p -s zguest`: its virtio-data2 row, whose counts :func:`status_with_errors` edits
DATA2_ROW = "    virtio-data2  ONLINE       0     0     0     0"


def raidz_listing(text: str = LISTING) -> str:
    """The listing with ``mirror-0`` a raidz1 vdev, ``virtio-data0`` sitting out (``virtio-data1`` not) and
    ``autosit`` on."""
    out = []
    for line in text.splitlines():
        name = line.split()[0]
        line = re.sub(r"^mirror-0 ", "raidz1-0 ", line)
        line = re.sub(r"(parent +)mirror-0 ", r"\1raidz-0 ", line)
        line = line.replace("mirror-0,mirror-1", "raidz-0,mirror-1")
        out.append(line)
        if line.split()[1:2] == ["slow_ios"]:
            if name == "virtio-data0":
                out.append("virtio-data0  sit_out            on                                                   -")
            elif name == "virtio-data1":
                out.append("virtio-data1  sit_out            off                                                  -")
            elif name == "mirror-0":
                out.append("raidz1-0  autosit            on                                                   local")
    return "\n".join(out) + "\n"


def raidz(text: str) -> str:
    """A ``zpool status`` or ``zpool iostat`` text of the guest with ``mirror-0`` named as a raidz1 vdev."""
    return text.replace("mirror-0", "raidz1-0")


def status_with_errors() -> str:
    """``zpool status -p -s`` with virtio-data2 at 3 checksum errors and 2 slow I/Os."""
    text = (D24 / "zpool-status-ps.txt").read_text()
    assert DATA2_ROW in text
    return raidz(text.replace(DATA2_ROW, DATA2_ROW[:-7] + "3     2"))


def records(t0: float) -> List[Record]:
    """The raidz guest: `zpool iostat -vp` every 2 s from ``t0`` (its first report since import), the status with
    errors at ``t0 + 1``, the vdev properties at ``t0 + 2``."""
    topo = parse_status(raidz(STATUS))
    recs: List[Record] = list(zpool_iostat.parse_text(raidz((D24 / "zpool-iostat-vp.txt").read_text()),
                                                      interval=2.0, start_ts=t0, topology=topo))
    recs += zpool_health.samples(zpool_health.parse_any(status_with_errors(), "status"), t0 + 1)
    recs += vdev_props.samples(vdev_props.parse_listing(raidz_listing(), "vdevprops", "zguest"), t0 + 2)
    return sorted(recs, key=lambda r: r.ts)
