"""Serve the latest zfsmon samples to Prometheus (text exposition format on /metrics).

Samples every available source (or the SOURCES named, as `zfsmon doctor` lists them) every --interval
seconds and answers each scrape with the newest values: `zfsmon_<kind>_<metric>` families in base units
(`_bytes`, `_seconds`, ratios 0..1), counters with their raw cumulative values and `_total`, labels pool,
vdev, role, parent, device, dataset. Prometheus does the rest: rates, many hosts, retention, alerts.
With --from-recording it serves the last values of a recording instead (post-mortems, tests).
Listens on 127.0.0.1 unless told otherwise. Names, labels, a scrape config and PromQL: docs/exporter.md.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import seconds
from zfsmon.defaults import DEFAULT_LISTEN

NAME = "exporter"
HELP = "Prometheus exporter: the latest samples on http://127.0.0.1:9134/metrics"
EPILOG = """\
examples:
  zfsmon exporter                                   every source, 5 s, on 127.0.0.1:9134
  zfsmon exporter --interval 10 zpool arcstats      only these sources (names as `zfsmon doctor` shows them)
  zfsmon exporter --listen 0.0.0.0:9134             reachable from a Prometheus on another host
  zfsmon exporter --from-recording soak.zfsmon --listen 127.0.0.1:0    serve a recording's last values
  curl -s http://127.0.0.1:9134/metrics | grep zfsmon_vdev_

The default port 9134 is the one registered for ZFS exporters; port 0 picks a free port (printed).
"""



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="*", metavar="SOURCES",
                   help="sources to sample (zpool, arcstats, zil, objset, diskstats...; default: all available)")
    p.add_argument("--listen", "-l", default=DEFAULT_LISTEN, metavar="ADDR:PORT",
                   help=f"address and port to serve /metrics on (default {DEFAULT_LISTEN}; [::1]:9134 for IPv6)")
    p.add_argument("--interval", "-i", type=seconds, default=5.0, metavar="S",
                   help="seconds between readings (default 5; scrape no faster than this)")
    p.add_argument("--pool", action="append", metavar="POOL", help="only this pool (repeatable)")
    p.add_argument("--from-recording", metavar="FILE", help="serve the last values of this recording; no sampling")
    p.add_argument("--duration", "-d", type=seconds, metavar="D", help="stop after D (default: until SIGINT/SIGTERM)")
    p.add_argument("--trace", action="append", default=[], metavar="NAME",
                   help="also run this tracing script (repeatable; `zfsmon trace --list`): its latency histograms "
                        "become zfsmon_vdev_latency_seconds{queue=\"trace\"} where zpool iostat has no -w")
    p.add_argument("--pgbench-log", action="append", default=[], metavar="LOG",
                   help="follow this pgbench output (tee'd, or --log files) as `zfsmon attach` does: the workload's "
                        "TPS and latency as zfsmon_workload_* (repeatable)")
    p.add_argument("--histograms", choices=("wait", "all", "none"), default="wait",
                   help="latency histograms to expose: wait (default: total_wait, disk_wait and traced), all "
                        "(also syncq/asyncq waits, scrub, trim, rebuild: 7 x 30 more series per vdev), none")
    p.add_argument("--leaf-histograms", action="store_true",
                   help="latency histograms for every leaf too, not only pools and top-level vdevs "
                        "(30 series per leaf, queue and op: mind the cardinality on large hosts)")
