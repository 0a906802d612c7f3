#!/usr/bin/env bash
# Footprint of a process that loads a model and encodes one text, for one or more builds of libuform:
# shared objects mapped, exec-to-main and exec-to-first-embedding times, RSS. Each build's
# bench_footprint is compiled from bench/bench_footprint.c against that build's libuform.so (the
# program uses the public header only), then all builds run in turn, RUNS times, and the medians are
# printed, so a before/after comparison shares the machine's state.
#
# usage: bench/footprint.sh CHECKPOINT RUNS NAME=BUILD_DIR [NAME=BUILD_DIR ...]
#   BUILD_DIR holds libuform.so (a CMake build folder); its source's include/ is found from
#   CMakeCache.txt.
set -euo pipefail
checkpoint=$1 runs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=()
for spec in "$@"; do
  name=${spec%%=*} build=$(cd "${spec#*=}" && pwd)
  source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  cc -O2 -I"$source/include" "$here/bench_footprint.c" -L"$build" -luform -Wl,-rpath,"$build" -o "$work/$name"
  names+=("$name")
done
for ((run = 0; run < runs; ++run)); do
  for name in "${names[@]}"; do
    "$work/$name" "$checkpoint" "$(date +%s%N)" >> "$work/$name.jsonl"
  done
done
python3 - "$work" "${names[@]}" <<'PY'
import json, statistics, sys
work, names = sys.argv[1], sys.argv[2:]
keys = ["objects_at_main", "objects", "rss_at_main_kib", "rss_kib", "peak_rss_kib", "exec_to_main_ms", "exec_to_embedding_ms"]
print("| build | " + " | ".join(keys) + " |")
print("| --- " * (len(keys) + 1) + "|")
for name in names:
    rows = [json.loads(line) for line in open(f"{work}/{name}.jsonl")]
    medians = [statistics.median(row[key] for row in rows) for key in keys]
    print(f"| {name} | " + " | ".join(f"{value:.1f}" if isinstance(value, float) else str(value) for value in medians) + f" |  ({len(rows)} runs, medians)")
PY
