#!/usr/bin/env bash
# Installs the official `openai` npm package (pinned) into DIR/node_modules for test_serve_openai:
# a client nobody here wrote. Run by CTest as the fixture `serve_npm`. Without node, npm or the
# registry it skips (77), and fails under CI=true (tests/common/skip.sh).
# Usage: npm_install.sh DIR
set -u
source "$(dirname "$0")/../common/skip.sh"
dir=$1
version=6.30.1
installed=$dir/node_modules/openai/package.json
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
  echo "openai $version already in $dir"
  exit 0
fi
command -v node > /dev/null || skip_missing "node"
command -v npm > /dev/null || skip_missing "npm"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "openai@$version" ||
  skip_missing "the openai npm package (npm install openai@$version failed: is the npm registry reachable?)"
echo "installed openai $version into $dir"
