#!/usr/bin/env bash
# Installs the two references of the tokenizer comparisons into DIR/node_modules (CTest fixture
# `tokenizer_npm`), pinned with every dependency by tests/text/npm/package-lock.json and installed
# with `npm ci` (tests/common/npm_ci.sh):
#   @huggingface/transformers 4.3.1  transformers.js, which tokenizes with @huggingface/tokenizers;
#   tokenizers 0.23.2                Hugging Face's own Node bindings of the Rust `tokenizers` crate (the
#                                    code under Python's `tokenizers`), prebuilt binaries for every
#                                    platform inside the package (the pin src/text/sp_* tests use too).
# --ignore-scripts: onnxruntime-node's install script would download CUDA providers from outside the
# registry; the tokenizers need none of it, and the prebuilt binaries (sharp's, onnxruntime's, the
# Rust bindings') come inside npm packages, so everything installs from the npm registry alone.
# Without node, npm or the registry it skips (77), and fails under CI=true (tests/common/skip.sh).
# Usage: tokenizer_npm_install.sh DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common/skip.sh"
source "$here/../common/npm_ci.sh"
npm_ci "$here/npm" "$1" --ignore-scripts
grep -q '"version": "4.3.1"' "$1/node_modules/@huggingface/transformers/package.json" 2> /dev/null &&
  grep -q '"version": "0.23.2"' "$1/node_modules/tokenizers/package.json" 2> /dev/null ||
  skip_missing "a complete install of the tokenizer references in $1"
echo "transformers.js 4.3.1 and tokenizers 0.23.2 in $1"
