"""Writes UForm 3 model folders with random weights, laid out as unum-cloud publishes them.

    /usr/bin/python3 tests/published/uform3_write.py VARIANT SIZE OUT_FOLDER
        [--seed N] [--dtype bf16|f16|f32] [--format safetensors|pt|pt-nested|both]
        [--tokenizer-json PATH] [--text-model-type bert|roberta] [--image-pooling cls|mean]

VARIANT is the published repository the folder imitates (unum-cloud/uform3-image-text-<...>):

    small         english-small: 4-layer BERT (dim 768, 2 multimodal layers), ViT-S/16 (384)
    base          english-base: 4-layer BERT (dim 768 = context_dim), ViT-B/16 (768)
    large         english-large: 12-layer BERT (512, 6 multimodal), ViT-L/14 with 4 register tokens
    multilingual  multilingual-base: 12-layer BERT (384, 4 multimodal, mean pooling, 50 positions,
                  padding_idx 1, an XLM-R-style Unigram tokenizer), ViT-B/16

SIZE `base` keeps the published dimensions; `tiny` shrinks widths and layer counts but keeps every
structural trait of the variant (which layers are multimodal, context_dim against dim, pooling,
register tokens, patch and image size, padding_idx, max_position_embeddings).

What a published folder holds (the Hugging Face trees of April 2024, read through the hub's pages):
config.json with "text_encoder" and "image_encoder" sections, tokenizer.json, and per encoder
`<encoder>.safetensors` and `<encoder>.pt` (torch.save of the module's state_dict(), an OrderedDict of
BFloat16 tensors, not nested), beside .onnx and .mlpackage exports the engine does not read. The
--format names which weight files are written: `both` is the published layout; `pt-nested` wraps the
state dict as {"text_encoder": ...}, which uform's from_pretrained also accepts. The weights default to
BF16 as published.

Tensor names are those of uform's torch_encoders.py modules (python/uform/torch_encoders.py, v3.1);
see text_names/image_names below and docs/checkpoints.md. Random values: matrices
normal(0, gain / sqrt(fan_in)) (see EXPANDING_GAIN), LayerNorm weights 1 + normal(0, 0.1) and biases
normal(0, 0.05) (never exactly 1 or 0, so a missing or swapped norm shows), LayerScale gammas
uniform(0.1, 1), embeddings normal(0, 0.5), the padding row of word_embeddings zero (nn.Embedding
keeps it zero through training).

Tokenizer files come from the tokenizer engineers' generators, run as subprocesses:
tests/text/make_tokenizers.py bert-uncased (English) and tests/text/sp_make_models.py xlm-roberta
(multilingual); only tokenizer.json is copied, as the published folders hold only that file.
--tokenizer-json uses a given file instead. The tiny folders size word_embeddings to the tokenizer's
vocabulary; base folders keep the published vocab_size where it is larger (the multilingual model's
table has 250,037 rows for a 250,002-piece tokenizer, so unused rows are part of the format).
"""

import argparse
import collections
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CLIP_MEANS = [0.48145466, 0.4578275, 0.40821073]
CLIP_DEVIATIONS = [0.26862954, 0.26130258, 0.27577711]

