#!/bin/bash
# One boot of bench/bench_guest_warmup.py, inside the OpenZFS guest (the runner made or imported the pool and
# adopted it as a lab). Everything it keeps goes to the output share ($ZFSMON_OUT).
#
#   guest_warmup.sh load    SCALE                      the database loaded (pgbench -i -s SCALE) on data disks
#                                                      that are not throttled yet (QEMU's limit is set per boot)
#   guest_warmup.sh first   CONTROL_S WARM_S           a control soak without the cache device; then the
#                                                      warm-up from cold in `zfsmon top`
#   guest_warmup.sh restart NAME SECONDS               after a reboot: the same soak resumed in `zfsmon top`,
#                                                      appending to the recording the boot before left
#   guest_warmup.sh fio SIZE SECONDS DEPTH             the classic L2ARC test on a fresh pool: 8 KiB random
#                                                      reads at DEPTH over a SIZE file, from cold
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
PHASE=${1:?load, first, restart or fio}
case "$PHASE" in
load)
    SCALE=${2:?scale}
    step "versions"
    { zfs version; uname -r; } > "$OUT/versions.txt"
    step "load the database (pgbench -i -s $SCALE) at the disks' full speed, then a 20 s soak to see it answer"
    zfsmon soak --lab "$POOL" --init-scale "$SCALE" --duration 20s --interval 2 --out /var/tmp/load.zfsmon \
        -- "${PGB[@]}" > "$OUT/load.log" 2>&1
    echo "load exit $?" >> "$OUT/load.log"
    zpool list -v "$POOL" > "$OUT/zpool-list-load.txt"
    zfs get -H compressratio,used,logicalused "$POOL/db" > "$OUT/zfs-get-load.txt"
    step "done"
    exit 0
    ;;
first)
    CONTROL_S=${2:?control seconds}; WARM_S=${3:?warm-up seconds}
    step "versions"
    { zfs version; uname -r; } > "$OUT/versions.txt"
    # the warm-up's cache device is always a new one (removed, added back): its log blocks, which the persistent
    # L2ARC rebuilds from, are written as this boot's module parameters say
    zpool remove "$POOL" "$cache_dev"
    zfsmon lab adopt --pool "$POOL" --dataset db
    if [ "$CONTROL_S" -gt 0 ]; then
        step "control: no cache device; $CONTROL_S s from cold (data disks throttled from this boot on)"
        arc control-before
        zfsmon soak --lab "$POOL" --cold --duration "${CONTROL_S}s" --interval 2 \
            --out /var/tmp/control.zfsmon --quiet -- "${PGB[@]}" > "$OUT/control.log" 2>&1
        echo "control exit $?" >> "$OUT/control.log"
        arc control-after
        cp /var/tmp/control.zfsmon "$OUT/control.zfsmon"
        cp /var/tmp/control*.pgbench.log "$OUT/" 2>/dev/null
    fi
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
fio)
    SIZE=${2:?size}; SECONDS_S=${3:?seconds}; DEPTH=${4:?depth}
    MNT=/$POOL/db
    step "fio: lay out a $SIZE file (128 KiB writes), then empty the ARC and L2ARC"
    fio --name=layout --directory="$MNT" --filename=zfsmon-fio.randread --size="$SIZE" --rw=write --bs=128k \
        --end_fsync=1 --output="$OUT/fio-layout.txt"
    zfsmon lab cold --pool "$POOL"
    arc fio-before
    step "fio: 8 KiB random reads at $DEPTH outstanding for $SECONDS_S s, recorded every 2 s"
    zfsmon soak --fio-preset randread --fio-dir "$MNT" --fio-size "$SIZE" --fio-runtime "$SECONDS_S" \
        --fio-depth "$DEPTH" --interval 2 --out /var/tmp/fio.zfsmon --quiet > "$OUT/fio-soak.log" 2>&1
    echo "fio soak exit $?" >> "$OUT/fio-soak.log"
    arc fio-after
    cp /var/tmp/fio.zfsmon "$OUT/fio.zfsmon"
    cp /var/tmp/fio*.json "$OUT/" 2>/dev/null
    zpool status "$POOL" > "$OUT/zpool-status-fio.txt"
    step "done"
    exit 0
    ;;
*)
    echo "guest_warmup.sh: load, first, restart or fio, not $PHASE" >&2; exit 2 ;;
esac
step "the recording out; shutting down in the middle of the soak's life (the next boot resumes it)"
zpool status "$POOL" > "$OUT/zpool-status-$PHASE.txt"
cp "$REC" "$OUT/soak.zfsmon"
cp "$REC" "$OUT/soak-after-$PHASE.zfsmon"
cp /var/tmp/soak*.pgbench.log "$OUT/" 2>/dev/null
step "done"
