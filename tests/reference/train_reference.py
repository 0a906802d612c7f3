"""Independent PyTorch reference of the UForm 4 training step (docs/training.md).

Written from docs/training.md and docs/model.md (never from the engine's C sources), on top of the model
reference in uform_reference.py.  Run by Debian's /usr/bin/python3 (torch 1.13, numpy 1.24).

    /usr/bin/python3 train_reference.py write-dump DIR [--compute f32|bf16] [--dtype float32|float64] [--seed N]

writes an example step-parity dump (format: README.md) in which this reference stands in for the
engine (in float32 for F32 compute, float64 for BF16 compute: `example_dtype`); compare_train.py
checks such a dump.

One step (`TrainerState.step`), as docs/training.md defines it:

- Every content in a bag is encoded like inference encodes it (text: [CLS] + its first T bytes;
  media: the stems of preprocessed tensors), through the trunk and `{modality}.norm`; its CLS state
  goes through `{modality}.projection`.  For each Matryoshka prefix P of the config, the first P
  columns are L2-normalised, and a bag's embedding at P is the L2-normalised mean of its contents'.
- Contrastive loss: relation r = (l, q) in group g uses s = min(exp(temperatures[g]), 100) (a
  clamp, so beyond 100 the temperature's gradient is 0); the candidates C(l) are the bags on the
  side opposite l's, or every bag but l when the batch has no sides;
  loss_r = 1/2 [CE(s<e_l, e_c> over C(l), target q) + CE(s<e_q, e_c> over C(q), target l)];
  the loss is the mean over prefixes of the mean over relations (0 without relations).
- Choice loss: every content with a non-empty choices entry also runs as [CLS] + its last T bytes
  + [NEXT] (text_choose's tokens); the [NEXT] row's final state -> choose.norm -> choose.head, the
  legal bytes' logits in listed order times exp(temperatures[0]) (unclamped), cross-entropy against
  the target's position among them; the mean over such contents (0 without any).
- total = contrastive_weight * contrastive + choice_weight * choice; gradients by autograd (a tensor
  the batch never reached gets a zero gradient); the global L2 norm over every gradient; clipping
  by clip_norm / norm when clip_norm > 0 and norm > clip_norm.
- AdamW written out by hand with torch.optim.AdamW's (1.13) semantics, dense: every tensor every
  step; decoupled weight decay only on rank-2 tensors except the position tables.
"""

import base64
import json
import math
import os
import sys
from contextlib import contextmanager, nullcontext

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import uform_reference as R  # noqa: E402

TEMPERATURE_CLAMP = 100.0
OPTIMIZER_DEFAULTS = {
    "learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.98, "epsilon": 1e-6, "weight_decay": 0.1,
    "clip_norm": 1.0, "warmup": 0, "total_steps": 0, "contrastive_weight": 1.0, "choice_weight": 1.0,
}
POSITION_TABLES = ("video.space", "video.time")


# ---------------------------------------------------------------------------------------------
# Parameters and the optimizer.

def is_position_table(name):
    return name.endswith(".positions") or name in POSITION_TABLES


def decays(name, shape):
    """docs/training.md: weight decay on the rank-2 tensors except the position tables (text.bytes, the
    patch weights, the trunk's matrices, the projections, choose.head.weight); never on biases,
    norms, CLS rows, modality vectors or temperatures (all rank 1)."""
    return len(shape) == 2 and not is_position_table(name)


def learning_rate(optimizer, step):
    """The schedule at step `step` (counted from 1): linear warmup, then a cosine from lr down to
    0.1 lr at total_steps, 0.1 lr after; total_steps 0 keeps lr after the warmup."""
    lr, warmup, total = optimizer["learning_rate"], int(optimizer["warmup"]), int(optimizer["total_steps"])
    if step <= warmup:
        return lr * step / warmup
    if total == 0:
        return lr
    if step <= total:
        return lr * (0.1 + 0.45 * (1.0 + math.cos(math.pi * (step - warmup) / (total - warmup))))
    return 0.1 * lr