# The published config.json sections, key order as in the files (english-small at c58bbda/ffae8d1 and
# later; the other three at their April 2024 commits).
PUBLISHED = {
    "small": {
        "text_encoder": {
            "tokenizer_class": "bert", "model_type": "bert", "dim": 768, "context_dim": 384,
            "vocab_size": 30522, "padding_idx": 0, "num_layers": 4, "num_heads": 12, "embedding_dim": 256,
            "multimodal_layers_ids": [2, 3], "head_one_neuron": False, "pooling": "cls",
            "max_position_embeddings": 64, "dropout_prob": 0.1},
        "image_encoder": {
            "normalization_means": CLIP_MEANS, "normalization_deviations": CLIP_DEVIATIONS, "dim": 384,
            "patch_size": 16, "image_size": 224, "num_layers": 12, "num_heads": 6, "embedding_dim": 256,
            "pooling": "cls"},
    },
    "base": {
        "text_encoder": {
            "tokenizer_class": "bert", "model_type": "bert", "dim": 768, "context_dim": 768,
            "vocab_size": 30522, "padding_idx": 0, "num_layers": 4, "num_heads": 12, "embedding_dim": 256,
            "multimodal_layers_ids": [2, 3], "head_one_neuron": False, "pooling": "cls",
            "max_position_embeddings": 77, "dropout_prob": 0.1},
        "image_encoder": {
            "normalization_means": CLIP_MEANS, "normalization_deviations": CLIP_DEVIATIONS, "dim": 768,
            "patch_size": 16, "image_size": 224, "num_layers": 12, "num_heads": 12, "embedding_dim": 256,
            "pooling": "cls"},
    },
    "large": {
        "text_encoder": {
            "tokenizer_class": "bert", "model_type": "bert", "dim": 512, "context_dim": 1024,
            "vocab_size": 30522, "padding_idx": 0, "num_layers": 12, "num_heads": 8, "embedding_dim": 768,
            "multimodal_layers_ids": [6, 7, 8, 9, 10, 11], "head_one_neuron": False, "pooling": "cls",
            "max_position_embeddings": 64, "dropout_prob": 0.1},
        "image_encoder": {
            "normalization_means": CLIP_MEANS, "normalization_deviations": CLIP_DEVIATIONS, "dim": 1024,
            "patch_size": 14, "image_size": 224, "num_layers": 24, "num_heads": 16, "embedding_dim": 768,
            "pooling": "cls", "num_reg_tokens": 4},
    },
    "multilingual": {
        "text_encoder": {
            "tokenizer_class": "unigram", "model_type": "bert", "dim": 384, "context_dim": 768,
            "vocab_size": 250037, "padding_idx": 1, "num_layers": 12, "num_heads": 12, "embedding_dim": 256,
            "multimodal_layers_ids": [8, 9, 10, 11], "head_one_neuron": False, "pooling": "mean",
            "max_position_embeddings": 50, "dropout_prob": 0.1},
        "image_encoder": {
            "normalization_means": CLIP_MEANS, "normalization_deviations": CLIP_DEVIATIONS, "dim": 768,
            "patch_size": 16, "image_size": 224, "num_layers": 12, "num_heads": 12, "embedding_dim": 256,
            "pooling": "cls"},
    },
}

# Tiny shapes: (text dim, context_dim, layers, heads, multimodal ids), (image dim, layers, heads), E.
# Widths differ between the towers and from context_dim wherever the published ones do, so a tensor
# read with the other tower's width fails; head widths stay >= 8. E stays above 64 so the cards'
# smallest Matryoshka prefix (64) exists in every tiny folder too.
TINY = {
    "small": ((64, 32, 4, 4, [2, 3]), (32, 2, 2), 128),
    "base": ((64, 64, 4, 4, [2, 3]), (48, 2, 3), 96),
    "large": ((48, 64, 5, 4, [3, 4]), (64, 2, 4), 160),
    "multilingual": ((32, 64, 4, 4, [2, 3]), (64, 2, 4), 80),
}

TOKENIZER_KIND = {"bert": ("make_tokenizers.py", "bert-uncased"), "unigram": ("sp_make_models.py", "xlm-roberta")}
PAD_TOKENS = ("[PAD]", "<pad>")

# Matrices are drawn normal(0, gain / sqrt(fan_in)): 1 keeps each sublayer's output about as large as
# its input (0.036 at width 768, the 0.02 of trained BERTs' initialisation in spirit), and the MLP's
# first matrix gets 2.5 so GELU sees arguments of a few units, where its curvature (and any error in
# it) matters. Plain normal(0, 0.02) at the tiny widths leaves every sublayer a ~3% correction of the
# residual stream: a wrong activation then moves the outputs by 1e-6, far inside the f32 tolerance.
EXPANDING_GAIN = 2.5

