"""An independent PyTorch implementation of SigLIP in the transformers layout (SiglipModel:
google/siglip-base-patch16-224 and its kin), for the parity tests of published checkpoints. It
follows transformers' modeling_siglip.py (read, not imported) with PyTorch's own blocks: encoder
layers are torch.nn.TransformerEncoderLayer(norm_first=True) holding the published q/k/v
projections in their in_proj, and the vision tower's attention-pooling head is a
torch.nn.MultiheadAttention exactly as the published file stores it (head.attention.in_proj_*).
A second formulation, `Model(..., formulation="by-hand")`, computes the same model with the
hand-written LayerNorm and attention of openclip_reference.py; the self-tests check that both agree.

What it computes (docs in /work/notes/tables/siglip.md):
- text: token + position embeddings, encoder WITHOUT a causal mask and WITHOUT an attention mask
  (SiglipTokenizer returns no attention_mask; the model card pads to max_length 64 and the padding
  is attended to), final_layer_norm on every row, pooled at the LAST row ([:, -1], the padded
  sequence's end), head (Linear width -> width with bias). States: every row after final_layer_norm.
- image: Conv2d patches WITH bias, position_embedding (no class token), the encoder,
  post_layernorm on every row (the states), then the MAP head: a learned probe attends over the
  rows (MultiheadAttention), then h + mlp(layernorm(h)); the probe's row is the embedding.
Activations: hidden_act (gelu_pytorch_tanh: GELU's tanh form), layer_norm_eps 1e-6 by default.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402
import openclip_reference as by_hand  # noqa: E402

# SiglipTextConfig / SiglipVisionConfig defaults: google/siglip-base-patch16-224's config.json
# gives only the model_type of each, so every other value comes from here.
TEXT_DEFAULTS = {"vocab_size": 32000, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                 "num_attention_heads": 12, "max_position_embeddings": 64, "hidden_act": "gelu_pytorch_tanh",
                 "layer_norm_eps": 1e-6, "pad_token_id": 1, "bos_token_id": 49406, "eos_token_id": 49407}
VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "num_channels": 3, "image_size": 224, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh",
                   "layer_norm_eps": 1e-6, "vision_use_head": True}

PERTURBATIONS = {
    "activation": ("GELU's tanh form replaced by the exact GELU", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "final-norm": ("final_layer_norm / post_layernorm skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "head": ("the MLP of the vision head and the text head's bias skipped", {"text_embeddings", "image_embeddings"}),
    "pooling": ("text pooled at the first row, image at the mean of the rows", {"text_embeddings", "image_embeddings"}),
    "padding-mask": ("the padding after the first </s> masked out (SigLIP attends to it)", {"text_embeddings", "text_states"}),
    "last-layer": ("last encoder layer of each tower skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
}


def tower_config(config, key, defaults):
    merged = dict(defaults)
    merged.update(config.get(key) or {})
    return merged


def _linear(weights, prefix, out_features, in_features, bias=True):
    return (weights.get(prefix + ".weight", [out_features, in_features]),
            weights.get(prefix + ".bias", [out_features]) if bias else None)


def _norm(weights, prefix, width):
    """(weight, bias) of a LayerNorm, both [width]."""
    return weights.get(prefix + ".weight", [width]), weights.get(prefix + ".bias", [width])


def _layer_tensors(weights, prefix, cfg):
    """The published SiglipEncoderLayer tensors of every layer, as plain tensors."""
    width, inner = cfg["hidden_size"], cfg["intermediate_size"]
    layers = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        layer = {f"{n}_proj": _linear(weights, p + f"self_attn.{n}_proj", width, width) for n in ("q", "k", "v", "out")}
        layer.update(fc1=_linear(weights, p + "mlp.fc1", inner, width), fc2=_linear(weights, p + "mlp.fc2", width, inner),
                     norm1=_norm(weights, p + "layer_norm1", width), norm2=_norm(weights, p + "layer_norm2", width))
        layers.append(layer)
    return layers


def _torch_layers(layers, cfg, dtype):
    """The same tensors in torch.nn.TransformerEncoderLayer modules."""
    modules = nn.ModuleList()
    for tensors in layers:
        width, inner = cfg["hidden_size"], cfg["intermediate_size"]
        layer = nn.TransformerEncoderLayer(width, cfg["num_attention_heads"], inner, dropout=0.0,
                                           activation=C.activation(cfg["hidden_act"]), layer_norm_eps=cfg["layer_norm_eps"],
                                           batch_first=True, norm_first=True, device="meta", dtype=dtype).to_empty(device="cpu")
        layer.self_attn.in_proj_weight.copy_(torch.cat([tensors[f"{n}_proj"][0] for n in "qkv"]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([tensors[f"{n}_proj"][1] for n in "qkv"]))
        layer.self_attn.out_proj.weight.copy_(tensors["out_proj"][0])
        layer.self_attn.out_proj.bias.copy_(tensors["out_proj"][1])
        for module, key in ((layer.linear1, "fc1"), (layer.linear2, "fc2")):
            module.weight.copy_(tensors[key][0])
            module.bias.copy_(tensors[key][1])
        for module, key in ((layer.norm1, "norm1"), (layer.norm2, "norm2")):
            module.weight.copy_(tensors[key][0])
            module.bias.copy_(tensors[key][1])
        modules.append(layer.eval())
    return modules


def _hand_block(tensors):
    """The layer in openclip_reference's hand-written block format (fused q, k, v)."""
    return {"ln_1_weight": tensors["norm1"][0], "ln_1_bias": tensors["norm1"][1],
            "in_proj_weight": torch.cat([tensors[f"{n}_proj"][0] for n in "qkv"]),
            "in_proj_bias": torch.cat([tensors[f"{n}_proj"][1] for n in "qkv"]),
            "out_proj_weight": tensors["out_proj"][0], "out_proj_bias": tensors["out_proj"][1],
            "ln_2_weight": tensors["norm2"][0], "ln_2_bias": tensors["norm2"][1],
            "c_fc_weight": tensors["fc1"][0], "c_fc_bias": tensors["fc1"][1],
            "c_proj_weight": tensors["fc2"][0], "c_proj_bias": tensors["fc2"][1]}


