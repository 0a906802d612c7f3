#!/usr/bin/env bash
# `uform train --shards` and `uform index --shards` end to end on the corpus make_shards.py wrote:
#   - 6 steps == 3 + --resume + 3, byte for byte, from shards, in one process and with 2 members
#     (the cursor crosses shard and epoch boundaries; over the mesh it gathers every member's partition);
#   - 2 members reading their partitions == 1 process reading both (--partitions 2), F32, <= 1e-5;
#   - bad shards: listed and replaced with --skip-bad (exit 3), named (shard, sample) without it (exit 1);
#   - held-out recall from shards (--eval, --eval-log JSON lines);
#   - an index of the shards: every sample's medium, named SHARD:MEMBER, found by its own picture.
# Usage: test_data_cli.sh UFORM CORPUS CHECKPOINT PYTHON
set -u
uform=$1 corpus=$2 checkpoint=$3 python=${4:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"
# The whole model to 1e-5 (docs/training.md); any one tensor to 1e-3: a bias that starts at 0 moves
# by Adam's normalised steps, which magnify the members' different summation order in its tiny
# gradients (trunk.0.attn.qkv.bias: 2.4e-4 here, the whole model 4.3e-7).
same_weights() { "$python" "$here/../common/same_weights.py" "$1" "$2" 1e-3; }

shards="$corpus/shards/{000..005}.tar"
common=(--batch 8 --seed 4 --warmup 1 --quiet --shuffle-buffer 6)

# Exact resume, one process: 6 steps cross the first epoch's end (48 samples, 8 a step).
check status_is 0 "$uform" train --shards "$shards" --out "$work/six.st" --steps 7 "${common[@]}"
check status_is 0 "$uform" train --shards "$shards" --out "$work/split.st" --steps 4 --total-steps 7 "${common[@]}"
check status_is 0 "$uform" train --shards "$shards" --out "$work/split.st" --resume "$work/split.st" --steps 3 --batch 8 --quiet --shuffle-buffer 6
check cmp "$work/six.st" "$work/split.st"

# And with 2 members: each reads its own partition; the cursor holds both.
check status_is 0 "$uform" train --shards "$shards" --out "$work/six2.st" --steps 6 --processes 2 "${common[@]}"
check status_is 0 "$uform" train --shards "$shards" --out "$work/split2.st" --steps 3 --total-steps 6 --processes 2 "${common[@]}"
check status_is 0 "$uform" train --shards "$shards" --out "$work/split2.st" --resume "$work/split2.st" --steps 3 --processes 2 \
  --batch 8 --quiet --shuffle-buffer 6
check cmp "$work/six2.st" "$work/split2.st"

# 2 members == 1 process reading both partitions (F32: the mesh equals one process to 1e-5).
check status_is 0 "$uform" train --shards "$shards" --out "$work/one.st" --steps 3 --threads 2 --partitions 2 --f32 "${common[@]}"
check status_is 0 "$uform" train --shards "$shards" --out "$work/two.st" --steps 3 --processes 2 --f32 "${common[@]}"
check same_weights "$work/two.st" "$work/one.st"

# Bad shards: a renamed medium, a sample without text, an undecodable image, a truncated tar.
bad="$corpus/bad/{000..003}.tar"
check status_is 3 "$uform" train --shards "$bad" --out "$work/bad.st" --steps 10 --batch 4 --skip-bad 2> "$work/bad.txt"
check contains "$work/bad.txt" "skipped sample '000002' of shard"
check contains "$work/bad.txt" "skipped sample '000018' of shard"
check contains "$work/bad.txt" "truncated or corrupt tar"
check status_is 1 "$uform" train --shards "$corpus/bad/002.tar" --out "$work/failed.st" --steps 4 --batch 4 --quiet 2> "$work/err.txt"
check contains "$work/err.txt" "shard '.*bad/002.tar', sample '000018'"
check test ! -e "$work/failed.st"

# The summary as JSON: the steps and the loader's stats (a sample's bytes were read, a wait was timed).
check status_is 0 "$uform" train --shards "$shards" --out "$work/json.st" --steps 3 --batch 8 --quiet --json > "$work/summary.json"
check "$python" -c "
import json
s = json.load(open('$work/summary.json'))
assert s['steps'] == 3 and s['out'].endswith('json.st') and s['steps_per_second'] > 0, s
d = s['data']
assert d['batches'] == 3 and d['samples'] == 24 and d['bytes_read'] > 0 and 0 <= d['wait_fraction'] and d['wait_seconds'] >= 0, s
"

# Held-out recall from shards.
check status_is 0 "$uform" train "$corpus/manifest.jsonl" --out "$work/eval.st" --steps 2 --batch 8 --quiet \
  --eval "$corpus/gz/{000..005}.tar.gz" --eval-log "$work/eval.jsonl" > "$work/eval.txt"
check contains "$work/eval.txt" "image   48 pairs  text->image R@1"
check "$python" -c "
import json
rows = [json.loads(line) for line in open('$work/eval.jsonl')]
assert len(rows) == 1 and rows[0]['modality'] == 'image' and rows[0]['pairs'] == 48, rows
assert 0 <= rows[0]['text_to_media']['1'] <= rows[0]['text_to_media']['5'] <= 1, rows
"

# An index of the shards.
check status_is 0 "$uform" index "$checkpoint" --shards "$shards" --out "$work/shards.index" --quiet
check "$python" - "$work/shards.index" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
assert header["__metadata__"]["uform.index.count"] == "48", header["__metadata__"]
begin, end = header["items.paths"]["data_offsets"]
paths = raw[8 + n + begin:8 + n + end].decode()
assert paths.count(".tar:") == 48 and "000.tar:000000.jpg" in paths, paths[:200]
PY
"$uform" search "$work/shards.index" "$checkpoint" --image "$corpus/loose/000017.png" --top 1 --json > "$work/hit.json"
check grep -q '005.tar:000017.png\|002.tar:000017.png' "$work/hit.json"

finish
