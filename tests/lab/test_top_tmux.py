"""`zfsmon top` as a person runs it: in tmux, against the lab, while a workload runs; the screen read back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading

import pytest

from tests.conftest import REPO, need, wait_until
from tests.lab.helpers import drop_host_caches, random_reads, write_file
from zfsmon.metrics.health import STATE_CODES
from zfsmon.model import EventKind, Kind, Role
from zfsmon.store import Recording, RecordingError
from zfsmon.views.top.replay import ReplayCursor

#: the Workload panel's line of pgbench's per-second TPS ("TPS  21202 ..."), which a soak zfsmon runs has
#: (pgbench -P 1); not anchored at the line's start: the panel is in the right-hand column, and the timeline
#: under the vdev tree shares its screen rows
LIVE_TPS = re.compile(r"(?:^|\s)TPS\s+[\d.]+K?\s")

pytestmark = [pytest.mark.lab]


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30).stdout


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session)


def _cells(screen: str, name: str):
    """The words of the tree row of vdev/leaf ``name`` (the first line that starts with it), or None.

    A state other than ONLINE printed after the name (``loop3 OFFLINE``) is left out: see :func:`_state`.
    """
    for line in screen.splitlines():
        parts = line.split()
        if parts[:1] == [name]:
            return parts[:1] + parts[2:] if len(parts) > 1 and parts[1] in STATE_CODES else parts
    return None


def _state(screen: str, name: str) -> str:
    """The health state top prints after a row's name ("" when it prints none: ONLINE or not known)."""
    for line in screen.splitlines():
        parts = line.split()
        if parts[:1] == [name]:
            return parts[1] if len(parts) > 1 and parts[1] in STATE_CODES else ""
    return ""


def _row(screen: str, name: str):
    """The numbers of a tree row: r/s w/s rB/s wB/s as printed (humanized)."""
    cells = _cells(screen, name)
    return cells[1:5] if cells and len(cells) >= 5 else None


def _dev_at(screen: str) -> int:
    """Where a leaf row's device-ops cell is, split on blanks: 'dev ops' on a wide screen, 'dev' on a narrow one."""
    return 8 if "dev ops" in screen else 6


def _dev_cell(screen: str, name: str):
    """The device-level ops cell of a leaf row, or None while it is still empty."""
    cells, at = _cells(screen, name), _dev_at(screen)
    return cells[at] if cells and len(cells) > at else None


def _nonzero(cells) -> bool:
    return bool(cells) and any(re.match(r"^\d", c) and float(re.match(r"[\d.]+", c).group()) > 0 for c in cells)


def _wait(session: str, pred, timeout: float, what: str) -> str:
    """The pane's screen once ``pred`` holds for it; a failure showing the last screen after ``timeout`` s."""
    last = [""]

    def shown() -> str:
        last[0] = _screen(session)
        return last[0] if pred(last[0]) else ""
    return wait_until(shown, timeout, lambda: f"{what}; the screen:\n{last[0]}", step=0.5)


def _exited(session: str, rc_file, timeout: float = 60) -> None:
    """Wait for zfsmon to exit (the pane's command writes its status to ``rc_file``), then end the session."""
    try:
        wait_until(rc_file.exists, timeout, "zfsmon to exit after q", step=0.3)
    finally:
        _tmux("kill-session", "-t", session)


def _marks(path: str):
    """The marks in the recording zfsmon is writing (None while it cannot be read yet)."""
    try:
        with Recording.open(path) as r:
            return [e.text for e in r.events(kinds=[EventKind.MARK])]
    except RecordingError:
        return None


