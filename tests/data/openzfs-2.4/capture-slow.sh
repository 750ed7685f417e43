#!/bin/bash
# OpenZFS 2.4's slow-leaf captures of this directory (PROVENANCE-slow.md): a raidz1 pool with autosit on, one
# leaf's reads delayed by zinject until ZFS sits it out (the sit_out vdev property), its slow I/Os counted by
# `zpool status -s`, then the delay cleared and the sit-out lifted. Taken in the project's guest without its
# usual pool:
#   zfsmon guest run --zfs 2.4 --no-pool --out DIR -- bash /mnt/zfsmon/tests/data/openzfs-2.4/capture-slow.sh
# The steps follow OpenZFS's own test (tests/zfs-tests/tests/functional/events/slow_vdev_sit_out.ksh): ten
# 200 MiB file vdevs, the sit-out period shortened to 5 s and the outlier check to every 20 ms, reads of the
# delayed leaf held 200 ms. zio_slow_io_ms is lowered to 100 ms so those reads also count as slow I/Os.
# Each capture goes to DIR/captures/NAME, its command line and exit code to DIR/captures/COMMANDS.tsv.
set -u
OUT=${ZFSMON_OUT:-/mnt/out}
CAP=$OUT/captures
POOL=zslow
DIR=/var/tmp/zslow
mkdir -p "$CAP" "$DIR"
: > "$CAP/COMMANDS.tsv"
source "$(dirname "${BASH_SOURCE[0]}")/../../guest/captures.sh"
P=/sys/module/zfs/parameters
for kv in vdev_read_sit_out_secs=5 vdev_raidz_outlier_check_interval_ms=20 zio_slow_io_ms=100; do
    echo "${kv#*=}" > "$P/${kv%%=*}" && echo "set ${kv}" >> "$OUT/params.txt"
done
capture zfs-version-slow.txt zfs version
truncate -s 200M "$DIR"/vdev.{0..9}
zpool create -f -o ashift=12 "$POOL" raidz1 "$DIR"/vdev.{0..9}
zpool set autosit=on "$POOL" raidz1-0
dd if=/dev/urandom of="/$POOL/bigfile" bs=1M count=600 status=none
zpool export "$POOL"
zpool import -d "$DIR" "$POOL"
BAD=$DIR/vdev.9
capture zpool-get-all-vdevs-raidz.txt zpool get -p all "$POOL" all-vdevs
capture zpool-get-all-vdevs-raidz-H.txt zpool get -H -p all "$POOL" all-vdevs
zinject -d "$BAD" -D200:1 -T read "$POOL" > "$OUT/zinject.txt" 2>&1
sit=off
for i in $(seq 0 99); do
    dd if="/$POOL/bigfile" skip=$i bs=2M count=1 of=/dev/null status=none &
    dd if="/$POOL/bigfile" skip=$((i + 100)) bs=2M count=1 of=/dev/null status=none &
    dd if="/$POOL/bigfile" skip=$((i + 200)) bs=2M count=1 of=/dev/null status=none
    sit=$(zpool get -H -o value sit_out "$POOL" "$BAD")
    [ "$sit" = on ] && break
done
wait
echo "sit_out $sit after $i rounds" > "$OUT/sit-out.txt"
capture zpool-get-all-vdevs-raidz-sitout.txt zpool get -p all "$POOL" all-vdevs
capture zpool-status-s-raidz.txt zpool status -s "$POOL"
capture zpool-status-sp-raidz.txt zpool status -sp "$POOL"
capture zpool-status-j-raidz.json zpool status -j "$POOL"
capture zpool-status-j-flat-int-raidz.json zpool status -j --json-flat-vdevs --json-int "$POOL"
capture zpool-iostat-vlp-raidz.txt zpool iostat -vlp "$POOL" 2 2
capture zpool-events-raidz.txt zpool events "$POOL"
zinject -c all >> "$OUT/zinject.txt" 2>&1
for _ in $(seq 1 60); do  # the sit-out ends read_sit_out_secs after the last slow read
    [ "$(zpool get -H -o value sit_out "$POOL" "$BAD")" = off ] && break
    sleep 1
done
capture zpool-get-all-vdevs-raidz-cleared.txt zpool get -p all "$POOL" all-vdevs
capture zpool-status-s-raidz-cleared.txt zpool status -s "$POOL"
# bpftrace/arc_kprobe.bt on this release's bpftrace, under reads from cold (the pool exported and imported)
zpool export "$POOL" && zpool import -d "$DIR" "$POOL"
bpftrace --version > "$OUT/bpftrace-version.txt" 2>&1
timeout 150 bpftrace "$(dirname "${BASH_SOURCE[0]}")/../../../bpftrace/arc_kprobe.bt" 5 > "$OUT/arc_kprobe.txt" \
    2> "$OUT/arc_kprobe.err" &
BT=$!
for _ in $(seq 1 120); do grep -q '^interval ' "$OUT/arc_kprobe.txt" 2>/dev/null && break; sleep 1; done
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.bt-before"
dd if="/$POOL/bigfile" bs=1M count=300 of=/dev/null status=none
sleep 12
cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.bt-after"
kill -INT "$BT"; wait "$BT"; echo "bpftrace exit $?" >> "$OUT/arc_kprobe.err"
zpool destroy "$POOL"
rm -rf "$DIR"
