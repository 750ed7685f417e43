"""The fault matrix on kernel OpenZFS 2.4, from the run bench/bench_guest_faults.py made in the guest
(tests/data/openzfs-2.4/faults, PROVENANCE.md there), on every commit: what ZFS said (its captures, parsed), what
the recording holds per fault, what `analyze` names, where replay's `]` stops and what `top`'s tree shows there,
and which alert rules fire in a real Prometheus holding the recording's scrapes (CI runs the matrix's io and cache
rows live on 2.3: tests/guest/test_faults_live.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest
import yaml

from tests import promserver
from tests.conftest import REPO, TEST_DATA, free_loopback_port, gunzip
from zfsmon.analysis.faults import matrix_summary
from zfsmon.analysis.findings import analyze
from zfsmon.metrics.latency import lower_ns, split_metric
from zfsmon.model import Kind, Role
from zfsmon.sources.zpool.status import parse_health
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.replay import ReplayCursor

FAULTS = TEST_DATA / "openzfs-2.4" / "faults"
RULES = REPO / "zfsmon" / "share" / "prometheus" / "zfsmon-rules.yml"
INTERVAL = 2.0  # the recording's
#: the matrix's two recordings: the one boot of every row but the checksum one, and the checksum row's own boot
#: (`-e checksum`, which the first boot tried, is no device fault zinject takes: PROVENANCE.md)
RUNS = {"matrix": "faults.zfsmon.gz", "checksum": "checksum/faults.zfsmon.gz"}
STEPS = {"matrix": FAULTS / "steps.tsv", "checksum": FAULTS / "checksum" / "steps.tsv"}


def _status(name: str):
    (pool,) = [p for p in parse_health((FAULTS / "zfs" / name).read_text()) if p.pool == "zguest"]
    return pool, {row.entity.name: row for row in pool.vdevs}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Dict[str, dict]:
    out = {}
    for run, name in RUNS.items():
        path = gunzip(FAULTS / name, tmp_path_factory.mktemp(run))
        with Recording.open(path) as rec:
            samples, events = list(rec.samples()), rec.events()
            ents = {e.key: e for e in rec.entities()}
        summary = matrix_summary(samples, events, STEPS[run].read_text())
        out[run] = {"path": path, "samples": samples, "events": events, "ents": ents, "summary": summary,
                    "rows": {r["row"]: r for r in summary["rows"]}}
    return out


def _texts(row: dict) -> List[str]:
    return [t.split(": ", 1)[1] for t in row["events"]]


# --- what ZFS said, at each fault's height (the captures, parsed as the status source parses them) ----------------

def test_zfs_said_each_fault_in_its_own_words() -> None:
    pool, rows = _status("zpool-status-io.txt")
    leaf = rows["/dev/disk/by-id/virtio-data1-part1"]
    assert (pool.state, leaf.state, leaf.counts["read_errors"], leaf.note) == ("DEGRADED", "FAULTED", 206,
                                                                             "too many errors")
    assert (leaf.entity.kind, leaf.entity.parent, leaf.entity.role) == (Kind.LEAF, "mirror-0", Role.DATA)
    assert rows["mirror-0"].state == "DEGRADED" and rows["mirror-1"].state == "ONLINE"
    pool, rows = _status("zpool-status-slow.txt")  # zpool status -s: the SLOW column
    assert rows["/dev/disk/by-id/virtio-data3-part1"].counts["slow_ios"] == 349
    assert pool.state == "ONLINE"
    pool, rows = _status("zpool-status-pulled.txt")
    assert (pool.state, rows["/dev/disk/by-id/virtio-data0-part1"].state, rows["mirror-0"].state) == (
        "DEGRADED", "REMOVED", "DEGRADED")
    pool, rows = _status("zpool-status-resilvered.txt")
    assert pool.state == "ONLINE" and (pool.scan.function, pool.scan.state) == ("RESILVER", "FINISHED")
    pool, rows = _status("zpool-status-cache-pulled.txt")  # a cache device gone leaves the pool ONLINE
    cache = rows["/dev/disk/by-id/virtio-cache0-part1"]
    assert (pool.state, cache.state, cache.entity.role, cache.entity.kind) == ("ONLINE", "REMOVED", Role.CACHE,
                                                                               Kind.VDEV)
    (susp,) = parse_health((FAULTS / "zfs" / "zpool-status-suspended.txt").read_text())
    assert (susp.pool, susp.state) == ("zsusp", "SUSPENDED")
    assert (FAULTS / "zed.txt").read_text().strip() == "active"  # ZED faulted data1 and marked the pulls REMOVED


# --- what the recording holds per fault (zfsmon.analysis.faults: the bench's own summary) ------------------------

def test_read_errors_fault_the_leaf_and_degrade_the_pool_then_clear(runs) -> None:
    io = runs["matrix"]["rows"]["io"]
    assert io["leaf_errors"] == {"zguest/virtio-data1": {"read_errors": 206}}  # as zpool status printed them
    assert io["states"] == {"zguest": ["DEGRADED"], "zguest/virtio-data1": ["FAULTED"], "zguest/mirror-0": ["DEGRADED"]}
    texts = _texts(io)
    for said in ("pool zguest: virtio-data1 FAULTED (was ONLINE)", "pool zguest DEGRADED (was ONLINE)",
                 "pool zguest: virtio-data1 ONLINE (was FAULTED)", "pool zguest: resilver finished with 0 errors"):
        assert said in texts, texts
    # `zpool clear` zeroed the counts: a reset (a new baseline), never a negative rate
    assert any(t.startswith("leaf:zguest/virtio-data1: counter went backwards (read_errors 206 -> 0") for t in texts)
    # half the reads of one side of mirror-0 failing (and retried on the other) cost the workload
    assert io["workload_ops_during"] < 0.5 * io["workload_ops_before"]


def test_a_slow_disk_counts_slow_ios_on_that_leaf_only(runs) -> None:
    slow = runs["matrix"]["rows"]["slow"]
    assert slow["slow_ios"]["zguest/virtio-data3"] >= 280  # each 1 in 1 read delayed 200 ms
    # the others' few are emulation's own (slow_ios counts I/Os over zio_slow_io_ms=100 ms, which TCG reaches)
    assert all(n < 10 for dev, n in slow["slow_ios"].items() if dev != "zguest/virtio-data3"), slow["slow_ios"]
    assert slow["states"] == {} and slow["leaf_errors"] == {}  # slow is not failed


def test_a_pulled_data_disk_is_removed_then_resilvered(runs) -> None:
    pull = runs["matrix"]["rows"]["pull"]
    assert pull["states"] == {"zguest/virtio-data0": ["REMOVED"], "zguest/mirror-0": ["DEGRADED"], "zguest": ["DEGRADED"]}
    texts = _texts(pull)
    assert texts.index("pool zguest: virtio-data0 REMOVED (was ONLINE)") < texts.index(
        "pool zguest: virtio-data0 ONLINE (was REMOVED)") < texts.index("pool zguest: resilver finished with 0 errors")
    assert pull["scan"]["function"] == "RESILVER" and pull["scan"]["scan_processed_bytes"] > 0
    # the disk back in the machine is a new block device: its counters start again (a reset, not a rate)
    assert any(t.startswith("device:vdb: counter went backwards") for t in texts)


def test_a_pulled_cache_device_is_seen_at_once_though_the_pool_stays_online(runs) -> None:
    cache = runs["matrix"]["rows"]["cache"]
    assert cache["states"] == {"zguest/virtio-cache0": ["REMOVED"]}
    texts = _texts(cache)
    gone = runs["matrix"]["events"]
    (removed,) = [e for e in gone if e.text == "pool zguest: virtio-cache0 REMOVED (was ONLINE)"]
    # the pool's state file says ONLINE throughout: the block devices' list made the status source look at once
    assert removed.ts - cache["start"] <= 15.0, removed.ts - cache["start"]
    assert "pool zguest: virtio-cache0 ONLINE (was REMOVED)" in texts


def test_a_suspended_pool_holds_nothing_up_and_sigterm_still_stops_the_recorder(runs) -> None:
    m = runs["matrix"]
    suspend = m["rows"]["suspend"]
    assert suspend["states"] == {"zsusp": ["SUSPENDED"]}
    assert suspend["leaf_errors"]["zsusp/virtio-susp0"]["write_errors"] > 1000
    assert suspend["longest_gap_s"] <= 3.0  # zguest's intervals went on: the one zpool iostat child did not stall
    assert (FAULTS / "stop.txt").read_text().startswith("stopped ") and \
        (FAULTS / "stop.txt").read_text().rstrip().endswith("after SIGTERM, exit 0")
    assert float((FAULTS / "stop.txt").read_text().split()[1]) < 5.0
    assert [e.text for e in m["events"]][-2:] == ["fio stopped (terminating on signal 2)", "recording stopped"]


def test_no_interval_lost_no_absurd_rate_and_quick_recovery(runs) -> None:
    for run in runs.values():
        summary = run["summary"]
        assert summary["bad_rates"] == [], summary["bad_rates"]
        for row in summary["rows"]:
            assert row["longest_gap_s"] is not None and row["longest_gap_s"] <= 1.5 * INTERVAL, row["row"]
            if row["row"] != "suspend":  # the recorder is stopped inside that one
                assert row["recovery_s"] is not None and row["recovery_s"] <= INTERVAL, row["row"]
    assert not [e for run in runs.values() for e in run["events"] if "Traceback" in e.text]


# --- analyze names each incident; replay stops at each; top's tree and L2ARC panel show it ----------------------

def test_analyze_names_each_incident_the_device_when_how_long_and_the_cost(runs) -> None:
    m = runs["matrix"]
    report = analyze(m["samples"], m["events"])
    found = {f.numbers["device"]: f for f in report.topic("incident")}
    assert sorted(found) == ["virtio-cache0", "virtio-data0", "virtio-data1", "virtio-susp0"]
    io = found["virtio-data1"]
    assert io.text.startswith("virtio-data1 (data leaf of zguest/mirror-0) FAULTED at ")
    assert "; 206 read errors counted; pool DEGRADED; pool zguest: resilver started" in io.text
    assert re.search(r"the workload did \d+ ops/s meanwhile against \d+ in the minute before \(-\d+ %\)", io.text)
    pull = found["virtio-data0"]
    assert pull.text.startswith("virtio-data0 (data leaf of zguest/mirror-0) REMOVED at ") and " for 5 min " in pull.text
    assert pull.numbers["states"] == ["REMOVED"] and pull.numbers["pool_states"] == ["DEGRADED"]
    assert found["virtio-cache0"].text.startswith("virtio-cache0 (cache device of zguest) REMOVED at ")
    susp = found["virtio-susp0"]
    assert susp.text.startswith("virtio-susp0 (data device of zsusp) failing I/O from ") and "pool SUSPENDED" in susp.text
    windows = {r["row"]: r for r in m["summary"]["rows"]}
    for row, dev in (("io", "virtio-data1"), ("pull", "virtio-data0"), ("cache", "virtio-cache0"),
                     ("suspend", "virtio-susp0")):
        inc = found[dev].numbers
        assert windows[row]["start"] <= inc["start"] <= windows[row]["end"], (row, dev)  # in its fault's window
        assert found[dev].moments["it began"] == inc["start"]


def test_replay_stops_at_each_health_change_and_top_shows_the_failed_device(runs) -> None:
    m = runs["matrix"]
    with Recording.open(m["path"]) as rec:
        cur = ReplayCursor(rec, 120.0)
        cur.move_to(cur.start)
        stops = []
        while (ev := cur.jump(1)) is not None:
            stops.append(ev.text)
        for want in ("pool zguest DEGRADED (was ONLINE)", "pool zguest: scrub started",
                     "pool zguest: virtio-cache0 REMOVED (was ONLINE)", "pool zsusp SUSPENDED (was ONLINE)"):
            assert want in stops, stops
        rows = {r["row"]: r for r in m["summary"]["rows"]}
        seen = {}
        for row, pool in (("io", "zguest"), ("slow", "zguest"), ("pull", "zguest"), ("cache", "zguest"),
                          ("suspend", "zsusp")):
            st = cur.move_to(rows[row]["start"] + 0.6 * (rows[row]["end"] - rows[row]["start"]))
            lines = panels.tree(st, panels.ViewOptions(pool=pool), 160).plain.splitlines()
            seen[row] = {ln.split()[0]: " ".join(ln.split()[:5]) for ln in lines if ln.strip()}
            if row == "cache":
                arc = panels.arc(st, panels.ViewOptions(), 60, False).plain.splitlines()
    assert seen["io"]["virtio-data1"].startswith("virtio-data1 FAULTED err 206/0/0")
    assert seen["io"]["mirror-0"] == "mirror-0 DEGRADED 0 0 0"[:len(seen["io"]["mirror-0"])] or \
        seen["io"]["mirror-0"].startswith("mirror-0 DEGRADED")
    assert re.match(r"virtio-data3 \d+ slow", seen["slow"]["virtio-data3"]), seen["slow"]
    assert seen["pull"]["virtio-data0"].startswith("virtio-data0 REMOVED 0 0")  # no figures while out
    assert seen["cache"]["virtio-cache0"].startswith("virtio-cache0 REMOVED")
    assert "L2ARC: virtio-cache0 REMOVED" in arc  # the kernel still counts it: the panel says it serves nothing
    assert seen["suspend"]["zsusp"].startswith("zsusp SUSPENDED")


# --- the shipped alert rules over the recordings, in a real Prometheus ------------------------------------------

STEP = 15.0  # the scrape interval `export --openmetrics` writes, and the rules' evaluation step here
Firing = Tuple[Dict[str, str], float, float]  # the alert's labels, when it began firing, its last evaluation


def _seconds(text: str) -> float:
    n, unit = int(text[:-1]), text[-1]
    return n * {"s": 1, "m": 60, "h": 3600}[unit]


def _firings(prom: promserver.Prom, rule: dict, lo: float, hi: float) -> List[Firing]:
    """When the alert fires over [lo, hi]: its expression evaluated every STEP seconds, `for:` applied as
    Prometheus applies it (true at every evaluation for that long first). Prometheus evaluates alerting rules only
    as it scrapes, never over loaded data, so the rule's own expression is asked of the loaded data instead."""
    hold = _seconds(rule["for"]) if "for" in rule else 0.0
    out = []
    for series in prom.query_range(rule["expr"], lo, hi, STEP):
        labels = {k: v for k, v in series["metric"].items() if k not in ("__name__", "instance", "job")}
        spans: List[List[float]] = []
        for t in (float(t) for t, _v in series["values"]):
            if spans and t - spans[-1][1] <= STEP + 0.5:
                spans[-1][1] = t
            else:
                spans.append([t, t])
        out += [(labels, a + hold, b) for a, b in spans if b - a >= hold]
    return out


