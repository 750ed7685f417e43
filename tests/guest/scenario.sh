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
source "$(dirname "${BASH_SOURCE[0]}")/captures.sh"
# zpool_influxdb (OpenZFS 2.1+): Debian installs it off PATH
INFLUX=/usr/lib/zfs-linux/zpool_influxdb
[ -x "$INFLUX" ] || INFLUX=$(command -v zpool_influxdb || echo /nonexistent)
FIO=(fio --name=zfsmon --filename="$MNT/fio.dat" --size=96M --ioengine=psync --bs=8k --group_reporting)

step "versions"
capture zfs-version.txt zfs version
uname -a > "$OUT/uname.txt"
step "zfsmon doctor"
zfsmon doctor --json > "$OUT/doctor.json"
zfsmon doctor > "$OUT/doctor.txt"

BCC=1  # the bcc backend (zfsmon.trace.bcc_tool), one program for the run
if [ "$BCC" = 1 ]; then
    step "bcc: one program (zfsslower, zil, arc) started now: it compiles for 1-5 min under emulation"
    BCC_CMD=(env PYTHONPATH=/mnt/zfsmon /opt/zfsmon/venv/bin/python3 -m zfsmon.trace.bcc_tool zfsslower,zil,arc
             "$INTERVAL" 1000)
    mountpoint -d "$MNT" > "$OUT/dataset.devt"
    "${BCC_CMD[@]}" > "$OUT/bcc.out" 2> "$OUT/bcc.err" &
    BCCPID=$!
    echo "${BCC_CMD[*]}" > "$OUT/bcc.cmd"
fi

step "fio: lay out the file, then sync"
"${FIO[@]}" --rw=write --bs=128k --end_fsync=1 --output="$OUT/fio-layout.txt"
zpool sync "$POOL"
step "empty the ARC of the pool's data (export, import): the workload's reads then both miss and hit"
zpool export "$POOL"
zpool import -d /dev/disk/by-id "$POOL"
sleep 2

step "recording: zfsmon record (with the four OpenZFS trace scripts) and zpool iostat -vp beside it, every $INTERVAL s"
zfsmon record --interval "$INTERVAL" --pool "$POOL" --trace arc --trace zil --trace txg --trace zfsslower \
    --out "$REC" --quiet 2> "$OUT/record.err" &
RECPID=$!
# zfsmon takes tens of seconds to start under emulation (and reads pool metadata while it does): the
# window begins once its first interval's readings are in the recording
q() { python3 -c 'import sqlite3, sys
try:
    print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])
except sqlite3.Error:
    print(0)' "$REC" "$1"; }
