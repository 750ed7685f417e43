#!/bin/bash
# The guest tier's one session inside the OpenZFS guest (booted by tests/guest/conftest.py, or by hand:
#   zfsmon guest run --out DIR -- bash /mnt/zfsmon/tests/guest/scenario.sh
# ). The runner made the pool first (2 mirrors + SLOG + L2ARC, dataset with recordsize 8k). Everything goes
# to the output share: zfsmon's recording, export, doctor and arcstat; raw arcstats before/after; the
# `zpool iostat -vp` run beside the recording; and captures of every tool output zfsmon reads, each
# command listed in captures/COMMANDS.tsv (tests/guest/save_captures.py turns them into test data).
set -u
OUT=${ZFSMON_OUT:?}
POOL=${ZFSMON_POOL:?}
MNT=${ZFSMON_MOUNT:?}
INTERVAL=5
REC=/var/tmp/rec.zfsmon  # SQLite on the guest's own disk (its WAL wants shared mmap, which 9p may refuse)
CAP=$OUT/captures
mkdir -p "$CAP" "$CAP/kstat"
: > "$CAP/COMMANDS.tsv"
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 ))s] $*"; echo "$(( $(date +%s) - T0 ))	$*" >> "$OUT/steps.tsv"; }
# capture NAME CMD...: stdout to captures/NAME, the command line and exit code to COMMANDS.tsv
capture() {
    local name=$1; shift
    "$@" > "$CAP/$name" 2> "$CAP/$name.stderr"
    local rc=$?
    [ -s "$CAP/$name.stderr" ] || rm -f "$CAP/$name.stderr"
    printf '%s\t%s\t%s\n' "$name" "$*" "$rc" >> "$CAP/COMMANDS.tsv"
}
FIO=(fio --name=zfsmon --filename="$MNT/fio.dat" --size=96M --ioengine=psync --bs=8k --group_reporting)

step "versions"
capture zfs-version.txt zfs version
uname -a > "$OUT/uname.txt"
step "zfsmon doctor"
zfsmon doctor --json > "$OUT/doctor.json"
zfsmon doctor > "$OUT/doctor.txt"

step "fio: lay out the file, then sync"
"${FIO[@]}" --rw=write --bs=128k --end_fsync=1 --output="$OUT/fio-layout.txt"
zpool sync "$POOL"
step "empty the ARC of the pool's data (export, import): the workload's reads then both miss and hit"
zpool export "$POOL"
zpool import -d /dev/disk/by-id "$POOL"
sleep 2

step "recording: zfsmon record and zpool iostat -vp beside it, every $INTERVAL s"
zfsmon record --interval "$INTERVAL" --pool "$POOL" --out "$REC" --quiet 2> "$OUT/record.err" &
RECPID=$!
# zfsmon takes tens of seconds to start under emulation (and reads pool metadata while it does): the
# window begins once its first interval's readings are in the recording
ticks() { python3 -c 'import sqlite3, sys
try:
    print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute("SELECT count(*) FROM tick").fetchone()[0])
except sqlite3.Error:
    print(0)' "$REC"; }
for _ in $(seq 300); do [ -s "$REC" ] && [ "$(ticks)" -ge 1 ] && break; sleep 1; done
step "recording has begun ($(ticks) readings)"
# raw reads after zfsmon's first reading: its start-up itself reads pool metadata (~400 ARC hits seen)
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.before"
cat /proc/spl/kstat/zfs/zil > "$OUT/zil.before"
zpool iostat -vp -T u "$POOL" "$INTERVAL" > "$OUT/beside-iostat-vp.txt" &
BESIDE=$!
sleep $((INTERVAL * 2 + 2))
step "fio: 8k random read/write with an fsync every 16 writes, 25 s"
"${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --runtime=25 --time_based --output-format=json \
    --output="$OUT/fio.json"
