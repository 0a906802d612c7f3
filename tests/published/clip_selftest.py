"""Self-tests of the CLIP-family parity references (clip, openclip, siglip), which need no engine:
folders written by the *_write.py scripts read back with the published names, shapes and values;
the two formulations of each model agree in float64 to 1e-9 (they differ by rounding, ~1e-15);
a dump written by ONE formulation of a model is checked by the *_compare.py script of ANOTHER
(transformers-layout CLIP on torch.nn.TransformerEncoderLayer against OpenCLIP-layout CLIP written
by hand, both ways, LayerScale folded into the transformers weights; SigLIP on torch.nn blocks
against SigLIP by hand); every negative control makes the comparison fail; corrupted dumps fail.

    /usr/bin/python3 tests/published/clip_selftest.py clip|openclip|siglip [--size tiny|base] [--work DIR]

`clip` also runs the laion folder (both layouts in one folder) across layouts. tiny takes seconds;
base writes the published dimensions (ViT-B/32, SigLIP B/16) and takes about half a minute a
family. Prints "N passed, N failed"; exit status 1 when any failed.
"""

import argparse
import collections
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clip_common as C  # noqa: E402
import clip_reference  # noqa: E402
import clip_write  # noqa: E402
import openclip_reference  # noqa: E402
import openclip_write  # noqa: E402
import siglip_reference  # noqa: E402
import siglip_write  # noqa: E402

TALLY = C.Tally()


def check(ok, label, detail=""):
    TALLY.record(bool(ok), label, detail)
    return ok


# ---------------------------------------------------------------------------------------------
# Inputs.

