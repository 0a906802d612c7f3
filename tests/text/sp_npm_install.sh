#!/usr/bin/env bash
# Installs Hugging Face's own `tokenizers` npm package (Node bindings of the Rust crate behind
# Python's tokenizers and transformers' fast tokenizers, shipped with its prebuilt binaries) into
# DIR/node_modules for sp_tokenizers_parity.mjs, pinned by tests/text/npm-sp/package-lock.json
# (tokenizers 0.23.2) and installed with `npm ci` (tests/common/npm_ci.sh). Run by CTest as the
# fixture `sp_npm`. Without node, npm or the registry it skips (77), and fails under CI=true.
# Usage: sp_npm_install.sh DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common/skip.sh"
source "$here/../common/npm_ci.sh"
npm_ci "$here/npm-sp" "$1"
grep -q '"version": "0.23.2"' "$1/node_modules/tokenizers/package.json" 2> /dev/null ||
  skip_missing "tokenizers 0.23.2 in $1 (the lockfile's install is incomplete)"
echo "tokenizers 0.23.2 in $1"
