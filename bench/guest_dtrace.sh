#!/bin/bash
# The D scripts under a real D runtime on kernel OpenZFS, in the QEMU guest, each beside ZFS's own counters.
#
#   run by bench/bench_guest_dtrace.py (zfsmon guest run --with-dtrace PREFIX); in the guest:
#   bash bench/guest_dtrace.sh [TRACES]        TRACES: comma-separated, default txg,zil,zfsslower,vdevlat,arc
#   (step 2's traces: DTRACE_RECORD, default TRACES; empty for none)
#
# 1. Each D script alone, run by dtrace itself (the raw protocol text is the evidence), under an fio job on the
#    pool's dataset: the script starts, reports an idle interval, the ground truth is read ("before": txgs, zil,
#    arcstats, the dataset's objset kstat, /proc/diskstats, each vdev's op counts (zpool get ... all-vdevs) and
#    latency histograms (zpool iostat -vwp)), fio runs, the pool idles
#    two intervals, the ground truth is read again ("after"), one more interval, SIGINT. DIR/NAME/.
# 2. zfsmon record --backend dtrace with every trace at once beside its own sources, over pgbench -N on a
#    PostgreSQL cluster on the dataset, idle at both ends, the ground truth read at each end. DIR/record/.
# 3. zfsmon trace txg --backend dtrace --slow 1 (each sync on its own line, with its txg number) and zfsmon doctor.
# DIR is $ZFSMON_OUT/dtrace. Everything the run did is in DIR/steps.tsv (epoch, step) and DIR/COMMANDS.tsv.
set -u
OUT=${ZFSMON_OUT:?run in the guest, by bench/bench_guest_dtrace.py}
SRC=${ZFSMON_SRC:-/mnt/zfsmon}
POOL=${ZFSMON_POOL:?}
DATASET=${ZFSMON_DATASET:?}
MNT=${ZFSMON_MOUNT:?}
TRACES=${1-txg,zil,zfsslower,vdevlat,arc}
RECORD=${DTRACE_RECORD-$TRACES}  # the traces of step 2 (empty: no step 2)
INTERVAL=${DTRACE_INTERVAL:-5}
WORK=${DTRACE_WORK:-40}
PGTX=${DTRACE_PGTX:-400}
CAP=$OUT/dtrace
mkdir -p "$CAP"
step() { printf '%s\t%s\n' "$(date +%s.%N)" "$*" | tee -a "$CAP/steps.tsv"; }
note() { printf '%s\t%s\n' "$1" "$2" >> "$CAP/COMMANDS.tsv"; }
intervals() { grep -c '^interval' "$1" 2>/dev/null || true; }
# until FILE has N interval lines (bounded: a D script's start-up is 10-40 s under emulation)
until_intervals() { for _ in $(seq 400); do [ "$(intervals "$1")" -ge "$2" ] && return 0; sleep 1; done; return 1; }

{
    echo "dtrace $(dtrace -V 2>&1 | head -n1)"
    echo "kernel $(uname -r)"
    echo "zfs-kmod $(cat /sys/module/zfs/version)"
    zfs version 2>&1 | sed 's/^/zfs-version /'
    echo "pahole $(pahole --version)"
    echo "fio $(fio --version)"
    echo "zfs-btf-bytes $(stat -c %s /sys/kernel/btf/zfs 2>/dev/null || echo none)"
} > "$CAP/versions.txt"
OBJSET=$(grep -l "dataset_name .* $DATASET\$" /proc/spl/kstat/zfs/"$POOL"/objset-* | head -1)
# what names the scripts' entities: the pool's tree, its disks' links, the mounts (a dev_t -> dataset)
zpool status "$POOL" > "$CAP/zpool-status.txt"
ls -l /dev/disk/by-id > "$CAP/by-id.txt"
cat /proc/self/mountinfo > "$CAP/mountinfo.txt"
raw() {  # the ground truth at one moment: DIR/$1/raw.$2.*
    local d=$CAP/$1
    date +%s.%N > "$d/raw.$2.time"
    cat /proc/spl/kstat/zfs/"$POOL"/txgs > "$d/raw.$2.txgs"
    cat /proc/spl/kstat/zfs/zil > "$d/raw.$2.zil"
    cat /proc/spl/kstat/zfs/arcstats > "$d/raw.$2.arcstats"
    cat "$OBJSET" > "$d/raw.$2.objset"
    cat /proc/diskstats > "$d/raw.$2.diskstats"
    zpool get -Hp read_ops,write_ops,read_bytes,write_bytes "$POOL" all-vdevs > "$d/raw.$2.vdev-ops" 2> /dev/null
    zpool iostat -vwp "$POOL" > "$d/raw.$2.iostat-vwp"
}
script_of() {  # the D script zfsmon runs for trace $1 here (the catalog's choice, e.g. arc -> arc_linux.d)
    PYTHONPATH=$SRC /opt/zfsmon/venv/bin/python3 -c "import sys; from zfsmon.trace import catalog
print(catalog.script_path(catalog.resolve(sys.argv[1], family='dtrace'), 'dtrace'))" "$1"
}
slow_of() { case $1 in txg) echo 1;; zil) echo 200;; zfsslower) echo 20;; vdevlat) echo 200;; *) echo "";; esac; }

