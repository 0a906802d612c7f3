#!/usr/bin/env bash
# Runs a Node test of `uform serve` with the machine's node (Debian's or NodeSource's); without
# node it skips (77), and fails under CI=true (tests/common/skip.sh). Usage: run_node.sh SCRIPT.mjs ARGS...
source "$(dirname "$0")/../common/skip.sh"
command -v node > /dev/null || skip_missing "node"
exec node "$@"
