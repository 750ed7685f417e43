"""The vdev tree: the pool, its role groups, top-level vdevs and leaves, with their health and the goose-egg verdicts."""

from __future__ import annotations

from typing import List, Optional, Tuple

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
        parts.append(_columns(_tree_cells(r, opts, wide, name_w), name_w, widths) if shown is None or i in shown
                     else Text())
    eggs = [r for r in rows if r.verdict == goose.GOOSE_EGG]
    if eggs and wide:
        parts.append(Text(f"GOOSE: {eggs[0].why}", style="yellow", overflow="ellipsis", no_wrap=True))
    return _fit(parts, width)


def _tree_cells(r: TreeRow, opts: ViewOptions, wide: bool, name_w: int) -> List[Text]:
    """The row's cells; in the first, the name and after it what is wrong (state, errors, slow I/Os, sit-out),
    the name cut short rather than those words when the column is too narrow for both."""
    indent = "  " * r.depth
    if r.kind == "role":
        name = Text(f"{'  ' * (r.depth - 1)}{r.name}", style="bold underline")
        n = 9 if wide else 7
        return [name] + [Text("")] * n
    style = "bold" if r.kind in ("pool", "vdev") else ""
    name = fmt.inert(Text(indent[:-2] + r.name if r.depth else r.name, style=style))
    if r.since_boot:
        name.append("*", style="dim")
    tail = Text()
    if unhealthy(r.state):
        tail.append(f" {r.state}", style="bold red")
    for word, level in row_marks(r, opts.raw):
        tail.append(word, style=thresholds.THEMES[opts.theme][level])
    if tail.plain and name.cell_len + tail.cell_len > name_w:
        name.truncate(max(name_w - tail.cell_len, len(indent)), overflow="ellipsis")
    name.append_text(tail)
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


def row_marks(r: TreeRow, raw: bool = False) -> List[Tuple[str, str]]:
    """What follows a row's name besides its state, as (words, level): errors ``err READ/WRITE/CKSUM`` (crit)
    when any is above 0, slow I/Os ``N slow`` (warn), ``SIT-OUT`` (warn) while a RAIDZ/dRAID leaf sits out reads.
    Words, so that the colour never says it alone."""
    out: List[Tuple[str, str]] = []
    if any(n > 0 for n in r.errors):
        out.append((" err " + "/".join(fmt.num(n, "ops", raw) for n in r.errors), "crit"))
    if r.slow_ios is not None and r.slow_ios > 0:
        out.append((f" {fmt.num(r.slow_ios, 'ops', raw)} slow", "warn"))
    if r.sit_out:
        out.append((" SIT-OUT", "warn"))
    return out


def _render(f: Frame) -> Text:
    return tree(f.state, f.opts, f.width)


#: the tree's rows, and the block devices the leaves are judged against (the goose-egg columns); the rows' own
#: samples date it (the devices go on counting while ZFS's figures are stale)
PANEL = register(Panel("vdevs", "Vdevs", (Kind.POOL, Kind.VDEV, Kind.LEAF, Kind.DEVICE), _render, place="tree",
                       widget="tree", dated_by=(Kind.POOL, Kind.VDEV, Kind.LEAF)))