step "the fio file: 320 MiB on $MNT (more than the 256 MiB ARC: reads both hit and miss)"
FIO=(fio --name=dtrace --directory="$MNT" --filename=dtrace.dat --bs=8k --size=320m --ioengine=psync)
"${FIO[@]}" --rw=write --end_fsync=1 --output="$CAP/fio-layout.txt" > /dev/null
zpool sync "$POOL"

IFS=, read -r -a NAMES <<< "$TRACES"
for name in "${NAMES[@]}"; do
    d=$CAP/$name
    mkdir -p "$d"
    script=$(script_of "$name")
    args=("$INTERVAL")
    slow=$(slow_of "$name")
    [ -n "$slow" ] && args+=("$slow")
    step "$name: dtrace -q -s ${script#"$SRC"/} ${args[*]}"
    note "$name/dtrace.out" "dtrace -q -s ${script#"$SRC"/} ${args[*]}"
    dtrace -q -s "$script" "${args[@]}" > "$d/dtrace.out" 2> "$d/dtrace.err" &
    dpid=$!
    if ! until_intervals "$d/dtrace.out" 1; then
        step "$name: no interval in 400 s"; kill -TERM "$dpid"; wait "$dpid"; continue
    fi
    n=$(intervals "$d/dtrace.out")
    until_intervals "$d/dtrace.out" $((n + 1))
    jobs=1
    if [ "$name" = arc ]; then
        # from cold (the ARC and L2ARC emptied), two readers of one file: hits, misses and I/O hits all occur
        zfsmon lab cold --pool "$POOL" > "$d/cold.txt" 2>&1
        jobs=2
        n=$(intervals "$d/dtrace.out")
        until_intervals "$d/dtrace.out" $((n + 2))
    fi
    raw "$name" before
    step "$name: fio 8k random read/write (zipf 1.1), an fsync every 16 writes, $WORK s, $jobs job(s)"
    note "$name/fio.json" "${FIO[*]} --rw=randrw --rwmixread=70 --norandommap --random_distribution=zipf:1.1 --fsync=16 --runtime=$WORK --time_based --numjobs=$jobs"
    "${FIO[@]}" --rw=randrw --rwmixread=70 --norandommap --random_distribution=zipf:1.1 --fsync=16 \
        --runtime="$WORK" --time_based --numjobs="$jobs" --output-format=json --output="$d/fio.json" > /dev/null
    zpool sync "$POOL"
    n=$(intervals "$d/dtrace.out")
    until_intervals "$d/dtrace.out" $((n + 2))
    raw "$name" after
    n=$(intervals "$d/dtrace.out")
    until_intervals "$d/dtrace.out" $((n + 1))
    kill -TERM "$dpid"  # not INT: a background job of a script has SIGINT ignored, and dtrace keeps it so
    wait "$dpid"
    echo "$?" > "$d/dtrace.exit"
    [ -s "$d/dtrace.err" ] || rm -f "$d/dtrace.err"
    step "$name: done, $(intervals "$d/dtrace.out") intervals"
done

