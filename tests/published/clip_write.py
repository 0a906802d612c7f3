"""Writes a random-weight CLIP folder in the transformers layout, as people download them from
the Hugging Face hub, for the parity tests of published checkpoints.

    /usr/bin/python3 tests/published/clip_write.py VARIANT SIZE OUT_FOLDER [--seed N]
                     [--dtype f32|f16|bf16] [--format safetensors|sharded|bin] [--no-tokenizer]

VARIANT (the published flavour):
  clip        openai/clip-vit-base-patch32: hidden_act quick_gelu, text_config.eos_token_id 2 (pooling
              at the argmax of the ids), the legacy text_config_dict / vision_config_dict beside
              text_config / vision_config, a CLIPFeatureExtractor preprocessor_config.json with
              integer size / crop_size, embeddings.position_ids buffers in the weights.
  clip-laion  laion/CLIP-ViT-B-32-laion2B-s34B-b79K: hidden_act gelu, eos_token_id 2, position_ids,
              AND the OpenCLIP files of the same weights (open_clip_config.json with
              open_clip_model.safetensors, or open_clip_pytorch_model.bin for --format bin).
  clip-new    a folder converted by a recent transformers: eos_token_id = the id of <|endoftext|>
              (pooling at its first occurrence), configs holding only the non-default keys (so
              hidden_act, layer_norm_eps, max_position_embeddings come from the defaults),
              CLIPImageProcessor's {"shortest_edge"} / {"height", "width"} sizes, no position_ids.
SIZE: tiny (text 48 wide, 3 layers, 3 heads; vision 64 wide, 2 layers, 4 heads, patch 8, image 32;
projection 40) or base (ViT-B/32: vision 768 / 12 layers / 12 heads / 3072, patch 32, image 224;
text 512 / 12 / 8 / 2048; projection 512; vocabulary 49,408).
FORMAT: model.safetensors (default), sharded (model-0000k-of-00002.safetensors +
model.safetensors.index.json) or bin (pytorch_model.bin by torch.save).

Tokenizer files come from tests/text/make_tokenizers.py clip (tokenizer.json, vocab.json,
merges.txt); the embedding table is sized to its vocabulary (base: at least 49,408 rows, the
published size). tokenizer_config.json and special_tokens_map.json are written as CLIPTokenizer's
when the generator does not write them. Random weights: clip_common.Draw (linear weights std
1/sqrt(fan_in), norms around 1 with biases away from 0, embeddings std 0.3-0.5).
"""

import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402

OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_STD = [0.26862954, 0.26130258, 0.27577711]