@pytest.fixture(scope="module")
def alerts(runs, tmp_path_factory) -> Dict[str, Dict[str, List[Firing]]]:
    """run -> alert -> its firings: each recording's scrapes (`zfsmon export --openmetrics`) loaded into a real
    Prometheus, the recording rules evaluated over them (promtool backfills them), then every alert asked."""
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]
    out: Dict[str, Dict[str, List[Firing]]] = {}
    for run, data in runs.items():
        tmp = tmp_path_factory.mktemp(f"prom-{run}")
        om = tmp / "scrapes.om"
        res = subprocess.run([sys.executable, "-m", "zfsmon", "export", str(data["path"]), "--openmetrics", str(om)],
                             capture_output=True, text=True, timeout=300, cwd=str(REPO))
        assert res.returncode == 0, res.stderr
        text = om.read_text()
        times = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("zfsmon_build_info")]
        lo, hi = min(times), max(times)
        (tmp / "raw").mkdir()
        (tmp / "all").mkdir()
        with promserver.serving(tmp / "raw", text, RULES, free_loopback_port()) as prom:
            blocks = promserver.rule_blocks(prom, RULES, lo, hi + STEP, tmp / "rules", STEP)
        with promserver.serving(tmp / "all", text, RULES, free_loopback_port(), blocks) as prom:
            out[run] = {r["alert"]: _firings(prom, r, lo, hi) for r in rules}
    return out


