#!/usr/bin/env bash
# `uform train` over a mesh, end to end on a generated manifest: --processes 2 and 3, and --accumulate
# alone and over a mesh, end with the weights of one process (optimizer.weights.*, 1e-5 relative), the members' output
# carries their prefixes and the mesh's shape, only member 0 writes --out; members started by hand
# with --mesh/--job/--index/--count that disagree on --batch fail naming it; a member that fails
# fails the whole --processes run; usage errors exit 2. Every member is waited for.
# Usage: test_mesh_cli.sh UFORM_BINARY PYTHON
set -u
uform=$1 python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"

source "$here/cli_common.sh"
mesh_cli_manifest "$work" || { echo "cannot generate the manifest" >&2; exit 1; }

# F32 compute: k members equal one to 1e-5 relative in F32 (docs/training.md); BF16 rounds differently per split.
common=(--batch 10 --steps 3 --seed 4 --warmup 1 --quiet --f32)
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/one.safetensors" --threads 2 "${common[@]}"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/two.safetensors" --processes 2 --batch 10 --steps 3 --seed 4 --warmup 1 --f32 --log "$work/two.csv" > "$work/two.out" 2> "$work/two.err"
check same_weights "$work/two.safetensors" "$work/one.safetensors"
check contains "$work/two.err" "^\[0\] uform: mesh of 2 members (1 per host domain), this is member 0"
check contains "$work/two.err" "^\[1\] uform: mesh of 2 members (1 per host domain), this is member 1"
check contains "$work/two.err" "^\[0\] uform: 3 steps in"
check test "$(wc -l < "$work/two.csv")" -eq 4
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/three.safetensors" --processes 3 "${common[@]}"
check same_weights "$work/three.safetensors" "$work/one.safetensors"

# --accumulate K: the same steps in K chunks, alone and over a mesh.
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/chunks.safetensors" --threads 2 --accumulate 3 "${common[@]}"
check same_weights "$work/chunks.safetensors" "$work/one.safetensors"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/two-chunks.safetensors" --processes 2 --accumulate 4 "${common[@]}"
check same_weights "$work/two-chunks.safetensors" "$work/one.safetensors"
check status_is 2 "$uform" train "$work/train.jsonl" --out x --accumulate 0 2> "$work/err.txt"

# Members by hand, disagreeing on the global batch: both fail, naming it.
mkdir -p "$work/meet"
"$uform" train "$work/train.jsonl" --out "$work/a.safetensors" --mesh "$work/meet" --job j --index 0 --count 2 \
  --mesh-address 127.0.0.1 --mesh-timeout 20 --threads 1 --steps 1 --batch 10 --quiet 2> "$work/a.err" &
first=$!
"$uform" train "$work/train.jsonl" --out "$work/b.safetensors" --mesh "$work/meet" --job j --index 1 --count 2 \
  --mesh-address 127.0.0.1 --mesh-timeout 20 --threads 1 --steps 1 --batch 8 --quiet 2> "$work/b.err"
second=$?
wait "$first"
check test "$?" -eq 1
check test "$second" -eq 1
check contains "$work/a.err" "config_mismatch"
check contains "$work/a.err" "agreement.batch: member 1 has '8', member 0 (this process) has '10'"
check contains "$work/b.err" "agreement.batch"

# A member that cannot read its share's media fails the run as a whole (the others lose it).
check status_is 1 "$uform" train "$work/broken.jsonl" --out "$work/broken.safetensors" --processes 2 --batch 14 --steps 2 --quiet 2> "$work/broken.err"
check contains "$work/broken.err" "missing.png"
check contains "$work/broken.err" "uform: member [01] of 2 failed (exit 1); the run failed"
check test ! -e "$work/broken.safetensors"

# Usage.
check status_is 2 "$uform" train "$work/train.jsonl" --out x --mesh "$work/meet" --index 0 --count 2 2> "$work/err.txt"
check contains "$work/err.txt" "--mesh DIR needs --job NAME"
check status_is 2 "$uform" train "$work/train.jsonl" --out x --processes 2 --skip-bad 2> "$work/err.txt"
check contains "$work/err.txt" "--skip-bad cannot be used with a mesh"
check status_is 2 "$uform" train "$work/train.jsonl" --out x --mesh "$work/meet" --job j --index 2 --count 2 2> "$work/err.txt"
check contains "$work/err.txt" "--index 2 is not below --count 2"
check status_is 2 "$uform" train "$work/train.jsonl" --out x --processes 0 2> "$work/err.txt"
check status_is 0 "$uform" train --help > "$work/help.txt"
check contains "$work/help.txt" "--processes K"

finish
