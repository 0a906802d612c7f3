"""Writes a random-weight OpenCLIP folder, as OpenCLIP's push_to_hf_hub publishes them
(laion/CLIP-ViT-*, timm/*-openai ...), for the parity tests of published checkpoints.

    /usr/bin/python3 tests/published/openclip_write.py VARIANT SIZE OUT_FOLDER [--seed N]
                     [--dtype f32|f16|bf16] [--format safetensors|bin] [--no-tokenizer]

VARIANT:
  openclip        OpenAI's weights through OpenCLIP (ViT-B-32-quickgelu): model_cfg.quick_gelu true,
                  preprocess_cfg {mean, std}.
  openclip-laion  a LAION-trained ViT-B-32: nn.GELU (no quick_gelu key), preprocess_cfg with
                  interpolation "bicubic" and resize_mode "shortest".
  openclip-ls     as openclip-laion with LayerScale (vision_cfg / text_cfg ls_init_value): every
                  block holds ls_1.gamma and ls_2.gamma, drawn around 0.5 (not the usual 1e-5
                  init, so the blocks do not vanish).
SIZE: tiny or base, the dimensions of clip_write.py (base = ViT-B/32).
FORMAT: open_clip_model.safetensors (default) or open_clip_pytorch_model.bin (torch.save); OpenCLIP
publishes no sharded files.

Files: open_clip_config.json {"model_cfg": {embed_dim, [quick_gelu], vision_cfg {image_size,
layers, width, patch_size, [head_width], [ls_init_value]}, text_cfg {context_length, vocab_size,
width, heads, layers}}, "preprocess_cfg": {...}}, the weights, and the tokenizer files
push_to_hf_hub saves beside them (tokenizer.json, vocab.json, merges.txt, tokenizer_config.json,
special_tokens_map.json from tests/text/make_tokenizers.py clip). Folders OpenCLIP loads by model
name alone rely on the BPE vocabulary bundled in the Python package instead: --no-tokenizer
writes that layout. The weights are clip_write.py's for the same seed and sizes, converted to
OpenCLIP's names, so a clip folder and an openclip folder of one seed hold the same model.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402
import clip_write  # noqa: E402

VARIANTS = {
    "openclip": {"quick_gelu": True, "newer_preprocess": False, "layer_scale": None},
    "openclip-laion": {"quick_gelu": False, "newer_preprocess": True, "layer_scale": None},
    "openclip-ls": {"quick_gelu": False, "newer_preprocess": True, "layer_scale": 0.5},
}


def write_folder(variant, size, folder, seed=0, dtype="f32", weight_format="safetensors", tokenizer=True):
    if variant not in VARIANTS:
        raise SystemExit(f"variant {variant!r}: one of {', '.join(VARIANTS)}")
    if weight_format not in ("safetensors", "bin"):
        raise SystemExit(f"format {weight_format!r}: OpenCLIP folders hold safetensors or bin")
    flavour = VARIANTS[variant]
    os.makedirs(folder, exist_ok=True)
    vocab_size, start_id, end_id = clip_write.clip_tokenizer(folder, seed, tokenizer)
    text, vision, projection_dim = clip_write.sizes(size, vocab_size)
    if end_id is None:
        start_id, end_id = text["vocab_size"] - 2, text["vocab_size"] - 1
    hf = clip_write.clip_weights(text, vision, projection_dim, seed, position_ids=False)
    weights = clip_write.to_openclip(hf, text, vision, flavour["layer_scale"], seed)
    files = C.write_weights(folder, "open_clip_model", "open_clip_pytorch_model.bin", C.cast_weights(weights, dtype),
                            weight_format)
    C.write_json(folder, "open_clip_config.json",
                 clip_write.openclip_config(text, vision, projection_dim, flavour["quick_gelu"],
                                            flavour["newer_preprocess"], flavour["layer_scale"]))
    return {"folder": folder, "files": files, "text": text, "vision": vision, "projection_dim": projection_dim,
            "start_id": start_id, "end_id": end_id, "pad_id": 0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("size", choices=sorted(clip_write.SIZES))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=sorted(C.STORE_DTYPES), default="f32")
    parser.add_argument("--format", choices=["safetensors", "bin"], default="safetensors")
    parser.add_argument("--no-tokenizer", action="store_true", help="the layout without tokenizer files")
    args = parser.parse_args(argv)
    info = write_folder(args.variant, args.size, args.out, args.seed, args.dtype, args.format, not args.no_tokenizer)
    print(f"{args.out}: {args.variant} {args.size}, {args.dtype}, {', '.join(info['files'])}")


if __name__ == "__main__":
    main()
