"""The read path: the shares of reads PostgreSQL's buffers, the ARC, the L2ARC and the disks answered."""

from __future__ import annotations

from typing import List

from rich.text import Text

from zfsmon.model import Kind
from zfsmon.views.top import fmt
from zfsmon.views.top.folds import ReadFold
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _columns, _lines, heading, register
from zfsmon.views.top.state import TopState


def read_path(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    now, win = state.fold(ReadFold).shares(state.window()[0])
    # the shares' base, the reads they are of: 100 % of 3 reads is not 100 % of 3 million (in the narrow grid's
    # six lines, in the heading)
    base = f"of {_reads(now, opts)} / {_reads(win, opts)}" if compact and (now or win) else ""
    parts: List[Text] = [heading("readpath", width, base)]
    if now is None and win is None:
        parts.append(Text("no ARC/PostgreSQL read counters yet", style="dim"))
        return _lines(parts, width)
    widths = [7, 7]
    parts.append(_columns([Text(""), Text("now"), Text(fmt.window(state.window_s))], 7, widths, "bold"))
    for label, attr in (("PG buf", "pg_buffers"), ("ARC", "arc"), ("L2ARC", "l2arc"), ("disks", "disks")):
        a = getattr(now, attr) if now else None
        b = getattr(win, attr) if win else None
        if a is None and b is None:
            continue
        th = "disk_share_pct" if attr == "disks" else None
        parts.append(_columns([Text(label), fmt.colored(a, "%", th, theme=opts.theme),
                               fmt.colored(b, "%", th, theme=opts.theme)], 7, widths))
    if not compact:
        parts.append(_columns([Text("reads"), Text(_reads(now, opts)), Text(_reads(win, opts))], 7, widths, "dim"))
    return _lines(parts, width)


def _reads(path, opts: ViewOptions) -> str:
    """The reads the shares are of (PostgreSQL's block requests, else ZFS's ARC accesses)."""
    return "-" if path is None else fmt.num(path.reads, "ops", opts.raw)


def _render(f: Frame) -> Text:
    return read_path(f.state, f.opts, f.width, f.compact)


#: PostgreSQL's buffer counters (pgstat) and the ARC's and L2ARC's; their sources' errors are on those panels
PANEL = register(Panel("readpath", "Read path", (Kind.ARC, Kind.L2ARC, Kind.WORKLOAD), _render,
                       fold=ReadFold))