def _window(runs, run: str, row: str) -> Tuple[float, float]:
    r = runs[run]["rows"][row]
    return r["start"], r["end"]


def test_each_alert_fires_in_its_faults_window(runs, alerts) -> None:
    m, c = alerts["matrix"], alerts["checksum"]
    # device errors: on the leaf errors were injected on, from inside its row; the suspended pool's one disk
    errs = {f[0]["device"]: f for f in m["ZfsmonDeviceErrors"]}
    assert sorted(errs) == ["virtio-data1", "virtio-susp0"], m["ZfsmonDeviceErrors"]
    for dev, row in (("virtio-data1", "io"), ("virtio-susp0", "suspend")):
        lo, hi = _window(runs, "matrix", row)
        assert lo <= errs[dev][1] <= hi + STEP, (dev, errs[dev][1] - lo)
    ((labels, began, _),) = c["ZfsmonDeviceErrors"]
    lo, hi = _window(runs, "checksum", "checksum")
    assert labels == {"pool": "zguest", "device": "virtio-data2", "role": "data"} and lo <= began <= hi
    # a pool degraded for its `for: 5m` with no resilver: only the pulled disk's 330 s, near their end
    ((labels, began, _),) = m["ZfsmonPoolDegradedNotResilvering"]
    lo, hi = _window(runs, "matrix", "pull")
    assert labels["pool"] == "zguest" and lo + 300 <= began <= hi, began - lo
    assert c["ZfsmonPoolDegradedNotResilvering"] == []  # DEGRADED for ~90 s: not for 5 minutes
    # the slow leaf: its slow I/Os alert fires, in its row or before it (slow I/Os of emulation, below)
    slow = {f[0]["device"]: f for f in m["ZfsmonSlowIOs"]}
    assert slow["virtio-data3"][1] <= _window(runs, "matrix", "slow")[1]
    # `zpool clear` (the io row's end) and a disk put back (diskstats): counters went backwards, said as such
    resets = {f[0]["source"]: f[1] for f in m["ZfsmonCounterReset"]}
    assert _window(runs, "matrix", "io")[1] <= resets["status"] <= _window(runs, "matrix", "io")[1] + 60
    assert _window(runs, "matrix", "pull")[0] <= resets["diskstats"] <= _window(runs, "matrix", "pull")[1] + 60


