"""`zfsmon iostat` and `zfsmon arcstat`, the live commands, on genuine captures, compared exactly.

Both read the host, so the test gives them the host a capture describes:

- ``zfsmon iostat --zpool STAND-IN``: the stand-in is an executable that answers each exact command line the
  iostat command runs (the flag probe, ``zpool status POOL``, ``zpool iostat FLAGS -v POOL INTERVAL``) with
  the committed capture of that command, and anything else with exit status 2 (so an unexpected command fails
  the test with what was asked). ``--no-device``: the device column would be this host's disks.
- ``zfsmon arcstat --kstat-dir DIR``: DIR holds one file per statistic, as zfs-fuse's kstat folder does, made
  from a committed arcstats capture. Read twice a second apart, nothing changes: the rates are 0 and the
  percentages ``-`` (no accesses), the sizes are the capture's. The first column is when the test ran, the
  one part masked (:func:`tests.golden.golden.wall_clock_masked`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

import pytest

from tests.conftest import TEST_DATA, need
from tests.golden.golden import check, run_zfsmon, wall_clock_masked
from zfsmon.sources.kstat import arcstats, zil
from zfsmon.sources.kstat import text as kstat_text

GUEST = TEST_DATA / "openzfs-2.3"
FUSE = TEST_DATA / "zfsfuse"

#: an answer: the file whose text goes to stdout (None: nothing), the text for stderr, the exit status
Answer = Tuple[Optional[Path], str, int]

_STAND_IN = """#!{python}
# a zpool that answers each exact command line with a committed capture (tests/golden/test_live_commands.py)
import json, sys
ANSWERS = json.loads({answers!r})
got = ANSWERS.get(" ".join(sys.argv[1:]))
if got is None:
    sys.stderr.write("stand-in zpool: no capture for: " + " ".join(sys.argv[1:]) + "\\n")
    sys.exit(2)
stdout, stderr, rc = got
if stdout:
    with open(stdout, encoding="utf-8") as f:
        sys.stdout.write(f.read())
