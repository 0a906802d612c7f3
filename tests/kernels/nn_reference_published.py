"""PyTorch references for tests/kernels/test_nn_torch_published.c: the kernels the published
checkpoints brought (causal attention; QuickGELU and the tanh GELU), computed the way the
checkpoints' own code computes them, in float64.

Usage: nn_reference_published.py DIRECTORY. The C test writes `meta.txt` ("key value ..." lines)
and raw little-endian float32 inputs into DIRECTORY; this script writes each result as raw
float64 (`*.f64`). Exits 77 when torch cannot be imported, so the test reports itself skipped.

Causal attention is torch's scaled_dot_product_attention(q, k, v, is_causal=True) per item
(torch >= 2.0), or torch 1.13's private _scaled_dot_product_attention(q, k, v, None, 0.0, False,
True), which Debian's python3-torch has; lse is the log-sum-exp of the masked scores (the same
masking, written out); gradients by autograd.
"""
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"nn_reference_published.py: cannot import torch/numpy ({error})", file=sys.stderr)
    sys.exit(77)

directory = sys.argv[1]
meta = {}
with open(os.path.join(directory, "meta.txt")) as lines:
    for line in lines:
        key, *values = line.split()
        meta[key] = [int(v) for v in values]


def load(name, shape):
    array = np.fromfile(os.path.join(directory, name), dtype=np.float32)
    return torch.from_numpy(array.astype(np.float64)).reshape(shape)


def save(name, tensor):
    tensor.detach().to(torch.float64).contiguous().numpy().tofile(os.path.join(directory, name))


def causal_attention(q, k, v):
    """q, k, v: [heads, length, head_width]."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]


torch.set_grad_enabled(True)

# Causal attention over packed items, one configuration per "attention_N" line.
for index in range(meta["attention_configs"][0]):
    tokens, heads, head_width = meta[f"attention_{index}"]
    offsets = meta[f"attention_{index}_offsets"]
    d = heads * head_width
    qkv = load(f"attention_{index}_qkv.f32", (tokens, 3 * d)).clone().requires_grad_(True)
    dout = load(f"attention_{index}_dout.f32", (tokens, d))
    outputs, lses = [], []
    for begin, end in zip(offsets[:-1], offsets[1:]):
        if begin == end:
            continue
        q, k, v = qkv[begin:end].reshape(end - begin, 3, heads, head_width).permute(1, 2, 0, 3)
        outputs.append(causal_attention(q, k, v).permute(1, 0, 2).reshape(end - begin, d))
        scores = q @ k.transpose(-1, -2) / head_width**0.5
        hidden = torch.triu(torch.ones(end - begin, end - begin, dtype=torch.bool), diagonal=1)
        lses.append(torch.logsumexp(scores.masked_fill(hidden, float("-inf")), dim=-1))  # [heads, length]
    out = torch.cat(outputs)
    (out * dout).sum().backward()
    save(f"attention_{index}_out.f64", out)
    save(f"attention_{index}_lse.f64", torch.cat(lses, dim=1))
    save(f"attention_{index}_dqkv.f64", qkv.grad)

# The activations as the checkpoints' code writes them: OpenCLIP's QuickGELU module
# (x * torch.sigmoid(1.702 * x)), SigLIP's gelu_pytorch_tanh (F.gelu(x, approximate="tanh")), and
# the erf GELU (F.gelu(x)).
(count,) = meta["activation"]
x = load("activation_x.f32", (count,))
save("activation_quick.f64", x * torch.sigmoid(1.702 * x))
save("activation_tanh.f64", F.gelu(x, approximate="tanh"))
save("activation_exact.f64", F.gelu(x))
