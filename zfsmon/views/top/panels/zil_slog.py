"""ZIL and SLOG: commits and sync writes from the ZIL kstat, what the log vdevs did."""

from __future__ import annotations

from typing import List

from rich.text import Text

from zfsmon.model import Kind
from zfsmon.views.top import fmt
from zfsmon.views.top.folds import ZilFold
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _lines, error_lines, heading, register
from zfsmon.views.top.state import TopState


def zil(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    z = state.fold(ZilFold).values(state)
    parts: List[Text] = [heading("zil", width)]
    errors = error_lines(state, "zil", opts)
    raw = opts.raw
    if "commits_per_s" in z or "itx_per_s" in z:
        parts.extend(errors)
        parts.append(Text(f"commits {fmt.num(z.get('commits_per_s'), 'x', raw)}/s", no_wrap=True))
        parts.append(Text(f"sync wr {fmt.num(z.get('itx_per_s'), 'x', raw)}/s", no_wrap=True))
        if not compact:
            lo, hi = state.window()
            parts.append(fmt.sparkline(state.spark("zil", "commits_per_s"), max(4, width - 2), lo, hi))
    elif errors:
        parts.extend(errors)
    else:
        parts.append(Text("no ZIL kstat here", style="dim"))
    if "slog_write_ops" in z:
        parts.append(Text(f"SLOG w {fmt.num(z.get('slog_write_ops'), 'ops', raw)}/s "
                          f"{fmt.num(z.get('slog_write_bw'), 'B', raw)}/s", no_wrap=True, overflow="ellipsis"))
        lat = Text("SLOG lat ")
        lat.append_text(fmt.colored(z.get("slog_lat_ns"), "ns", "slog_latency", raw, opts.theme))
        parts.append(lat)
    else:
        parts.append(Text("no SLOG (log vdev)", style="dim"))
    return _lines(parts, width)


def _render(f: Frame) -> Text:
    return zil(f.state, f.opts, f.width, f.compact)


#: the ZIL kstat's entity; the SLOG's figures are the log vdevs' (the tree's)
PANEL = register(Panel("zil", "ZIL / SLOG", (Kind.ZIL,), _render, fold=ZilFold))
