#!/usr/bin/python3
"""PyTorch peer of bench/bench_published.c: the same published folder, the same input files, in the
fastest PyTorch 1.13 formulations found for these architectures, serving timing requests on stdin.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/published_torch.py KIND FOLDER INPUTS [--threads 2]
        KIND    image (a CLIP folder's vision tower), text (a sentence-transformers BERT folder)
        INPUTS  a folder of .jpg files (image) or a file of sentences, one a line (text)

Protocol (one line each way; bench_published.c drives it, and a person can type it):
    modes                      -> {"modes": [...]}              the modes this KIND runs
    run MODE BATCH SECONDS     -> {"mode", "batch", "items_per_second", "calls", "prep_seconds", ...}
    embed MODE PATH            -> {"mode", "rows", "columns"}   writes the embeddings of every input,
                                  F32 little-endian [inputs, E], into PATH (the engine checks them)
    tokens                     -> {"tokens": [...]}             the ids' count per text (text only)
    quit
Every answer is one JSON line; a failure answers {"error": "..."} and the process keeps serving.

What one call does, timed as a whole (the engine's call does the same): images: PIL decodes the JPEG
bytes (held in memory, as the engine's tape holds them), converts to RGB, resizes the shortest edge
to the crop size with BICUBIC, crops the centre, scales and normalises with the folder's mean and
std in NumPy (CLIPImageProcessor's steps and order), stacks the batch, runs the vision tower,
projects and L2-normalises. Texts: a WordPiece tokenizer written here (BertTokenizer's basic
tokenizer + greedy longest-match WordPiece over vocab.txt; no Rust `tokenizers` exists for this
Python), padding to the longest text of the batch, the encoder, the folder's pooling (mean over the
real tokens, or CLS), L2-normalisation. "prep_seconds" is the share of the call spent before the
model (decoding + preprocessing, or tokenization), so a reader can take it out.

Modes (each a separate copy of the weights, made on first use):
  f32         the modules formulation (transformers' CLIPEncoderLayer / BertLayer: separate q, k, v
              linears, heads split by view/permute, matmul, softmax), torch.inference_mode
  f32-fused   torch's native fused paths: BERT as nn.TransformerEncoder(Layer) with a key padding mask
              (inference fast path: _transformer_encoder_layer_fwd over nested tensors, so padding
              costs nothing); CLIP with nn.MultiheadAttention's native fast path (its quick_gelu MLP
              rules out TransformerEncoderLayer, whose fast path knows only relu and gelu)
  bf16        the modules formulation with every weight cast to BF16 (model.to(torch.bfloat16)),
              inputs cast too: oneDNN's AVX-512 BF16 GEMMs
  bf16-fused  the fused formulation with BF16 weights
  autocast    the modules formulation in F32 under torch.autocast("cpu", dtype=torch.bfloat16) (one
              context around the whole timed loop so its weight cast cache is kept)
  qdynamic    torch.ao.quantization.quantize_dynamic on every nn.Linear of the modules formulation
              (qint8 weights, per-tensor, fbgemm): PyTorch's INT8 for transformers on CPU
Image preprocessing of a batch runs on a pool of --threads threads (PIL releases the GIL while it
decodes and resizes), as a DataLoader's workers would; tokenization is single-threaded Python.
"""

import argparse
import concurrent.futures
import io
import json
import math
import os
import struct
import sys
import time
import unicodedata

import warnings

import numpy as np
import torch
import torch.utils.mkldnn
from PIL import Image
from torch import nn

# TransformerEncoder's nested tensors print a "prototype stage" warning on first use.
warnings.filterwarnings("ignore", message=".*nested tensors is in prototype stage.*")

# ---------------------------------------------------------------------------------------------
# Weights: safetensors read through a memory map, only the tensors asked for.

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64}