def make_images(folder, size, seed):
    """PNG files: noise, a gradient with sharp edges, odd and square sizes; for tiny also pictures
    exactly image_size square (both CLIP processors leave those untouched, so the two layouts'
    preprocessing agree on them)."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    shapes = [(53, 37), (48, 64), (32, 32), (31, 32)] if size == "tiny" else [(300, 224), (181, 240)]
    paths = []
    for index, (height, width) in enumerate(shapes):
        if index % 2 == 0:
            pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        else:
            y, x = np.mgrid[0:height, 0:width]
            pixels = np.stack([(x * 255 // max(width - 1, 1)), (y * 255 // max(height - 1, 1)),
                               ((x // 4 + y // 4) % 2) * 255], axis=-1).astype(np.uint8)
        path = os.path.join(folder, f"image_{index}_{height}x{width}.png")
        Image.fromarray(pixels, "RGB").save(path)
        paths.append(path)
    return paths


def square_images(folder, image_size, seed):
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for index in range(2):
        path = os.path.join(folder, f"square_{index}.png")
        Image.fromarray(rng.integers(0, 256, (image_size, image_size, 3), dtype=np.uint8), "RGB").save(path)
        paths.append(path)
    return paths


def clip_ids(vocab_size, start_id, end_id, seed, context=77, few=False):
    """Texts as CLIP's tokenizer gives them: <|startoftext|> ... <|endoftext|>, of lengths 2 to the
    full context (`few`: two texts, for the published sizes); ordinary ids drawn below both special ids."""
    rng = np.random.default_rng(seed)
    ordinary = min(start_id, end_id)
    lengths = [5, context] if few else [2, 5, 13, context, 9]
    return [[start_id] + [int(i) for i in rng.integers(1, ordinary, n - 2)] + [end_id] for n in lengths]


def siglip_ids(vocab_size, eos_id, pad_id, seed, length=64, few=False):
    """Texts as SiglipTokenizer(padding="max_length") gives them: pieces, </s>, padding to 64; one
    text fills the 64 rows (truncated, </s> last)."""
    rng = np.random.default_rng(seed)
    texts = []
    for n in ((6, length - 1) if few else (1, 6, 20, length - 1)):
        ids = [int(i) for i in rng.integers(3, vocab_size, n)] + [eos_id]
        texts.append(ids + [pad_id] * (length - len(ids)))
    return texts


# ---------------------------------------------------------------------------------------------
# Conversions between the layouts (the inverse of clip_write.to_openclip, written separately).

def openclip_to_hf(tensors, config):
    """An OpenCLIP state dict and open_clip_config.json as a transformers CLIPModel (state dict,
    config.json). LayerScale is folded into the projections it scales: ls · (W x + b) = (diag(ls) W) x
    + ls · b, exact up to rounding."""
    cfg = config["model_cfg"]
    vision = dict(openclip_reference.VISION_DEFAULTS, **cfg["vision_cfg"])
    text = dict(openclip_reference.TEXT_DEFAULTS, **cfg["text_cfg"])
    act = "quick_gelu" if cfg.get("quick_gelu") else "gelu"
    t = {k: v.to(torch.float64) for k, v in tensors.items()}
    hf = collections.OrderedDict()

    def blocks(source, target, count):
        for i in range(count):
            s, d = f"{source}transformer.resblocks.{i}.", f"{target}.encoder.layers.{i}."
            width = t[s + "ln_1.weight"].shape[0]
            ls_1 = t.get(s + "ls_1.gamma", torch.ones(width, dtype=torch.float64))
            ls_2 = t.get(s + "ls_2.gamma", torch.ones(width, dtype=torch.float64))
            for name, part in zip("qkv", t[s + "attn.in_proj_weight"].split(width)):
                hf[d + f"self_attn.{name}_proj.weight"] = part
            for name, part in zip("qkv", t[s + "attn.in_proj_bias"].split(width)):
                hf[d + f"self_attn.{name}_proj.bias"] = part
            hf[d + "self_attn.out_proj.weight"] = ls_1[:, None] * t[s + "attn.out_proj.weight"]
            hf[d + "self_attn.out_proj.bias"] = ls_1 * t[s + "attn.out_proj.bias"]
            hf[d + "layer_norm1.weight"], hf[d + "layer_norm1.bias"] = t[s + "ln_1.weight"], t[s + "ln_1.bias"]
            hf[d + "mlp.fc1.weight"], hf[d + "mlp.fc1.bias"] = t[s + "mlp.c_fc.weight"], t[s + "mlp.c_fc.bias"]
            hf[d + "mlp.fc2.weight"] = ls_2[:, None] * t[s + "mlp.c_proj.weight"]
            hf[d + "mlp.fc2.bias"] = ls_2 * t[s + "mlp.c_proj.bias"]
            hf[d + "layer_norm2.weight"], hf[d + "layer_norm2.bias"] = t[s + "ln_2.weight"], t[s + "ln_2.bias"]

    hf["text_model.embeddings.token_embedding.weight"] = t["token_embedding.weight"]
    hf["text_model.embeddings.position_embedding.weight"] = t["positional_embedding"]
    blocks("", "text_model", text["layers"])
    hf["text_model.final_layer_norm.weight"], hf["text_model.final_layer_norm.bias"] = t["ln_final.weight"], t["ln_final.bias"]
    hf["text_projection.weight"] = t["text_projection"].T
    hf["vision_model.embeddings.class_embedding"] = t["visual.class_embedding"]
    hf["vision_model.embeddings.patch_embedding.weight"] = t["visual.conv1.weight"]
    hf["vision_model.embeddings.position_embedding.weight"] = t["visual.positional_embedding"]
    hf["vision_model.pre_layrnorm.weight"], hf["vision_model.pre_layrnorm.bias"] = t["visual.ln_pre.weight"], t["visual.ln_pre.bias"]
    blocks("visual.", "vision_model", vision["layers"])
    hf["vision_model.post_layernorm.weight"], hf["vision_model.post_layernorm.bias"] = t["visual.ln_post.weight"], t["visual.ln_post.bias"]
    hf["visual_projection.weight"] = t["visual.proj"].T
    hf["logit_scale"] = t["logit_scale"]
    config = {"model_type": "clip", "projection_dim": cfg["embed_dim"],
              "text_config": {"vocab_size": text["vocab_size"], "hidden_size": text["width"],
                              "intermediate_size": int(text["width"] * text["mlp_ratio"]), "num_hidden_layers": text["layers"],
                              "num_attention_heads": text["heads"], "max_position_embeddings": text["context_length"],
                              "hidden_act": act, "eos_token_id": 2},
              "vision_config": {"hidden_size": vision["width"], "intermediate_size": int(vision["width"] * vision["mlp_ratio"]),
                                "num_hidden_layers": vision["layers"], "num_attention_heads": vision["width"] // vision["head_width"],
                                "image_size": vision["image_size"], "patch_size": vision["patch_size"], "hidden_act": act}}
    return hf, config


def hf_to_openclip_config(model):
    """open_clip_config.json for a clip_reference.Model's dimensions."""
    t, v = model.text, model.vision
    return {"model_cfg": {"embed_dim": model.projection_dim, "quick_gelu": t["hidden_act"] == "quick_gelu",
                          "vision_cfg": {"image_size": v["image_size"], "layers": v["num_hidden_layers"], "width": v["hidden_size"],
                                         "patch_size": v["patch_size"], "head_width": v["hidden_size"] // v["num_attention_heads"],
                                         "mlp_ratio": v["intermediate_size"] / v["hidden_size"]},
                          "text_cfg": {"context_length": t["max_position_embeddings"], "vocab_size": t["vocab_size"],
                                       "width": t["hidden_size"], "heads": t["num_attention_heads"], "layers": t["num_hidden_layers"],
                                       "mlp_ratio": t["intermediate_size"] / t["hidden_size"]}}}