class Model:
    """A SiglipModel folder read with clip_common's own readers. formulation "torch" (default) runs
    torch.nn blocks, "by-hand" the hand-written ones of openclip_reference.py."""

    @torch.no_grad()
    def __init__(self, folder, dtype=torch.float64, formulation="torch", tensors=None, config=None):
        self.folder, self.dtype, self.formulation = folder, dtype, formulation
        self.config = config if config is not None else C.read_json(folder, "config.json")
        if self.config.get("model_type") != "siglip":
            raise C.FolderError(f"{folder}/config.json: model_type {self.config.get('model_type')!r}, not 'siglip'")
        if tensors is None:
            tensors, source = C.read_weights(folder, "model", "pytorch_model.bin")
        else:
            source = "given tensors"
        weights = C.Weights(tensors, dtype, source)
        t = self.text = tower_config(self.config, "text_config", TEXT_DEFAULTS)
        v = self.vision = tower_config(self.config, "vision_config", VISION_DEFAULTS)
        if not v["vision_use_head"]:
            raise C.FolderError("vision_config.vision_use_head false: the embedding would be undefined")

        width = t["hidden_size"]
        self.token_embedding = weights.get("text_model.embeddings.token_embedding.weight", [t["vocab_size"], width])
        self.text_positions = weights.get("text_model.embeddings.position_embedding.weight", [t["max_position_embeddings"], width])
        self.text_layers = _layer_tensors(weights, "text_model", t)
        self.final_layer_norm = _norm(weights, "text_model.final_layer_norm", width)
        self.text_head = _linear(weights, "text_model.head", width, width)

        width, patch, channels = v["hidden_size"], v["patch_size"], v["num_channels"]
        grid = v["image_size"] // patch
        self.patch_embedding = (weights.get("vision_model.embeddings.patch_embedding.weight", [width, channels, patch, patch]),
                                weights.get("vision_model.embeddings.patch_embedding.bias", [width]))
        self.vision_positions = weights.get("vision_model.embeddings.position_embedding.weight", [grid * grid, width])
        self.vision_layers = _layer_tensors(weights, "vision_model", v)
        self.post_layernorm = _norm(weights, "vision_model.post_layernorm", width)
        h = "vision_model.head."
        self.probe = weights.get(h + "probe", [1, 1, width])
        self.head_in_proj = (weights.get(h + "attention.in_proj_weight", [3 * width, width]),
                             weights.get(h + "attention.in_proj_bias", [3 * width]))
        self.head_out_proj = _linear(weights, h + "attention.out_proj", width, width)
        self.head_layernorm = _norm(weights, h + "layernorm", width)
        self.head_fc1 = _linear(weights, h + "mlp.fc1", v["intermediate_size"], width)
        self.head_fc2 = _linear(weights, h + "mlp.fc2", width, v["intermediate_size"])
        self.logit_scale = weights.get("logit_scale", [1])
        self.logit_bias = weights.get("logit_bias", [1])
        unused = [name for name in weights.unused() if not name.endswith("position_ids")]
        if unused:
            raise C.FolderError(f"{source}: tensors the model does not use: {unused[:5]}")

        if formulation == "torch":
            self.text_modules = _torch_layers(self.text_layers, t, dtype)
            self.vision_modules = _torch_layers(self.vision_layers, v, dtype)
            self.head_attention = nn.MultiheadAttention(width, v["num_attention_heads"], batch_first=True).to(dtype).eval()
            self.head_attention.in_proj_weight.copy_(self.head_in_proj[0])
            self.head_attention.in_proj_bias.copy_(self.head_in_proj[1])
            self.head_attention.out_proj.weight.copy_(self.head_out_proj[0])
            self.head_attention.out_proj.bias.copy_(self.head_out_proj[1])
        elif formulation != "by-hand":
            raise ValueError(f"formulation {formulation!r}")

    # --- shared pieces ------------------------------------------------------------------------

    def _layer_norm(self, x, tensors, eps):
        weight, bias = tensors
        if self.formulation == "torch":
            return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
        return by_hand.layer_norm(x, weight, bias, eps)

    def _encoder(self, x, tower, cfg, perturb, mask=None):
        """The encoder layers of `tower` ("text" or "vision"); `mask` is a key mask [N, L] (True =
        masked) used only by the "padding-mask" negative control."""
        act = _activation(cfg, perturb)
        count = cfg["num_hidden_layers"] - (1 if perturb == "last-layer" else 0)
        if self.formulation == "torch":
            modules = (self.text_modules if tower == "text" else self.vision_modules)[:count]
            saved = [module.activation for module in modules]
            try:
                for module in modules:
                    module.activation = act
                    x = module(x, src_key_padding_mask=mask)
            finally:
                for module, activation in zip(modules, saved):
                    module.activation = activation
            return x
        additive = None
        if mask is not None:
            additive = torch.zeros(mask.shape, dtype=self.dtype).masked_fill(mask, float("-inf"))[:, None, None, :]
        layers = self.text_layers if tower == "text" else self.vision_layers
        for tensors in layers[:count]:
            x = by_hand.residual_block(x, _hand_block(tensors), cfg["num_attention_heads"], act, additive, cfg["layer_norm_eps"])
        return x

    # --- text ---------------------------------------------------------------------------------

    def input_notes(self, ids_list):
        """Texts not padded to max_position_embeddings: SiglipModel's documented call pads to 64
        (padding="max_length"); the reference runs whatever ids the engine gave, unmasked."""
        length = self.text["max_position_embeddings"]
        return [f"text {row}: {len(ids)} ids, not padded to {length} as SigLIP's tokenizer call does"
                for row, ids in enumerate(ids_list) if len(ids) != length]

    @torch.no_grad()
    def encode_text(self, ids_list, perturb=None):
        """(embeddings [N, width] before normalisation, [rows, width] states per text). No mask:
        texts of equal length run as one batch, others one by one, each pooled at its last row."""
        t = self.text
        C.check_ids(ids_list, t["vocab_size"])
        embeddings, states = [None] * len(ids_list), [None] * len(ids_list)
        for length in sorted(set(len(ids) for ids in ids_list)):
            rows = [i for i, ids in enumerate(ids_list) if len(ids) == length]
            if length > t["max_position_embeddings"]:
                raise C.FolderError(f"text {rows[0]}: {length} ids, past max_position_embeddings {t['max_position_embeddings']}")
            ids = torch.tensor([ids_list[i] for i in rows], dtype=torch.int64)
            mask = None
            if perturb == "padding-mask":
                eos = torch.tensor(self.eos_id, dtype=torch.int64)
                first = torch.where((ids == eos).any(dim=1), (ids == eos).int().argmax(dim=1), torch.full((len(rows),), length - 1))
                mask = torch.arange(length)[None, :] > first[:, None]
                if not mask.any():
                    mask = None
            x = self.token_embedding[ids] + self.text_positions[:length]
            x = self._encoder(x, "text", t, perturb, mask)
            if perturb != "final-norm":
                x = self._layer_norm(x, self.final_layer_norm, t["layer_norm_eps"])
            pooled = x[:, 0] if perturb == "pooling" else x[:, -1]
            weight, bias = self.text_head
            pooled = pooled @ weight.T + (bias if perturb != "head" else 0)
            for k, i in enumerate(rows):
                embeddings[i], states[i] = pooled[k], x[k]
        return torch.stack(embeddings), states

    def skip_perturbation(self, kind, dump):
        """Why a negative control does not apply to this dump (None when it does)."""
        if kind == "padding-mask":
            eos = self.eos_id
            if not any(eos in ids[:-1] and ids.index(eos) < len(ids) - 1 for ids in dump.text_ids or []):
                return "no text has rows after its first </s>"
        return None

    @property
    def eos_id(self):
        vocabulary = C.tokenizer_vocabulary(self.folder) or {}
        eos = C.special_token(self.folder, "eos_token")
        return vocabulary.get(eos, 1) if eos is not None else 1

    # --- image --------------------------------------------------------------------------------

    def preprocess(self, image):
        return C.preprocess("siglip", image, C.read_json(self.folder, "preprocessor_config.json"))

    @torch.no_grad()
    def encode_image(self, pixels, perturb=None):
        """(embeddings [M, width] before normalisation, [grid², width] states per image)."""
        v = self.vision
        pixels = pixels.to(self.dtype)
        if list(pixels.shape[1:]) != [v["num_channels"], v["image_size"], v["image_size"]]:
            raise C.FolderError(f"pixels of shape {list(pixels.shape)} for image_size {v['image_size']}")
        weight, bias = self.patch_embedding
        x = F.conv2d(pixels, weight, bias, stride=v["patch_size"]).flatten(2).transpose(1, 2) + self.vision_positions
        x = self._encoder(x, "vision", v, perturb)
        if perturb != "final-norm":
            x = self._layer_norm(x, self.post_layernorm, v["layer_norm_eps"])
        if perturb == "pooling":
            return x.mean(dim=1), list(x)
        probe = self.probe.expand(x.shape[0], 1, -1)
        if self.formulation == "torch":
            pooled = self.head_attention(probe, x, x, need_weights=False)[0]
        else:
            pooled = _probe_attention(probe, x, self.head_in_proj, self.head_out_proj, v["num_attention_heads"])
        if perturb != "head":
            hidden = self._layer_norm(pooled, self.head_layernorm, v["layer_norm_eps"])
            act = _activation(v, perturb)
            hidden = act(hidden @ self.head_fc1[0].T + self.head_fc1[1]) @ self.head_fc2[0].T + self.head_fc2[1]
            pooled = pooled + hidden
        return pooled[:, 0], list(x)


