"""Draw a recording as a post-mortem report: PDF (one page per section), PNG (one tall image) or HTML.

Panels: per-vdev read and write operations per second, one pair per role (data, log, cache, special...);
ARC hit % and size against its target c; L2ARC size and hit %; ZIL commits (zil kstat) and the SLOG's
write bandwidth; workload TPS and latency. Every panel shares the window's UTC time axis; pgbench runs
are shaded, marks (purple), topology changes (orange), counter resets (grey) and errors (red) are
vertical lines. The first page has the recording's summary and the findings of `zfsmon analyze`.
With fio samples, two more pages: IOPS, I/Os in flight and each direction's p50/p99/p99.9 against queue
depth (the knee marked), and each vdev role's latency distribution with its p50/p99 per depth beside fio's.
The recording is only read (it may still be recording). More: docs/report.md.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import When

NAME = "report"
HELP = "plotted post-mortem report of a recording (PDF, PNG or HTML)"
BATCH = True  # reads a long window whole: zfsmon.gcpolicy
EPILOG = """\
examples:
  zfsmon report soak.zfsmon                              soak.pdf next to the recording
  zfsmon report soak.zfsmon --out soak.png
  zfsmon report soak.zfsmon --out incident.html --from 2024-05-01T12:00Z --to 2024-05-01T13:30Z
  zfsmon report soak.zfsmon --from +30m --to -10m        leave out the first 30 and the last 10 minutes

times: ISO-8601 (UTC unless an offset is given), epoch seconds, +D after the start, -D before the end.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the recording")
    p.add_argument("--out", "-o", metavar="OUT", help="report file: .pdf, .png or .html (default: FILE with .pdf)")
    p.add_argument("--from", dest="start", type=When, metavar="T", help="window start")
    p.add_argument("--to", dest="end", type=When, metavar="T", help="window end")