def adamw_update(parameter, gradient, m, v, step, lr, optimizer, decay):
    """One AdamW update in place, in the order torch.optim.AdamW (1.13, single-tensor) applies it:
    p <- p (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
    p <- p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    beta1, beta2, eps = optimizer["beta1"], optimizer["beta2"], optimizer["epsilon"]
    if decay:
        parameter.mul_(1.0 - lr * optimizer["weight_decay"])
    m.mul_(beta1).add_(gradient, alpha=1.0 - beta1)
    v.mul_(beta2).addcmul_(gradient, gradient, value=1.0 - beta2)
    correction1 = 1.0 - beta1 ** step
    correction2 = 1.0 - beta2 ** step
    denominator = (v.sqrt() / math.sqrt(correction2)).add_(eps)
    parameter.addcdiv_(m, denominator, value=-lr / correction1)


# ---------------------------------------------------------------------------------------------
# A batch.

class Batch:
    """contents: list of (modality, item): text bytes, or a preprocessed media tensor (image
    [3, S, S], video [F, 3, S, S], audio log-mel [frames, M]).  The other fields follow docs/training.md;
    empty sequences take their documented defaults."""

    def __init__(self, contents, bags=(), sides=(), lefts=(), rights=(), groups=(), choices=(),
                 choice_targets=()):
        self.contents = [(str(m), item) for m, item in contents]
        self.bags = [int(x) for x in bags]
        self.sides = [int(x) for x in sides]
        self.lefts = [int(x) for x in lefts]
        self.rights = [int(x) for x in rights]
        self.groups = [int(x) for x in groups]
        self.choices = [bytes(c) for c in choices]
        self.choice_targets = [int(x) for x in choice_targets]

    def bag_offsets(self):
        return self.bags if self.bags else list(range(len(self.contents) + 1))

    def bag_count(self):
        return len(self.bag_offsets()) - 1

    def choice_contents(self):
        return [i for i, entry in enumerate(self.choices) if entry]

    def validate(self, config):
        """Raises ValueError naming the field and index of the first inconsistency docs/training.md
        lists (and the ones this reference adds: see README.md)."""
        n = len(self.contents)
        for i, (modality, item) in enumerate(self.contents):
            if modality not in config["modalities"]:
                raise ValueError(f"contents[{i}]: modality {modality!r} is not in the checkpoint")
            if (modality == "text") != isinstance(item, (bytes, bytearray)):
                raise ValueError(f"contents[{i}]: a {modality} content needs "
                                 f"{'bytes' if modality == 'text' else 'a tensor'}")
        offsets = self.bag_offsets()
        if self.bags:
            if len(self.bags) < 2 or self.bags[0] != 0:
                raise ValueError(f"bags: {len(self.bags)} offsets starting at {self.bags[:1]}; expected b + 1 >= 2 "
                                 "offsets starting at 0")
            for j in range(len(self.bags) - 1):
                if not self.bags[j] < self.bags[j + 1] <= n:
                    raise ValueError(f"bags[{j + 1}]: offset {self.bags[j + 1]} after {self.bags[j]} "
                                     f"(bags are non-empty and within {n} contents)")
        b = len(offsets) - 1
        if self.sides:
            if len(self.sides) != b:
                raise ValueError(f"sides: {len(self.sides)} entries for {b} bags")
            for j, side in enumerate(self.sides):
                if side not in (0, 1):
                    raise ValueError(f"sides[{j}]: {side} is not 0 or 1")
        if len(self.lefts) != len(self.rights):
            raise ValueError(f"relations: {len(self.lefts)} lefts but {len(self.rights)} rights")
        if self.groups and len(self.groups) != len(self.lefts):
            raise ValueError(f"relations.groups: {len(self.groups)} entries for {len(self.lefts)} relations")
        for r, (left, right) in enumerate(zip(self.lefts, self.rights)):
            for field, bag in (("lefts", left), ("rights", right)):
                if not 0 <= bag < b:
                    raise ValueError(f"relations.{field}[{r}]: bag {bag} out of range (0..{b - 1})")
            if left == right:
                raise ValueError(f"relations[{r}]: bag {left} related to itself")
            if self.sides and self.sides[left] == self.sides[right]:
                raise ValueError(f"relations[{r}]: bags {left} and {right} are both on side {self.sides[left]}, "
                                 "so neither is a candidate of the other")
            if self.groups and not 0 <= self.groups[r] < config["temperature_groups"]:
                raise ValueError(f"relations.groups[{r}]: {self.groups[r]} out of range "
                                 f"(0..{config['temperature_groups'] - 1})")
        if self.choices:
            if len(self.choices) != n:
                raise ValueError(f"choices: {len(self.choices)} entries for {n} contents")
            if len(self.choice_targets) != n:
                raise ValueError(f"choice_targets: {len(self.choice_targets)} entries for {n} contents")
            for i, legal in enumerate(self.choices):
                if not legal:
                    continue
                if self.contents[i][0] != "text":
                    raise ValueError(f"choices[{i}]: a {self.contents[i][0]} content cannot have choices")
                if len(set(legal)) != len(legal):
                    raise ValueError(f"choices[{i}]: legal bytes {list(legal)} repeat a byte")
                if self.choice_targets[i] not in legal:
                    raise ValueError(f"choice_targets[{i}]: {self.choice_targets[i]} is not among the legal bytes "
                                     f"{list(legal)}")

    # --- JSON (the dump format of README.md) ------------------------------------------------

    def to_json(self, save_array):
        """save_array(content_index, numpy array) -> file name of the written .npy."""
        contents = []
        for i, (modality, item) in enumerate(self.contents):
            if modality == "text":
                contents.append({"modality": "text", "text": base64.b64encode(bytes(item)).decode()})
            else:
                array = item.detach().to(torch.float32).numpy()
                contents.append({"modality": modality, "input": save_array(i, array)})
        return {"contents": contents, "bags": self.bags, "sides": self.sides,
                "relations": {"lefts": self.lefts, "rights": self.rights, "groups": self.groups},
                "choices": [base64.b64encode(c).decode() for c in self.choices],
                "choice_targets": self.choice_targets}

    @classmethod
    def from_json(cls, entry, directory):
        contents = []
        for i, content in enumerate(entry["contents"]):
            modality = str(content["modality"]).lower()
            if modality == "text":
                contents.append((modality, base64.b64decode(content["text"])))
            else:
                array = np.load(os.path.join(directory, content["input"]), allow_pickle=False)
                contents.append((modality, torch.from_numpy(np.asarray(array, dtype=np.float32))))
        relations = entry.get("relations", {}) or {}
        return cls(contents, entry.get("bags", []) or [], entry.get("sides", []) or [],
                   relations.get("lefts", []) or [], relations.get("rights", []) or [],
                   relations.get("groups", []) or [],
                   [base64.b64decode(c) for c in entry.get("choices", []) or []],
                   entry.get("choice_targets", []) or [])


# ---------------------------------------------------------------------------------------------
# The losses.

def normalise(x):
    return x / x.norm(dim=-1, keepdim=True)


def bag_embeddings(projected, offsets, prefix):
    """projected [contents in bags, E] -> [bags, prefix]: each content's prefix L2-normalised, the
    bag's mean normalised again."""
    unit = normalise(projected[:, :prefix])
    return normalise(torch.stack([unit[offsets[j]:offsets[j + 1]].mean(0) for j in range(len(offsets) - 1)]))


