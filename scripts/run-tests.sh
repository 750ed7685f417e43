#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is needed, lints, then runs pytest.
# As root, the lab (zfs-fuse), bpftrace and PostgreSQL tests run for real; with CI=true a missing
# capability fails them instead of skipping. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
PY=${PYTHON:-python3}
echo "== ruff"
"$PY" -m ruff check zfsmon tests bench scripts || exit 1
echo "== import layers (import-linter: contracts in setup.cfg)"
"$PY" -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())' --no-cache || exit 1
echo "== docs/metrics.md is generated from the metrics table"
"$PY" -m zfsmon metrics --markdown | diff -u docs/metrics.md - || { echo "docs/metrics.md is stale: zfsmon metrics --markdown > docs/metrics.md"; exit 1; }
echo "== pytest"
"$PY" -m pytest -rs -p no:cacheprovider "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "run-tests: pytest collected no tests: that is a failure" >&2
    exit 1
fi
exit "$rc"