# ---------------------------------------------------------------------------------------------
# Steps.

def run_script(script, args):
    """A *_compare.py run in this process (its module's main), output captured; (status, text)."""
    module = {"clip": clip_reference, "openclip": openclip_reference, "siglip": siglip_reference}[script]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            status = C.run_compare(module, args, "")
        except C.FolderError as error:
            print(f"FolderError: {error}")
            status = 2
    return status, buffer.getvalue()


def expect(script, args, status, label):
    got, text = run_script(script, args)
    ok = got == status
    summary = text.strip().splitlines()[-1] if text.strip() else ""
    check(ok, label, f"{script}_compare.py exit {got} (expected {status}): {summary}")
    if not ok:
        print(text)
    return text


def check_formulations(model, other, images, ids, label, bound=1e-9):
    """The two formulations in float64 on the same inputs, without a dump's float32 rounding in
    between: every output within `bound` of the other relative to its largest value (their
    operations differ, so only rounding of order 1e-15 may separate them)."""
    pixels = torch.stack([model.preprocess(Image.open(path)) for path in images])
    worst = 0.0
    for ours, theirs in ((model.encode_text(ids), other.encode_text(ids)), (model.encode_image(pixels), other.encode_image(pixels))):
        pairs = [(ours[0], theirs[0])] + list(zip(ours[1], theirs[1]))
        for a, b in pairs:
            worst = max(worst, float((a - b).abs().max() / b.abs().max()))
    check(worst <= bound, f"{label}: the two formulations agree in float64", f"largest relative difference {worst:.3g} (bound {bound:g})")


def write_dump_from(model, folder, dump, images, ids, compute="f32", preprocess_model=None):
    """A dump of `model` (one formulation) for the texts and images, with the images preprocessed
    by `preprocess_model` (the layout the compare script will use)."""
    preprocess_model = preprocess_model or model
    pixels = torch.stack([preprocess_model.preprocess(Image.open(path)) for path in images])
    text = model.encode_text(ids)
    image = model.encode_image(pixels)
    C.write_dump(dump, folder, compute, [f"text {i}" for i in range(len(ids))], ids, images,
                 (text[0].numpy(), [rows.numpy() for rows in text[1]]),
                 (image[0].numpy(), [rows.numpy() for rows in image[1]]))


