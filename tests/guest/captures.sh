#!/bin/bash
# Captures of the tool outputs and kstats zfsmon reads, for tests/data/openzfs-VERSION: sourced by
# tests/guest/scenario.sh and tests/data/openzfs-2.4/capture.sh, which set CAP (the captures directory, with
# kstat/ and an empty COMMANDS.tsv in it) and POOL.
# capture NAME CMD...: stdout to captures/NAME, the command line and exit code to COMMANDS.tsv
capture() {
    local name=$1; shift
    "$@" > "$CAP/$name" 2> "$CAP/$name.stderr"
    local rc=$?
    [ -s "$CAP/$name.stderr" ] || rm -f "$CAP/$name.stderr"
    printf '%s\t%s\t%s\n' "$name" "$*" "$rc" >> "$CAP/COMMANDS.tsv"
}

# capture_tools: every zpool iostat / status / list variant, arcstat, arc_summary and zilstat
capture_tools() {
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
    if [ -x "${INFLUX:-}" ]; then  # zpool_influxdb (2.1+), plain and with summed buckets
        capture zpool_influxdb.txt "$INFLUX" "$POOL"
        capture zpool_influxdb-s.txt "$INFLUX" --sum-histogram-buckets "$POOL"
    fi
    capture zfs-list.txt zfs list -r "$POOL"
    # OpenZFS 2.4 renamed arcstat and arc_summary to zarcstat and zarcsummary (the old names are gone): the one there is
    ARCSTAT=arcstat; command -v zarcstat > /dev/null && ARCSTAT=zarcstat
    ARCSUMMARY=arc_summary; command -v zarcsummary > /dev/null && ARCSUMMARY=zarcsummary
    capture arcstat.txt "$ARCSTAT" 1 3
    capture arcstat-a.txt "$ARCSTAT" -a 1 2
    capture arc_summary.txt "$ARCSUMMARY"
    capture zilstat.txt timeout -s TERM 20 zilstat -i 1
}

# capture_status_changes: more iostat/status variants, then status through a scrub, an offline leaf, a resilver
capture_status_changes() {
    # requested by the lead for the status/latency sources and the -y/-T parsers (issues 11, 12): live -w deltas,
    # -y with a time stamp, zpool status -p -s text, and status (-j and text) during a scrub and with a leaf offline
    capture zpool-iostat-wpyvTu.txt zpool iostat -T u -w -p -y -v "$POOL" 2 2
    capture zpool-iostat-vyTu.txt zpool iostat -vy -T u "$POOL" 2 2
    capture zpool-status-ps.txt zpool status -p -s "$POOL"
    zpool scrub "$POOL"
    capture zpool-status-j-scrub-started.json zpool status -j --json-flat-vdevs --json-int "$POOL"
    capture zpool-status-scrub-started.txt zpool status "$POOL"
    zpool wait -t scrub "$POOL"
    capture zpool-status-j-scrub-done.json zpool status -j --json-flat-vdevs --json-int "$POOL"
    capture zpool-status-scrub-done.txt zpool status "$POOL"
    zpool offline "$POOL" virtio-data1
    capture zpool-status-j-degraded.json zpool status -j --json-flat-vdevs --json-int "$POOL"
    capture zpool-status-degraded.txt zpool status "$POOL"
    zpool online "$POOL" virtio-data1
    capture zpool-status-j-resilver.json zpool status -j --json-flat-vdevs --json-int "$POOL"
    zpool wait -t resilver "$POOL"
    capture zpool-status-j-resilvered.json zpool status -j --json-flat-vdevs --json-int "$POOL"
    capture zpool-status-resilvered.txt zpool status "$POOL"
}

# capture_kstats: every file under /proc/spl/kstat/zfs, as kstat/NAME (a pool's files as kstat/POOL.FILE)
capture_kstats() {
    local f name
    for f in $(cd /proc/spl/kstat/zfs && find . -type f | sort); do
        name=$(echo "${f#./}" | tr '/' '.')
        capture "kstat/$name" cat "/proc/spl/kstat/zfs/${f#./}"
    done
}