def test_top_in_tmux_against_the_lab(lab, tmp_path):
    need(shutil.which("tmux") is not None, "tmux not installed")
    session = f"zfsmon-top-{os.getpid()}"
    rec_path = str(tmp_path / "top.zfsmon")
    rc_file = tmp_path / "rc"
    # COLUMNS/LINES inherited from pytest would pin Textual to 80x24 whatever the pane's size
    cmd = (f"unset COLUMNS LINES; cd {REPO} && {sys.executable} -m zfsmon top --pool {lab.pool} -i 1 --record {rec_path}; "
           f"echo $? > {rc_file}")
    _tmux("new-session", "-d", "-s", session, "-x", "130", "-y", "45", cmd)
    _tmux("set-option", "-t", session, "window-size", "manual")
    _tmux("resize-window", "-t", session, "-x", "130", "-y", "45")
    stop = threading.Event()
    path = os.path.join(lab.mountpoint, "top-workload.bin")
    big = os.path.join(lab.mountpoint, "top-reads.bin")
    # larger than the lab's 64 MiB ARC, so random reads over it miss the ARC and reach the L2ARC / data disks
    # (reads of a file just written would all be ARC hits, leaving the L2 hit % without a denominator)
    write_file(big, 96)

    def workload() -> None:
        seed = 0
        while not stop.is_set():
            write_file(path, 4)  # fsync'ed writes: data vdevs and the SLOG
            drop_host_caches()
            seed += 1
            random_reads(big, 300, seed=seed)
    leaves = [os.path.basename(p) for p in lab.devices["data"]]
    log_dev = os.path.basename(lab.devices["log"][0])
    cache_dev = os.path.basename(lab.devices["cache"][0])
    worker = threading.Thread(target=workload, daemon=True)
    try:
        screen = _wait(session, lambda s: lab.pool in s and "mirror-0" in s, 60, "the pool's tree")
        assert lab.pool in screen and "LIVE" in screen, screen
        worker.start()
        # until the leaves move and the device column has its first rate (it needs two /proc/diskstats reads)
        screen = _wait(session, lambda s: any(_nonzero(_row(s, leaf)) for leaf in leaves)
                       and all(_dev_cell(s, leaf) is not None for leaf in leaves), 90,
                       "the data leaves' I/O and their device column")
        assert any(_nonzero(_row(screen, leaf)) for leaf in leaves), screen
        for name in ("data", "logs", "cache", "mirror-0", "mirror-1", log_dev, cache_dev, *leaves):
            assert name in screen, (name, screen)
        lines = screen.splitlines()
        at = {n: next(i for i, ln in enumerate(lines) if ln.split()[:1] == [n]) for n in ("logs", log_dev, "cache",
                                                                                           cache_dev)}
        assert at["logs"] < at[log_dev] < at["cache"] < at[cache_dev], screen
        # the device-level view next to ZFS's: /proc/diskstats ops of each data leaf's loop device
        # (zfs-fuse writes through the host page cache, so a device can say 0 while ZFS writes: GOOSE / G!)
        for leaf in leaves:
            c = _cells(screen, leaf)
            dev = _dev_cell(screen, leaf)
            assert dev is not None and re.match(r"^[\d.]+[KMG]?$", dev), screen
            zfs_ops = sum(float(re.match(r"[\d.]+", x).group()) for x in c[1:3])
            if zfs_ops >= 2 and dev == "0":  # well above the 1 op/s below which a leaf is only "idle"
                marker_at = _dev_at(screen) + (2 if "dev ops" in screen else 1)  # wide: after dev lat
                assert len(c) > marker_at and c[marker_at] in ("GOOSE", "G!"), (leaf, screen)
        # L2ARC and SLOG panels show numbers, not dashes
        screen = _wait(session, lambda s: re.search(r"L2 hit \d", s) and re.search(r"SLOG w \d", s), 90,
                       "L2ARC hit % and SLOG writes")
        assert re.search(r"L2 hit [\d.]+%", screen), screen
        assert re.search(r"L2 feed [\d.]+[KMG]?/s read [\d.]+[KMG]?/s", screen), screen
        assert re.search(r"SLOG w [\d.]+[KMG]?/s", screen), screen
        assert re.search(r"hit\s+[\d.]+%", screen), screen  # ARC hit %
        # a mark, with a note, from the keyboard
        _tmux("send-keys", "-t", session, "m")
        _wait(session, lambda s: "Mark: a note" in s, 60, "the mark prompt")
        _tmux("send-keys", "-t", session, "-l", "tmux mark")
        _tmux("send-keys", "-t", session, "Enter")
        wait_until(lambda: _marks(rec_path) == ["tmux mark"], 60, "the mark in the recording")
    finally:
        stop.set()
        worker.join(timeout=60)
        _tmux("send-keys", "-t", session, "q")
        try:
            _exited(session, rc_file)
        finally:
            for p in (path, big):
                if os.path.exists(p):
                    os.unlink(p)
    assert rc_file.read_text().strip() == "0"
    with Recording.open(rec_path) as r:
        ents = {e.key: e for e in r.entities()}
        assert ents[f"vdev:{lab.pool}/{log_dev}"].role == Role.LOG
        assert ents[f"vdev:{lab.pool}/{cache_dev}"].role == Role.CACHE
        assert any(e.kind == Kind.ARC for e in ents.values())
        assert [e.text for e in r.events(kinds=[EventKind.MARK])] == ["tmux mark"]
        ops = [s.metrics.get("write_ops", 0) for s in r.samples(kinds=[Kind.LEAF]) if not s.since_boot]
        assert max(ops) > 0
    # ... and replay opens it, with the same tree
    with Recording.open(rec_path) as r:
        rows = {row.name: row for row in ReplayCursor(r, 300.0).state.tree(lab.pool)}
    assert rows[log_dev].role == Role.LOG and rows[cache_dev].role == Role.CACHE
    assert {leaf for leaf in leaves} <= {n for n, row in rows.items() if row.kind == "leaf"}