ticks() { q "SELECT count(*) FROM tick"; }
traced() { q "SELECT count(DISTINCT so.name) FROM sample sa JOIN stream st ON sa.stream = st.id
              JOIN source so ON st.source = so.id WHERE so.name LIKE 'trace:%'"; }
for _ in $(seq 300); do [ -s "$REC" ] && [ "$(ticks)" -ge 1 ] && break; sleep 1; done
step "recording has begun ($(ticks) readings); waiting for the four tracers to report"
# bpftrace takes 30-55 s per script to start: each reports an interval only when it saw an event, so a
# little I/O on the pool's root dataset (not the dataset under test) until all four have reported
# arc.bt needs OpenZFS's own tracepoints (zfs:zfs_arc__hit...), which a module built without them lacks: zfsmon
# then runs arc_kprobe.bt (kprobes on arc_read), so all four report either way
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
ls /sys/kernel/tracing/events/zfs > "$OUT/zfs-tracepoints.txt" 2>&1
ARC_OK=1  # without tracepoints arc_kprobe.bt needs these functions traceable (Debian's 2.1.11 inlines arc_access)
if [ ! -d /sys/kernel/tracing/events/zfs ]; then
    # a function's name is the line's first field, exactly (as zfsmon.host.untraceable reads it): a partly
    # inlined copy such as `arc_access.isra.0` (2.1.11) is not `arc_access` (grep -w took it for it on 2.1.11)
    for fn in arc_read arc_buf_access arc_access; do
        awk -v fn="$fn" '$1 == fn {found = 1; exit} END {exit !found}' /sys/kernel/tracing/available_filter_functions \
            || ARC_OK=0
    done
fi
echo "$ARC_OK" > "$OUT/arc-traceable.txt"
WANT=4; [ "$ARC_OK" = 1 ] || WANT=3
for _ in $(seq 100); do
    [ "$(traced)" -ge "$WANT" ] && break
    head -c 65536 /dev/urandom > "/$POOL/poke"; sync "/$POOL/poke"; cat "/$POOL/poke" > /dev/null
    sleep 3
done
step "tracers reporting: $(traced) of 4 (expected $WANT); idle, then the raw reads"
sleep $((INTERVAL * 3 + 2))
OBJSET=$(grep -l "dataset_name .* $ZFSMON_DATASET\$" /proc/spl/kstat/zfs/"$POOL"/objset-* | head -1)
echo "$OBJSET" > "$OUT/objset.path"
raw() {  # raw kstat reads at one moment, named .$1, with the time
    date +%s.%N > "$OUT/raw-time.$1"
    cat /proc/spl/kstat/zfs/arcstats > "$OUT/arcstats.$1"
    cat /proc/spl/kstat/zfs/zil > "$OUT/zil.$1"
    cat "$OBJSET" > "$OUT/objset.$1"
    cat /proc/spl/kstat/zfs/"$POOL"/txgs > "$OUT/txgs.$1"
    [ -e /proc/spl/kstat/zfs/"$POOL"/iostats ] && cat /proc/spl/kstat/zfs/"$POOL"/iostats > "$OUT/iostats.$1"
}
raw before
zpool iostat -vp -T u "$POOL" "$INTERVAL" > "$OUT/beside-iostat-vp.txt" &
BESIDE=$!
sleep $((INTERVAL * 2 + 2))
# offsets from a skewed (zipf) distribution, no random map: the ARC both hits and misses however few I/Os the
# guest manages in 25 s (with fio's default uniform random map no block is read twice before a whole pass, 12,288
# reads: a CI run on a loaded host did 2,888 reads for 10 data hits)
step "fio: 8k random read/write (zipf 1.1) with an fsync every 16 writes, 25 s"
"${FIO[@]}" --rw=randrw --rwmixread=70 --norandommap --random_distribution=zipf:1.1 --fsync=16 --runtime=25 \
    --time_based --output-format=json --output="$OUT/fio.json"
zpool sync "$POOL"
step "idle tail"
sleep $((INTERVAL * 4))
kill -TERM "$RECPID"
wait "$RECPID"
echo "record exit $?" > "$OUT/record.exit"
kill -TERM "$BESIDE"
wait "$BESIDE" 2>/dev/null
raw after

step "zfsslower: an operation made slow on purpose (one 64 MiB write call with zfs_dirty_data_max at 1 MiB)"
zfsmon trace zfsslower "$INTERVAL" --slow 1000 --no-histograms > "$OUT/trace-zfsslower.txt" \
    2> "$OUT/trace-zfsslower.err" &
SLOWPID=$!
for _ in $(seq 120); do
    grep -q "(trace:zfsslower)" "$OUT/trace-zfsslower.txt" && break
    head -c 8192 /dev/urandom > "$MNT/poke"; cat "$MNT/poke" > /dev/null
    sleep 3
done
step "zfsslower reporting; the slow write"
# (measured: one 16 MiB write took 0.7 s this way under emulation, under the 1 s threshold; 64 MiB ~2.8 s)
head -c 64M /dev/urandom > /var/tmp/slow.src
DIRTY=$(cat /sys/module/zfs/parameters/zfs_dirty_data_max)
echo $((1024 * 1024)) > /sys/module/zfs/parameters/zfs_dirty_data_max
S0=$(date +%s.%N)
dd if=/var/tmp/slow.src of="$MNT/slow-on-purpose.dat" bs=64M count=1 iflag=fullblock 2> "$OUT/slow-dd.txt"
S1=$(date +%s.%N)
echo "$DIRTY" > /sys/module/zfs/parameters/zfs_dirty_data_max
echo "$S0 $S1" > "$OUT/slow-write.time"
rm -f /var/tmp/slow.src
for _ in $(seq 60); do grep -q "file=slow-on-purpose.dat" "$OUT/trace-zfsslower.txt" && break; sleep 2; done
kill -TERM "$SLOWPID"
wait "$SLOWPID"
echo "trace exit $?" >> "$OUT/trace-zfsslower.err"

step "zfsmon export, info, iostat, arcstat"
zfsmon export "$REC" --csv "$OUT/export" > "$OUT/export.log" 2>&1
echo "export exit $?" >> "$OUT/export.log"
zfsmon info "$REC" > "$OUT/info.txt" 2>&1
cp "$REC" "$OUT/rec.zfsmon"

if [ "$BCC" = 1 ]; then
    step "bcc: waiting for its ready line (its program compiles while the steps above ran)"
    for _ in $(seq 900); do
        grep -q '^# zfsmon-bcc ready' "$OUT/bcc.out" && break
        kill -0 "$BCCPID" 2>/dev/null || break
        sleep 1
    done
    step "bcc: $(grep -c '^# zfsmon-bcc ready' "$OUT/bcc.out") ready line; fio 15 s under it, idle on both sides"
    sleep $((INTERVAL + 2))
    date +%s.%N > "$OUT/bcc-time.before"
    raw bcc-before
    "${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --runtime=15 --time_based --output-format=json \
        --output="$OUT/fio-bcc.json"
    sleep $((INTERVAL + 2))
    raw bcc-after
    date +%s.%N > "$OUT/bcc-time.after"
    sleep $((INTERVAL + 2))
    kill -TERM "$BCCPID"
    wait "$BCCPID"
    echo "bcc exit $?" >> "$OUT/bcc.err"
fi

step "pgbench: a PostgreSQL cluster on $MNT, zfsmon record beside a known number of -N transactions"
PG=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)  # the release's PostgreSQL: 15 on bookworm, 17 on trixie
PGRUN=(runuser -u postgres --)
PGC=(-h /tmp -p 5433 -U postgres)
PGREC=/var/tmp/pg.zfsmon
PGTX=300
mkdir -p "$MNT/pg" && chown postgres "$MNT/pg"
"${PGRUN[@]}" "$PG/initdb" -D "$MNT/pg" -A trust > "$OUT/pg-initdb.log" 2>&1
"${PGRUN[@]}" "$PG/pg_ctl" -D "$MNT/pg" -o "-p 5433 -k /tmp" -l /var/tmp/pg.log -w start > "$OUT/pg-start.log" 2>&1
"${PGRUN[@]}" "$PG/createdb" "${PGC[@]}" bench
"${PGRUN[@]}" pgbench "${PGC[@]}" -i -s 1 bench > "$OUT/pgbench-init.txt" 2>&1
"${PGRUN[@]}" psql "${PGC[@]}" -Atc "CHECKPOINT" bench > /dev/null
zpool sync "$POOL"
# the zil and arc traces through the bcc backend: one program, its child under zfsmon record
zfsmon record --interval "$INTERVAL" --pool "$POOL" zpool arcstats zil objset txgs --trace zil --trace arc \
    --backend bcc --out "$PGREC" --quiet 2> "$OUT/pg-record.err" &
