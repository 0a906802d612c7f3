"""Writes a random-weight SigLIP folder in the transformers layout (google/siglip-base-patch16-224
and its kin), for the parity tests of published checkpoints.

    /usr/bin/python3 tests/published/siglip_write.py siglip SIZE OUT_FOLDER [--seed N]
                     [--dtype f32|f16|bf16] [--format safetensors|sharded|bin] [--no-tokenizer]

SIZE: tiny (both towers 64 wide; text 2 layers, vision 3 layers, 4 heads, MLP 160 — not 4x, as
so400m's 1152 -> 4304 is not either —, patch 8, image 32, 64 text positions) or base (B/16 at
224: both towers 768 / 12 layers / 12 heads / 3072, patch 16, 64 text positions, vocabulary
32,000). The base config.json holds, like the published one, only each tower's model_type: every
size, hidden_act (gelu_pytorch_tanh) and layer_norm_eps (1e-6) comes from SiglipTextConfig /
SiglipVisionConfig's defaults (vocab_size is written only when the tokenizer needs more than 32,000).
FORMAT: model.safetensors (default), sharded (model-0000k-of-00002.safetensors + index) or
pytorch_model.bin.

Files: config.json (SiglipModel), the weights (text_model.* with head.weight/bias, vision_model.*
with a biased patch_embedding, no class token, and the MAP head vision_model.head.probe /
attention.in_proj_* / attention.out_proj / layernorm / mlp.fc1 / fc2; logit_scale and logit_bias
of shape [1]), preprocessor_config.json (SiglipImageProcessor: both sides to 224 bicubic, rescale,
mean = std = 0.5), and the tokenizer files of tests/text/sp_make_models.py siglip (spiece.model,
tokenizer_config.json with model_max_length 64, special_tokens_map.json, ...).
"""

import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402

SIZES = {
    "tiny": {"text": {"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
                      "max_position_embeddings": 64},
             "vision": {"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 3, "num_attention_heads": 4,
                        "patch_size": 8, "image_size": 32},
             "vocab_size": 1000},
    "base": {"text": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                      "max_position_embeddings": 64},
             "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                        "patch_size": 16, "image_size": 224},
             "vocab_size": 32000},
}


def layer_weights(draw, prefix, width, inner):
    w = collections.OrderedDict()
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        w[f"{prefix}self_attn.{name}.weight"] = draw.linear(width, width)
        w[f"{prefix}self_attn.{name}.bias"] = draw.bias(width)
    w[f"{prefix}layer_norm1.weight"], w[f"{prefix}layer_norm1.bias"] = draw.norm(width)
    w[f"{prefix}mlp.fc1.weight"], w[f"{prefix}mlp.fc1.bias"] = draw.linear(inner, width), draw.bias(inner)
    w[f"{prefix}mlp.fc2.weight"], w[f"{prefix}mlp.fc2.bias"] = draw.linear(width, inner), draw.bias(width)
    w[f"{prefix}layer_norm2.weight"], w[f"{prefix}layer_norm2.bias"] = draw.norm(width)
    return w


