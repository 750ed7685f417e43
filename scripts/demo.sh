#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine: install what is needed, build the zfs-fuse lab with
# hard-disk-like data vdevs, and watch a pgbench soak warm up the L2ARC in the live dashboard.
# Run as root; press q to stop (the lab is removed afterwards). Knobs: SCALE (pgbench scale, default 40 ~ 600 MB),
# SLOW_IOPS (data vdev IOPS, default 100), ARC_MB (default 32), KEEP_LAB=1 to leave the lab up.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
SCALE=${SCALE:-40}
SLOW_IOPS=${SLOW_IOPS:-100}
ARC_MB=${ARC_MB:-32}
POOL=${POOL:-zlab}

zfsmon lab up --pool "$POOL" --slow-data "$SLOW_IOPS" --arc-mb "$ARC_MB" --data-mb 2048 --cache-mb 1536
if [ "${KEEP_LAB:-0}" != 1 ]; then
    trap 'zfsmon lab down --pool "$POOL"' EXIT
fi
mkdir -p /var/tmp/zfsmon-runs
# A select-only soak (the read path is where caches matter), started cold (--cold empties ARC and L2ARC after
# loading the database): pgbench -S -c 8 -j 2 in 58 s runs with 2 s
# pauses, the classic loop. The dashboard records everything; afterwards: zfsmon analyze / export / report.
zfsmon top --pool "$POOL" --lab "$POOL" --soak --cold --init-scale "$SCALE" \
    --record "/var/tmp/zfsmon-runs/soak-$(date +%Y%m%d-%H%M%S).zfsmon" -- -S -c 8 -j 2
