#!/usr/bin/env bash
# The `uform` command line end to end on the tiny checkpoint: describe, encode to JSON lines and to
# .npy (checked with NumPy), choose, and clear failures for bad input.
# Usage: test_cli.sh UFORM_BINARY CHECKPOINT PYTHON
set -u
uform=$1 checkpoint=$2 python=${3:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"

check "$uform" describe "$checkpoint" > "$work/describe.txt"
# One default compute (docs/abi.md): F32 without a flag, on every CPU class.
check contains "$work/describe.txt" ", f32 compute"
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
# close to F32's, from a smaller file; --int8 with --bf16 or --f32 is refused.
check "$uform" encode "$checkpoint" --text "a red star" "a blue circle on the left" --f32 --out "$work/f32.npy"
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
# uform index and uform search with --int8, end to end: four noise pictures, each one's own query
# finds itself first (identical input and compute give the identical I8 embedding).
check "$python" -c "
import os
import numpy as np
from PIL import Image
os.makedirs('$work/pics')
rng = np.random.default_rng(24)
for i in range(4):
    Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save('$work/pics/%d.png' % i)
"
check "$uform" index "$checkpoint" "$work/pics" --out "$work/pics.index" --int8 --quiet
for i in 0 3; do
  check "$uform" search "$work/pics.index" "$checkpoint" --image "$work/pics/$i.png" --int8 --top 2 --json > "$work/hit$i.jsonl"
  check "$python" -c "
import json
hits = [json.loads(line) for line in open('$work/hit$i.jsonl')]
assert len(hits) == 2 and hits[0]['path'].endswith('/$i.png') and hits[0]['score'] > 0.9999, hits
"
done
check "$uform" describe "$work/q.safetensors" --int8 > "$work/describe_q.txt"
check contains "$work/describe_q.txt" ", i8 compute"
check "$uform" quantize --help > "$work/quantize_help.txt"
check contains "$work/quantize_help.txt" "usage: uform quantize CKPT --out Q"
"$uform" quantize "$checkpoint" 2> "$work/err6.txt"; check test $? -eq 2
check contains "$work/err6.txt" "--out is missing"
"$uform" encode "$checkpoint" --text a --int8 --bf16 2> "$work/err5.txt"; check test $? -eq 2
check contains "$work/err5.txt" "uform encode: --int8 and --bf16 exclude each other"
"$uform" search "$checkpoint" "$checkpoint" --text a --f32 --int8 2> "$work/err7.txt"; check test $? -eq 2
check contains "$work/err7.txt" "uform search: --f32 and --int8 exclude each other"

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
check contains "$work/err1.txt" "cannot open '.*missing.jpg': No such file or directory"

# Out of memory reads as such (the system's reason): a 4 GiB sparse file under a 2 GB address-space
# limit. Not under a sanitizer, whose shadow memory needs more address space than the limit allows.
if ldd "$uform" | grep -q 'libasan\|libtsan'; then
  echo "skipped: out-of-memory message (sanitizer build)"
else
  truncate -s 4G "$work/big.jpg"
  (ulimit -v 2000000; "$uform" encode "$checkpoint" --image "$work/big.jpg") 2> "$work/err5.txt"; check test $? -eq 1
  check contains "$work/err5.txt" "uform: cannot read '.*big.jpg': Cannot allocate memory"
fi

finish