def siglip_weights(text, vision, seed):
    """A SiglipModel state dict (float32) with the published names, drawn from `seed`."""
    draw = C.Draw(seed)
    w = collections.OrderedDict()
    width = text["hidden_size"]
    w["text_model.embeddings.token_embedding.weight"] = draw.normal((text["vocab_size"], width), 0.5)
    w["text_model.embeddings.position_embedding.weight"] = draw.normal((text["max_position_embeddings"], width), 0.3)
    for i in range(text["num_hidden_layers"]):
        w.update(layer_weights(draw, f"text_model.encoder.layers.{i}.", width, text["intermediate_size"]))
    w["text_model.final_layer_norm.weight"], w["text_model.final_layer_norm.bias"] = draw.norm(width)
    w["text_model.head.weight"], w["text_model.head.bias"] = draw.linear(width, width), draw.bias(width)
    width, patch, inner = vision["hidden_size"], vision["patch_size"], vision["intermediate_size"]
    w["vision_model.embeddings.patch_embedding.weight"] = draw.normal((width, 3, patch, patch), (3 * patch * patch) ** -0.5)
    w["vision_model.embeddings.patch_embedding.bias"] = draw.bias(width)
    w["vision_model.embeddings.position_embedding.weight"] = draw.normal(((vision["image_size"] // patch) ** 2, width), 0.3)
    for i in range(vision["num_hidden_layers"]):
        w.update(layer_weights(draw, f"vision_model.encoder.layers.{i}.", width, inner))
    w["vision_model.post_layernorm.weight"], w["vision_model.post_layernorm.bias"] = draw.norm(width)
    w["vision_model.head.probe"] = draw.normal((1, 1, width), 1.0)
    w["vision_model.head.attention.in_proj_weight"] = draw.linear(3 * width, width)
    w["vision_model.head.attention.in_proj_bias"] = draw.bias(3 * width)
    w["vision_model.head.attention.out_proj.weight"] = draw.linear(width, width)
    w["vision_model.head.attention.out_proj.bias"] = draw.bias(width)
    w["vision_model.head.layernorm.weight"], w["vision_model.head.layernorm.bias"] = draw.norm(width)
    w["vision_model.head.mlp.fc1.weight"], w["vision_model.head.mlp.fc1.bias"] = draw.linear(inner, width), draw.bias(inner)
    w["vision_model.head.mlp.fc2.weight"], w["vision_model.head.mlp.fc2.bias"] = draw.linear(width, inner), draw.bias(width)
    w["logit_scale"] = torch.tensor([2.3 + float(draw.normal((1,), 0.1))])
    w["logit_bias"] = torch.tensor([-10.0 + float(draw.normal((1,), 0.5))])
    return w


def siglip_config(size, text, vision, dtype):
    """config.json; for base, like google/siglip-base-patch16-224's, only the model_types."""
    if size == "base":
        text_config = {"model_type": "siglip_text_model"}
        if text["vocab_size"] != 32000:
            text_config["vocab_size"] = text["vocab_size"]
        vision_config = {"model_type": "siglip_vision_model"}
    else:
        text_config = {"model_type": "siglip_text_model", **text}
        vision_config = {"model_type": "siglip_vision_model", **vision}
    return {"architectures": ["SiglipModel"], "initializer_factor": 1.0, "model_type": "siglip",
            "text_config": text_config, "torch_dtype": C.TORCH_DTYPE_NAMES[dtype],
            "transformers_version": "4.37.0.dev0", "vision_config": vision_config}


def preprocessor_config(image_size):
    return {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
            "image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0.5, 0.5], "processor_class": "SiglipProcessor",
            "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": image_size, "width": image_size}}


def siglip_tokenizer(folder, seed, use_generator=True):
    """Tokenizer files (sp_make_models.py siglip) and (vocabulary size, </s> id, pad id); without
    them (None, 1, 1): the published ids of </s> and the pad (also </s>)."""
    if not use_generator or not C.write_tokenizer("sp_make_models.py", "siglip", folder, seed):
        return None, 1, 1
    vocabulary = C.tokenizer_vocabulary(folder)
    eos = C.special_token(folder, "eos_token") or "</s>"
    pad = C.special_token(folder, "pad_token") or eos
    return max(vocabulary.values()) + 1, vocabulary.get(eos, 1), vocabulary.get(pad, 1)


def write_folder(variant, size, folder, seed=0, dtype="f32", weight_format="safetensors", tokenizer=True):
    if variant != "siglip":
        raise SystemExit(f"variant {variant!r}: siglip")
    os.makedirs(folder, exist_ok=True)
    vocab_size, eos_id, pad_id = siglip_tokenizer(folder, seed, tokenizer)
    spec = SIZES[size]
    text, vision = dict(spec["text"]), dict(spec["vision"])
    text["vocab_size"] = spec["vocab_size"] if vocab_size is None else (
        vocab_size if size == "tiny" else max(vocab_size, spec["vocab_size"]))
    weights = C.cast_weights(siglip_weights(text, vision, seed), dtype)
    files = C.write_weights(folder, "model", "pytorch_model.bin", weights, weight_format)
    C.write_json(folder, "config.json", siglip_config(size, text, vision, dtype))
    C.write_json(folder, "preprocessor_config.json", preprocessor_config(vision["image_size"]))
    return {"folder": folder, "files": files, "text": text, "vision": vision, "eos_id": eos_id, "pad_id": pad_id}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=["siglip"])
    parser.add_argument("size", choices=sorted(SIZES))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=sorted(C.STORE_DTYPES), default="f32")
    parser.add_argument("--format", choices=["safetensors", "sharded", "bin"], default="safetensors")
    parser.add_argument("--no-tokenizer", action="store_true", help="write no tokenizer files")
    args = parser.parse_args(argv)
    info = write_folder(args.variant, args.size, args.out, args.seed, args.dtype, args.format, not args.no_tokenizer)
    print(f"{args.out}: siglip {args.size}, {args.dtype}, {', '.join(info['files'])}")


if __name__ == "__main__":
    main()