def corrupted_dumps(dump, work):
    """Copies of a dump with one plausible engine mistake each: two texts' embeddings swapped, one
    image state row off by 1% in one element, a text that lost its last state row but kept its
    offsets consistent (must still pass: the engine may keep a prefix), and one whose rows are
    shifted by one (must fail)."""
    cases = []

    def copy(name):
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(dump, path)
        return path

    path = copy("swapped")
    embeddings = np.load(os.path.join(path, "text_embeddings.npy"))
    embeddings[[0, 1]] = embeddings[[1, 0]]
    np.save(os.path.join(path, "text_embeddings.npy"), embeddings)
    cases.append((path, 1, "text embeddings of texts 0 and 1 swapped"))

    path = copy("one_value")
    states = np.load(os.path.join(path, "image_states.npy"))
    row = states.shape[0] // 2
    column = int(np.argmax(np.abs(states[row])))
    states[row, column] *= 1.01
    np.save(os.path.join(path, "image_states.npy"), states)
    cases.append((path, 1, f"image state row {row} element {column} off by 1%"))

    path = copy("prefix")
    states = np.load(os.path.join(path, "text_states.npy"))
    offsets = np.load(os.path.join(path, "text_offsets.npy"))
    keep = np.ones(states.shape[0], dtype=bool)
    keep[offsets[2] - 1] = False  # the last row of text 1
    np.save(os.path.join(path, "text_states.npy"), states[keep])
    offsets[2:] -= 1
    np.save(os.path.join(path, "text_offsets.npy"), offsets)
    cases.append((path, 0, "text 1 keeps all but its last state row (a prefix)"))

    path = copy("shifted")
    states = np.load(os.path.join(path, "text_states.npy"))
    offsets = np.load(os.path.join(path, "text_offsets.npy"))
    first, last = int(offsets[2]), int(offsets[3])
    states[first:last - 1] = states[first + 1:last].copy()  # text 2's rows one place early
    np.save(os.path.join(path, "text_states.npy"), states)
    cases.append((path, 1, "text 2's state rows shifted by one"))

    path = copy("no_ids")
    os.remove(os.path.join(path, "text_ids.json"))
    cases.append((path, 1, "text outputs without text_ids.json"))

    path = copy("noisy")  # bf16-sized noise: passes the bf16 bounds, fails the f32 ones
    rng = np.random.default_rng(5)
    for name in ("text_embeddings.npy", "image_embeddings.npy", "text_states.npy", "image_states.npy"):
        values = np.load(os.path.join(path, name))
        values = values * (1 + rng.uniform(-2e-3, 2e-3, values.shape)).astype(np.float32)
        np.save(os.path.join(path, name), values.astype(np.float32))
    cases.append((path, 1, "relative noise of 2e-3 under the f32 bounds"))
    cases.append((path, 0, "relative noise of 2e-3 under the bf16 bounds (--tolerance bf16)"))
    return cases


def check_dump(script, dump, work, label, corrupt=True):
    expect(script, [dump], 0, f"{label}: the other formulation's dump passes")
    text = expect(script, [dump, "--self-check-negative"], 0, f"{label}: every negative control fails the comparison")
    for line in text.splitlines():
        if line.startswith(("PASS negative", "FAIL negative", "SKIP negative")):
            print("    " + line)
    if corrupt:
        for path, status, what in corrupted_dumps(dump, work):
            extra = ["--tolerance", "bf16"] if "bf16 bounds" in what else []
            expect(script, [path] + extra, status, f"{label}: {what} -> exit {status}")


def check_readback(folder, expected, stem, bin_name, dtype, label):
    """The folder's weights, read back by clip_common, equal the generator's tensors cast to the
    stored dtype, name for name (a written folder reads back)."""
    tensors, source = C.read_weights(folder, stem, bin_name)
    expected = C.cast_weights(expected, dtype)
    names_ok = list(sorted(tensors)) == list(sorted(expected))
    values_ok = names_ok and all(tensors[n].dtype == expected[n].dtype and torch.equal(tensors[n], expected[n]) for n in expected)
    check(names_ok and values_ok, f"{label}: {source} reads back",
          f"{len(tensors)} tensors, {'same' if values_ok else 'DIFFERENT'} names, dtypes and values"
          + ("" if names_ok else f"; extra {sorted(set(tensors) - set(expected))[:3]}, missing {sorted(set(expected) - set(tensors))[:3]}"))


# ---------------------------------------------------------------------------------------------
# Families.

