"""A pool's vdev tree with roles, from ``zpool status``, and the tree rules all vdev listings share.

``zpool iostat`` does not always say what a vdev is for: ``-H`` prints no
indentation at all, and zfs-fuse (pool v23) prints the SLOG as a plain
top-level row without the ``logs`` heading.  ``zpool status`` always shows the
tree with its ``logs``/``cache``/``special``/``dedup``/``spares`` sections, so
it is the authority for roles and parents.

:class:`TreeBuilder` holds the rules every indented vdev listing shares (depth
from indentation, section headings, naming old un-enumerated ``mirror`` /
``raidz`` rows ``mirror-N`` / ``raidz1-N`` by top-level index); the iostat
parser uses it too.  Parsing is pure; :func:`read_topology` runs the command.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.model import SECTION_ROLES, Entity, Kind, ParseError, Role
from zfsmon.units import parse_count, parse_size

__all__ = ["TreeBuilder", "Topology", "parse_status", "read_topology", "run_zpool", "indent_depth", "PoolHealth",
           "VdevHealth", "ScanStatus", "parse_health", "parse_scan", "status_for"]

#: top-level vdev types that old ZFS prints without their ``-N`` index
_UNNUMBERED_TOP = {"mirror": "mirror", "raidz": "raidz1", "raidz1": "raidz1", "raidz2": "raidz2",
                   "raidz3": "raidz3"}
#: interior vdevs below top level that old ZFS prints without an index
_UNNUMBERED_INNER = ("replacing", "spare")
#: sections whose devices are not top-level vdevs of the pool (no index in modern numbering)
_AUX_ROLES = (Role.CACHE, Role.SPARE)
_POOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")


def indent_depth(line: str) -> int:
    """Nesting level of a vdev listing row: two spaces per level (tabs already removed by the caller)."""
    return (len(line) - len(line.lstrip(" "))) // 2


def valid_pool_name(name: str) -> bool:
    return bool(_POOL_NAME_RE.match(name))


class TreeBuilder:
    """Turns the rows of one pool's listing, in order, into entities with kind, role and parent.

    Depth 0 is the pool (or a section heading), depth 1 a top-level vdev,
    deeper rows leaves whose parent is the row above them one level up.
    """

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.role = Role.DATA
        self._top_index = 0
        self._stack: List[str] = [pool]  # names by depth
        self._children: Dict[str, int] = {}

    def section(self, name: str) -> bool:
        """If ``name`` is a section heading, enter that section and say so."""
        role = SECTION_ROLES.get(name)
        if role is None:
            return False
        self.role = role
        del self._stack[1:]
        return True

    def add(self, raw_name: str, depth: int) -> Entity:
        """The entity of a row at ``depth`` >= 1 (depth beyond the tree's is clamped to one level deeper)."""
        depth = max(1, min(depth, len(self._stack)))
        parent = self._stack[depth - 1]
        index = self._children.get(parent, 0)
        self._children[parent] = index + 1
        name = raw_name
        if depth == 1:
            if self.role not in _AUX_ROLES:
                if raw_name in _UNNUMBERED_TOP:
                    name = f"{_UNNUMBERED_TOP[raw_name]}-{self._top_index}"
                self._top_index += 1
            kind = Kind.VDEV
        else:
            if raw_name in _UNNUMBERED_INNER:
                name = f"{raw_name}-{index}"
            kind = Kind.LEAF
        del self._stack[depth:]
        self._stack.append(name)
        return Entity(kind, name, self.pool, self.role, parent)

    def pool_entity(self) -> Entity:
        return Entity(Kind.POOL, self.pool, self.pool)


@dataclass
class Topology:
    """Entities of one or more pools by (pool, name), as the authority (``zpool status``) lists them."""

    entities: Dict[Tuple[str, str], Entity] = field(default_factory=dict)
    pools: List[str] = field(default_factory=list)

    def add(self, entity: Entity) -> None:
        if entity.kind == Kind.POOL:
            if entity.name not in self.pools:
                self.pools.append(entity.name)
        else:
            self.entities[(entity.pool, entity.name)] = entity

    def lookup(self, pool: str, name: str) -> Optional[Entity]:
        """By exact name, else by device basename (``/dev/loop3`` vs ``loop3``)."""
        hit = self.entities.get((pool, name))
        if hit is not None:
            return hit
        base = os.path.basename(name)
        for (p, n), ent in self.entities.items():
            if p == pool and os.path.basename(n) == base:
                return ent
        return None

    def find_pool(self, name: str) -> Optional[str]:
        """The pool that has a vdev/leaf called ``name`` (for headerless ``-H`` rows)."""
        for (p, n) in self.entities:
            if n == name:
                return p
        for (p, n) in self.entities:
            if os.path.basename(n) == os.path.basename(name):
                return p
        return None

    def of_pool(self, pool: str) -> List[Entity]:
        return [e for (p, _), e in self.entities.items() if p == pool]

    def merge(self, other: Topology) -> None:
        for pool in other.pools:
            for key in [k for k in self.entities if k[0] == pool]:
                del self.entities[key]
            if pool not in self.pools:
                self.pools.append(pool)
        self.entities.update(other.entities)


@dataclass
class _PoolTable:
    """One pool's part of ``zpool status``: its lines, the config table's header and rows (line number, text)."""

    pool: str
    first: int  # index of the ``pool:`` line
    end: int  # index after the config table
    header: str
    rows: List[Tuple[int, str]]
    base: int  # column where NAME starts


def _pool_tables(text: str, source: str) -> List[_PoolTable]:
    lines = text.splitlines()
    out: List[_PoolTable] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*pool: (\S+)\s*$", line)
        if not m:
            i += 1
            continue
        pool = m.group(1)
        if not valid_pool_name(pool):
            raise ParseError(source, i + 1, "not a pool name", line)
        # find the NAME header of this pool's config table
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*pool: ", lines[j]):
            if lines[j].split()[:2] == ["NAME", "STATE"]:
                break
            j += 1
        if j >= len(lines) or re.match(r"^\s*pool: ", lines[j]):
            raise ParseError(source, i + 1, f"no config table for pool {pool}", line)
        header = lines[j]
        base = len(header.expandtabs(8)) - len(header.expandtabs(8).lstrip())
        rows: List[Tuple[int, str]] = []
        k = j + 1
        while k < len(lines) and lines[k].strip():
            rows.append((k + 1, lines[k]))
            k += 1
        if not rows:
            raise ParseError(source, j + 1, f"empty config table for pool {pool}", header)
        out.append(_PoolTable(pool, i, k, header, rows, base))
        i = k
    if not out:
        raise ParseError(source, None, "no `pool:` in zpool status output")
    return out


def _walk(table: _PoolTable, source: str) -> List[Tuple[Entity, List[str], int, str]]:
    """The config rows of one pool as (entity, tokens, line number, line); the pool's own row first."""
    builder = TreeBuilder(table.pool)
    out: List[Tuple[Entity, List[str], int, str]] = []
    for no, raw in table.rows:
        expanded = raw.expandtabs(8)
        ind = len(expanded) - len(expanded.lstrip())
        if ind < table.base:
            raise ParseError(source, no, "row is left of the NAME column", raw)
        depth = (ind - table.base) // 2
        tokens = expanded.split()
        name = tokens[0]
        if not out:
            if depth != 0 or name != table.pool:
                raise ParseError(source, no, f"expected the pool {table.pool} as first config row", raw)
            out.append((builder.pool_entity(), tokens, no, raw))
            continue
        if depth == 0:
            if not builder.section(name):
                raise ParseError(source, no, f"unknown section {name!r} in config of {table.pool}", raw)
            continue
        out.append((builder.add(name, depth), tokens, no, raw))
    return out


def parse_status(text: str, source: str = "zpool status") -> Topology:
    """Every pool's tree from ``zpool status [POOL...]``.

    The config table is read by indentation: the pool at depth 0, section
    headings (``logs``, ``cache``, ``spares``, ``special``, ``dedup``) at
    depth 0 too, vdevs below.  Text after the error counters (``(resilvering)``,
    ``was /dev/...``) is ignored.
    """
    topo = Topology()
    for table in _pool_tables(text, source):
        for entity, _tokens, _no, _raw in _walk(table, source):
            topo.add(entity)
    return topo


# --- health: states, error counters, scrub/resilver ------------------------------------------------------------

#: the states a config row's STATE column can hold (``zpool status`` and ``-j``; spares: AVAIL, INUSE)
STATES = ("ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "UNAVAIL", "REMOVED", "SUSPENDED", "AVAIL", "INUSE")
_COUNT_COLUMNS = {"READ": "read_errors", "WRITE": "write_errors", "CKSUM": "checksum_errors", "SLOW": "slow_ios"}


@dataclass
class VdevHealth:
    """One row of the config: what it is, its state, its error counters (those the output shows), trailing text."""

    entity: Entity
    state: str
    counts: Dict[str, float] = field(default_factory=dict)
    note: str = ""


@dataclass
class ScanStatus:
    """The pool's last or current scrub/resilver. ``function``/``state`` as the kernel names them (upper case)."""

    function: str = "NONE"  # NONE, SCRUB, RESILVER, ERRORSCRUB
    state: str = "NONE"  # NONE, SCANNING, FINISHED, CANCELED
    #: scan_* metrics the output gave (scan_examined_bytes, scan_progress_pct, scan_end_time, ...)
    values: Dict[str, float] = field(default_factory=dict)


@dataclass
class PoolHealth:
    """One pool as ``zpool status`` shows it: its state, every config row (the pool's first), the scan."""

    pool: str
    state: str
    vdevs: List[VdevHealth]
    scan: ScanStatus = field(default_factory=ScanStatus)
    data_errors: Optional[float] = None


def _ctime(text: str) -> Optional[float]:
    """``Sun Jun 19 22:54:38 2016`` (ctime, local time) -> epoch seconds; None if it is not such a date."""
    try:
        return time.mktime(time.strptime(" ".join(text.split()[:5]), "%a %b %d %H:%M:%S %Y"))
    except (ValueError, OverflowError):
        return None


_SIZE = r"(\d+(?:\.\d+)?[KMGTPE]?B?)"
_SCAN_PATTERNS = [
    # OpenZFS (scan:) -- cmd/zpool/zpool_main.c print_scan_scrub_resilver_status
    (re.compile(r"^none requested"), "NONE", "NONE"),
    (re.compile(r"^(?:thorough )?scrub repaired " + _SIZE + r" in .*? with (\d+) errors on (.+)$"), "SCRUB",
     "FINISHED"),
    (re.compile(r"^resilvered " + _SIZE + r" in .*? with (\d+) errors on (.+)$"), "RESILVER", "FINISHED"),
    (re.compile(r"^(?:thorough )?scrub canceled on (.+)$"), "SCRUB", "CANCELED"),
    (re.compile(r"^resilver canceled on (.+)$"), "RESILVER", "CANCELED"),
    (re.compile(r"^(?:thorough )?scrub (?:in progress|paused) since (.+)$"), "SCRUB", "SCANNING"),
    (re.compile(r"^resilver in progress since (.+)$"), "RESILVER", "SCANNING"),
    # OpenSolaris-era (scrub:), zfs-fuse
    (re.compile(r"^scrub in progress for .*?, ([\d.]+)% done"), "SCRUB", "SCANNING"),
    (re.compile(r"^resilver in progress for .*?, ([\d.]+)% done"), "RESILVER", "SCANNING"),
    (re.compile(r"^scrub completed after .*? with (\d+) errors on (.+)$"), "SCRUB", "FINISHED"),
    (re.compile(r"^resilver completed after .*? with (\d+) errors on (.+)$"), "RESILVER", "FINISHED"),
    (re.compile(r"^scrub stopped after .*? with (\d+) errors on (.+)$"), "SCRUB", "CANCELED"),
]
_PROGRESS = [
    # 2.2+: "A / B scanned at R/s, C / D issued at R/s"
    (re.compile(r"^" + _SIZE + r" / " + _SIZE + r" scanned(?: at \S+)?, " + _SIZE + r" / " + _SIZE + r" issued"),
     ("scan_examined_bytes", "scan_to_examine_bytes", "scan_issued_bytes", None)),
    # 0.8 - 2.1: "A scanned at R/s, C issued at R/s, T total"
    (re.compile(r"^" + _SIZE + r" scanned(?: at \S+)?, " + _SIZE + r" issued(?: at \S+)?, " + _SIZE + r" total"),
     ("scan_examined_bytes", "scan_issued_bytes", "scan_to_examine_bytes")),
    # 0.6 - 0.7: "A scanned out of T at R/s"
    (re.compile(r"^" + _SIZE + r" scanned out of " + _SIZE), ("scan_examined_bytes", "scan_to_examine_bytes")),
    # "P repaired|resilvered, X% done"
    (re.compile(r"^" + _SIZE + r" (?:repaired|resilvered), ([\d.]+)% done"), ("scan_processed_bytes", "pct")),
]


def parse_scan(text: str) -> ScanStatus:
    """The ``scan:`` (OpenZFS) or ``scrub:`` (OpenSolaris-era) block, its lines joined by newlines.

    What a line does not match is left out (a newer wording), never guessed.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    scan = ScanStatus()
    if not lines:
        return scan
    first = lines[0]
    for rx, func, state in _SCAN_PATTERNS:
        m = rx.match(first)
        if not m:
            continue
        scan.function, scan.state = func, state
        groups = m.groups()
        if state == "FINISHED" and func in ("SCRUB", "RESILVER") and first.startswith(("scrub repaired",
                                                                                        "thorough", "resilvered")):
            scan.values["scan_processed_bytes"] = parse_size(groups[0])
            scan.values["scan_errors"] = float(groups[1])
            end = _ctime(groups[2])
        elif state in ("FINISHED", "CANCELED") and len(groups) == 2:  # "... after T with N errors on DATE"
            scan.values["scan_errors"] = float(groups[0])
            end = _ctime(groups[1])
        elif state == "CANCELED":
            end = _ctime(groups[0])
        else:
            end = None
        if end is not None:
            scan.values["scan_end_time"] = end
        if state == "SCANNING" and groups:
            if "since" in first:
                start = _ctime(groups[0])
                if start is not None:
                    scan.values["scan_start_time"] = start
            else:
                scan.values["scan_progress_pct"] = float(groups[0])
        break
    for line in lines[1:]:
        if line.startswith(("scrub started on", "thorough scrub started on")):
            start = _ctime(line.split(" on ", 1)[1])
            if start is not None:
                scan.values["scan_start_time"] = start
            continue
        for rx, names in _PROGRESS:
            m = rx.match(line)
            if not m:
                continue
            for name, raw in zip(names, m.groups()):
                if name == "pct":
                    scan.values["scan_progress_pct"] = float(raw)
                elif name is not None:
                    scan.values[name] = parse_size(raw)
            break
    return scan


_KEYWORD = re.compile(r"^\s*([a-z]+):(?:\s|$)")


def _blocks(lines: Sequence[str]) -> Dict[str, str]:
    """The ``keyword: text`` blocks of one pool's header (``state``, ``scan``/``scrub``, ``errors``, ...)."""
    out: Dict[str, str] = {}
    key: Optional[str] = None
    for line in lines:
        m = _KEYWORD.match(line)
        if m:
            key = m.group(1)
            out[key] = line[m.end():].strip()
        elif key is not None and line.strip():
            out[key] += "\n" + line.strip()
    return out


def _data_errors(block: Optional[str]) -> Optional[float]:
    if block is None or not block.strip():
        return None
    first = block.splitlines()[0]
    if first.startswith("No known data errors"):
        return 0.0
    m = re.match(r"^(\d+) data errors", first)
    if m:
        return float(m.group(1))
    if first.startswith("Permanent errors have been detected"):
        return float(len(block.splitlines()) - 1)
    return None


def parse_health(text: str, source: str = "zpool status") -> List[PoolHealth]:
    """Every pool's state, config rows with their states and error counters, scan and data errors, from the text.

    The counter columns are taken from the header (``READ WRITE CKSUM``, and
    ``SLOW`` with ``-s``); human counts (``1.2K``) and ``-p`` exact ones read
    alike. A row without them (a spare ``AVAIL``) has only its state.
    """
    out: List[PoolHealth] = []
    lines = text.splitlines()
    for table in _pool_tables(text, source):
        columns = table.header.split()[2:]
        head = _blocks(lines[table.first:table.end - len(table.rows) - 1])
        tail_end = len(lines)
        for nxt in range(table.end, len(lines)):
            if re.match(r"^\s*pool: ", lines[nxt]):
                tail_end = nxt
                break
        tail = _blocks(lines[table.end:tail_end])
        rows: List[VdevHealth] = []
        for entity, tokens, no, raw in _walk(table, source):
            state = tokens[1] if len(tokens) > 1 else ""
            if state not in STATES:
                raise ParseError(source, no, f"unknown state {state!r}", raw)
            counts: Dict[str, float] = {}
            rest = tokens[2:]
            for col in columns:
                if not rest or col not in _COUNT_COLUMNS:
                    break
                try:
                    counts[_COUNT_COLUMNS[col]] = parse_count(rest[0])
                except ValueError:
                    break
                rest = rest[1:]
            rows.append(VdevHealth(entity, state, counts, " ".join(rest)))
        scan_text = head.get("scan", head.get("scrub"))
        pool_state = (head.get("state") or rows[0].state).split()[0]
        if pool_state not in STATES:
            raise ParseError(source, table.first + 2, f"unknown pool state {pool_state!r}")
        out.append(PoolHealth(table.pool, pool_state, rows,
                              parse_scan(scan_text) if scan_text is not None else ScanStatus(),
                              _data_errors(tail.get("errors"))))
    return out


def status_for(pool: str, candidates: Sequence[Tuple[str, str]]) -> Optional[Tuple[str, Topology]]:
    """The first ``zpool status`` text among ``candidates`` that lists ``pool``: (its name, its tree)."""
    for name, text in candidates:
        if "pool:" not in text or "NAME" not in text:
            continue
        try:
            topo = parse_status(text, name)
        except ParseError:
            continue
        if pool in topo.pools:
            return name, topo
    return None


def run_zpool(argv: Sequence[str], timeout: float = 15.0) -> str:
    """stdout of a one-shot zpool command. Raises OSError (missing, failing or hanging command) with its message."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise OSError(f"`{' '.join(argv)}` did not answer within {timeout:.0f}s") from None
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise OSError(f"`{' '.join(argv)}` failed: {err[-1] if err else f'exit status {proc.returncode}'}")
    return proc.stdout


def read_topology(pools: Sequence[str] = (), zpool: str = "zpool", timeout: float = 15.0) -> Topology:
    """Run ``zpool status [POOL...]`` and parse it. Raises OSError (command failed) or ParseError."""
    argv = [zpool, "status", *pools]
    return parse_status(run_zpool(argv, timeout), source=" ".join(argv))
