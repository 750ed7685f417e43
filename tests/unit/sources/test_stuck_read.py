"""A kstat read that never returns (a wedged zfs-fuse: state D) holds its own source only.

The blocking read is a real one: the source's file is a FIFO with no writer, so the kernel blocks its open
until a writer comes. The sampler must go on for the other sources, report the stuck one stale (with its
figures' age), not start it again while it is stuck, take it back when it returns; `zfsmon record` must stop
on SIGTERM with the recording whole; `top`'s panel must say the source is stale.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from tests.conftest import REPO, TEST_DATA, fixture_files, need, wait_until
from zfsmon.engine import Sampler
from zfsmon.engine.reads import DeadlinePolls, StuckRead
from zfsmon.model import Event, EventKind, Kind, Record, Sample
from zfsmon.sources.devices.diskstats import DiskstatsCollector
from zfsmon.sources.kstat.arcstats import LinuxArcstatsCollector
from zfsmon.sources.zpool.health import STOP_WAIT_S, StatusCollector
from zfsmon.store import Recording
from zfsmon.views.top.panels import ViewOptions, status_line
from zfsmon.views.top.state import TopState

DISKSTATS = TEST_DATA / "diskstats" / "linux-6.18_debian12__proc_diskstats.txt"


def _arcstats_capture() -> Path:
    hits = [p for p in fixture_files("arcstats") if "linux-openzfs-2.3" in p.name]
    need(len(hits) == 1, "the shared Linux OpenZFS 2.3 arcstats capture")
    return hits[0]


def _readers(name: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name == f"zfsmon-read-{name}" and t.is_alive())


def _samples(recs: List[Record], source: str) -> List[Sample]:
    return [r for r in recs if isinstance(r, Sample) and r.source == source]


def _events(recs: List[Record], source: str) -> List[Event]:
    return [r for r in recs if isinstance(r, Event) and r.source == source]


def _tick(s: Sampler) -> List[Record]:
    """One tick, which must return although a read is stuck (one that hangs fails the test, not stalls it)."""
    got: List[List[Record]] = []
    t = threading.Thread(target=lambda: got.append(s.tick()), name="test-tick", daemon=True)
    t.start()
    t.join(60)
    assert got, "the tick did not return: a stuck read held the sampler"
    return got[0]


def _release(path: Path, capture: Path) -> None:
    """Let a reader blocked on the FIFO at ``path`` go, and make ``path`` the capture again (so that no read
    after it blocks)."""
    try:
        w = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # a reader waiting in open goes on (then reads EOF)
    except OSError:  # no reader waiting (ENXIO), or no FIFO there
        w = None
    shutil.copyfile(capture, f"{path}.tmp")
    os.replace(f"{path}.tmp", path)
    if w is not None:
        os.close(w)


def test_a_stuck_read_leaves_its_source_stale_the_others_sampling_and_resumes_when_it_returns(tmp_path, fixtures):
    capture = _arcstats_capture()
    path = tmp_path / "arcstats"
    shutil.copyfile(capture, path)  # a readable kstat first: figures whose age the stale event gives
    now = [1_800_000_000.0]

    def clock() -> float:
        return now[0]

    arc = LinuxArcstatsCollector(str(path), clock=clock)
    disk = DiskstatsCollector(path=str(DISKSTATS), clock=clock)
    s = Sampler([arc, disk], 1.0, clock=clock, read_deadline=2.0)
    try:
        first = _tick(s)
        assert _samples(first, "arcstats") and _samples(first, "diskstats")

        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        os.replace(fifo, path)  # from now on a read of the kstat blocks in the kernel: no writer
        now[0] += 1
        t0 = time.monotonic()
        stuck = _tick(s)
        assert time.monotonic() - t0 >= 2  # waited for until the deadline (the sampler's read_deadline)
        assert _samples(stuck, "diskstats") and not _samples(stuck, "arcstats")
        [ev] = _events(stuck, "arcstats")
        assert ev.kind == EventKind.ERROR and ev.text == (
            "arcstats: read did not return within 2 s (stuck kernel read?); its last figures are 1 s old")
        assert s.stuck() and s.stuck()[0].startswith("arcstats: a read has not returned for ")

        for _ in range(3):  # the tick goes on for the others; the stuck read is neither waited for nor doubled
            now[0] += 1
            recs = _tick(s)
            assert _samples(recs, "diskstats") and not _events(recs, "arcstats") and not _samples(recs, "arcstats")
            assert _readers("arcstats") == 1

        # the read returns: a writer opens the FIFO (the blocked open goes on), and the kstat is a file again
        w = os.open(path, os.O_WRONLY)
        shutil.copyfile(capture, tmp_path / "again")
        os.replace(tmp_path / "again", path)
        os.write(w, capture.read_bytes())
        os.close(w)

        def back() -> List[Record]:
            now[0] += 1
            recs = _tick(s)
            return recs if _events(recs, "arcstats") else []

        resumed = wait_until(back, 30, "the stuck read's return reported")
        [ev] = _events(resumed, "arcstats")
        assert ev.kind == EventKind.INFO and ev.text.startswith("arcstats: the read returned after ") and \
            ev.text.endswith("; its figures are left out (when they were taken is not known), sampling resumes")
        assert not _samples(resumed, "arcstats") and _samples(resumed, "diskstats") and not s.stuck()

        now[0] += 1
        fresh = _tick(s)
        arc_now = [x for x in _samples(fresh, "arcstats") if x.entity.kind == Kind.ARC]
        assert arc_now and arc_now[0].metrics["hits"] == 33266704081 and arc_now[0].ts == now[0]
    finally:
        _release(path, capture)
        s.stop()


def test_top_says_the_stuck_source_is_stale_while_the_others_go_on(tmp_path, fixtures):
    capture = _arcstats_capture()
    path = tmp_path / "arcstats"
    shutil.copyfile(capture, path)
    now = [1_800_000_000.0]

    def clock() -> float:
        return now[0]

    state = TopState(interval=1.0)
    s = Sampler([LinuxArcstatsCollector(str(path), clock=clock), DiskstatsCollector(path=str(DISKSTATS), clock=clock)],
                1.0, sinks=[state.feed], clock=clock, read_deadline=2.0)
    try:
        _tick(s)
        assert status_line(state, "arc", ViewOptions(interval=1.0)) is None  # fresh
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        os.replace(fifo, path)
        for _ in range(6):
            now[0] += 1
            _tick(s)
        line = status_line(state, "arc", ViewOptions(interval=1.0))
        assert line is not None and line.plain == (
            "stale: last data 6s ago; error 5s ago: arcstats: read did not return within 2 s (stuck kernel read?); "
            "its last figures are 1 s old")
        devices = state.staleness((Kind.DEVICE,), ("diskstats",))  # the other source is live: no error, fresh
        assert not devices.errors and devices.stale_lag(state.now, 1.0) is None
    finally:
        _release(path, capture)
        s.stop()


def test_the_status_source_stops_without_waiting_for_a_zpool_status_stuck_on_the_daemon(tmp_path):
    """`zpool status` talks to the daemon; a wedged one holds it until its timeout (60 s). Here its stand-in blocks
    in the kernel for real (it opens a FIFO with no writer); stopping the source must not wait for it."""
    fifo = tmp_path / "daemon"
    os.mkfifo(fifo)
    started = tmp_path / "started"
    zpool = tmp_path / "zpool"
    zpool.write_text(f'#!/bin/sh\n: > "{started}"\nexec cat "{fifo}"\n')
    zpool.chmod(0o755)
    c = StatusCollector(zpool=str(zpool), timeout=60.0)
    try:
        c.start()
        wait_until(started.exists, 30, "the stand-in zpool status running")
        t0 = time.monotonic()
        c.stop()
        took = time.monotonic() - t0
    finally:
        try:  # let the stand-in go: its open returns, cat reads end of file and exits
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert took < STOP_WAIT_S + 5, took


def test_record_stops_on_sigterm_while_a_source_read_is_stuck(tmp_path):
    """The real `zfsmon record`, its diskstats source's /proc/diskstats a FIFO with no writer (bound over it in
    a private mount namespace): the read blocks in the kernel for good; SIGTERM still ends the recorder."""
    need(os.geteuid() == 0 and shutil.which("unshare") is not None, "root and unshare (a private mount namespace)")
    fifo = tmp_path / "diskstats"
    os.mkfifo(fifo)
    out = tmp_path / "rec.zfsmon"
    proc = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f'mount --bind "{fifo}" /proc/diskstats && exec "{sys.executable}" -m zfsmon record diskstats -i 0.5 '
         f'-o "{out}"'], cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def stale() -> bool:
            try:
                with Recording.open(str(out)) as r:
                    return any("read did not return" in e.text for e in r.events())
            except Exception:  # not created yet
                return False

        wait_until(stale, 60, "the stuck diskstats read recorded as stale")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # to unshare's exec'd child: sh exec'd python
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("zfsmon: warning: diskstats: a read has not returned for "), err
    assert took < 30
    print(f"STOPPED stuck-read {took:.1f} s after SIGTERM")  # the figure docs/reliability.md quotes (pytest -s)
    with Recording.open(str(out)) as r:
        assert r.integrity() == "ok"
        texts = [e.text for e in r.events()]
    assert texts[-1] == "recording stopped"
    assert "diskstats: read did not return within 10 s (stuck kernel read?); it has given no figures yet" in texts
    assert not os.path.exists(str(out) + "-wal")


def _fuse_dir(tmp_path: Path) -> Path:
    """A zfs-fuse style arcstats directory (one file per statistic) from the Linux capture's values."""
    d = tmp_path / "arcstats"
    d.mkdir()
    for line in _arcstats_capture().read_text().splitlines()[2:]:
        name, _type, value = line.split()
        (d / name).write_text(value + "\n")
    return d


