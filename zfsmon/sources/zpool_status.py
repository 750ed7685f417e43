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
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.model import SECTION_ROLES, Entity, Kind, ParseError, Role

__all__ = ["TreeBuilder", "Topology", "parse_status", "read_topology", "run_zpool", "indent_depth"]

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


def parse_status(text: str, source: str = "zpool status") -> Topology:
    """Every pool's tree from ``zpool status [POOL...]``.

    The config table is read by indentation: the pool at depth 0, section
    headings (``logs``, ``cache``, ``spares``, ``special``, ``dedup``) at
    depth 0 too, vdevs below.  Text after the error counters (``(resilvering)``,
    ``was /dev/...``) is ignored.
    """
    topo = Topology()
    lines = text.splitlines()
    i = 0
    found = False
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
        builder = TreeBuilder(pool)
        first = True
        for no, raw in rows:
            expanded = raw.expandtabs(8)
            ind = len(expanded) - len(expanded.lstrip())
            if ind < base:
                raise ParseError(source, no, "row is left of the NAME column", raw)
            depth = (ind - base) // 2
            name = expanded.split()[0]
            if first:
                if depth != 0 or name != pool:
                    raise ParseError(source, no, f"expected the pool {pool} as first config row", raw)
                topo.add(builder.pool_entity())
                first = False
                continue
            if depth == 0:
                if not builder.section(name):
                    raise ParseError(source, no, f"unknown section {name!r} in config of {pool}", raw)
                continue
            topo.add(builder.add(name, depth))
        found = True
        i = k
    if not found:
        raise ParseError(source, None, "no `pool:` in zpool status output")
    return topo


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
