"""bench/bench_peers.py's pure parts, on real captured text: what a scrape, a line-protocol sample and a zpool
iostat or arcstat report serve, which features each output holds, and the plan and ratios of a run."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench import bench_peers as bp
from tests.conftest import TEST_DATA

GOLDEN_SCRAPE = TEST_DATA / "golden" / "exporter-guest.prom"
INFLUXDB = TEST_DATA / "openzfs-2.4" / "zpool_influxdb.txt"
OZ23 = TEST_DATA / "openzfs-2.3"


def _counted(path, per_line: bool = False) -> bp.ReportCounter:
    c = bp.ReportCounter(per_line)
    for line in path.read_text().splitlines(keepends=True):
        c.feed(line)
    return c


def test_a_scrape_serves_as_many_sample_lines_as_the_prometheus_parser_finds_samples():
    text = GOLDEN_SCRAPE.read_text()
    parsed = sum(len(f.samples) for f in text_string_to_metric_families(text))
    assert bp.prom_samples(text) == parsed
    assert parsed > 1000  # the guest's every source: ARC, vdevs with histograms, ZIL...


def test_zfsmon_scrape_holds_every_feature():
    assert bp.prom_features(GOLDEN_SCRAPE.read_text()) == frozenset(bp.FEATURES)


def test_node_exporter_zfs_output_has_arc_l2arc_zil_and_pool_state_but_no_vdev_histograms_or_roles(fixtures):
    text = (fixtures / "peers" / "node_exporter" / "e2e-output.node_zfs.txt").read_text()
    assert bp.prom_samples(text) == sum(len(f.samples) for f in text_string_to_metric_families(text))
    assert bp.prom_features(text) == {"health", "l2arc", "zil"}


def test_zpool_influxdb_lines_split_into_measurement_tags_and_fields():
    first = INFLUXDB.read_text().splitlines()[0]
    measurement, tags, fields = bp.lp_split(first)
    assert measurement == "zpool_stats"
    assert tags == {"name": "zguest", "state": "ONLINE", "vdev": "root"}
    assert fields == ["alloc", "free", "size", "read_bytes", "read_errors", "read_ops", "write_bytes",
                      "write_errors", "write_ops", "checksum_errors", "fragmentation"]


def test_a_zpool_influxdb_sample_serves_the_fields_of_all_its_lines():
    text = INFLUXDB.read_text()
    lines = text.splitlines()
    # each line: measurement+tags, fields, timestamp; nothing in this capture is escaped or quoted
    by_hand = sum(len(line.split(" ")[1].split(",")) for line in lines)
    assert bp.lp_fields(text) == by_hand
    measurements = {bp.lp_split(line)[0] for line in lines}
    assert measurements == {"zpool_stats", "zpool_vdev_stats", "zpool_latency", "zpool_io_size", "zpool_vdev_queue"}


def test_zpool_influxdb_serves_vdev_histograms_and_state_but_no_roles_l2arc_or_zil():
    # its vdev tree has no cache device and calls the log device root/disk-2
    assert bp.lp_features(INFLUXDB.read_text()) == {"histograms", "health"}


def test_line_protocol_escapes_and_quoted_strings():
    line = 'disk\\ io,host=a\\,b,path=/x\\ y msg="a b,c=d",n=1i,ok=true 1700000000000000000\n'
    assert bp.lp_split(line) == ("disk io", {"host": "a,b", "path": "/x y"}, ["msg", "n", "ok"])
    assert bp.lp_fields(line + 'm v=1\n') == 4


@pytest.mark.parametrize("line", ["just-a-measurement", "m,tag v=1", "m novalue", "m ,=1 5", "m =1"])
def test_what_is_not_line_protocol_is_refused(line):
    with pytest.raises(ValueError):
        bp.lp_split(line)


def test_zpool_iostat_v_reports_count_the_numbers_of_every_row():
    c = _counted(OZ23 / "zpool-iostat-v.txt")
    assert c.reports == 2  # `zpool iostat -v zguest 2 2`
    # pool and mirrors: alloc, free, ops and bandwidth (6); leaves no alloc/free (4); log0 and cache0 6 each
    assert c.values / c.reports == 6 + 2 * (6 + 4 + 4) + 6 + 6


def test_zpool_iostat_w_reports_count_every_bucket_of_every_vdev_table():
    text = (OZ23 / "zpool-iostat-vw.txt").read_text()
    c = _counted(OZ23 / "zpool-iostat-vw.txt")
    assert c.reports == 2
    tables = len(re.findall(r"^\S+\s+total_wait", text, re.M)) // 2
    buckets = len(re.findall(r"^\d+[num]?s\s", text, re.M)) // (2 * tables)
    assert (tables, buckets) == (9, 37)  # pool, 2 mirrors, 4 leaves, log, cache; 1ns..137s
    assert c.values / c.reports == tables * buckets * 11  # 4 queues x read/write, scrub, trim, rebuild


def test_zpool_iostat_vlq_rows_hold_waits_and_queues():
    v, vlq = _counted(OZ23 / "zpool-iostat-v.txt"), _counted(OZ23 / "zpool-iostat-vlq.txt")
    assert vlq.reports == 2 and vlq.values > 4 * v.values  # same rows, 31 columns instead of 6


def test_arcstat_reports_are_its_rows():
    c = _counted(OZ23 / "arcstat.txt", per_line=True)
    assert (c.reports, c.values) == (3, 3 * 10)  # `arcstat 1 3`: time, then 10 columns


def test_text_features_of_the_iostat_and_arcstat_outputs():
    assert bp.text_features((OZ23 / "zpool-iostat-v.txt").read_text().splitlines()) == {"roles"}
    assert bp.text_features((OZ23 / "zpool-iostat-vw.txt").read_text().splitlines()) == {"histograms"}
    assert bp.text_features((OZ23 / "arcstat.txt").read_text().splitlines()) == set()
    assert bp.text_features((OZ23 / "arcstat-a.txt").read_text().splitlines()) == {"l2arc"}


def test_a_recording_tick_holds_the_values_of_every_stream_and_every_feature(real_recordings):
    path = real_recordings["guest"]
    rec = bp.Recording.open(path)
    try:
        lo, hi = rec.time_range()
        values = rec.value_count()
        pool = next(st for st in rec.streams.values()
                    if st.source == "zpool iostat" and st.entity_key.startswith("pool:"))
        ticks = sum(1 for _ in rec.series(pool.entity_key, "read_ops"))  # the pool's iostat: read every tick
    finally:
        rec.close()
    d = bp.RecordDriver(bp.ARMS[0], [], 1.0, "/dev/null", path)
    assert d.per_tick(lo, hi) == pytest.approx(values / ticks)
    assert d.features() == frozenset(bp.FEATURES)


def _args(**kw) -> argparse.Namespace:
    a = bp.parse_args(["--pool", "tank", "--port", "9500"])
    vars(a).update(kw)
    return a


def test_the_plan_fills_templates_numbers_the_ports_and_says_why_an_arm_is_not_run():
    found = {"zpool": "/sbin/zpool", "arcstat": None, "zarcstat": "/usr/bin/zarcstat",
             "prometheus-node-exporter": "/usr/bin/prometheus-node-exporter"}
    results = bp.plan(bp.ARMS, _args(), which=lambda name: found.get(name))
    by = {r.arm.name: r for r in results}
    assert by["zpool iostat -v"].argv == [["zpool", "iostat", "-v", "tank", "1"]]
    assert by["zpool iostat -vlq + -w"].argv == [["zpool", "iostat", "-v", "-l", "-q", "tank", "1"],
                                                 ["zpool", "iostat", "-v", "-w", "tank", "1"]]
    assert by["arcstat"].argv == [["/usr/bin/zarcstat", "1"]]
    assert by["zpool_influxdb --execd"].not_run == "/usr/lib/zfs-linux/zpool_influxdb or zpool_influxdb not found"
    assert by["pdf/zfs_exporter"].not_run == bp.ZFS_EXPORTER_NOT_BUILT and not by["pdf/zfs_exporter"].argv
    assert "--web.listen-address=127.0.0.1:9500" in by["node_exporter, zfs collector"].argv[0]
    assert "--web.listen-address=127.0.0.1:9501" in by["node_exporter, default collectors"].argv[0]
    assert by["zfsmon exporter"].argv[0][:5] == [sys.executable, "-m", "zfsmon", "exporter", "--listen"]
    assert by["zfsmon exporter"].argv[0][5] == "127.0.0.1:9502"
    assert bp.ports_of(results, 9500) == {"node_exporter, zfs collector": 9500,
                                          "node_exporter, default collectors": 9501, "zfsmon exporter": 9502}


def test_unknown_arms_and_impossible_lengths_are_refused(capsys):
    with pytest.raises(SystemExit):
        bp.parse_args(["--arm", "no such tool"])
    assert "no such arm: no such tool" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bp.parse_args(["--seconds", "0"])


def test_a_dry_run_prints_the_plan_and_runs_nothing(capsys, tmp_path):
    assert bp.main(["--dry-run", "--arm", "zpool iostat -v", "--arm", "pdf/zfs_exporter", "--out",
                    str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "- zpool iostat -v: `zpool iostat -v zguest 1`" in out
    assert "- pdf/zfs_exporter: not run: not built: the Go module proxy answers 403" in out
    assert not (tmp_path / "out").exists()


def _turn(rnd: int, cpu_s: float, intervals: float = 10.0) -> bp.Turn:
    return bp.Turn(rnd, 10.0, intervals, cpu_s * 0.75, cpu_s * 0.25, 5.0, 2048, 1024, 4.0)


def test_ratios_are_taken_round_by_round_against_the_reference():
    ref, other = bp.ArmResult(bp.ARMS[0]), bp.ArmResult(bp.ARMS[1])
    ref.turns = [_turn(0, 0.2), _turn(1, 0.4), _turn(2, 0.2)]
    other.turns = [_turn(0, 0.6), _turn(1, 0.4), _turn(2, 0.4)]  # 3x, 1x, 2x its round's reference
    s = bp.summary([ref, other])[bp.ARMS[1].name]
    assert (s["ratio"], s["ratio_min"], s["ratio_max"]) == pytest.approx((2.0, 1.0, 3.0))
    assert (s["cpu_ms"], s["cpu_min"], s["cpu_max"]) == pytest.approx((40.0, 40.0, 60.0))
    assert s["kernel_pct"] == pytest.approx(25.0)
    assert (s["rss_mib"], s["pss_mib"]) == (2.0, 1.0)
    table = bp.table([ref, other, bp.ArmResult(bp.ARMS[9], not_run="not built")], _args())
    assert "| zpool iostat -v -l -q | 40.0 [40.0-60.0] | 25 % | 2.00 [1.00-3.00] |" in table
    assert "| pdf/zfs_exporter | not built |" in table


def test_served_per_interval_sums_each_counter_over_its_own_reports():
    before, after = [(100.0, 2.0), (50.0, 1.0), (7.0, 3.0)], [(200.0, 4.0), (80.0, 2.0), (7.0, 3.0)]
    assert bp.served_per_interval(before, after) == pytest.approx(50.0 + 30.0)  # the third saw no report
    assert bp.served_per_interval([(0.0, 0.0)], [(5.0, 0.0)]) is None


def _wait(cond, timeout: float = 30.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_a_child_arm_is_counted_while_it_runs_and_stopped_between_turns(tmp_path):
    loop = "import sys, time\nt = open(sys.argv[1]).read()\nwhile True:\n    print(t, flush=True)\n    time.sleep(0.1)"
    arm = bp.Arm("fake", "child", (), "numbers a report", "")
    d = bp.ChildDriver(arm, [[sys.executable, "-c", loop, str(OZ23 / "zpool-iostat-v.txt")]], 0.1,
                       str(tmp_path / "err"))
    d.start()
    try:
        assert _wait(d.ready)
        d.pause()
        proc = psutil.Process(d.procs[0].pid)
        assert _wait(lambda: proc.status() == psutil.STATUS_STOPPED)
        reports = d.counters[0].reports
        d.resume()
        assert _wait(lambda: d.counters[0].reports > reports + 2)
        c = d.counters[0]
        assert c.values / c.reports == pytest.approx(46, rel=0.1)  # a report may be half read
        assert d.features() == set()  # nothing kept yet: a turn keeps its last output
        d.keep()
        assert d.features() == {"roles"}
    finally:
        d.close()
    assert d.procs[0].returncode is not None and d.ended().startswith("ended with status")


def test_a_runs_raw_numbers_give_its_table_again(tmp_path, capsys):
    ref, top = bp.ArmResult(bp.ARMS[0]), bp.ArmResult(next(a for a in bp.ARMS if a.kind == "pty"))
    ref.turns, ref.features, ref.served = [_turn(0, 0.2), _turn(1, 0.3)], frozenset({"roles"}), 46.0
    top.turns, top.served = [_turn(0, 2.0), _turn(1, 3.0)], 4000.0
    results = [ref, top, bp.ArmResult(bp.ARMS[9], not_run=bp.ZFS_EXPORTER_NOT_BUILT)]
    args = _args()
    raw = json.loads(json.dumps(bp.raw_numbers(results, args, {"zfs": "zfs-2.3.2"}, 60.0), default=str))
    assert bp.table(bp.results_of(raw), args) == bp.table(results, args)
    assert "| zfsmon top | 250.0 [200.0-300.0] | 25 % | 10.00 [10.00-10.00] |" in bp.table(results, args)
    assert "| n/a | n/a | n/a | n/a | n/a |" in bp.table(results, args)  # a screen is not read back
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(raw))
    assert bp.main(["--from-json", str(path)]) == 0
    assert bp.table(results, args) in capsys.readouterr().out


def test_from_json_refuses_what_is_not_a_runs_numbers_in_one_line(tmp_path, capsys):
    path = tmp_path / "peers.json"
    path.write_text('{"arms": [{"name": "zpool iostat -v", "turns": [{"round": "x"}]}]}')
    assert bp.main(["--from-json", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"peers: {path}: not a peers.json")


def test_what_an_arm_serves_is_what_any_turns_last_output_held():
    arm = next(a for a in bp.ARMS if a.kind == "scrape" and not a.unavailable)
    d = bp.ScrapeDriver(arm, [], 1.0, "/dev/null", "http://127.0.0.1:9/metrics")
    full = GOLDEN_SCRAPE.read_text()
    d.last = "\n".join(line for line in full.splitlines() if "_bucket" not in line)  # a scrape without histograms
    d.keep()
    assert "histograms" not in d.features()
    d.last = full
    d.keep()
    assert d.features() == frozenset(bp.FEATURES)
