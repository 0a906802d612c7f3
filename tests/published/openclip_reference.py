"""An independent PyTorch implementation of OpenCLIP's CLIP model (open_clip.model.CLIP with the
default VisionTransformer / text tower) in the layout OpenCLIP publishes: open_clip_config.json
{"model_cfg", "preprocess_cfg"} with open_clip_model.safetensors or open_clip_pytorch_model.bin.
It follows mlfoundations/open_clip's model.py and transformer.py (read, not imported), but every
operation is written out by hand here: the LayerNorm, the fused-in_proj multi-head attention, the
patch embedding as a matrix product over flattened patches. clip_reference.py computes the same
model from the transformers layout with torch.nn.TransformerEncoderLayer; the self-tests compare
the two on the same weights, so neither formulation is only checked against itself.

What it computes (docs in /work/notes/tables/openclip.md):
- encode_text: token_embedding + positional_embedding (the ids padded with 0 to context_length,
  as OpenCLIP's tokenizer returns them), residual blocks with the causal attn_mask, ln_final on
  every row, pooled at argmax of the ids (text_cfg.pool_type "argmax": the end-of-text id is the
  largest), x @ text_projection ([width, embed_dim]). States: the rows after ln_final.
- encode_image: conv1 patches (no bias), class_embedding prepended, positional_embedding, ln_pre,
  residual blocks, ln_post on every row (final_ln_after_pool false), the class row @ proj.
- a block: x + ls_1(attn(ln_1(x))), then x + ls_2(c_proj(act(c_fc(ln_2(x))))), act QuickGELU when
  model_cfg.quick_gelu is true, else exact GELU; LayerScale gammas when ls_init_value is set.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402

PERTURBATIONS = {
    "activation": ("QuickGELU and exact GELU swapped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "final-norm": ("ln_final / ln_post skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "pre-norm": ("ln_pre skipped", {"image_embeddings", "image_states"}),
    "causal": ("text attention without the causal mask", {"text_states"}),
    "pooling": ("text pooled at the first row, image at the mean of the rows", {"text_embeddings", "image_embeddings"}),
    "last-layer": ("last residual block of each tower skipped", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
    "layer-scale": ("LayerScale gammas ignored (only where the folder has them)", {"text_embeddings", "text_states", "image_embeddings", "image_states"}),
}

# open_clip.model.CLIPVisionCfg / CLIPTextCfg defaults for the keys this reference reads.
VISION_DEFAULTS = {"layers": 12, "width": 768, "head_width": 64, "mlp_ratio": 4.0, "patch_size": 16, "image_size": 224,
                   "ls_init_value": None, "pool_type": "tok", "final_ln_after_pool": False, "no_ln_pre": False,
                   "attentional_pool": False, "patch_dropout": 0.0}
TEXT_DEFAULTS = {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8, "layers": 12, "mlp_ratio": 4.0,
                 "ls_init_value": None, "pool_type": "argmax", "proj_type": "linear", "proj_bias": False,
                 "embed_cls": False, "no_causal_mask": False, "pad_id": 0, "final_ln_after_pool": False}
EPS = 1e-5  # torch.nn.LayerNorm's default, which OpenCLIP's LayerNorm keeps


def layer_norm(x, weight, bias, eps):
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def attention(x, block, heads, mask):
    """Multi-head self-attention from a fused in_proj ([3·width, width]: q, k, v rows in that
    order, as torch.nn.MultiheadAttention stores them), written out: x [N, L, width]."""
    batch, length, width = x.shape
    head = width // heads
    q, k, v = (x @ block["in_proj_weight"].T + block["in_proj_bias"]).split(width, dim=-1)
    q, k, v = (t.reshape(batch, length, heads, head).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(head)
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    mixed = (weights @ v).transpose(1, 2).reshape(batch, length, width)
    return mixed @ block["out_proj_weight"].T + block["out_proj_bias"]


def residual_block(x, block, heads, act, mask, eps=EPS, layer_scale=True):
    """open_clip.transformer.ResidualAttentionBlock (pre-norm, optional LayerScale)."""
    ls_1 = block.get("ls_1") if layer_scale else None
    ls_2 = block.get("ls_2") if layer_scale else None
    attended = attention(layer_norm(x, block["ln_1_weight"], block["ln_1_bias"], eps), block, heads, mask)
    x = x + (attended * ls_1 if ls_1 is not None else attended)
    hidden = act(layer_norm(x, block["ln_2_weight"], block["ln_2_bias"], eps) @ block["c_fc_weight"].T + block["c_fc_bias"])
    out = hidden @ block["c_proj_weight"].T + block["c_proj_bias"]
    return x + (out * ls_2 if ls_2 is not None else out)


def _blocks(weights, prefix, layers, width, mlp_width, layer_scale):
    blocks = []
    for i in range(layers):
        p = f"{prefix}transformer.resblocks.{i}."
        block = {
            "ln_1_weight": weights.get(p + "ln_1.weight", [width]), "ln_1_bias": weights.get(p + "ln_1.bias", [width]),
            "in_proj_weight": weights.get(p + "attn.in_proj_weight", [3 * width, width]),
            "in_proj_bias": weights.get(p + "attn.in_proj_bias", [3 * width]),
            "out_proj_weight": weights.get(p + "attn.out_proj.weight", [width, width]),
            "out_proj_bias": weights.get(p + "attn.out_proj.bias", [width]),
            "ln_2_weight": weights.get(p + "ln_2.weight", [width]), "ln_2_bias": weights.get(p + "ln_2.bias", [width]),
            "c_fc_weight": weights.get(p + "mlp.c_fc.weight", [mlp_width, width]),
            "c_fc_bias": weights.get(p + "mlp.c_fc.bias", [mlp_width]),
            "c_proj_weight": weights.get(p + "mlp.c_proj.weight", [width, mlp_width]),
            "c_proj_bias": weights.get(p + "mlp.c_proj.bias", [width]),
        }
        if layer_scale:
            block["ls_1"] = weights.get(p + "ls_1.gamma", [width])
            block["ls_2"] = weights.get(p + "ls_2.gamma", [width])
        blocks.append(block)
    return blocks


def model_config(folder):
    config = C.read_json(folder, "open_clip_config.json")
    if "model_cfg" not in config:
        raise C.FolderError(f"{folder}/open_clip_config.json has no model_cfg")
    return config


class Model:
    @torch.no_grad()
    def __init__(self, folder, dtype=torch.float64, tensors=None, config=None):
        self.folder = folder
        self.config = config if config is not None else model_config(folder)
        cfg = self.config["model_cfg"]
        vision = dict(VISION_DEFAULTS, **cfg.get("vision_cfg", {}))
        text = dict(TEXT_DEFAULTS, **cfg.get("text_cfg", {}))
        self.vision_cfg, self.text_cfg, self.embed_dim = vision, text, cfg["embed_dim"]
        unsupported = [f"vision_cfg.{key}" for key in ("timm_model_name", "hf_model_name") if vision.get(key)]
        unsupported += [f"text_cfg.{key}" for key in ("hf_model_name",) if text.get(key)]
        unsupported += [f"vision_cfg.{key}={vision[key]!r}" for key, value in
                        (("pool_type", "tok"), ("final_ln_after_pool", False), ("no_ln_pre", False),
                         ("attentional_pool", False)) if vision[key] != value]
        unsupported += [f"text_cfg.{key}={text[key]!r}" for key, value in
                        (("pool_type", "argmax"), ("proj_type", "linear"), ("proj_bias", False), ("embed_cls", False),
                         ("no_causal_mask", False), ("final_ln_after_pool", False)) if text[key] != value]
        if isinstance(vision["layers"], (list, tuple)):
            unsupported.append("vision_cfg.layers as a list (ModifiedResNet)")
        if unsupported:
            raise C.FolderError(f"open_clip_config.json: {', '.join(unsupported)}: not run by this reference")
        if tensors is None:
            tensors, source = C.read_weights(folder, "open_clip_model", "open_clip_pytorch_model.bin")
        else:
            source = "given tensors"
        weights = C.Weights(tensors, dtype, source)
        self.act = C.quick_gelu if cfg.get("quick_gelu", False) else C.gelu_erf
        self.dtype = dtype

        # Text tower: on the CLIP module itself, without a prefix.
        width = text["width"]
        self.text_heads = text["heads"]
        self.token_embedding = weights.get("token_embedding.weight", [text["vocab_size"], width])
        self.positional_embedding = weights.get("positional_embedding", [text["context_length"], width])
        self.text_blocks = _blocks(weights, "", text["layers"], width, int(width * text["mlp_ratio"]),
                                   text["ls_init_value"] is not None)
        self.ln_final = (weights.get("ln_final.weight", [width]), weights.get("ln_final.bias", [width]))
        self.text_projection = weights.get("text_projection", [width, self.embed_dim])

        # Vision tower: visual.*.
        width, patch, size = vision["width"], vision["patch_size"], vision["image_size"]
        grid = size // patch
        self.vision_heads = width // vision["head_width"]
        self.conv1 = weights.get("visual.conv1.weight", [width, 3, patch, patch])
        self.class_embedding = weights.get("visual.class_embedding", [width])
        self.visual_positions = weights.get("visual.positional_embedding", [grid * grid + 1, width])
        self.ln_pre = (weights.get("visual.ln_pre.weight", [width]), weights.get("visual.ln_pre.bias", [width]))
        self.vision_blocks = _blocks(weights, "visual.", vision["layers"], width, int(width * vision["mlp_ratio"]),
                                     vision["ls_init_value"] is not None)
        self.ln_post = (weights.get("visual.ln_post.weight", [width]), weights.get("visual.ln_post.bias", [width]))
        self.proj = weights.get("visual.proj", [width, self.embed_dim])
        self.logit_scale = weights.get("logit_scale").reshape(-1)[0].item()
        unused = weights.unused()
        if unused:
            raise C.FolderError(f"{source}: tensors the model does not use: {unused[:5]}")
        self.has_layer_scale = vision["ls_init_value"] is not None or text["ls_init_value"] is not None

    def skip_perturbation(self, kind, dump):
        """Why a negative control does not apply to this folder (None when it does)."""
        if kind == "layer-scale" and not self.has_layer_scale:
            return "the folder has no LayerScale"
        return None

    def _act(self, perturb):
        if perturb == "activation":
            return C.gelu_erf if self.act is C.quick_gelu else C.quick_gelu
        return self.act

    def input_notes(self, ids_list):
        return C.end_of_text_notes(self.folder, ids_list)

    @torch.no_grad()
    def encode_text(self, ids_list, perturb=None):
        """(embeddings [N, embed_dim] before normalisation, [rows, width] states per text)."""
        text = self.text_cfg
        C.check_ids(ids_list, text["vocab_size"])
        ids, _ = C.pad_batch(ids_list, text["pad_id"], text["context_length"])
        length = ids.shape[1]
        x = self.token_embedding[ids] + self.positional_embedding
        mask = None if perturb == "causal" else torch.full((length, length), -math.inf, dtype=self.dtype).triu(1)
        blocks = self.text_blocks[:-1] if perturb == "last-layer" else self.text_blocks
        for block in blocks:
            x = residual_block(x, block, self.text_heads, self._act(perturb), mask, layer_scale=perturb != "layer-scale")
        if perturb != "final-norm":
            x = layer_norm(x, *self.ln_final, EPS)
        index = torch.zeros(len(ids_list), dtype=torch.int64) if perturb == "pooling" else ids.argmax(dim=-1)
        embeddings = x[torch.arange(len(ids_list)), index] @ self.text_projection
        return embeddings, [x[i, :len(ids_list[i])] for i in range(len(ids_list))]

    def preprocess(self, image):
        return C.preprocess("openclip", image, self.config)

    @torch.no_grad()
    def encode_image(self, pixels, perturb=None):
        """(embeddings [M, embed_dim] before normalisation, [1 + grid², width] states per image)."""
        vision = self.vision_cfg
        patch, size = vision["patch_size"], vision["image_size"]
        grid = size // patch
        pixels = pixels.to(self.dtype)
        if list(pixels.shape[1:]) != [3, size, size]:
            raise C.FolderError(f"pixels of shape {list(pixels.shape)} for image_size {size}")
        count = pixels.shape[0]
        # [M, 3, g, p, g, p] -> [M, g·g, 3·p·p], each patch flattened as the conv weight is (c, y, x).
        patches = pixels.reshape(count, 3, grid, patch, grid, patch).permute(0, 2, 4, 1, 3, 5)
        patches = patches.reshape(count, grid * grid, 3 * patch * patch)
        x = patches @ self.conv1.reshape(self.conv1.shape[0], -1).T
        x = torch.cat([self.class_embedding.expand(count, 1, -1), x], dim=1) + self.visual_positions
        if perturb != "pre-norm":
            x = layer_norm(x, *self.ln_pre, EPS)
        blocks = self.vision_blocks[:-1] if perturb == "last-layer" else self.vision_blocks
        for block in blocks:
            x = residual_block(x, block, self.vision_heads, self._act(perturb), None, layer_scale=perturb != "layer-scale")
        if perturb != "final-norm":
            x = layer_norm(x, *self.ln_post, EPS)
        pooled = x.mean(dim=1) if perturb == "pooling" else x[:, 0]
        return pooled @ self.proj, list(x)


def load(folder, dtype=torch.float64):
    return Model(folder, dtype)


if __name__ == "__main__":
    print(__doc__)
