"""The zpool iostat collector on a real zfs-fuse pool: numbers, roles, topology changes, failures."""

from __future__ import annotations

import os
import subprocess
from typing import Callable, Dict, List

import pytest

from tests.conftest import wait_until
from tests.lab.helpers import collect_lines, write_file
from zfsmon import lab as labmod
from zfsmon.lab.config import LabConfig
from zfsmon.model import Event, EventKind, Kind, Record, Role, Sample
from zfsmon.sources.zpool.iostat_collector import ZpoolIostatCollector

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def _collect(col: ZpoolIostatCollector, until: Callable[[List[Record]], bool], what: str, timeout: float = 90.0
             ) -> List[Record]:
    """Poll ``col`` until the records so far satisfy ``until`` (a failure naming ``what`` after ``timeout`` s)."""
    out: List[Record] = []

    def enough() -> bool:
        out.extend(col.poll())
        return until(out)
    wait_until(enough, timeout, what, step=0.05)
    return out


def _samples(records) -> List[Sample]:
    return [r for r in records if isinstance(r, Sample)]


def _reports(records) -> int:
    return len({s.ts for s in _samples(records)})


def _topology(records) -> List[Event]:
    return [r for r in records if isinstance(r, Event) and r.kind == EventKind.TOPOLOGY]


def _topology_settled(records) -> bool:
    """A topology event has come, and a report after the one that brought it."""
    topo = _topology(records)
    return bool(topo) and any(s.ts > topo[-1].ts for s in _samples(records))


def _errors(records) -> List[Event]:
    return [r for r in records if isinstance(r, Event) and r.kind == EventKind.ERROR]


def _naive_interval_ops(text: str) -> Dict[str, float]:
    """Sum over the interval reports of read+write ops/s per row name, read from plain `zpool iostat -v` text.

    Deliberately independent of zfsmon's parser: split lines, 1024-based suffixes, skip the first report.
    """
    totals: Dict[str, float] = {}
    report = 0
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["pool"]:
            report += 1
        elif report > 1 and len(parts) == 7 and parts[3] != "-" and parts[0] != "mirror" \
                and not parts[0].startswith("-"):
            totals.setdefault(parts[0], 0.0)
            totals[parts[0]] += sum(float(p[:-1]) * 1024 if p[-1] == "K" else float(p) for p in parts[3:5])
    return totals


def test_interval_ops_equal_what_zpool_iostat_reports(lab):
    """zfsmon's per-vdev ops over the same intervals as a separate `zpool iostat -v`, within display rounding."""
    interval, count = 2, 7
    col = ZpoolIostatCollector([lab.pool], interval)
    col.start()
    plain = subprocess.Popen(["zpool", "iostat", "-v", lab.pool, str(interval), str(count)],
                             stdout=subprocess.PIPE, text=True)
    lines: List[str] = []
    assert plain.stdout is not None
    reader = collect_lines(plain.stdout, lines)
    try:
        # both have printed their since-import report: the writes land in interval reports of both
        records = _collect(col, lambda r: _reports(r) >= 1, "zfsmon's first report")
        wait_until(lambda: sum(ln.split()[:1] == [lab.pool] for ln in list(lines)) >= 1, 60,
                   "zpool iostat's first report")
        write_file(os.path.join(lab.mountpoint, "iostat-lab.bin"), 16)
        records += _collect(col, lambda r: _reports(records + r) >= count, f"{count} reports",
                            timeout=interval * count + 90)
        plain.wait(timeout=90)
        reader.join(timeout=30)
        text = "".join(lines)
    finally:
        col.stop()
        if plain.poll() is None:
            plain.kill()
    assert not _errors(records)
    samples = [s for s in _samples(records) if not s.since_boot]
    assert {s.interval for s in samples} == {float(interval)}
    ours: Dict[str, float] = {}
    n_reports = len({s.ts for s in samples})
    assert n_reports == count - 1
    for s in samples:
        ours.setdefault(s.entity.name, 0.0)
        ours[s.entity.name] += s.metrics.get("read_ops", 0.0) + s.metrics.get("write_ops", 0.0)
    theirs = _naive_interval_ops(text)
    leaves = [os.path.basename(d) for d in lab.devices["data"]]
    assert sum(theirs[x] for x in leaves) > 50, "the workload should have produced writes"
    for name in leaves + [os.path.basename(lab.devices["log"][0]), lab.pool]:
        # each printed number is rounded to 3 significant digits (or to 1 op/s): allow that per report
        slack = n_reports * 1.0 + 0.01 * max(ours[name], theirs[name])
        assert abs(ours[name] - theirs[name]) <= slack, (name, ours[name], theirs[name])