def contrastive_loss(embeddings, sides, lefts, rights, groups, temperatures):
    """embeddings: list over prefixes of [bags, P]; the mean over prefixes of the mean over relations
    of loss_r (module docstring).  Batched: one masked softmax per relation row."""
    dtype = temperatures.dtype
    if not lefts:
        return torch.zeros((), dtype=dtype)
    bags = embeddings[0].shape[0]
    if sides:
        side = torch.tensor(sides)
        allowed = side[:, None] != side[None, :]                                 # [bags, bags]
    else:
        allowed = ~torch.eye(bags, dtype=torch.bool)
    left, right = torch.tensor(lefts), torch.tensor(rights)
    group = torch.tensor(groups if groups else [0] * len(lefts))
    scale = torch.clamp(torch.exp(temperatures[group]), max=TEMPERATURE_CLAMP)  # [r]
    rows = torch.arange(len(lefts))
    total = torch.zeros((), dtype=dtype)
    for e in embeddings:
        similarity = e @ e.T                                                     # [bags, bags]

        def cross_entropy(anchor, target):
            logits = (scale[:, None] * similarity[anchor]).masked_fill(~allowed[anchor], float("-inf"))
            return torch.logsumexp(logits, dim=1) - logits[rows, target]         # [r]

        total = total + (0.5 * (cross_entropy(left, right) + cross_entropy(right, left))).mean()
    return total / len(embeddings)


def choice_loss(model, finals, legal_lists, targets, temperatures):
    """finals: the trunk's final states of the [CLS] bytes [NEXT] sequences; mean cross-entropy."""
    dtype = temperatures.dtype
    if not finals:
        return torch.zeros((), dtype=dtype)
    scale = torch.exp(temperatures[0])
    losses = []
    for final, legal, target in zip(finals, legal_lists, targets):
        hidden = R.layer_norm(final[-1], model.w["choose.norm.weight"], model.w["choose.norm.bias"], model.eps)
        # [256]; a plain product: BF16 compute keeps the head in F32, as text_choose runs it
        logits = model.w["choose.head.weight"] @ hidden + model.w["choose.head.bias"]
        scaled = logits[torch.tensor(list(legal))] * scale
        losses.append(torch.logsumexp(scaled, 0) - scaled[list(legal).index(target)])
    return torch.stack(losses).mean()


