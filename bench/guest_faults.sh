#!/bin/bash
# The fault matrix on kernel OpenZFS, inside the guest (bench/bench_guest_faults.py boots it): one recording of a
# fio workload at --interval 2 while faults are caused one after another, each window's start and end in
# steps.tsv (epoch seconds), what ZFS itself said at each fault's height kept beside it. The host pulls disks out
# and puts them back when asked (zfsmon.lab.guest.hostctl).
#
#   1 io        zinject -e io on one mirror leaf's reads, then cleared and `zpool clear`
#   2 checksum  zinject -e corrupt (a bit flipped in what a read returns: a checksum error) on another leaf's reads,
#               a scrub while it lasts, cleared (a device fault takes io, nxio or corrupt; `-e checksum` is refused)
#   3 slow      zinject -D 200:1 on a third leaf's reads (zio_slow_io_ms 100): slow I/Os
#   4 pull      a data disk pulled out of the machine for PULL_S seconds, put back, onlined, resilvered
#   5 cache     the cache device pulled out with the L2ARC warm, put back, onlined
#   6 suspend   the only disk of a second pool (failmode=wait, a writer on it) pulled: the pool suspends;
#               the recorder is stopped by SIGTERM while it is suspended; then the disk back and `zpool clear`
#
#   guest_faults.sh [PULL_S] [ROWS]      (default 330: the degraded-pool alert's `for: 5m` and a scrape; all rows)
#
# FAULTS_HOLD (seconds an injected fault or a pulled cache device lasts; default 45 for errors, 75 for the slow
# disk and the cache), FAULTS_CALM (the calm after each row, default 40) and FAULTS_DISK_MB/FAULTS_WARM_MB (the
# two jobs' files, default 160 and 384) shorten it: the guest tier runs a short `io,cache` (tests/guest/scenario.sh).
set -u
OUT=${ZFSMON_OUT:?}
POOL=${ZFSMON_POOL:?}
PULL_S=${1:-330}
ROWS=${2:-io,checksum,slow,pull,cache,suspend}
HOLD=${FAULTS_HOLD:-}
CALM=${FAULTS_CALM:-40}
DISK_MB=${FAULTS_DISK_MB:-160}  # the uncached job's file
WARM_MB=${FAULTS_WARM_MB:-384}  # the cached job's file: over the 256 MiB ARC, under the 1 GiB cache device
REC=/var/tmp/faults.zfsmon  # SQLite on the guest's own disk (9p may refuse its WAL's shared mmap)
CAP=$OUT/zfs
HOSTCTL=${ZFSMON_HOSTCTL:-$OUT/hostctl}  # the share's request directory the host polls (hostctl.DIR)
mkdir -p "$CAP" "$HOSTCTL"
T0=$(date +%s)
: > "$OUT/steps.tsv"
say() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }
# a fault window: `mark ROW start|end` (epoch seconds with decimals)
mark() { printf '%s\t%s\t%s\n' "$(date +%s.%N | cut -c1-14)" "$1" "$2" >> "$OUT/steps.tsv"; say "$1 $2"; }
want() { [[ ",$ROWS," == *",$1,"* ]]; }
# what ZFS says, under a deadline (a suspended pool may hold a command): CAP/NAME, its exit code in COMMANDS.tsv
cap() { local name=$1; shift; timeout 20 "$@" > "$CAP/$name" 2>&1; printf '%s\t%s\t%s\n' "$name" "$?" "$*" >> "$CAP/COMMANDS.tsv"; }
n=0
# ask the host: `host unplug SERIAL` / `host plug SERIAL`; waits for its answer
host() {
    n=$((n + 1))
    printf '%s\n' "$*" > "$HOSTCTL/$n.tmp" && mv "$HOSTCTL/$n.tmp" "$HOSTCTL/$n.req"
    for _ in $(seq 1 240); do
        if [ -f "$HOSTCTL/$n.ok" ]; then say "host: $(cat "$HOSTCTL/$n.ok")"; return 0; fi
        if [ -f "$HOSTCTL/$n.err" ]; then
            say "host: $(cat "$HOSTCTL/$n.err")"; echo "host $*: $(cat "$HOSTCTL/$n.err")" >> "$OUT/failed.txt"
            return 1
        fi
        sleep 0.5
    done
    say "host: no answer to '$*'"; echo "host $*: no answer in 120 s (is $HOSTCTL the share's hostctl/?)" >> "$OUT/failed.txt"
    return 1
}
# a fault injected: its output in CAP/zinject-NAME.txt; a refusal is said and listed in failed.txt (the bench fails)
inject() {
    local name=$1; shift
    zinject "$@" > "$CAP/zinject-$name.txt" 2>&1 && return 0
    say "zinject $* refused: $(tail -1 "$CAP/zinject-$name.txt")"
    printf 'zinject %s: %s\n' "$*" "$(tail -1 "$CAP/zinject-$name.txt")" >> "$OUT/failed.txt"
}
leaf() { zpool status -P "$2" | awk -v d="/virtio-$1" 'index($1, d) {print $1; exit}'; }
wait_link() { for _ in $(seq 1 120); do [ -e "/dev/disk/by-id/virtio-$1" ] && return 0; sleep 0.5; done; return 1; }
settle() { sleep "$1"; }  # the workload runs on between faults: each window is followed by this much calm
hold() { settle "${HOLD:-$1}"; }  # how long a fault lasts

