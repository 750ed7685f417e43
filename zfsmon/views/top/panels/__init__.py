"""The dashboard's panels, one module each, every one a pure function of (state, options, size) to rich text.

The widgets in :mod:`zfsmon.views.top.app` only place them. The names below are the panels' render functions and
what they share, so that ``panels.tree(...)``, ``panels.arc(...)`` and the like need no knowledge of the modules.
"""

from __future__ import annotations

from zfsmon.views.top import fmt
from zfsmon.views.top.panels.arc_l2arc import arc
from zfsmon.views.top.panels.base import HEADING, TITLES, ViewOptions, _columns, heading, status_line
from zfsmon.views.top.panels.findings_list import DRIVER_WORDS, cache_verdict, findings
from zfsmon.views.top.panels.host_header import HeaderInfo, header
from zfsmon.views.top.panels.read_shares import read_path
from zfsmon.views.top.panels.vdev_tree import tree, tree_lines
from zfsmon.views.top.panels.whole_run import TIMELINE_LABEL, TIMELINE_RIGHT, timeline
from zfsmon.views.top.panels.workload_runs import FIO_ROWS, FIO_ROWS_COMPACT, fio_rows, workload
from zfsmon.views.top.panels.zil_slog import zil

__all__ = ["DRIVER_WORDS", "FIO_ROWS", "FIO_ROWS_COMPACT", "HEADING", "TIMELINE_LABEL", "TIMELINE_RIGHT", "TITLES",
           "HeaderInfo", "ViewOptions", "_columns", "arc", "cache_verdict", "fio_rows", "findings", "fmt", "header",
           "heading", "read_path", "status_line", "timeline", "tree", "tree_lines", "workload", "zil"]
