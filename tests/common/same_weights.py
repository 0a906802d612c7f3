"""Whether two training checkpoints hold the same master weights: k mesh members against one
process (docs/training.md: 1e-5 relative in F32), by the L2 norm of the difference over every
optimizer.weights.* tensor (at most OVERALL, default 1e-5), and at most PER_TENSOR (default 1e-4) in
any one tensor. Prints both; exits 0 or 1. With --identical: every optimizer.* tensor (master
weights, moments, step) is the same bits, as a resumed run must be against an uninterrupted one.

Usage: same_weights.py A.safetensors B.safetensors [PER_TENSOR [OVERALL]]
       same_weights.py --identical A.safetensors B.safetensors
"""
import json
import struct
import sys

import numpy as np


def tensors(path, prefix):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    out = {}
    for name, entry in header.items():
        if not name.startswith(prefix):
            continue
        begin, end = entry["data_offsets"]
        out[name] = data[8 + size + begin:8 + size + end]
    return out


def identical(first, second):
    a, b = tensors(first, "optimizer."), tensors(second, "optimizer.")
    if not b or a.keys() != b.keys():
        print(f"tensors differ: {len(a)} and {len(b)}", file=sys.stderr)
        return 1
    different = sorted(name for name in b if a[name] != b[name])
    if different:
        print(f"{len(different)} of {len(b)} optimizer tensors differ: {different[:3]}", file=sys.stderr)
    return 1 if different else 0


def close(first, second, per_tensor=1e-4, overall_bound=1e-5):
    a, b = tensors(first, "optimizer.weights."), tensors(second, "optimizer.weights.")
    if not b or a.keys() != b.keys():
        print(f"tensors differ: {len(a)} and {len(b)}", file=sys.stderr)
        return 1
    worst, where, difference, norm = 0.0, "", 0.0, 0.0
    for name in b:
        x, y = (np.frombuffer(t[name], dtype=np.float32).astype(np.float64) for t in (a, b))
        d, n = float(np.sum((x - y) ** 2)), float(np.sum(y ** 2))
        difference, norm = difference + d, norm + n
        error = (d / n) ** 0.5 if n > 0 else d ** 0.5
        if error > worst:
            worst, where = error, name
    overall = (difference / norm) ** 0.5
    print(f"weights {overall:.3g} relative (worst tensor {worst:.3g}, {where})", file=sys.stderr)
    return 0 if overall <= overall_bound and worst <= per_tensor else 1


if __name__ == "__main__":
    if sys.argv[1] == "--identical":
        sys.exit(identical(sys.argv[2], sys.argv[3]))
    sys.exit(close(sys.argv[1], sys.argv[2], *(float(x) for x in sys.argv[3:5])))
