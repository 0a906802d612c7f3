"""Independent PyTorch reference of BERT / RoBERTa / XLM-RoBERTa encoders and sentence-transformers
folders, as published on the Hugging Face hub (issue 34, "Published checkpoints").

Written from the published design (transformers' modeling_bert.py / modeling_roberta.py and
sentence-transformers' Transformer, Pooling, Dense and Normalize modules), never from the engine's C
sources. Importing this module has no side effects. Run it with Debian's /usr/bin/python3 (torch 1.13,
numpy); transformers, tokenizers and safetensors are not installed, so the folder is read here.

Two formulations of the same encoder are kept so that one checks the other:

- `LayerStack` builds the trunk from torch.nn.TransformerEncoderLayer (norm_first=False is BERT's
  post-norm order x = norm1(x + attn(x)); x = norm2(x + mlp(x))), with the fused in_proj made of the
  published query/key/value and a boolean key padding mask. This is what bert_compare.py runs.
- `HandWritten` spells out transformers' BertSelfAttention: separate query/key/value linears, heads
  split by view/permute, scores / sqrt(head size) plus the extended mask (1 - mask) * finfo.min,
  softmax, context, then BertSelfOutput / BertIntermediate / BertOutput. The self-test makes the
  engine-like dumps with it.

Embeddings (transformers' BertEmbeddings / RobertaEmbeddings): word row + position row + token-type
row 0 (single sequences: the tokenizer's token_type_ids are all 0), then LayerNorm. Positions are
0, 1, ... for model_type "bert"; for "roberta" and "xlm-roberta" they are computed FROM THE IDS as
transformers' create_position_ids_from_input_ids does: padding_idx + cumsum(ids != padding_idx),
and padding_idx itself where the id is the padding id, so a literal <pad> inside a text keeps
position padding_idx while it is still attended to (its attention mask is 1).

What the engine is compared on (bert_compare.py): "states" are the last_hidden_state rows, as they
are (a post-norm tower ends with a LayerNorm in every block); "embeddings" are what
SentenceTransformer.encode gives (Transformer -> Pooling -> Dense* -> Normalize), L2-normalised.
"""

import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from uform_reference import read_safetensors  # noqa: E402  (a plain struct + json reader)

# transformers' ACT2FN names the config's hidden_act; the tanh forms "gelu_new", "gelu_fast",
# "gelu_pytorch_tanh" and "gelu_accurate" are one function up to rounding.
def _gelu_tanh(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def _quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


ACTIVATIONS = {
    "gelu": torch.nn.functional.gelu,
    "gelu_python": torch.nn.functional.gelu,
    "gelu_new": _gelu_tanh,
    "gelu_fast": _gelu_tanh,
    "gelu_accurate": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "quick_gelu": _quick_gelu,
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "swish": torch.nn.functional.silu,
    "tanh": torch.tanh,
}

# sentence-transformers' Dense saves its activation as the class's full name and re-creates it with
# no arguments.
DENSE_ACTIVATIONS = {
    "torch.nn.modules.activation.Tanh": torch.tanh,
    "torch.nn.modules.linear.Identity": lambda x: x,
    "torch.nn.modules.activation.ReLU": torch.relu,
    "torch.nn.modules.activation.GELU": torch.nn.functional.gelu,
    "torch.nn.modules.activation.Sigmoid": torch.sigmoid,
}

# Pooling's concatenation order (sentence-transformers Pooling.forward), and the keys that switch
# each mode on. A missing pooling_mode_mean_tokens means True: Pooling.load passes the config as
# keyword arguments and that argument's default is True; the others default to False.
POOLING_ORDER = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
POOLING_KEYS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}

# Prefixes a head class puts before the encoder's names (BertForMaskedLM: "bert.", RobertaForMaskedLM:
# "roberta."), and tensors no encoder reads: heads, and the position_ids / token_type_ids buffers
# older transformers versions saved.
ENCODER_PREFIXES = ("bert.", "roberta.", "xlm_roberta.", "model.")
IGNORED_PREFIXES = ("cls.", "lm_head.", "classifier.", "qa_outputs.")
IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")


