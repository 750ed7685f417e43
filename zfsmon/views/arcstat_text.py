"""``zfsmon arcstat``'s text and CSV lines: columns from :data:`zfsmon.metrics.arc.ARCSTAT_COLUMNS`.

The view only formats numbers it is handed (per entity kind: the raw
sample's levels merged with the derived interval metrics); it runs nothing.
A column whose metric this kernel does not have shows ``-``.
"""

from __future__ import annotations

import time
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from zfsmon.metrics.arc import (
    ARCSTAT_COLUMNS,
    BYTES,
    COUNT,
    DEFAULT_COLUMNS,
    L2_COLUMNS,
    PERCENT,
    TIME,
    ZIL_COLUMNS,
    Column,
)
from zfsmon.model import Kind
from zfsmon.units import MISSING, human_count, human_size

Values = Mapping[Kind, Mapping[str, float]]


def has_l2(levels: Values) -> bool:
    """Whether the L2ARC's columns are among the defaults: as OpenZFS 2.4's zarcstat decides, by ``l2_ndev`` (the
    cache devices attached) or, on a kernel without it, ``l2_size``, so a host without an L2ARC shows none. zarcstat
    has no column of the device count, so neither has ``zfsmon arcstat``."""
    l2 = levels.get(Kind.L2ARC) or {}
    return bool(l2.get("ndev") or l2.get("size"))


def select_columns(fields: Optional[str], l2: bool = False, zil: bool = False) -> List[Column]:
    """``-f a,b,c`` -> columns (ValueError naming unknown ones); default: arcstat's set + L2ARC/ZIL if present."""
    if fields:
        names = [f.strip() for f in fields.split(",") if f.strip()]
        bad = [n for n in names if n not in ARCSTAT_COLUMNS]
        if bad:
            raise ValueError(f"unknown field{'s' if len(bad) > 1 else ''} {', '.join(bad)}"
                             " (list them with `zfsmon arcstat -v`)")
        if not names:
            raise ValueError("no fields given to -f")
    else:
        names = list(DEFAULT_COLUMNS) + (list(L2_COLUMNS) if l2 else []) + (list(ZIL_COLUMNS) if zil else [])
    return [ARCSTAT_COLUMNS[n] for n in names]


def value_of(col: Column, values: Values) -> Optional[float]:
    return values.get(col.kind, {}).get(col.metric)


def format_value(col: Column, value: Optional[float], ts: float) -> str:
    if col.fmt == TIME:
        return time.strftime("%H:%M:%S", time.localtime(ts))
    if value is None:
        return MISSING
    if col.fmt == BYTES:
        return human_size(value)
    if col.fmt == PERCENT:
        return f"{value:.0f}"
    if col.fmt == COUNT:
        return human_count(value)
    return f"{value:g}"


def header_line(cols: Sequence[Column], sep: str = "  ") -> str:
    return sep.join(c.name.rjust(c.width) for c in cols)


def row_line(cols: Sequence[Column], ts: float, values: Values, sep: str = "  ") -> str:
    return sep.join(format_value(c, value_of(c, values), ts).rjust(c.width) for c in cols)


def csv_header(cols: Sequence[Column]) -> str:
    return ",".join(c.name for c in cols)


def csv_row(cols: Sequence[Column], ts: float, values: Values) -> str:
    """Exact numbers, not humanised; ``time`` as epoch seconds; empty cells where a metric is absent."""
    cells: List[str] = []
    for c in cols:
        if c.fmt == TIME:
            cells.append(f"{ts:.3f}")
            continue
        v = value_of(c, values)
        cells.append("" if v is None else (f"{v:.2f}" if c.fmt == PERCENT else f"{v:.6g}" if abs(v) < 1e6
                                           else f"{v:.0f}"))
    return ",".join(cells)


def fields_text(cols: Iterable[Column] = ARCSTAT_COLUMNS.values()) -> str:
    """The ``-v`` listing: name, entity, unit and meaning of every column."""
    unit = {COUNT: "", BYTES: "B", PERCENT: "%", TIME: ""}
    lines = []
    for c in cols:
        u = unit[c.fmt] + ("/s" if c.metric.endswith("_per_s") else "")
        lines.append(f"{c.name:>9}  {c.kind.value:<5}  {u:<3}  {c.help}")
    return "\n".join(lines)


def merge(*layers: Dict[Kind, Mapping[str, float]]) -> Dict[Kind, Dict[str, float]]:
    """Later layers win: raw levels first, then derived interval metrics."""
    out: Dict[Kind, Dict[str, float]] = {}
    for layer in layers:
        for kind, vals in layer.items():
            out.setdefault(kind, {}).update(vals)
    return out
