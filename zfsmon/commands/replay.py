"""`zfsmon replay` at work; its manual and options are :mod:`zfsmon.commands.options.replay`."""

from __future__ import annotations

import argparse
import os

from zfsmon.commands.top import need_terminal
from zfsmon.store import Recording
from zfsmon.views.top import panels
from zfsmon.views.top.app import TopApp
from zfsmon.views.top.replay import ReplayCursor


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
                     export_dir=os.path.dirname(os.path.abspath(args.file)), theme=args.theme)
        app.run()
    finally:
        rec.close()
    return 0
