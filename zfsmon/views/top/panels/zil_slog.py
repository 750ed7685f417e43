"""ZIL and SLOG: commits and sync writes from the ZIL kstat, what the log vdevs did, and the block allocations,
allocation-class fallbacks and gang writes of every pool (the zio_stats kstat, OpenZFS 2.3.1+)."""

from __future__ import annotations

from typing import Dict, List, Optional

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
    if "zio_total_allocations" in z:
        parts.extend(_allocations(z, raw, compact))
    return _lines(parts, width)


#: the zio_stats rows: label, counter (its rate is ``_per_s`` after it)
ALLOC_ROWS = (("allocs", "zio_total_allocations"), ("class fb", "zio_alloc_class_fallbacks"),
              ("gang wr", "zio_gang_writes"))


def _allocations(z: Dict[str, Optional[float]], raw: bool, compact: bool) -> List[Text]:
    """Allocations, class fallbacks and gang writes per second, each with its count since the module loaded; on
    the narrow grid's one line left, allocations and gang writes per second."""
    def rate(key: str) -> str:
        return f"{fmt.num(z.get(f'{key}_per_s'), 'ops', raw)}/s"

    if compact:
        return [Text(f"alloc {rate('zio_total_allocations')} gang {rate('zio_gang_writes')}", no_wrap=True,
                     overflow="ellipsis")]
    return [Text(f"{label:<8} {rate(key):>8} ({fmt.num(z.get(key), 'ops', raw)})", no_wrap=True,
                 overflow="ellipsis", style="" if z.get(key) or label == "allocs" else "dim")
            for label, key in ALLOC_ROWS]


def _render(f: Frame) -> Text:
    return zil(f.state, f.opts, f.width, f.compact)


#: the ZIL kstat's entity and the zio_stats kstat's (where every pool's writes are allocated); the SLOG's figures
#: are the log vdevs' (the tree's)
PANEL = register(Panel("zil", "ZIL / SLOG", (Kind.ZIL, Kind.ZIO), _render, fold=ZilFold))