def forward(config, weights, batch, bf16_compute=False, rounding=None):
    """-> dict: loss, contrastive, choice (0-dim tensors with autograd), bag_embeddings [bags, E]
    (full width), embeddings_by_prefix (list of [bags, P]).  bf16_compute: the stems', trunk's and
    projections' products with BF16 operands (see Bf16Linear, BlockedAttention); `rounding`
    replaces `bf16` there (the self-tests pass `no_rounding` or a recorder)."""
    model = Bf16Model(config, weights, rounding) if bf16_compute else R.Model(config, weights)
    offsets = batch.bag_offsets()
    members = list(range(offsets[0], offsets[-1]))                 # contents in bags, in order
    chosen = batch.choice_contents()
    with bf16_products(rounding) if bf16_compute else nullcontext():
        items = [model.stem(batch.contents[i][0], batch.contents[i][1]) for i in members]
        items += [model.text_tokens(batch.contents[i][1], next_token=True) for i in chosen]
        finals = model.trunk(items)
    temperatures = weights["temperatures"]
    if members:
        projected = []
        for k, i in enumerate(members):
            modality = batch.contents[i][0]
            cls = R.layer_norm(finals[k][0], weights[f"{modality}.norm.weight"], weights[f"{modality}.norm.bias"],
                               model.eps)
            if bf16_compute:
                projected.append(bf16_linear(cls, weights[f"{modality}.projection"], None, rounding))  # [E]
            else:
                projected.append(weights[f"{modality}.projection"] @ cls)
        projected = torch.stack(projected)
        local = [o - offsets[0] for o in offsets]
        by_prefix = [bag_embeddings(projected, local, int(p)) for p in config["matryoshka"]]
        full = bag_embeddings(projected, local, config["embedding"])
    else:
        by_prefix, full = [], torch.zeros(0, config["embedding"], dtype=temperatures.dtype)
    contrastive = contrastive_loss(by_prefix, batch.sides, batch.lefts, batch.rights, batch.groups, temperatures)
    choice = choice_loss(model, finals[len(members):], [batch.choices[i] for i in chosen],
                         [batch.choice_targets[i] for i in chosen], temperatures)
    return {"contrastive": contrastive, "choice": choice, "bag_embeddings": full, "embeddings_by_prefix": by_prefix}


def total_loss(losses, optimizer):
    return optimizer["contrastive_weight"] * losses["contrastive"] + optimizer["choice_weight"] * losses["choice"]


# ---------------------------------------------------------------------------------------------
# BF16 compute (docs/training.md: "BF16 operands with F32 accumulation"), as the engine documents it.
#
# - The trunk's products (attn.qkv, attn.out, mlp.up, mlp.down), the stems' patch projections and
#   the embedding projections compute y = bf16(x) bf16(W)^T + b, and in the backward
#   dx = bf16(dy) bf16(W), dW = bf16(dy)^T bf16(x), db = sum dy (`Bf16Linear`).
# - Attention (`BlockedAttention`): scores from bf16(q), bf16(k); the value product from bf16(p),
#   bf16(v), normalised by the sum of the unrounded p; the backward recomputes P from the same
#   scores and the forward's log-sum-exp, takes dV = bf16(P)^T bf16(dout), dP = bf16(dout)
#   bf16(v)^T, and dQ, dK from the unrounded dS, q and k.
# - Nothing else is rounded: choose.head (F32, as text_choose runs it), LayerNorms, GELU, residual
#   adds, lookups, position/CLS/modality additions, the losses and the optimizer.
# The products accumulate in the reference's dtype (float64 for parity; the engine: F32).

ATTENTION_BLOCK = 64     # keys per block of the engine's attention (running max across blocks)


def bf16(x):
    """The nearest BF16 value of every element, in x's dtype: float64 -> float32 (nearest), then
    float32 -> BF16 (nearest, ties to even on the float32 bit pattern).  Going through float32 is
    part of the definition: a float64 just above a BF16 tie can land on the tie in float32 and then
    round to even, where rounding float64 directly would go up."""
    return x.to(torch.float32).to(torch.bfloat16).to(x.dtype)


def no_rounding(x):
    return x


# The places BF16 compute rounds (the negative controls of compare_train.py drop one at a time):
# the products' activations x, weights and output gradients dy; the attention's q and k (scores,
# forward and backward), v (forward and backward), p (forward and backward) and dout (backward).
ROUNDING_SITES = ("x", "weight", "dy", "qk", "v", "p", "dout")


def rounding_without(site):
    """`bf16` everywhere but at `site` (one of ROUNDING_SITES), where the value passes unrounded."""
    if site not in ROUNDING_SITES:
        raise ValueError(f"rounding site {site!r} is not one of {ROUNDING_SITES}")

    def rounding(x):
        return bf16(x)
    rounding.skip = frozenset([site])
    return rounding


def _round(rounding, site, x):
    """rounding(x), unless the rounding function names `site` among those it skips."""
    return x if site in getattr(rounding, "skip", ()) else rounding(x)


