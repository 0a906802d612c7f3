#!/usr/bin/env bash
# One process killed and resumed (issue 37, item 5): `uform train --save-every 2` is SIGKILLed once
# its first checkpoint exists (polled for, at most 60 s), so it dies between saves, with no chance
# to write anything on the way out. Resumed from that file with the steps left, it must end with an
# uninterrupted run's optimizer state (master weights, both moments, step) bit for bit: the same
# process, thread count and batches compute the same sums in the same order, so no tolerance is due.
# The manifest and the comparison are the mesh's (tests/mesh/cli_common.sh), which checks the
# multi-member variant of this in test_mesh_resume.sh.
# Usage: test_train_kill_resume.sh UFORM_BINARY PYTHON
set -u
uform=$1 python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"
. "$here/../mesh/cli_common.sh"
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null; rm -rf "$work"' EXIT
mesh_cli_manifest "$work" || { echo "cannot generate the manifest" >&2; exit 1; }
clear_launchers

steps=40 every=2
common=(--batch 6 --seed 5 --warmup 2 --threads 1 --f32 --quiet)

# The uninterrupted run.
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/whole.safetensors" --steps $steps "${common[@]}"

# The run that is killed: the file appears first at step 2 (saves are atomic renames, so whatever
# is there is a whole checkpoint); the kill lands within a few steps of it, long before step 40.
"$uform" train "$work/train.jsonl" --out "$work/killed.safetensors" --steps $steps --save-every $every \
  "${common[@]}" 2> "$work/killed.err" &
pid=$!
deadline=$((SECONDS + 60))
while [ ! -e "$work/killed.safetensors" ] && kill -0 "$pid" 2> /dev/null && [ $SECONDS -lt $deadline ]; do
  sleep 0.005
done
kill -9 "$pid"
wait "$pid"
check test $? -eq 137             # killed, not finished: else nothing here was interrupted
pid=
check test -e "$work/killed.safetensors"

# The step the checkpoint holds (optimizer.step, int64): a multiple of --save-every, short of the end.
saved=$("$python" - "$work/killed.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
size = struct.unpack("<Q", data[:8])[0]
entry = json.loads(data[8:8 + size])["optimizer.step"]
begin, end = entry["data_offsets"]
print(struct.unpack("<q", data[8 + size + begin:8 + size + end])[0])
PY
)
check test -n "$saved"
saved=${saved:-0}
echo "killed after the save of step $saved of $steps" >&2
check test "$saved" -ge "$every"
check test $((saved % every)) -eq 0
check test "$saved" -lt "$steps"

# Resumed for the steps left: the uninterrupted run, bit for bit.
cp "$work/killed.safetensors" "$work/resumed.safetensors"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/resumed.safetensors" --resume "$work/resumed.safetensors" \
  --steps $((steps - saved)) "${common[@]}"
check identical_weights "$work/resumed.safetensors" "$work/whole.safetensors"
# The control: one step short is not the same state (the comparison can fail).
cp "$work/killed.safetensors" "$work/short.safetensors"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/short.safetensors" --resume "$work/short.safetensors" \
  --steps $((steps - saved - 1)) "${common[@]}"
check status_is 1 identical_weights "$work/short.safetensors" "$work/whole.safetensors"
finish