def test_bare_zfsmon_on_a_terminal_is_top_and_records_by_default(lab, tmp_path):
    """`zfsmon` with no subcommand on a terminal runs the dashboard, recording into zfsmon-HOST-TIME.zfsmon in the
    state directory (here a service's ``STATE_DIRECTORY``, which comes first: the test writes nothing into
    /var/lib/zfsmon), nothing into the directory it was started in."""
    need(shutil.which("tmux") is not None, "tmux not installed")
    session = f"zfsmon-bare-{os.getpid()}"
    rc_file = tmp_path / "rc"
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    state.mkdir(mode=0o700)
    cmd = (f"unset COLUMNS LINES; cd {cwd} && STATE_DIRECTORY={state} PYTHONPATH={REPO} {sys.executable} -m zfsmon; "
           f"echo $? > {rc_file}")
    _tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd)
    try:
        screen = _wait(session, lambda s: "LIVE" in s and lab.pool in s, 60, "the live screen with the pool")
        assert "LIVE" in screen and lab.pool in screen and "zfsmon-" in screen, screen
    finally:
        _tmux("send-keys", "-t", session, "q")
        _exited(session, rc_file)
    assert rc_file.read_text().strip() == "0"
    made = sorted(state.glob("zfsmon-*.zfsmon"))
    assert len(made) == 1 and list(cwd.iterdir()) == []
    with Recording.open(str(made[0])) as r:
        assert any(e.kind == Kind.POOL and e.name == lab.pool for e in r.entities())


@pytest.mark.postgres
def test_top_soak_on_the_lab_as_the_demo_runs_it(lab, require_postgres, tmp_path):
    """The README's main job in small: `top --soak --lab --cold --init-scale` in a terminal. pgbench runs with
    `-P 1`, so its TPS reaches the Workload panel every second while the runs end and are counted; `q` stops
    pgbench and the lab's cluster, and the recording holds the runs; pgbench's output is tee'd beside it."""
    need(shutil.which("tmux") is not None, "tmux not installed")
    session = f"zfsmon-soak-{os.getpid()}"
    rec_path = tmp_path / "soak.zfsmon"
    rc_file = tmp_path / "rc"
    cmd = (f"unset COLUMNS LINES; cd {tmp_path} && {sys.executable} -m zfsmon top --pool {lab.pool} --lab {lab.pool} "
           f"--soak --cold --init-scale 2 -T 5 --pause 1 --record {rec_path} -- -S -c 2 -j 1; "
           f"echo $? > {rc_file}; sleep 300")  # the pane stays, so what zfsmon printed on exit can be read
    _tmux("new-session", "-d", "-s", session, "-x", "130", "-y", "45", f"cd {REPO} && export PYTHONPATH={REPO}; {cmd}")
    try:
        screen = _wait(session, lambda s: rc_file.exists() or (re.search(LIVE_TPS, s) is not None
                       and re.search(r"runs ended in window: [1-9]", s) is not None), 300,
                       "pgbench's TPS in the Workload panel and a finished run counted")
        assert not rc_file.exists(), f"zfsmon top exited early ({rc_file.read_text().strip()}):\n{screen}"
        assert re.search(LIVE_TPS, screen) and "TPS per s" in screen, screen  # the panel's and the timeline's
        assert "LIVE" in screen and "Read path" in screen, screen
        assert re.search(r"PG buf\s+[\d.]+%", screen), screen  # pg_stat_database reached the read path
    finally:
        _tmux("send-keys", "-t", session, "q")
        _exited(session, rc_file, timeout=120)
    assert rc_file.read_text().strip() == "0"
    with Recording.open(str(rec_path)) as r:
        ends = [e for e in r.events(kinds=[EventKind.RUN_END])]
        assert ends and any("tps" in e.text for e in ends), [e.text for e in ends]
        assert any(s.metrics.get("tps", 0) > 0 for s in r.samples(kinds=[Kind.WORKLOAD]))
    log = tmp_path / "soak.pgbench.log"
    assert log.exists() and "tps = " in log.read_text()
    assert not list(tmp_path.glob("top-soak-*.pgbench.log"))
    from zfsmon.workload.target import lab_cluster

    assert not lab_cluster(lab.pool)[1].is_running(), "q left the lab's PostgreSQL running"
