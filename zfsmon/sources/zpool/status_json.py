"""``zpool status -j`` (OpenZFS 2.3+) -> the same :class:`~zfsmon.sources.zpool.status.PoolHealth` as the text.

The collector asks for ``zpool status -j --json-flat-vdevs --json-int POOL``:
every vdev keyed by name with its ``parent``, numbers as integers (bytes,
counts, epoch seconds). The nested form (plain ``-j``: the tree under the root
vdev, ``logs``/``l2cache``/``spares``/``special``/``dedup`` as sections) and
human-readable strings (``"102M"``) read as well. Roles come from the
top-level vdev's ``class`` (``normal``, ``log``, ``l2cache``, ``spare``,
``special``, ``dedup``); a leaf takes its top-level vdev's role, as in the text.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Mapping, Optional

from zfsmon.model import Entity, Kind, ParseError, Role
from zfsmon.sources.zpool.status import STATES, PoolHealth, ScanStatus, VdevHealth
from zfsmon.units import parse_count, parse_size

_CLASS_ROLES = {"normal": Role.DATA, "log": Role.LOG, "l2cache": Role.CACHE, "spare": Role.SPARE,
                "special": Role.SPECIAL, "dedup": Role.DEDUP}
#: the nested form's sections besides ``vdevs`` and the role they hold
_SECTIONS = {"logs": Role.LOG, "l2cache": Role.CACHE, "spares": Role.SPARE, "special": Role.SPECIAL,
             "dedup": Role.DEDUP}
_ERRORS = {"read_errors": "read_errors", "write_errors": "write_errors", "checksum_errors": "checksum_errors",
           "slow_ios": "slow_ios"}
_SCAN_BYTES = {"examined": "scan_examined_bytes", "issued": "scan_issued_bytes", "to_examine": "scan_to_examine_bytes",
               "processed": "scan_processed_bytes"}


def _num(value: Any, size: bool = False) -> float:
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return parse_size(value) if size else parse_count(value)
    raise ValueError(f"not a number: {value!r}")


def _time(value: Any) -> Optional[float]:
    """``--json-int``: epoch seconds; otherwise ctime text (local time). 0 means never."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value > 0 else None
    if isinstance(value, str):
        try:
            return time.mktime(time.strptime(" ".join(value.split()[:5]), "%a %b %d %H:%M:%S %Y"))
        except ValueError:
            return float(value) if value.isdigit() and int(value) > 0 else None
    return None


def _scan(raw: Mapping[str, Any]) -> ScanStatus:
    scan = ScanStatus(str(raw.get("function", "NONE")).upper(), str(raw.get("state", "NONE")).upper())
    for field, metric in _SCAN_BYTES.items():
        if field in raw:
            scan.values[metric] = _num(raw[field], size=True)
    if "errors" in raw:
        scan.values["scan_errors"] = _num(raw["errors"])
    for field, metric in (("start_time", "scan_start_time"), ("end_time", "scan_end_time")):
        t = _time(raw.get(field))
        if t is not None:
            scan.values[metric] = t
    if scan.state == "SCANNING":
        scan.values.pop("scan_end_time", None)  # the previous scan's end, if any
    total = scan.values.get("scan_to_examine_bytes")
    issued = scan.values.get("scan_issued_bytes")
    if scan.state == "FINISHED":
        # issued stays below to_examine when blocks were skipped (the guest's finished scrub: 96 %, a
        # finished resilver: 0.08 %): a finished scan is done
        scan.values["scan_progress_pct"] = 100.0
    elif total and issued is not None:
        scan.values["scan_progress_pct"] = min(100.0, 100.0 * issued / total)
    return scan


class _Tree:
    """Every vdev of one pool by name, with the parent each one has (the field, or where it was nested)."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.nodes: Dict[str, Mapping[str, Any]] = {}
        self.parent: Dict[str, str] = {}
        self.section: Dict[str, Role] = {}
        self.order: List[str] = []

    def add(self, node: Mapping[str, Any], parent: str, role: Optional[Role]) -> None:
        name = str(node.get("name", ""))
        if not name:
            raise ValueError("a vdev without a name")
        if name not in self.nodes:  # --json-flat-vdevs also nests copies under their parents: the first wins
            self.order.append(name)
            self.nodes[name] = node
            self.parent[name] = str(node.get("parent") or parent or "")
            if role is not None:
                self.section[name] = role
        for child in (node.get("vdevs") or {}).values():
            self.add(child, name, role)

    def entity(self, name: str) -> Entity:
        node = self.nodes[name]
        if node.get("vdev_type") == "root" or name == self.pool and not self.parent[name]:
            return Entity(Kind.POOL, self.pool, self.pool)
        top = name
        while self.parent.get(top) and self.parent[top] != self.pool and self.parent[top] in self.nodes \
                and self.nodes[self.parent[top]].get("vdev_type") != "root":
            top = self.parent[top]
        role = self.section.get(top) or _CLASS_ROLES.get(str(self.nodes[top].get("class", "normal")), Role.DATA)
        if top == name:
            return Entity(Kind.VDEV, name, self.pool, role, self.pool)
        return Entity(Kind.LEAF, name, self.pool, role, self.parent[name])


def _pool(name: str, raw: Mapping[str, Any]) -> PoolHealth:
    tree = _Tree(name)
    for node in (raw.get("vdevs") or {}).values():
        tree.add(node, "", None)
    for section, role in _SECTIONS.items():
        for node in (raw.get(section) or {}).values():
            tree.add(node, "", role)
    rows: List[VdevHealth] = []
    for vname in tree.order:
        node = tree.nodes[vname]
        ent = tree.entity(vname)
        state = str(node.get("state", ""))
        if state not in STATES:
            raise ValueError(f"vdev {vname}: unknown state {state!r}")
        counts = {metric: _num(node[field]) for field, metric in _ERRORS.items() if field in node}
        note = str(node.get("aux") or node.get("was") or "")
        row = VdevHealth(ent, state, counts, note)
        if ent.kind == Kind.POOL:
            rows.insert(0, row)
        else:
            rows.append(row)
    if not rows or rows[0].entity.kind != Kind.POOL:
        raise ValueError("no root vdev")
    scan = _scan(raw["scan_stats"]) if isinstance(raw.get("scan_stats"), Mapping) else ScanStatus()
    errs = raw.get("error_count")
    return PoolHealth(name, str(raw.get("state", rows[0].state)), rows, scan,
                      _num(errs) if errs is not None else None)


def parse_health_json(text: str, source: str = "zpool status -j") -> List[PoolHealth]:
    """Every pool of a ``zpool status -j`` document. Raises ParseError for anything else."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(source, getattr(exc, "lineno", None), f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("output_version", {}).get("command") != "zpool status" \
            or not isinstance(doc.get("pools"), dict):
        raise ParseError(source, None, "not `zpool status -j` output (no output_version.command, no pools)")
    out: List[PoolHealth] = []
    for name, raw in doc["pools"].items():
        try:
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            out.append(_pool(str(name), raw))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise ParseError(source, None, f"pool {name}: {exc}") from None
    return out


def looks_like(text: str) -> bool:
    head = text.lstrip()[:200]
    return head.startswith("{") and '"zpool status"' in head
