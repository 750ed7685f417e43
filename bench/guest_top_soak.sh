#!/bin/bash
# `zfsmon top --soak` as a person runs it, inside the OpenZFS guest: in tmux at 160x50, its screen captured
# into SCREENS every EVERY seconds while the soak runs, once at 80x24 near the end, then `q`.
#
#   guest_top_soak.sh SCREENS SECONDS EVERY -- TOP_ARGS...
#
# SCREENS/NNNN-WxH.txt are the captures (NNNN: seconds since top started), SCREENS/top.rc zfsmon's exit
# status (its messages are on the screen: Textual draws on stderr, which stays the terminal). TOP_ARGS go to `zfsmon top` as given (--soak --lab POOL --record FILE
# ... -- PGBENCH_OPTS). Used by tests/guest/scenario.sh (a few minutes, CI) and bench/bench_guest_warmup.py.
set -u
SCREENS=${1:?screens directory}
SECONDS_TOTAL=${2:?seconds of soak}
EVERY=${3:?seconds between captures}
shift 3
[ "${1:-}" = "--" ] && shift
mkdir -p "$SCREENS"
SESSION=zfsmon-top-$$
T0=$(date +%s)
cap() {
    local size
    size=$(tmux display-message -p -t "$SESSION" '#{window_width}x#{window_height}' 2>/dev/null) || return 1
    tmux capture-pane -p -t "$SESSION" > "$SCREENS/$(printf '%04d' $(( $(date +%s) - T0 )))-$size.txt" 2>/dev/null
}
size() {
    tmux resize-window -t "$SESSION" -x "$1" -y "$2"
}
# the command top runs in: no COLUMNS/LINES (they would pin Textual's size), its status into top.rc
printf -v ARGS '%q ' "$@"
tmux new-session -d -s "$SESSION" -x 160 -y 50 \
    "unset COLUMNS LINES; zfsmon top $ARGS; echo \$? > $SCREENS/top.rc; sleep 5"
tmux set-option -t "$SESSION" window-size manual
size 160 50
narrow_at=$(( SECONDS_TOTAL - 2 * EVERY ))
narrow_done=0
while [ $(( $(date +%s) - T0 )) -lt "$SECONDS_TOTAL" ] && [ ! -e "$SCREENS/top.rc" ]; do
    sleep "$EVERY"
    [ -e "$SCREENS/top.rc" ] && break
    cap
    if [ "$narrow_done" = 0 ] && [ $(( $(date +%s) - T0 )) -ge "$narrow_at" ]; then
        # the same screen on the smallest terminal a sysadmin may have; then back
        size 80 24; sleep 3; cap; size 160 50; sleep 3; cap
        narrow_done=1
    fi
done
cap
tmux send-keys -t "$SESSION" q
for _ in $(seq 600); do [ -e "$SCREENS/top.rc" ] && break; sleep 0.5; done
tmux kill-session -t "$SESSION" 2>/dev/null
if [ -e "$SCREENS/top.rc" ]; then
    echo "zfsmon top exited $(cat "$SCREENS/top.rc") after $(( $(date +%s) - T0 )) s; $(ls "$SCREENS" | grep -c 'x.*\.txt$') screens"
else
    echo "zfsmon top did not exit within 300 s of q" > "$SCREENS/top.rc.missing"
    echo "zfsmon top did not exit after q"
    exit 1
fi