{ zfs version; uname -r; } > "$OUT/versions.txt"
echo 100 > /sys/module/zfs/parameters/zio_slow_io_ms
echo "zio_slow_io_ms=$(cat /sys/module/zfs/parameters/zio_slow_io_ms)" > "$OUT/params.txt"
systemctl is-active zfs-zed > "$OUT/zed.txt" 2>&1
# the workload's datasets: reads of `disk` always go to the disks (only metadata cached), `warm` fills the ARC
# and the L2ARC (a file over the 256 MiB ARC, under the 1 GiB cache device)
zfs create -o primarycache=metadata -o recordsize=8k "$POOL/disk"
zfs create -o recordsize=8k "$POOL/warm"
want suspend && zpool create -f -o ashift=12 -o failmode=wait zsusp /dev/disk/by-id/virtio-susp0
cap zpool-status-start.txt zpool status -P
cat > /var/tmp/faults.fio <<EOF
[global]
ioengine=psync
bs=8k
time_based
runtime=7200
randrepeat=0
[disk]
directory=/$POOL/disk
size=${DISK_MB}M
rw=randrw
rwmixread=80
[warm]
directory=/$POOL/warm
size=${WARM_MB}M
rw=randread
EOF
say "the recording starts: zfsmon soak --fio (two jobs), every 2 s"
zfsmon soak --fio /var/tmp/faults.fio --interval 2 --out "$REC" --quiet > "$OUT/soak.log" 2>&1 &
SOAK=$!
# the workload is running once fio's files are laid out and its first status is recorded
for _ in $(seq 1 600); do grep -q '"jobs"' /var/tmp/faults.fio.json 2>/dev/null && break; sleep 1; done
settle $((CALM + 20))
mark baseline end

if want io; then
    L=$(leaf data1 "$POOL")
    mark io start
    inject io -d "$L" -e io -T read -f 50 "$POOL"
    hold 45
    cap zpool-status-io.txt zpool status -P "$POOL"
    zinject -c all >> "$CAP/zinject-io.txt" 2>&1
    zpool clear "$POOL"
    mark io end
    settle "$CALM"