def read_tensors(path, prefixes):
    """{name: float32 torch tensor} of the tensors of `path` whose names start with one of `prefixes`."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    header.pop("__metadata__", None)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, entry in header.items():
        if not name.startswith(tuple(prefixes)):
            continue
        begin, end = entry["data_offsets"]
        raw = np.frombuffer(mapped[begin:end], dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"])
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = torch.from_numpy(np.array(raw, dtype=np.float32 if raw.dtype != np.int64 else np.int64))
    return tensors


def read_json(folder, name, default=None):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


# ---------------------------------------------------------------------------------------------
# CLIP's vision tower (transformers' CLIPVisionTransformer + visual_projection).

class ClipLayer(nn.Module):
    """Pre-norm layer: h = x + out(attn(ln1 x)); y = h + fc2(act(fc1(ln2 h))). With `fused`, the
    attention is nn.MultiheadAttention (in_proj = [q; k; v]) so its native fast path runs."""

    def __init__(self, tensors, prefix, width, heads, inner, eps, act, fused):
        super().__init__()
        self.heads, self.act, self.fused = heads, act, fused
        self.ln1, self.ln2 = nn.LayerNorm(width, eps=eps), nn.LayerNorm(width, eps=eps)
        self.fc1, self.fc2 = nn.Linear(width, inner), nn.Linear(inner, width)
        pairs = {self.ln1: "layer_norm1", self.ln2: "layer_norm2", self.fc1: "mlp.fc1", self.fc2: "mlp.fc2"}
        q, k, v = (tensors[f"{prefix}self_attn.{n}_proj.weight"] for n in "qkv")
        qb, kb, vb = (tensors[f"{prefix}self_attn.{n}_proj.bias"] for n in "qkv")
        if fused:
            self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
            self.attn.in_proj_weight.data.copy_(torch.cat([q, k, v]))
            self.attn.in_proj_bias.data.copy_(torch.cat([qb, kb, vb]))
            pairs[self.attn.out_proj] = "self_attn.out_proj"
        else:
            self.q, self.k, self.v, self.out = (nn.Linear(width, width) for _ in range(4))
            pairs.update({self.q: "self_attn.q_proj", self.k: "self_attn.k_proj", self.v: "self_attn.v_proj",
                          self.out: "self_attn.out_proj"})
        for module, name in pairs.items():
            module.weight.data.copy_(tensors[f"{prefix}{name}.weight"])
            module.bias.data.copy_(tensors[f"{prefix}{name}.bias"])

    def forward(self, x):                                            # x [B, N, d]
        h = self.ln1(x)
        if self.fused:
            a = self.attn(h, h, h, need_weights=False)[0]
        else:
            b, n, d = h.shape
            hd = d // self.heads
            q = (self.q(h) * hd ** -0.5).view(b, n, self.heads, hd).transpose(1, 2)
            k = self.k(h).view(b, n, self.heads, hd).transpose(1, 2)
            v = self.v(h).view(b, n, self.heads, hd).transpose(1, 2)
            a = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)), dim=-1), v)
            a = self.out(a.transpose(1, 2).reshape(b, n, d))
        h = x + a
        return h + self.fc2(self.act(self.fc1(self.ln2(h))))


class ClipVision(nn.Module):
    def __init__(self, folder, fused):
        super().__init__()
        config = read_json(folder, "config.json")
        vision = config["vision_config"]
        d, p = vision["hidden_size"], vision["patch_size"]
        self.patch = p
        tensors = read_tensors(os.path.join(folder, "model.safetensors"), ["vision_model.", "visual_projection."])
        act = quick_gelu if vision.get("hidden_act", "quick_gelu") == "quick_gelu" else nn.functional.gelu
        eps = vision.get("layer_norm_eps", 1e-5)
        self.embed = nn.Conv2d(3, d, p, stride=p, bias=False)
        self.embed.weight.data.copy_(tensors["vision_model.embeddings.patch_embedding.weight"])
        self.cls = nn.Parameter(tensors["vision_model.embeddings.class_embedding"])
        self.positions = nn.Parameter(tensors["vision_model.embeddings.position_embedding.weight"])
        self.pre, self.post = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        for module, name in ((self.pre, "pre_layrnorm"), (self.post, "post_layernorm")):
            module.weight.data.copy_(tensors[f"vision_model.{name}.weight"])
            module.bias.data.copy_(tensors[f"vision_model.{name}.bias"])
        self.layers = nn.ModuleList(
            ClipLayer(tensors, f"vision_model.encoder.layers.{i}.", d, vision["num_attention_heads"],
                      vision["intermediate_size"], eps, act, fused) for i in range(vision["num_hidden_layers"]))
        self.projection = nn.Linear(d, config.get("projection_dim", 512), bias=False)
        self.projection.weight.data.copy_(tensors["visual_projection.weight"])

    def forward(self, pixels):                                       # [B, 3, S, S] -> [B, E]
        rows = self.embed(pixels).flatten(2).transpose(1, 2)          # [B, g*g, d]
        cls = self.cls.to(rows.dtype).expand(rows.shape[0], 1, -1)
        h = self.pre(torch.cat([cls, rows], dim=1) + self.positions)
        for layer in self.layers:
            h = layer(h)
        e = self.projection(self.post(h[:, 0]))
        return e / e.norm(dim=-1, keepdim=True)


class ClipPreprocess:
    """CLIPImageProcessor / CLIPFeatureExtractor of the folder's preprocessor_config.json: RGB,
    shortest edge to `size` with PIL's resample, centre crop, 1/255, (x - mean) / std, CHW."""

    def __init__(self, folder):
        config = read_json(folder, "preprocessor_config.json")
        size, crop = config["size"], config.get("crop_size", config["size"])
        self.size = size["shortest_edge"] if isinstance(size, dict) else size
        self.crop = (crop["height"], crop["width"]) if isinstance(crop, dict) else (crop, crop)
        self.resample = config.get("resample", 3)
        self.scale = np.float32(config.get("rescale_factor", 1 / 255))
        self.mean = np.array(config["image_mean"], np.float32)
        self.std = np.array(config["image_std"], np.float32)

    def __call__(self, data):
        image = Image.open(io.BytesIO(data)).convert("RGB")
        width, height = image.size
        short, long = (width, height) if width <= height else (height, width)
        new_long = int(self.size * long / short)
        size = (self.size, new_long) if width <= height else (new_long, self.size)
        image = image.resize(size, resample=self.resample)
        width, height = image.size
        top, left = (height - self.crop[0]) // 2, (width - self.crop[1]) // 2
        array = np.asarray(image)[top: top + self.crop[0], left: left + self.crop[1]]
        array = (array.astype(np.float32) * self.scale - self.mean) / self.std
        return array.transpose(2, 0, 1)


