"""A recording survives SIGKILL, can be read while written, and stops cleanly on a full disk."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

from tests.conftest import REPO, need
from tests.unit.store_data import T0, tick
from zfsmon.cli import main
from zfsmon.store import Recorder, Recording, RecordingError, RecordingFull

#: a recorder in its own process: one committed interval per line printed
WRITER = """
import sys, time
sys.path.insert(0, {repo!r})
from tests.unit.store_data import tick
from zfsmon.store import Recorder
rec = Recorder(sys.argv[1], {{"interval": "0.02"}})
i = 0
while True:
    rec.write(tick(i, 0.02))
    print(i, flush=True)
    i += 1
    time.sleep(0.01)
"""


def _start_writer(path: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO)), path], stdout=subprocess.PIPE,
                            text=True, cwd=str(REPO))


def _wait_for(proc: subprocess.Popen, n: int) -> int:
    last = -1
    assert proc.stdout is not None
    while last < n:
        line = proc.stdout.readline()
        assert line, "writer died"
        last = int(line)
    return last


def test_sigkill_loses_at_most_the_interval_being_written(tmp_path):
    path = str(tmp_path / "crash.zfsmon")
    proc = _start_writer(path)
    try:
        last = _wait_for(proc, 40)
    finally:
        proc.kill()  # SIGKILL: no cleanup at all
        proc.wait()
    assert os.path.exists(path + "-wal")  # it really died mid-recording
    with Recording.open(path) as r:
        assert r.integrity() == "ok"
        ticks = sorted({s.ts for s in r.samples(kinds=["pool"])})
        # every interval the writer reported as written is there; at most one more got in before the kill
        assert ticks[: last + 1] == [T0 + i * 0.02 for i in range(last + 1)]
        assert last + 1 <= len(ticks) <= last + 2
    # and a recorder can carry on with it (SQLite replays its WAL: no repair step)
    with Recorder(path) as rec:
        rec.mark("resumed after crash")
    with Recording.open(path) as r:
        assert r.integrity() == "ok" and r.events(kinds=["mark"])[-1].text == "resumed after crash"


def test_info_and_export_while_recording(tmp_path, capsys):
    path = str(tmp_path / "live.zfsmon")
    proc = _start_writer(path)
    try:
        _wait_for(proc, 5)
        seen = []
        for k in range(4):
            assert main(["info", path, "--json"]) == 0
            info = capsys.readouterr().out
            seen.append(int(info.split('"samples": ')[1].split(",")[0]))
            out = tmp_path / f"csv{k}"
            assert main(["export", path, "--csv", str(out)]) == 0
            rows = sum(1 for _ in open(out / "pool.csv")) - 1
            assert rows >= 6
            assert main(["export", path, "--json", str(tmp_path / f"j{k}.jsonl")]) == 0
            time.sleep(0.1)
        assert seen == sorted(seen) and seen[-1] > seen[0]
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert "Traceback" not in err


@pytest.mark.lab  # root: mounts a small tmpfs
def test_full_disk_stops_cleanly_and_keeps_what_was_written(require_root):
    with tempfile.TemporaryDirectory() as mnt:
        cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], capture_output=True, text=True)
        need(cp.returncode == 0, f"cannot mount a tmpfs: {cp.stderr.strip()}")
        try:
            path = os.path.join(mnt, "full.zfsmon")
            rec = Recorder(path, {"interval": "1"})
            written = 0
            with pytest.raises(RecordingFull, match="disk is full") as exc:
                for i in range(100_000):
                    rec.write(tick(i) * 1 + [_padding_event(i)])
                    written = i + 1
            assert "samples written before are kept" in str(exc.value)
            with pytest.raises(Exception, match="recording stopped"):
                rec.write(tick(written + 1))
            rec.close()
            assert written > 20
            with Recording.open(path) as r:
                assert r.integrity() == "ok"
                ticks = sorted({s.ts for s in r.samples(kinds=["pool"])})
                assert ticks == [T0 + i for i in range(written)]
        finally:
            subprocess.run(["umount", mnt], check=False)


@pytest.mark.lab  # root: mounts a small tmpfs
def test_record_command_reports_a_full_disk(require_root, tmp_path):
    """`zfsmon record` itself, into a filesystem that fills up: a clear one-line message, exit 1, file kept."""
    with tempfile.TemporaryDirectory() as mnt:
        cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True, text=True)
        need(cp.returncode == 0, f"cannot mount a tmpfs: {cp.stderr.strip()}")
        try:
            path = os.path.join(mnt, "rec.zfsmon")
            cp = subprocess.run([sys.executable, "-m", "zfsmon", "record", "--interval", "0.2", "--duration", "60",
                                 "--out", path, "-q"], capture_output=True, text=True, cwd=str(REPO), timeout=120)
            assert cp.returncode in (1, 2), cp.stderr
            assert "Traceback" not in cp.stderr
            assert "full" in cp.stderr or "cannot" in cp.stderr
        finally:
            subprocess.run(["umount", mnt], check=False)


def _padding_event(i: int):
    from zfsmon.model import Event, EventKind

    return Event(T0 + i, EventKind.INFO, "x" * 2000, source="test")


def test_record_command_survives_sigkill_and_stops_on_sigterm(tmp_path):
    """The real `zfsmon record` with whatever sources this host has."""
    import signal

    for how in (signal.SIGKILL, signal.SIGTERM):
        path = str(tmp_path / f"rec-{how.name}.zfsmon")
        proc = subprocess.Popen([sys.executable, "-m", "zfsmon", "record", "--interval", "0.5", "--out", path, "-q"],
                                cwd=str(REPO), stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 30
            n = 0
            while time.time() < deadline and n < 4:
                time.sleep(0.5)
                if os.path.exists(path):
                    try:
                        with Recording.open(path) as r:
                            tr = r.time_range()
                            n = 0 if tr is None else round((tr[1] - tr[0]) / 0.5) + 1
                    except Exception:
                        n = 0
            assert n >= 4, "record wrote no samples"
            proc.send_signal(how)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert "Traceback" not in err
        with Recording.open(path) as r:
            assert r.integrity() == "ok" and r.counts()["samples"] > 0
            if how == signal.SIGTERM:
                assert proc.returncode == 0 and r.events()[-1].text == "recording stopped"
                assert not os.path.exists(path + "-wal")


def test_a_second_writer_of_one_recording_is_refused_in_plain_words(tmp_path):
    path = str(tmp_path / "one.zfsmon")
    with Recorder(path, {"argv": "first"}):
        with pytest.raises(RecordingError, match="being written by another zfsmon"):
            Recorder(path, {"argv": "second"})
        with Recording.open(path) as r:  # reading while recording still works
            assert r.integrity() == "ok"
    with Recorder(path, {"argv": "after"}):  # once the first is closed, the file can be appended to
        pass