zpool sync "$POOL"
step "idle tail"
sleep $((INTERVAL * 3))
kill -TERM "$RECPID"
wait "$RECPID"
echo "record exit $?" > "$OUT/record.exit"
kill -TERM "$BESIDE"
wait "$BESIDE" 2>/dev/null
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.after"
cat /proc/spl/kstat/zfs/zil > "$OUT/zil.after"

step "zfsmon export, info, iostat, arcstat"
zfsmon export "$REC" --csv "$OUT/export" > "$OUT/export.log" 2>&1
echo "export exit $?" >> "$OUT/export.log"
zfsmon info "$REC" > "$OUT/info.txt" 2>&1
cp "$REC" "$OUT/rec.zfsmon"

step "captures under a small load (fio in the background)"
"${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --rate_iops=40,20 --runtime=900 --time_based \
    --output=/dev/null &
LOAD=$!
sleep 3
zfsmon arcstat --csv 2 3 > "$OUT/zfsmon-arcstat.csv" 2> "$OUT/zfsmon-arcstat.err"
zfsmon arcstat --csv -f time,read,hits,iohs,miss,hit%,ioh%,miss%,l2read,l2hit% 2 3 > "$OUT/zfsmon-arcstat-f.csv" \
    2>> "$OUT/zfsmon-arcstat.err"
zfsmon iostat -p "$POOL" 2 2 > "$OUT/zfsmon-iostat.txt" 2>&1
capture zpool-iostat-v.txt zpool iostat -v "$POOL" 2 2
capture zpool-iostat-vp.txt zpool iostat -vp "$POOL" 2 2
capture zpool-iostat-vl.txt zpool iostat -vl "$POOL" 2 2
capture zpool-iostat-vq.txt zpool iostat -vq "$POOL" 2 2
capture zpool-iostat-vlq.txt zpool iostat -vlq "$POOL" 2 2
capture zpool-iostat-w.txt zpool iostat -w "$POOL" 2 2
capture zpool-iostat-vw.txt zpool iostat -vw "$POOL" 2 2
capture zpool-iostat-r.txt zpool iostat -r "$POOL" 2 2
capture zpool-iostat-vr.txt zpool iostat -vr "$POOL" 2 2
capture zpool-iostat-vH.txt zpool iostat -vH "$POOL" 2 2
capture zpool-iostat-vHp.txt zpool iostat -vHp "$POOL" 2 2
capture zpool-iostat-vHpl.txt zpool iostat -vHpl "$POOL" 2 2
capture zpool-iostat-vHplq.txt zpool iostat -vHplq "$POOL" 2 2
capture zpool-iostat-vy.txt zpool iostat -vy "$POOL" 2 2
capture zpool-iostat-vyp.txt zpool iostat -vyp "$POOL" 2 2
capture zpool-iostat-vTu.txt zpool iostat -v -T u "$POOL" 2 2
capture zpool-iostat-vTd.txt zpool iostat -v -T d "$POOL" 2 2
capture zpool-iostat-vlpTu.txt zpool iostat -vlp -T u "$POOL" 2 2
capture zpool-status.txt zpool status "$POOL"
capture zpool-status-v.txt zpool status -v "$POOL"
capture zpool-status-P.txt zpool status -P "$POOL"
capture zpool-status-j.json zpool status -j "$POOL"
capture zpool-status-j-flat-int.json zpool status -j --json-flat-vdevs --json-int "$POOL"
capture zpool-list-v.txt zpool list -v "$POOL"
capture zfs-list.txt zfs list -r "$POOL"
capture arcstat.txt arcstat 1 3
capture arcstat-a.txt arcstat -a 1 2
capture arc_summary.txt arc_summary
capture zilstat.txt timeout -s TERM 5 zilstat -i 1
for f in $(cd /proc/spl/kstat/zfs && find . -type f | sort); do
    name=$(echo "${f#./}" | tr '/' '.')
    capture "kstat/$name" cat "/proc/spl/kstat/zfs/${f#./}"
done
kill -TERM "$LOAD"
wait "$LOAD" 2>/dev/null
step "done"