class FolderError(ValueError):
    """A folder this reference cannot read, with the file and key that made it so."""


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _torch_load(path):
    state = torch.load(path, map_location="cpu")
    if not isinstance(state, dict):
        raise FolderError(f"{path}: holds a {type(state).__name__}, not a state dict")
    return {name: tensor for name, tensor in state.items() if isinstance(tensor, torch.Tensor)}


def _tensors_of_safetensors(path):
    _, arrays = read_safetensors(path)
    return {name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in arrays.items()}


def read_weights(folder, stem="model"):
    """Every tensor of a transformers weight set in `folder`: {stem}.safetensors, its sharded form
    ({stem}.safetensors.index.json naming the shards in "weight_map"), pytorch_model.bin or its
    sharded index, in transformers' order of preference. Returns ({name: tensor}, file names)."""
    single = os.path.join(folder, f"{stem}.safetensors")
    index = os.path.join(folder, f"{stem}.safetensors.index.json")
    binary = os.path.join(folder, "pytorch_model.bin")
    binary_index = os.path.join(folder, "pytorch_model.bin.index.json")
    if os.path.exists(single):
        return _tensors_of_safetensors(single), [os.path.basename(single)]
    for path, reader in ((index, _tensors_of_safetensors), (binary_index, _torch_load)):
        if os.path.exists(path):
            weight_map = read_json(path).get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise FolderError(f"{path}: no \"weight_map\" object")
            tensors, files = {}, sorted(set(weight_map.values()))
            for shard in files:
                for name, tensor in reader(os.path.join(folder, shard)).items():
                    if weight_map.get(name) != shard:
                        raise FolderError(f"{path}: tensor '{name}' is in {shard} but the map says "
                                          f"{weight_map.get(name)!r}")
                    tensors[name] = tensor
            missing = sorted(set(weight_map) - set(tensors))
            if missing:
                raise FolderError(f"{path}: the map names tensors no shard holds: {missing[:5]}")
            return tensors, files
    if os.path.exists(binary):
        return _torch_load(binary), ["pytorch_model.bin"]
    raise FolderError(f"{folder}: none of {stem}.safetensors, {stem}.safetensors.index.json, "
                      "pytorch_model.bin, pytorch_model.bin.index.json")


def encoder_tensors(tensors):
    """The encoder's tensors under BertModel's names: a head class's prefix removed, the legacy
    LayerNorm.gamma / LayerNorm.beta spelling (bert-base-uncased's files) read as weight / bias
    (transformers renames them on load), heads and saved buffers dropped."""
    result = {}
    for name, tensor in tensors.items():
        if name.startswith(IGNORED_PREFIXES) or name.endswith(IGNORED_SUFFIXES):
            continue
        for prefix in ENCODER_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        if name.endswith(".gamma"):
            name = name[: -len("gamma")] + "weight"
        elif name.endswith(".beta"):
            name = name[: -len("beta")] + "bias"
        if name in result:
            raise FolderError(f"tensor '{name}' appears twice once prefixes and legacy names are removed")
        result[name] = tensor
    return result


