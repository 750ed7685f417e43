"""What a lab is made of: its settings and, once built, its state (what `up` created).

The state file is the lab's memory: `down` removes exactly what it lists, so
it is written after every step of `up`, and a crash half-way leaves a state
that `down` (or the next `up`) can finish cleaning.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from zfsmon.defaults import LAB_POOL
from zfsmon.model import Role

RUN_DIR = Path(os.environ.get("ZFSMON_RUN_DIR", "/run/zfsmon"))
LOCK_FILE = RUN_DIR / "lab.lock"
DAEMON_FILE = RUN_DIR / "zfs-fuse.json"
KSTAT_DIR = Path("/zfs-kstat")
DEFAULT_POOL = LAB_POOL
MiB = 1024 * 1024


@dataclass
class LabConfig:
    pool: str = DEFAULT_POOL
    directory: Optional[str] = None  # backing files; default /var/tmp/zfsmon-lab/POOL
    data_mb: int = 512  # each of the four data vdevs (2 mirrors x 2)
    log_mb: int = 256
    cache_mb: int = 1536
    arc_mb: int = 64  # zfs-fuse -m, only when this lab starts the daemon
    slow_data_iops: Optional[int] = None  # blkio throttle on the data loop devices
    dataset: str = "db"
    recordsize: str = "8k"  # PostgreSQL's page size

    def backing_dir(self) -> Path:
        return Path(self.directory) if self.directory else Path("/var/tmp/zfsmon-lab") / self.pool


@dataclass
class Device:
    role: str  # Role value
    file: str  # sparse backing file
    loop: Optional[str] = None  # /dev/loopN once attached
    parent: str = ""  # mirror-N for data leaves


@dataclass
class LabState:
    """Everything one `up` created, in creation order."""

    pool: str
    config: Dict[str, Any]  # the LabConfig's fields as saved (JSON's values)
    devices: List[Device] = field(default_factory=list)
    dir_created: bool = False
    pool_created: bool = False
    cgroup_rules: List[str] = field(default_factory=list)  # "MAJ:MIN" throttled by this lab
    complete: bool = False

    @property
    def adopted(self) -> bool:
        """An existing pool registered with ``adopt``: zfsmon created none of it."""
        return bool(self.config.get("adopted"))

    @staticmethod
    def path_for(pool: str) -> Path:
        return RUN_DIR / f"lab-{pool}.json"

    def save(self) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        p = self.path_for(self.pool)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        os.replace(tmp, p)

    @classmethod
    def load(cls, pool: str) -> Optional[LabState]:
        p = cls.path_for(pool)
        try:
            raw = json.loads(p.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"lab state {p} is unreadable ({exc}); remove it after checking by hand") from exc
        raw["devices"] = [Device(**d) for d in raw.get("devices", [])]
        return cls(**raw)

    def remove(self) -> None:
        try:
            self.path_for(self.pool).unlink()
        except FileNotFoundError:
            pass

    def roles_text(self) -> str:
        """``4 data, 1 log, 1 cache``: its devices counted by role, for messages."""
        return ", ".join(f"{len(v)} {k}" for k, v in self.by_role().items())

    def by_role(self) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for d in self.devices:
            out.setdefault(d.role, []).append(d.loop or d.file)
        return out


def all_states() -> List[LabState]:
    if not RUN_DIR.is_dir():
        return []
    out = []
    for p in sorted(RUN_DIR.glob("lab-*.json")):
        st = LabState.load(p.stem[len("lab-"):])
        if st is not None:
            out.append(st)
    return out


@dataclass(frozen=True)
class LabInfo:
    """What users (and tests) of a built lab need to know."""

    pool: str
    dataset: str
    mountpoint: str
    devices: Dict[str, List[str]]  # role -> device paths
    kstat_dir: str
    slow_data_iops: Optional[int]

    def role_of(self, path: str) -> Optional[Role]:
        for role, paths in self.devices.items():
            if path in paths or os.path.basename(path) in {os.path.basename(p) for p in paths}:
                return Role(role)
        return None
