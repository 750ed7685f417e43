"""The panels' folds, one module per panel that keeps state of its own (the others draw from what
:class:`~zfsmon.views.top.state.TopState` shares): each panel's ``Panel.fold`` is its class here.

:data:`FOLDS` is what every state makes one of each; ``tests/unit/views/top/test_top_folds.py`` checks that it is the
panels' own list.
"""

from __future__ import annotations

from typing import Tuple, Type

from zfsmon.views.top.folds.arc_l2arc import ARC_SERIES, ArcFold
from zfsmon.views.top.folds.base import Derivation, Fold, Point, StateView, copied
from zfsmon.views.top.folds.read_shares import ReadFold
from zfsmon.views.top.folds.workload_runs import FIO_PCTS, FioRow, WorkloadFold, weighted_median
from zfsmon.views.top.folds.zil_slog import ZilFold

#: every panel's fold, in the panels' screen order
FOLDS: Tuple[Type[Fold], ...] = (ArcFold, ZilFold, WorkloadFold, ReadFold)

__all__ = ["ARC_SERIES", "FIO_PCTS", "FOLDS", "ArcFold", "Derivation", "FioRow", "Fold", "Point", "ReadFold",
           "StateView", "WorkloadFold", "ZilFold", "copied", "weighted_median"]