def test_no_alert_fires_outside_the_faults(runs, alerts) -> None:
    """Of the 17 alerts only those four fire, and each firing begins inside a fault's window (or the minute after
    it, where the fault's own clearing is what fires: a `zpool clear`, a disk put back). The one exception, with
    why: ZfsmonSlowIOs on every device from the first minutes, because the matrix lowers zio_slow_io_ms to 100 ms
    (so that a 200 ms delay counts) and emulated I/O reaches 100 ms now and then (the SLOW column of
    zpool-status-slow.txt: 0-5 on the other devices, 349 on the slow one)."""
    for run, fired in alerts.items():
        assert {a for a, f in fired.items() if f} <= {"ZfsmonDeviceErrors", "ZfsmonPoolDegradedNotResilvering",
                                                      "ZfsmonSlowIOs", "ZfsmonCounterReset"}, run
        windows = [(r["start"], r["end"] + 60) for r in runs[run]["summary"]["rows"]]
        for alert, firings in fired.items():
            if alert == "ZfsmonSlowIOs":
                continue
            for labels, began, _ in firings:
                assert any(lo <= began <= hi for lo, hi in windows), (run, alert, labels, began)


def test_checksum_errors_degrade_the_leaf_and_a_scrub_repairs_them(runs) -> None:
    """The checksum row's own boot: `zinject -e corrupt` flips a bit in one read in five of virtio-data2; ZFS
    finds each by its checksum, reads the other side of the mirror and rewrites the bad copy."""
    pool, rows = (lambda p: (p, {r.entity.name: r for r in p.vdevs}))(
        parse_health((FAULTS / "checksum" / "zfs" / "zpool-status-scrub.txt").read_text())[0])
    leaf = rows["/dev/disk/by-id/virtio-data2-part1"]
    assert (pool.state, leaf.state, leaf.note, leaf.counts["checksum_errors"]) == ("DEGRADED", "DEGRADED",
                                                                                  "too many errors", 788)
    assert (pool.scan.function, pool.scan.state) == ("SCRUB", "SCANNING")
    done = parse_health((FAULTS / "checksum" / "zfs" / "zpool-status-scrubbed.txt").read_text())[0]
    assert (done.scan.function, done.scan.state, done.scan.values["scan_errors"]) == ("SCRUB", "FINISHED", 0)
    assert done.scan.values["scan_processed_bytes"] > 5e6  # "scrub repaired 5.29M"
    row = runs["checksum"]["rows"]["checksum"]
    assert row["leaf_errors"] == {"zguest/virtio-data2": {"checksum_errors": 2268}}  # zpool status -j, exact
    assert row["states"] == {"zguest": ["DEGRADED"], "zguest/virtio-data2": ["DEGRADED"],
                             "zguest/mirror-1": ["DEGRADED"]}
    assert row["scan"]["function"] == "SCRUB" and row["scan"]["state"] == "FINISHED"
    assert row["scan"]["scan_processed_bytes"] == 5545984  # what the scrub repaired, in bytes
    texts = _texts(row)
    counted = [t for t in texts if t.startswith("pool zguest: virtio-data2 has ")]
    assert counted[0] == "pool zguest: virtio-data2 has 142 checksum errors (was 0)" and len(counted) >= 5
    assert texts.index("pool zguest: scrub started") < texts.index("pool zguest: scrub finished with 0 errors")
    (inc,) = analyze(runs["checksum"]["samples"], runs["checksum"]["events"]).topic("incident")
    assert inc.text.startswith("virtio-data2 (data leaf of zguest/mirror-1) DEGRADED at ")
    assert "2,268 checksum errors counted; pool DEGRADED; pool zguest: scrub started; pool zguest: scrub " \
           "finished with 0 errors" in inc.text


