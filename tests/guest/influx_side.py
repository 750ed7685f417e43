"""Run inside the guest by scenario.sh: the ``zpool-influxdb`` collector beside the text path.

    influx_side.py span OUT POOL SECONDS   # the collector at 1 s until OUT/influx-side.stop (SECONDS at most):
                                           # OUT/influx-side.ready at its first sample, all to influx-collector.jsonl
    influx_side.py cpu OUT POOL SECONDS    # CPU of each arm for SECONDS at 1 s: OUT/influx-cpu.json

``span`` runs the collector while the scenario's ``zpool iostat -vpq`` and ``-vwp`` children and the one-shot
``zpool_influxdb`` reads before and after see the same quiet-edged load (tests/guest/test_live.py compares them).
``cpu`` runs, one after the other for as long each: the collector alone, zfsmon's text-path collector
(``zpool iostat -v -T u ... 1`` child and its parser) alone, it with the latency source (what the collector also
gives), and a bare ``zpool iostat -v POOL 1`` child;
CPU is this process's user+system plus its waited-for children's.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

from zfsmon.model import Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.zpool.influxdb_collector import InfluxdbCollector
from zfsmon.sources.zpool.iostat_collector import ZpoolIostatCollector
from zfsmon.sources.zpool.latency import LatencyCollector, histogram_interval

POLL_S = 0.2


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _run(collectors: Sequence[Collector], seconds: float, each: Callable[[Sample], None],
         done: Callable[[], bool] = lambda: False) -> int:
    """Start, poll every POLL_S for ``seconds`` or until ``done()``, stop; each sample to ``each``. How many."""
    n = 0
    for c in collectors:
        c.start()
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and not done():
            for c in collectors:
                for rec in c.poll():
                    if isinstance(rec, Sample):
                        each(rec)
                        n += 1
                    else:
                        print(rec, file=sys.stderr)
            time.sleep(POLL_S)
    finally:
        for c in collectors:
            c.stop()
    return n


def span(out: Path, pool: str, seconds: float) -> None:
    rows: List[Dict[str, object]] = []
    ready = out / "influx-side.ready"
    stop = out / "influx-side.stop"

    def keep(s: Sample) -> None:
        e = asdict(s.entity)
        rows.append({"ts": s.ts, "interval": s.interval, "entity": {k: getattr(v, "value", v)
                                                                      for k, v in e.items()},
                     "metrics": dict(s.metrics)})
        if not ready.exists():
            ready.write_text(f"{s.ts}\n")

    _run([InfluxdbCollector([pool], 1.0)], seconds, keep, stop.exists)
    (out / "influx-collector.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def cpu(out: Path, pool: str, seconds: float) -> None:
    result: Dict[str, Dict[str, float]] = {}
    arms: Sequence[Tuple[str, Callable[[], List[Collector]]]] = (
        ("zpool-influxdb", lambda: [InfluxdbCollector([pool], 1.0)]),
        ("zpool", lambda: [ZpoolIostatCollector([pool], 1.0)]),
        ("zpool + latency", lambda: [ZpoolIostatCollector([pool], 1.0),
                                     LatencyCollector([pool], histogram_interval(1.0))]),
    )
    for name, make in arms:
        c0, t0 = _cpu(), time.monotonic()
        n = _run(make(), seconds, lambda s: None)
        result[name] = {"cpu_s": _cpu() - c0, "wall_s": time.monotonic() - t0, "samples": n}
    c0, t0 = _cpu(), time.monotonic()
    child = subprocess.Popen(["zpool", "iostat", "-v", pool, "1"], stdout=subprocess.DEVNULL)
    time.sleep(seconds)  # the bare child runs for as long as each collector did
    child.terminate()
    child.wait()
    result["zpool iostat -v 1 (child alone)"] = {"cpu_s": _cpu() - c0, "wall_s": time.monotonic() - t0,
                                                 "samples": 0}
    (out / "influx-cpu.json").write_text(json.dumps(result, indent=2) + "\n")


def main(argv: List[str]) -> int:
    what, out, pool, seconds = argv[1], Path(argv[2]), argv[3], float(argv[4])
    {"span": span, "cpu": cpu}[what](out, pool, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