PGRECPID=$!
REC_SAVE=$REC; REC=$PGREC
for _ in $(seq 300); do [ -s "$REC" ] && [ "$(ticks)" -ge 1 ] && break; sleep 1; done
PGWANT=2; [ "$ARC_OK" = 1 ] || PGWANT=1
for _ in $(seq 100); do  # bcc compiles its program first (28-120 s): poke the root dataset until both report
    [ "$(traced)" -ge "$PGWANT" ] && break
    head -c 65536 /dev/urandom > "/$POOL/poke"; sync "/$POOL/poke"; cat "/$POOL/poke" > /dev/null
    sleep 3
done
echo "traced $(traced)" > "$OUT/pg-traced.txt"
REC=$REC_SAVE
sleep $((INTERVAL * 2 + 2))
# the window must start idle, as it ends: PostgreSQL's background processes (autovacuum on the tables pgbench -i
# loaded, the checkpointer) commit to the ZIL now and then, and a commit between the recorder's last reading and the
# "before" read counts in the recording's window but not in the kstat's (seen: 347 recorded, 345 read). Wait until
# zil_commit_count has not moved for a whole recording interval and a second (at most ~5 minutes).
zil_commits() { awk '$1 == "zil_commit_count" {print $3}' /proc/spl/kstat/zfs/zil; }
QUIET=0
for _ in $(seq 50); do
    c=$(zil_commits); sleep $((INTERVAL + 1))
    [ "$(zil_commits)" = "$c" ] && { QUIET=1; break; }