def _slow_reads(samples, device: str, lo: float, hi: float) -> Tuple[float, float]:
    """(reads that took 100 ms or more at the disk, all reads) of a leaf in [lo, hi]: `zpool iostat -w`'s
    disk_wait read histogram per interval (the latency source's counts)."""
    slow = total = 0.0
    for s in samples:
        if s.source != "latency" or s.entity.name != device or s.since_boot or not lo <= s.ts <= hi:
            continue
        for name, n in s.metrics.items():
            split = split_metric(name)
            if split and split[:2] == ("disk_wait", "read"):
                total += n
                slow += n if lower_ns(split[2]) >= 100_000_000 else 0.0
    return slow, total


def test_the_slow_leafs_latency_distribution_moves_to_the_delay(runs) -> None:
    """`zinject -D 200:1` holds every read of virtio-data3 200 ms: its disk_wait histogram moves there, its partner
    in mirror-1 keeps its fast reads, and so did virtio-data3 in the 80 s before."""
    m = runs["matrix"]
    lo, hi = _window(runs, "matrix", "slow")
    slow, total = _slow_reads(m["samples"], "virtio-data3", lo, hi)
    assert total > 100 and slow / total > 0.6, (slow, total)  # 300 of 390 in the run
    assert _slow_reads(m["samples"], "virtio-data3", lo - 80, lo)[0] == 0
    partner = _slow_reads(m["samples"], "virtio-data2", lo, hi)
    assert partner[1] > 100 and partner[0] == 0, partner
