"""A pool's vdev tree guessed from ``zpool iostat`` text that does not print it, when no ``zpool status`` is at hand.

Two outputs lose the tree: headerless ``-H -v`` rows (no indentation, no
``logs``/``cache`` headings) and ``-v -r``/``-v -w`` histograms (one table per
vdev, no indentation either).  Both mark the log, dedup, special and cache
sections only by blank lines, and zpool prints those sections in that fixed
order (``print_vdev_stats``: the classes ``logs``, ``dedup``, ``special``,
then the L2ARC devices).  What the text still shows, and this module reads:

* the pool is the report's first row or table; a report ends where the
  first pool's name comes again;
* in ``-H`` rows a leaf has no capacity (``-``, or ``0 0`` with ``-p``) while a
  top-level vdev has one, so leaves belong to the top-level row above them;
* in histograms an interior vdev's counts are the sums of its children's
  (the kernel aggregates them), and ``mirror-N`` / ``raidzN-N`` / ``draid...``
  rows have at least two children: the tables after one are its leaves until
  their counts add up to it;
* which section is which: a section whose capacity the pool's own
  alloc/free includes is special or dedup, one it excludes is logs or cache
  (OpenZFS 0.8+ counts neither log nor cache devices in the pool's capacity);
  a cache section cannot hold a mirror; of the assignments left, the most
  common layouts win (logs and cache before special before dedup).

* several pools: a top-level vdev's ``-N`` is its index in its pool, rising
  through the data and the log/special/dedup sections, so a ``mirror-N`` /
  ``raidzN-N`` whose index does not rise starts another pool, whose own row is
  the one just before it.  A pool whose first vdev has no index (a single disk)
  cannot be told from a device of the pool before it.

The result is a :class:`~zfsmon.sources.zpool.status.Topology` the parser uses
as it would use ``zpool status``, with notes that say what was guessed.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.model import Entity, Kind, Role
from zfsmon.sources.zpool.status import Topology, valid_pool_name
from zfsmon.units import parse_count, parse_size

__all__ = ["GuessedTree", "guess_topology", "is_interior_name", "assign_sections"]

_INTERIOR_RE = re.compile(r"^(mirror|raidz[123]?|draid[123]?(:[0-9a-z:]+)?)(-\d+)?$")
_EPOCH_RE = re.compile(r"^\d{9,11}$")
_DATE_RE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?: \S+)? \d{4}$")
_VALUE_RE = re.compile(r"^(-|\d+(?:\.\d+)?[A-Za-z]{0,2})$")
_SEPARATOR_RE = re.compile(r"^[\s-]*--[\s-]*$")
#: the sections zpool prints after the data vdevs, in its order
_SECTION_ORDER = (Role.LOG, Role.DEDUP, Role.SPECIAL, Role.CACHE)
#: how common each section is (ties between assignments that fit the text equally well)
_PREFERENCE = {Role.LOG: 3, Role.CACHE: 3, Role.SPECIAL: 2, Role.DEDUP: 1}


def is_interior_name(name: str) -> bool:
    """``mirror-0``, ``raidz2-1``, ``draid2:4d:6c:1s-0`` (and old un-numbered ``mirror``/``raidz``)."""
    return bool(_INTERIOR_RE.match(name))


@dataclass
class GuessedTree:
    topology: Topology
    notes: List[str] = field(default_factory=list)


@dataclass
class _Unit:
    """One row (``-H``) or one table (histogram) of the first report."""

    name: str
    section: int  # 0: data; 1.. the blank-line sections in order
    capacity: Optional[Tuple[float, float]] = None  # (alloc, free); None: a leaf's `-` / `0 0`
    totals: Tuple[float, ...] = ()  # histogram: per-column sums


def _capacity(alloc: str, free: str) -> Optional[Tuple[float, float]]:
    if alloc == "-" or free == "-":
        return None
    a, f = parse_size(alloc), parse_size(free)
    if a == 0 and f == 0:
        return None
    return a, f


def _scripted_units(lines: Sequence[str]) -> Optional[List[_Unit]]:
    """The rows of the first report of ``-H -v`` output, or None if the text is not headerless rows."""
    units: List[_Unit] = []
    section = 0
    blank = False
    for line in lines:
        s = line.strip()
        if not s:
            blank = bool(units)
            continue
        if _EPOCH_RE.match(s) or _DATE_RE.match(s):
            if units:
                break
            continue
        toks = s.split()
        if len(toks) < 7 or not all(_VALUE_RE.match(t) for t in toks[1:]):
            return None
        if units and toks[0] == units[0].name:
            break
        if blank:
            section += 1
            blank = False
        try:
            cap = _capacity(toks[1], toks[2])
        except ValueError:
            return None
        units.append(_Unit(toks[0], section, cap))
    return units if len(units) > 1 else None


def _histogram_units(lines: Sequence[str]) -> Optional[List[_Unit]]:
    """The tables of the first report of ``-v -r``/``-v -w`` output (two blank lines open a section)."""
    units: List[_Unit] = []
    section = 0
    blanks = 0
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        nxt = lines[i + 1].split() if i + 1 < len(lines) else []
        if not s:
            blanks += 1
            i += 1
            continue
        if nxt[:1] in (["latency"], ["req_size"]) and s.split():
            name = s.split()[0]
            if units and name == units[0].name:
                break
            if units and blanks >= 2:
                section += 1
            blanks = 0
            totals: List[float] = []
            i += 2
            while i < len(lines):
                row = lines[i].split()
                if _SEPARATOR_RE.match(lines[i]) and not totals:
                    i += 1
                    continue
                if len(row) < 2 or not all(_VALUE_RE.match(t) for t in row[1:]):
                    break
                try:
                    vals = [0.0 if t == "-" else parse_count(t) for t in row[1:]]
                except ValueError:
                    return None  # not a count: the parser says where (a ParseError), nothing to guess from
                totals = [a + b for a, b in zip(totals, vals)] if totals else vals
                i += 1
            units.append(_Unit(name, section, None, tuple(totals)))
            continue
        blanks = 0
        i += 1
    return units if len(units) > 1 else None


def _close(a: Sequence[float], b: Sequence[float]) -> bool:
    """Counts equal but for the rounding of 3-digit human units (``1.68K``)."""
    return len(a) == len(b) and all(abs(x - y) <= 0.02 * max(x, y) + 1 for x, y in zip(a, b))


def _covers(acc: Sequence[float], target: Sequence[float]) -> bool:
    """The children's sums have reached the interior vdev's counts."""
    return _close(acc, target) or (len(acc) == len(target) and all(x >= y for x, y in zip(acc, target)))


def _tree_of_section(units: List[_Unit], scripted: bool) -> List[Tuple[_Unit, Optional[str]]]:
    """(unit, parent top-level vdev or None for a top-level vdev) for one section's units in order."""
    out: List[Tuple[_Unit, Optional[str]]] = []
    top: Optional[_Unit] = None
    children = 0
    acc: Tuple[float, ...] = ()
    for u in units:
        if scripted:
            leaf = u.capacity is None and top is not None and not is_interior_name(u.name)
        else:
            leaf = (top is not None and not is_interior_name(u.name)
                    and (children < 2 or not _covers(acc, top.totals)))
        if leaf:
            assert top is not None
            out.append((u, top.name))
            children += 1
            acc = tuple(a + b for a, b in zip(acc, u.totals)) if acc else u.totals
            continue
        out.append((u, None))
        top = u if (scripted or is_interior_name(u.name)) else None
        children, acc = 0, ()
    return out