class Encoder:
    """The config and float64 weights of one BertModel / RobertaModel / XLMRobertaModel."""

    def __init__(self, config, tensors, dtype=torch.float64):
        self.config = config
        self.model_type = config.get("model_type", "bert")
        if self.model_type not in ("bert", "roberta", "xlm-roberta"):
            raise FolderError(f"config.json: model_type {self.model_type!r} is not a BERT-family encoder")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise FolderError(f"config.json: position_embedding_type {config['position_embedding_type']!r}")
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.intermediate = int(config["intermediate_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.activation_name = config.get("hidden_act", "gelu")
        if self.activation_name not in ACTIVATIONS:
            raise FolderError(f"config.json: hidden_act {self.activation_name!r} is not one this reference runs")
        # RobertaEmbeddings passes config.pad_token_id as padding_idx (1 in every published RoBERTa).
        self.padding_idx = int(config.get("pad_token_id", 1 if self.model_type != "bert" else 0))
        self.dtype = dtype
        self.w = {}
        for name, tensor in encoder_tensors(tensors).items():
            self.w[name] = tensor.to(dtype) if tensor.is_floating_point() else tensor
        self._check_shapes()

    def _check_shapes(self):
        d, m = self.hidden, self.intermediate
        vocabulary = int(self.config["vocab_size"])
        expected = {
            "embeddings.word_embeddings.weight": [vocabulary, d],
            "embeddings.position_embeddings.weight": [int(self.config["max_position_embeddings"]), d],
            "embeddings.token_type_embeddings.weight": [int(self.config.get("type_vocab_size", 2)), d],
            "embeddings.LayerNorm.weight": [d], "embeddings.LayerNorm.bias": [d],
        }
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
                expected[p + part + ".weight"], expected[p + part + ".bias"] = [d, d], [d]
            expected[p + "attention.output.LayerNorm.weight"] = expected[p + "attention.output.LayerNorm.bias"] = [d]
            expected[p + "intermediate.dense.weight"], expected[p + "intermediate.dense.bias"] = [m, d], [m]
            expected[p + "output.dense.weight"], expected[p + "output.dense.bias"] = [d, m], [d]
            expected[p + "output.LayerNorm.weight"] = expected[p + "output.LayerNorm.bias"] = [d]
        for name, shape in expected.items():
            if name not in self.w:
                raise FolderError(f"weights: no tensor '{name}'")
            if list(self.w[name].shape) != shape:
                raise FolderError(f"weights: '{name}' is {list(self.w[name].shape)}, config says {shape}")
        if self.hidden % self.heads:
            raise FolderError(f"config.json: hidden_size {d} is not a multiple of num_attention_heads {self.heads}")

    def position_ids(self, ids):
        """[B, T] positions for the padded ids [B, T] (see the module's docstring)."""
        if self.model_type == "bert":
            return torch.arange(ids.shape[1]).unsqueeze(0).expand_as(ids)
        real = (ids != self.padding_idx).long()
        return torch.cumsum(real, dim=1) * real + self.padding_idx

    def embed(self, ids, skip_norm=False, wrong_positions=False):
        """BertEmbeddings: [B, T] ids -> [B, T, d] rows. `skip_norm` and `wrong_positions` are the
        negative controls' perturbations: the latter takes the other family's rule (RoBERTa's
        offset of 2 for BERT, clamped to the table; 0, 1, ... for RoBERTa)."""
        w = self.w
        positions = self.position_ids(ids)
        if wrong_positions and self.model_type == "bert":
            positions = torch.clamp(positions + 2, max=w["embeddings.position_embeddings.weight"].shape[0] - 1)
        elif wrong_positions:
            positions = torch.arange(ids.shape[1]).unsqueeze(0).expand_as(ids)
        rows = (w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][positions]
                + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)])
        if skip_norm:
            return rows
        return torch.nn.functional.layer_norm(rows, (self.hidden,), w["embeddings.LayerNorm.weight"],
                                              w["embeddings.LayerNorm.bias"], self.eps)

    def pooler(self, states):
        """BertPooler, transformers' pooler_output: tanh(dense(row 0)); None without pooler weights."""
        if "pooler.dense.weight" not in self.w:
            return None
        first = torch.stack([s[0] for s in states])
        return torch.tanh(torch.nn.functional.linear(first, self.w["pooler.dense.weight"], self.w["pooler.dense.bias"]))


def tokenizer_specials(folder):
    """The ids tokenizer.json's post-processor puts before and after a single sequence, as two
    lists, or None when the folder has no tokenizer.json or its post-processor is not one of
    BertProcessing, RobertaProcessing, TemplateProcessing (or a Sequence holding one)."""
    path = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(path):
        return None
    processor = read_json(path).get("post_processor") or {}
    if processor.get("type") == "Sequence":
        found = [p for p in processor.get("processors", []) if p.get("type") != "ByteLevel"]
        processor = found[0] if len(found) == 1 else {}
    kind = processor.get("type")
    if kind in ("BertProcessing", "RobertaProcessing"):
        return [int(processor["cls"][1])], [int(processor["sep"][1])]
    if kind == "TemplateProcessing":
        before, after, seen_sequence = [], [], False
        for piece in processor.get("single", []):
            if "Sequence" in piece:
                seen_sequence = True
            elif "SpecialToken" in piece:
                ids = processor["special_tokens"][piece["SpecialToken"]["id"]]["ids"]
                (after if seen_sequence else before).extend(int(i) for i in ids)
        return before, after
    return None


