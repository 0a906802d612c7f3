"""Helpers shared by the parity references of the CLIP family (tests/published/clip_*.py,
openclip_*.py, siglip_*.py): weight files read and written by code of our own (safetensors by
struct + json + numpy, `.bin` by torch.save / torch.load(weights_only=True)), random weights drawn
from a seed, tokenizer files from the tokenizer engineers' generators, the engine's dump, and the
row-by-row comparison with its tolerances. Nothing here imports the engine or shares code with it.

Run by Debian's /usr/bin/python3 (torch 1.13, numpy, PIL, sentencepiece).
"""

import collections
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The storage dtypes a folder's weights may be written in, with the names config.json gives them.
STORE_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TORCH_DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

# safetensors dtype names <-> (numpy dtype of the stored bytes, torch dtype of the tensor we return).
# BF16 is read as uint16 and widened by a shift, so numpy needs no bfloat16 type.
_SAFETENSORS_READ = {
    "F64": (np.dtype("<f8"), torch.float64), "F32": (np.dtype("<f4"), torch.float32),
    "F16": (np.dtype("<f2"), torch.float16), "BF16": (np.dtype("<u2"), torch.bfloat16),
    "I64": (np.dtype("<i8"), torch.int64), "I32": (np.dtype("<i4"), torch.int32),
    "I16": (np.dtype("<i2"), torch.int16), "I8": (np.dtype("i1"), torch.int8),
    "U8": (np.dtype("u1"), torch.uint8), "BOOL": (np.dtype("u1"), torch.bool),
}
_SAFETENSORS_WRITE = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}


class FolderError(Exception):
    """A folder the reference cannot read (a missing file, a tensor of the wrong shape)."""


# ---------------------------------------------------------------------------------------------
# Weight files.

