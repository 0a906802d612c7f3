"""An independent PyTorch implementation of CLIP in the transformers layout (CLIPModel:
openai/clip-vit-base-patch32, laion/CLIP-ViT-*-laion2B-* and their kin), for the parity tests of
published checkpoints. It follows transformers' modeling_clip.py (read, not imported: transformers
is not installed here) but is written with PyTorch's own blocks: every encoder layer is a
torch.nn.TransformerEncoderLayer(norm_first=True) holding the published q/k/v projections
concatenated into its in_proj, so the attention, MLP and pre-norm residuals are torch's code, not
ours. openclip_reference.py computes the same model from the OpenCLIP layout with hand-written
attention; the self-tests check one against the other on the same weights.

What it computes (the engine's outputs for this layout, docs in /work/notes/tables/clip.md):
- text: token + position embeddings, causal mask (plus the padding mask transformers builds from
  attention_mask), final_layer_norm; pooled at the end-of-text row: argmax of the ids when
  text_config.eos_token_id == 2 (configs written before transformers PR #24773), else the first
  position of eos_token_id; text_projection (no bias). States: every row after final_layer_norm.
- image: Conv2d patches (no bias), class_embedding prepended, position_embedding added to all rows,
  pre_layrnorm, the encoder, then post_layernorm on the class row, visual_projection (no bias).
  States: post_layernorm applied to EVERY row (transformers applies it to the pooled row only;
  the engine gives all rows, as OpenCLIP's ln_post does).
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402

# CLIPTextConfig / CLIPVisionConfig / CLIPConfig defaults (transformers >= 4.31, where the text
# eos_token_id default became 49407; older configs spell 2 explicitly).
TEXT_DEFAULTS = {"vocab_size": 49408, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12,
                 "num_attention_heads": 8, "max_position_embeddings": 77, "hidden_act": "quick_gelu",
                 "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 49406, "eos_token_id": 49407}
VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "num_channels": 3, "image_size": 224, "patch_size": 32, "hidden_act": "quick_gelu",
                   "layer_norm_eps": 1e-5}
PROJECTION_DIM_DEFAULT = 512

# Negative controls: what each perturbation of the reference changes (the outputs a dump must
# hold for the perturbation to be detectable). A comparison that still passes under one of these
# would be vacuous.
PERTURBATIONS = {
    "activation": ("QuickGELU and exact GELU swapped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "final-norm": ("final_layer_norm / post_layernorm skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "pre-norm": ("vision pre_layrnorm skipped", {"image_embeddings", "image_states"}),
    "causal": ("text attention without the causal mask", {"text_states"}),
    "pooling": ("text pooled at the first row, image at the mean of the rows", {"text_embeddings", "image_embeddings"}),
    "last-layer": ("last encoder layer of each tower skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
}


def text_config(config):
    """CLIPTextConfig as transformers builds it: defaults, then config["text_config"], then the
    legacy config["text_config_dict"] (which takes precedence where both are present)."""
    merged = dict(TEXT_DEFAULTS)
    merged.update(config.get("text_config") or {})
    merged.update(config.get("text_config_dict") or {})
    return merged


def vision_config(config):
    merged = dict(VISION_DEFAULTS)
    merged.update(config.get("vision_config") or {})
    merged.update(config.get("vision_config_dict") or {})
    return merged


def _norm(weights, prefix, width, eps):
    norm = nn.LayerNorm(width, eps=eps, dtype=weights.dtype)
    norm.weight.copy_(weights.get(prefix + ".weight", [width]))
    norm.bias.copy_(weights.get(prefix + ".bias", [width]))
    return norm


def _encoder(weights, prefix, cfg):
    """The published CLIPEncoderLayer weights in torch.nn.TransformerEncoderLayer modules."""
    width, heads, inner = cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]
    if width % heads:
        raise C.FolderError(f"{prefix}: hidden_size {width} is not a multiple of num_attention_heads {heads}")
    layers = nn.ModuleList()
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        # Built on the meta device and given storage without torch's random init (which would
        # cost seconds at base size): every parameter is overwritten from the file below.
        layer = nn.TransformerEncoderLayer(width, heads, inner, dropout=0.0, activation=C.activation(cfg["hidden_act"]),
                                           layer_norm_eps=cfg["layer_norm_eps"], batch_first=True, norm_first=True,
                                           device="meta", dtype=weights.dtype).to_empty(device="cpu")
        attention = layer.self_attn
        attention.in_proj_weight.copy_(torch.cat([weights.get(p + f"self_attn.{n}_proj.weight", [width, width]) for n in "qkv"]))
        attention.in_proj_bias.copy_(torch.cat([weights.get(p + f"self_attn.{n}_proj.bias", [width]) for n in "qkv"]))
        attention.out_proj.weight.copy_(weights.get(p + "self_attn.out_proj.weight", [width, width]))
        attention.out_proj.bias.copy_(weights.get(p + "self_attn.out_proj.bias", [width]))
        layer.linear1.weight.copy_(weights.get(p + "mlp.fc1.weight", [inner, width]))
        layer.linear1.bias.copy_(weights.get(p + "mlp.fc1.bias", [inner]))
        layer.linear2.weight.copy_(weights.get(p + "mlp.fc2.weight", [width, inner]))
        layer.linear2.bias.copy_(weights.get(p + "mlp.fc2.bias", [width]))
        layer.norm1.load_state_dict(_norm(weights, p + "layer_norm1", width, cfg["layer_norm_eps"]).state_dict())
        layer.norm2.load_state_dict(_norm(weights, p + "layer_norm2", width, cfg["layer_norm_eps"]).state_dict())
        layers.append(layer.eval())
    return layers


def _swap_activation(layers):
    """The negative control "activation": QuickGELU where the config says GELU and vice versa."""
    for layer in layers:
        layer.activation = C.gelu_erf if layer.activation is C.quick_gelu else C.quick_gelu


class Model:
    """A CLIPModel folder read with clip_common's own readers, every tensor checked against the
    shape the config gives, in `dtype` (float64 by default: the reference is then closer to exact
    than either float32 implementation it is compared with)."""

    @torch.no_grad()
    def __init__(self, folder, dtype=torch.float64, tensors=None, config=None):
        self.folder = folder
        self.config = config if config is not None else C.read_json(folder, "config.json")
        if self.config.get("model_type") != "clip":
            raise C.FolderError(f"{folder}/config.json: model_type {self.config.get('model_type')!r}, not 'clip'")
        if tensors is None:
            tensors, source = C.read_weights(folder, "model", "pytorch_model.bin")
        else:
            source = "given tensors"
        weights = C.Weights(tensors, dtype, source)
        self.text, self.vision = text_config(self.config), vision_config(self.config)
        self.projection_dim = self.config.get("projection_dim", PROJECTION_DIM_DEFAULT)
        t, v, e = self.text, self.vision, self.projection_dim

        # Text tower.
        self.token_embedding = weights.get("text_model.embeddings.token_embedding.weight", [t["vocab_size"], t["hidden_size"]])
        self.text_positions = weights.get("text_model.embeddings.position_embedding.weight",
                                          [t["max_position_embeddings"], t["hidden_size"]])
        self.text_layers = _encoder(weights, "text_model", t)
        self.final_layer_norm = _norm(weights, "text_model.final_layer_norm", t["hidden_size"], t["layer_norm_eps"])
        self.text_projection = weights.get("text_projection.weight", [e, t["hidden_size"]])

        # Vision tower.
        width, patch, channels = v["hidden_size"], v["patch_size"], v["num_channels"]
        grid = v["image_size"] // patch
        self.patch_embedding = weights.get("vision_model.embeddings.patch_embedding.weight", [width, channels, patch, patch])
        self.class_embedding = weights.get("vision_model.embeddings.class_embedding", [width])
        self.vision_positions = weights.get("vision_model.embeddings.position_embedding.weight", [grid * grid + 1, width])
        self.pre_layrnorm = _norm(weights, "vision_model.pre_layrnorm", width, v["layer_norm_eps"])
        self.vision_layers = _encoder(weights, "vision_model", v)
        self.post_layernorm = _norm(weights, "vision_model.post_layernorm", width, v["layer_norm_eps"])
        self.visual_projection = weights.get("visual_projection.weight", [e, width])
        self.logit_scale = weights.get("logit_scale").reshape(-1)[0].item() if weights.has("logit_scale") else None

        # Whatever else the file holds must be a buffer a loader ignores (position_ids).
        unused = [name for name in weights.unused() if not name.endswith("embeddings.position_ids")]
        if unused:
            raise C.FolderError(f"{source}: tensors the model does not use: {unused[:5]}")
        self.dtype = dtype
        vocabulary = C.tokenizer_vocabulary(folder) if os.path.isdir(folder) else None
        pad = C.special_token(folder, "pad_token") if vocabulary else None
        self.pad_id = vocabulary.get(pad, 0) if vocabulary and pad is not None else 0

    # --- text ---------------------------------------------------------------------------------

    def input_notes(self, ids_list):
        return C.end_of_text_notes(self.folder, ids_list)

    @torch.no_grad()
    def encode_text(self, ids_list, perturb=None):
        """(embeddings [N, projection_dim] before normalisation, [rows, hidden] states per text).
        The texts are padded to the longest with the tokenizer's pad id and masked, as
        CLIPModel.get_text_features(**tokenizer(texts, padding=True)) runs them."""
        t = self.text
        C.check_ids(ids_list, t["vocab_size"])
        ids, real = C.pad_batch(ids_list, self.pad_id)
        length = ids.shape[1]
        if length > t["max_position_embeddings"]:
            raise C.FolderError(f"{length} ids, past max_position_embeddings {t['max_position_embeddings']}")
        x = self.token_embedding[ids] + self.text_positions[:length]
        causal = torch.full((length, length), -math.inf, dtype=self.dtype).triu(1)
        if perturb == "causal":
            causal = None
        layers = self.text_layers[:-1] if perturb == "last-layer" else self.text_layers
        if perturb == "activation":
            _swap_activation(layers)
        try:
            for layer in layers:
                x = layer(x, src_mask=causal, src_key_padding_mask=~real)
        finally:
            if perturb == "activation":
                _swap_activation(layers)
        if perturb != "final-norm":
            x = self.final_layer_norm(x)
        if perturb == "pooling":
            index = torch.zeros(len(ids_list), dtype=torch.int64)
        elif t["eos_token_id"] == 2:
            index = ids.argmax(dim=-1)  # torch.argmax gives the first of equal maxima, as transformers relies on
        else:
            index = (ids == t["eos_token_id"]).int().argmax(dim=-1)
        pooled = x[torch.arange(len(ids_list)), index]
        embeddings = pooled @ self.text_projection.T
        states = [x[i, :len(ids_list[i])] for i in range(len(ids_list))]
        return embeddings, states

    # --- image --------------------------------------------------------------------------------

    def preprocess(self, image):
        """CLIPImageProcessor with the folder's preprocessor_config.json (old files give `size` and
        `crop_size` as integers, newer ones as {"shortest_edge"} and {"height", "width"})."""
        return C.preprocess("clip", image, C.read_json(self.folder, "preprocessor_config.json"))

    @torch.no_grad()
    def encode_image(self, pixels, perturb=None):
        """(embeddings [M, projection_dim] before normalisation, [1 + grid², hidden] states per
        image) from float pixels [M, 3, S, S]."""
        v = self.vision
        pixels = pixels.to(self.dtype)
        if list(pixels.shape[1:]) != [v["num_channels"], v["image_size"], v["image_size"]]:
            raise C.FolderError(f"pixels of shape {list(pixels.shape)} for image_size {v['image_size']}")
        patches = F.conv2d(pixels, self.patch_embedding, stride=v["patch_size"]).flatten(2).transpose(1, 2)
        classes = self.class_embedding.expand(pixels.shape[0], 1, -1)
        x = torch.cat([classes, patches], dim=1) + self.vision_positions
        if perturb != "pre-norm":
            x = self.pre_layrnorm(x)
        layers = self.vision_layers[:-1] if perturb == "last-layer" else self.vision_layers
        if perturb == "activation":
            _swap_activation(layers)
        try:
            for layer in layers:
                x = layer(x)
        finally:
            if perturb == "activation":
                _swap_activation(layers)
        states = x if perturb == "final-norm" else self.post_layernorm(x)
        pooled = states.mean(dim=1) if perturb == "pooling" else states[:, 0]
        embeddings = pooled @ self.visual_projection.T
        return embeddings, list(states)


def load(folder, dtype=torch.float64):
    return Model(folder, dtype)


if __name__ == "__main__":
    print(__doc__)
