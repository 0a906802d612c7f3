"""NumPy implementation of the engine's I8 compute (docs/int8.md), written from the documentation.

The model (docs/model.md) in float64, except where the I8 scheme fixes a rounding:

- every linear layer of the trunk (attn.qkv, attn.out, mlp.up, mlp.down) quantizes its weight rows
  (per output channel) and its input rows (per token) with the same function: amax = max |x| over
  the row of float32 values, inv = fl32(127 / amax), scale = fl32(amax / 127),
  q = rint(fl32(x * inv)) (ties to even), clipped to [-127, 127]; rows with amax below 2^-96 are
  zeros with scale 0, rows holding an infinity or a NaN zeros with scale NaN.  The product sums
  q_x * q_w exactly (int64 here, int32 in the engine), and y = fl32(fl32(acc) * fl32(sx * sw) + b)
  with one rounding for the multiply-add (computed in float64: the product of two float32 values
  is exact there);
- the layers that stay float (the stems' patch projections, the heads' projections) and attention
  run in the load's "float compute": "f32" (here float64) or "bf16": each operand rounded to BF16
  (nearest even) before the product, the products summed in float64; attention with BF16 Q, K, V
  and P computed blockwise over 64 keys with a running maximum, as the engine's docs (nn.h,
  attention_forward_bf16) state; text_choose's head is always float.

`Int8Model(config, tensors, float_compute)` mirrors uform_reference.Model's stems, trunk and heads
for these cases; `compare_int8.py` runs it over a parity dump written by `parity_dump --int8`.
"""

import math

import numpy as np

TRUNK_NORM_EPS = 1e-6
ATTENTION_BLOCK = 64
CLS_ID, NEXT_ID = 256, 257
AUDIO_FRAMES_PER_TOKEN = 4
TINY = np.float32(2.0 ** -96)


