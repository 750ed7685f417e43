"""Pool and vdev health from ``zpool status``: state, error counters, ``slow_ios`` and scrub/resilver progress.

Read by the ``status`` source (:mod:`zfsmon.sources.zpool.health`): ``zpool
status -j --json-flat-vdevs --json-int`` on OpenZFS >= 2.3, the text of
``zpool status`` elsewhere (older OpenZFS, illumos, FreeBSD's legacy ZFS,
zfs-fuse). States are stored as a numeric code (:data:`STATE_CODES`; a view
that wants a ``state`` label maps it back with :data:`STATE_NAMES`) and as an
``online`` 0/1 gauge that alert rules can use as they are. The READ/WRITE/CKSUM
counts and ``slow_ios`` only grow until ``zpool clear`` (or an export) zeroes
them, which zfsmon sees as a counter reset. A state change is also an event
in the recording ("mirror-0 DEGRADED (was ONLINE)").
"""

from __future__ import annotations

from typing import Dict, List

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

#: every vdev/pool state zpool prints, with the code stored for it (ONLINE, the healthy one, is 0)
STATE_CODES: Dict[str, int] = {
    "ONLINE": 0, "DEGRADED": 1, "FAULTED": 2, "OFFLINE": 3, "UNAVAIL": 4, "REMOVED": 5, "SUSPENDED": 6,
    "AVAIL": 7, "INUSE": 8,  # spares: available / in use replacing a device
}
STATE_NAMES: Dict[int, str] = {v: k for k, v in STATE_CODES.items()}
#: states in which a vdev is doing its job (spares that are available or in use included)
HEALTHY_STATES = ("ONLINE", "AVAIL", "INUSE")
#: scrub/resilver function (``scan_function``) and state (``scan_state``) codes, as the kernel numbers them
SCAN_FUNCTIONS: Dict[str, int] = {"NONE": 0, "SCRUB": 1, "RESILVER": 2, "ERRORSCRUB": 3}
SCAN_STATES: Dict[str, int] = {"NONE": 0, "SCANNING": 1, "FINISHED": 2, "CANCELED": 3, "ERRORSCRUBBING": 4}
#: the data keys of the events a health change (the new state), a scan's start or end (its function) and a leaf's
#: error counts changing (the counts) carry
EVENT_HEALTH = "health"
EVENT_SCAN = "scan"
EVENT_ERRORS = "errors"
#: the error counters of a row, with the word an event uses for each
ERROR_WORDS: Dict[str, str] = {"read_errors": "read", "write_errors": "write", "checksum_errors": "checksum"}

_TREE = (Kind.POOL, Kind.VDEV, Kind.LEAF)
_J = "zpool status -j (OpenZFS >= 2.3)"
_TEXT = "zpool status"


def _src(json_field: str, text: str) -> Dict[str, str]:
    return {"linux": f"{_J} {json_field}; older: {text}", "freebsd": f"{_J} {json_field}; older: {text}",
            "illumos": text, "zfs-fuse": text}


def _scan(name: str, unit: str, help: str, json_field: str, text: str = "scan: lines") -> MetricSpec:
    return MetricSpec(name, unit, GAUGE, help, (Kind.POOL,), _src(f"scan_stats.{json_field}", f"{_TEXT} {text}"))


SPECS: List[MetricSpec] = [
    MetricSpec("state", "code", GAUGE, "health state as a code: " + ", ".join(f"{c} {n}" for n, c in
                                                                              STATE_CODES.items()),
               _TREE, _src("state", "STATE column / state: line")),
    MetricSpec("online", "count", GAUGE, "1 while the pool/vdev is ONLINE (a spare AVAIL or INUSE), else 0",
               _TREE, _src("state", "STATE column")),
    MetricSpec("read_errors", "count", COUNTER, "read I/O errors (since import or `zpool clear`)", _TREE,
               _src("read_errors", "READ column")),
    MetricSpec("write_errors", "count", COUNTER, "write I/O errors (since import or `zpool clear`)", _TREE,
               _src("write_errors", "WRITE column")),
    MetricSpec("checksum_errors", "count", COUNTER, "checksum errors (since import or `zpool clear`)", _TREE,
               _src("checksum_errors", "CKSUM column")),
    MetricSpec("slow_ios", "count", COUNTER, "I/Os that took longer than zio_slow_io_ms (30 s by default); "
               "leaves only", (Kind.LEAF, Kind.VDEV), {"linux": f"{_J} slow_ios; 0.8-2.2: zpool status -s SLOW",
                                                      "freebsd": f"{_J} slow_ios"}),
    MetricSpec("data_errors", "count", GAUGE, "files/objects with permanent data errors (`errors:` line)",
               (Kind.POOL,), _src("error_count", "errors: line")),
    _scan("scan_function", "code", "what the last or current scan is: " + ", ".join(
        f"{c} {n.lower()}" for n, c in SCAN_FUNCTIONS.items()), "function"),
    _scan("scan_state", "code", "its state: " + ", ".join(f"{c} {n.lower()}" for n, c in SCAN_STATES.items()),
          "state"),
    _scan("scrubbing", "count", "1 while a scrub runs, else 0", "function/state"),
    _scan("resilvering", "count", "1 while a resilver runs, else 0", "function/state"),
    _scan("scan_progress_pct", "%", "share of the scan done (issued / to examine, as `% done`)",
          "issued/to_examine", "`% done`"),
    _scan("scan_examined_bytes", "B", "bytes examined (scanned) so far by the current or last scan", "examined",
          "`scanned`"),
    _scan("scan_issued_bytes", "B", "bytes of I/O issued so far by the scan", "issued", "`issued`"),
    _scan("scan_to_examine_bytes", "B", "bytes the scan has to examine in all", "to_examine", "`total`"),
    _scan("scan_processed_bytes", "B", "bytes repaired (scrub) or resilvered", "processed",
          "`repaired`/`resilvered`"),
    _scan("scan_errors", "count", "errors the scan found", "errors", "`with N errors`"),
    _scan("scan_start_time", "s", "when the scan started (epoch seconds)", "start_time", "`since DATE`"),
    _scan("scan_end_time", "s", "when the last scan ended (epoch seconds; absent while one runs)", "end_time",
          "`on DATE`"),
]
