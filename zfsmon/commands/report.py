"""`zfsmon report` at work; its manual and options are :mod:`zfsmon.commands.options.report`."""

from __future__ import annotations

import argparse
import os
import sys
import zlib

from zfsmon import outfile
from zfsmon.errors import UserError
from zfsmon.store import Recording
from zfsmon.views import report_pdf as view


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
