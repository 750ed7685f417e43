#!/bin/bash
# bcc backend, first real run: all traces in one program, fio under it, raw protocol out
set -u
OUT=${ZFSMON_OUT:?}; MNT=${ZFSMON_MOUNT:?}; POOL=${ZFSMON_POOL:?}
PY=/opt/zfsmon/venv/bin/python3
export PYTHONPATH=/mnt/zfsmon
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }
step "versions"; zfs version; uname -r; $PY -c 'import bcc; print("bcc", bcc.__version__)'
mkdir -p "$OUT/formats"
ls /sys/kernel/tracing/events > "$OUT/tracefs-events.txt"; grep -c "^zfs:" /sys/kernel/tracing/available_events > "$OUT/zfs-tracepoints-count.txt"
for e in zfs/zfs_arc__hit zfs/zfs_arc__miss zfs/zfs_l2arc__write zfs/zfs_l2arc__hit block/block_rq_issue block/block_rq_complete; do
    cp "/sys/kernel/tracing/events/$e/format" "$OUT/formats/$(echo $e | tr / _).format" 2>/dev/null || cp "/sys/kernel/debug/tracing/events/$e/format" "$OUT/formats/$(echo $e | tr / _).format"
done
step "bcc: all traces, 5 s intervals, slow 100 ms"
$PY -m zfsmon.trace.bcc_tool all 5 100 > "$OUT/bcc-all.out" 2> "$OUT/bcc-all.err" &
BCC=$!
FIO=(fio --name=bcc --filename="$MNT/bcc.dat" --size=32M --ioengine=psync --bs=8k --group_reporting)
step "fio layout while bcc compiles"
"${FIO[@]}" --rw=write --bs=128k --end_fsync=1 --output="$OUT/fio-layout.txt"
zpool sync "$POOL"
zpool export "$POOL"; zpool import -d /dev/disk/by-id "$POOL"
for _ in $(seq 1500); do grep -q '^# zfsmon-bcc ready' "$OUT/bcc-all.out" 2>/dev/null && break; kill -0 $BCC 2>/dev/null || break; sleep 1; done
step "bcc ready? $(grep '^# zfsmon-bcc ready' "$OUT/bcc-all.out")"
cat "$OUT/bcc-all.err"
step "bpftrace zfsslower.bt beside bcc (the same probes, for comparison)"
bpftrace -q -B line /mnt/zfsmon/bpftrace/zfsslower.bt 5 100 > "$OUT/bt-zfsslower.out" 2> "$OUT/bt-zfsslower.err" &
BT=$!
for _ in $(seq 240); do grep -q '^interval' "$OUT/bt-zfsslower.out" 2>/dev/null && break; kill -0 $BT 2>/dev/null || break; sleep 1; done
step "bpftrace running? $(grep -c '^interval' "$OUT/bt-zfsslower.out")"
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.before"
cat /proc/spl/kstat/zfs/zil > "$OUT/zil.before"
sleep 7
step "fio randrw 20 s"
"${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --runtime=20 --time_based --output-format=json --output="$OUT/fio.json"
step "a slow op on purpose: one 64 MiB write call"
dd if=/dev/zero of="$MNT/slow.dat" bs=64M count=1 2> "$OUT/dd.txt"
sleep 12
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.after"
cat /proc/spl/kstat/zfs/zil > "$OUT/zil.after"
step "stop bcc"
kill -TERM $BCC; wait $BCC; echo "bcc exit $?" >> "$OUT/bcc-all.err"
kill -INT $BT 2>/dev/null; kill -TERM $BT; wait $BT; echo "bpftrace exit $?" >> "$OUT/bt-zfsslower.err"
step "zfsmon doctor, trace --list, trace --from"
zfsmon doctor > "$OUT/doctor.txt" 2>&1
zfsmon trace --list > "$OUT/trace-list.txt" 2>&1
zfsmon trace --from "$OUT/bcc-all.out" > "$OUT/trace-from.txt" 2>&1
zpool status "$POOL" > "$OUT/zpool-status.txt"; zpool status -L "$POOL" > "$OUT/zpool-status-L.txt"; ls -l /dev/disk/by-id > "$OUT/by-id.txt"
cat /proc/self/mountinfo > "$OUT/mountinfo.txt"
ls -l /dev/zd* /dev/vd* > "$OUT/devs.txt" 2>&1
for f in /sys/class/block/*/dev; do echo "$(basename $(dirname $f)) $(cat $f)"; done > "$OUT/block-devs.txt"
step done
