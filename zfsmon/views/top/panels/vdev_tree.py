"""The vdev tree: the pool, its role groups, top-level vdevs and leaves, with the goose-egg verdicts."""

from __future__ import annotations

from typing import List, Optional

from rich.text import Text

from zfsmon.analysis import goose
from zfsmon.model import Kind
from zfsmon.views import thresholds
from zfsmon.views.top import fmt
from zfsmon.views.top.panels.base import (
    Frame,
    Panel,
    ViewOptions,
    _columns,
    _fit,
    _lines,
    heading,
    register,
    status_lines,
)
from zfsmon.views.top.state import TopState, TreeRow, unhealthy


def tree(state: TopState, opts: ViewOptions, width: int) -> Text:
    return _lines(tree_lines(state, opts, width), width)


def tree_lines(state: TopState, opts: ViewOptions, width: int, shown: Optional[range] = None) -> List[Text]:
    """The vdev tree's lines (the dashboard draws them one by one: :mod:`zfsmon.views.top.lines`).

    ``shown``: the lines on screen (the tree's box is scrolled); a row outside them is a blank line, so the tree
    keeps its height (and its box its scroll range) while a pool of hundreds of leaves costs only its screenful of
    rows, the dashboard drawing them again when the box scrolls."""
    pool = opts.pool
    mode = "totals" if opts.totals else "rates"
    extra = f"{pool}  sort:{opts.sort}  {mode}" + (f"  filter:{opts.filter}" if opts.filter else "") + \
        ("  collapsed" if opts.collapsed else "")
    parts: List[Text] = [heading("vdevs", width, extra)]
    status = status_lines(state, "vdevs", opts)
    parts.extend(status)
    rows = state.tree(pool, opts.sort, opts.collapsed, opts.filter, opts.totals) if pool else []
    if not rows:
        if not status:
            parts.append(Text("no pool seen yet", style="dim"))
        return _fit(parts, width)
    wide = width >= 110
    heads = ["ops" if opts.totals else "r/s", "w" if opts.totals else "w/s", "rB" if opts.totals else "rB/s",
             "wB" if opts.totals else "wB/s"]
    heads += ["rlat", "wlat", "queue", "dev ops", "dev lat", ""] if wide else ["lat", "dev", ""]
    # the coloured columns have room for a warn/crit mark after the value (``20ms!!``)
    widths = [6, 6, 6, 6] + ([8, 8, 6, 7, 8, 5] if wide else [7, 5, 5])
    name_w = max(10, width - sum(widths) - len(widths))
    parts.append(_columns([Text("vdev")] + [Text(h) for h in heads], name_w, widths, "bold"))
    for i, r in enumerate(rows, len(parts)):
        parts.append(_columns(_tree_cells(r, opts, wide), name_w, widths) if shown is None or i in shown else Text())
    eggs = [r for r in rows if r.verdict == goose.GOOSE_EGG]
    if eggs and wide:
        parts.append(Text(f"GOOSE: {eggs[0].why}", style="yellow", overflow="ellipsis", no_wrap=True))
    return _fit(parts, width)


def _tree_cells(r: TreeRow, opts: ViewOptions, wide: bool) -> List[Text]:
    indent = "  " * r.depth
    if r.kind == "role":
        name = Text(f"{'  ' * (r.depth - 1)}{r.name}", style="bold underline")
        n = 9 if wide else 7
        return [name] + [Text("")] * n
    style = "bold" if r.kind in ("pool", "vdev") else ""
    name = Text(indent[:-2] + r.name if r.depth else r.name, style=style)
    if r.since_boot:
        name.append("*", style="dim")
    if unhealthy(r.state):
        name.append(f" {r.state}", style="bold red")
    m = r.metrics
    raw = opts.raw
    cells = [Text(fmt.num(m.get("read_ops"), "ops", raw)), Text(fmt.num(m.get("write_ops"), "ops", raw)),
             Text(fmt.num(m.get("read_bw"), "B", raw)), Text(fmt.num(m.get("write_bw"), "B", raw))]
    rl, wl = m.get("total_wait_read"), m.get("total_wait_write")
    if wide:
        cells += [fmt.colored(rl, "ns", "latency", raw, opts.theme),
                  fmt.colored(wl, "ns", "latency", raw, opts.theme)]
        pend = [v for k, v in m.items() if k.endswith("_pend")]
        cells.append(fmt.colored(sum(pend), "ops", "queue", raw, opts.theme) if pend else Text("-"))
        cells += [Text(fmt.num(r.device_ops, "ops", raw)) if r.device else Text(""),
                  fmt.colored(r.device_lat_ns, "ns", "latency", raw, opts.theme) if r.device else Text("")]
    else:
        lat = max((x for x in (rl, wl) if x is not None), default=None)
        cells.append(fmt.colored(lat, "ns", "latency", raw, opts.theme))
        cells.append(Text(fmt.num(r.device_ops, "ops", raw)) if r.device else Text(""))
    if r.verdict == goose.GOOSE_EGG:
        cells.append(Text("GOOSE" if wide else "G!", style=thresholds.GOOSE_STYLE))
    elif wide and r.device:
        cells.append(Text(r.device, style="dim"))
    else:
        cells.append(Text(""))
    return [name] + cells


def _render(f: Frame) -> Text:
    return tree(f.state, f.opts, f.width)


#: the tree's rows, and the block devices the leaves are judged against (the goose-egg columns); the rows' own
#: samples date it (the devices go on counting while ZFS's figures are stale)
PANEL = register(Panel("vdevs", "Vdevs", (Kind.POOL, Kind.VDEV, Kind.LEAF, Kind.DEVICE), _render, place="tree",
                       widget="tree", dated_by=(Kind.POOL, Kind.VDEV, Kind.LEAF)))
