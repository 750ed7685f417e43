"""`zfsmon exporter --from-recording` as Prometheus scrapes it: the whole text exposition, compared exactly.

The exporter runs as a subprocess on a free loopback port (``--listen 127.0.0.1:0``; the port it bound is read from
its "serving ... on http://..." line), one scrape is taken, and the exporter is stopped. Served from a recording,
every value and every ``zfsmon_last_sample_timestamp_seconds`` is the recording's, and a first scrape has no
``zfsmon_scrape_duration_seconds`` sample (it is the previous rendering's), so the scrape is the same on every run.
Metric names and labels are a promise to dashboards and alerts (docs/exporter.md): this file shows any change to
them.
"""

from __future__ import annotations

import re
import subprocess
import urllib.request
from pathlib import Path

from tests.golden.golden import check, cli_env, zfsmon_argv

#: the exporter's line on stderr once it listens
_SERVING = re.compile(r"serving .* on (http://127\.0\.0\.1:\d+/metrics)")
#: bounds a run that would otherwise hang (the exporter stops itself after this; the test stops it at once)
RUN_LIMIT_S = 300
SCRAPE_TIMEOUT_S = 60.0


def scrape_recording(path: Path) -> str:
    """One scrape of ``zfsmon exporter --from-recording NAME`` run in the recording's directory."""
    proc = subprocess.Popen(zfsmon_argv("exporter", "--from-recording", path.name, "--listen", "127.0.0.1:0",
                                        "--duration", str(RUN_LIMIT_S)),
                            cwd=str(path.parent), env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        said = []
        assert proc.stderr is not None
        for line in proc.stderr:  # until the exporter says where it listens (or ends: EOF)
            said.append(line)
            m = _SERVING.search(line)
            if m:
                with urllib.request.urlopen(m.group(1), timeout=SCRAPE_TIMEOUT_S) as resp:
                    return resp.read().decode("utf-8")
        raise AssertionError(f"the exporter ended before serving (exit {proc.wait()}):\n{''.join(said)}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()


def test_scrape_of_the_openzfs_2_3_guest_recording(real_recordings, tmp_path):
    """Every family the guest's sources give (tests/data/openzfs-2.3/PROVENANCE.md), with the recording's last
    values. Checked against the recording's last samples: ``zfsmon_arc_size_bytes`` 2.8365168e+07 (arcstats
    `size` 28,365,168) and ``zfsmon_arc_c_max_bytes`` 2.68435456e+08 (c_max: the guest's zfs_arc_max of 256 MiB),
    ``zfsmon_vdev_alloc_bytes{vdev="mirror-0"}`` 5.0741248e+07 (the last zpool iostat row of mirror-0), and
    ``zfsmon_device_reads_total{device="vda"}`` 4037 (diskstats' reads of vda)."""
    check("exporter-guest.prom", scrape_recording(Path(real_recordings["guest"])), tmp_path)
