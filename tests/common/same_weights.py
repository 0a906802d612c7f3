"""Whether two training checkpoints hold the same master weights: k mesh members against one
process (docs/training.md: 1e-5 relative in F32), by the L2 norm of the difference over every
optimizer.weights.* tensor, and at most PER_TENSOR (default 1e-4) in any one tensor. Prints both;
exits 0 or 1.

Usage: same_weights.py A.safetensors B.safetensors [PER_TENSOR]
"""
import json
import struct
import sys

import numpy as np


def tensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    out = {}
    for name, entry in header.items():
        if not name.startswith("optimizer.weights."):
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[8 + size + begin:8 + size + end], dtype=np.float32).astype(np.float64)
    return out


def main(first, second, per_tensor=1e-4):
    a, b = tensors(first), tensors(second)
    if not b or a.keys() != b.keys():
        print(f"tensors differ: {len(a)} and {len(b)}", file=sys.stderr)
        return 1
    worst, where, difference, norm = 0.0, "", 0.0, 0.0
    for name in b:
        d, n = float(np.sum((a[name] - b[name]) ** 2)), float(np.sum(b[name] ** 2))
        difference, norm = difference + d, norm + n
        error = (d / n) ** 0.5 if n > 0 else d ** 0.5
        if error > worst:
            worst, where = error, name
    overall = (difference / norm) ** 0.5
    print(f"weights {overall:.3g} relative (worst tensor {worst:.3g}, {where})", file=sys.stderr)
    return 0 if overall <= 1e-5 and worst <= per_tensor else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4))
