"""ARC and L2ARC: hit rates with their sparklines, sizes, the L2ARC's feed and reads."""

from __future__ import annotations

from typing import Dict, List, Optional

from rich.text import Text

from zfsmon.model import Kind
from zfsmon.views.top import fmt
from zfsmon.views.top.folds.arc_l2arc import ArcFold, reads_of
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _lines, heading, register, status_lines
from zfsmon.views.top.state import TopState


def arc(state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    a = state.fold(ArcFold).values(state)
    parts: List[Text] = [heading("arc", width, "since boot" if a.get("since_boot") else "")]
    parts.extend(status_lines(state, "arc", opts))
    if a.get("size") is None and a.get("hit_pct") is None and "l2_size" not in a:
        return _lines(parts, width)
    raw = opts.raw
    lo, hi = state.window()
    labels = (("hit_pct", "hit"), ("demand_data_hit_pct", "dd"), ("demand_metadata_hit_pct", "dm"),
              ("prefetch_hit_pct", "pf"))
    if compact:
        line = Text("hit ")
        line.append_text(_ratio(a, "hit_pct", "arc_hit_pct", opts))
        line.append(" ")
        line.append_text(fmt.sparkline(state.spark("arc", "hit_pct"), max(3, width - len(line) - 1), lo, hi, lo=0,
                                       hi=100))
        parts.append(line)
        t = Text()
        for key, lab in labels[1:]:
            t.append(f"{lab} ")
            t.append_text(fmt.colored(a.get(key), "%", "arc_hit_pct", raw, opts.theme))
            t.append(f"/{fmt.num(a.get(reads_of(key)), 'ops', raw)} ")
        t.no_wrap, t.overflow = True, "ellipsis"
        parts.append(t)
    else:
        for key, lab in labels:
            line = Text(f"{lab:<4}")
            val = fmt.colored(a.get(key), "%", "arc_hit_pct", raw, opts.theme)
            val.align("right", 7)
            line.append_text(val)
            line.append(f" of {fmt.num(a.get(reads_of(key)), 'ops', raw):<5} ")
            line.append_text(fmt.sparkline(state.spark("arc", key), max(4, width - len(line) - 1), lo, hi, lo=0,
                                           hi=100))
            parts.append(line)
    # the ARC's size against its own target (c) and ceiling (c_max): never "used" memory out of RAM, which the
    # kernel gives back from the ARC when it needs it
    sep = " " if compact else " / "
    parts.append(Text(f"{'ARC' if compact else 'size'} {fmt.num(a.get('size'), 'B', raw)}{sep}c {fmt.num(a.get('c'), 'B', raw)}{sep}"
                      f"max {fmt.num(a.get('c_max'), 'B', raw)}", overflow="ellipsis", no_wrap=True))
    # the kernel's own count of cache devices (OpenZFS 2.4+), else the vdev tree's: the L2ARC counters outlive the
    # last device
    ndev = a.get("l2_ndev")
    no_device = ndev == 0 if ndev is not None else state.has_cache_device() is False
    if no_device:
        parts.append(Text("L2ARC: no cache device", style="dim"))
    elif "l2_size" in a:
        l2 = Text("L2 hit ")
        l2.append_text(_ratio(a, "l2_hit_pct", "l2arc_hit_pct", opts, "l2_reads"))
        l2.append(f" size {fmt.num(a.get('l2_size'), 'B', raw)} ")
        if not compact:
            l2.append_text(fmt.sparkline(state.spark("l2arc", "size"), max(3, width - len(l2) - 1), lo, hi))
        parts.append(l2)
        feed = f"L2 feed {fmt.num(a.get('l2_write_bps'), 'B', raw)}/s read {fmt.num(a.get('l2_read_bps'), 'B', raw)}/s"
        if ndev is not None:  # where it fits: a narrow cell keeps the rates whole
            devices = f"  {fmt.num(ndev, 'ops', raw)} device{'' if ndev == 1 else 's'}"
            feed += devices if len(feed) + len(devices) <= width else ""
        parts.append(Text(feed, no_wrap=True, overflow="ellipsis"))
        # a cache device pulled out stays in the tree and in the kernel's count: say it serves nothing, in words
        out = state.cache_devices_out()
        if out:
            parts.append(Text("L2ARC: " + ", ".join(f"{n} {w}" for n, w in out), style="bold",
                              no_wrap=True, overflow="ellipsis"))
    else:
        parts.append(Text("no L2ARC", style="dim"))
    return _lines(parts, width)


def _ratio(a: Dict[str, Optional[float]], key: str, threshold: str, opts: ViewOptions, reads: str = "") -> Text:
    """A hit ratio with the accesses it is of (``99.2% of 3.1M``): 100 % of 3 reads is not 100 % of 3 million."""
    t = fmt.colored(a.get(key), "%", threshold, opts.raw, opts.theme)
    t.append(f" of {fmt.num(a.get(reads or reads_of(key)), 'ops', opts.raw)}")
    return t


def _render(f: Frame) -> Text:
    return arc(f.state, f.opts, f.width, f.compact)


PANEL = register(Panel("arc", "ARC / L2ARC", (Kind.ARC, Kind.L2ARC), _render, fold=ArcFold))
