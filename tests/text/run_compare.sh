#!/usr/bin/env bash
# Runs tests/text/compare_tokenizers.mjs for one kind of generated tokenizer, skipping (77; a
# failure under CI=true) when node, perl or the npm references (fixture tokenizer_npm) are missing.
# Usage: run_compare.sh NODE_DIR PYTHON TESTS_DIR DUMP WORK_DIR KIND [MAX_LENGTH [COUNT]]
source "$(dirname "$0")/../common/skip.sh"
command -v node > /dev/null || skip_missing "node"
command -v perl > /dev/null || skip_missing "perl"
[ -f "$1/node_modules/tokenizers/package.json" ] || skip_missing "the npm references in $1 (fixture tokenizer_npm)"
mkdir -p "$5"
exec node "$(dirname "$0")/compare_tokenizers.mjs" "$@"
