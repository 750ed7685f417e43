"""The ZIL / SLOG panel's fold: the ZIL kstat's commit and sync-write series; its values with the log vdevs'."""

from __future__ import annotations

from typing import ClassVar, Dict, Optional, Tuple

from zfsmon.model import Kind, Role, Sample
from zfsmon.views.top.folds.base import Derivation, Fold, StateView


class ZilFold(Fold):
    id: ClassVar[str] = "zil"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.ZIL,)

    def feed(self, s: Sample, derived: Derivation) -> None:
        if derived is not None:
            for name in ("commits_per_s", "itx_per_s"):
                if name in derived.metrics:
                    self.push("zil", name, s.ts, derived.metrics[name])

    def values(self, view: StateView) -> Dict[str, Optional[float]]:
        """ZIL kstat rates, and what the SLOG (log-role vdevs) did in the last interval."""
        out: Dict[str, Optional[float]] = dict(view.derived.get("zil:zil", {}))
        logs = [e for e in view.entities.values() if e.role == Role.LOG and e.kind == Kind.VDEV]
        if logs:
            w = lat = 0.0
            bw = 0.0
            have_lat = False
            n = 0
            for e in logs:
                vals, _ = view.values(e.key)
                if not vals:
                    continue
                n += 1
                w += vals.get("write_ops", 0.0)
                bw += vals.get("write_bw", 0.0)
                v = vals.get("total_wait_write", vals.get("disk_wait_write"))
                if v is not None:
                    lat, have_lat = max(lat, v), True
            if n:
                out["slog_write_ops"] = w
                out["slog_write_bw"] = bw
                out["slog_lat_ns"] = lat if have_lat else None
                out["slog_devices"] = float(n)
        return out
