"""PyTorch references for the NN kernel tests (tests/kernels/test_nn_torch.c).

Usage: nn_reference.py DIRECTORY. The C test writes `meta.txt` (one "key value ..." line per
shape parameter) and raw little-endian inputs (`*.f32`, `*.i32`, `*.u64`) into DIRECTORY; this
script recomputes every forward with torch in float64, takes the gradients with autograd, and
writes each result as raw float64 (`*.f64`). Exits 77 when torch cannot be imported, so the test
reports itself skipped instead of passing.
"""
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"nn_reference.py: cannot import torch/numpy ({error})", file=sys.stderr)
    sys.exit(77)

directory = sys.argv[1]
meta = {}
with open(os.path.join(directory, "meta.txt")) as lines:
    for line in lines:
        key, *values = line.split()
        meta[key] = [int(v) if v.lstrip("-").isdigit() else float(v) for v in values]


def load(name, dtype, shape=None):
    array = np.fromfile(os.path.join(directory, name), dtype=dtype)
    tensor = torch.from_numpy(array.astype(np.float64) if dtype == np.float32 else array.astype(np.int64))
    return tensor.reshape(shape) if shape is not None else tensor


def leaf(name, shape):
    return load(name, np.float32, shape).clone().requires_grad_(True)


def save(name, tensor):
    tensor.detach().to(torch.float64).contiguous().numpy().tofile(os.path.join(directory, name))


torch.set_grad_enabled(True)

# Attention over packed items: per item, softmax(q·kᵀ/√dh)·v per head.
tokens, heads, head_width = meta["attention"]
offsets = meta["attention_offsets"]
d = heads * head_width
qkv = leaf("attention_qkv.f32", (tokens, 3 * d))
dout = load("attention_dout.f32", np.float32, (tokens, d))
outputs = []
for begin, end in zip(offsets[:-1], offsets[1:]):
    if begin == end:
        continue
    q, k, v = qkv[begin:end].reshape(end - begin, 3, heads, head_width).permute(1, 2, 0, 3)
    weights = torch.softmax(q @ k.transpose(-1, -2) / head_width**0.5, dim=-1)
    outputs.append((weights @ v).permute(1, 0, 2).reshape(end - begin, d))
out = torch.cat(outputs)
(out * dout).sum().backward()
save("attention_out.f64", out)
save("attention_dqkv.f64", qkv.grad)

# LayerNorm.
rows, width = meta["layernorm"]
eps = meta["layernorm_eps"][0]
x = leaf("layernorm_x.f32", (rows, width))
weight = leaf("layernorm_weight.f32", (width,))
bias = leaf("layernorm_bias.f32", (width,))
y = F.layer_norm(x, (width,), weight, bias, eps)
(y * load("layernorm_dy.f32", np.float32, (rows, width))).sum().backward()
for name, tensor in [("y", y), ("dx", x.grad), ("dweight", weight.grad), ("dbias", bias.grad)]:
    save(f"layernorm_{name}.f64", tensor)

# GELU, exact erf form.
(count,) = meta["gelu"]
x = leaf("gelu_x.f32", (count,))
y = F.gelu(x, approximate="none")
(y * load("gelu_dy.f32", np.float32, (count,))).sum().backward()
save("gelu_y.f64", y)
save("gelu_dx.f64", x.grad)

# Softmax + cross-entropy with a per-row scale (the temperature), rows with target −1 ignored.
rows, width = meta["xent"]
logits = leaf("xent_logits.f32", (rows, width))
scale = leaf("xent_scale.f32", (rows,))
targets = load("xent_targets.i32", np.int32, (rows,))
loss = F.cross_entropy(scale[:, None] * logits, targets, reduction="none", ignore_index=-1)
(loss * load("xent_dloss.f32", np.float32, (rows,))).sum().backward()
save("xent_loss.f64", loss)
save("xent_dlogits.f64", logits.grad)
save("xent_dscale.f64", scale.grad)

# L2 normalisation.
rows, width = meta["l2"]
x = leaf("l2_x.f32", (rows, width))
y = F.normalize(x, dim=1, eps=1e-12)
(y * load("l2_dy.f32", np.float32, (rows, width))).sum().backward()
save("l2_y.f64", y)
save("l2_dx.f64", x.grad)

# Mean pooling over ragged groups (an empty group gives zeros).
rows, width = meta["pool"]
offsets = meta["pool_offsets"]
x = leaf("pool_x.f32", (rows, width))
y = torch.stack([x[b:e].mean(0) if e > b else torch.zeros(width, dtype=torch.float64)
                 for b, e in zip(offsets[:-1], offsets[1:])])
(y * load("pool_dy.f32", np.float32, y.shape)).sum().backward()
save("pool_y.f64", y)
save("pool_dx.f64", x.grad)

# Embedding gather (added to an existing output) and its scatter-add backward.
count, vocabulary, width = meta["embedding"]
ids = load("embedding_ids.i32", np.int32, (count,))
table = leaf("embedding_table.f32", (vocabulary, width))
out = load("embedding_out.f32", np.float32, (count, width)) + F.embedding(ids, table)
(out * load("embedding_dout.f32", np.float32, (count, width))).sum().backward()
save("embedding_out.f64", out)
save("embedding_dtable.f64", table.grad)

# AdamW, three steps with the given gradients.
count, steps = meta["adamw"]
lr, beta1, beta2, eps, decay = meta["adamw_hyper"]
params = load("adamw_params.f32", np.float32, (count,)).clone().requires_grad_(True)
grads = load("adamw_grads.f32", np.float32, (steps, count))
optimizer = torch.optim.AdamW([params], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=decay)
for step in range(steps):
    params.grad = grads[step].clone()
    optimizer.step()
save("adamw_params.f64", params)