def assign_sections(n: int, counted: Sequence[Optional[bool]], has_interior: Sequence[bool]) -> List[Role]:
    """Roles of ``n`` blank-line sections: in zpool's order, fitting what the text shows, most common first.

    ``counted[i]``: True when the pool's capacity includes section i (special,
    dedup), False when it does not (logs, cache), None when unknown.
    """
    best: Optional[Tuple[int, Tuple[Role, ...]]] = None
    for combo in itertools.combinations(_SECTION_ORDER, n):
        ok = all(c is None or c == (r in (Role.SPECIAL, Role.DEDUP)) for r, c in zip(combo, counted))
        ok = ok and not any(r == Role.CACHE and i for r, i in zip(combo, has_interior))
        if not ok:
            continue
        score = sum(_PREFERENCE[r] for r in combo)
        if best is None or score > best[0]:
            best = (score, combo)
    if best is None:  # nothing fits the capacities: fall back to the order alone
        return assign_sections(n, [None] * n, has_interior) if any(c is not None for c in counted) \
            else list(_SECTION_ORDER[:n])
    return list(best[1])


def _counted(pool: _Unit, tops: Dict[int, List[_Unit]], n: int) -> List[Optional[bool]]:
    """Which sections the pool's alloc/free includes, from the capacities (None where they cannot say)."""
    if pool.capacity is None or any(u.capacity is None for s in range(n + 1) for u in tops.get(s, [])):
        return [None] * n
    p_alloc, p_free = pool.capacity
    base = [sum(u.capacity[0] for u in tops.get(0, []) if u.capacity), sum(u.capacity[1] for u in tops.get(0, [])
                                                                           if u.capacity)]
    extra = [(sum(u.capacity[0] for u in tops.get(s, []) if u.capacity),
              sum(u.capacity[1] for u in tops.get(s, []) if u.capacity)) for s in range(1, n + 1)]
    fits = []
    for mask in itertools.product((False, True), repeat=n):
        a = base[0] + sum(e[0] for e, m in zip(extra, mask) if m)
        f = base[1] + sum(e[1] for e, m in zip(extra, mask) if m)
        err = abs(a - p_alloc) / max(p_alloc, 1.0) + abs(f - p_free) / max(p_free, 1.0)
        fits.append((err, mask))
    err, mask = min(fits, key=lambda t: t[0])
    if err > 0.02:
        return [None] * n
    return list(mask)


