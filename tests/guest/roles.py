"""Where each disk of the guest's pool belongs, and the check that zfsmon's parser agrees on a capture.

Shared by the live tier (the run's captures) and test_captures.py (the committed ones in tests/data).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

from zfsmon.model import Kind, Sample
from zfsmon.sources.zpool.iostat import parse_text
from zfsmon.sources.zpool.status import parse_status

POOL = "zguest"
#: disk -> (role, parent mirror): the runner's PoolLayout, as zpool names the by-id paths; the log and
#: cache disks are top-level vdevs (zfsmon's kind "vdev"), the data disks leaves of the mirrors
EXPECTED = {**{f"virtio-data{i}": ("data", f"mirror-{i // 2}") for i in range(4)},
            "virtio-log0": ("log", ""), "virtio-cache0": ("cache", "")}


def iostat_capture_names() -> List[str]:
    """The `zpool iostat` captures scenario.sh takes (its captures.sh functions), by file name."""
    text = Path(__file__).with_name("captures.sh").read_text()
    return re.findall(r"^\s*capture (zpool-iostat-\S+\.txt) ", text, re.M)


def check_roles(directory: Path, name: str) -> None:
    """Parse ``directory/name`` as zfsmon does (roles of headerless rows from ``zpool-status.txt``)."""
    text = (directory / name).read_text()
    err = directory / (name + ".stderr")
    assert text.strip(), f"{name} is empty: {err.read_text() if err.exists() else ''}"
    flags = name.split("-")[-1].split(".")[0]
    topo = parse_status((directory / "zpool-status.txt").read_text())
    recs = parse_text(text, interval=2.0, pools=[POOL], topology=topo,
                      flags="".join(c for c in flags if c in "lq") if "H" in flags else "",
                      first_since_boot="y" not in flags)
    disks = {s.entity.name: s.entity for s in recs if isinstance(s, Sample) and s.entity.name in EXPECTED
             and s.entity.kind in (Kind.LEAF, Kind.VDEV)}
    if "w" in flags or "r" in flags:  # histograms: whatever rows name a disk must name its role
        assert all(EXPECTED[n][0] == e.role.value for n, e in disks.items() if e.role is not None), name
        return
    assert set(disks) == set(EXPECTED), name
    for n, e in disks.items():
        assert e.role is not None and e.role.value == EXPECTED[n][0], (name, n, e.role)
        if EXPECTED[n][1]:
            assert (e.kind, e.parent) == (Kind.LEAF, EXPECTED[n][1]), (name, n, e.kind, e.parent)
