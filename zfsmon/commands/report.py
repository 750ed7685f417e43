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
import os
import sys
import zlib

from zfsmon import outfile
from zfsmon.commands._timearg import When
from zfsmon.errors import UserError
from zfsmon.store import Recording
from zfsmon.views import report_pdf as view

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


def default_out(recording: str) -> str:
    return os.path.splitext(recording)[0] + ".pdf"


def run(args: argparse.Namespace) -> int:
    out = args.out or default_out(args.file)
    if os.path.splitext(out)[1].lower() not in view.FORMATS:
        raise UserError(f"{out}: the report format follows the suffix: {', '.join(view.FORMATS)}")
    outfile.check_target(out)
    if os.path.exists(out) and os.path.exists(args.file) and os.path.samefile(out, args.file):
        raise UserError(f"{out}: that is the recording itself")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("reports need matplotlib (pip install 'zfsmon[report]')") from None
    with Recording.open(args.file) as rec:
        span = rec.time_range()
        start = args.start.resolve(span) if args.start else None
        end = args.end.resolve(span) if args.end else None
        try:
            data = view.build(rec, start, end)
        except ValueError as exc:
            raise UserError(f"{args.file}: {exc}") from None
    try:
        done = view.render(data, out)  # OSErrors are one-line UserErrors; no partial file is left
    except zlib.error as exc:  # matplotlib's PDF writer, when a write under it failed half-way
        raise UserError(f"{out}: cannot write: {exc}", exit_code=1) from None
    empty = [p.title for s in data.sections for p in s.panels if not p.lines]
    print(f"zfsmon: {done.path}: {done.format}, {done.pages} page(s), {len(done.panels)} panels"
          + (f" ({len(empty)} without data: {', '.join(empty)})" if empty else ""), file=sys.stderr)
    return 0
