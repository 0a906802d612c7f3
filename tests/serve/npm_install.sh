#!/usr/bin/env bash
# Installs the official `openai` npm package into DIR/node_modules for test_serve_openai: a client
# nobody here wrote. Pinned with everything it depends on by tests/serve/npm/package-lock.json
# (openai 6.30.1) and installed with `npm ci` (tests/common/npm_ci.sh). Run by CTest as the fixture
# `serve_npm`. Without node, npm or the registry it skips (77), and fails under CI=true.
# Usage: npm_install.sh DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common/skip.sh"
source "$here/../common/npm_ci.sh"
npm_ci "$here/npm" "$1"
grep -q '"version": "6.30.1"' "$1/node_modules/openai/package.json" 2> /dev/null ||
  skip_missing "openai 6.30.1 in $1 (the lockfile's install is incomplete)"
echo "openai 6.30.1 in $1"
