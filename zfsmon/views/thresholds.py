"""Colour thresholds of the dashboard, as data: one table, documented in docs/dashboard.md.

Every coloured number on the screen goes through :func:`level`, so the same
latency is the same colour in the vdev tree, the SLOG panel and a replay.
Levels are ``ok`` (green), ``warn`` (yellow) and ``crit`` (red); ``none``
(dim) is "no value", which is never coloured as good or bad. A colour never
carries the meaning alone: warn and crit values also carry :data:`LEVEL_MARK`
(``!``, ``!!``), which reads the same under ``NO_COLOR``, in any theme and to a
colour-blind eye; the ``colorblind`` theme (:data:`THEMES`) trades green/red for
Okabe and Ito's blue/orange/vermillion, which deuteranopes and protanopes tell apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional


@dataclass(frozen=True)
class Threshold:
    """``warn``/``crit`` bounds; for ``higher_is_worse=False`` a value *below* the bound is the problem."""

    warn: float
    crit: float
    higher_is_worse: bool
    unit: str
    why: str


THRESHOLDS: Dict[str, Threshold] = {
    "latency": Threshold(10e6, 50e6, True, "ns",
                         "average vdev/device wait (zpool iostat -l, diskstats): spinning disks answer in 5-15 ms; "
                         "above 50 ms a queue is building up"),
    "slog_latency": Threshold(1e6, 5e6, True, "ns",
                              "SLOG write wait: a SLOG exists to make sync writes fast; above 1 ms it is not doing that"),
    "arc_hit_pct": Threshold(90.0, 70.0, False, "%",
                             "ARC hit ratio: below 90% the working set no longer fits; below 70% most reads miss"),
    "l2arc_hit_pct": Threshold(30.0, 10.0, False, "%",
                               "L2ARC hit ratio of ARC misses: below 10% the cache device mostly costs RAM for headers"),
    "pg_hit_pct": Threshold(99.0, 95.0, False, "%",
                            "PostgreSQL shared_buffers hit ratio: the usual OLTP rule of thumb is 99%"),
    "disk_share_pct": Threshold(10.0, 30.0, True, "%",
                                "share of reads that reach the pool's disks (read path panel)"),
    "queue": Threshold(8.0, 32.0, True, "count", "I/Os pending in a vdev's queues (zpool iostat -q)"),
    "stale": Threshold(3.5, 6.0, True, "intervals",
                       "no new data from a source for this many of its intervals: shown as stale with its age "
                       "(a zpool iostat report is complete only when the next one starts, so up to 3 is normal)"),
}

#: each theme's style per level (``--theme``, the ``t`` key)
THEMES: Dict[str, Dict[str, str]] = {
    "default": {"ok": "green", "warn": "yellow", "crit": "bold red", "none": "dim"},
    "colorblind": {"ok": "#56b4e9", "warn": "#e69f00", "crit": "bold reverse #d55e00", "none": "dim"},
}
DEFAULT_THEME = "default"
#: what a value of that level carries beside its colour
LEVEL_MARK: Dict[str, str] = {"ok": "", "warn": "!", "crit": "!!", "none": ""}
#: the goose-egg marker: a device that says ~0 while ZFS moves data
GOOSE_STYLE = "bold black on yellow"


def level(name: str, value: Optional[float]) -> str:
    """``ok`` / ``warn`` / ``crit`` for a value of the named threshold; ``none`` for a missing value."""
    if value is None:
        return "none"
    t = THRESHOLDS[name]
    if t.higher_is_worse:
        return "crit" if value >= t.crit else "warn" if value >= t.warn else "ok"
    return "crit" if value < t.crit else "warn" if value < t.warn else "ok"


def style(name: str, value: Optional[float], theme: str = DEFAULT_THEME) -> str:
    return THEMES[theme][level(name, value)]


def mark(name: str, value: Optional[float]) -> str:
    """The level's mark (:data:`LEVEL_MARK`): what says warn or crit without colour."""
    return LEVEL_MARK[level(name, value)]


def render_markdown() -> str:
    """The table in docs/dashboard.md (kept in step by a test)."""
    lines = ["| name | warn | crit | worse when | unit | why |", "|---|---|---|---|---|---|"]
    for name, t in THRESHOLDS.items():
        lines.append(f"| {name} | {t.warn:g} | {t.crit:g} | {'higher' if t.higher_is_worse else 'lower'} | "
                     f"{t.unit} | {t.why} |")
    return "\n".join(lines) + "\n"
