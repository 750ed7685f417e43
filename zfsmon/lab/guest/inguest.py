"""The files the build writes into the guest's root file system (they are part of the image key).

The guest has no network and nothing to configure: the project tree arrives
read-only by 9p at ``/mnt/zfsmon``, the output share at ``/mnt/out``. With
``zfsmon.run=1`` on the kernel command line a oneshot unit runs the runner
the host put in the output share (zfsmon.lab.guest.runner), which powers off
at its end unless ``zfsmon.keep=1``.
"""

from __future__ import annotations

from typing import Dict

from zfsmon.lab.guest.spec import ROOT_LABEL

SRC_MOUNT = "/mnt/zfsmon"
OUT_MOUNT = "/mnt/out"
SRC_TAG = "zfsmon_src"
OUT_TAG = "zfsmon_out"
VENV = "/opt/zfsmon/venv"
WHEELHOUSE = "/opt/zfsmon/wheels"
UNIT = "zfsmon-guest-run.service"
#: the runner the host writes into the output share for each run (so it changes without a rebuild)
RUNNER_NAME = "guest-runner.sh"

_9P = "trans=virtio,version=9p2000.L,msize=262144,nofail"

FSTAB = f"""\
LABEL={ROOT_LABEL} / ext4 rw,errors=remount-ro 0 1
{SRC_TAG} {SRC_MOUNT} 9p {_9P},ro 0 0
{OUT_TAG} {OUT_MOUNT} 9p {_9P} 0 0
"""

#: mounts the two shares if their mount at boot failed. systemd mounts them in parallel, early, and on a loaded host
#: a mount can come before the virtio device's 9p channel exists ("9pnet_virtio: no channels available for device
#: zfsmon_out"): the fstab line has nofail, the runner's unit, which required the mount, never ran, and the host
#: waited for its timeout (45 min). Tried again for two minutes; then the guest powers off, so the host sees a run
#: without an exit code at once.
MOUNT_SHARES = "/usr/local/sbin/zfsmon-mount-shares"
MOUNT_SHARES_TEXT = f"""\
#!/bin/sh
i=0
while [ "$i" -lt 120 ]; do
    mountpoint -q {SRC_MOUNT} || mount {SRC_MOUNT} 2>/dev/null
    mountpoint -q {OUT_MOUNT} || mount {OUT_MOUNT} 2>/dev/null
    if mountpoint -q {SRC_MOUNT} && mountpoint -q {OUT_MOUNT}; then
        [ "$i" -eq 0 ] || echo "zfsmon: the 9p shares mounted at the $i-th retry"
        exit 0
    fi
    i=$((i + 1))
    sleep 1
done
echo "zfsmon: the 9p shares did not mount" >&2
grep -qw zfsmon.keep=1 /proc/cmdline || systemctl poweroff --no-block
exit 1
"""

UNIT_TEXT = f"""\
[Unit]
Description=zfsmon: run the host's command, then power off
ConditionKernelCommandLine=zfsmon.run=1
After=multi-user.target

[Service]
Type=oneshot
ExecStartPre={MOUNT_SHARES}
ExecStart=/bin/bash {OUT_MOUNT}/{RUNNER_NAME}
TimeoutStartSec=infinity
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""

WRAPPER = f"""\
#!/bin/sh
# zfsmon from the project tree the host shares read-only, with the wheels baked into the image
export PYTHONPATH="{SRC_MOUNT}${{PYTHONPATH:+:$PYTHONPATH}}" PYTHONDONTWRITEBYTECODE=1
exec {VENV}/bin/python3 -m zfsmon "$@"
"""

AUTOLOGIN = """\
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 - $TERM
"""

POLICY_RC = "#!/bin/sh\nexit 101\n"


def files(arc_max_mib: int) -> Dict[str, str]:
    """Path in the guest -> content, written before packages are installed."""
    return {
        "/etc/hostname": "zfsmon-guest\n",
        "/etc/hosts": "127.0.0.1 localhost\n127.0.1.1 zfsmon-guest\n",
        "/etc/fstab": FSTAB,
        "/etc/modprobe.d/zfs.conf": f"options zfs zfs_arc_max={arc_max_mib * 1024 * 1024}\n",
        # zfs-dkms reads it (its dkms.conf PACKAGE_CONFIG): the installed module keeps its debug info, from which
        # a run with a D runtime makes the module's BTF (zfsmon.lab.guest.dtrace); the code loaded is the same
        "/etc/dkms/zfs.conf": "ZFS_DKMS_DISABLE_STRIP=y\n",
        # the Debian package's own cluster is not needed: zfsmon makes throw-away clusters on the pool
        "/etc/postgresql-common/createcluster.d/zfsmon.conf": "create_main_cluster = false\n",
        "/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf": AUTOLOGIN,
        f"/etc/systemd/system/{UNIT}": UNIT_TEXT,
        MOUNT_SHARES: MOUNT_SHARES_TEXT,
        "/usr/local/bin/zfsmon": WRAPPER,
        "/etc/dpkg/dpkg.cfg.d/zfsmon-nodoc": "path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n"
                                            "path-exclude=/usr/share/man/*\npath-exclude=/usr/share/locale/*\n",
    }


EXECUTABLE = ("/usr/local/bin/zfsmon", MOUNT_SHARES)