def _tensor_bytes(tensor):
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype == torch.bfloat16:  # the same two bytes, seen as int16 so numpy can hold them
        tensor = tensor.view(torch.int16)
    return tensor.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Writes name -> tensor as safetensors: u64 little-endian header length, the JSON header
    (dtype, shape, data_offsets relative to the data section; __metadata__ {"format": "pt"} as
    transformers writes it), padded with spaces to 8 bytes like the Rust writer, then the data,
    tensors in name order without holes."""
    header = {"__metadata__": metadata if metadata is not None else {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        tensor = tensors[name]
        blob = _tensor_bytes(tensor)
        header[name] = {"dtype": _SAFETENSORS_WRITE[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as stream:
        stream.write(struct.pack("<Q", len(text)))
        stream.write(text)
        for blob in blobs:
            stream.write(blob)


def read_safetensors(path):
    """name -> tensor (in the stored dtype) of a safetensors file, every offset checked."""
    blob = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) else b""
    if len(blob) < 8:
        raise FolderError(f"{path}: {len(blob)} bytes, shorter than the header length")
    (length,) = struct.unpack("<Q", bytes(blob[:8]))
    if 8 + length > len(blob):
        raise FolderError(f"{path}: header of {length} bytes runs past the end ({len(blob)} bytes)")
    header = json.loads(bytes(blob[8:8 + length]).decode("utf-8"))
    data = blob[8 + length:]
    tensors = collections.OrderedDict()
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in _SAFETENSORS_READ:
            raise FolderError(f"{path}: tensor {name} has dtype {entry['dtype']}")
        stored, dtype = _SAFETENSORS_READ[entry["dtype"]]
        begin, end = entry["data_offsets"]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * stored.itemsize:
            raise FolderError(f"{path}: tensor {name} data_offsets {begin}..{end} do not hold "
                              f"{entry['shape']} {entry['dtype']} in {len(data)} data bytes")
        array = np.frombuffer(data[begin:end], dtype=stored).reshape(entry["shape"])  # a view of the mapped file
        if entry["dtype"] == "BF16":
            widened = (array.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(array.shape)
            tensor = torch.from_numpy(widened).to(torch.bfloat16)
        elif entry["dtype"] == "BOOL":
            tensor = torch.from_numpy(array != 0)
        else:
            tensor = torch.from_numpy(array.copy())
        tensors[name] = tensor
    return tensors


def write_sharded_safetensors(folder, stem, tensors, shards=2):
    """Splits the tensors (name order) into `shards` files of about equal bytes,
    `<stem>-00001-of-00002.safetensors` ..., and writes `<stem>.safetensors.index.json`
    {"metadata": {"total_size": bytes}, "weight_map": {name: file}} as transformers does."""
    names = sorted(tensors)
    sizes = [tensors[name].numel() * tensors[name].element_size() for name in names]
    total, groups, current, filled = sum(sizes), [[] for _ in range(shards)], 0, 0
    for name, size in zip(names, sizes):
        if filled >= total * (current + 1) / shards and current + 1 < shards and groups[current]:
            current += 1
        groups[current].append(name)
        filled += size
    groups = [group for group in groups if group]
    weight_map = {}
    for index, group in enumerate(groups):
        file_name = f"{stem}-{index + 1:05d}-of-{len(groups):05d}.safetensors"
        write_safetensors(os.path.join(folder, file_name), {name: tensors[name] for name in group})
        weight_map.update({name: file_name for name in group})
    with open(os.path.join(folder, f"{stem}.safetensors.index.json"), "w") as stream:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, stream, indent=2)


def write_torch_bin(path, tensors):
    """torch.save of an OrderedDict state dict (the zip format of torch >= 1.6), every tensor a
    contiguous copy of its own, as transformers' and OpenCLIP's save functions leave them."""
    state = collections.OrderedDict((name, tensors[name].detach().clone().contiguous()) for name in tensors)
    torch.save(state, path)


def read_torch_bin(path):
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    return collections.OrderedDict((name, value) for name, value in state.items() if torch.is_tensor(value))


def write_weights(folder, stem, bin_name, tensors, weight_format):
    """Writes a state dict the way a published folder holds it: `<stem>.safetensors`, sharded
    safetensors with an index, or `bin_name` (torch.save). Returns the file names written."""
    if weight_format == "safetensors":
        write_safetensors(os.path.join(folder, f"{stem}.safetensors"), tensors)
        return [f"{stem}.safetensors"]
    if weight_format == "sharded":
        write_sharded_safetensors(folder, stem, tensors)
        return sorted(name for name in os.listdir(folder) if name.startswith(stem + "-") or
                      name == f"{stem}.safetensors.index.json")
    if weight_format == "bin":
        write_torch_bin(os.path.join(folder, bin_name), tensors)
        return [bin_name]
    raise ValueError(f"weight format {weight_format!r} (safetensors, sharded or bin)")


def read_weights(folder, stem, bin_name):
    """The state dict of a folder, by transformers' order of preference: `<stem>.safetensors`, then
    its sharded index, then `bin_name` (and a sharded `.bin` index). Returns (tensors, file)."""
    single = os.path.join(folder, f"{stem}.safetensors")
    if os.path.exists(single):
        return read_safetensors(single), os.path.basename(single)
    for index_name, reader in ((f"{stem}.safetensors.index.json", read_safetensors),
                               (f"{bin_name}.index.json", read_torch_bin)):
        index_path = os.path.join(folder, index_name)
        if os.path.exists(index_path):
            with open(index_path) as stream:
                weight_map = json.load(stream)["weight_map"]
            tensors = collections.OrderedDict()
            for file_name in sorted(set(weight_map.values())):
                shard = reader(os.path.join(folder, file_name))
                for name, tensor in shard.items():
                    if weight_map.get(name) != file_name:
                        raise FolderError(f"{file_name}: tensor {name} is not mapped to this shard by {index_name}")
                    tensors[name] = tensor
            missing = sorted(set(weight_map) - set(tensors))
            if missing:
                raise FolderError(f"{index_name} maps {missing[:3]} to shards that do not hold them")
            return tensors, index_name
    path = os.path.join(folder, bin_name)
    if os.path.exists(path):
        return read_torch_bin(path), bin_name
    raise FolderError(f"{folder}: none of {stem}.safetensors, its index, {bin_name}")


class Weights:
    """A state dict read from a folder, upcast on demand to the reference's compute dtype, with
    shape checks that name the tensor; `used` records which names were read, so a loader can list
    the tensors it ignored (buffers such as position_ids)."""

    def __init__(self, tensors, dtype, source):
        self.tensors, self.dtype, self.source, self.used = tensors, dtype, source, set()

    def has(self, name):
        return name in self.tensors

    def get(self, name, shape=None):
        if name not in self.tensors:
            raise FolderError(f"{self.source}: tensor {name} is missing")
        tensor = self.tensors[name]
        if shape is not None and list(tensor.shape) != list(shape):
            raise FolderError(f"{self.source}: tensor {name} has shape {list(tensor.shape)}, the config gives {list(shape)}")
        self.used.add(name)
        return tensor.to(self.dtype)

    def unused(self):
        return sorted(set(self.tensors) - self.used)


# ---------------------------------------------------------------------------------------------
# Random weights. Linear weights are drawn with std 1/sqrt(fan_in), so attention logits and MLP
# pre-activations are of order one and a wrong activation, scale or norm changes the outputs well
# past the f32 tolerance (with std 0.02 at width 64 the MLP input stays near 0.1, where GELU, its
# tanh form and QuickGELU agree to 1e-4 and such mistakes would pass); norm weights are drawn
# around 1 and biases away from 0, so a missing or swapped norm shows.

class Draw:
    def __init__(self, seed):
        self.generator = torch.Generator().manual_seed(seed)

    def normal(self, shape, std, mean=0.0):
        return torch.randn(*shape, generator=self.generator, dtype=torch.float32) * std + mean

    def uniform(self, shape, low, high):
        return torch.rand(*shape, generator=self.generator, dtype=torch.float32) * (high - low) + low

    def linear(self, out_features, in_features):
        return self.normal((out_features, in_features), in_features ** -0.5)

    def bias(self, features, std=0.1):
        return self.normal((features,), std)

    def norm(self, features):
        """(weight, bias) of a LayerNorm: weight in [0.6, 1.4], bias normal(0, 0.1)."""
        return self.uniform((features,), 0.6, 1.4), self.normal((features,), 0.1)


def cast_weights(tensors, dtype_name):
    """The floating tensors stored in f32/f16/bf16; integer buffers (position_ids) keep their type."""
    dtype = STORE_DTYPES[dtype_name]
    return collections.OrderedDict((name, tensor.to(dtype) if tensor.is_floating_point() else tensor)
                                   for name, tensor in tensors.items())


# ---------------------------------------------------------------------------------------------
# Activations, as transformers' ACT2FN and OpenCLIP name them. Plain functions (not F.gelu
# itself), so torch.nn.TransformerEncoderLayer never takes its fused fast path and runs the
# textbook formulation.

def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def gelu_erf(x):
    return F.gelu(x)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def relu(x):
    return F.relu(x)


ACTIVATIONS = {"quick_gelu": quick_gelu, "gelu": gelu_erf, "gelu_pytorch_tanh": gelu_tanh,
               "gelu_new": gelu_tanh, "gelu_fast": gelu_tanh, "relu": relu}


def activation(name):
    if name not in ACTIVATIONS:
        raise FolderError(f"hidden_act {name!r} is not one the reference runs ({sorted(ACTIVATIONS)})")
    return ACTIVATIONS[name]


# ---------------------------------------------------------------------------------------------
# Tokenizer files, from the tokenizer engineers' generators (tests/text/make_tokenizers.py for
# BPE / WordPiece, tests/text/sp_make_models.py for SentencePiece).

def write_tokenizer(script, kind, folder, seed):
    """Runs `script KIND FOLDER --seed SEED` from tests/text/. Returns False (and writes nothing)
    when the generator does not exist in this tree yet."""
    path = os.path.join(ROOT, "tests", "text", script)
    if not os.path.exists(path):
        print(f"note: {os.path.relpath(path, ROOT)} is missing: the folder gets no tokenizer files", file=sys.stderr)
        return False
    subprocess.run([sys.executable, path, kind, folder, "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return True


def tokenizer_vocabulary(folder):
    """token -> id of the folder's tokenizer: tokenizer.json (model vocab as a dict for BPE and
    WordPiece, a [piece, score] list for Unigram, plus added_tokens), else vocab.json, else a
    SentencePiece model. None when the folder has none of them."""
    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as stream:
            tokenizer = json.load(stream)
        vocab = tokenizer["model"].get("vocab", {})
        table = dict(vocab) if isinstance(vocab, dict) else {entry[0]: i for i, entry in enumerate(vocab)}
        for added in tokenizer.get("added_tokens", []):
            table[added["content"]] = added["id"]
        return table
    path = os.path.join(folder, "vocab.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    for name in ("spiece.model", "sentencepiece.bpe.model"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            import sentencepiece
            processor = sentencepiece.SentencePieceProcessor(model_file=path)
            return {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    return None


def special_token(folder, key):
    """The content of a special token (`eos_token`, `pad_token`, ...) from special_tokens_map.json
    or tokenizer_config.json, whether written as a string or as an AddedToken dict; None if absent."""
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as stream:
                value = json.load(stream).get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if value is not None:
                return value
    return None


def write_json(folder, name, value):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as stream:
        json.dump(value, stream, indent=2, ensure_ascii=False)
        stream.write("\n")


def read_json(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as stream:
        return json.load(stream)


# ---------------------------------------------------------------------------------------------
# Image preprocessing: tests/reference/published_processors.py, the preprocessing engineer's
# re-implementations of the Python processors (CLIPImageProcessor, SiglipImageProcessor, OpenCLIP's
# image_transform), each a function of a PIL image and the folder's config returning float32
# [3, S, S].

_PROCESSORS = {"clip": "clip_from_config", "siglip": "siglip_from_config", "openclip": "open_clip_from_config"}


def preprocess(style, image, config):
    """float32 [3, S, S] for a PIL image by the processor `style` ("clip": CLIPImageProcessor with
    preprocessor_config.json, "siglip": SiglipImageProcessor with preprocessor_config.json,
    "openclip": OpenCLIP's image_transform with open_clip_config.json)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    try:
        import published_processors
    except ImportError as error:
        raise FolderError(f"tests/reference/published_processors.py cannot be imported: {error}")
    finally:
        sys.path.pop(0)
    return torch.as_tensor(np.asarray(getattr(published_processors, _PROCESSORS[style])(image, config), dtype=np.float32))


# ---------------------------------------------------------------------------------------------
# The engine's dump (tests/published, format in /work/notes/h4_common.md, mirrored in the
# docstrings of the *_compare.py scripts).

class Dump:
    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "meta.json"), encoding="utf-8") as stream:
            self.meta = json.load(stream)
        self.folder = self.meta["folder"]
        self.compute = self.meta.get("compute", "f32")
        self.text_ids = self._json("text_ids.json")
        self.text_embeddings = self._array("text_embeddings.npy")
        self.text_states = self._rows("text_states.npy", "text_offsets.npy")
        self.image_embeddings = self._array("image_embeddings.npy")
        self.image_states = self._rows("image_states.npy", "image_offsets.npy")
        self.images = self.meta.get("images", [])

    def _json(self, name):
        path = os.path.join(self.path, name)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)

    def _array(self, name):
        path = os.path.join(self.path, name)
        return np.load(path) if os.path.exists(path) else None

    def _rows(self, states_name, offsets_name):
        states, offsets = self._array(states_name), self._array(offsets_name)
        if states is None:
            return None
        if offsets is None:
            raise FolderError(f"{self.path}: {states_name} without {offsets_name}")
        offsets = [int(value) for value in offsets]
        if offsets[0] != 0 or offsets[-1] != states.shape[0] or any(b < a for a, b in zip(offsets, offsets[1:])):
            raise FolderError(f"{self.path}: {offsets_name} {offsets[:4]}... does not split {states.shape[0]} rows")
        return [states[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def write_dump(path, folder, compute, texts, text_ids, images, text=None, image=None):
    """Writes a dump in the engine's format from (embeddings [N, E], states list of [rows, d]):
    used by the self-tests, where one reference formulation plays the engine for another."""
    os.makedirs(path, exist_ok=True)
    write_json(path, "meta.json", {"folder": os.path.abspath(folder), "compute": compute, "texts": texts,
                                   "images": [os.path.abspath(image_path) for image_path in images]})
    for prefix, output, in (("text", text), ("image", image)):
        if output is None:
            continue
        embeddings, states = output
        embeddings = np.asarray(embeddings, dtype=np.float64)
        embeddings = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
        np.save(os.path.join(path, f"{prefix}_embeddings.npy"), embeddings.astype(np.float32))
        np.save(os.path.join(path, f"{prefix}_states.npy"),
                np.concatenate([np.asarray(rows, dtype=np.float32) for rows in states], axis=0))
        np.save(os.path.join(path, f"{prefix}_offsets.npy"),
                np.cumsum([0] + [len(rows) for rows in states]).astype(np.int64))
    if text is not None:
        write_json(path, "text_ids.json", [list(map(int, ids)) for ids in text_ids])


# ---------------------------------------------------------------------------------------------
# Comparison.

# compute -> (least cosine per row, largest max|a - b| / max|b| per row or None).
TOLERANCES = {"f32": (0.99999, 1e-4), "bf16": (0.999, 1e-2), "i8": (0.99, None)}


def _row_errors(engine, reference, scales=None):
    """Per row: cosine, max|a - b| / max|b| (or over `scales[row]`, the largest |b| of the row's item)."""
    engine, reference = np.asarray(engine, np.float64), np.asarray(reference, np.float64)
    dot = np.sum(engine * reference, axis=1)
    norms = np.linalg.norm(engine, axis=1) * np.linalg.norm(reference, axis=1)
    cosine = np.where(norms > 0, dot / np.maximum(norms, 1e-300), np.where(np.all(engine == reference, axis=1), 1.0, 0.0))
    scale = np.max(np.abs(reference), axis=1) if scales is None else np.asarray(scales, np.float64)
    relative = np.max(np.abs(engine - reference), axis=1) / np.maximum(scale, 1e-300)
    return cosine, relative


def _preview(row, count=6):
    return "[" + ", ".join(f"{value:+.6g}" for value in np.asarray(row, np.float64)[:count]) + (", ...]" if len(row) > count else "]")


class Tally:
    """PASS / FAIL lines and their count; quiet for the negative controls."""

    def __init__(self, quiet=False):
        self.passed, self.failed, self.quiet = 0, 0, quiet
        self.least_cosine, self.largest_relative = 1.0, 0.0

    def note(self, cosine, relative):
        """The worst row seen so far, over every comparison (what a negative control reports)."""
        self.least_cosine = min(self.least_cosine, float(cosine))
        self.largest_relative = max(self.largest_relative, float(relative))

    def record(self, ok, label, detail):
        if not self.quiet:
            print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}", flush=True)
        self.passed += bool(ok)
        self.failed += not ok


def compare_rows(tally, label, engine, reference, compute, row_names=None, scales=None):
    """Rows of the engine against rows of the reference with the tolerance of `compute`; one
    PASS/FAIL line naming the worst row (and both values' first elements when it fails). `scales`
    (one per row) replaces each row's own max|b| in the relative error."""
    least_cosine, most_relative = TOLERANCES[compute]
    engine, reference = np.asarray(engine, np.float64), np.asarray(reference, np.float64)
    if engine.shape != reference.shape:
        tally.record(False, label, f"shape {list(engine.shape)}, reference {list(reference.shape)}")
        return False
    if engine.size == 0:
        tally.record(False, label, "no rows to compare")
        return False
    if not np.all(np.isfinite(engine)):
        tally.record(False, label, f"{int(np.sum(~np.isfinite(engine)))} non-finite values")
        return False
    cosine, relative = _row_errors(engine, reference, scales)
    tally.note(cosine.min(), relative.max())
    bad = cosine < least_cosine
    if most_relative is not None:
        bad |= relative > most_relative
    worst = int(np.argmin(cosine)) if not bad.any() else int(np.flatnonzero(bad)[np.argmin(cosine[bad])])
    if bad.any() and most_relative is not None and cosine[worst] >= least_cosine:
        worst = int(np.flatnonzero(bad)[np.argmax(relative[bad])])
    name = row_names[worst] if row_names is not None else f"row {worst}"
    detail = (f"{len(cosine)} rows, least cosine {cosine.min():.8f}, largest relative error "
              f"{relative.max():.3g} (bounds {least_cosine}, {most_relative}); worst {name}: "
              f"cosine {cosine[worst]:.8f}, relative {relative[worst]:.3g}")
    if bad.any():
        detail += (f"; {int(bad.sum())} rows out of bounds; engine {_preview(engine[worst])}, "
                   f"reference {_preview(reference[worst])}")
    tally.record(not bad.any(), label, detail)
    return not bad.any()


def normalise(rows):
    rows = np.asarray(rows, np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def compare_outputs(tally, dump, prefix, embeddings, states, compute, ids=None):
    """Embeddings and states of one modality. `states` is the reference's list of [rows, d]; the
    engine's rows k of item i are compared with the reference's rows k (the engine may keep a
    prefix of the rows, never more rows than the reference has, never none)."""
    engine_embeddings = getattr(dump, f"{prefix}_embeddings")
    engine_states = getattr(dump, f"{prefix}_states")
    if engine_embeddings is not None:
        compare_rows(tally, f"{prefix} embeddings", engine_embeddings, normalise(embeddings), compute,
                     [f"{prefix} {i}" for i in range(len(embeddings))])
    if engine_states is not None:
        if len(engine_states) != len(states):
            tally.record(False, f"{prefix} states", f"{len(engine_states)} items, reference {len(states)}")
            return
        engine_rows, reference_rows, names, scales = [], [], [], []
        for item, (ours, theirs) in enumerate(zip(states, engine_states)):
            if len(theirs) == 0 or len(theirs) > len(ours):
                tally.record(False, f"{prefix} states", f"item {item}: the engine has {len(theirs)} rows, the reference {len(ours)}")
                return
            engine_rows.append(np.asarray(theirs))
            reference_rows.append(np.asarray(ours)[:len(theirs)])
            names += [f"{prefix} {item} token {k}" for k in range(len(theirs))]
            # A state row's error is measured against its item's largest value: BF16 products put
            # a row of small values at a larger share of its own maximum (uform3_compare does the same).
            scales += [float(np.max(np.abs(np.asarray(ours)[:len(theirs)])))] * len(theirs)
        compare_rows(tally, f"{prefix} states", np.concatenate(engine_rows), np.concatenate(reference_rows), compute, names,
                     scales)


def pad_batch(ids_list, pad_id, length=None):
    """[N, L] int64 ids padded with `pad_id` to the longest (or `length`), and the [N, L] mask of
    real tokens."""
    length = length if length is not None else max(len(ids) for ids in ids_list)
    batch = torch.full((len(ids_list), length), pad_id, dtype=torch.int64)
    mask = torch.zeros((len(ids_list), length), dtype=torch.bool)
    for row, ids in enumerate(ids_list):
        if len(ids) > length:
            raise FolderError(f"text {row}: {len(ids)} ids, longer than {length}")
        batch[row, :len(ids)] = torch.tensor(ids, dtype=torch.int64)
        mask[row, :len(ids)] = True
    return batch, mask


def end_of_text_notes(folder, ids_list, token="<|endoftext|>"):
    """Texts whose ids lack the tokenizer's end-of-text id (CLIP pools at that row: without it the
    upstream call pools elsewhere too, so parity still holds, but the engine's tokenizer is suspect)."""
    vocabulary = tokenizer_vocabulary(folder) or {}
    end = vocabulary.get(token)
    if end is None:
        return []
    return [f"text {row}: no {token} ({end}) among its {len(ids)} ids" for row, ids in enumerate(ids_list) if end not in ids]


def check_ids(ids_list, vocab_size, label="text"):
    for row, ids in enumerate(ids_list):
        if not ids:
            raise FolderError(f"{label} {row}: no ids")
        bad = [i for i in ids if not 0 <= i < vocab_size]
        if bad:
            raise FolderError(f"{label} {row}: id {bad[0]} outside the vocabulary of {vocab_size}")


# ---------------------------------------------------------------------------------------------
# The comparison script shared by clip_compare.py, openclip_compare.py and siglip_compare.py.

def _reference_outputs(model, dump, pixels, perturb):
    outputs = {}
    if dump.text_ids is not None and (dump.text_embeddings is not None or dump.text_states is not None):
        outputs["text"] = model.encode_text(dump.text_ids, perturb)
    if pixels is not None:
        outputs["image"] = model.encode_image(pixels, perturb)
    return outputs


def _compare_all(tally, dump, outputs, compute):
    for prefix, (embeddings, states) in outputs.items():
        compare_outputs(tally, dump, prefix, embeddings.numpy(), [rows.numpy() for rows in states], compute)


def _present(dump):
    return {name for name in ("text_embeddings", "text_states", "image_embeddings", "image_states")
            if getattr(dump, name) is not None}


def run_compare(reference, argv, description):
    """Compares a dump with `reference` (a module with load(folder, dtype) and PERTURBATIONS);
    exit status 0 when every comparison passes (and, with --self-check-negative, when every
    applicable perturbation of the reference makes the comparison fail)."""
    import argparse
    from PIL import Image
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", help="the engine's dump folder (meta.json, text_ids.json, *.npy)")
    parser.add_argument("--tolerance", choices=sorted(TOLERANCES), help="bounds to apply (default: meta.json's compute)")
    parser.add_argument("--self-check-negative", nargs="?", const="all", metavar="KIND",
                        help=f"also run the reference perturbed ({', '.join(reference.PERTURBATIONS)} or all) "
                             "and require that each comparison FAILS")
    parser.add_argument("--reference-dtype", choices=["f64", "f32"], default="f64",
                        help="the reference's arithmetic (default f64: nearer to exact than any float32 run)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dump = Dump(args.dump)
    compute = args.tolerance or dump.compute
    if compute not in TOLERANCES:
        print(f"FAIL meta.json: compute {compute!r} is not one of {sorted(TOLERANCES)}")
        return 1
    model = reference.load(dump.folder, torch.float64 if args.reference_dtype == "f64" else torch.float32)
    pixels = None
    if dump.images and (dump.image_embeddings is not None or dump.image_states is not None):
        pixels = torch.stack([model.preprocess(Image.open(path)) for path in dump.images])
    present = _present(dump)
    if not present:
        print(f"FAIL {args.dump}: no embeddings or states to compare")
        return 1
    if {"text_embeddings", "text_states"} & present and not dump.text_ids:
        print(f"FAIL {args.dump}: text outputs without the ids (text_ids.json) that produced them")
        return 1
    if {"image_embeddings", "image_states"} & present and not dump.images:
        print(f"FAIL {args.dump}: image outputs without meta.json's images")
        return 1
    print(f"{dump.folder}: {compute} tolerance, outputs {', '.join(sorted(present))}", flush=True)
    for note in getattr(model, "input_notes", lambda ids: [])(dump.text_ids or []):
        print(f"NOTE {note}", flush=True)
    tally = Tally()
    _compare_all(tally, dump, _reference_outputs(model, dump, pixels, None), compute)
    if args.self_check_negative:
        kinds = list(reference.PERTURBATIONS) if args.self_check_negative == "all" else args.self_check_negative.split(",")
        for kind in kinds:
            if kind not in reference.PERTURBATIONS:
                print(f"FAIL negative control {kind!r}: unknown (known: {', '.join(reference.PERTURBATIONS)})")
                tally.failed += 1
                continue
            what, changes = reference.PERTURBATIONS[kind]
            skip = getattr(model, "skip_perturbation", lambda name, dump: None)(kind, dump)
            if skip or not changes & present:
                print(f"SKIP negative control {kind} ({what}): {skip or 'the dump has none of ' + ', '.join(sorted(changes))}")
                continue
            quiet = Tally(quiet=True)
            _compare_all(quiet, dump, _reference_outputs(model, dump, pixels, kind), compute)
            tally.record(quiet.failed > 0, f"negative control {kind} ({what})",
                         f"{quiet.failed} of {quiet.passed + quiet.failed} comparisons fail (least cosine "
                         f"{quiet.least_cosine:.6f}, largest relative error {quiet.largest_relative:.3g})"
                         + ("" if quiet.failed else ": the comparison cannot tell this mistake from parity"))
    print(f"{tally.passed} passed, {tally.failed} failed", flush=True)
    return 1 if tally.failed else 0
