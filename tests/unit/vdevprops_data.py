"""The OpenZFS 2.4.4 guest's slow-leaf captures (tests/data/openzfs-2.4/slow, its PROVENANCE.md), for the
vdevprops source's tests and the dashboard's: a raidz1 of ten file vdevs with ``autosit`` on, whose leaf
``/var/tmp/zslow/vdev.9`` had its reads delayed 200 ms by zinject until ZFS sat it out (``sit_out on``), its
slow I/Os counted by ``zpool status -s`` (zio_slow_io_ms 100; the other leaves' few are TCG's)."""

from __future__ import annotations

from typing import List

from tests.conftest import TEST_DATA
from zfsmon.model import Record
from zfsmon.sources.zpool import health as zpool_health
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool import vdev_props
from zfsmon.sources.zpool.status import parse_status

SLOW = TEST_DATA / "openzfs-2.4" / "slow"
POOL = "zslow"
#: the leaf that sat out, and the one beside it that did not
BAD, GOOD = "/var/tmp/zslow/vdev.9", "/var/tmp/zslow/vdev.0"
#: `zpool get -p all zslow all-vdevs` while vdev.9 sat out, and before the delay
LISTING = (SLOW / "zpool-get-all-vdevs-raidz-sitout.txt").read_text()
BEFORE = (SLOW / "zpool-get-all-vdevs-raidz.txt").read_text()
#: `zpool status -sp zslow` meanwhile: vdev.9 at 49 slow I/Os
STATUS = (SLOW / "zpool-status-sp-raidz.txt").read_text()
IOSTAT = (SLOW / "zpool-iostat-vlp-raidz.txt").read_text()


def records(t0: float) -> List[Record]:
    """`zpool iostat -vlp` every 2 s from ``t0`` (its first report since import), the status at ``t0 + 1``, the
    vdev properties at ``t0 + 2``: what `record` would have written of the pool then."""
    topo = parse_status(STATUS)
    recs: List[Record] = list(zpool_iostat.parse_text(IOSTAT, interval=2.0, start_ts=t0, topology=topo))
    recs += zpool_health.samples(zpool_health.parse_any(STATUS, "status"), t0 + 1)
    recs += vdev_props.samples(vdev_props.parse_listing(LISTING, "vdevprops", POOL), t0 + 2)
    return sorted(recs, key=lambda r: r.ts)
