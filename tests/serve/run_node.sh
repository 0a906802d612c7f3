#!/usr/bin/env bash
# Runs a Node test of `uform serve` with Debian's (or NodeSource's) node; without node it fails
# under CI=true and answers "skipped" (77) otherwise. Usage: run_node.sh SCRIPT.mjs ARGS...
if ! command -v node > /dev/null; then
  echo "node is missing (scripts/install-deps.sh installs it)"
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
exec node "$@"