done
echo "zil quiet $QUIET" >> "$OUT/pg-traced.txt"
raw pg-before
cd /var/tmp  # pgbench writes its per-transaction log (pgbench_log.PID) in the working directory
echo "pgbench -h /tmp -p 5433 -U postgres -N -c 1 -t $PGTX -P $INTERVAL --progress-timestamp -l bench" \
    > "$OUT/pgbench.cmd"
"${PGRUN[@]}" pgbench "${PGC[@]}" -N -c 1 -t "$PGTX" -P "$INTERVAL" --progress-timestamp -l bench \
    > "$OUT/pgbench.txt" 2> "$OUT/pgbench-progress.txt"
echo "pgbench exit $?" >> "$OUT/pgbench.txt"
cp /var/tmp/pgbench_log.* "$OUT/" 2>/dev/null
cd "$OUT"
# stop PostgreSQL inside the window (its shutdown checkpoint is a few commits more), so its end is idle
"${PGRUN[@]}" "$PG/pg_ctl" -D "$MNT/pg" -m fast -w stop >> "$OUT/pg-start.log" 2>&1
sleep $((INTERVAL * 3 + 2))
raw pg-after
kill -TERM "$PGRECPID"
wait "$PGRECPID"
echo "record exit $?" > "$OUT/pg-record.exit"
step "pgbench: its log into the recording, then zfsmon analyze and export inside the guest"
zfsmon import --into "$PGREC" "$OUT"/pgbench_log.* > "$OUT/pg-import.log" 2>&1
echo "import exit $?" >> "$OUT/pg-import.log"
zfsmon analyze --json "$PGREC" > "$OUT/pg-analyze.json" 2> "$OUT/pg-analyze.err"
echo "analyze exit $?" >> "$OUT/pg-analyze.err"
zfsmon analyze "$PGREC" > "$OUT/pg-analyze.txt" 2>&1
zfsmon export "$PGREC" --csv "$OUT/pgexport" > "$OUT/pg-export.log" 2>&1
echo "export exit $?" >> "$OUT/pg-export.log"
cp "$PGREC" "$OUT/pg.zfsmon"

step "zfsmon top --soak in tmux (160x50, once 80x24): a cold pgbench -N loop on zfsmon's own cluster, screens captured"
# the scene zfsmon exists for, short: the pool adopted as a lab by the guest's pool set-up, so --lab/--cold work
# on it; `q` ends it and leaves the recording (tests/guest/test_live.py asserts the screens and opens it)
TOPREC=/var/tmp/top.zfsmon
bash "$ZFSMON_SRC/bench/guest_top_soak.sh" "$OUT/top-screens" "${TOP_SOAK_SECONDS:=240}" 15 -- \
    --soak --lab "$POOL" --cold --init-scale 2 --interval 2 --record "$TOPREC" --run-seconds 40 --pause 2 \
    -- -c 2 -j 2 -N > "$OUT/top-soak.log" 2>&1
