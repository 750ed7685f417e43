"""What the guest runs at boot: written by the host into the output share for each run.

Kept out of the image (the image only has a oneshot unit that starts
``/mnt/out/guest-runner.sh``), so changing it needs no rebuild. The runner
loads the module (and, given a D runtime, ``guest-dtrace.sh``), sets up the pool (``guest-pool.sh``), runs the command
(``guest-command.sh``) with its output in ``guest-output.log``, writes the
exit code to ``guest-exit``, and powers the guest off unless ``zfsmon.keep=1``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from zfsmon.lab.guest.dtrace import SETUP_SCRIPT as DTRACE_SETUP
from zfsmon.lab.guest.inguest import OUT_MOUNT, SRC_MOUNT, VENV

POOL_SCRIPT = "guest-pool.sh"
#: the zfs module's parameters for this boot (``modprobe zfs`` arguments, after /etc/modprobe.d's)
PARAMS_FILE = "guest-zfs-params"
COMMAND_SCRIPT = "guest-command.sh"
OUTPUT_LOG = "guest-output.log"
EXIT_FILE = "guest-exit"
#: exit codes of the runner itself (the command's own are passed through)
EXIT_NO_MODULE = 125
EXIT_NO_POOL = 124

RUNNER_SH = f"""\
#!/bin/bash
# zfsmon guest runner: module, pool, the host's command, its exit code, power off.
set -u
OUT={OUT_MOUNT}
keep=0
grep -qw zfsmon.keep=1 /proc/cmdline && keep=1
finish() {{
    sync
    # (without D-Bus in the guest systemctl may complain, yet powers off; the fallback is for a real failure)
    [ "$keep" = 1 ] || systemctl poweroff --no-block 2>/dev/null || {{ sleep 30; poweroff -f; }}
}}
trap finish EXIT
exec >>"$OUT/{OUTPUT_LOG}" 2>&1
say() {{ printf '[guest %6.1fs] %s\\n' "$(cut -d' ' -f1 /proc/uptime)" "$*"; }}
say "booted: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {{print int($2/1024)}}' /proc/meminfo) MiB"
modprobe zfs || {{ say "modprobe zfs failed"; echo {EXIT_NO_MODULE} > "$OUT/{EXIT_FILE}"; exit 0; }}
# a D runtime from the host (zfsmon guest run --with-dtrace): it reloads the module with its BTF
if [ -f "$OUT/{DTRACE_SETUP}" ] && ! OUT=$OUT bash "$OUT/{DTRACE_SETUP}"; then
    say "the D runtime's set-up failed"; echo {EXIT_NO_MODULE} > "$OUT/{EXIT_FILE}"; exit 0
fi
# this boot's module parameters: written into /sys (the module is loaded early at boot, by udev or
# zfs-load-module, so modprobe's arguments would come too late); each read back
params=()
[ -f "$OUT/{PARAMS_FILE}" ] && read -r -a params < "$OUT/{PARAMS_FILE}"
for p in "${{params[@]}}"; do
    f=/sys/module/zfs/parameters/${{p%%=*}}
    if [ -w "$f" ] && echo "${{p#*=}}" > "$f"; then
        say "zfs parameter ${{p%%=*}} = $(cat "$f")"
    else
        say "zfs parameter ${{p%%=*}}: cannot be set to ${{p#*=}}"; echo {EXIT_NO_MODULE} > "$OUT/{EXIT_FILE}"; exit 0
    fi
done
say "zfs module $(cat /sys/module/zfs/version), zfs_arc_max $(cat /sys/module/zfs/parameters/zfs_arc_max)"
export ZFSMON_OUT=$OUT ZFSMON_SRC={SRC_MOUNT} PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HOME=/root LANG=C.UTF-8
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# the shared tree is read-only: compile it once into a cache on the guest's disk (importing from source
# costs ~30 s per zfsmon command under emulation); Python reads a prefix cache even when told not to write
export PYTHONPYCACHEPREFIX=/var/tmp/zfsmon-pycache
{VENV}/bin/python3 -m compileall -q -j 0 {SRC_MOUNT}/zfsmon > /dev/null && say "zfsmon compiled into $PYTHONPYCACHEPREFIX"
if [ -f "$OUT/{POOL_SCRIPT}" ]; then
    t=$(cut -d' ' -f1 /proc/uptime)
    say "pool set-up: $OUT/{POOL_SCRIPT}"
    if ! bash -eu "$OUT/{POOL_SCRIPT}"; then
        say "pool set-up failed"; echo {EXIT_NO_POOL} > "$OUT/{EXIT_FILE}"; exit 0
    fi
    say "pool ready in $(awk -v t="$t" '{{printf "%.0f", $1 - t}}' /proc/uptime) s"
