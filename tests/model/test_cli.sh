#!/usr/bin/env bash
# The `uform` command line end to end on the tiny checkpoint: describe, encode to JSON lines and to
# .npy (checked with NumPy), choose, and clear failures for bad input.
# Usage: test_cli.sh UFORM_BINARY CHECKPOINT PYTHON
set -u
uform=$1 checkpoint=$2 python=${3:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }
contains() { grep -q -- "$2" "$1"; }

check "$uform" describe "$checkpoint" > "$work/describe.txt"
check contains "$work/describe.txt" "hidden 128, depth 2"
check contains "$work/describe.txt" "modalities   text image video audio"

check "$uform" encode "$checkpoint" --text "a cat" "a dog" "" --dims 16 > "$work/out.jsonl" 2> "$work/err.txt"
check test "$(wc -l < "$work/out.jsonl")" -eq 3
check "$python" -c "
import json, math, sys
rows = [json.loads(line) for line in open('$work/out.jsonl')]
assert [r['item'] for r in rows] == [0, 1, 2]
for r in rows:
    assert len(r['embedding']) == 16, len(r['embedding'])
    assert abs(math.sqrt(sum(v * v for v in r['embedding'])) - 1) < 1e-5
"

check "$uform" encode "$checkpoint" --text "x" "longer text" --outputs embeddings,tokens,states --scalar i8 --out "$work/e.npy" 2> /dev/null
check "$python" -c "
import numpy as np
e = np.load('$work/e.npy'); t = np.load('$work/e.tokens.npy'); o = np.load('$work/e.tokens_offsets.npy')
s = np.load('$work/e.states.npy'); so = np.load('$work/e.states_offsets.npy')
assert e.shape == (2, 64) and e.dtype == np.int8, (e.shape, e.dtype)
assert list(o) == [0, 2, 14] and t.shape == (14, 64), (list(o), t.shape)
assert s.shape == (14, 128) and s.dtype == np.float32 and list(so) == [0, 2, 14]
assert (t[0] == e[0]).all() and (t[2] == e[1]).all()  # CLS token vectors are the embeddings
"

check "$uform" choose "$checkpoint" "yes or n" --choices "oa" > "$work/choose.txt"
check "$python" -c "
lines = open('$work/choose.txt').read().split('\n')
values = [float(l.split()[-1]) for l in lines if l.strip()]
assert len(values) == 2 and abs(sum(values) - 1) < 1e-5, values
"

# I8 compute (--int8) and a quantized checkpoint (uform quantize): the same embeddings from both,
# close to F32's, from a smaller file; --int8 with --bf16 is refused.
check "$uform" encode "$checkpoint" --text "a red star" "a blue circle on the left" --out "$work/f32.npy"
check "$uform" encode "$checkpoint" --text "a red star" "a blue circle on the left" --int8 --out "$work/i8.npy"
check "$uform" quantize "$checkpoint" --out "$work/q.safetensors"
check "$uform" encode "$work/q.safetensors" --text "a red star" "a blue circle on the left" --int8 --out "$work/q.npy"
check "$uform" choose "$work/q.safetensors" "yes or n" --choices "oa" --int8 > "$work/choose_i8.txt"
check "$python" -c "
import os
import numpy as np
f, i, q = (np.load('$work/%s.npy' % name) for name in ('f32', 'i8', 'q'))
assert np.array_equal(i, q), 'quantizing at load and reading a quantized checkpoint must agree bit for bit'
cosines = (f * i).sum(axis=1)
assert cosines.min() > 0.99, cosines
assert 0.4 < os.path.getsize('$work/q.safetensors') / os.path.getsize('$checkpoint') < 0.8
values = [float(l.split()[-1]) for l in open('$work/choose_i8.txt') if l.strip()]
assert len(values) == 2 and abs(sum(values) - 1) < 1e-5, values
"
"$uform" describe "$work/q.safetensors" > "$work/describe_q.txt"; check test $? -eq 0
"$uform" encode "$checkpoint" --text a --int8 --bf16 2> "$work/err5.txt"; check test $? -eq 2
check contains "$work/err5.txt" "exclude each other"

# Failures: a missing file, a text given as an image, duplicated choices, a bad flag.
"$uform" encode "$checkpoint" --image "$work/missing.jpg" 2> "$work/err1.txt"; check test $? -eq 1
check contains "$work/err1.txt" "cannot open"
printf 'not an image' > "$work/fake.jpg"
"$uform" encode "$checkpoint" --image "$work/fake.jpg" 2> "$work/err2.txt"; check test $? -eq 1
check contains "$work/err2.txt" "UForm: format \[uform_image_encode\]: images\[0\]"
"$uform" choose "$checkpoint" "abc" --choices "aa" 2> "$work/err3.txt"; check test $? -eq 1
check contains "$work/err3.txt" "lists byte 97 twice"
"$uform" encode "$checkpoint" --text a --scalar f64 2> /dev/null; check test $? -eq 2
"$uform" describe "$work/missing.safetensors" 2> "$work/err4.txt"; check test $? -eq 1
check contains "$work/err4.txt" "UForm: io \[uform_model_load_ram\]"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
