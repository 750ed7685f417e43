"""The header: live/paused/replay, the host, its pools, the interval, the window and the recording."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text

from zfsmon.model import Kind
from zfsmon.views.top import fmt
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, error_line, register
from zfsmon.views.top.state import TopState


@dataclass
class HeaderInfo:
    host: str = ""
    platform: str = ""
    zfs: str = ""
    recording: str = ""  # path, or "" for --no-record
    mode: str = "live"  # live | replay
    started: float = 0.0
    serving: str = ""  # HOST:PORT `top --listen` serves /metrics on, or ""


def header(state: TopState, info: HeaderInfo, opts: ViewOptions, width: int, paused: bool,
           replay_note: str = "") -> Text:
    if info.mode == "replay":
        badge, bstyle = "REPLAY", "bold white on blue"
    elif paused:
        badge, bstyle = "PAUSED", "bold black on yellow"
    else:
        badge, bstyle = "LIVE", "bold white on green"
    t = Text()
    t.append(f" {badge} ", style=bstyle)
    t.append(f" {info.host}", style="bold")
    about = f"  {info.platform}  {info.zfs}"
    serving = f"  metrics {info.serving}" if info.serving else ""
    room = width - len(t.plain) - len(serving)
    if serving and len(about) > room:  # the address whole: the platform's text gives way
        about = about[:max(0, room - 1)] + "…"
    t.append(about, style="")
    t.append(serving)
    t.append("\n")
    pools = state.pools()
    shown = " ".join(f"[{p}]" if p == opts.pool else p for p in pools) or "-"
    t.append(f"pools {shown}  ")
    if info.mode == "replay":
        t.append(replay_note)
    else:
        elapsed = (opts.now or time.time()) - info.started if info.started else 0.0
        t.append(f"up {fmt.clock(elapsed)}  ")
    t.append(f"every {opts.interval:g}s  window {fmt.window(state.window_s)}  ")
    rec = info.recording or "not recording"
    room = max(10, width - len(t.plain.split("\n")[-1]) - 5)
    if len(rec) > room:
        rec = "…" + rec[-(room - 1):]
    t.append(f"rec {rec}", style="dim" if not info.recording else "")
    others = state.unowned_errors()
    if others:  # what no source module declares (the recorder, the clock, a tracing script): no panel has them
        t.append("\n")
        t.append_text(error_line(others[0], opts.now if opts.now is not None else state.now))
        if len(others) > 1:
            t.append(f" (+{len(others) - 1} more)", style="bold red")
    return t


def _render(f: Frame) -> Text:
    x = f.extra
    return header(f.state, x["info"], f.opts, f.width, bool(x.get("paused")), str(x.get("replay_note", "")))


#: the pools seen; and the errors of what no source module declares (the recorder, the clock, a tracing script)
PANEL = register(Panel("header", "Header", (Kind.POOL,), _render, place="header"))