def _arcstat(kstat_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsmon", "arcstat", "--kstat-dir", str(kstat_dir), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_arcstat_ends_with_one_line_when_the_arc_read_is_stuck(tmp_path, fixtures):
    d = _fuse_dir(tmp_path)
    ok = _arcstat(d, "1", "2")
    assert ok.returncode == 0 and len(ok.stdout.splitlines()) == 3, (ok.stdout, ok.stderr)  # header and 2 rows
    (d / "hits").unlink()
    os.mkfifo(d / "hits")  # no writer: the read's open blocks in the kernel, as on a wedged zfs-fuse
    t0 = time.monotonic()
    stuck = _arcstat(d, "1", "2")
    took = time.monotonic() - t0
    assert stuck.returncode != 0 and "Traceback" not in stuck.stderr, stuck.stderr
    lines = stuck.stderr.strip().splitlines()
    assert len(lines) == 1 and "has not returned in 10 s" in lines[0] and "stuck" in lines[0], lines
    assert took < 60, took  # the deadline, not the read, ended it


def test_a_one_shot_commands_stuck_device_read_is_said_once_and_left_out_until_it_returns(tmp_path):
    """`zfsmon iostat`'s device column: a diskstats read stuck on a FIFO leaves the column, not the table, held."""
    path = tmp_path / "diskstats"
    os.mkfifo(path)
    c = DiskstatsCollector(path=str(path))
    polls = DeadlinePolls([c], deadline_s=0.5)
    others = _readers("diskstats")  # another test's reader may still be held by its own FIFO
    try:
        errors: List[str] = []
        assert polls.poll(errors) == [] and len(errors) == 1
        assert "diskstats" in errors[0] and "left out until it does" in errors[0]
        errors2: List[str] = []
        t0 = time.monotonic()
        assert polls.poll(errors2) == [] and errors2 == []  # said once; a stuck read is not waited for again
        assert time.monotonic() - t0 < 0.4
        assert _readers("diskstats") == others + 1  # not started again beside itself
        _release(path, DISKSTATS)
        wait_until(lambda: not polls.workers[id(c)].in_flight, 30, "the released read to return")
        back: List[str] = []
        got = polls.poll(back)  # the returned read's records (EOF: none), then polled afresh
        assert back == [] and polls.stuck == set() and len(got) == 1
        fresh = polls.poll(back)
        assert back == [] and len(fresh) == 1 and _samples(fresh[0], "diskstats")  # the column has values again
    finally:
        polls.close()


def test_a_required_stuck_read_raises_for_its_command_to_end(tmp_path):
    path = tmp_path / "diskstats"
    os.mkfifo(path)
    c = DiskstatsCollector(path=str(path))
    polls = DeadlinePolls([c], deadline_s=0.3, required=[c])
    try:
        with pytest.raises(StuckRead, match="diskstats read has not returned"):
            polls.poll([])
    finally:
        _release(path, DISKSTATS)
        polls.close()
