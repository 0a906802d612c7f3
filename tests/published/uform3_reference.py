"""Independent PyTorch reference of UForm 3's published encoders (unum-cloud/uform3-image-text-*).

Written from uform's design (python/uform/torch_encoders.py and torch_processors.py, v3.1), with
PyTorch's own building blocks, never from the engine's sources. Run by Debian's /usr/bin/python3
(torch 1.13, torchvision 0.14, numpy, PIL); uform, safetensors and tokenizers are not needed: the
safetensors reader is below and .pt files go through torch.load.

Two formulations of each tower, checked against each other by uform3_selftest.py:
- `TextTower` / `ImageTower` (what uform3_compare.py judges the engine with): torch.nn modules.
  The text tower's blocks are nn.TransformerEncoderLayer(norm_first=False) — uform's TextEncoderBlock
  is exactly BERT's post-norm block: x = norm_attn(x + attention(x)), x = norm_mlp(x + mlp(x)),
  LayerNorm eps 1e-12, exact (erf) GELU, MLP width 4·dim. The image tower's blocks are
  nn.TransformerEncoderLayer(norm_first=True, eps 1e-6) with uform's LayerScale folded into the
  output projections (gamma ⊙ (W h + b) = (diag(gamma) W) h + gamma ⊙ b). uform's separate
  query/key/value linears become MultiheadAttention's in_proj (rows [query; key; value]). The
  activation is passed as a Python function so that torch 1.13 never takes the whole layer's fused
  path (torch._transformer_encoder_layer_fwd, taken for the strings "gelu"/"relu" without grad);
  MultiheadAttention itself still runs torch's native attention kernel there.
- `explicit_text` / `explicit_image`: the same computation written out with tensors (per-head
  softmax attention with uform's additive mask of finfo.min, LayerScale as a product), optionally
  with every matrix product's inputs rounded to BF16 (the engine's BF16 compute, roughly), which the
  self-test uses as a stand-in for the engine when it writes example dumps.

What uform computes (and these do):
- Text: ids padded with padding_idx to max_position_embeddings (TextProcessor), attention mask 1 on
  the real tokens. Embeddings = LayerNorm(word[ids] + position[p]) with p = 0, 1, ... ("bert") or
  p = cumsum(ids != padding_idx) · (ids != padding_idx) + padding_idx ("roberta"). Blocks whose index
  is in multimodal_layers_ids are SKIPPED ENTIRELY when encoding text alone (forward_features runs
  `if not block.cross_attention: x = block(x, mask)`): neither their self-attention nor their MLP
  runs, and their weights (attention, crossattn, norm_*, mlp) are read but unused, as are
  matching_head and context_projection. The published ONNX text encoders agree: they hold only the
  unimodal blocks. Pooling "cls" (row 0) or "mean" (over the real tokens), then
  embedding_projection (no bias). States = the last block's output (post-norm, so already
  normalised), every real token.
- Image: patch_embed (Conv2d, bias) → rows [P, dim] + pos_embed (patches only), then cls_token and
  num_reg_tokens reg_token rows prepended (no positions), pre-norm blocks with LayerScale, final
  `norm` on every row (= the states, 1 + R + P rows), pooling "cls" (row 0) or the mean of ALL rows
  (cls and registers included), embedding_projection (no bias).
- Preprocessing: torchvision Resize(image_size, BICUBIC) on the PIL image, convert("RGB") AFTER the
  resize, CenterCrop(image_size), ToTensor, Normalize(normalization_means, normalization_deviations);
  tests/reference/published_processors.py's UForm 3 function is used when it exists.
The embeddings the engine reports are these, L2-normalised (a Matryoshka prefix is taken first).
"""

import collections
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

