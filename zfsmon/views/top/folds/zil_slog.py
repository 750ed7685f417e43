"""The ZIL / SLOG panel's fold: the ZIL kstat's commit and sync-write series, the zio_stats kstat's allocation
rates; its values with the log vdevs'."""

from __future__ import annotations

from typing import ClassVar, Dict, Optional, Tuple

from zfsmon.model import Kind, Role, Sample
from zfsmon.views.top.folds.base import Derivation, Fold, StateView

#: the zio_stats kstat's entity (host-wide: every pool's allocations)
ZIO_KEY = "zio:zio"
#: the zio_stats counters the panel shows, each with its rate beside (``zio_<stat>`` and ``zio_<stat>_per_s``)
ZIO_SHOWN: Tuple[str, ...] = ("total_allocations", "alloc_class_fallbacks", "gang_writes")


class ZilFold(Fold):
    id: ClassVar[str] = "zil"
    kinds: ClassVar[Tuple[Kind, ...]] = (Kind.ZIL, Kind.ZIO)

    def __init__(self) -> None:
        super().__init__()
        #: the newest zio_stats reading's time and its counters' rates (the Derived values: none after a reset)
        self.zio_rates: Dict[str, float] = {}
        self.zio_at: Optional[float] = None

    def feed(self, s: Sample, derived: Derivation) -> None:
        if s.entity.kind == Kind.ZIO:
            self.zio_at = s.ts
            self.zio_rates = dict(derived.rates) if derived is not None else {}
            return
        if derived is not None:
            for name in ("commits_per_s", "itx_per_s"):
                if name in derived.metrics:
                    self.push("zil", name, s.ts, derived.metrics[name])

    def trim(self, lo: float) -> None:
        super().trim(lo)
        if self.zio_at is not None and self.zio_at < lo:  # a rate of before the window is not shown as current
            self.zio_rates = {}

    def values(self, view: StateView) -> Dict[str, Optional[float]]:
        """ZIL kstat rates, what the SLOG (log-role vdevs) did in the last interval, and the zio_stats counters
        (``zio_<stat>``) with their rates (``zio_<stat>_per_s``, None until a second reading)."""
        out: Dict[str, Optional[float]] = dict(view.derived.get("zil:zil", {}))
        zio, _ = view.values(ZIO_KEY)
        for name in ZIO_SHOWN:
            if name in zio:
                out[f"zio_{name}"] = zio[name]
                out[f"zio_{name}_per_s"] = self.zio_rates.get(name)
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
