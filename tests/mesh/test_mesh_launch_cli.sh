#!/usr/bin/env bash
# `uform train --mesh auto` under launchers, end to end on a generated manifest, each run ending with
# the weights of one process (1e-5 relative): two members with torchrun's variables (meeting at
# MASTER_ADDR:MASTER_PORT+1, --threads from LOCAL_WORLD_SIZE, the shape naming torchrun), a real
# `mpirun -np 2` of Debian's Open MPI, two members with Slurm's variables at a tcp:// store named on
# the command line, and contradicting variables refused before anything starts (exit 2). Every
# member is waited for; everything meets on loopback.
# Usage: test_mesh_launch_cli.sh UFORM_BINARY PYTHON
set -u
skipped=
uform=$1 python=${2:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }
contains() { grep -q -- "$2" "$1" || { echo "$1 lacks '$2':" >&2; cat "$1" >&2; return 1; }; }
source "$(dirname "$0")/cli_common.sh"
mesh_cli_manifest "$work" || { echo "cannot generate the manifest" >&2; exit 1; }
clear_launchers

common=(--batch 10 --steps 3 --seed 4 --warmup 1 --f32) # F32: k members equal one to 1e-5; BF16 rounds differently per split
check "$uform" train "$work/train.jsonl" --out "$work/one.safetensors" --threads 2 "${common[@]}" --quiet

# torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
port=$(( $(free_port) - 1 ))
for rank in 0 1; do
  env RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    TORCHELASTIC_RUN_ID=cli "$uform" train "$work/train.jsonl" --out "$work/torchrun.safetensors" --mesh auto \
    --mesh-address 127.0.0.1 --mesh-timeout 30 "${common[@]}" 2> "$work/torchrun.$rank.err" &
  pids[$rank]=$!
done
for rank in 0 1; do wait "${pids[$rank]}"; check test "$?" -eq 0; done
check same_weights "$work/torchrun.safetensors" "$work/one.safetensors"
cores=$(nproc)
threads=$(( cores / 2 > 0 ? cores / 2 : 1 ))
check contains "$work/torchrun.1.err" "mesh of 2 members (1 per host domain), this is member 1, 2 on this host; launched by torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE); job 'cli' at tcp://127.0.0.1:$((port + 1)) (MASTER_ADDR:MASTER_PORT+1); $threads threads"

# A real mpirun: Open MPI's variables, every member on this host, the rendezvous from its job id.
if [ -x /usr/bin/mpirun ]; then
  check timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    "$uform" train "$work/train.jsonl" --out "$work/mpirun.safetensors" --mesh auto --mesh-address 127.0.0.1 \
    --mesh-timeout 30 "${common[@]}" > "$work/mpirun.out" 2> "$work/mpirun.err"
  check same_weights "$work/mpirun.safetensors" "$work/one.safetensors"
  check contains "$work/mpirun.err" "launched by open-mpi (OMPI_COMM_WORLD_RANK"
  check contains "$work/mpirun.err" "(every member on this host: loopback, port 20000 + a hash of the job)"
else
  skipped="the mpirun case needs openmpi-bin (scripts/install-deps.sh installs it)"
fi

# Slurm's variables, the rendezvous named on the command line.
port=$(free_port)
for task in 0 1; do
  env SLURM_PROCID=$task SLURM_NTASKS=2 SLURM_LOCALID=$task SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2 \
    SLURM_JOB_ID=4242 "$uform" train "$work/train.jsonl" --out "$work/slurm.safetensors" \
    --mesh "tcp://127.0.0.1:$port" --mesh-address 127.0.0.1 --mesh-timeout 30 "${common[@]}" \
    2> "$work/slurm.$task.err" &
  pids[$task]=$!
done
for task in 0 1; do wait "${pids[$task]}"; check test "$?" -eq 0; done
check same_weights "$work/slurm.safetensors" "$work/one.safetensors"
check contains "$work/slurm.0.err" "launched by slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE); job '4242' at tcp://127.0.0.1:$port;"

# Contradictions, refused as usage errors.
env RANK=3 WORLD_SIZE=2 "$uform" train "$work/train.jsonl" --out x --mesh auto "${common[@]}" 2> "$work/err.txt"
check test "$?" -eq 2
check contains "$work/err.txt" "RANK=3 is not below WORLD_SIZE=2 (torchrun's variables"
env RANK=0 "$uform" train "$work/train.jsonl" --out x --mesh auto "${common[@]}" 2> "$work/err.txt"
check test "$?" -eq 2
check contains "$work/err.txt" "RANK=0 is set but WORLD_SIZE is not"
"$uform" train "$work/train.jsonl" --out x --mesh auto "${common[@]}" 2> "$work/err.txt"
check test "$?" -eq 2
check contains "$work/err.txt" "none is set"
"$uform" train "$work/train.jsonl" --out x --mesh auto --index 0 "${common[@]}" 2> "$work/err.txt"
check test "$?" -eq 2
check contains "$work/err.txt" "--index and --count go together"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
if [ -n "${skipped:-}" ]; then
  echo "skipped: $skipped"
  [ "${CI:-}" = true ] && { echo "CI=true: a missing dependency fails the test instead of skipping it"; exit 1; }
  exit 77
fi