def test_cache_and_log_devices_have_their_roles(lab):
    col = ZpoolIostatCollector([lab.pool], 1)
    col.start()
    try:
        records = _collect(col, lambda r: _reports(r) >= 2, "two reports")
    finally:
        col.stop()
    by_name = {s.entity.name: s.entity for s in _samples(records)}
    cache = by_name[os.path.basename(lab.devices["cache"][0])]
    slog = by_name[os.path.basename(lab.devices["log"][0])]
    assert (cache.kind, cache.role, cache.parent) == (Kind.VDEV, Role.CACHE, lab.pool)
    assert (slog.kind, slog.role, slog.parent) == (Kind.VDEV, Role.LOG, lab.pool)  # zfs-fuse prints no `logs`
    data = [by_name[os.path.basename(d)] for d in lab.devices["data"]]
    assert {e.role for e in data} == {Role.DATA} and {e.parent for e in data} == {"mirror-0", "mirror-1"}
    assert by_name[lab.pool].kind == Kind.POOL


def test_cache_device_removed_and_added_back_is_a_topology_event(lab):
    cache_dev = lab.devices["cache"][0]
    cache = os.path.basename(cache_dev)
    col = ZpoolIostatCollector([lab.pool], 1)
    col.start()
    removed = False
    try:
        records = _collect(col, lambda r: _reports(r) >= 2, "two reports")
        subprocess.run(["zpool", "remove", lab.pool, cache_dev], check=True, capture_output=True)
        removed = True
        records += _collect(col, _topology_settled, "the removal as a topology event, and a report after it")
        subprocess.run(["zpool", "add", lab.pool, "cache", cache_dev], check=True, capture_output=True)
        removed = False
        records += _collect(col, _topology_settled, "the cache's return as a topology event, and a report after it")
    finally:
        col.stop()
        if removed:
            subprocess.run(["zpool", "add", lab.pool, "cache", cache_dev], capture_output=True)
    topo = _topology(records)
    assert [(e.data["removed"], e.data["added"]) for e in topo] == [([cache], []), ([], [cache])], topo
    assert not _errors(records)
    last = max(s.ts for s in _samples(records))
    back = [s.entity for s in _samples(records) if s.ts == last and s.entity.name == cache]
    assert back and back[0].role == Role.CACHE


def test_missing_command_is_an_error_event_and_polling_goes_on():
    col = ZpoolIostatCollector(["tank"], 1, flags=[], zpool="/nonexistent/zpool")
    col.start()
    try:
        first = col.poll()
        assert [e.kind for e in first] == [EventKind.ERROR]
        assert "cannot run /nonexistent/zpool" in first[0].text
        # the restart is tried again after the back-off, still no exception
        later = _collect(col, lambda r: any(isinstance(x, Event) and "restarting" in x.text for x in r),
                         "a restart after the back-off")
        assert any(isinstance(r, Event) and r.kind == EventKind.INFO and "restarting" in r.text for r in later)
    finally:
        col.stop()


def test_vanished_pool_is_an_error_event_and_the_collector_keeps_running(tmp_path):
    """A pool exported while watched: zfs-fuse's zpool iostat exits; that is reported, and retried."""
    cfg = LabConfig(pool=f"zv{os.getpid()}", directory=str(tmp_path / "vanish"), data_mb=128, log_mb=64,
                    cache_mb=128)
    info = labmod.up(cfg, log=lambda *_: None)
    col = ZpoolIostatCollector([info.pool], 1)
    try:
        col.start()
        records = _collect(col, lambda r: _reports(r) >= 2, "two reports")
        assert _samples(records)
        subprocess.run(["zpool", "export", info.pool], check=True, capture_output=True)
        records = _collect(col, lambda r: len(_errors(r)) >= 2, "two errors after the export")
        errors = _errors(records)
        assert errors, records
        assert any(info.pool in e.text for e in errors), [e.text for e in errors]
        assert col.poll() is not None  # still polling, no exception
    finally:
        col.stop()
        labmod.down(cfg.pool, log=lambda *_: None)


def test_the_command_prints_role_sections_every_interval(lab, capsys):
    from zfsmon.cli import main

    assert main(["iostat", lab.pool, "1", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(ln.split()[:1] == ["pool"] for ln in out) == 2  # two reports, each with its header
    names = [ln.split()[0] for ln in out if ln.strip()]
    log, cache = os.path.basename(lab.devices["log"][0]), os.path.basename(lab.devices["cache"][0])
    assert names.count("logs") == 2 and names.count("cache") == 2
    assert names.index("logs") + 1 == names.index(log) and names.index("cache") + 1 == names.index(cache)
