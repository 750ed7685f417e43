"""Limits of the analyses that the command line shows (``analyze --step``'s help): here, not in
:mod:`zfsmon.analysis.findings`, so that ``zfsmon --help`` does not import numpy."""

from __future__ import annotations

#: the most grid cells analyze makes unless told a step (:func:`zfsmon.analysis.findings.choose_step`): past it the grid
#: is coarsened. Every correlation is tried at up to 21 lags and each cell is a point of it; 20,000 keeps
#: one-second cells for 5.5 hours, and a week of one-second readings gets one-minute cells (10,080) instead of
#: 604,800 that only add noise and time
MAX_CELLS = 20_000
