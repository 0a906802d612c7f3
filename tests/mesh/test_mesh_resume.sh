#!/usr/bin/env bash
# No work lost (docs/mesh.md, "When a member is lost"): three members (torchrun's variables, --mesh
# auto on loopback) train; one is SIGKILLed mid-run; the others fail with peer_lost, and member 0
# saves the last completed step (weights, optimizer, data order) to --out and prints the command
# that resumes. Resuming it with 3 members gives an uninterrupted 3-member run's weights bit for bit,
# and with 2 members the same to 1e-3 relative (the sums run in another order, and 60 steps grow the rounding): the global batch
# sequence goes on where it stopped. Every member is waited for or killed; bounded in time.
# Usage: test_mesh_resume.sh UFORM_BINARY PYTHON
set -u
uform=$1 python=${2:-/usr/bin/python3}
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }
contains() { grep -q -- "$2" "$1" || { echo "$1 lacks '$2':" >&2; cat "$1" >&2; return 1; }; }
source "$(dirname "$0")/cli_common.sh"
mesh_cli_manifest "$work" || { echo "cannot generate the manifest" >&2; exit 1; }
clear_launchers

steps=60
common=(--batch 9 --seed 4 --warmup 2 --threads 1 --f32 --mesh auto --mesh-address 127.0.0.1 --mesh-timeout 20)

# Starts `count` members of a run; their process ids in members[], stderr in NAME.RANK.err.
members=()
start() {
  local name=$1 count=$2; shift 2
  local port=$(( $(free_port) - 1 ))
  members=()
  for ((rank = 0; rank < count; ++rank)); do
    env RANK=$rank WORLD_SIZE=$count LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$count MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port TORCHELASTIC_RUN_ID=$name "$uform" train "$work/train.jsonl" "${common[@]}" "$@" \
      2> "$work/$name.$rank.err" &
    members[$rank]=$!
    pids+=($!)
  done
}
# Waits for every member (at most 120 s); their exit statuses in exits[].
exits=()
finish() {
  local deadline=$((SECONDS + 120))
  for ((rank = 0; rank < ${#members[@]}; ++rank)); do
    while kill -0 "${members[$rank]}" 2> /dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
    kill -9 "${members[$rank]}" 2> /dev/null
    wait "${members[$rank]}"
    exits[$rank]=$?
  done
}

# The uninterrupted run.
start whole 3 --out "$work/whole.safetensors" --steps $steps --quiet
finish
for rank in 0 1 2; do check test "${exits[$rank]}" -eq 0; done

# The run that loses member 2 once member 0 has saved step 5 (--save-every 5).
start lost 3 --out "$work/lost.safetensors" --steps $steps --save-every 5
deadline=$((SECONDS + 60))
while [ ! -e "$work/lost.safetensors" ] && [ $SECONDS -lt $deadline ]; do sleep 0.01; done
kill -9 "${members[2]}"
finish
check test "${exits[0]}" -eq 1
check test "${exits[1]}" -eq 1
check test "${exits[2]}" -eq 137
check contains "$work/lost.0.err" "peer_lost"
# Member 1 sends to member 2 in the ring. Almost always Gloo sees the killed member's closed socket
# (peer_lost). Once in a CI run here, under load, its send to it waited out the 20 s instead
# ("Timed out waiting 20000ms for send operation to complete"): then member 1 says timeout, which
# is also a failure that names the mesh. Member 0, which saves, must say peer_lost;
# test_mesh_failure holds the two-member case to peer_lost.
check contains "$work/lost.1.err" "peer_lost\|uform: UForm: timeout \[uform_trainer_step\]"
check contains "$work/lost.0.err" "resume every member with"
saved=$(sed -n 's/^uform: saved step \([0-9]*\) to .*/\1/p' "$work/lost.0.err")
check test -n "$saved"
saved=${saved:-0}
check test "$saved" -ge 5
check test "$saved" -lt "$steps"
echo "member 2 was lost after step $saved of $steps" >&2
# The command member 0 printed carries --resume and the steps left.
check contains "$work/lost.0.err" "--resume $work/lost.safetensors --steps $((steps - saved))"
# The checkpoint is the last completed step: it loads, and holds that step's count.
check "$uform" describe "$work/lost.safetensors" > "$work/describe.txt"

# Resumed by 3 members: bit for bit the uninterrupted run.
cp "$work/lost.safetensors" "$work/three.safetensors"
start three 3 --out "$work/three.safetensors" --resume "$work/three.safetensors" --steps $((steps - saved)) --quiet
finish
for rank in 0 1 2; do check test "${exits[$rank]}" -eq 0; done
check identical_weights "$work/three.safetensors" "$work/whole.safetensors"

# Resumed by 2 members: the same global batches, summed in another order (near: uninterrupted 2- and
# 3-member runs of these 60 steps end 8e-5 apart; a data order off by one batch or seed, ~1).
cp "$work/lost.safetensors" "$work/two.safetensors"
start two 2 --out "$work/two.safetensors" --resume "$work/two.safetensors" --steps $((steps - saved)) --quiet
finish
for rank in 0 1; do check test "${exits[$rank]}" -eq 0; done
check compare_checkpoints near "$work/two.safetensors" "$work/whole.safetensors"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
