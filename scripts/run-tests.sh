#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is needed, lints, then runs pytest.
# As root, the lab (zfs-fuse), bpftrace and PostgreSQL tests run for real; with CI=true a missing
# capability fails them instead of skipping. Extra arguments go to pytest.
# Without the shared fixtures (ZFSMON_FIXTURES, default ../shared/fixtures) their tier is skipped outside CI,
# said in one line at the end of pytest's output (tests/conftest.py); with CI=true it fails.
# The OpenZFS guest tier (tests/guest: a QEMU guest with kernel OpenZFS) runs too unless ZFSMON_GUEST=0;
# its image (OpenZFS ZFSMON_GUEST_ZFS, default 2.3) is built in the background while the other tiers run.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
PY=${PYTHON:-python3}
export ZFSMON_GUEST=${ZFSMON_GUEST:-1}
GUEST_BUILD=
# (only when the guest tier is among what pytest runs: all of it, or tests/guest named)
case "${ZFSMON_GUEST,,}:$#:$*" in
    1:0:*|true:0:*|yes:0:*|1:*guest*|true:*guest*|yes:*guest*)
        # the cold build (~18 min) overlaps the other tiers; the guest fixture then waits on the build lock
        # and finds the image cached (a cached one makes this a no-op). Its own failure is the fixture's to report.
        GUEST_LOG=${ZFSMON_GUEST_BUILD_LOG:-/var/tmp/zfsmon-guest-build.log}
        echo "== guest image: building OpenZFS ${ZFSMON_GUEST_ZFS:-2.3} in the background (log: $GUEST_LOG)"
        nice -n 10 "$PY" -m zfsmon guest build --zfs "${ZFSMON_GUEST_ZFS:-2.3}" > "$GUEST_LOG" 2>&1 &
        GUEST_BUILD=$!
        # never leave a build running behind us (it undoes its own chroot mounts on SIGTERM)
        trap '[ -n "$GUEST_BUILD" ] && kill -TERM "$GUEST_BUILD" 2>/dev/null && wait "$GUEST_BUILD"' EXIT
        ;;
esac
echo "== ruff"
"$PY" -m ruff check zfsmon tests bench scripts || exit 1
echo "== import layers (import-linter: contracts in setup.cfg)"
"$PY" -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())' --no-cache || exit 1
echo "== types (mypy: [mypy] in setup.cfg)"
"$PY" -m mypy zfsmon || exit 1
echo "== docs/metrics.md is generated from the metrics table"
"$PY" -m zfsmon metrics --markdown | diff -u docs/metrics.md - || { echo "docs/metrics.md is stale: zfsmon metrics --markdown > docs/metrics.md"; exit 1; }
echo "== pytest"
"$PY" -m pytest -rs -p no:cacheprovider "$@"
rc=$?
if [ -n "$GUEST_BUILD" ] && ! kill -0 "$GUEST_BUILD" 2>/dev/null; then
    wait "$GUEST_BUILD"; echo "== guest image build exited $? ($(tail -n 1 "$GUEST_LOG"))"; GUEST_BUILD=
fi
if [ "$rc" -eq 5 ]; then
    echo "run-tests: pytest collected no tests: that is a failure" >&2
    exit 1
fi
exit "$rc"