echo "top-soak exit $?" >> "$OUT/top-soak.log"
cp "$TOPREC" "$OUT/top.zfsmon"
cp /var/tmp/top*.pgbench.log "$OUT/" 2>/dev/null
zfsmon lab status > "$OUT/lab-status.txt" 2>&1

step "zpool_influxdb beside the text path: quiet edges around a ${INFLUX_SPAN:=24} s span with 8 s of fio in it"
# the zpool-influxdb collector (tests/guest/influx_side.py) runs across the span; one-shot zpool_influxdb and
# since-import `zpool iostat -vwp` (exact counts: no interval, no scaling) at each quiet edge; `zpool iostat -vpq
# POOL SPAN 2` (its second report: the span's rates) and `-vwp` likewise beside them (test_live.py compares them)
SIDE=(env PYTHONPATH="$ZFSMON_SRC" /opt/zfsmon/venv/bin/python3 "$ZFSMON_SRC/tests/guest/influx_side.py")
influx_counters() { "$INFLUX" "$POOL" | awk '$1 ~ /^zpool_stats,/ {print $1, $2}'; }
influx_quiet() {  # until two reads 2 s apart have the same counters (at most ~60 s); 0 if they did
    local a b
    for _ in $(seq 20); do
        a=$(influx_counters); sleep 2; b=$(influx_counters)
        [ -n "$a" ] && [ "$a" = "$b" ] && return 0
    done
    return 1
}
if [ -x "$INFLUX" ]; then
    rm -f "$OUT/influx-side.stop"
    "${SIDE[@]}" span "$OUT" "$POOL" 120 > "$OUT/influx-side.out" 2> "$OUT/influx-side.err" &
    SIDEPID=$!
    for _ in $(seq 120); do [ -e "$OUT/influx-side.ready" ] && break; kill -0 "$SIDEPID" 2>/dev/null || break; sleep 1; done
    zpool sync "$POOL"
    influx_quiet; echo "before $?" > "$OUT/influx-quiet.txt"
    "$INFLUX" "$POOL" > "$OUT/influx-before.txt"
    zpool iostat -vwp "$POOL" > "$OUT/influx-iostat-w-before.txt"
    zpool iostat -vpq "$POOL" "$INFLUX_SPAN" 2 > "$OUT/influx-iostat-vpq.txt" &
    P1=$!
    zpool iostat -vwp "$POOL" "$INFLUX_SPAN" 2 > "$OUT/influx-iostat-vwp-span.txt" &
    P2=$!
    sleep 2
    "${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --runtime=8 --time_based --output=/dev/null
    zpool sync "$POOL"
    wait "$P1" "$P2"
    influx_quiet; echo "after $?" >> "$OUT/influx-quiet.txt"
    "$INFLUX" "$POOL" > "$OUT/influx-after.txt"
    zpool iostat -vwp "$POOL" > "$OUT/influx-iostat-w-after.txt"
    "$INFLUX" "$POOL" > "$OUT/influx-after2.txt"
    zpool status "$POOL" > "$OUT/influx-status.txt"
    touch "$OUT/influx-side.stop"
    wait "$SIDEPID"
    echo "side exit $?" >> "$OUT/influx-side.err"
fi

step "captures under a small load (fio in the background)"
"${FIO[@]}" --rw=randrw --rwmixread=70 --fsync=16 --rate_iops=40,20 --runtime=900 --time_based \
    --output=/dev/null &
LOAD=$!
sleep 3
if [ -x "$INFLUX" ]; then
    step "collection CPU at 1 s under the small load: zpool-influxdb; zpool; zpool + latency; zpool iostat child"
    "${SIDE[@]}" cpu "$OUT" "$POOL" 15 >> "$OUT/influx-side.out" 2>> "$OUT/influx-side.err"
