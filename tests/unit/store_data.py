"""Records for store tests: a small pool whose topology changes, ARC counters with a reset, events.

Hand-made on purpose: the store must return exactly what it was given, so the
input has edge values (zero, floats with decimals, 64-bit counters, negatives)
and every kind of topology change the recorder must notice.
"""

from __future__ import annotations

from typing import List

from zfsmon.model import Entity, Event, EventKind, Kind, Record, Role, Sample

T0 = 1_700_000_000.0
POOL = "tank"
SRC = "zpool iostat"


def _vdev(name: str, role: Role = Role.DATA) -> Entity:
    return Entity(Kind.VDEV, name, POOL, role, POOL)


def _leaf(name: str, parent: str, role: Role = Role.DATA) -> Entity:
    return Entity(Kind.LEAF, name, POOL, role, parent)


def tick(i: int, interval: float = 1.0) -> List[Record]:
    """The records of reading ``i``.

    Topology: cache device sdf disappears at i=5 and comes back at i=8; log device sde becomes a data vdev at
    i=10 (a role change). ARC ``hits`` goes backwards at i=12 (a counter reset). An error at 3, a mark at 4.
    """
    ts = T0 + i * interval
    out: List[Record] = []
    iv = interval
    out.append(Sample(ts, Entity(Kind.POOL, POOL, POOL), {"alloc": 483 * 2 ** 30, "free": 1.34 * 2 ** 40,
                                                    "read_ops": 143 + i, "write_ops": 4546.56,
                                                    "read_bw": 1174405.12, "write_bw": 72561459.2 + i},
                      interval=iv, since_boot=(i == 0), source=SRC))
    tree = [(_vdev("mirror-0"), None), (_leaf("sda", "mirror-0"), None), (_leaf("sdb", "mirror-0"), None),
            (_vdev("mirror-1"), None), (_leaf("sdc", "mirror-1"), None), (_leaf("sdd", "mirror-1"), None)]
    tree.append((_vdev("sde", Role.DATA if i >= 10 else Role.LOG), None))
    if not 5 <= i < 8:
        tree.append((_vdev("sdf", Role.CACHE), None))
    for n, (ent, _) in enumerate(tree):
        out.append(Sample(ts, ent, {"read_ops": (i * 7 + n) % 13, "write_ops": i * n, "read_bw": 559 * 1024.0 + i,
                                    "write_bw": 0.0 if n % 2 else 32.5 * 2 ** 20},
                          interval=iv, since_boot=(i == 0), source=SRC))
    hits = 10_000 + 250 * i if i < 12 else 7 + i
    out.append(Sample(ts, Entity(Kind.ARC, "arc"), {"hits": hits, "misses": 2 ** 63 + i, "size": 64 * 2 ** 20 - i,
                                                    "c": 1 / 3 + i}, source="arcstats"))
    out.append(Sample(ts, Entity(Kind.WORKLOAD, "pgbench"), {"tps": 1234.5678 + i, "lag_ms": -0.25},
                      interval=iv, source="pgbench"))
    if i == 3:
        out.append(Event(ts, EventKind.ERROR, "=cmd|' /C calc'!A0", source="zpool iostat"))
    if i == 4:
        out.append(Event(ts, EventKind.MARK, "started VACUUM", source="user", data={"who": "test"}))
    return out


def records(n: int = 15, interval: float = 1.0) -> List[List[Record]]:
    return [tick(i, interval) for i in range(n)]


def samples_of(batches: List[List[Record]]) -> List[Sample]:
    return [r for b in batches for r in b if isinstance(r, Sample)]
