"""Collects the per-family metric rows. Add a family module here when adding a reader."""

from __future__ import annotations

import importlib
from typing import Iterator

from zfsmon.metrics.spec import MetricSpec

FAMILIES = ("vdev", "arc", "zil", "dataset", "device", "workload", "trace")


def all_specs() -> Iterator[MetricSpec]:
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"zfsmon.metrics.{fam}")
        except ModuleNotFoundError as exc:  # a family not written yet
            if exc.name == f"zfsmon.metrics.{fam}":
                continue
            raise
        yield from mod.SPECS
