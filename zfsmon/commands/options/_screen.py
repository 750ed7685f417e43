"""Options the dashboard's two commands (`top`, `replay`) share: one definition, one help text."""

from __future__ import annotations

import argparse

from zfsmon.views.thresholds import DEFAULT_THEME, THEMES


def add_theme(p: argparse.ArgumentParser) -> None:
    p.add_argument("--theme", choices=list(THEMES), default=DEFAULT_THEME,
                   help="colours of ok/warn/crit values: default green/yellow/red, colorblind blue/orange/vermillion "
                        "(t switches; warn and crit also carry ! and !!; NO_COLOR set: no colours)")