if [ -n "$RECORD" ]; then
step "record: zfsmon record --backend dtrace, every trace at once, over pgbench -N"
d=$CAP/record
mkdir -p "$d"
PG=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGRUN=(runuser -u postgres --)
PGC=(-h /tmp -p 5433 -U postgres)
mkdir -p "$MNT/pg" && chown postgres "$MNT/pg"
"${PGRUN[@]}" "$PG/initdb" -D "$MNT/pg" -A trust > "$d/pg-initdb.log" 2>&1
"${PGRUN[@]}" "$PG/pg_ctl" -D "$MNT/pg" -o "-p 5433 -k /tmp" -l /var/tmp/pg.log -w start > "$d/pg-start.log" 2>&1
"${PGRUN[@]}" "$PG/createdb" "${PGC[@]}" bench
"${PGRUN[@]}" pgbench "${PGC[@]}" -i -s 2 bench > "$d/pgbench-init.txt" 2>&1
"${PGRUN[@]}" psql "${PGC[@]}" -Atc "CHECKPOINT" bench > /dev/null
zpool sync "$POOL"
REC=/var/tmp/dtrace.zfsmon  # on the guest's own disk: SQLite cannot lock a file on the 9p share
IFS=, read -r -a RNAMES <<< "$RECORD"
TR=()
for name in "${RNAMES[@]}"; do TR+=(--trace "$name"); done
note "record/dtrace.zfsmon" "zfsmon record --interval $INTERVAL --pool $POOL zpool arcstats zil objset txgs diskstats ${TR[*]} --backend dtrace"
zfsmon record --interval "$INTERVAL" --pool "$POOL" zpool arcstats zil objset txgs diskstats "${TR[@]}" \
    --backend dtrace --out "$REC" --quiet 2> "$d/record.err" &
RECPID=$!
# every trace has reported (zfsmon export lists its samples) or 400 s have gone by
q() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])' "$REC" "$1" 2>/dev/null || echo 0; }
traced() { q "SELECT count(DISTINCT so.name) FROM sample sa JOIN stream st ON sa.stream = st.id
              JOIN source so ON st.source = so.id WHERE so.name LIKE 'trace:%'"; }
for _ in $(seq 80); do
    [ "$(traced)" -ge "${#RNAMES[@]}" ] && break
    head -c 65536 /dev/urandom > "$MNT/poke"; sync "$MNT/poke"; cat "$MNT/poke" > /dev/null
    sleep 5
done
step "record: $(traced) of ${#RNAMES[@]} traces reporting"
zil_commits() { awk '$1 == "zil_commit_count" {print $3}' /proc/spl/kstat/zfs/zil; }
for _ in $(seq 50); do c=$(zil_commits); sleep $((INTERVAL + 1)); [ "$(zil_commits)" = "$c" ] && break; done
raw record before
cd /var/tmp || exit 1
note "record/pgbench.txt" "pgbench -h /tmp -p 5433 -U postgres -N -c 2 -t $PGTX -P $INTERVAL bench"
"${PGRUN[@]}" pgbench "${PGC[@]}" -N -c 2 -t "$PGTX" -P "$INTERVAL" bench > "$d/pgbench.txt" 2> "$d/pgbench-progress.txt"
echo "pgbench exit $?" >> "$d/pgbench.txt"
cd "$OUT" || exit 1
"${PGRUN[@]}" "$PG/pg_ctl" -D "$MNT/pg" -m fast -w stop >> "$d/pg-start.log" 2>&1
zpool sync "$POOL"
sleep $((INTERVAL * 3 + 2))
raw record after
sleep $((INTERVAL + 2))
kill -TERM "$RECPID"
wait "$RECPID"
echo "record exit $?" > "$d/record.exit"
cp "$REC" "$d/dtrace.zfsmon"
zfsmon export "$REC" --csv "$d/export" > /dev/null 2>> "$d/record.err"

fi

step "zfsmon trace txg --backend dtrace --slow 1, three intervals, under a writer"
note "trace-txg.txt" "zfsmon trace txg $INTERVAL --backend dtrace --slow 1 --count 3"
dd if=/dev/urandom of="$MNT/writer" bs=64k count=4000 2> /dev/null &
DD=$!
zfsmon trace txg "$INTERVAL" --backend dtrace --slow 1 --count 3 > "$CAP/trace-txg.txt" 2> "$CAP/trace-txg.err"
echo "exit $?" >> "$CAP/trace-txg.err"
kill "$DD" 2> /dev/null
wait "$DD" 2> /dev/null
zfsmon doctor > "$CAP/doctor.txt" 2>&1
zfsmon trace --list > "$CAP/trace-list.txt" 2>&1
step "done"
