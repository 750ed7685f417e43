"""Recording the real zfs-fuse lab pool: roles survive into the file and the export, and `zfsmon record`
stops cleanly on SIGTERM."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
from typing import List

import pytest

from tests.conftest import REPO, wait_until
from tests.lab.helpers import write_file
from zfsmon.cli import main
from zfsmon.engine import Sampler
from zfsmon.model import Kind, Record, Role, Sample
from zfsmon.sources.kstat import arcstats
from zfsmon.sources.zpool.iostat_collector import ZpoolIostatCollector
from zfsmon.store import Recorder, Recording, RecordingError

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def test_short_real_recording_round_trips(lab, tmp_path):
    path = str(tmp_path / "lab.zfsmon")
    collectors = [ZpoolIostatCollector([lab.pool], interval=1.0)]
    arc = arcstats.collector_for_host(1.0)
    if arc is not None:
        collectors.append(arc)
    seen: List[Record] = []

    def recorded_enough() -> bool:
        """Three interval reports of the pool, one with writes (a short write can land in the since-import one)."""
        pool = [r for r in list(seen) if isinstance(r, Sample) and r.entity.kind == Kind.POOL
                and r.entity.name == lab.pool and not r.since_boot]
        return len(pool) >= 3 and any(s.metrics.get("write_bw", 0) > 0 for s in pool)

    with Recorder(path, {"interval": "1", "argv": "test"}) as rec:
        sampler = Sampler(collectors, 1.0, sinks=[rec.write, seen.extend])
        stop = threading.Event()

        def writes() -> None:  # synced writes to one file until an interval report has shown them
            while not stop.is_set():
                write_file(os.path.join(lab.mountpoint, "rec.bin"), 8)

        io = threading.Thread(target=writes, daemon=True)
        io.start()
        sampler.run_in_thread()
        try:
            wait_until(recorded_enough, 120, "three interval reports of the pool, one with writes")
        finally:
            stop.set()
            io.join(timeout=60)
            sampler.stop()
    with Recording.open(path) as r:
        assert r.integrity() == "ok"
        roles = {e.name: e.role for e in r.topology() if e.kind == Kind.VDEV and e.pool == lab.pool}
        log_dev = os.path.basename(lab.devices["log"][0])
        cache_dev = os.path.basename(lab.devices["cache"][0])
        assert roles.get(log_dev) == Role.LOG and roles.get(cache_dev) == Role.CACHE
        assert sum(1 for role in roles.values() if role == Role.DATA) == 2
        key = next(e.key for e in r.entities() if e.kind == Kind.POOL and e.name == lab.pool)
        pool = [s for s in r.samples(entity_keys=[key]) if not s.since_boot]
        assert len(pool) >= 3
        written = sum(s.metrics.get("write_bw", 0) * (s.interval or 1) for s in pool)
        assert written > 0  # the writes showed up
        stored = {(s.ts, s.entity.key): dict(s.metrics) for s in r.samples()}
    out = tmp_path / "csv"
    assert main(["export", path, "--csv", str(out)]) == 0
    with open(out / "vdev.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["role"] for r in rows if r["kind"] == "vdev"} == {"data", "log", "cache"}
    for row in rows:
        key = f"{row['kind']}:{row['pool']}/{row['name']}"
        metrics = stored[(float(row["epoch"]), key)]
        for m, v in metrics.items():
            assert float(row[m]) == pytest.approx(v)


def test_record_command_stops_cleanly_on_sigterm(lab, tmp_path):
    path = str(tmp_path / "cmd.zfsmon")
    proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "record", "--interval", "1", "--out", path, "-q"],
                            cwd=str(REPO), stderr=subprocess.PIPE, text=True)
    def samples_recorded() -> int:
        try:
            with Recording.open(path) as r:
                return r.counts()["samples"]
        except RecordingError:  # not created (or its schema not written) yet
            return 0

    try:
        wait_until(samples_recorded, 60, "samples in the recording", step=0.5)
        with Recording.open(path) as r:  # readable while recording
            assert r.counts()["samples"] > 0
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert not os.path.exists(path + "-wal")  # closed cleanly: a self-contained file
    with Recording.open(path) as r:
        assert r.events()[-1].text == "recording stopped"
        assert any(e.kind == Kind.POOL and e.name == lab.pool for e in r.entities())
        assert r.meta["zfs_flavour"] == "zfs-fuse" and r.meta["interval"] == "1"


def test_import_of_a_timestamped_capture(lab, tmp_path):
    """`zpool iostat -T u -v POOL 1 3` captured from the lab: its printed times are kept as they are."""
    cp = subprocess.run(["zpool", "iostat", "-T", "u", "-v", lab.pool, "1", "3"], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    stamps = [float(line) for line in cp.stdout.splitlines() if line.strip().isdigit()]
    assert len(stamps) == 3
    log = tmp_path / "iostat-T.log"
    log.write_text(cp.stdout)
    rec = tmp_path / "t.zfsmon"
    assert main(["import", str(log), "--into", str(rec)]) == 0
    with Recording.open(str(rec)) as r:
        times = sorted({s.ts for s in r.samples()})
        assert times == stamps
        roles = {e.role for e in r.entities() if e.kind == Kind.VDEV}
        assert Role.DATA in roles and Role.CACHE in roles
