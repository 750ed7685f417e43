"""The dashboard's panels, one module each (its ``PANEL``: id, title, entity kinds, render), listed in
:data:`PANELS`.

:class:`~zfsmon.views.top.app.TopApp` makes a widget for each and draws each from a
:class:`~zfsmon.views.top.panels.base.Frame`. A source's errors show on the panels whose entity kinds its
``SOURCE`` record feeds (:func:`~zfsmon.views.top.panels.base.status_lines`); those no source module declares, in
the header. The other names below are the panels' render functions and what they share, so that
``panels.tree(...)``, ``panels.arc(...)`` and the like need no knowledge of the modules.
"""

from __future__ import annotations

from typing import Dict, Tuple

from zfsmon.views.top import fmt
from zfsmon.views.top.panels import (
    arc_l2arc,
    findings_list,
    host_header,
    read_shares,
    vdev_tree,
    whole_run,
    workload_runs,
    zil_slog,
)
from zfsmon.views.top.panels.arc_l2arc import arc
from zfsmon.views.top.panels.base import (
    DECLARED,
    HEADING,
    Frame,
    Panel,
    ViewOptions,
    _columns,
    heading,
    sources_of,
    status_line,
    status_lines,
)
from zfsmon.views.top.panels.findings_list import DRIVER_WORDS, cache_verdict, findings
from zfsmon.views.top.panels.host_header import HeaderInfo, header
from zfsmon.views.top.panels.read_shares import read_path
from zfsmon.views.top.panels.vdev_tree import tree, tree_lines
from zfsmon.views.top.panels.whole_run import TIMELINE_LABEL, TIMELINE_RIGHT, timeline
from zfsmon.views.top.panels.workload_runs import FIO_ROWS, FIO_ROWS_COMPACT, fio_rows, workload
from zfsmon.views.top.panels.zil_slog import zil

#: every panel, in screen order: the header, the tree and the timeline under it, then the side column
PANELS: Tuple[Panel, ...] = (host_header.PANEL, vdev_tree.PANEL, whole_run.PANEL, arc_l2arc.PANEL, zil_slog.PANEL,
                             workload_runs.PANEL, read_shares.PANEL, findings_list.PANEL)
#: the side column's panels, top to bottom (the narrow layout's grid, row by row)
SIDE: Tuple[Panel, ...] = tuple(p for p in PANELS if p.place == "side")
TITLES: Dict[str, str] = {p.id: p.title for p in PANELS}


def panel(panel_id: str) -> Panel:
    """The panel of that id."""
    return DECLARED[panel_id]

__all__ = ["DECLARED", "DRIVER_WORDS", "FIO_ROWS", "FIO_ROWS_COMPACT", "HEADING", "PANELS", "SIDE", "TIMELINE_LABEL",
           "TIMELINE_RIGHT", "TITLES", "Frame", "HeaderInfo", "Panel", "ViewOptions", "_columns", "arc",
           "cache_verdict", "fio_rows", "findings", "fmt", "header", "heading", "panel", "read_path", "sources_of",
           "status_line", "status_lines", "timeline", "tree", "tree_lines", "workload", "zil"]