def pad(id_lists, padding_id):
    """[B, T] ids padded at the end with `padding_id` (the tokenizer's right padding) and the [B, T]
    attention mask, 1 for the real tokens."""
    longest = max(len(ids) for ids in id_lists)
    ids = torch.full((len(id_lists), longest), padding_id, dtype=torch.long)
    mask = torch.zeros((len(id_lists), longest), dtype=torch.long)
    for row, item in enumerate(id_lists):
        ids[row, : len(item)] = torch.tensor(item, dtype=torch.long)
        mask[row, : len(item)] = 1
    return ids, mask


class LayerStack:
    """The trunk as torch.nn.TransformerEncoderLayer modules (post-norm, batch first, no dropout).

    `perturb` names one deliberate mistake for the negative control: "activation" (relu for gelu,
    gelu for anything else), "embedding_norm" (no LayerNorm after the embeddings), "positions"
    (every position one row further), "mask" (padding attended to)."""

    def __init__(self, encoder, perturb=None):
        self.encoder, self.perturb = encoder, perturb
        activation = ACTIVATIONS[encoder.activation_name]
        if perturb == "activation":
            activation = torch.relu if encoder.activation_name != "relu" else torch.nn.functional.gelu
        w, d = encoder.w, encoder.hidden
        self.blocks = []
        for i in range(encoder.layers):
            p = f"encoder.layer.{i}."
            block = torch.nn.TransformerEncoderLayer(d, encoder.heads, encoder.intermediate, dropout=0.0,
                                                     activation=activation, layer_norm_eps=encoder.eps,
                                                     batch_first=True, norm_first=False, dtype=encoder.dtype)
            block.eval()
            with torch.no_grad():
                # MultiheadAttention's in_proj rows are [queries; keys; values], each [d, d] with
                # head h in rows h*d/heads ... (h+1)*d/heads, the layout of BERT's separate linears.
                block.self_attn.in_proj_weight.copy_(torch.cat([w[p + f"attention.self.{n}.weight"]
                                                                for n in ("query", "key", "value")]))
                block.self_attn.in_proj_bias.copy_(torch.cat([w[p + f"attention.self.{n}.bias"]
                                                              for n in ("query", "key", "value")]))
                block.self_attn.out_proj.weight.copy_(w[p + "attention.output.dense.weight"])
                block.self_attn.out_proj.bias.copy_(w[p + "attention.output.dense.bias"])
                block.norm1.weight.copy_(w[p + "attention.output.LayerNorm.weight"])
                block.norm1.bias.copy_(w[p + "attention.output.LayerNorm.bias"])
                block.linear1.weight.copy_(w[p + "intermediate.dense.weight"])
                block.linear1.bias.copy_(w[p + "intermediate.dense.bias"])
                block.linear2.weight.copy_(w[p + "output.dense.weight"])
                block.linear2.bias.copy_(w[p + "output.dense.bias"])
                block.norm2.weight.copy_(w[p + "output.LayerNorm.weight"])
                block.norm2.bias.copy_(w[p + "output.LayerNorm.bias"])
            self.blocks.append(block)

    def states(self, id_lists, padding_id):
        """The last_hidden_state rows of each item: a list of [len(ids), d] tensors."""
        ids, mask = pad(id_lists, padding_id)
        # Gradients stay enabled (the weights require them) so that the layers take their composed
        # path, MultiheadAttention then LayerNorm then Linear, not torch 1.13's fused inference
        # kernel: the module as documented, and the faster one in float64 on a CPU.
        with torch.enable_grad():
            x = self.encoder.embed(ids, skip_norm=self.perturb == "embedding_norm",
                                   wrong_positions=self.perturb == "positions")
            ignored = None if self.perturb == "mask" else mask == 0
            for block in self.blocks:
                x = block(x, src_key_padding_mask=ignored)
        x = x.detach()
        return [x[row, : len(item)].clone() for row, item in enumerate(id_lists)]


