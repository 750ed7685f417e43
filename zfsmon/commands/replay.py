"""Show a recording in the dashboard, with a time cursor: the same screen as `zfsmon top`, at any moment.

The cursor starts at the end of the recording; the panels show the window
that ends at the cursor (sparklines, totals, findings), read from the file on
demand, so a day-long recording opens at once. Marks, pgbench run boundaries,
errors and topology changes are the events [ and ] jump between. The file is
opened read-only; it can still be growing (a recorder writing it).
"""

from __future__ import annotations

import argparse
import os

from zfsmon.commands._timearg import seconds
from zfsmon.commands.top import need_terminal
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import TopApp
from zfsmon.views.top.replay import ReplayCursor

NAME = "replay"
HELP = "replay a recording in the dashboard, with a time cursor"
EPILOG = """\
examples:
  zfsmon replay soak.zfsmon                   open at the end, 5-minute window
  zfsmon replay soak.zfsmon --window 1h       a longer window
keys: left/right step, [/] previous/next event, home/end, p play/stop, </> speed, +/- window,
      tab next pool, r rates/totals, x raw values, s sort, c collapse, e export CSV, / filter, ? help, q quit
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a recording (zfsmon record/top/soak)")
    p.add_argument("--window", "-w", type=seconds, default=300.0, metavar="D",
                   help="time window shown at the cursor (default 5m)")


def run(args: argparse.Namespace) -> int:
    rec = Recording.open(args.file)  # a RecordingError (UserError) for anything that is not a recording
    try:
        cursor = ReplayCursor(rec, args.window)
        need_terminal("zfsmon replay")
        m = rec.meta
        info = panels.HeaderInfo(host=m.get("host", "?"), platform=m.get("platform", ""),
                                 zfs=f"{m.get('zfs_flavour', '')} {m.get('zfs_version', '')}".strip(),
                                 recording=os.path.abspath(args.file), mode="replay")
        app = TopApp(cursor.state, info, cursor.interval, replay=cursor,
                     export_dir=os.path.dirname(os.path.abspath(args.file)))
        app.run()
    finally:
        rec.close()
    return 0
