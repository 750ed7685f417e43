"""Would a larger ARC or an L2ARC help? Advice from the ARC's own counters, over a window or since boot.

Pure: ARC/L2ARC samples (arcstats counters) in, a :class:`CacheAdvice` out.

* **Ghost hits** (``mru_ghost_hits``, ``mfu_ghost_hits``) are ARC misses on
  blocks the ARC had and evicted recently: their share of the misses is what
  a larger ARC could have served. An ARC below its maximum (``size`` well
  under ``c_max``) had room already: growing it would not help.
* **Evictions** (``evict_l2_eligible`` vs ``evict_l2_ineligible``, bytes) say
  what an L2ARC could take: only eligible bytes are written to it
  (ineligible: prefetched buffers with ``l2arc_noprefetch``, datasets with
  ``secondarycache`` other than all). Mostly ineligible evictions mean a
  larger L2ARC would not hold what the ARC drops.
* With an L2ARC: its hits among its lookups, and how full it is.

The window is the difference of the first and last readings; one reading
(or counters that went back: a reboot) is read as everything since boot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional

from zfsmon.model import Kind, Sample

#: ghost hits above this share of the ARC's misses: a larger ARC would have served a noticeable part
GHOST_SHARE = 0.05
#: an ARC at or above this share of c_max is full
FULL_SHARE = 0.95
_ARC = ("misses", "mru_ghost_hits", "mfu_ghost_hits", "evict_l2_eligible", "evict_l2_ineligible")
_L2 = ("hits", "misses")


@dataclass
class CacheAdvice:
    since_boot: bool
    numbers: Dict[str, float] = field(default_factory=dict)
    lines: List[str] = field(default_factory=list)

    def text(self) -> str:
        return " ".join(self.lines)


def _window(readings: List[Mapping[str, float]], names: Iterable[str]) -> Optional[Dict[str, float]]:
    """Counter differences first -> last; None when they went back (then the last reading is since boot)."""
    first, last = readings[0], readings[-1]
    out = {}
    for n in names:
        if n in last and n in first:
            d = last[n] - first[n]
            if d < 0:
                return None
            out[n] = d
    return out


def _b(v: float) -> str:
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def advise(samples: Iterable[Sample]) -> Optional[CacheAdvice]:
    """Advice from the ARC (and L2ARC) readings among ``samples``; None without ARC counters."""
    arc = sorted((s for s in samples if s.entity.kind == Kind.ARC and not s.since_boot
                  and all(n in s.metrics for n in ("misses", "evict_l2_eligible"))), key=lambda s: s.ts)
    if not arc:
        return None
    l2 = sorted((s for s in samples if s.entity.kind == Kind.L2ARC and "misses" in s.metrics), key=lambda s: s.ts)
    deltas = _window([s.metrics for s in arc], _ARC) if len(arc) > 1 else None
    since_boot = deltas is None
    a = deltas if deltas is not None else {n: arc[-1].metrics[n] for n in _ARC if n in arc[-1].metrics}
    l2d: Optional[Dict[str, float]] = None
    if l2:
        l2d = (_window([s.metrics for s in l2], _L2) if not since_boot and len(l2) > 1 else None) or \
            {n: l2[-1].metrics[n] for n in _L2 if n in l2[-1].metrics}
    end = arc[-1].metrics
    adv = CacheAdvice(since_boot)
    where = "since boot" if since_boot else "in the window"
    misses = a.get("misses", 0.0)
    ghosts = a.get("mru_ghost_hits", 0.0) + a.get("mfu_ghost_hits", 0.0)
    share = ghosts / misses if misses else 0.0
    size, cmax = end.get("size"), end.get("c_max")
    fill = size / cmax if size is not None and cmax else None
    adv.numbers.update({"arc_misses": misses, "ghost_hits": ghosts, "ghost_share": share,
                        "mru_ghost_hits": a.get("mru_ghost_hits", 0.0), "mfu_ghost_hits": a.get("mfu_ghost_hits", 0.0)})
    if fill is not None:
        adv.numbers["arc_fill"] = fill
    if misses and share >= GHOST_SHARE:
        adv.lines.append(f"ARC: {ghosts:,.0f} ghost hits {where}, {share:.0%} of its {misses:,.0f} misses (MRU "
                         f"{a.get('mru_ghost_hits', 0):,.0f}, MFU {a.get('mfu_ghost_hits', 0):,.0f}): blocks it had "
                         f"evicted were read again; a larger ARC would have served up to {share:.0%} of the misses.")
    elif fill is not None and size is not None and cmax is not None and fill < FULL_SHARE:
        adv.lines.append(f"ARC: {_b(size)} of its {_b(cmax)} maximum ({fill:.0%}) and {ghosts:,.0f} ghost hits "
                         f"{where}: it had room; a larger ARC would not help.")
    else:
        adv.lines.append(f"ARC: ghost hits were {share:.1%} of {misses:,.0f} misses {where}: what it evicted was "
                         "rarely read again; a larger ARC would help little.")
    elig, inel = a.get("evict_l2_eligible", 0.0), a.get("evict_l2_ineligible", 0.0)
    evicted = elig + inel
    adv.numbers.update({"evict_l2_eligible": elig, "evict_l2_ineligible": inel,
                        "eligible_share": elig / evicted if evicted else 0.0})
    has_l2 = l2d is not None and bool(l2d) and (l2d.get("hits", 0) + l2d.get("misses", 0) > 0
                                                 or l2[-1].metrics.get("size", 0) > 0)
    if not evicted:
        adv.lines.append(f"Nothing was evicted from the ARC {where}: an L2ARC has nothing to take.")
    elif elig / evicted >= 0.5:
        text = (f"Of {_b(evicted)} evicted from the ARC {where}, {_b(elig)} ({elig / evicted:.0%}) was "
                "L2ARC-eligible")
        text += (": an L2ARC would take it (worth it when the ghost hits show such blocks are read again)."
                 if not has_l2 else ".")
        adv.lines.append(text)
    else:
        adv.lines.append(f"Of {_b(evicted)} evicted from the ARC {where}, {_b(inel)} ({inel / evicted:.0%}) was not "
                         "L2ARC-eligible (prefetched, or secondarycache excludes it): a larger L2ARC would not hold "
                         "what the ARC drops.")
    if has_l2 and l2d is not None:
        hits, l2m = l2d.get("hits", 0.0), l2d.get("misses", 0.0)
        l2size = l2[-1].metrics.get("size", 0.0)
        adv.numbers.update({"l2_hits": hits, "l2_misses": l2m, "l2_size": l2size})
        pct = hits / (hits + l2m) if hits + l2m else 0.0
        adv.lines.append(f"L2ARC: {hits:,.0f} hits of {hits + l2m:,.0f} lookups ({pct:.0%}) {where}, holding "
                         f"{_b(l2size)}" + ("; still warming (no hits yet)." if not hits else "."))
    return adv