SIZES = {
    "tiny": {"text": {"hidden_size": 48, "intermediate_size": 192, "num_hidden_layers": 3, "num_attention_heads": 3,
                      "max_position_embeddings": 77},
             "vision": {"hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "patch_size": 8, "image_size": 32},
             "projection_dim": 40, "vocab_size": 1000},
    "base": {"text": {"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 8,
                      "max_position_embeddings": 77},
             "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                        "patch_size": 32, "image_size": 224},
             "projection_dim": 512, "vocab_size": 49408},
}
VARIANTS = {
    "clip": {"act": "quick_gelu", "legacy_eos": True, "config_dicts": True, "old_preprocessor": True,
             "position_ids": True, "open_clip": False},
    "clip-laion": {"act": "gelu", "legacy_eos": True, "config_dicts": False, "old_preprocessor": True,
                   "position_ids": True, "open_clip": True},
    "clip-new": {"act": "quick_gelu", "legacy_eos": False, "config_dicts": False, "old_preprocessor": False,
                 "position_ids": False, "open_clip": False},
}
START, END = "<|startoftext|>", "<|endoftext|>"


def layer_weights(draw, prefix, width, inner):
    """One CLIPEncoderLayer's tensors in the published names."""
    w = collections.OrderedDict()
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        w[f"{prefix}self_attn.{name}.weight"] = draw.linear(width, width)
        w[f"{prefix}self_attn.{name}.bias"] = draw.bias(width)
    w[f"{prefix}layer_norm1.weight"], w[f"{prefix}layer_norm1.bias"] = draw.norm(width)
    w[f"{prefix}mlp.fc1.weight"], w[f"{prefix}mlp.fc1.bias"] = draw.linear(inner, width), draw.bias(inner)
    w[f"{prefix}mlp.fc2.weight"], w[f"{prefix}mlp.fc2.bias"] = draw.linear(width, inner), draw.bias(width)
    w[f"{prefix}layer_norm2.weight"], w[f"{prefix}layer_norm2.bias"] = draw.norm(width)
    return w


def clip_weights(text, vision, projection_dim, seed, position_ids=True):
    """A CLIPModel state dict (float32) with the published names, drawn from `seed`: the same seed
    and sizes give the same tensors, whichever layout they are written in."""
    draw = C.Draw(seed)
    w = collections.OrderedDict()
    width = text["hidden_size"]
    w["text_model.embeddings.token_embedding.weight"] = draw.normal((text["vocab_size"], width), 0.5)
    w["text_model.embeddings.position_embedding.weight"] = draw.normal((text["max_position_embeddings"], width), 0.3)
    for i in range(text["num_hidden_layers"]):
        w.update(layer_weights(draw, f"text_model.encoder.layers.{i}.", width, text["intermediate_size"]))
    w["text_model.final_layer_norm.weight"], w["text_model.final_layer_norm.bias"] = draw.norm(width)
    width, patch = vision["hidden_size"], vision["patch_size"]
    positions = (vision["image_size"] // patch) ** 2 + 1
    w["vision_model.embeddings.class_embedding"] = draw.normal((width,), 0.5)
    w["vision_model.embeddings.patch_embedding.weight"] = draw.normal((width, 3, patch, patch), (3 * patch * patch) ** -0.5)
    w["vision_model.embeddings.position_embedding.weight"] = draw.normal((positions, width), 0.3)
    w["vision_model.pre_layrnorm.weight"], w["vision_model.pre_layrnorm.bias"] = draw.norm(width)  # sic: "layrnorm"
    for i in range(vision["num_hidden_layers"]):
        w.update(layer_weights(draw, f"vision_model.encoder.layers.{i}.", width, vision["intermediate_size"]))
    w["vision_model.post_layernorm.weight"], w["vision_model.post_layernorm.bias"] = draw.norm(width)
    w["visual_projection.weight"] = draw.linear(projection_dim, width)
    w["text_projection.weight"] = draw.linear(projection_dim, text["hidden_size"])
    w["logit_scale"] = torch.tensor(2.6592 + float(draw.normal((1,), 0.1)))
    if position_ids:  # buffers of files written before transformers 4.31 made them non-persistent
        w["text_model.embeddings.position_ids"] = torch.arange(text["max_position_embeddings"]).unsqueeze(0)
        w["vision_model.embeddings.position_ids"] = torch.arange(positions).unsqueeze(0)
    return w


def to_openclip(hf, text, vision, layer_scale=None, seed=0):
    """The same weights in OpenCLIP's names: q/k/v fused into attn.in_proj_* (q, k, v order),
    projections transposed ([width, embed_dim], used as x @ proj). With `layer_scale`, LayerScale
    gammas ls_1 / ls_2 drawn around it (OpenCLIP's ls_init_value folders)."""
    draw = C.Draw(seed + 7919)
    o = collections.OrderedDict()

    def blocks(source, target, count, width):
        for i in range(count):
            s, t = f"{source}.encoder.layers.{i}.", f"{target}transformer.resblocks.{i}."
            o[t + "ln_1.weight"], o[t + "ln_1.bias"] = hf[s + "layer_norm1.weight"], hf[s + "layer_norm1.bias"]
            o[t + "attn.in_proj_weight"] = torch.cat([hf[s + f"self_attn.{n}_proj.weight"] for n in "qkv"])
            o[t + "attn.in_proj_bias"] = torch.cat([hf[s + f"self_attn.{n}_proj.bias"] for n in "qkv"])
            o[t + "attn.out_proj.weight"] = hf[s + "self_attn.out_proj.weight"]
            o[t + "attn.out_proj.bias"] = hf[s + "self_attn.out_proj.bias"]
            o[t + "ln_2.weight"], o[t + "ln_2.bias"] = hf[s + "layer_norm2.weight"], hf[s + "layer_norm2.bias"]
            o[t + "mlp.c_fc.weight"], o[t + "mlp.c_fc.bias"] = hf[s + "mlp.fc1.weight"], hf[s + "mlp.fc1.bias"]
            o[t + "mlp.c_proj.weight"], o[t + "mlp.c_proj.bias"] = hf[s + "mlp.fc2.weight"], hf[s + "mlp.fc2.bias"]
            if layer_scale is not None:
                o[t + "ls_1.gamma"] = draw.uniform((width,), 0.5 * layer_scale, 1.5 * layer_scale)
                o[t + "ls_2.gamma"] = draw.uniform((width,), 0.5 * layer_scale, 1.5 * layer_scale)

    o["positional_embedding"] = hf["text_model.embeddings.position_embedding.weight"]
    o["text_projection"] = hf["text_projection.weight"].T.contiguous()
    o["logit_scale"] = hf["logit_scale"]
    o["visual.class_embedding"] = hf["vision_model.embeddings.class_embedding"]
    o["visual.positional_embedding"] = hf["vision_model.embeddings.position_embedding.weight"]
    o["visual.proj"] = hf["visual_projection.weight"].T.contiguous()
    o["visual.conv1.weight"] = hf["vision_model.embeddings.patch_embedding.weight"]
    o["visual.ln_pre.weight"], o["visual.ln_pre.bias"] = hf["vision_model.pre_layrnorm.weight"], hf["vision_model.pre_layrnorm.bias"]
    blocks("vision_model", "visual.", vision["num_hidden_layers"], vision["hidden_size"])
    o["visual.ln_post.weight"], o["visual.ln_post.bias"] = hf["vision_model.post_layernorm.weight"], hf["vision_model.post_layernorm.bias"]
    o["token_embedding.weight"] = hf["text_model.embeddings.token_embedding.weight"]
    blocks("text_model", "", text["num_hidden_layers"], text["hidden_size"])
    o["ln_final.weight"], o["ln_final.bias"] = hf["text_model.final_layer_norm.weight"], hf["text_model.final_layer_norm.bias"]
    return o


def openclip_config(text, vision, projection_dim, quick_gelu, newer_preprocess, layer_scale=None):
    """open_clip_config.json as OpenCLIP's push_to_hf_hub writes it ({"model_cfg", "preprocess_cfg"})."""
    vision_cfg = {"image_size": vision["image_size"], "layers": vision["num_hidden_layers"],
                  "width": vision["hidden_size"], "patch_size": vision["patch_size"]}
    head_width = vision["hidden_size"] // vision["num_attention_heads"]
    if head_width != 64:
        vision_cfg["head_width"] = head_width
    if vision["intermediate_size"] != 4 * vision["hidden_size"]:
        vision_cfg["mlp_ratio"] = vision["intermediate_size"] / vision["hidden_size"]
    text_cfg = {"context_length": text["max_position_embeddings"], "vocab_size": text["vocab_size"],
                "width": text["hidden_size"], "heads": text["num_attention_heads"], "layers": text["num_hidden_layers"]}
    if text["intermediate_size"] != 4 * text["hidden_size"]:
        text_cfg["mlp_ratio"] = text["intermediate_size"] / text["hidden_size"]
    if layer_scale is not None:
        vision_cfg["ls_init_value"] = text_cfg["ls_init_value"] = layer_scale
    model_cfg = {"embed_dim": projection_dim}
    if quick_gelu:
        model_cfg["quick_gelu"] = True
    model_cfg.update(vision_cfg=vision_cfg, text_cfg=text_cfg)
    preprocess = {"mean": OPENAI_MEAN, "std": OPENAI_STD}
    if newer_preprocess:
        preprocess.update(interpolation="bicubic", resize_mode="shortest")
    return {"model_cfg": model_cfg, "preprocess_cfg": preprocess}


def clip_tokenizer(folder, seed, use_generator=True):
    """Tokenizer files (make_tokenizers.py clip) and the tokenizer's (vocabulary size, <|startoftext|>
    id, <|endoftext|> id); without them, (None, None, None)."""
    if not use_generator or not C.write_tokenizer("make_tokenizers.py", "clip", folder, seed):
        return None, None, None
    vocabulary = C.tokenizer_vocabulary(folder)
    if not os.path.exists(os.path.join(folder, "tokenizer_config.json")):
        C.write_json(folder, "tokenizer_config.json", {
            "add_prefix_space": False, "bos_token": START, "clean_up_tokenization_spaces": True, "do_lower_case": True,
            "eos_token": END, "errors": "replace", "model_max_length": 77, "pad_token": END,
            "tokenizer_class": "CLIPTokenizer", "unk_token": END})
    if not os.path.exists(os.path.join(folder, "special_tokens_map.json")):
        C.write_json(folder, "special_tokens_map.json", {"bos_token": START, "eos_token": END, "pad_token": END, "unk_token": END})
    return max(vocabulary.values()) + 1, vocabulary.get(START), vocabulary.get(END)


def sizes(size, vocab_size):
    spec = SIZES[size]
    text, vision = dict(spec["text"]), dict(spec["vision"])
    text["vocab_size"] = spec["vocab_size"] if vocab_size is None else (
        vocab_size if size == "tiny" else max(vocab_size, spec["vocab_size"]))
    return text, vision, spec["projection_dim"]


def hf_config(variant, text, vision, projection_dim, dtype, start_id, end_id):
    flavour = VARIANTS[variant]
    act = flavour["act"]
    if flavour["legacy_eos"]:
        text_config = {"attention_dropout": 0.0, "bos_token_id": 0, "dropout": 0.0, "eos_token_id": 2,
                       "hidden_act": act, "initializer_factor": 1.0, "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                       "model_type": "clip_text_model", "pad_token_id": 1, "projection_dim": projection_dim,
                       "torch_dtype": None, "max_length": 20, "num_beams": 1, "return_dict": True,
                       "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, **text}
        vision_config = {"attention_dropout": 0.0, "dropout": 0.0, "hidden_act": act, "initializer_factor": 1.0,
                         "initializer_range": 0.02, "layer_norm_eps": 1e-05, "model_type": "clip_vision_model",
                         "num_channels": 3, "projection_dim": projection_dim, "torch_dtype": None, **vision}
    else:  # only what differs from the defaults, as a recent save_pretrained writes it
        text_config = {"bos_token_id": start_id, "eos_token_id": end_id, "model_type": "clip_text_model",
                       "projection_dim": projection_dim,
                       **{key: value for key, value in text.items() if key != "max_position_embeddings" or value != 77}}
        vision_config = {"model_type": "clip_vision_model", "projection_dim": projection_dim, **vision}
        if act != "quick_gelu":
            text_config["hidden_act"] = vision_config["hidden_act"] = act
    config = {"architectures": ["CLIPModel"], "initializer_factor": 1.0, "logit_scale_init_value": 2.6592,
              "model_type": "clip", "projection_dim": projection_dim, "text_config": text_config}
    if flavour["config_dicts"]:
        config["text_config_dict"] = {key: text[key] for key in ("hidden_size", "intermediate_size",
                                                                 "num_attention_heads", "num_hidden_layers")}
    config.update({"torch_dtype": C.TORCH_DTYPE_NAMES[dtype], "transformers_version": "4.21.3" if flavour["legacy_eos"] else "4.44.0",
                   "vision_config": vision_config})
    if flavour["config_dicts"]:
        config["vision_config_dict"] = {key: vision[key] for key in ("hidden_size", "intermediate_size",
                                                                     "num_attention_heads", "num_hidden_layers", "patch_size")}
    return config


def preprocessor_config(old, image_size):
    if old:  # CLIPFeatureExtractor era
        return {"crop_size": image_size, "do_center_crop": True, "do_normalize": True, "do_resize": True,
                "feature_extractor_type": "CLIPFeatureExtractor", "image_mean": OPENAI_MEAN, "image_std": OPENAI_STD,
                "resample": 3, "size": image_size}
    return {"crop_size": {"height": image_size, "width": image_size}, "do_center_crop": True, "do_convert_rgb": True,
            "do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": OPENAI_MEAN,
            "image_processor_type": "CLIPImageProcessor", "image_std": OPENAI_STD, "resample": 3,
            "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": image_size}}


def write_folder(variant, size, folder, seed=0, dtype="f32", weight_format="safetensors", tokenizer=True):
    """Writes the folder; returns a description (files, sizes, special ids) for the self-tests."""
    if variant not in VARIANTS:
        raise SystemExit(f"variant {variant!r}: one of {', '.join(VARIANTS)}")
    flavour = VARIANTS[variant]
    os.makedirs(folder, exist_ok=True)
    vocab_size, start_id, end_id = clip_tokenizer(folder, seed, tokenizer)
    text, vision, projection_dim = sizes(size, vocab_size)
    if end_id is None:  # no tokenizer: the published ids' places, the last two of the vocabulary
        start_id, end_id = text["vocab_size"] - 2, text["vocab_size"] - 1
    hf = clip_weights(text, vision, projection_dim, seed, flavour["position_ids"])
    files = C.write_weights(folder, "model", "pytorch_model.bin", C.cast_weights(hf, dtype), weight_format)
    C.write_json(folder, "config.json", hf_config(variant, text, vision, projection_dim, dtype, start_id, end_id))
    C.write_json(folder, "preprocessor_config.json", preprocessor_config(flavour["old_preprocessor"], vision["image_size"]))
    if flavour["open_clip"]:
        C.write_json(folder, "open_clip_config.json",
                     openclip_config(text, vision, projection_dim, flavour["act"] == "quick_gelu", newer_preprocess=False))
        files += C.write_weights(folder, "open_clip_model", "open_clip_pytorch_model.bin",
                                 C.cast_weights(to_openclip(hf, text, vision), dtype),
                                 "bin" if weight_format == "bin" else "safetensors")
    return {"folder": folder, "files": files, "text": text, "vision": vision, "projection_dim": projection_dim,
            "start_id": start_id, "end_id": end_id, "pad_id": end_id}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("size", choices=sorted(SIZES))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=sorted(C.STORE_DTYPES), default="f32")
    parser.add_argument("--format", choices=["safetensors", "sharded", "bin"], default="safetensors")
    parser.add_argument("--no-tokenizer", action="store_true", help="write no tokenizer files")
    args = parser.parse_args(argv)
    info = write_folder(args.variant, args.size, args.out, args.seed, args.dtype, args.format, not args.no_tokenizer)
    print(f"{args.out}: {args.variant} {args.size}, {args.dtype}, {', '.join(info['files'])}")


if __name__ == "__main__":
    main()