def family_clip(size, work):
    images = make_images(os.path.join(work, "images"), size, 1)
    runs = [("clip", "f32", "safetensors", 11), ("clip-new", "bf16", "sharded", 12), ("clip-laion", "f16", "bin", 13)]
    if size == "base":
        runs = [("clip", "f32", "safetensors", 11)]
    for variant, dtype, weight_format, seed in runs:
        folder = os.path.join(work, f"{variant}_{dtype}_{weight_format}")
        subprocess.run([sys.executable, os.path.join(HERE, "clip_write.py"), variant, size, folder, "--seed", str(seed),
                        "--dtype", dtype, "--format", weight_format], check=True)
        model = clip_reference.load(folder)
        t, v = model.text, model.vision
        flavour = clip_write.VARIANTS[variant]
        check_readback(folder, clip_write.clip_weights(t, v, model.projection_dim, seed, flavour["position_ids"]),
                       "model", "pytorch_model.bin", dtype, variant)
        vocabulary = C.tokenizer_vocabulary(folder)
        start = vocabulary["<|startoftext|>"] if vocabulary else t["vocab_size"] - 2
        end = vocabulary["<|endoftext|>"] if vocabulary else t["vocab_size"] - 1
        if flavour["legacy_eos"]:
            check(t["eos_token_id"] == 2, f"{variant}: legacy eos_token_id", str(t["eos_token_id"]))
        else:
            check(t["eos_token_id"] == end and t["hidden_act"] == "quick_gelu", f"{variant}: eos_token_id and default hidden_act",
                  f"{t['eos_token_id']} (<|endoftext|> {end}), {t['hidden_act']}")
        ids = clip_ids(t["vocab_size"], start, end, seed, few=size == "base")
        # The dump comes from OpenCLIP's formulation (hand-written) on the same weights, renamed.
        tensors, _ = C.read_weights(folder, "model", "pytorch_model.bin")
        other = openclip_reference.Model(folder, tensors=clip_write.to_openclip(tensors, t, v), config=hf_to_openclip_config(model))
        dump = os.path.join(work, f"dump_{variant}")
        write_dump_from(other, folder, dump, images, ids, preprocess_model=model)
        check_formulations(model, other, images, ids, f"{variant} {size}")
        check_dump("clip", dump, os.path.join(work, f"corrupt_{variant}"), f"{variant} {size} {dtype} {weight_format}",
                   corrupt=(variant == "clip" and size == "tiny"))
        if flavour["open_clip"]:
            # Both layouts in one folder: OpenCLIP's files and preprocessing make the dump, the
            # transformers files and CLIPImageProcessor check it (pictures of image_size square,
            # which both processors leave as they are), and the other way round.
            squares = square_images(os.path.join(work, "squares"), v["image_size"], 4)
            opened = openclip_reference.load(folder)
            dump = os.path.join(work, "dump_laion_openclip")
            write_dump_from(opened, folder, dump, squares, ids)
            expect("clip", [dump], 0, f"{variant}: OpenCLIP files' dump checked through the transformers files")
            dump = os.path.join(work, "dump_laion_hf")
            write_dump_from(model, folder, dump, squares, ids)
            expect("openclip", [dump], 0, f"{variant}: transformers files' dump checked through the OpenCLIP files")