class Bf16Linear(torch.autograd.Function):
    """y = r(x) r(W)^T + b with x [..., in], W [out, in], b [out] or None; backward
    dx = r(dy) r(W), dW = r(dy)^T r(x) (over every leading index), db = sum dy.  r is `bf16` in
    BF16 compute; `no_rounding` makes it an ordinary linear layer (the self-tests' check)."""

    @staticmethod
    def forward(ctx, x, weight, bias, rounding):
        xr, wr = _round(rounding, "x", x), _round(rounding, "weight", weight)
        ctx.save_for_backward(xr, wr)
        ctx.rounding = rounding
        y = xr @ wr.T
        return y if bias is None else y + bias

    @staticmethod
    def backward(ctx, dy):
        xr, wr = ctx.saved_tensors
        dyr = _round(ctx.rounding, "dy", dy)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = dyr @ wr                                                            # [..., in]
        if ctx.needs_input_grad[1]:
            dw = dyr.reshape(-1, wr.shape[0]).T @ xr.reshape(-1, wr.shape[1])        # [out, in]
        if ctx.needs_input_grad[2]:
            db = dy.reshape(-1, wr.shape[0]).sum(0)                                  # [out]
        return dx, dw, db, None


def bf16_linear(x, weight, bias=None, rounding=None):
    """Bf16Linear with `rounding` (default: this module's `bf16`, looked up at the call)."""
    return Bf16Linear.apply(x, weight, bias, rounding or bf16)


