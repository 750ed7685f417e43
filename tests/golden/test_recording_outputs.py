"""`zfsmon info` and `zfsmon analyze` on the committed recordings, as a user reads them (tests/golden/golden.py).

Each recording is unpacked by the shared fixtures and named by its bare file name from its own directory, so the
outputs carry no temporary path. The values were checked against the recordings' samples (read with
:class:`zfsmon.store.Recording`) when the golden files were made; what was checked is in each test's docstring.
"""

from __future__ import annotations

from pathlib import Path

from tests.golden.golden import check, run_zfsmon


def _run(path: str, *args: str) -> str:
    """``zfsmon ARGS... NAME`` in the recording's directory (NAME its bare file name)."""
    p = Path(path)
    return run_zfsmon([*args, p.name], cwd=p.parent)


def test_info_of_the_openzfs_2_3_guest_recording(real_recordings, tmp_path):
    """The guest's `zfsmon record` run (tests/data/openzfs-2.3/PROVENANCE.md). Checked: 2246 samples and
    176,897 values (its samples counted, as the provenance says), the range 17:43:07 .. 17:46:35.555 UTC (the first sample's ts
    1795714987.0 and the last's 1795715195.556), pool zguest with 1 cache, 2 data and 1 log vdev (its
    zpool-status.txt: mirror-0, mirror-1, logs virtio-log0, cache virtio-cache0)."""
    check("info-guest.txt", _run(real_recordings["guest"], "info"), tmp_path)


def test_info_json_of_the_openzfs_2_3_guest_recording(real_recordings, tmp_path):
    """The same as JSON. Checked: bytes 454656 (the unpacked file's size), 27 device entities (the distinct
    device names of its samples), and 77 events: 3 info and 74 topology (the recording's events)."""
    check("info-guest.json", _run(real_recordings["guest"], "info", "--json"), tmp_path)


def test_info_of_a_schema_2_recording(real_recordings, tmp_path):
    """A recording of the previous schema still reads (tests/data/store/PROVENANCE.md). Checked: host h1 and
    argv as the provenance's Recorder call wrote them, 300 one-second readings from 1_700_000_000
    (2023-11-14T22:13:20Z .. 22:18:19Z), the mark "started VACUUM"; the error's text, a spreadsheet formula,
    is shown as it was written (never interpreted)."""
    check("info-v2.txt", _run(real_recordings["v2"], "info"), tmp_path)


def test_analyze_json_of_the_openzfs_2_3_guest_recording(real_recordings, tmp_path):
    """Checked: the L2ARC grew from 0 to 17,534,976 B (the l2arc samples' `size`, first and largest), the read
    path's ARC share 89.0% (arc hits 12,834 and misses 1,584 over the recording: 89.01%), the L2ARC's 1,584
    misses and 0 hits, and no pgbench (the recording has no workload samples: "Not in this window")."""
    check("analyze-guest.json", _run(real_recordings["guest"], "analyze", "--json"), tmp_path)


def test_analyze_of_the_lab_soak(lab_soak_file, tmp_path):
    """The 100-minute pgbench soak on the lab (tests/data/zfsfuse/soak/PROVENANCE.md), in plain words.
    Checked: the L2ARC from 3.8 MiB to 310.8 MiB (l2arc `size`, first and largest), L2ARC hits 38,263,741 against
    49,974 misses, and the ARC's 38,313,715 misses with 14,541 MRU and 11,310,372 MFU ghost hits (each the
    counter's increase from the first to the last sample)."""
    check("analyze-soak.txt", _run(lab_soak_file, "analyze"), tmp_path)


def test_analyze_json_of_the_lab_soak(lab_soak_file, tmp_path):
    """The same findings as JSON, every number with the precision a script reads. Checked: "runs": 100 (the
    pgbench-run workload samples), tps_start 378.510916 (the first run's tps), the read path's PostgreSQL
    buffers 55.33% (pgstat:pgbench blks_hit / (blks_hit + blks_read) over the run: 47,416,772 / 85,700,215)."""
    check("analyze-soak.json", _run(lab_soak_file, "analyze", "--json"), tmp_path)


def test_analyze_of_the_l2arc_fio_sweep(real_recordings, tmp_path):
    """The lab's fio queue-depth sweep on the L2ARC (tests/data/fio/PROVENANCE.md): the fio finding with its knee
    and Little's law. Checked: the 7 depths 1..64 (the fio:qdN:read workload entities), the L2ARC's 285,535 hits
    and 2,806 misses (the l2arc `hits`/`misses` increase from the first to the last sample), the ARC's 288,360
    misses with 2,390 MRU and 138,769 MFU ghost hits (the arc counters' increase)."""
    check("analyze-l2arc.txt", _run(real_recordings["l2arc"], "analyze"), tmp_path)