def family_openclip(size, work):
    images = make_images(os.path.join(work, "images"), size, 2)
    runs = [("openclip", "f32", "safetensors", 21), ("openclip-laion", "bf16", "bin", 22), ("openclip-ls", "f16", "safetensors", 23)]
    if size == "base":
        runs = [("openclip", "f32", "safetensors", 21)]
    for variant, dtype, weight_format, seed in runs:
        folder = os.path.join(work, f"{variant}_{dtype}_{weight_format}")
        subprocess.run([sys.executable, os.path.join(HERE, "openclip_write.py"), variant, size, folder, "--seed", str(seed),
                        "--dtype", dtype, "--format", weight_format], check=True)
        model = openclip_reference.load(folder)
        text, vision = clip_write.sizes(size, model.text_cfg["vocab_size"])[:2]
        flavour = openclip_write.VARIANTS[variant]
        hf = clip_write.clip_weights(text, vision, model.embed_dim, seed, position_ids=False)
        check_readback(folder, clip_write.to_openclip(hf, text, vision, flavour["layer_scale"], seed),
                       "open_clip_model", "open_clip_pytorch_model.bin", dtype, variant)
        vocabulary = C.tokenizer_vocabulary(folder)
        start = vocabulary["<|startoftext|>"] if vocabulary else text["vocab_size"] - 2
        end = vocabulary["<|endoftext|>"] if vocabulary else text["vocab_size"] - 1
        ids = clip_ids(text["vocab_size"], start, end, seed, few=size == "base")
        # The dump comes from the transformers formulation (torch.nn blocks), LayerScale folded in.
        tensors, _ = C.read_weights(folder, "open_clip_model", "open_clip_pytorch_model.bin")
        hf_tensors, hf_config = openclip_to_hf(tensors, model.config)
        other = clip_reference.Model(folder, tensors=hf_tensors, config=hf_config)
        dump = os.path.join(work, f"dump_{variant}")
        write_dump_from(other, folder, dump, images, ids, preprocess_model=model)
        check_formulations(model, other, images, ids, f"{variant} {size}")
        check_dump("openclip", dump, os.path.join(work, f"corrupt_{variant}"), f"{variant} {size} {dtype} {weight_format}",
                   corrupt=(variant == "openclip" and size == "tiny"))


def family_siglip(size, work):
    images = make_images(os.path.join(work, "images"), size, 3)
    runs = [("f32", "safetensors", 31), ("bf16", "bin", 32), ("f16", "sharded", 33)]
    if size == "base":
        runs = [("f32", "safetensors", 31)]
    for dtype, weight_format, seed in runs:
        folder = os.path.join(work, f"siglip_{dtype}_{weight_format}")
        subprocess.run([sys.executable, os.path.join(HERE, "siglip_write.py"), "siglip", size, folder, "--seed", str(seed),
                        "--dtype", dtype, "--format", weight_format], check=True)
        model = siglip_reference.load(folder)
        check_readback(folder, siglip_write.siglip_weights(model.text, model.vision, seed), "model", "pytorch_model.bin",
                       dtype, f"siglip {dtype}")
        if size == "base":
            config = C.read_json(folder, "config.json")
            check(set(config["vision_config"]) == {"model_type"}, "siglip base: config.json gives only the model_types",
                  json.dumps(config["text_config"]))
        vocabulary = C.tokenizer_vocabulary(folder)
        eos = vocabulary.get(C.special_token(folder, "eos_token") or "</s>", 1) if vocabulary else 1
        pad = vocabulary.get(C.special_token(folder, "pad_token") or "</s>", eos) if vocabulary else 1
        ids = siglip_ids(model.text["vocab_size"], eos, pad, seed, model.text["max_position_embeddings"], few=size == "base")
        other = siglip_reference.Model(folder, formulation="by-hand")
        dump = os.path.join(work, f"dump_siglip_{dtype}")
        write_dump_from(other, folder, dump, images, ids, preprocess_model=model)
        check_formulations(model, other, images, ids, f"siglip {size} {dtype}")
        check_dump("siglip", dump, os.path.join(work, f"corrupt_siglip_{dtype}"), f"siglip {size} {dtype} {weight_format}",
                   corrupt=(dtype == "f32" and size == "tiny"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=["clip", "openclip", "siglip"])
    parser.add_argument("--size", choices=["tiny", "base"], default="tiny")
    parser.add_argument("--work", help="folder for the files, emptied first and kept (default: a temporary one, removed)")
    args = parser.parse_args()
    torch.manual_seed(0)
    started = time.time()
    if args.work:  # the self-test's own folder: emptied, so no file of an earlier run is read
        shutil.rmtree(args.work, ignore_errors=True)
        os.makedirs(args.work)
    work = args.work or tempfile.mkdtemp(prefix=f"published_{args.family}_")
    try:
        {"clip": family_clip, "openclip": family_openclip, "siglip": family_siglip}[args.family](args.size, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{TALLY.passed} passed, {TALLY.failed} failed ({time.time() - started:.1f} s)")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