def _activation(cfg, perturb):
    """hidden_act, or for the negative control "activation" the other GELU (exact <-> tanh form)."""
    act = C.activation(cfg["hidden_act"])
    if perturb == "activation":
        return C.gelu_tanh if act is C.gelu_erf else C.gelu_erf
    return act


def _probe_attention(probe, x, in_proj, out_proj, heads):
    """Cross-attention of the probe [M, 1, d] over the rows x [M, L, d], written out."""
    count, length, width = x.shape
    head = width // heads
    w_q, w_k, w_v = in_proj[0].split(width)
    b_q, b_k, b_v = in_proj[1].split(width)
    q = (probe @ w_q.T + b_q).reshape(count, 1, heads, head).transpose(1, 2)
    k = (x @ w_k.T + b_k).reshape(count, length, heads, head).transpose(1, 2)
    v = (x @ w_v.T + b_v).reshape(count, length, heads, head).transpose(1, 2)
    weights = torch.softmax(q @ k.transpose(-1, -2) / head ** 0.5, dim=-1)
    mixed = (weights @ v).transpose(1, 2).reshape(count, 1, width)
    return mixed @ out_proj[0].T + out_proj[1]


def load(folder, dtype=torch.float64):
    return Model(folder, dtype)


if __name__ == "__main__":
    print(__doc__)
