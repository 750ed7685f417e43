"""The guest's 9p shares: mounted again when their mount at boot lost the race with the virtio device.

Seen on a loaded host: systemd mounted both shares early and in parallel, one found no 9p channel yet ("9pnet_virtio:
no channels available for device zfsmon_out"), and the runner's unit, which required that mount, never ran; the
host waited for its 45-minute timeout. The unit now runs zfsmon-mount-shares first. Here the script runs for real,
with ``mount``, ``mountpoint``, ``sleep`` and ``systemctl`` stood in for by small scripts on PATH.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from zfsmon.lab.guest import inguest


def _fake_bin(tmp_path: Path, mounts_needed: int) -> dict:
    """A PATH where ``mount`` succeeds from its ``mounts_needed``-th call on (0: never)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    scripts = {
        "mount": f"""#!/bin/sh
n=$(cat {state}/calls 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {state}/calls
[ {mounts_needed} -gt 0 ] && [ $n -ge {mounts_needed} ] && touch "{state}/$(basename "$1")" && exit 0
echo "mount: no channels available" >&2; exit 32
""",
        "mountpoint": f"""#!/bin/sh
[ -e "{state}/$(basename "$2")" ]
""",
        "sleep": "#!/bin/sh\nexit 0\n",
        "systemctl": f"#!/bin/sh\necho \"$*\" >> {state}/systemctl\n",
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _run(tmp_path: Path, mounts_needed: int) -> subprocess.CompletedProcess:
    script = tmp_path / "zfsmon-mount-shares"
    script.write_text(inguest.MOUNT_SHARES_TEXT)
    return subprocess.run(["sh", str(script)], env=_fake_bin(tmp_path, mounts_needed), capture_output=True,
                          text=True, timeout=60)


def test_the_runner_unit_mounts_the_shares_itself_instead_of_requiring_the_boot_mounts():
    files = inguest.files(256)
    assert files[inguest.MOUNT_SHARES] == inguest.MOUNT_SHARES_TEXT and inguest.MOUNT_SHARES in inguest.EXECUTABLE
    unit = files[f"/etc/systemd/system/{inguest.UNIT}"]
    assert f"ExecStartPre={inguest.MOUNT_SHARES}\n" in unit
    assert "RequiresMountsFor" not in unit  # a failed boot mount must not keep the runner from starting


def test_a_share_that_mounts_late_is_mounted_and_the_run_goes_on(tmp_path):
    got = _run(tmp_path, mounts_needed=5)  # the first four mount calls fail, as before the 9p channel exists
    assert got.returncode == 0, got.stderr
    assert "mounted at the" in got.stdout
    assert not (tmp_path / "state" / "systemctl").exists()


def test_shares_that_never_mount_power_the_guest_off_so_the_host_need_not_wait(tmp_path):
    got = _run(tmp_path, mounts_needed=0)
    assert got.returncode == 1
    assert "did not mount" in got.stderr
    assert int((tmp_path / "state" / "calls").read_text()) == 2 * 120  # two shares, two minutes of tries
    assert (tmp_path / "state" / "systemctl").read_text().split() == ["poweroff", "--no-block"]