TEXT_NORM_EPS = 1e-12
IMAGE_NORM_EPS = 1e-6
MLP_FACTOR = 4
CONFIG_NAMES = ("torch_config.json", "config.json")  # uform's get_checkpoint looks in this order
PERTURBATIONS = {
    # name: (towers it changes, what it does) — the negative controls of uform3_compare.py. Each must
    # move the outputs far past the f32 tolerance on the writer's random folders; the self-test checks.
    "run-multimodal": ("text", "runs the multimodal blocks' self-attention and MLP instead of skipping them"),
    "no-embedding-norm": ("text", "leaves out the embeddings' LayerNorm"),
    "position-offset": ("text", "positions start at 1 instead of 0"),
    "attend-padding": ("text", "attends to the padding rows (no key mask)"),
    "no-layerscale": ("image", "LayerScale gammas of 1"),
    "positions-on-cls": ("image", "adds the first position row to the class token and shifts the rest"),
    "no-final-norm": ("image", "leaves out the final `norm`"),
    "other-pooling": ("text image", "mean pooling where the config says cls and cls where it says mean"),
}
# Not a default control: the tanh form of GELU moves these folders' outputs by only ~2e-4 of their
# largest value (GELU's two forms differ by at most ~5e-4 anywhere), at the f32 tolerance itself.
WEAK_PERTURBATIONS = {"gelu-tanh": ("text image", "tanh-approximated GELU instead of the exact one")}


# ---------------------------------------------------------------------------------------------
# Reading a folder.

