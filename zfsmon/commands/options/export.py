"""Export a recording as tidy CSV (one file per entity kind, or one long file) or JSON lines.

Per-kind CSV (`--csv DIR`) writes DIR/pool.csv, vdev.csv (vdevs and their leaves, with each one's role
at that moment), arc.csv, l2arc.csv, zil.csv, dataset.csv, device.csv, workload.csv, trace.csv (those
the recording has), events.csv and meta.csv (host, platform, ZFS version). `--long` writes DIR/samples.csv
with one line per value instead
(`--csv -` sends it to standard output). With fio samples a directory export adds the analysis' tables:
fio_steps.csv (per queue depth: IOPS, percentiles, Little's law, the knee, the vdevs meanwhile),
vdev_roles.csv (per role: operations, IOPS per GB), vdev_latency.csv and vdev_latency_buckets.csv (per role
and operation). `--json FILE` writes samples and events as JSON lines. `--openmetrics FILE` writes the scrapes
`zfsmon exporter` would have served, one every `--every` (default 15 s), with their times, as OpenMetrics:
`promtool tsdb create-blocks-from openmetrics FILE DIR` loads them into Prometheus (Grafana and the alert rules
over a recorded incident; docs/exporter.md). The series carry job="zfsmon" and instance=the recording's host.
Every row has an ISO-8601 UTC time and epoch seconds; counters come with their delta and per-second
rate; `--every` downsamples (counters summed, gauges averaged with min/max). Columns: docs/export.md.
The recording is only read (it may still be recording).
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import When, seconds

NAME = "export"
HELP = "export a recording to CSV (per entity kind or long) or JSON lines"
BATCH = True  # reads a long window whole: zfsmon.gcpolicy
EPILOG = """\
examples:
  zfsmon export run.zfsmon --csv out/                        out/pool.csv, out/vdev.csv, ..., out/events.csv
  zfsmon export run.zfsmon --csv out/ --every 1m             one row per entity and minute
  zfsmon export run.zfsmon --csv - --long --entities 'vdev:*' | head
  zfsmon export run.zfsmon --json run.jsonl --from +1h --to +2h
  zfsmon export run.zfsmon --openmetrics run.om && promtool tsdb create-blocks-from openmetrics run.om data/
  zfsmon export run.zfsmon --csv out/ --from 2024-05-01T12:00Z --entities arc l2arc 'leaf:tank/sd*'

times: ISO-8601 (UTC unless an offset is given), epoch seconds, +D after the start, -D before the end.
entities: a kind (arc, vdev, leaf...), an entity key (leaf:tank/sda), a name, or a shell pattern of those.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the recording")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--csv", metavar="OUT", help="directory for the CSV files (with --long: also `-` for stdout)")
    out.add_argument("--json", metavar="OUT", help="JSON lines file (`-` for stdout)")
    out.add_argument("--openmetrics", metavar="OUT", help="the exporter's scrapes over time, for promtool's "
                     "backfill (`-` for stdout)")
    p.add_argument("--long", action="store_true", help="one long CSV (one line per value) instead of one per kind")
    p.add_argument("--from", dest="start", type=When, metavar="T", help="first time to export")
    p.add_argument("--to", dest="end", type=When, metavar="T", help="last time to export")
    p.add_argument("--every", type=seconds, metavar="D", help="downsample to one row per D (10s, 1m, 1h)")
    p.add_argument("--entities", nargs="+", metavar="PAT", help="only these entities (kinds, keys, names, patterns)")