WEIGHT_DTYPES = {"bf16": (torch.bfloat16, "BF16"), "f16": (torch.float16, "F16"), "f32": (torch.float32, "F32")}


def config_for(variant, size):
    """The config.json dictionary of VARIANT at SIZE, before the vocabulary is known."""
    config = json.loads(json.dumps(PUBLISHED[variant]))
    if size == "tiny":
        (t_dim, t_context, t_layers, t_heads, t_multi), (i_dim, i_layers, i_heads), embedding = TINY[variant]
        config["text_encoder"].update(dim=t_dim, context_dim=t_context, num_layers=t_layers, num_heads=t_heads,
                                      multimodal_layers_ids=t_multi, embedding_dim=embedding)
        config["image_encoder"].update(dim=i_dim, num_layers=i_layers, num_heads=i_heads, embedding_dim=embedding)
    elif size != "base":
        raise ValueError(f"unknown size {size!r}")
    return config


# ---------------------------------------------------------------------------------------------
# Tensor names and shapes, in the order state_dict() lists them (a module's own parameters first,
# then its children in registration order).

def _linear(prefix, out_features, in_features, bias=True, kind="matrix"):
    rows = [(prefix + ".weight", [out_features, in_features], kind)]
    if bias:
        rows.append((prefix + ".bias", [out_features], "bias"))
    return rows


def _norm(prefix, dim):
    return [(prefix + ".weight", [dim], "norm_weight"), (prefix + ".bias", [dim], "bias")]


def _attention(prefix, dim):
    rows = []
    for part in ("query", "key", "value", "out"):
        rows += _linear(f"{prefix}.{part}", dim, dim)
    return rows


def _mlp(prefix, dim):
    return (_linear(prefix + ".hidden_layer", 4 * dim, dim, kind="expanding")
            + _linear(prefix + ".output_layer", dim, 4 * dim))


def text_names(text):
    """[(name, shape, kind)] of uform's TextEncoder state_dict for the "text_encoder" config."""
    dim = text["dim"]
    rows = [("word_embeddings.weight", [text["vocab_size"], dim], "embedding"),
            ("position_embeddings.weight", [text["max_position_embeddings"], dim], "embedding")]
    rows += _norm("layer_norm", dim)
    for layer in range(text["num_layers"]):
        block = f"blocks.{layer}"
        rows += _norm(block + ".norm_attn", dim) + _attention(block + ".attention", dim)
        if layer in text["multimodal_layers_ids"]:
            rows += _norm(block + ".norm_crossattn", dim) + _attention(block + ".crossattn", dim)
        rows += _norm(block + ".norm_mlp", dim) + _mlp(block + ".mlp", dim)
    rows += _linear("embedding_projection", text["embedding_dim"], dim, bias=False)
    rows += _linear("matching_head", 1 if text["head_one_neuron"] else 2, dim)
    if text["context_dim"] != dim:
        rows += _linear("context_projection", dim, text["context_dim"], bias=False)
    return rows