fi
if want checksum; then
    L=$(leaf data2 "$POOL")
    mark checksum start
    inject checksum -d "$L" -e corrupt -T read -f 20 "$POOL"
    hold 20
    zpool scrub "$POOL"
    settle 5
    cap zpool-status-scrub.txt zpool status -P "$POOL"
    timeout 900 zpool wait -t scrub "$POOL"
    cap zpool-status-scrubbed.txt zpool status -P "$POOL"
    zinject -c all >> "$CAP/zinject-checksum.txt" 2>&1
    zpool clear "$POOL"
    mark checksum end
    settle "$CALM"
fi
if want slow; then
    L=$(leaf data3 "$POOL")
    mark slow start
    inject slow -d "$L" -D 200:1 -T read "$POOL"
    hold 75
    cap zpool-status-slow.txt zpool status -sP "$POOL"
    zinject -c all >> "$CAP/zinject-slow.txt" 2>&1
    mark slow end
    settle "$CALM"
fi
if want pull; then
    mark pull start
    host unplug data0
    settle 30
    cap zpool-status-pulled.txt zpool status -P "$POOL"
    settle $((PULL_S - 30))
    host plug data0 && wait_link data0
    mark pull back
    L=$(leaf data0 "$POOL")
    cap zpool-online-data0.txt zpool online "$POOL" "$L"
    settle 5
    cap zpool-status-resilver.txt zpool status -P "$POOL"
    timeout 900 zpool wait -t resilver "$POOL"
    cap zpool-status-resilvered.txt zpool status -P "$POOL"
    zpool clear "$POOL"
    mark pull end
    settle "$CALM"
fi
if want cache; then
    mark cache start
    host unplug cache0
    hold 75
    cap zpool-status-cache-pulled.txt zpool status -P "$POOL"
    host plug cache0 && wait_link cache0
    L=$(leaf cache0 "$POOL")
    cap zpool-online-cache0.txt zpool online "$POOL" "$L"
    settle 5
    cap zpool-status-cache-back.txt zpool status -P "$POOL"
    mark cache end
    settle $((CALM + 20))
fi
if want suspend; then
    zfs create zsusp/w
    ( while :; do dd if=/dev/zero of=/zsusp/w/f bs=1M count=8 conv=fsync status=none; done ) &
    WRITER=$!
    settle 10
    mark suspend start
    host unplug susp0
    for _ in $(seq 1 120); do  # until ZFS says so
        [ "$(timeout 10 zpool list -H -o health zsusp 2>/dev/null)" = SUSPENDED ] && break; sleep 1
    done
    cap zpool-status-suspended.txt zpool status -P zsusp
    settle 30
    mark stop sent
    kill -TERM "$SOAK"
    t=$(date +%s.%N)
    for _ in $(seq 1 120); do kill -0 "$SOAK" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$SOAK" 2>/dev/null; then
        echo "the recorder was still running 60 s after SIGTERM" > "$OUT/stop.txt"; kill -KILL "$SOAK"
    else
        wait "$SOAK"; rc=$?
        awk -v t="$t" -v now="$(date +%s.%N)" -v rc="$rc" \
            'BEGIN {printf "stopped %.1f s after SIGTERM, exit %d\n", now - t, rc}' > "$OUT/stop.txt"
    fi
    mark stop done
    host plug susp0 && wait_link susp0
    cap zpool-clear-zsusp.txt zpool clear zsusp
    settle 5
    cap zpool-status-zsusp-back.txt zpool status -P zsusp
    mark suspend end
    kill "$WRITER" 2>/dev/null
else
    t=$(date +%s.%N)
    kill -TERM "$SOAK"; wait "$SOAK"; rc=$?
    awk -v t="$t" -v now="$(date +%s.%N)" -v rc="$rc" \
        'BEGIN {printf "stopped %.1f s after SIGTERM, exit %d\n", now - t, rc}' > "$OUT/stop.txt"
fi
cap zpool-events.txt zpool events
cap zpool-events-v.txt zpool events -v
cap zpool-status-end.txt zpool status -P
cp "$REC" "$OUT/faults.zfsmon" && cp /var/tmp/faults.fio.json "$OUT/" 2>/dev/null
say "done"
