"""Show a recording in the dashboard, with a time cursor: the same screen as `zfsmon top`, at any moment.

The cursor starts at the end of the recording; the panels show the window
that ends at the cursor (sparklines, totals, findings), read from the file on
demand, so a day-long recording opens at once. Marks, pgbench run boundaries,
errors and topology changes are the events [ and ] jump between. The file is
opened read-only; it can still be growing (a recorder writing it).
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import seconds
from zfsmon.commands.options._screen import add_theme

NAME = "replay"
HELP = "replay a recording in the dashboard, with a time cursor"
EPILOG = """\
examples:
  zfsmon replay soak.zfsmon                   open at the end, 5-minute window
  zfsmon replay soak.zfsmon --window 1h       a longer window
keys: left/right step, [/] previous/next event, home/end, p play/stop, </> speed, +/- window,
      tab next pool, r rates/totals, x raw values, s sort, c collapse, f findings whole (n/N a moment,
      enter jumps there), e export CSV, / filter, t theme, ? help, ctrl+p command palette, q quit
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a recording (zfsmon record/top/soak)")
    p.add_argument("--window", "-w", type=seconds, default=300.0, metavar="D",
                   help="time window shown at the cursor (default 5m)")
    add_theme(p)