def image_names(image):
    """[(name, shape, kind)] of uform's ImageEncoder state_dict for the "image_encoder" config."""
    dim, patch = image["dim"], image["patch_size"]
    patches = (image["image_size"] // patch) ** 2
    rows = [("pos_embed", [1, patches, dim], "embedding"), ("cls_token", [1, 1, dim], "embedding")]
    if image.get("num_reg_tokens", 0) > 0:
        rows.append(("reg_token", [1, image["num_reg_tokens"], dim], "embedding"))
    rows += [("patch_embed.weight", [dim, 3, patch, patch], "matrix"), ("patch_embed.bias", [dim], "bias")]
    for layer in range(image["num_layers"]):
        block = f"blocks.{layer}"
        rows += _norm(block + ".norm1", dim) + _attention(block + ".attn", dim)
        rows += [(block + ".ls1.gamma", [dim], "gamma")]
        rows += _norm(block + ".norm2", dim) + _mlp(block + ".mlp", dim)
        rows += [(block + ".ls2.gamma", [dim], "gamma")]
    rows += _norm("norm", dim)
    rows += _linear("embedding_projection", image["embedding_dim"], dim, bias=False)
    return rows


def random_tensors(rows, generator, padding_row=None):
    """{name: float32 tensor} drawn as the module docstring says, in the rows' order."""
    tensors = collections.OrderedDict()
    for name, shape, kind in rows:
        if kind in ("matrix", "expanding"):
            gain = EXPANDING_GAIN if kind == "expanding" else 1.0
            value = torch.randn(shape, generator=generator) * (gain / math.sqrt(int(np.prod(shape[1:]))))
        elif kind == "norm_weight":
            value = 1.0 + torch.randn(shape, generator=generator) * 0.1
        elif kind == "bias":
            value = torch.randn(shape, generator=generator) * 0.05
        elif kind == "gamma":
            value = 0.1 + 0.9 * torch.rand(shape, generator=generator)
        elif kind == "embedding":
            value = torch.randn(shape, generator=generator) * 0.5
        else:
            raise AssertionError(kind)
        if name == "word_embeddings.weight" and padding_row is not None:
            value[padding_row] = 0.0
        tensors[name] = value
    return tensors


# ---------------------------------------------------------------------------------------------
# Weight files.

def write_safetensors(path, tensors, dtype_name):
    """safetensors: u64 LE header length, JSON header (data_offsets relative to the data,
    __metadata__ {"format": "pt"} as safetensors.torch.save_file writes it) padded with spaces to 8
    bytes, then the tensors back to back in state_dict order (the official writer orders them by
    alignment and name; a reader must not care)."""
    torch_dtype, code = WEIGHT_DTYPES[dtype_name]
    header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name, value in tensors.items():
        value = value.to(torch_dtype).contiguous()
        if torch_dtype == torch.bfloat16:
            payload = value.view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            payload = value.numpy().astype(value.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(value.shape), "data_offsets": [offset, offset + len(payload)]}
        chunks.append(payload)
        offset += len(payload)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as stream:
        stream.write(struct.pack("<Q", len(text)))
        stream.write(text)
        for chunk in chunks:
            stream.write(chunk)


def state_dict_like(tensors, dtype_name):
    """An OrderedDict as Module.state_dict() returns it, including the `_metadata` attribute that
    torch.save pickles with it ({module prefix: {"version": 1}}), so the .pt has the published structure."""
    torch_dtype = WEIGHT_DTYPES[dtype_name][0]
    state = collections.OrderedDict((name, value.to(torch_dtype).clone()) for name, value in tensors.items())
    metadata = collections.OrderedDict([("", {"version": 1})])
    for name in tensors:
        parts = name.split(".")[:-1]
        for end in range(1, len(parts) + 1):
            metadata.setdefault(".".join(parts[:end]), {"version": 1})
    state._metadata = metadata
    return state


def write_weights(folder, encoder, tensors, dtype_name, weight_format):
    written = []
    if weight_format in ("safetensors", "both"):
        path = os.path.join(folder, encoder + ".safetensors")
        write_safetensors(path, tensors, dtype_name)
        written.append(path)
    if weight_format in ("pt", "pt-nested", "both"):
        state = state_dict_like(tensors, dtype_name)
        if weight_format == "pt-nested":
            state = {encoder: state}
        path = os.path.join(folder, encoder + ".pt")
        torch.save(state, path)
        written.append(path)
    if not written:
        raise ValueError(f"unknown format {weight_format!r}")
    return written


# ---------------------------------------------------------------------------------------------
# Tokenizer.

def tokenizer_vocabulary(path):
    """(vocabulary size = largest id + 1, {token: id} over the model's vocabulary and added_tokens)."""
    with open(path, encoding="utf-8") as stream:
        tokenizer = json.load(stream)
    model = tokenizer.get("model") or {}
    vocab = model.get("vocab")
    ids = {}
    if isinstance(vocab, dict):  # WordPiece and BPE: {token: id}
        ids.update(vocab)
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], the id is the position
        ids.update({entry[0]: index for index, entry in enumerate(vocab)})
    for added in tokenizer.get("added_tokens") or []:
        ids[added["content"]] = added["id"]
    if not ids:
        raise ValueError(f"{path}: no vocabulary found (model.vocab and added_tokens are empty)")
    return max(ids.values()) + 1, ids


