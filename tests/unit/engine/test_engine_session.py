"""The run loop: recording, stop conditions (signals, duration, done, a full disk), marks, cleanup, both modes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, List

import pytest

from tests.conftest import REPO
from zfsmon.cli import main
from zfsmon.engine import Session, check_output_path, collectors
from zfsmon.errors import UserError
from zfsmon.model import Entity, Event, EventKind, Kind, Record, Sample
from zfsmon.sources.base import Collector
from zfsmon.store import Recording, RecordingFull

ARC = Entity(Kind.ARC, "arc")


class Ticking(Collector):
    """One ARC sample per poll, for ever; counts its starts and stops."""

    name = "ticking"

    def __init__(self) -> None:
        super().__init__()
        self.n = 0
        self.started = 0
        self.stopped = 0

    def start(self) -> None:
        self.started += 1

    def poll(self) -> List[Record]:
        self.n += 1
        return [Sample(time.time(), ARC, {"hits": float(self.n), "size": 7.0}, source=self.name)]

    def stop(self) -> None:
        self.stopped += 1


class Counter:
    """A cleanup callback that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def until(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def _fill_after(session: Session, writes: int) -> None:
    """Make the session's recorder fail like a full disk after ``writes`` successful writes."""
    rec = session.recorder
    assert rec is not None
    real = rec.write
    count = [0]

    def write(records) -> None:
        count[0] += 1
        if count[0] > writes:
            rec.failed = "disk full (test)"
            raise RecordingFull(f"{rec.path}: the disk is full: recording stopped")
        real(records)

    rec.write = write  # type: ignore[method-assign]


# blocking ------------------------------------------------------------------------------------------------------
def test_a_blocking_run_records_until_its_duration_then_closes_everything(tmp_path):
    path = str(tmp_path / "r.zfsmon")
    c, cleanup, seen = Ticking(), Counter(), []
    with Session(0.05, [c], progress=lambda ticks, samples: seen.append((ticks, samples))) as s:
        s.add_cleanup(cleanup)
        s.record_into(path, {"interval": "0.05"})
        out = s.run(duration=0.3)
    assert 4 <= out.intervals <= 8 and out.failure is None and cleanup.calls == 1
    assert c.started == 1 and c.stopped >= 1
    assert seen[-1] == (out.intervals, out.samples) and out.samples == out.intervals
    with Recording.open(path) as r:
        assert r.counts()["samples"] == out.samples and r.events()[-1].text == "recording stopped"


def test_done_ends_a_blocking_run(tmp_path):
    done = threading.Event()
    got: List[Record] = []

    def sink(records: List[Record]) -> None:
        got.extend(records)
        if len(got) >= 3:
            done.set()

    with Session(0.02, [Ticking()], sinks=[sink]) as s:
        out = s.run(done=done)
    assert done.is_set() and 3 <= len(got) < 100 and out.intervals == 0  # nothing recorded: no recording


def test_without_collectors_a_run_only_waits_for_its_duration_or_a_stop():
    cleanup = Counter()
    t0 = time.monotonic()
    with Session(5.0) as s:
        s.add_cleanup(cleanup)
        s.run(duration=0.2)
    assert 0.2 <= time.monotonic() - t0 < 3 and cleanup.calls == 1
    s2 = Session(5.0)
    threading.Timer(0.1, s2.stop).start()
    s2.run()  # no duration: the stop ends it
    assert s2.close().intervals == 0


def test_a_full_disk_ends_a_blocking_run_and_tells_the_other_sinks(tmp_path):
    got: List[Record] = []
    cleanup = Counter()
    with Session(0.02, [Ticking()], sinks=[got.extend]) as s:
        s.add_cleanup(cleanup)
        s.record_into(str(tmp_path / "full.zfsmon"), {})
        _fill_after(s, 3)
        out = s.run(duration=30)  # the failure, not the duration, ends it
    assert out.intervals == 3 and "disk is full" in (out.failure or "") and cleanup.calls == 1
    errors = [r for r in got if isinstance(r, Event) and r.kind == EventKind.ERROR]
    assert len(errors) == 1 and errors[0].text.startswith("recording stopped: ") and errors[0].source == "record"
    with Recording.open(str(tmp_path / "full.zfsmon")) as r:
        assert r.counts()["samples"] == 3


# cleanup ------------------------------------------------------------------------------------------------------
def test_cleanup_runs_once_when_setting_up_fails(tmp_path):
    c, cleanup = Ticking(), Counter()
    with pytest.raises(UserError, match="does not exist"):
        with Session(1.0, [c]) as s:
            s.add_cleanup(cleanup)
            s.record_into(str(tmp_path / "no" / "such" / "r.zfsmon"), {})
    assert cleanup.calls == 1 and c.started == 0 and c.stopped == 1
    s.close()
    assert cleanup.calls == 1


def test_every_cleanup_runs_even_when_one_fails_and_the_first_failure_is_raised():
    calls: List[str] = []

    def bad() -> None:
        calls.append("bad")
        raise OSError("pg_ctl stop failed")

    s = Session(1.0)
    s.add_cleanup(lambda: calls.append("first"))
    s.add_cleanup(bad)
    s.add_cleanup(lambda: calls.append("last"))
    with pytest.raises(OSError, match="pg_ctl"):
        s.run(duration=0)
    assert calls == ["last", "bad", "first"]
    s.close()
    assert calls == ["last", "bad", "first"]


def test_a_session_runs_once():
    s = Session(1.0)
    s.run(duration=0)
    with pytest.raises(RuntimeError):
        s.run(duration=0)


def test_output_paths_that_cannot_be_written_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        check_output_path(str(tmp_path))
    with pytest.raises(UserError, match=r"directory .*missing does not exist"):
        check_output_path(str(tmp_path / "missing" / "r.zfsmon"))
    check_output_path(str(tmp_path / "r.zfsmon"))


# background -----------------------------------------------------------------------------------------------------
def test_background_mode_samples_while_the_caller_works_and_marks_go_in_under_the_lock(tmp_path):
    path = str(tmp_path / "bg.zfsmon")
    got: List[Record] = []
    ended = Counter()
    cleanup = Counter()
    with Session(0.02, [Ticking()], sinks=[got.extend]) as s:
        s.add_cleanup(cleanup)
        s.record_into(path, {})
        s.start(on_end=ended)
        until(lambda: len(got) >= 3)
        for i in range(20):  # marks from this thread while the sampler writes from its own
            s.mark(f"note {i}")
    out = s.close()
    assert out.intervals >= 3 and cleanup.calls == 1 and ended.calls == 0  # closed, not ended by itself
    with Recording.open(path) as r:
        assert [e.text for e in r.events(kinds=["mark"])] == [f"note {i}" for i in range(20)]
    with pytest.raises(RuntimeError, match="not recording"):
        s.mark("too late")


def test_in_the_background_a_full_disk_stops_the_recording_not_the_sampling(tmp_path):
    got: List[Record] = []
    with Session(0.02, [Ticking()], sinks=[got.extend]) as s:
        s.record_into(str(tmp_path / "full.zfsmon"), {})
        _fill_after(s, 2)
        s.start()
        until(lambda: s.failure is not None)
        n = len(got)
        until(lambda: len(got) >= n + 5)  # the screen still gets its records
        with pytest.raises(RuntimeError, match="not recording"):
            s.mark("after the disk filled up")
    out = s.close()
    assert out.intervals == 2 and "disk is full" in (out.failure or "")
    assert [r.text for r in got if isinstance(r, Event) and r.kind == EventKind.ERROR] == [
        f"recording stopped: {out.failure}"]


def test_in_the_background_a_duration_ends_the_run_and_on_end_is_told():
    ended = threading.Event()
    s = Session(0.02, [Ticking()])
    s.start(duration=0.1, on_end=ended.set)
    assert ended.wait(10)
    assert s.close().failure is None


# signals (a process of its own: the handlers belong to the main thread) ------------------------------------------
SCRIPT = """
import signal, sys, threading, time
sys.path.insert(0, {repo!r})
from tests.unit.engine.test_engine_session import Ticking
from zfsmon.engine import Session

mode = sys.argv[1]
before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))  # SIGINT is ignored under nohup/&
def tick(records):
    print("tick", flush=True)
with Session(0.05, [Ticking()], sinks=[tick]) as s:
    s.add_cleanup(lambda: print("cleanup", flush=True))
    s.record_into(sys.argv[2], {{}})
    if mode == "blocking":
        out = s.run()
    else:
        ended = threading.Event()
        s.start(on_end=ended.set)
        ended.wait(30)  # where a screen would run; on_end is what makes it exit
        print("ended" if ended.is_set() else "not ended", flush=True)
out = s.close()
print("intervals", out.intervals, "restored",
      (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before, flush=True)
"""


@pytest.mark.parametrize("mode", ["blocking", "background"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_run_cleanly_and_the_handlers_are_restored(tmp_path, mode, sig):
    path = str(tmp_path / "sig.zfsmon")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(repo=str(REPO)), mode, path], cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = threading.Timer(60, proc.kill)  # a child that hangs before its third tick must not hang the test
    guard.start()
    try:
        assert proc.stdout is not None
        for _ in range(3):
            assert proc.stdout.readline() == "tick\n"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    lines = out.splitlines()
    assert lines.count("cleanup") == 1 and lines[-1].endswith("restored True")
    assert ("ended" in lines) == (mode == "background")
    with Recording.open(path) as r:
        assert r.integrity() == "ok" and r.events()[-1].text == "recording stopped"


def test_off_the_main_thread_no_handler_is_installed():
    before = signal.getsignal(signal.SIGTERM)
    seen: List[object] = []

    def sink(_records: List[Record]) -> None:
        seen.append(signal.getsignal(signal.SIGTERM))
        s.stop()

    s = Session(0.02, [Ticking()], sinks=[sink])
    t = threading.Thread(target=s.run)
    t.start()
    t.join(10)
    assert seen and all(h is before for h in seen)


# choosing collectors ---------------------------------------------------------------------------------------------
class Named(Collector):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def poll(self) -> List[Record]:
        return []


def test_a_soak_gets_the_zfs_sources_only_and_hears_about_missing_key_ones(monkeypatch, capsys):
    made = [Named("zpool"), Named("pgbench"), Named("pgstat"), Named("diskstats")]
    monkeypatch.setattr(collectors, "probe", lambda: None)
    monkeypatch.setattr(collectors, "build_collectors", lambda *a, **k: (list(made), ["arcstats: no ARC kstats",
                                                                                   "zil: no ZIL kstats"]))
    got = collectors.zfs_collectors_or_warn(1.0, "zlab")
    assert [c.name for c in got] == ["zpool", "diskstats"]
    err = capsys.readouterr().err
    assert "not recording arcstats: no ARC kstats" in err and "zil" not in err
    monkeypatch.setattr(collectors, "build_collectors", lambda *a, **k: ([], ["zpool: no zpool command"]))
    assert collectors.zfs_collectors_or_warn(1.0) == []
    assert "no ZFS collector is available here (zpool: no zpool command); recording the workload only" in \
        capsys.readouterr().err


# the commands on the loop ----------------------------------------------------------------------------------------
def test_record_into_a_directory_or_a_missing_one_is_one_line(tmp_path, capsys):
    assert main(["record", "--out", str(tmp_path), "-q", "--duration", "1"]) == 2
    assert main(["record", "--out", str(tmp_path / "no" / "r.zfsmon"), "-q", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "does not exist" in err and "Traceback" not in err


def test_the_exporter_without_prometheus_client_says_what_to_install():
    code = ("import sys; sys.modules['prometheus_client'] = None\n"
            "from zfsmon.cli import main\n"
            "sys.exit(main(['exporter', '--duration', '1']))")
    cp = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True, timeout=60,
                        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert cp.returncode == 2 and "Traceback" not in cp.stderr
    assert "pip install 'zfsmon[exporter]'" in cp.stderr
