#!/bin/bash
# One boot of bench/bench_guest_warmup.py, inside the OpenZFS guest (the runner made or imported the pool and
# adopted it as a lab). Everything it keeps goes to the output share ($ZFSMON_OUT).
#
#   guest_warmup.sh first   SCALE CONTROL_S WARM_S     load the database; a control soak without the cache
#                                                      device; then the warm-up from cold in `zfsmon top`
#   guest_warmup.sh restart NAME SECONDS               after a reboot: the same soak resumed in `zfsmon top`,
#                                                      appending to the recording the boot before left
#
# Each soak is pgbench's select-only loop (-S -c 2 -j 2, -T 58 runs), recorded with every source every 2 s.
# A boot ends with the soak stopped by SIGTERM-like `q` in the middle of a run and the recording copied out;
# then the host powers the guest off and boots it again on the same disks.
set -u
OUT=${ZFSMON_OUT:?}
POOL=${ZFSMON_POOL:?}
HERE=$(dirname "${BASH_SOURCE[0]}")
REC=/var/tmp/soak.zfsmon  # SQLite on the guest's own disk (9p may refuse its WAL's shared mmap)
PGB=(-c 2 -j 2 -S)
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 ))s] $*"; echo "$(( $(date +%s) - T0 ))	$*" >> "$OUT/steps-$PHASE.tsv"; }
arc() { cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats-$PHASE.$1"; }
cache_dev=/dev/disk/by-id/virtio-cache0
PHASE=${1:?first or restart}
case "$PHASE" in
first)
    SCALE=${2:?scale}; CONTROL_S=${3:?control seconds}; WARM_S=${4:?warm-up seconds}
    step "versions"
    { zfs version; uname -r; } > "$OUT/versions.txt"
    step "control: the cache device removed; load the database (pgbench -i -s $SCALE), then $CONTROL_S s from cold"
    zpool remove "$POOL" "$cache_dev"
    zfsmon lab adopt --pool "$POOL" --dataset db
    arc control-before
    zfsmon soak --lab "$POOL" --init-scale "$SCALE" --cold --duration "${CONTROL_S}s" --interval 2 \
        --out /var/tmp/control.zfsmon --quiet -- "${PGB[@]}" > "$OUT/control.log" 2>&1
    echo "control exit $?" >> "$OUT/control.log"
    arc control-after
    cp /var/tmp/control.zfsmon "$OUT/control.zfsmon"
    cp /var/tmp/control*.pgbench.log "$OUT/" 2>/dev/null
    step "warm-up: the cache device added back; $WARM_S s from cold (ARC and L2ARC empty) in zfsmon top"
    zpool add -f "$POOL" cache "$cache_dev"
    zfsmon lab adopt --pool "$POOL" --dataset db
    zpool status "$POOL" > "$OUT/zpool-status-first.txt"
    arc warm-before
    bash "$HERE/guest_top_soak.sh" "$OUT/screens-first" "$WARM_S" 30 -- --soak --lab "$POOL" --cold --interval 2 \
        --record "$REC" -- "${PGB[@]}" > "$OUT/top-first.log" 2>&1
    echo "top exit $?" >> "$OUT/top-first.log"
    arc warm-after
    ;;
restart)
    NAME=${2:?name}; SECONDS_S=${3:?seconds}
    PHASE=$NAME
    { grep -H . /sys/module/zfs/parameters/l2arc_rebuild_enabled; zfs version; } > "$OUT/versions-$NAME.txt"
    step "import the pool from the disks of the boot before, the L2ARC's statistics read every 0.5 s meanwhile"
    # the rebuild runs in the background after the import, for seconds: read beside it, as ground truth for
    # what the recording (which starts with zfsmon top, tens of seconds later under emulation) can tell
    ( while :; do
          printf '%s %s
' "$(date +%s.%N)" "$(awk '$1 ~ /^l2_(size|asize|rebuild_success|rebuild_bufs|rebuild_size|rebuild_asize|rebuild_log_blks)$/ {printf "%s=%s ", $1, $3}' /proc/spl/kstat/zfs/arcstats)"
          sleep 0.5
      done > "$OUT/rebuild-poll-$NAME.txt" ) &
    POLL=$!
    date +%s.%N > "$OUT/import-start-$NAME.txt"
    zpool import -f -d /dev/disk/by-id "$POOL"
    date +%s.%N > "$OUT/import-end-$NAME.txt"
    zfsmon lab adopt --pool "$POOL" --dataset db
    step "the recording of the boot before resumed: $SECONDS_S s in zfsmon top"
    cp "$OUT/soak.zfsmon" "$REC"
    arc start
    bash "$HERE/guest_top_soak.sh" "$OUT/screens-$NAME" "$SECONDS_S" 30 -- --soak --lab "$POOL" --interval 2 \
        --record "$REC" -- "${PGB[@]}" > "$OUT/top-$NAME.log" 2>&1
    echo "top exit $?" >> "$OUT/top-$NAME.log"
    arc end
    kill "$POLL" 2>/dev/null
    zpool history -il "$POOL" > "$OUT/zpool-history-$NAME.txt" 2>&1
    cat /proc/spl/kstat/zfs/dbgmsg > "$OUT/dbgmsg-$NAME.txt" 2>&1
    ;;
*)
    echo "guest_warmup.sh: first or restart, not $PHASE" >&2; exit 2 ;;
esac
step "the recording out; shutting down in the middle of the soak's life (the next boot resumes it)"
zpool status "$POOL" > "$OUT/zpool-status-$PHASE.txt"
cp "$REC" "$OUT/soak.zfsmon"
cp "$REC" "$OUT/soak-after-$PHASE.zfsmon"
cp /var/tmp/soak*.pgbench.log "$OUT/" 2>/dev/null
step "done"
