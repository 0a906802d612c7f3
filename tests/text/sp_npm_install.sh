#!/usr/bin/env bash
# Installs Hugging Face's own `tokenizers` npm package (pinned; Node bindings of the Rust crate behind
# Python's tokenizers and transformers' fast tokenizers, shipped with its prebuilt binaries) into
# DIR/node_modules for sp_tokenizers_parity.mjs. Run by CTest as the fixture `sp_npm`. Without node,
# npm or the registry it skips (77), and fails under CI=true (tests/common/skip.sh).
# Usage: sp_npm_install.sh DIR
set -u
source "$(dirname "$0")/../common/skip.sh"
dir=$1
version=0.23.2
installed=$dir/node_modules/tokenizers/package.json
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
  echo "tokenizers $version already in $dir"
  exit 0
fi
command -v node > /dev/null || skip_missing "node"
command -v npm > /dev/null || skip_missing "npm"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "tokenizers@$version" ||
  skip_missing "the tokenizers npm package (npm install tokenizers@$version failed: is the npm registry reachable?)"
echo "installed tokenizers $version into $dir"