class BlockedAttention(torch.autograd.Function):
    """q, k, v [..., N, hd] -> out [..., N, hd]: softmax(scale q k^T) v over the keys in blocks of
    `block` with a running max (FlashAttention-2's forward), rounding the operands of both products:

        s_j = scale <r(q), r(k_j)>;   per block: m' = max(m, max_j s_j), p_j = exp(s_j - m'),
        l <- l exp(m - m') + sum_j p_j,   acc <- acc exp(m - m') + sum_j r(p_j) r(v_j);
        out = acc / l,   lse = m + ln l.

    With at most `block` keys this is p_j = exp(s_j - rowmax) and out = sum r(p_j) r(v_j) / sum p_j.
    The backward recomputes the forward's scores and takes the forward's lse and out:
    P = exp(scale r(q) r(k)^T - lse), D_i = sum_e dout_ie out_ie (unrounded), dV = r(P)^T r(dout),
    dP = r(dout) r(V)^T, dS = P (dP - D) (unrounded P), dQ = scale dS K, dK = scale dS^T Q (dS, Q
    and K unrounded): BF16 products where the engine's attention_backward_bf16 has them."""

    @staticmethod
    def forward(ctx, q, k, v, rounding, block):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = scale * (_round(rounding, "qk", q) @ _round(rounding, "qk", k).transpose(-1, -2))  # [..., N, N]
        vr = _round(rounding, "v", v)
        n = k.shape[-2]
        peak = torch.full(scores.shape[:-1], float("-inf"), dtype=q.dtype)         # [..., N]
        total = torch.zeros(scores.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(q.shape, dtype=q.dtype)                                   # [..., N, hd]
        for start in range(0, n, block):
            s = scores[..., start:start + block]
            new_peak = torch.maximum(peak, s.max(-1).values)
            carry = torch.exp(peak - new_peak)                                      # 0 on the first block
            p = torch.exp(s - new_peak[..., None])
            total = total * carry + p.sum(-1)
            acc = acc * carry[..., None] + _round(rounding, "p", p) @ vr[..., start:start + block, :]
            peak = new_peak
        out = acc / total[..., None]
        lse = peak + torch.log(total)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.rounding = rounding
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        scale = 1.0 / math.sqrt(q.shape[-1])
        def r(site, x):
            return _round(ctx.rounding, site, x)
        p = torch.exp(scale * (r("qk", q) @ r("qk", k).transpose(-1, -2)) - lse[..., None])  # [..., N, N]
        d = (dout * out).sum(-1, keepdim=True)                                      # [..., N, 1]
        dv = r("p", p).transpose(-1, -2) @ r("dout", dout)
        dp = r("dout", dout) @ r("v", v).transpose(-1, -2)
        ds = p * (dp - d)
        return scale * (ds @ k), scale * (ds.transpose(-1, -2) @ q), dv, None, None


def blocked_attention(q, k, v, rounding=None, block=ATTENTION_BLOCK):
    """BlockedAttention with `rounding` (default: this module's `bf16`, looked up at the call)."""
    return BlockedAttention.apply(q, k, v, rounding or bf16, block)


class Bf16Model(R.Model):
    """R.Model whose attention is `BlockedAttention` with BF16 operands; its stems and the rest of
    the trunk get BF16 products from `bf16_products()` (R.linear), which `forward` enters."""

    def __init__(self, config, tensors, rounding=None):
        super().__init__(config, tensors)
        self.rounding = rounding

    def attention(self, x, i, mask=None):
        """x [B, N, d] -> [B, N, d]; every item attends over its own tokens (no padding, no mask)."""
        if mask is not None:
            raise ValueError("the BF16 reference runs unpadded items only")
        batch, n, d = x.shape
        h, hd = self.heads, d // self.heads
        r = self.rounding
        qkv = bf16_linear(x, self.w[f"trunk.{i}.attn.qkv.weight"], self.w[f"trunk.{i}.attn.qkv.bias"], r)
        qkv = qkv.reshape(batch, n, 3, h, hd).permute(2, 0, 3, 1, 4)                # [3, B, h, N, hd]
        out = blocked_attention(qkv[0], qkv[1], qkv[2], r)                           # [B, h, N, hd]
        out = out.permute(0, 2, 1, 3).reshape(batch, n, d)
        return bf16_linear(out, self.w[f"trunk.{i}.attn.out.weight"], self.w[f"trunk.{i}.attn.out.bias"], r)


@contextmanager
def bf16_products(rounding=None):
    """Within it, R.linear (the stems' patch projections and the trunk's MLP) is `bf16_linear`."""
    original = R.linear
    R.linear = lambda x, weight, bias=None: bf16_linear(x, weight, bias, rounding)
    try:
        yield
    finally:
        R.linear = original


# ---------------------------------------------------------------------------------------------
# The trainer's state.

class TrainerState:
    """Master weights, both moments and the step count, in `dtype` (float64 for parity)."""

    def __init__(self, config, weights, m, v, step, optimizer, dtype):
        self.config, self.weights, self.m, self.v, self.step_count = config, weights, m, v, int(step)
        self.optimizer = dict(OPTIMIZER_DEFAULTS, **(optimizer or {}))
        self.dtype = dtype
        self.names = list(R.tensor_shapes(config))

    @classmethod
    def from_checkpoint(cls, path, optimizer=None, dtype=torch.float64):
        """Weights from optimizer.weights.* when present (else the stored weights, BF16 widened),
        moments from optimizer.m.* / optimizer.v.* when present (else zeros), the step count from
        optimizer.step (else 0)."""
        metadata, arrays = R.read_safetensors(path)
        if metadata.get("uform.format") != "4" or "uform.config" not in metadata:
            raise ValueError(f"{path}: not a UForm 4 checkpoint (metadata {sorted(metadata)})")
        config = json.loads(metadata["uform.config"])
        weights, m, v = {}, {}, {}
        for name, shape in R.tensor_shapes(config).items():
            source = arrays.get(f"optimizer.weights.{name}", arrays.get(name))
            if source is None:
                raise ValueError(f"{path}: tensor '{name}' is missing")
            for kind, store in (("weights", weights), ("m", m), ("v", v)):
                array = source if kind == "weights" else arrays.get(f"optimizer.{kind}.{name}")
                if array is None:
                    array = np.zeros(shape)
                if list(array.shape) != list(shape):
                    raise ValueError(f"{path}: {kind} of '{name}' has shape {list(array.shape)}, expected {shape}")
                store[name] = torch.from_numpy(np.asarray(array, dtype=np.float64)).to(dtype)
        step = int(arrays["optimizer.step"].reshape(-1)[0]) if "optimizer.step" in arrays else 0
        return cls(config, weights, m, v, step, optimizer, dtype)

    def step(self, batch, bf16=False, rounding=None):
        """One optimisation step; returns the step's outputs (all before the update):
        loss, contrastive, choice, learning_rate, grad_norm (before clipping), temperatures,
        bag_embeddings [bags, E], gradients {name: tensor} (before clipping). `rounding` replaces
        `bf16` in BF16 compute (the negative controls: rounding_without(site), no_rounding)."""
        batch.validate(self.config)
        leaves = {name: self.weights[name].clone().requires_grad_(True) for name in self.names}
        losses = forward(self.config, leaves, batch, bf16_compute=bf16, rounding=rounding)
        loss = total_loss(losses, self.optimizer)
        if loss.requires_grad:
            found = torch.autograd.grad(loss, [leaves[n] for n in self.names], allow_unused=True)
        else:
            found = [None] * len(self.names)
        gradients = {name: (torch.zeros_like(self.weights[name]) if g is None else g.detach())
                     for name, g in zip(self.names, found)}
        norm = torch.sqrt(sum((g * g).sum() for g in gradients.values()))
        clip = self.optimizer["clip_norm"]
        factor = clip / float(norm) if clip > 0 and float(norm) > clip else 1.0
        step = self.step_count + 1
        lr = learning_rate(self.optimizer, step)
        outputs = {"loss": float(loss), "contrastive": float(losses["contrastive"]), "choice": float(losses["choice"]),
                   "learning_rate": lr, "grad_norm": float(norm),
                   "temperatures": self.weights["temperatures"].detach().clone(),
                   "bag_embeddings": losses["bag_embeddings"].detach(), "gradients": gradients}
        with torch.no_grad():
            for name in self.names:
                g = gradients[name] * factor if factor != 1.0 else gradients[name]
                adamw_update(self.weights[name], g, self.m[name], self.v[name], step, lr, self.optimizer,
                             decays(name, self.weights[name].shape))
        self.step_count = step
        return outputs

    def checkpoint_tensors(self, optimizer_state=True):
        """{name: (kind, array)} for R.write_safetensors: BF16 weights (norms and temperatures F32,
        as docs/model.md allows) and, optionally, the F32 optimizer tensors."""
        tensors = {}
        for name in self.names:
            array = self.weights[name].detach().to(torch.float32).numpy()
            tensors[name] = ("F32" if R._is_norm(name) or name == "temperatures" else "BF16", array)
        if optimizer_state:
            for kind, store in (("weights", self.weights), ("m", self.m), ("v", self.v)):
                for name in self.names:
                    tensors[f"optimizer.{kind}.{name}"] = ("F32", store[name].detach().to(torch.float32).numpy())
            tensors["optimizer.step"] = ("I64", np.array([self.step_count], np.int64))
        return tensors

    def save(self, path, optimizer_state=True):
        R.write_safetensors(path, self.checkpoint_tensors(optimizer_state),
                            {"uform.format": "4", "uform.config": json.dumps(self.config)})


# ---------------------------------------------------------------------------------------------
# The example dump: this reference in float32 standing in for the engine.

def example_config():
    """tiny with small media (image and video 16/8, audio 1 s), so the example runs in seconds."""
    config = R.sized_config("tiny")
    config["image"]["size"], config["image"]["patch"] = 16, 8
    config["video"].update({"size": 16, "patch": 8, "frames": 4, "tubelet": 2})
    config["audio"]["seconds"] = 1
    return config


def example_checkpoint(path, config, seed):
    """Initialised like docs/training.md (matrices N(0, 0.02), biases and CLS rows 0), except that every
    position table, text.positions too (a fresh trainer's is N(0, 0.02)), is N(0, 0.2): with the smaller
    table the example's choice loss saturates by step 3 (5.6e-5, p within 6e-5 of 1), where float32's
    rounding of 1 - p alone is 4e-3 relative and the comparison would measure that, not the step. Norms, biases, CLS rows and modality vectors are
    drawn away from 1 and 0 and the temperatures differ per group (group 2 beyond the clamp at 100), so a swapped or
    missing tensor shows."""
    generator = np.random.default_rng(seed)
    tensors = {}
    for name, shape in R.tensor_shapes(config).items():
        if name == "temperatures":
            values = np.array([math.log(1 / 0.07), math.log(1 / 0.07) - 0.7, 4.9, 1.0][:shape[0]] + [0.0] * max(0, shape[0] - 4))
            tensors[name] = ("F32", values.astype(np.float32))
        elif R._is_norm(name):
            base = 1.0 if name.endswith(".weight") else 0.0
            tensors[name] = ("F32", (base + 0.1 * generator.standard_normal(shape)).astype(np.float32))
        else:
            std = 0.2 if is_position_table(name) else 0.02
            tensors[name] = ("BF16", (std * generator.standard_normal(shape)).astype(np.float32))
    R.write_safetensors(path, tensors, {"uform.format": "4", "uform.config": json.dumps(config)})


def example_batches(config, seed):
    """Three batches: (0, 1) pairs of every modality with a bag of several contents, sides, two
    temperature groups plus the clamped one, and choice examples (one inside a bag, two after the
    last bag); (2) every content its own bag, no sides, no groups."""
    generator = torch.Generator().manual_seed(seed)
    s, v = config["image"]["size"], config["video"]
    frames, mels = R.audio_frames(config), config["audio"]["mels"]

    def image():
        return torch.randn(3, s, s, generator=generator)

    def video():
        return torch.randn(v["frames"], 3, v["size"], v["size"], generator=generator)

    def audio():
        return torch.rand(frames, mels, generator=generator) * 2.0 - 0.8

    contents = [
        ("text", b"a red square"), ("image", image()),                          # bag 0 | 1
        ("text", b"waves on a beach at dusk"), ("video", video()),              # bag 2 | 3
        ("text", b"a short beep"), ("audio", audio()),                          # bag 4 | 5 (4 has choices)
        ("text", b"blue mug, 300 ml, dishwasher safe"),                          # bag 6
        ("image", image()), ("image", image()), ("video", video()), ("audio", audio()),   # bag 7: a product
        ("text", b"Is the sky green? Answer: "),                                 # no bag, choices
        ("text", bytes(range(32, 127)) + b" -> pick:"),                          # no bag, > T bytes, choices
    ]
    choices = [b""] * len(contents)
    targets = [0] * len(contents)
    choices[4], targets[4] = b"xyz", ord("y")
    choices[11], targets[11] = b"yn", ord("n")
    choices[12], targets[12] = bytes(range(97, 123)), ord("q")
    first = Batch(contents, bags=[0, 1, 2, 3, 4, 5, 6, 7, 11], sides=[0, 1, 0, 1, 0, 1, 0, 1],
                  lefts=[0, 3, 4, 6, 0], rights=[1, 2, 5, 7, 7], groups=[0, 1, 2, 1, 0],
                  choices=choices, choice_targets=targets)
    plain = [("text", b"green circle"), ("image", image()), ("text", b"rain"), ("audio", audio()),
             ("text", b"the cat sat on"), ("video", video())]
    plain_choices = [b"", b"", b"", b"", b" m", b""]
    third = Batch(plain, lefts=[0, 2, 4], rights=[1, 3, 5], choices=plain_choices,
                  choice_targets=[0, 0, 0, 0, ord(" "), 0])
    return [first, first, third]


EXAMPLE_OPTIMIZER = {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.98, "epsilon": 1e-6, "weight_decay": 0.1,
                     "clip_norm": 1.0, "warmup": 2, "total_steps": 10, "contrastive_weight": 1.0,
                     "choice_weight": 0.5}


def example_dtype(compute, name=None):
    """The stand-in's precision: `name` ("float32" or "float64") or, by default, float32 for F32
    compute and float64 for BF16 compute.  Under BF16 compute a float32 twin of the float64 judge
    differs from it by up to ~1.4e-2 per tensor (one-ulp rounding flips of q and k magnified by the
    attention scores, AdamW sign flips: README.md), so only a float64 stand-in is an example that
    must pass; `--dtype float32` writes the twin for measuring that floor."""
    if name is None:
        name = "float64" if compute == "bf16" else "float32"
    return {"float32": torch.float32, "float64": torch.float64}[name]


def write_example_dump(directory, compute="f32", seed=7, start=None, batches=None, optimizer=None,
                       gradients=True, dtype=None):
    """Writes DIR/manifest.json and its files: `start` (a checkpoint path; default a fresh example
    checkpoint) stepped by this reference in `dtype` (default: example_dtype(compute)), with BF16
    compute when compute is bf16.  Every file stores float32, as the engine's dump does."""
    os.makedirs(directory, exist_ok=True)
    start_name = "start.safetensors"
    if start is None:
        config = example_config()
        example_checkpoint(os.path.join(directory, start_name), config, seed)
    else:
        with open(start, "rb") as source, open(os.path.join(directory, start_name), "wb") as target:
            target.write(source.read())
    optimizer = dict(optimizer or EXAMPLE_OPTIMIZER)
    dtype = dtype if dtype is not None else example_dtype(compute)
    state = TrainerState.from_checkpoint(os.path.join(directory, start_name), optimizer, dtype)
    batches = batches if batches is not None else example_batches(state.config, seed)
    steps = []
    for index, batch in enumerate(batches):
        entry = {"batch": batch.to_json(lambda i, array: _save_npy(directory, f"s{index}_c{i}.npy", array))}
        out = state.step(batch, bf16=(compute == "bf16"))
        entry["outputs"] = {
            "loss": out["loss"], "contrastive": out["contrastive"], "choice": out["choice"],
            "learning_rate": out["learning_rate"], "grad_norm": out["grad_norm"],
            "temperatures": out["temperatures"].tolist(),
            "bag_embeddings": _save_npy(directory, f"s{index}_bags.npy", out["bag_embeddings"].numpy().astype(np.float32)),
        }
        if gradients:
            entry["gradients"] = f"s{index}_grads.safetensors"
            R.write_safetensors(os.path.join(directory, entry["gradients"]),
                                {n: ("F32", g.to(torch.float32).numpy()) for n, g in out["gradients"].items()},
                                {"uform.format": "4", "uform.config": json.dumps(state.config)})
        entry["after"] = f"s{index}_after.safetensors"
        state.save(os.path.join(directory, entry["after"]))
        steps.append(entry)
    manifest = {"checkpoint": start_name, "compute": compute, "optimizer": optimizer, "steps": steps}
    with open(os.path.join(directory, "manifest.json"), "w") as handle:
        json.dump(manifest, handle, indent=1)
    return manifest


def _save_npy(directory, name, array):
    np.save(os.path.join(directory, name), array)
    return name


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    writer = sub.add_parser("write-dump", help="write an example step-parity dump (the reference standing in)")
    writer.add_argument("directory")
    writer.add_argument("--compute", choices=("f32", "bf16"), default="f32")
    writer.add_argument("--dtype", choices=("float32", "float64"),
                        help="the stand-in's precision (default float32 for f32, float64 for bf16)")
    writer.add_argument("--seed", type=int, default=7)
    writer.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    write_example_dump(args.directory, args.compute, args.seed, dtype=example_dtype(args.compute, args.dtype))
    print(f"wrote {os.path.join(args.directory, 'manifest.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
