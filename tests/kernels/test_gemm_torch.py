"""PyTorch autograd reference for test_gemm_torch.c (run by Debian's /usr/bin/python3).

Reads float32 little-endian inputs from the directory given as argv[1] (shape.txt holds
"m n k"), computes in float64 with torch:
    Y = linear(X, W, b)       (torch.nn.functional.linear, W is [out, in])
    Y.backward(G)             -> dX = G·W, dW = Gᵀ·X, db = Σ_m G
    Z = gelu(linear(X, W, b)) (exact erf form)
and writes y, z, dx, dw, db as float64 files next to the inputs.
"""
import os
import sys

import numpy as np
import torch


def main() -> int:
    folder = sys.argv[1]
    m, n, k = (int(v) for v in open(os.path.join(folder, "shape.txt")).read().split())

    def load(name, shape):
        data = np.fromfile(os.path.join(folder, name), dtype="<f4").astype(np.float64)
        return torch.from_numpy(data.reshape(shape))

    x = load("x.f32", (m, k)).requires_grad_(True)
    w = load("w.f32", (n, k)).requires_grad_(True)
    b = load("b.f32", (n,)).requires_grad_(True)
    g = load("g.f32", (m, n))
    y = torch.nn.functional.linear(x, w, b)
    y.backward(g)
    with torch.no_grad():
        z = torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate="none")
    outputs = {"y": y, "z": z, "dx": x.grad, "dw": w.grad, "db": b.grad}
    for name, tensor in outputs.items():
        tensor.detach().numpy().astype("<f8").tofile(os.path.join(folder, name + ".f64"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
