#!/bin/bash
# The OpenZFS 2.4 captures of this directory (PROVENANCE.md), taken in the project's guest:
#   zfsmon guest run --zfs 2.4 --out DIR -- bash /mnt/zfsmon/tests/data/openzfs-2.4/capture.sh
# The runner made the pool first (2 mirrors + SLOG + L2ARC, dataset with recordsize 8k). Each capture goes to
# DIR/captures/NAME, its command line and exit code to DIR/captures/COMMANDS.tsv (tests/guest/captures.sh).
# zio_stats is read first (idle pool), then every kstat and tool output under an 8k random fio load.
set -u
OUT=${ZFSMON_OUT:?}
POOL=${ZFSMON_POOL:?}
MNT=${ZFSMON_MOUNT:?}
CAP=$OUT/captures
mkdir -p "$CAP/kstat"
: > "$CAP/COMMANDS.tsv"
source "$(dirname "${BASH_SOURCE[0]}")/../../guest/captures.sh"
capture kstat/zio_stats-idle cat /proc/spl/kstat/zfs/zio_stats
capture zfs-version.txt zfs version
capture uname-r.txt uname -r
uname -a > "$OUT/uname.txt"
FIO=(fio --name=zfsmon --filename="$MNT/fio.dat" --size=96M --ioengine=psync --bs=8k --group_reporting)
"${FIO[@]}" --rw=write --bs=128k --end_fsync=1 --output="$OUT/fio-layout.txt"
"${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --time_based --runtime=1200 --output-format=json \
    --output="$OUT/fio-load.json" &
FIOPID=$!
sleep 10
capture_kstats
capture zpool-iostat-vlp.txt zpool iostat -vlp "$POOL" 2 2
capture zpool-iostat-vqp.txt zpool iostat -vqp "$POOL" 2 2
capture zpool-iostat-vwp.txt zpool iostat -vwp "$POOL" 2 2
capture zpool-status-p.txt zpool status -p "$POOL"
capture zpool_influxdb.txt /usr/lib/zfs-linux/zpool_influxdb
capture zpool-get-all-vdevs.txt zpool get -p all "$POOL" all-vdevs
capture zpool-get-all.txt zpool get -p all "$POOL"
capture_tools
capture kstat/zio_stats-after cat /proc/spl/kstat/zfs/zio_stats
kill -TERM "$FIOPID"
wait "$FIOPID"
echo "fio exit $?" > "$OUT/fio.exit"
capture_status_changes