def make_tokenizer(folder, tokenizer_class, seed):
    script, kind = TOKENIZER_KIND[tokenizer_class]
    generator = os.path.join(ROOT, "tests", "text", script)
    if not os.path.exists(generator):
        raise FileNotFoundError(f"{generator} is missing (the tokenizer generator); pass --tokenizer-json")
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, generator, kind, scratch, "--seed", str(seed)], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.copyfile(os.path.join(scratch, "tokenizer.json"), os.path.join(folder, "tokenizer.json"))


# ---------------------------------------------------------------------------------------------

def write_folder(variant, size, folder, seed=0, dtype_name="bf16", weight_format="both", tokenizer_json=None,
                 text_model_type=None, image_pooling=None):
    """Writes the folder; returns the config dictionary it wrote."""
    os.makedirs(folder, exist_ok=True)
    config = config_for(variant, size)
    text, image = config["text_encoder"], config["image_encoder"]
    if tokenizer_json:
        shutil.copyfile(tokenizer_json, os.path.join(folder, "tokenizer.json"))
    else:
        make_tokenizer(folder, text["tokenizer_class"], seed)
    vocabulary, tokens = tokenizer_vocabulary(os.path.join(folder, "tokenizer.json"))
    text["vocab_size"] = vocabulary if size == "tiny" else max(vocabulary, text["vocab_size"])
    for token in PAD_TOKENS:
        if token in tokens:
            text["padding_idx"] = tokens[token]
            break
    if text_model_type:
        # Not published: uform's "roberta" positions (padding_idx + 1, + 2, ...), for the engine's other
        # path. uform pads to max_position_embeddings rows and indexes the same table with positions up
        # to padding_idx + length, so such a model takes at most max_position_embeddings - padding_idx - 1
        # tokens (uform itself fails with an IndexError past that).
        text["model_type"] = text_model_type
    if image_pooling:  # not published either: uform's mean over every row
        image["pooling"] = image_pooling

    generator = torch.Generator().manual_seed(seed)
    text_tensors = random_tensors(text_names(text), generator, padding_row=text["padding_idx"])
    image_tensors = random_tensors(image_names(image), generator)
    write_weights(folder, "text_encoder", text_tensors, dtype_name, weight_format)
    write_weights(folder, "image_encoder", image_tensors, dtype_name, weight_format)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as stream:
        json.dump(config, stream, indent=4)
        stream.write("\n")
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", choices=sorted(PUBLISHED))
    parser.add_argument("size", choices=["tiny", "base"])
    parser.add_argument("folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=sorted(WEIGHT_DTYPES), default="bf16")
    parser.add_argument("--format", choices=["safetensors", "pt", "pt-nested", "both"], default="both")
    parser.add_argument("--tokenizer-json", help="copy this tokenizer.json instead of running the generator")
    parser.add_argument("--text-model-type", choices=["bert", "roberta"],
                        help="override model_type (no published folder uses roberta)")
    parser.add_argument("--image-pooling", choices=["cls", "mean"],
                        help="override the image pooling (every published folder uses cls)")
    args = parser.parse_args(argv)
    write_folder(args.variant, args.size, args.folder, args.seed, args.dtype, args.format, args.tokenizer_json,
                 args.text_model_type, args.image_pooling)
    return 0


if __name__ == "__main__":
    sys.exit(main())