class HandWritten:
    """The trunk as transformers' modeling_bert spells it (see the module's docstring)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.activation = ACTIVATIONS[encoder.activation_name]

    def _attention(self, x, extended_mask, p):
        w, e = self.encoder.w, self.encoder
        batch, length, _ = x.shape
        size = e.hidden // e.heads

        def heads(name):  # [B, T, d] -> [B, heads, T, size]
            y = torch.nn.functional.linear(x, w[p + f"attention.self.{name}.weight"], w[p + f"attention.self.{name}.bias"])
            return y.view(batch, length, e.heads, size).permute(0, 2, 1, 3)

        scores = heads("query") @ heads("key").transpose(-1, -2) / math.sqrt(size) + extended_mask
        context = torch.softmax(scores, dim=-1) @ heads("value")
        context = context.permute(0, 2, 1, 3).reshape(batch, length, e.hidden)
        out = torch.nn.functional.linear(context, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        return torch.nn.functional.layer_norm(out + x, (e.hidden,), w[p + "attention.output.LayerNorm.weight"],
                                              w[p + "attention.output.LayerNorm.bias"], e.eps)

    def states(self, id_lists, padding_id):
        e, w = self.encoder, self.encoder.w
        ids, mask = pad(id_lists, padding_id)
        with torch.no_grad():
            x = e.embed(ids)
            # BertModel.get_extended_attention_mask: [B, 1, 1, T], 0 where attended, the dtype's
            # most negative value where masked.
            extended = (1.0 - mask[:, None, None, :].to(e.dtype)) * torch.finfo(e.dtype).min
            for i in range(e.layers):
                p = f"encoder.layer.{i}."
                x = self._attention(x, extended, p)
                hidden = self.activation(torch.nn.functional.linear(x, w[p + "intermediate.dense.weight"],
                                                                    w[p + "intermediate.dense.bias"]))
                out = torch.nn.functional.linear(hidden, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
                x = torch.nn.functional.layer_norm(out + x, (e.hidden,), w[p + "output.LayerNorm.weight"],
                                                   w[p + "output.LayerNorm.bias"], e.eps)
        return [x[row, : len(item)].clone() for row, item in enumerate(id_lists)]


def pool(states, modes):
    """sentence-transformers Pooling over each item's real rows (the attention mask's ones), the
    modes concatenated in Pooling's order. `states`: list of [n_i, d]; returns [N, len(modes) * d]."""
    rows = []
    for item in states:
        n = item.shape[0]
        parts = []
        for mode in POOLING_ORDER:
            if mode not in modes:
                continue
            if mode == "cls":
                parts.append(item[0])
            elif mode == "max":  # padding rows are set to -1e9 upstream: the maximum of the real rows
                parts.append(item.max(dim=0).values)
            elif mode == "mean":  # sum / clamp(count, 1e-9)
                parts.append(item.sum(dim=0) / max(n, 1e-9))
            elif mode == "mean_sqrt_len_tokens":
                parts.append(item.sum(dim=0) / math.sqrt(max(n, 1e-9)))
            elif mode == "weightedmean":  # row k weighs k + 1
                weights = torch.arange(1, n + 1, dtype=item.dtype)[:, None]
                parts.append((item * weights).sum(dim=0) / max(float(weights.sum()), 1e-9))
            elif mode == "lasttoken":
                parts.append(item[n - 1])
        rows.append(torch.cat(parts))
    return torch.stack(rows)