_SAFETENSORS_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8)}


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file (BF16 widened exactly by a 16-bit shift)."""
    with open(path, "rb") as stream:
        blob = stream.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for the header length")
    (length,) = struct.unpack("<Q", blob[:8])
    if length > len(blob) - 8:
        raise ValueError(f"{path}: header length {length} runs past the end ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + length].decode("utf-8"))
    data = memoryview(blob)[8 + length:]
    tensors = collections.OrderedDict()
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {entry['dtype']}, not a float type")
        code, width = _SAFETENSORS_DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if end - begin != count * width or end > len(data):
            raise ValueError(f"{path}: tensor {name} spans [{begin}, {end}), expected {count * width} bytes "
                             f"within {len(data)}")
        raw = np.frombuffer(data[begin:end], dtype=code)
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = torch.from_numpy(raw.astype(np.float32).reshape(entry["shape"]))
    return tensors


def read_pt(path, encoder):
    """{name: float32 tensor} of a torch.save'd state dict, plain or nested under the encoder's name
    (uform's from_pretrained accepts both)."""
    state = torch.load(path, map_location="cpu")
    if isinstance(state, dict) and encoder in state:
        state = state[encoder]
    if not isinstance(state, dict):
        raise ValueError(f"{path}: holds a {type(state).__name__}, not a state dict")
    return collections.OrderedDict((name, value.detach().to(torch.float32)) for name, value in state.items())


def read_config(folder):
    """(text section, image section) of the folder's config, with uform's defaults filled in."""
    for name in CONFIG_NAMES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as stream:
                config = json.load(stream)
            break
    else:
        raise FileNotFoundError(f"{folder}: none of {', '.join(CONFIG_NAMES)}")
    text = dict(config.get("text_encoder", config))
    image = dict(config.get("image_encoder", config))
    text.setdefault("pooling", "cls")
    text.setdefault("max_position_embeddings", 77)
    image.setdefault("num_reg_tokens", 0)
    return text, image


def read_weights(folder, encoder):
    """The encoder's tensors from <encoder>.safetensors, else <encoder>.pt; (tensors, path)."""
    for suffix, reader in ((".safetensors", read_safetensors), (".pt", lambda p: read_pt(p, encoder))):
        path = os.path.join(folder, encoder + suffix)
        if os.path.exists(path):
            return reader(path), path
    raise FileNotFoundError(f"{folder}: neither {encoder}.safetensors nor {encoder}.pt")


class Tensors:
    """The file's tensors, taken by name with a shape check; `finish` fails on names never taken,
    like uform's strict load_state_dict."""

    def __init__(self, tensors, where):
        self.tensors, self.where, self.taken = tensors, where, set()

    def take(self, name, shape):
        if name not in self.tensors:
            raise KeyError(f"{self.where}: tensor {name} is missing")
        value = self.tensors[name]
        if list(value.shape) != list(shape):
            raise ValueError(f"{self.where}: tensor {name} has shape {list(value.shape)}, expected {list(shape)}")
        self.taken.add(name)
        return value.to(torch.float64)

    def finish(self):
        extra = sorted(set(self.tensors) - self.taken)
        if extra:
            raise ValueError(f"{self.where}: unexpected tensors {extra[:8]}{' ...' if len(extra) > 8 else ''}")


def _linear(tensors, prefix, rows, columns, bias=True):
    weight = tensors.take(prefix + ".weight", [rows, columns])
    return weight, (tensors.take(prefix + ".bias", [rows]) if bias else None)


def _block_weights(tensors, prefix, dim, attention, norms):
    """One uform block's tensors as a dict: q, k, v, o (weight, bias), up, down, and the norms."""
    block = {}
    for short, part in zip("qkvo", ("query", "key", "value", "out")):
        block[short] = _linear(tensors, f"{prefix}.{attention}.{part}", dim, dim)
    block["up"] = _linear(tensors, prefix + ".mlp.hidden_layer", MLP_FACTOR * dim, dim)
    block["down"] = _linear(tensors, prefix + ".mlp.output_layer", dim, MLP_FACTOR * dim)
    for norm in norms:
        block[norm] = (tensors.take(f"{prefix}.{norm}.weight", [dim]), tensors.take(f"{prefix}.{norm}.bias", [dim]))
    return block


def text_weights(text, tensors, where):
    """The text encoder's tensors, every published one checked (unused ones included)."""
    t = Tensors(tensors, where)
    dim = text["dim"]
    weights = {
        "word": t.take("word_embeddings.weight", [text["vocab_size"], dim]),
        "position": t.take("position_embeddings.weight", [text["max_position_embeddings"], dim]),
        "norm": (t.take("layer_norm.weight", [dim]), t.take("layer_norm.bias", [dim])),
        "blocks": [],
    }
    multimodal = set(text["multimodal_layers_ids"])
    for layer in range(text["num_layers"]):
        prefix = f"blocks.{layer}"
        block = _block_weights(t, prefix, dim, "attention", ("norm_attn", "norm_mlp"))
        block["multimodal"] = layer in multimodal
        if block["multimodal"]:  # read to check the file, never used for text alone
            _block_weights_crossattn(t, prefix, dim)
        weights["blocks"].append(block)
    weights["projection"] = t.take("embedding_projection.weight", [text["embedding_dim"], dim])
    _linear(t, "matching_head", 1 if text["head_one_neuron"] else 2, dim)
    if text["context_dim"] != dim:
        t.take("context_projection.weight", [dim, text["context_dim"]])
    t.finish()
    return weights


def _block_weights_crossattn(t, prefix, dim):
    for part in ("query", "key", "value", "out"):
        _linear(t, f"{prefix}.crossattn.{part}", dim, dim)
    t.take(prefix + ".norm_crossattn.weight", [dim])
    t.take(prefix + ".norm_crossattn.bias", [dim])


def image_weights(image, tensors, where):
    t = Tensors(tensors, where)
    dim, patch = image["dim"], image["patch_size"]
    patches = (image["image_size"] // patch) ** 2
    weights = {
        "patch": (t.take("patch_embed.weight", [dim, 3, patch, patch]), t.take("patch_embed.bias", [dim])),
        "positions": t.take("pos_embed", [1, patches, dim])[0],
        "cls": t.take("cls_token", [1, 1, dim])[0],
        "registers": (t.take("reg_token", [1, image["num_reg_tokens"], dim])[0] if image["num_reg_tokens"] > 0
                      else torch.zeros(0, dim, dtype=torch.float64)),
        "blocks": [],
    }
    for layer in range(image["num_layers"]):
        prefix = f"blocks.{layer}"
        block = _block_weights(t, prefix, dim, "attn", ("norm1", "norm2"))
        block["ls1"] = t.take(prefix + ".ls1.gamma", [dim])
        block["ls2"] = t.take(prefix + ".ls2.gamma", [dim])
        weights["blocks"].append(block)
    weights["norm"] = (t.take("norm.weight", [dim]), t.take("norm.bias", [dim]))
    weights["projection"] = t.take("embedding_projection.weight", [image["embedding_dim"], dim])
    t.finish()
    return weights


class Folder:
    """A published folder read: configs and both encoders' weights (float64)."""

    def __init__(self, path, modalities=("text", "image")):
        self.path = path
        self.text, self.image = read_config(path)
        self.text_weights = self.image_weights = None
        if "text" in modalities:
            tensors, where = read_weights(path, "text_encoder")
            self.text_weights = text_weights(self.text, tensors, where)
        if "image" in modalities:
            tensors, where = read_weights(path, "image_encoder")
            self.image_weights = image_weights(self.image, tensors, where)


# ---------------------------------------------------------------------------------------------
# Formulation 1: torch.nn modules.

def _gelu_exact(x):
    return F.gelu(x)


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def _encoder_layer(dim, heads, eps, norm_first, block, gamma1=None, gamma2=None, activation=_gelu_exact,
                   norms=("norm_attn", "norm_mlp")):
    layer = nn.TransformerEncoderLayer(dim, heads, MLP_FACTOR * dim, dropout=0.0, activation=activation,
                                       layer_norm_eps=eps, batch_first=True, norm_first=norm_first)
    layer = layer.to(torch.float64).eval()
    ones = torch.ones(dim, dtype=torch.float64)
    gamma1 = ones if gamma1 is None else gamma1
    gamma2 = ones if gamma2 is None else gamma2
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([block["q"][0], block["k"][0], block["v"][0]]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([block["q"][1], block["k"][1], block["v"][1]]))
        layer.self_attn.out_proj.weight.copy_(gamma1[:, None] * block["o"][0])
        layer.self_attn.out_proj.bias.copy_(gamma1 * block["o"][1])
        layer.linear1.weight.copy_(block["up"][0])
        layer.linear1.bias.copy_(block["up"][1])
        layer.linear2.weight.copy_(gamma2[:, None] * block["down"][0])
        layer.linear2.bias.copy_(gamma2 * block["down"][1])
        for norm, name in zip((layer.norm1, layer.norm2), norms):
            norm.weight.copy_(block[name][0])
            norm.bias.copy_(block[name][1])
    return layer


def _layer_norm(dim, eps, weight_bias):
    norm = nn.LayerNorm(dim, eps=eps).to(torch.float64)
    with torch.no_grad():
        norm.weight.copy_(weight_bias[0])
        norm.bias.copy_(weight_bias[1])
    return norm


def _other_pooling(pooling):
    return "mean" if pooling == "cls" else "cls"


class TextTower(nn.Module):
    """uform's TextEncoder for text alone, from torch.nn parts (float64)."""

    def __init__(self, config, weights, perturb=()):
        super().__init__()
        self.config, self.perturb = config, set(perturb)
        dim = config["dim"]
        self.word = nn.Embedding.from_pretrained(weights["word"], freeze=True)
        self.position = nn.Embedding.from_pretrained(weights["position"], freeze=True)
        self.norm = _layer_norm(dim, TEXT_NORM_EPS, weights["norm"])
        activation = _gelu_tanh if "gelu-tanh" in self.perturb else _gelu_exact
        run_all = "run-multimodal" in self.perturb
        self.layers = nn.ModuleList(
            _encoder_layer(dim, config["num_heads"], TEXT_NORM_EPS, False, block, activation=activation)
            for block in weights["blocks"] if run_all or not block["multimodal"])
        self.projection = nn.Linear(dim, config["embedding_dim"], bias=False).to(torch.float64)
        with torch.no_grad():
            self.projection.weight.copy_(weights["projection"])
        self.pooling = config["pooling"]
        if "other-pooling" in self.perturb:
            self.pooling = _other_pooling(self.pooling)

    def positions(self, ids):
        if self.config["model_type"] == "roberta":
            real = ids.ne(self.config["padding_idx"]).long()
            positions = torch.cumsum(real, dim=1) * real + self.config["padding_idx"]
        else:
            positions = torch.arange(ids.shape[1]).expand(ids.shape[0], -1)
        if "position-offset" in self.perturb:
            positions = (positions + 1).clamp(max=self.config["max_position_embeddings"] - 1)
        if int(positions.max()) >= self.config["max_position_embeddings"]:
            raise ValueError(f"position {int(positions.max())} is past the table of "
                             f"{self.config['max_position_embeddings']} rows")
        return positions

    def forward(self, ids, mask):
        """ids [B, T] int64, mask [B, T] bool (True = real token) -> states [B, T, d], embeddings [B, E]."""
        x = self.word(ids) + self.position(self.positions(ids))
        if "no-embedding-norm" not in self.perturb:
            x = self.norm(x)
        padding = torch.zeros_like(mask) if "attend-padding" in self.perturb else ~mask
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        if self.pooling == "cls":
            pooled = x[:, 0]
        else:
            weights = mask.to(x.dtype)[:, :, None]
            pooled = (x * weights).sum(dim=1) / weights.sum(dim=1)
        return x, self.projection(pooled)


class ImageTower(nn.Module):
    """uform's ImageEncoder from torch.nn parts (float64)."""

    def __init__(self, config, weights, perturb=()):
        super().__init__()
        self.config, self.perturb = config, set(perturb)
        dim, patch = config["dim"], config["patch_size"]
        self.patch = nn.Conv2d(3, dim, patch, patch).to(torch.float64)
        with torch.no_grad():
            self.patch.weight.copy_(weights["patch"][0])
            self.patch.bias.copy_(weights["patch"][1])
        self.positions, self.cls, self.registers = weights["positions"], weights["cls"], weights["registers"]
        activation = _gelu_tanh if "gelu-tanh" in self.perturb else _gelu_exact
        unit = "no-layerscale" in self.perturb
        self.layers = nn.ModuleList(
            _encoder_layer(dim, config["num_heads"], IMAGE_NORM_EPS, True, block,
                           None if unit else block["ls1"], None if unit else block["ls2"], activation,
                           norms=("norm1", "norm2"))
            for block in weights["blocks"])
        self.norm = _layer_norm(dim, IMAGE_NORM_EPS, weights["norm"])
        self.projection = nn.Linear(dim, config["embedding_dim"], bias=False).to(torch.float64)
        with torch.no_grad():
            self.projection.weight.copy_(weights["projection"])
        self.pooling = config["pooling"]
        if "other-pooling" in self.perturb:
            self.pooling = _other_pooling(self.pooling)

    def forward(self, pixels):
        """pixels [B, 3, S, S] -> states [B, 1 + R + P, d] (after `norm`), embeddings [B, E]."""
        x = self.patch(pixels.to(torch.float64)).flatten(2).transpose(1, 2)  # [B, P, d], row-major patches
        batch = x.shape[0]
        specials = [self.cls.expand(batch, -1, -1), self.registers.expand(batch, -1, -1)]
        if "positions-on-cls" in self.perturb:
            x = torch.cat(specials + [x], dim=1)
            x[:, :self.positions.shape[0]] = x[:, :self.positions.shape[0]] + self.positions
        else:
            x = torch.cat(specials + [x + self.positions], dim=1)
        for layer in self.layers:
            x = layer(x)
        if "no-final-norm" not in self.perturb:
            x = self.norm(x)
        pooled = x[:, 0] if self.pooling == "cls" else x.mean(dim=1)
        return x, self.projection(pooled)


def pad_ids(ids_list, config):
    """uform's TextProcessor on already tokenised ids: [N, max_position_embeddings] filled with
    padding_idx, each row's ids sliced to that length; mask True on the real tokens."""
    length = config["max_position_embeddings"]
    ids = torch.full((len(ids_list), length), config["padding_idx"], dtype=torch.int64)
    mask = torch.zeros(len(ids_list), length, dtype=torch.bool)
    for row, sequence in enumerate(ids_list):
        kept = list(sequence)[:length]
        if not kept:
            raise ValueError(f"text {row} has no token ids")
        ids[row, :len(kept)] = torch.tensor(kept, dtype=torch.int64)
        mask[row, :len(kept)] = True
    return ids, mask


def encode_texts(folder, ids_list, perturb=()):
    """[(states [n_i, d] float64, embedding [E] float64 before normalisation)] per text."""
    tower = TextTower(folder.text, folder.text_weights, perturb)
    ids, mask = pad_ids(ids_list, folder.text)
    with torch.no_grad():
        states, embeddings = tower(ids, mask)
    return [(states[row, :int(mask[row].sum())], embeddings[row]) for row in range(len(ids_list))]


def encode_images(folder, pixels, perturb=()):
    """pixels [M, 3, S, S] -> [(states [1 + R + P, d], embedding [E])] per image, float64."""
    tower = ImageTower(folder.image, folder.image_weights, perturb)
    with torch.no_grad():
        states, embeddings = tower(pixels)
    return [(states[row], embeddings[row]) for row in range(pixels.shape[0])]


# ---------------------------------------------------------------------------------------------
# Formulation 2: the computation written out.

def _product(x, weight, bias, bf16):
    if bf16:
        x = x.to(torch.bfloat16).to(x.dtype)
        weight = weight.to(torch.bfloat16).to(x.dtype)
    y = x @ weight.to(x.dtype).t()
    return y if bias is None else y + bias.to(x.dtype)


def _attend(x, block, heads, additive_mask, bf16):
    """uform's Attention: separate query/key/value/out linears, softmax(q k^T / sqrt(h) + mask) v."""
    batch, length, dim = x.shape
    width = dim // heads

    def split(y):
        return y.reshape(batch, length, heads, width).permute(0, 2, 1, 3)

    q, k, v = (split(_product(x, *block[name], bf16)) for name in "qkv")
    scores = torch.einsum("bhqc,bhkc->bhqk", q, k) * width ** -0.5
    if additive_mask is not None:
        scores = scores + additive_mask
    out = torch.einsum("bhqk,bhkc->bhqc", scores.softmax(dim=-1), v)
    return _product(out.permute(0, 2, 1, 3).reshape(batch, length, dim), *block["o"], bf16)


def _mlp(x, block, bf16):
    return _product(F.gelu(_product(x, *block["up"], bf16)), *block["down"], bf16)


def _norm(x, weight_bias, eps):
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight_bias[0].to(x.dtype) + weight_bias[1].to(x.dtype)


def explicit_text(folder, ids_list, dtype=torch.float64, bf16=False):
    """encode_texts, written out; same return shape."""
    config, weights = folder.text, folder.text_weights
    ids, mask = pad_ids(ids_list, config)
    if config["model_type"] == "roberta":
        real = (ids != config["padding_idx"]).long()
        positions = real.cumsum(dim=1) * real + config["padding_idx"]
    else:
        positions = torch.arange(ids.shape[1])[None, :].expand_as(ids)
    x = weights["word"].to(dtype)[ids] + weights["position"].to(dtype)[positions]
    x = _norm(x, weights["norm"], TEXT_NORM_EPS)
    # uform's get_attention_mask: (1 - mask) * finfo.min on the keys, for every query.
    additive = ((1.0 - mask.to(dtype)) * torch.finfo(dtype).min)[:, None, None, :]
    for block in weights["blocks"]:
        if block["multimodal"]:
            continue
        x = _norm(x + _attend(x, block, config["num_heads"], additive, bf16), block["norm_attn"], TEXT_NORM_EPS)
        x = _norm(x + _mlp(x, block, bf16), block["norm_mlp"], TEXT_NORM_EPS)
    if config["pooling"] == "cls":
        pooled = x[:, 0]
    else:
        pooled = (x * mask[:, :, None].to(dtype)).sum(dim=1) / mask.sum(dim=1, keepdim=True).to(dtype)
    embeddings = _product(pooled, weights["projection"], None, bf16)
    return [(x[row, :int(mask[row].sum())], embeddings[row]) for row in range(len(ids_list))]


def explicit_image(folder, pixels, dtype=torch.float64, bf16=False):
    """encode_images, written out (the patch embedding as a product of flattened patches)."""
    config, weights = folder.image, folder.image_weights
    patch, dim = config["patch_size"], config["dim"]
    batch, _, size, _ = pixels.shape
    side = size // patch
    # [B, 3, S, S] -> [B, side*side, 3*p*p]: patches row-major, each flattened (channel, y, x) like
    # the convolution's weight [d, 3, p, p].
    rows = pixels.to(dtype)[:, :, :side * patch, :side * patch].reshape(batch, 3, side, patch, side, patch)
    rows = rows.permute(0, 2, 4, 1, 3, 5).reshape(batch, side * side, 3 * patch * patch)
    x = _product(rows, weights["patch"][0].reshape(dim, -1), weights["patch"][1], bf16)
    x = x + weights["positions"].to(dtype)
    specials = torch.cat([weights["cls"], weights["registers"]]).to(dtype)
    x = torch.cat([specials.expand(batch, -1, -1), x], dim=1)
    for block in weights["blocks"]:
        x = x + block["ls1"].to(dtype) * _attend(_norm(x, block["norm1"], IMAGE_NORM_EPS), block,
                                                 config["num_heads"], None, bf16)
        x = x + block["ls2"].to(dtype) * _mlp(_norm(x, block["norm2"], IMAGE_NORM_EPS), block, bf16)
    x = _norm(x, weights["norm"], IMAGE_NORM_EPS)
    pooled = x[:, 0] if config["pooling"] == "cls" else x.mean(dim=1)
    embeddings = _product(pooled, weights["projection"], None, bf16)
    return [(x[row], embeddings[row]) for row in range(batch)]


# ---------------------------------------------------------------------------------------------
# Preprocessing.

def _published_processor():
    """tests/reference/published_processors.py's uform3_image_processor(image, image_size, mean, std),
    when that module is in the tree."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    try:
        import published_processors  # written by the preprocessing engineer
    except ImportError:
        return None
    finally:
        sys.path.pop(0)
    return getattr(published_processors, "uform3_image_processor", None)


def preprocess_torchvision(image, config):
    """uform's ImageProcessor (torch_processors.py) on a PIL image -> float32 [3, S, S]."""
    from torchvision import transforms
    size = config["image_size"]
    pipeline = transforms.Compose([
        transforms.Resize(size, interpolation=transforms.InterpolationMode.BICUBIC),
        lambda picture: picture.convert("RGB"),
        transforms.CenterCrop(size),
        transforms.ToTensor(),
        transforms.Normalize(mean=tuple(config["normalization_means"]), std=tuple(config["normalization_deviations"])),
    ])
    return pipeline(image)


def preprocess(path, config, processor=None):
    """The pixels uform feeds its image encoder for the picture file PATH: float32 [3, S, S].
    PROCESSOR "torchvision" forces this file's own transcription of uform's pipeline."""
    from PIL import Image
    with Image.open(path) as image:
        image.load()
        function = _published_processor() if processor is None else None
        if function is not None:
            pixels = function(image, image_size=config["image_size"], mean=config["normalization_means"],
                              std=config["normalization_deviations"])
            return torch.as_tensor(np.asarray(pixels, dtype=np.float32))
        return preprocess_torchvision(image, config)


def tokenizer_frame(folder_path):
    """(ids before the text, ids after it, the truncation max_length or None) of the folder's
    tokenizer.json post-processor (TemplateProcessing's "single", BertProcessing, RobertaProcessing);
    None when there is no tokenizer.json or no post-processor of those kinds."""
    path = os.path.join(folder_path, "tokenizer.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as stream:
        tokenizer = json.load(stream)
    processor = tokenizer.get("post_processor") or {}
    truncation = (tokenizer.get("truncation") or {}).get("max_length")
    if processor.get("type") == "TemplateProcessing":
        specials = processor.get("special_tokens", {})
        before, after, seen_sequence = [], [], False
        for piece in processor.get("single", []):
            if "Sequence" in piece:
                seen_sequence = True
            elif "SpecialToken" in piece:
                ids = specials[piece["SpecialToken"]["id"]]["ids"]
                (after if seen_sequence else before).extend(ids)
        return before, after, truncation
    if processor.get("type") in ("BertProcessing", "RobertaProcessing"):
        return [processor["cls"][1]], [processor["sep"][1]], truncation
    return None


def normalise(vector, dimensions=0):
    """A Matryoshka prefix (dimensions > 0) of the embedding, L2-normalised."""
    if dimensions:
        vector = vector[..., :dimensions]
    return vector / vector.norm(dim=-1, keepdim=True)
