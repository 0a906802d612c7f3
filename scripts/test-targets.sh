#!/usr/bin/env bash
# Prints the build targets that a selection of tests needs, one per line, so a suite that runs a few
# tests (`make tsan`, `make fuzz`) builds those and not the whole tree: every target whose output a
# selected test names in its command (a path ending in the target's name; CTest's own list, with
# the fixtures it adds), plus every `uform*` target (the library, its on-demand modules, the
# command line and the server, which test scripts reach through the build folder). A test whose program is missing fails; it is never skipped.
# Usage: scripts/test-targets.sh BUILD_DIR [ctest selection options, e.g. -L tsan]
set -euo pipefail
build=$1
shift
json=$(ctest --test-dir "$build" --show-only=json-v1 "$@")
targets=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. \([A-Za-z0-9_.+-]*\).*/\1/p')
/usr/bin/python3 - "$(cd "$build" && pwd)" "$json" "$targets" <<'PY'
import json
import os
import re
import sys

# CTest's JSON names the selected tests (fixtures included) but leaves out the command of a test
# whose program is not built yet, which is the case here: the commands come from the
# CTestTestfile.cmake files that configuring wrote.
build, listing, targets = sys.argv[1], json.loads(sys.argv[2]), set(sys.argv[3].split())
selected = {test["name"] for test in listing.get("tests", [])}
commands = {}
for folder, _, files in os.walk(build):
    if "CTestTestfile.cmake" in files:
        with open(os.path.join(folder, "CTestTestfile.cmake")) as handle:
            for line in handle:
                match = re.match(r"add_test\(\[=\[(.*?)\]=\] (.*)\)\s*$", line)
                if match:
                    commands[match.group(1)] = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(2))
missing = sorted(selected - commands.keys())
if missing:
    sys.exit(f"test-targets: no add_test line for {', '.join(missing)}")
wanted = {name for name in targets if name.startswith("uform")}
for name in selected:
    # Words of a shell command (`sh -c "./media_image_fuzzer ..."`) count as well: any path whose
    # last part is a target's name.
    for word in " ".join(commands[name]).split():
        if os.sep in word and os.path.basename(word) in targets:
            wanted.add(os.path.basename(word))
print("\n".join(sorted(wanted)))
PY
