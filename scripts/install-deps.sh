#!/usr/bin/env bash
# Install what zfsmon needs on a Debian/Ubuntu machine: system packages (zfs-fuse for the lab,
# PostgreSQL + pgbench for soaks, bpftrace for tracing, tmux for end-to-end tests, prometheus for
# the exporter's tests) and the
# Python package with its test extras. Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: run as root (sudo bash scripts/install-deps.sh)" >&2
    exit 2
fi

PKGS=(zfs-fuse bpftrace postgresql postgresql-contrib tmux util-linux procps kmod
      qemu-system-x86 qemu-utils debootstrap e2fsprogs  # the OpenZFS guest (zfsmon guest)
      prometheus  # server + promtool: the exporter's tests scrape it with a real Prometheus
      fio  # the fio workloads (zfsmon soak --fio) and their tests
      zsh groff-base systemd)  # the zsh completion's syntax check, the man page's groff check, systemd-analyze verify
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # policy-rc.d keeps packages from starting services (zfs-fuse, postgresql) on install:
    # zfsmon starts what it needs itself, as its own processes.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
pip_install() {
    "$PY" -m pip install -q --disable-pip-version-check "$@" 2>/tmp/zfsmon-pip.err && return 0
    if grep -q externally-managed /tmp/zfsmon-pip.err; then
        "$PY" -m pip install -q --disable-pip-version-check --break-system-packages "$@"
    else
        cat /tmp/zfsmon-pip.err >&2
        return 1
    fi
}
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    apt-get install -y -qq python3-pip python3-venv >/dev/null
fi
pip_install -e '.[test]'
echo "install-deps: done ($("$PY" --version), zfs-fuse $(dpkg-query -W -f='${Version}' zfs-fuse), $(bpftrace --version))"
