#!/usr/bin/env bash
# Installs the two references of the tokenizer comparisons into DIR/node_modules (CTest fixture
# `tokenizer_npm`), pinned:
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
source "$(dirname "$0")/../common/skip.sh"
dir=$1
transformers=4.3.1
rust=0.23.2
installed() {
  grep -q "\"version\": \"$transformers\"" "$dir/node_modules/@huggingface/transformers/package.json" 2> /dev/null &&
    grep -q "\"version\": \"$rust\"" "$dir/node_modules/tokenizers/package.json" 2> /dev/null
}
if installed; then
  echo "transformers.js $transformers and tokenizers $rust already in $dir"
  exit 0
fi
command -v node > /dev/null || skip_missing "node"
command -v npm > /dev/null || skip_missing "npm"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error --ignore-scripts \
  "@huggingface/transformers@$transformers" "tokenizers@$rust" ||
  skip_missing "the npm packages @huggingface/transformers@$transformers and tokenizers@$rust (is the npm registry reachable?)"
installed || skip_missing "a complete install of the tokenizer references in $dir"
echo "installed transformers.js $transformers and tokenizers $rust into $dir"
