#!/usr/bin/env bash
# Compiles and runs the C examples of the documentation against the freshly built library, so they
# cannot go stale: the ```c block of README.md and the quickstart at the top of uform.h.
# Usage: test_examples.sh SOURCE_DIR BUILD_DIR C_COMPILER [EXTRA_FLAGS] [CHECKPOINT]
set -u
source_dir=$1 build_dir=$2 compiler=${3:-cc} extra_flags=${4:-} checkpoint=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

run_example() { # name file
  local name=$1 file=$2
  if "$compiler" -std=c11 -Wall -Wextra -Werror $extra_flags -I"$source_dir/include" "$file" -o "$work/$name" \
       -L"$build_dir" -luform -Wl,-rpath,"$build_dir" && "$work/$name" $checkpoint; then
    passed=$((passed + 1))
  else
    echo "example $name failed ($file)" >&2
    failed=$((failed + 1))
  fi
}

# README: the first fenced block marked c.
awk '/^```c$/ {inside=1; next} /^```$/ && inside {exit} inside {print}' "$source_dir/README.md" > "$work/readme.c"
if [ -s "$work/readme.c" ]; then run_example readme_quickstart "$work/readme.c"; else echo "README.md has no c block" >&2; failed=$((failed + 1)); fi

# The header: the indented example between "Quickstart" and the first line that is only " *".
awk '/Quickstart/ {inside=1; next} inside && started && /^ \* [^ ]/ {exit} inside && /^ \*     / {started=1; sub(/^ \*     /, ""); print; next} inside && /^ \*$/ {print ""}' \
  "$source_dir/include/uform/uform.h" > "$work/header.c"
if [ -s "$work/header.c" ]; then run_example header_quickstart "$work/header.c"; else echo "uform.h has no quickstart" >&2; failed=$((failed + 1)); fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