# ---------------------------------------------------------------------------------------------
# BERT (transformers' BertModel) with sentence-transformers' pooling and Normalize.

class BertLayer(nn.Module):
    """Post-norm: h = ln1(x + out(attn(x))); y = ln2(h + down(gelu(up(h))))."""

    def __init__(self, tensors, prefix, d, heads, inner, eps):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))
        self.up, self.down = nn.Linear(d, inner), nn.Linear(inner, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        names = {self.q: "attention.self.query", self.k: "attention.self.key", self.v: "attention.self.value",
                 self.out: "attention.output.dense", self.ln1: "attention.output.LayerNorm",
                 self.up: "intermediate.dense", self.down: "output.dense", self.ln2: "output.LayerNorm"}
        for module, name in names.items():
            module.weight.data.copy_(tensors[f"{prefix}{name}.weight"])
            module.bias.data.copy_(tensors[f"{prefix}{name}.bias"])

    def forward(self, x, bias):                                      # x [B, T, d], bias [B, 1, 1, T]
        b, t, d = x.shape
        hd = d // self.heads
        q = self.q(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.heads, hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.heads, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + bias
        a = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        h = self.ln1(x + self.out(a))
        return self.ln2(h + self.down(nn.functional.gelu(self.up(h))))


class Bert(nn.Module):
    def __init__(self, folder, fused):
        super().__init__()
        config = read_json(folder, "config.json")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act {config.get('hidden_act')}: this peer runs gelu BERTs only")
        d, heads, inner, eps = (config["hidden_size"], config["num_attention_heads"], config["intermediate_size"],
                                config.get("layer_norm_eps", 1e-12))
        tensors = read_tensors(os.path.join(folder, "model.safetensors"), ["embeddings.", "encoder."])
        self.fused = fused
        self.words = nn.Parameter(tensors["embeddings.word_embeddings.weight"])
        self.positions = nn.Parameter(tensors["embeddings.position_embeddings.weight"])
        self.type0 = nn.Parameter(tensors["embeddings.token_type_embeddings.weight"][0].clone())
        self.ln = nn.LayerNorm(d, eps=eps)
        self.ln.weight.data.copy_(tensors["embeddings.LayerNorm.weight"])
        self.ln.bias.data.copy_(tensors["embeddings.LayerNorm.bias"])
        count = config["num_hidden_layers"]
        if fused:
            layers = []
            for i in range(count):
                p = f"encoder.layer.{i}."
                layer = nn.TransformerEncoderLayer(d, heads, inner, dropout=0.0, activation="gelu", layer_norm_eps=eps,
                                                   batch_first=True, norm_first=False)
                layer.self_attn.in_proj_weight.data.copy_(torch.cat(
                    [tensors[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]))
                layer.self_attn.in_proj_bias.data.copy_(torch.cat(
                    [tensors[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]))
                for module, name in ((layer.self_attn.out_proj, "attention.output.dense"),
                                     (layer.norm1, "attention.output.LayerNorm"), (layer.linear1, "intermediate.dense"),
                                     (layer.linear2, "output.dense"), (layer.norm2, "output.LayerNorm")):
                    module.weight.data.copy_(tensors[p + name + ".weight"])
                    module.bias.data.copy_(tensors[p + name + ".bias"])
                layers.append(layer)
            self.encoder = nn.TransformerEncoder(layers[0], count, enable_nested_tensor=True)
            self.encoder.layers = nn.ModuleList(layers)
        else:
            self.layers = nn.ModuleList(BertLayer(tensors, f"encoder.layer.{i}.", d, heads, inner, eps)
                                        for i in range(count))
        pooling = read_json(folder, "1_Pooling/config.json", {})
        self.mean = bool(pooling.get("pooling_mode_mean_tokens", True)) and not pooling.get("pooling_mode_cls_token")

    def forward(self, ids, mask):                                    # [B, T] int64, [B, T] bool (True: token)
        t = ids.shape[1]
        h = self.ln(self.words[ids] + self.positions[:t] + self.type0)
        if self.fused:
            h = self.encoder(h, src_key_padding_mask=~mask)
        else:
            bias = ((~mask).to(h.dtype) * torch.finfo(h.dtype).min)[:, None, None, :]
            for layer in self.layers:
                h = layer(h, bias)
        if self.mean:
            weights = mask.to(h.dtype)[:, :, None]
            pooled = (h * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        else:
            pooled = h[:, 0]
        return pooled / pooled.norm(dim=-1, keepdim=True).clamp(min=1e-12)


class WordPiece:
    """BertTokenizer (do_lower_case from tokenizer_config.json): clean, CJK spacing, lowercase and
    strip accents, split on whitespace and punctuation, greedy longest-match WordPiece ("##"
    continuations, [UNK] for a word that cannot be split or longer than 100 characters), then
    [CLS] ... [SEP] within the sentence-transformers max_seq_length."""

    def __init__(self, folder):
        with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as handle:
            self.vocab = {line.rstrip("\n"): i for i, line in enumerate(handle)}
        config = read_json(folder, "tokenizer_config.json", {})
        self.lower = config.get("do_lower_case", True)
        self.limit = read_json(folder, "sentence_bert_config.json", {}).get("max_seq_length",
                                                                            config.get("model_max_length", 512))
        self.unk, self.cls, self.sep = self.vocab["[UNK]"], self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.cache = {}

    @staticmethod
    def _punctuation(c):
        o = ord(c)
        if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
            return True
        return unicodedata.category(c).startswith("P")

    def _words(self, text):
        out, word = [], []
        for c in text:
            o = ord(c)
            if o == 0 or o == 0xFFFD or (unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r"):
                continue
            if c in " \t\n\r" or unicodedata.category(c) == "Zs":
                if word:
                    out.append("".join(word)), word.clear()
            elif self._punctuation(c) or 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF:
                if word:
                    out.append("".join(word)), word.clear()
                out.append(c)
            else:
                word.append(c)
        if word:
            out.append("".join(word))
        if self.lower:
            out = ["".join(c for c in unicodedata.normalize("NFD", w.lower()) if unicodedata.category(c) != "Mn")
                   for w in out]
        return out

    def _pieces(self, word):
        if word in self.cache:
            return self.cache[word]
        pieces, start = [], 0
        if len(word) > 100:
            pieces = [self.unk]
        while start < len(word) and not pieces == [self.unk]:
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    pieces.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                pieces = [self.unk]
                break
            start = end
        self.cache[word] = pieces
        return pieces

    def __call__(self, text):
        ids = [self.cls]
        for word in self._words(text):
            ids.extend(self._pieces(word))
        return ids[: self.limit - 1] + [self.sep]


# ---------------------------------------------------------------------------------------------
# The peer.

MODES = {"image": ["f32", "f32-fused", "f32-mkldnn", "bf16", "bf16-fused", "bf16-mkldnn", "autocast", "qdynamic"],
         "text": ["f32", "f32-fused", "f32-mkldnn", "bf16", "bf16-fused", "bf16-mkldnn", "autocast", "qdynamic"]}


class Peer:
    def __init__(self, kind, folder, inputs, threads):
        self.kind, self.folder, self.models = kind, folder, {}
        self.pool = concurrent.futures.ThreadPoolExecutor(threads)
        if kind == "image":
            names = sorted(n for n in os.listdir(inputs) if n.endswith(".jpg"))
            self.items = []
            for name in names:
                with open(os.path.join(inputs, name), "rb") as handle:
                    self.items.append(handle.read())
            self.preprocess = ClipPreprocess(folder)
        else:
            with open(inputs, encoding="utf-8") as handle:
                self.items = [line.rstrip("\n") for line in handle if line.strip()]
            self.tokenizer = WordPiece(folder)
        self.warm = set()

    def model(self, mode):
        if mode not in self.models:
            fused = mode.endswith("-fused")
            model = (ClipVision if self.kind == "image" else Bert)(self.folder, fused).eval()
            if mode.startswith("bf16"):
                model = model.to(torch.bfloat16)
            if mode.endswith("-mkldnn"):
                model = torch.utils.mkldnn.to_mkldnn(model, torch.bfloat16 if mode.startswith("bf16") else torch.float)
            elif mode == "qdynamic":
                model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
            self.models[mode] = model
        return self.models[mode]

    def prepare(self, items, dtype):
        """Inputs of one call: pixels [B, 3, S, S], or (ids [B, T], mask [B, T])."""
        if self.kind == "image":
            if len(items) == 1:
                arrays = [self.preprocess(items[0])]
            else:
                arrays = list(self.pool.map(self.preprocess, items))
            return (torch.from_numpy(np.stack(arrays)).to(dtype),)
        lists = [self.tokenizer(text) for text in items]
        longest = max(len(ids) for ids in lists)
        ids = torch.zeros(len(lists), longest, dtype=torch.int64)
        mask = torch.zeros(len(lists), longest, dtype=torch.bool)
        for row, values in enumerate(lists):
            ids[row, : len(values)] = torch.tensor(values)
            mask[row, : len(values)] = True
        return ids, mask

    def call(self, model, items, dtype):
        start = time.perf_counter()
        inputs = self.prepare(items, dtype)
        prepared = time.perf_counter()
        embeddings = model(*inputs)
        return embeddings, prepared - start

    def context(self, mode):
        return torch.autocast("cpu", dtype=torch.bfloat16) if mode == "autocast" else _Null()

    def run(self, mode, batch, seconds):
        model, dtype = self.model(mode), torch.bfloat16 if mode.startswith("bf16") else torch.float32
        count = len(self.items)
        batches = [self.items[i: i + batch] for i in range(0, count, batch)] if batch < count else [self.items]
        calls, prep, items = 0, 0.0, 0
        with torch.inference_mode(), self.context(mode):
            if (mode, batch) not in self.warm:                        # allocations, oneDNN primitives, casts
                for chunk in batches[:2]:
                    self.call(model, chunk, dtype)
                self.warm.add((mode, batch))
            start = time.perf_counter()
            while calls == 0 or time.perf_counter() - start < seconds:
                chunk = batches[calls % len(batches)]
                prep += self.call(model, chunk, dtype)[1]
                calls += 1
                items += len(chunk)
            elapsed = time.perf_counter() - start
        return {"mode": mode, "batch": batch, "items_per_second": items / elapsed, "calls": calls,
                "seconds": elapsed, "prep_seconds": prep}

    def embed(self, mode, path):
        model, dtype = self.model(mode), torch.bfloat16 if mode.startswith("bf16") else torch.float32
        with torch.inference_mode(), self.context(mode):
            embeddings = self.call(model, self.items, dtype)[0].float().numpy()
        embeddings.astype("<f4").tofile(path)
        return {"mode": mode, "rows": embeddings.shape[0], "columns": embeddings.shape[1]}

    def tokens(self):
        return {"tokens": [min(len(self.tokenizer(text)), self.tokenizer.limit) for text in self.items]}


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=sorted(MODES))
    parser.add_argument("folder")
    parser.add_argument("inputs")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        print("warning: OMP_WAIT_POLICY=PASSIVE is not set; PyTorch's threads spin while the engine runs",
              file=sys.stderr)
    torch.set_num_threads(args.threads)
    peer = Peer(args.kind, args.folder, args.inputs, args.threads)
    print(json.dumps({"ready": True, "torch": torch.__version__, "items": len(peer.items)}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "quit":
                break
            if words[0] == "modes":
                answer = {"modes": MODES[args.kind]}
            elif words[0] == "run" and len(words) == 4 and words[1] in MODES[args.kind]:
                answer = peer.run(words[1], int(words[2]), float(words[3]))
            elif words[0] == "embed" and len(words) == 3 and words[1] in MODES[args.kind]:
                answer = peer.embed(words[1], words[2])
            elif words[0] == "tokens" and args.kind == "text":
                answer = peer.tokens()
            else:
                answer = {"error": f"unknown request: {line.strip()}"}
        except Exception as error:  # noqa: BLE001  (the driver reads the message and goes on)
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