fi
zfsmon arcstat --csv 2 3 > "$OUT/zfsmon-arcstat.csv" 2> "$OUT/zfsmon-arcstat.err"
zfsmon arcstat --csv -f time,read,hits,iohs,miss,hit%,ioh%,miss%,l2read,l2hit% 2 3 > "$OUT/zfsmon-arcstat-f.csv" \
    2>> "$OUT/zfsmon-arcstat.err"
zfsmon iostat -p "$POOL" 2 2 > "$OUT/zfsmon-iostat.txt" 2>&1
step "the exporter under load: scrapes bracketed by raw kstat reads"
zfsmon exporter --interval 2 --pool "$POOL" --listen 127.0.0.1:9134 > "$OUT/exporter.log" 2>&1 &
EXPPID=$!
scrape() { python3 -c 'import sys, urllib.request
try:
    sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9134/metrics", timeout=10).read().decode())
except OSError as e:
    sys.exit(1)'; }
for _ in $(seq 180); do scrape > "$OUT/scrape.0" && grep -q "^zfsmon_last_sample_timestamp_seconds" "$OUT/scrape.0" && break; sleep 1; done
raw scrape-before
scrape > "$OUT/scrape.1"
# a scrape after a change of value is from a sample taken after the raw read
for _ in $(seq 60); do
    scrape > "$OUT/scrape.2"
    [ "$(grep "^zfsmon_last_sample_timestamp_seconds" "$OUT/scrape.1")" != "$(grep "^zfsmon_last_sample_timestamp_seconds" "$OUT/scrape.2")" ] && break
    sleep 1
done
raw scrape-after
kill -TERM "$EXPPID"
wait "$EXPPID"
echo "exporter exit $?" >> "$OUT/exporter.log"
capture_tools
capture_status_changes
capture_kstats
step "bpftrace's own output of the four OpenZFS scripts, side by side under the load"
BT=()
BTS=(zil txg zfsslower); [ "$ARC_OK" = 1 ] && BTS+=(arc)
for s in "${BTS[@]}"; do
    args=(2 1000); script=$s
    if [ "$s" = arc ]; then  # INTERVAL_S only; without zfs tracepoints the kprobe variant, as zfsmon picks it
        args=(2); [ -d /sys/kernel/tracing/events/zfs ] || script=arc_kprobe
    fi
    bpftrace "$ZFSMON_SRC/bpftrace/$script.bt" "${args[@]}" > "$CAP/bpftrace-$s.txt" 2> "$CAP/bpftrace-$s.txt.stderr" &
    BT+=($!)
    printf '%s\t%s\t%s\n' "bpftrace-$s.txt" "bpftrace bpftrace/$script.bt ${args[*]}" 0 >> "$CAP/COMMANDS.tsv"
done
# until each has reported two intervals (start-up is 30-55 s each under emulation), bounded
for _ in $(seq 150); do
    n=0; for s in "${BTS[@]}"; do [ "$(grep -c '^interval' "$CAP/bpftrace-$s.txt")" -ge 2 ] && n=$((n + 1)); done
    [ "$n" -ge "${#BTS[@]}" ] && break
    sleep 2
done
kill -INT "${BT[@]}"
wait "${BT[@]}"
for s in "${BTS[@]}"; do [ -s "$CAP/bpftrace-$s.txt.stderr" ] || rm -f "$CAP/bpftrace-$s.txt.stderr"; done
kill -TERM "$LOAD"
wait "$LOAD" 2>/dev/null

step "faults, short (the matrix's io and cache rows, 40 s each: bench/guest_faults.sh): read errors injected on data1 (ZED faults it after 20-30 s), then the cache device pulled out of the machine and put back"
ZFSMON_OUT=$OUT/faults ZFSMON_HOSTCTL=$OUT/hostctl FAULTS_HOLD=40 FAULTS_CALM=35 FAULTS_DISK_MB=64 FAULTS_WARM_MB=128 \
    bash "$ZFSMON_SRC/bench/guest_faults.sh" 30 io,cache > "$OUT/faults.log" 2>&1
echo "faults exit $?" >> "$OUT/faults.log"
step "done"