def _adds_up(pool: _Unit, tops: Dict[int, List[_Unit]], n: int) -> bool:
    """The pool's capacity is its top-level vdevs' (some sections counted or not)."""
    if pool.capacity is None or any(u.capacity is None for s in range(n + 1) for u in tops.get(s, [])):
        return False
    if n == 0:
        alloc = sum(u.capacity[0] for u in tops.get(0, []) if u.capacity)
        free = sum(u.capacity[1] for u in tops.get(0, []) if u.capacity)
        return abs(alloc - pool.capacity[0]) + abs(free - pool.capacity[1]) <= 0.02 * sum(pool.capacity) + 1
    return any(c is not None for c in _counted(pool, tops, n))


_INDEX_RE = re.compile(r"-(\d+)$")


def split_pools(units: List[_Unit]) -> List[List[_Unit]]:
    """One report's rows/tables per pool: a top-level index that does not rise starts the next pool."""
    pools: List[List[_Unit]] = [[units[0]]]
    last = -1
    for u in units[1:]:
        m = _INDEX_RE.search(u.name) if is_interior_name(u.name) else None
        if m and int(m.group(1)) <= last and len(pools[-1]) >= 3:
            head = pools[-1].pop()  # the row just before: the new pool's own
            pools.append([head])
            last = -1
        if m:
            last = int(m.group(1))
        pools[-1].append(u)
    return pools


def guess_topology(text: str) -> Optional[GuessedTree]:
    """The pools' trees from ``-H -v`` rows or ``-v`` histograms; None for any other text (or one row a report)."""
    lines = text.splitlines()[:5000]
    scripted = True
    units = _scripted_units(lines)
    if units is None:
        scripted = False
        units = _histogram_units(lines)
    if units is None or not valid_pool_name(units[0].name):
        return None
    pools = split_pools(units)
    if any(not valid_pool_name(p[0].name) for p in pools):
        return None
    topo = Topology()
    notes: List[str] = []
    for members in pools:
        pool = members[0]
        rest = [_Unit(u.name, u.section - pool.section, u.capacity, u.totals) for u in members[1:]]
        got = _guess_pool(_Unit(pool.name, 0, pool.capacity, pool.totals), rest, scripted, len(pools))
        if got is None:
            return None
        for e in got.topology.entities.values():
            topo.add(e)
        topo.add(Entity(Kind.POOL, pool.name, pool.name))
        notes.extend(got.notes)
    return GuessedTree(topo, notes)


def _guess_pool(pool: _Unit, rest: List[_Unit], scripted: bool, n_pools: int) -> Optional[GuessedTree]:
    n = max((u.section for u in rest), default=0)
    placed: List[Tuple[_Unit, Optional[str]]] = []
    for s in range(n + 1):
        placed.extend(_tree_of_section([u for u in rest if u.section == s], scripted))
    tops: Dict[int, List[_Unit]] = {}
    for u, parent in placed:
        if parent is None:
            tops.setdefault(u.section, []).append(u)
    interior = [any(p is not None for u, p in placed if u.section == s) for s in range(1, n + 1)]
    counted = _counted(pool, tops, n) if scripted else [None] * n
    if scripted and n_pools == 1 and not any(p is not None for _, p in placed) and not _adds_up(pool, tops, n):
        return None  # no leaves and the rows do not add up to the first: several pools, not one pool's tree
    roles = [Role.DATA] + assign_sections(n, counted, interior)
    topo = Topology()
    topo.add(Entity(Kind.POOL, pool.name, pool.name))
    for u, parent in placed:
        role = roles[u.section]
        if parent is None:
            topo.add(Entity(Kind.VDEV, u.name, pool.name, role, pool.name))
        else:
            topo.add(Entity(Kind.LEAF, u.name, pool.name, role, parent))
    what = "-H rows" if scripted else "histogram tables"
    how = ("leaves by their missing capacity" if scripted
           else "leaves under mirror/raidz/draid vdevs by their counts adding up")
    sections = ", ".join(r.value for r in roles[1:]) or "none"
    note = (f"pool {pool.name}: vdev tree guessed from the {what} ({how}; blank-line sections taken as: "
            f"{sections}); give a `zpool status` capture (--topology FILE) to be sure")
    return GuessedTree(topo, [note])