sys.stderr.write(stderr)
sys.exit(rc)
"""


def stand_in_zpool(directory: Path, answers: Dict[str, Answer]) -> Path:
    """An executable ``zpool`` in ``directory`` answering each argv (after ``zpool``, joined by spaces)."""
    path = directory / "zpool"
    table = {argv: [str(out) if out else "", err, rc] for argv, (out, err, rc) in answers.items()}
    path.write_text(_STAND_IN.format(python=sys.executable, answers=json.dumps(table)), encoding="utf-8")
    path.chmod(0o755)
    return path


def _refused(letter: str) -> Answer:
    """What a zpool that lacks a flag answers (zfs-fuse's words, tests/data/zfsfuse/probe)."""
    return None, f"invalid option '{letter}'\nusage:\n\tiostat [-v] [-T d|u] [pool] ... [interval [count]]\n", 2


def _probe(key: str) -> Answer:
    """zfs-fuse's own answer to a probe (tests/data/zfsfuse/probe/KEY.*, captured on the lab)."""
    d = FUSE / "probe"
    return d / f"{key}.stdout", (d / f"{key}.stderr").read_text(), int((d / f"{key}.rc").read_text())


def _openzfs_2_3(tmp_path: Path) -> Path:
    """The OpenZFS 2.3 guest's zpool, as far as its captures go: it accepts -T u, -l and -p (and -v), whose one
    capture together is zpool-iostat-vlpTu.txt (`zpool iostat -vlp -T u zguest 2 2`); -q, with which no capture
    was made beside those, is refused, so the command runs exactly the captured one."""
    return stand_in_zpool(tmp_path, {
        "status zguest": (GUEST / "zpool-status.txt", "", 0),
        "iostat": (None, "", 0), "iostat -T u": (None, "", 0), "iostat -l": (None, "", 0),
        "iostat -p": (None, "", 0), "iostat -q": _refused("q"), "iostat -l -q": _refused("q"),
        "iostat -T u -l -p -v zguest 2": (GUEST / "zpool-iostat-vlpTu.txt", "", 0),
    })


def _zfs_fuse(tmp_path: Path) -> Path:
    """The lab's zfs-fuse 0.7.0 zpool: its probe answers and `zpool iostat -T u -v ziocap 1 4` while 20 MiB were
    written (tests/data/zfsfuse/README.md)."""
    answers = {"status ziocap": (FUSE / "zpool_status_ziocap.txt", "", 0),
               "iostat": _probe("base"), "iostat -T u": _probe("T"), "iostat -l": _probe("l"),
               "iostat -q": _probe("q"), "iostat -l -q": _probe("lq"), "iostat -p": _probe("p"),
               "iostat -T u -v ziocap 1": (FUSE / "zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt", "", 0)}
    return stand_in_zpool(tmp_path, answers)


def test_iostat_of_openzfs_2_3(tmp_path):
    """Two reports (since import, then 2 s) with waits. Checked against zpool-iostat-vlpTu.txt: zguest alloc
    107028480 B shown as 102M, virtio-log0's total_wait read 15728640 ns as 15ms, virtio-cache0's write
    bandwidth 933908 B/s as 912K; the log and cache devices under their `logs` and `cache` headings."""
    zpool = _openzfs_2_3(tmp_path)
    check("iostat-openzfs-2.3.txt",
          run_zfsmon(["iostat", "--zpool", str(zpool), "--no-device", "zguest", "2", "2"], cwd=tmp_path), tmp_path)


def test_iostat_csv_of_openzfs_2_3(tmp_path):
    """The same reports as CSV, exact numbers and the capture's -T u times. Checked: the times 1795459258 and
    1795459260 (the capture's stamps), mirror-1's free 952434688 and its write_bw 891767 (first report)."""
    zpool = _openzfs_2_3(tmp_path)
    check("iostat-openzfs-2.3.csv",
          run_zfsmon(["iostat", "--zpool", str(zpool), "--no-device", "--csv", "zguest", "2", "2"], cwd=tmp_path),
          tmp_path)


def test_iostat_of_zfs_fuse(tmp_path):
    """zfs-fuse prints its SLOG as a data row and both mirrors as `mirror`: the roles and names come from zpool
    status. Checked against the capture: loop5 under `logs` (zpool status lists it there), loop1's 384 writes/s
    and mirror-0's 1.53K in the busiest report (1795332272), the pool's alloc 776K in the first. zfs-fuse's
    "16.0K" reads as 16384 and prints as "16K", as zpool prints an exact multiple.
    """
    zpool = _zfs_fuse(tmp_path)
    check("iostat-zfs-fuse.txt",
          run_zfsmon(["iostat", "--zpool", str(zpool), "--no-device", "ziocap", "1", "4"], cwd=tmp_path), tmp_path)


def _kstat_dir(tmp_path: Path, capture: Path) -> Path:
    """zfs-fuse's arcstats folder layout (one file per statistic) filled with a /proc arcstats capture."""
    need(not os.path.exists(arcstats.LINUX_PATH) and not os.path.exists(zil.LINUX_PATH),
         f"this host has {arcstats.LINUX_PATH}: arcstat would read it instead of the capture")
    d = tmp_path / "arcstats"
    d.mkdir()
    for name, value in kstat_text.parse_proc_table(capture.read_text()).values.items():
        (d / name).write_text(f"{int(value)}\n")
    return d


@pytest.mark.parametrize("csv", [False, True], ids=["table", "csv"])
def test_arcstat_of_openzfs_2_3(csv, tmp_path):
    """The guest's arcstats (kstat/arcstats), default columns, one line. Checked against the capture: size
    114471904 B as 109M, c 191402624 as 183M, l2_size 100405248 as 95.8M (--csv: the exact numbers)."""
    kstat = _kstat_dir(tmp_path, GUEST / "kstat" / "arcstats")
    out = run_zfsmon(["arcstat", "--kstat-dir", str(kstat), *(["--csv"] if csv else [])], cwd=tmp_path)
    check(f"arcstat-openzfs-2.3.{'csv' if csv else 'txt'}", wall_clock_masked(out, csv=csv), tmp_path)