fi
cd "$OUT"
say "running {COMMAND_SCRIPT}"
bash "$OUT/{COMMAND_SCRIPT}"
rc=$?
say "command exited $rc"
echo "$rc" > "$OUT/{EXIT_FILE}"
"""


@dataclass(frozen=True)
class Disk:
    """One virtio disk of the pool, named by its serial: /dev/disk/by-id/virtio-SERIAL in the guest."""

    serial: str
    role: str  # data, log, cache; any other (extra): attached, not in the pool (the command uses it)
    size_mib: int

    @property
    def by_id(self) -> str:
        return f"/dev/disk/by-id/virtio-{self.serial}"


def _default_disks() -> Tuple[Disk, ...]:
    return (*(Disk(f"data{i}", "data", 1024) for i in range(4)), Disk("log0", "log", 512),
            Disk("cache0", "cache", 1024))


@dataclass(frozen=True)
class PoolLayout:
    """2 mirrors of data disks + SLOG + L2ARC, and one dataset with PostgreSQL's record size.

    ``slow_data_iops`` limits each data disk's reads per second in QEMU (a hard disk's random reads; writes stay
    fast so a database loads in minutes), log and cache stay fast: what makes an L2ARC warm-up visible.
    ``existing``: the disks hold the pool from an earlier boot, which is imported instead of created (or, with
    ``import_existing`` False, left for the command to import: to watch the import itself, the L2ARC rebuild)."""

    pool: str = "zguest"
    dataset: str = "db"
    recordsize: str = "8k"
    disks: Tuple[Disk, ...] = field(default_factory=_default_disks)
    slow_data_iops: Optional[int] = None
    existing: bool = False
    import_existing: bool = True

    def by_role(self, role: str) -> List[Disk]:
        return [d for d in self.disks if d.role == role]

    def create_argv(self) -> List[str]:
        data = [d.by_id for d in self.by_role("data")]
        argv = ["zpool", "create", "-f", "-o", "ashift=12", self.pool]
        for i in range(0, len(data), 2):
            argv += ["mirror", *data[i:i + 2]]
        if self.by_role("log"):
            argv += ["log", *(d.by_id for d in self.by_role("log"))]
        if self.by_role("cache"):
            argv += ["cache", *(d.by_id for d in self.by_role("cache"))]
        return argv

    def script(self) -> str:
        """The guest's pool set-up: wait for udev's by-id links, create the pool and the dataset."""
        links = " ".join(d.by_id for d in self.disks)
        return "\n".join([
            "udevadm settle -t 60 || true",
            f"for l in {links}; do",
            "    for _ in $(seq 120); do [ -e \"$l\" ] && break; sleep 0.5; done",
            "    [ -e \"$l\" ] || { echo \"missing disk $l\"; exit 1; }",
            "done",
            "set -x",
            *(["exit 0"] if self.existing and not self.import_existing else []),
            *([shlex.join(["zpool", "import", "-f", "-d", "/dev/disk/by-id", self.pool])] if self.existing else
              [shlex.join(self.create_argv()),
               shlex.join(["zfs", "create", "-o", f"recordsize={self.recordsize}", f"{self.pool}/{self.dataset}"])]),
            f"zpool status {self.pool}",
            # a lab of zfsmon's: `soak --lab POOL` runs its PostgreSQL cluster on the dataset, `lab cold` empties
            # the caches
            shlex.join(["zfsmon", "lab", "adopt", "--pool", self.pool, "--dataset", self.dataset]),
            "",
        ])


def command_script(command: str, layout: Optional[PoolLayout]) -> str:
    """The host's command, with the pool's names in the environment."""
    env = [] if layout is None else [f"export ZFSMON_POOL={shlex.quote(layout.pool)}",
                                     f"export ZFSMON_DATASET={shlex.quote(layout.pool + '/' + layout.dataset)}",
                                     f"export ZFSMON_MOUNT={shlex.quote('/' + layout.pool + '/' + layout.dataset)}"]
    return "\n".join(["#!/bin/bash", *env, command, ""])
