#!/usr/bin/env bash
# Installs the official `openai` npm package (pinned) into DIR/node_modules for test_serve_openai:
# a client nobody here wrote. Run by CTest as the fixture `serve_npm`. Without npm or the registry
# it fails under CI=true and answers "skipped" (77) otherwise.
# Usage: npm_install.sh DIR
set -u
dir=$1
version=6.30.1
installed=$dir/node_modules/openai/package.json
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
  echo "openai $version already in $dir"
  exit 0
fi
skip() {
  echo "$1"
  if [ "${CI:-}" = true ]; then exit 1; fi
  exit 77
}
command -v node > /dev/null || skip "node is missing (scripts/install-deps.sh installs it)"
command -v npm > /dev/null || skip "npm is missing (scripts/install-deps.sh installs it)"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "openai@$version" ||
  skip "npm install openai@$version failed (is the npm registry reachable?)"
echo "installed openai $version into $dir"