class Pipeline:
    """A published folder read as SentenceTransformer reads it: modules.json's modules in order.

    Without modules.json (a plain transformers folder), SentenceTransformer builds Transformer +
    mean Pooling and no Normalize; `plain_pooling` chooses what this reference does then: "mean"
    (that fallback), "cls" (row 0 of last_hidden_state) or "pooler" (BertModel's pooler_output).
    The engine's embeddings are L2-normalised in every case, so the comparison normalises too."""

    def __init__(self, folder, dtype=torch.float64, plain_pooling="mean"):
        self.folder = os.path.abspath(folder)
        config_path = os.path.join(self.folder, "config.json")
        if not os.path.exists(config_path):
            raise FolderError(f"{self.folder}: no config.json")
        self.config = read_json(config_path)
        weights, self.weight_files = read_weights(self.folder)
        self.encoder = Encoder(self.config, weights, dtype)
        self.dtype = dtype
        self.pooling, self.dense, self.normalize = ["mean"], [], False
        self.max_seq_length = None
        self.plain = True
        modules_path = os.path.join(self.folder, "modules.json")
        if os.path.exists(modules_path):
            self.plain = False
            self._read_modules(read_json(modules_path))
        elif plain_pooling not in ("mean", "cls", "pooler"):
            raise FolderError(f"plain pooling {plain_pooling!r}")
        else:
            self.pooling = [plain_pooling]
        if self.max_seq_length is None:
            # Transformer's fallback: min(max_position_embeddings, tokenizer model_max_length);
            # RoBERTa's positions begin at padding_idx + 1, so two rows are not usable.
            limit = int(self.config["max_position_embeddings"])
            if self.encoder.model_type != "bert":
                limit -= self.encoder.padding_idx + 1
            tokenizer_config = os.path.join(self.folder, "tokenizer_config.json")
            if os.path.exists(tokenizer_config):
                limit = min(limit, int(read_json(tokenizer_config).get("model_max_length", limit)))
            self.max_seq_length = limit

    def _read_modules(self, modules):
        for module in sorted(modules, key=lambda m: m.get("idx", 0)):
            kind, path = module.get("type", ""), os.path.join(self.folder, module.get("path", ""))
            if kind.endswith("models.Transformer"):
                sbert = os.path.join(path, "sentence_bert_config.json")
                if os.path.exists(sbert):
                    self.max_seq_length = read_json(sbert).get("max_seq_length")
            elif kind.endswith("models.Pooling"):
                config = read_json(os.path.join(path, "config.json"))
                if "pooling_mode" in config:  # the newer single-string form
                    self.pooling = [config["pooling_mode"]]
                else:
                    self.pooling = [mode for mode in POOLING_ORDER
                                    if config.get(POOLING_KEYS[mode], mode == "mean")]
                if config.get("include_prompt", True) is False:
                    raise FolderError(f"{path}/config.json: include_prompt false is not modelled")
            elif kind.endswith("models.Dense"):
                self.dense.append(self._read_dense(path))
            elif kind.endswith("models.Normalize"):
                self.normalize = True
            else:
                raise FolderError(f"modules.json: module type {kind!r} is not modelled")

    def _read_dense(self, path):
        config = read_json(os.path.join(path, "config.json"))
        name = config.get("activation_function", "torch.nn.modules.activation.Tanh")
        if name not in DENSE_ACTIVATIONS:
            raise FolderError(f"{path}/config.json: activation_function {name!r}")
        tensors, _ = read_weights(path)
        weight = tensors["linear.weight"].to(self.dtype)
        if list(weight.shape) != [config["out_features"], config["in_features"]]:
            raise FolderError(f"{path}: linear.weight is {list(weight.shape)}, config says "
                              f"[{config['out_features']}, {config['in_features']}]")
        bias = tensors["linear.bias"].to(self.dtype) if config.get("bias", True) else None
        return weight, bias, DENSE_ACTIVATIONS[name]

    def padding_id(self):
        return self.encoder.padding_idx

    def embeddings(self, states, pooling=None):
        """[N, E] L2-normalised sentence embeddings from the items' states."""
        modes = pooling or self.pooling
        if modes == ["pooler"]:
            x = self.encoder.pooler(states)
            if x is None:
                raise FolderError("the weights have no pooler.dense: pooler_output is not defined")
        else:
            x = pool(states, modes)
        for weight, bias, activation in self.dense:
            x = activation(torch.nn.functional.linear(x, weight, bias))
        return torch.nn.functional.normalize(x, p=2.0, dim=1)
