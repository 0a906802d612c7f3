#!/usr/bin/env bash
# `make test` after the build: every test through CTest, then one summary (scripts/test_summary.py):
# counts, skips with their reasons, and the CPU classes this machine could not exercise.
# Usage: scripts/run-tests.sh BUILD_DIR [ctest options...]
set -u
build=$1
shift
junit="$(cd "$build" && pwd)/junit.xml"
rm -f "$junit"
ctest --test-dir "$build" --output-on-failure --output-junit "$junit" "$@"
status=$?
if [ -f "$junit" ]; then
  /usr/bin/python3 "$(dirname "$0")/test_summary.py" "$junit" || status=1
else
  echo "run-tests: CTest wrote no $junit" >&2
  status=1
fi
exit $status