def bf16(values):
    """Rounds to BF16 (nearest even) through float32, answers float64."""
    x = np.asarray(values, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    out = np.where(np.isnan(x), x, out)
    return out.astype(np.float64)


def quantize_rows(x, per_tensor=False):
    """x float32 [rows, k] -> (q int64 [rows, k], scale float32 [rows]).

    per_tensor=True is a wrong scheme kept for the negative controls: one amax over the whole
    matrix (ONNX Runtime's dynamic quantization), every row given the same scale."""
    x = np.asarray(x, dtype=np.float32)
    if per_tensor:
        shape = x.shape
        q, scale = quantize_rows(x.reshape(1, -1))
        return q.reshape(shape), np.repeat(scale, shape[0])
    magnitude = np.abs(x)
    special = ~np.all(np.isfinite(x), axis=1)
    amax = np.where(special, np.float32(0), np.max(np.where(np.isfinite(magnitude), magnitude, 0), axis=1)).astype(np.float32)
    zero = special | (amax < TINY)
    safe = np.where(zero, np.float32(1), amax).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    scale = (safe / np.float32(127)).astype(np.float32)
    q = np.rint((x * inv[:, None]).astype(np.float32)).astype(np.int64)
    q = np.clip(q, -127, 127)
    q[zero] = 0
    scale = np.where(special, np.float32(np.nan), np.where(zero, np.float32(0), scale)).astype(np.float32)
    return q, scale


class QuantizedLinear:
    """A trunk layer: weight rows quantized once, inputs per call."""

    def __init__(self, weight, bias, per_tensor=False):
        self.q, self.scale = quantize_rows(np.asarray(weight, dtype=np.float32), per_tensor)
        self.per_tensor = per_tensor
        # The int8 values held as float64, so that the product runs in BLAS (NumPy's int64 product
        # has none, and was most of this check's time): every partial sum is an integer of
        # magnitude at most K·127·127 < 2^53 for K ≤ 2^29, so float64 adds them exactly, in any order.
        self.q64 = self.q.astype(np.float64)
        self.bias = np.asarray(bias, dtype=np.float32)

    def __call__(self, x):
        qx, sx = quantize_rows(np.asarray(x, dtype=np.float64).astype(np.float32), self.per_tensor)
        acc = qx.astype(np.float64) @ self.q64.T                         # exact: integers below 2^53
        scales = (sx[:, None] * self.scale[None, :]).astype(np.float32)  # one float32 product
        y = acc.astype(np.float32).astype(np.float64) * scales.astype(np.float64) + self.bias.astype(np.float64)
        return y.astype(np.float32).astype(np.float64)                   # one rounding: the fused multiply-add


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def gelu(x):
    """The erf GELU in float64. PyTorch's erf (its own implementation, not the engine's libm call),
    vectorised: math.erf one value at a time was a third of this check's time on `small`."""
    import torch
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    return (0.5 * t * (1.0 + torch.special.erf(t / math.sqrt(2.0)))).numpy()


def softmax_attention(q, k, v):
    """Exact: q, k, v [n, hd] float64."""
    scores = q @ k.T / math.sqrt(q.shape[1])
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return (p / p.sum(axis=1, keepdims=True)) @ v


def bf16_attention(q, k, v):
    """BF16 products, blockwise online softmax over 64-key blocks from the item's first token."""
    n, hd = q.shape
    scale = 1.0 / math.sqrt(hd)
    qb, kb, vb = bf16(q), bf16(k), bf16(v)
    running = np.full(n, -np.inf)
    total = np.zeros(n)
    acc = np.zeros((n, hd))
    for begin in range(0, k.shape[0], ATTENTION_BLOCK):
        end = min(begin + ATTENTION_BLOCK, k.shape[0])
        s = scale * (qb @ kb[begin:end].T)
        new = np.maximum(running, s.max(axis=1))
        rescale = np.exp(running - new)
        p = np.exp(s - new[:, None])
        total = total * rescale + p.sum(axis=1)
        acc = acc * rescale[:, None] + bf16(p) @ vb[begin:end]
        running = new
    return acc / total[:, None]


class FloatLinear:
    """The same layer unquantized (float64): the negative control's."""

    def __init__(self, weight, bias):
        self.weight, self.bias = np.asarray(weight, np.float64), np.asarray(bias, np.float64)

    def __call__(self, x):
        return x @ self.weight.T + self.bias


class Int8Model:
    def __init__(self, config, tensors, float_compute, quantized=True, per_tensor=False):
        """tensors: name -> float64 numpy arrays (BF16 widened exactly). Two wrong schemes for the
        negative controls: quantized=False runs the trunk's products in float64, per_tensor=True
        quantizes them with one scale per matrix instead of one per row."""
        if float_compute not in ("f32", "bf16"):
            raise ValueError(f"float compute {float_compute!r} is not f32 or bf16")
        self.config, self.w, self.float_compute = config, tensors, float_compute
        self.d, self.heads, self.depth = config["hidden"], config["heads"], config["depth"]
        self.eps = config.get("norm_eps", 1e-6)
        self.layers = {}
        for i in range(self.depth):
            for name in ("attn.qkv", "attn.out", "mlp.up", "mlp.down"):
                weight, bias = tensors[f"trunk.{i}.{name}.weight"], tensors[f"trunk.{i}.{name}.bias"]
                self.layers[f"{i}.{name}"] = (QuantizedLinear(weight, bias, per_tensor) if quantized
                                              else FloatLinear(weight, bias))

    def float_linear(self, x, weight, bias=None):
        if self.float_compute == "bf16":
            x, weight = bf16(x), bf16(weight)
        y = x @ weight.T
        return y if bias is None else y + bias

    # --- stems ---------------------------------------------------------------------------------

    def text_tokens(self, ids):
        rows = self.w["text.bytes"][ids] + self.w["text.positions"][: len(ids)]
        return rows + self.w["modality.text"]

    def image_tokens(self, image):
        p = self.config["image"]["patch"]
        c, s, _ = image.shape
        g = s // p
        patches = image.reshape(c, g, p, g, p).transpose(1, 3, 0, 2, 4).reshape(g * g, c * p * p)
        rows = self.float_linear(patches, self.w["image.patch.weight"], self.w["image.patch.bias"])
        rows = np.concatenate([self.w["image.cls"][None, :], rows]) + self.w["image.positions"]
        return rows + self.w["modality.image"]

    def video_tokens(self, frames):
        v = self.config["video"]
        p, t = v["patch"], v["tubelet"]
        f, c, s, _ = frames.shape
        g, tau = s // p, f // t
        x = frames.reshape(tau, t, c, g, p, g, p).transpose(0, 3, 5, 2, 1, 4, 6).reshape(tau * g * g, c * t * p * p)
        rows = self.float_linear(x, self.w["video.patch.weight"], self.w["video.patch.bias"])
        space, time = self.w["video.space"], self.w["video.time"]
        rows = rows + (space[1:][None, :, :] + time[:tau, None, :]).reshape(tau * g * g, -1)
        cls = (self.w["video.cls"] + space[0])[None, :]
        return np.concatenate([cls, rows]) + self.w["modality.video"]

    def audio_tokens(self, mel):
        frames, mels = mel.shape
        a = frames // AUDIO_FRAMES_PER_TOKEN
        x = mel[: a * AUDIO_FRAMES_PER_TOKEN].reshape(a, AUDIO_FRAMES_PER_TOKEN * mels)
        rows = self.float_linear(x, self.w["audio.patch.weight"], self.w["audio.patch.bias"])
        rows = np.concatenate([self.w["audio.cls"][None, :], rows]) + self.w["audio.positions"][: a + 1]
        return rows + self.w["modality.audio"]

    def stem(self, modality, item):
        return {"text": self.text_tokens, "image": self.image_tokens, "video": self.video_tokens,
                "audio": self.audio_tokens}[modality](item)

    # --- trunk ---------------------------------------------------------------------------------

    def block(self, x, i):
        """One block over one item's rows [n, d]."""
        p, h = f"trunk.{i}.", self.heads
        hd = self.d // h
        a = layer_norm(x, self.w[p + "norm1.weight"], self.w[p + "norm1.bias"], TRUNK_NORM_EPS)
        qkv = self.layers[f"{i}.attn.qkv"](a)
        attend = bf16_attention if self.float_compute == "bf16" else softmax_attention
        heads = [attend(qkv[:, j * hd:(j + 1) * hd], qkv[:, self.d + j * hd:self.d + (j + 1) * hd],
                        qkv[:, 2 * self.d + j * hd:2 * self.d + (j + 1) * hd]) for j in range(h)]
        x = x + self.layers[f"{i}.attn.out"](np.concatenate(heads, axis=1))
        a = layer_norm(x, self.w[p + "norm2.weight"], self.w[p + "norm2.bias"], TRUNK_NORM_EPS)
        return x + self.layers[f"{i}.mlp.down"](gelu(self.layers[f"{i}.mlp.up"](a)))

    def trunk(self, tokens):
        for i in range(self.depth):
            tokens = self.block(tokens, i)
        return tokens

    # --- heads ---------------------------------------------------------------------------------

    def project(self, modality, states, dimensions=0):
        vectors = self.float_linear(states, self.w[f"{modality}.projection"])
        if dimensions:
            vectors = vectors[:, :dimensions]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def encode(self, modality, items, dimensions=0):
        finals = [self.trunk(self.stem(modality, item)) for item in items]
        w, b = self.w[f"{modality}.norm.weight"], self.w[f"{modality}.norm.bias"]
        states = [layer_norm(f, w, b, self.eps) for f in finals]
        offsets = np.cumsum([0] + [s.shape[0] for s in states]).astype(np.int64)
        return {"states": np.concatenate(states), "state_offsets": offsets, "token_offsets": offsets,
                "token_vectors": self.project(modality, np.concatenate(states), dimensions),
                "embeddings": self.project(modality, np.stack([s[0] for s in states]), dimensions)}

    def choose(self, token_ids, choices, groups):
        results = []
        for ids, legal, group in zip(token_ids, choices, groups):
            final = self.trunk(self.text_tokens(ids))[-1]
            hidden = layer_norm(final, self.w["choose.norm.weight"], self.w["choose.norm.bias"], self.eps)
            logits = hidden @ self.w["choose.head.weight"].T + self.w["choose.head.bias"]
            scaled = logits[list(legal)] * math.exp(self.w["temperatures"][group])
            scaled -= scaled.max()
            p = np.exp(scaled)
            results.append(p / p.sum())
        return results
