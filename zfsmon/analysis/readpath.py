"""Where reads are answered: PostgreSQL's buffers -> ARC -> L2ARC -> disks, as shares of all reads.

Each layer only sees what the one above missed: PostgreSQL asks for
``blks_hit + blks_read`` blocks and answers ``blks_hit`` from shared_buffers;
the ``blks_read`` go to ZFS, where the ARC answers its hits, the L2ARC answers
``l2_hits`` of the ARC's misses, and the rest (``misses - l2_hits``) reaches
the pool's disks. ZFS counters cover every consumer of the pool, not just this
database, and an ARC access is a ZFS block (matching PostgreSQL's 8k page with
``recordsize=8k``), so the ZFS split is applied to PostgreSQL's ``blks_read``
as a ratio. Without pg_stat_database the shares are of ZFS reads alone. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional


@dataclass(frozen=True)
class ReadPath:
    """Percent of reads answered by each layer (None: that layer was not measured)."""

    pg_buffers: Optional[float]
    arc: Optional[float]
    l2arc: Optional[float]
    disks: Optional[float]
    reads: float  # reads in the window (PostgreSQL block requests, else ZFS accesses)
    basis: str  # "postgres" | "zfs"

    def as_dict(self) -> Dict[str, object]:
        return dict(self.__dict__)

    def text(self) -> str:
        parts = [(n, v) for n, v in (("PostgreSQL buffers", self.pg_buffers), ("ARC", self.arc),
                                      ("L2ARC", self.l2arc), ("disks", self.disks)) if v is not None]
        return ", ".join(f"{n} {v:.1f}%" for n, v in parts)


def pg_buffers(deltas: Mapping[str, float], elapsed: float) -> Optional[Dict[str, float]]:
    """PostgreSQL's buffer reads in one interval of pg_stat_database counters (deltas over ``elapsed`` s).

    The one place the buffer hit % is computed (findings and the dashboard).
    None without both counters; no ``hit_pct`` without block requests ("no
    reads" is not "all misses").
    """
    hit, read = deltas.get("blks_hit"), deltas.get("blks_read")
    if hit is None or read is None or elapsed <= 0:
        return None
    out = {"blks_hit": hit, "blks_read": read, "blks_hit_per_s": hit / elapsed, "blks_read_per_s": read / elapsed}
    if hit + read > 0:
        out["hit_pct"] = 100.0 * hit / (hit + read)
    return out


def shares(pg_hit: Optional[float] = None, pg_read: Optional[float] = None, arc_hits: Optional[float] = None,
           arc_misses: Optional[float] = None, l2_hits: Optional[float] = None) -> Optional[ReadPath]:
    """Shares from read counts over one interval (deltas, or per-second rates: only ratios matter)."""
    have_pg = pg_hit is not None and pg_read is not None and pg_hit + pg_read > 0
    have_arc = arc_hits is not None and arc_misses is not None and arc_hits + arc_misses > 0
    if not have_pg and not have_arc:
        return None
    if have_pg:
        assert pg_hit is not None and pg_read is not None
        total = pg_hit + pg_read
        pg_share = 100.0 * pg_hit / total
        below = 100.0 * pg_read / total
    else:
        assert arc_hits is not None and arc_misses is not None
        total = arc_hits + arc_misses
        pg_share = None
        below = 100.0
    if not have_arc:
        return ReadPath(pg_share, None, None, None, total, "postgres")
    assert arc_hits is not None and arc_misses is not None
    accesses = arc_hits + arc_misses
    l2 = min(max(l2_hits or 0.0, 0.0), arc_misses)
    arc = below * arc_hits / accesses
    l2arc = below * l2 / accesses if l2_hits is not None else None
    disks = below * (arc_misses - l2) / accesses
    return ReadPath(pg_share, arc, l2arc, disks, total, "postgres" if have_pg else "zfs")


def shares_per_cell(cells: Dict[str, List[Optional[float]]]) -> List[Optional[ReadPath]]:
    """Per grid cell, from aligned per-second rates named pg_blks_hit/pg_blks_read/arc_hits/arc_misses/l2_hits."""
    n = max((len(v) for v in cells.values()), default=0)

    def at(name: str, i: int) -> Optional[float]:
        col = cells.get(name)
        return col[i] if col is not None and i < len(col) else None

    return [shares(at("pg_blks_hit", i), at("pg_blks_read", i), at("arc_hits", i), at("arc_misses", i),
                   at("l2_hits", i)) for i in range(n)]


def window_shares(cells: Dict[str, List[Optional[float]]], lo: int, hi: int) -> Optional[ReadPath]:
    """Shares over cells [lo, hi): sums of the rates where every needed column is present."""
    sums: Dict[str, float] = {}
    for name in ("pg_blks_hit", "pg_blks_read", "arc_hits", "arc_misses", "l2_hits"):
        col = cells.get(name)
        if col is None:
            continue
        vals = [v for v in col[lo:hi] if v is not None]
        if vals:
            sums[name] = sum(vals)
    return shares(sums.get("pg_blks_hit"), sums.get("pg_blks_read"), sums.get("arc_hits"), sums.get("arc_misses"),
                  sums.get("l2_hits"))
