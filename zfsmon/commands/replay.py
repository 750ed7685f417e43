"""`zfsmon replay` at work; its manual and options are :mod:`zfsmon.commands.options.replay`."""

from __future__ import annotations

import argparse
import os

from zfsmon.commands.top import need_terminal
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import TopApp
from zfsmon.views.top.replay import ReplayCursor


def header_info(rec: Recording, shown_path: str) -> panels.HeaderInfo:
    """The header of a replay: who recorded it, on what, from the recording's metadata (the screen tests build
    replay's header here too, with a path that is the same on every machine)."""
    m = rec.meta
    return panels.HeaderInfo(host=m.get("host", "?"), platform=m.get("platform", ""),
                             zfs=f"{m.get('zfs_flavour', '')} {m.get('zfs_version', '')}".strip(),
                             recording=shown_path, mode="replay")


def run(args: argparse.Namespace) -> int:
    rec = Recording.open(args.file)  # a RecordingError (UserError) for anything that is not a recording
    try:
        cursor = ReplayCursor(rec, args.window)
        need_terminal("zfsmon replay")
        app = TopApp(cursor.state, header_info(rec, os.path.abspath(args.file)), cursor.interval, replay=cursor,
                     export_dir=os.path.dirname(os.path.abspath(args.file)), theme=args.theme)
        app.run()
    finally:
        rec.close()
    return 0
