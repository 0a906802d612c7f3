"""One parity check of a published-checkpoint family, end to end.

    run_parity.py DUMPER FAMILY VARIANT SIZE WORK [--compute f32,bf16,i8] [--classes native,intel_haswell]
                  [--format F] [--dtype D] [--texts N] [--images N] [--negative] [--dimensions N]
                  [--reference-dtype f64|f32]

1. writes a random-weight folder in the published layout with tests/published/<family>_write.py;
2. writes test inputs into WORK: texts of every kind the tokenizers meet (ASCII, accents, CJK,
   emoji, Arabic, control characters, whitespace runs, a very long word, the special tokens written
   out, a text past the length limit) and pictures of odd sizes and aspect ratios (PNG and JPEG,
   drawn by PIL from a fixed seed);
3. runs the engine's dumper (tests/published/published_dump.c) on them, once per compute and CPU
   class asked for (the folder and inputs are written once);
4. runs the family's comparison against its independent PyTorch reference at each compute's
   tolerance, and with --negative its negative control (a deliberately wrong reference must fail);
5. checks that embeddings asked for alone (the engine then prunes its last block to the pooled
   rows) equal the ones computed with the states.
Exits 0 when every step passes; prints what failed otherwise.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = sys.executable

WRITERS = {"bert": "bert_write.py", "clip": "clip_write.py", "openclip": "openclip_write.py",
           "siglip": "siglip_write.py", "uform3": "uform3_write.py"}

TEXTS = [
    "a photo of a cat",
    "A Photo Of Two Dogs, playing in the snow!",
    "naïve café au lait, crème brûlée, Ångström",
    "東京タワーの夜景と富士山",
    "emoji: 😀🐱‍👤👍🏽 and flags 🇯🇵",
    "مرحبا بالعالم",
    "control\x01chars\x07 and\ttabs",
    "   leading, trailing   and    inner   spaces   ",
    "supercalifragilisticexpialidocious" * 6,
    "[CLS] [SEP] <s> </s> <|startoftext|> <|endoftext|> <pad> written out",
    "",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 20),
]

SIZES = [(240, 320), (300, 200), (224, 224), (97, 131), (33, 900), (1, 1)]


def make_inputs(work, texts, images):
    rng = np.random.default_rng(7)
    text_path = os.path.join(work, "texts.txt")
    chosen = (TEXTS * ((texts + len(TEXTS) - 1) // len(TEXTS)))[:texts]
    with open(text_path, "w", encoding="utf-8") as file:
        for text in chosen:
            file.write(text.replace("\\", "\\\\").replace("\n", "\\n") + "\n")
    paths = []
    for i in range(images):
        h, w = SIZES[i % len(SIZES)]
        y, x = np.mgrid[0:h, 0:w]
        pixels = np.stack([x * 255.0 / w, y * 255.0 / h, ((x + y) % 64) * 4.0], -1) + rng.normal(0, 20, (h, w, 3))
        picture = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
        path = os.path.join(work, f"picture{i}.{'png' if i % 2 == 0 else 'jpg'}")
        picture.save(path, **({} if i % 2 == 0 else {"quality": 92}))
        paths.append(path)
    return text_path, paths


def check_pruned(dump):
    """Embeddings asked for alone (the last block then computes only the pooled rows) must equal,
    bit for bit, those computed with the states."""
    ok = True
    for modality in ("text", "image"):
        full = os.path.join(dump, f"{modality}_embeddings.npy")
        alone = os.path.join(dump, f"{modality}_embeddings_alone.npy")
        if not os.path.exists(full):
            continue
        a, b = np.load(full), np.load(alone)
        if a.shape != b.shape or a.shape[0] == 0 or not np.array_equal(a, b):
            worst = float(np.max(np.abs(a - b))) if a.shape == b.shape and a.size else float("nan")
            print(f"FAIL {modality} embeddings alone differ from those computed with the states "
                  f"(shapes {a.shape} {b.shape}, max difference {worst})")
            ok = False
        else:
            print(f"PASS {modality} embeddings alone equal those computed with the states ({a.shape[0]} rows)")
    return ok


def run(command, what, environment=None):
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, env=environment)
    if result.returncode != 0:
        print(f"FAIL {what}: exit status {result.returncode}")
    return result.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumper")
    parser.add_argument("family", choices=sorted(WRITERS))
    parser.add_argument("variant")
    parser.add_argument("size")
    parser.add_argument("work")
    parser.add_argument("--compute", default="f32", help="computes, comma-separated: f32, bf16, i8")
    parser.add_argument("--classes", default="native", help="CPU classes, comma-separated (native: the detected one)")
    parser.add_argument("--reference-dtype", choices=["f64", "f32"],
                        help="the reference's float type, where the family's comparison takes it")
    parser.add_argument("--format")
    parser.add_argument("--dtype")
    parser.add_argument("--texts", type=int, default=len(TEXTS))
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--negative", action="store_true")
    parser.add_argument("--dimensions", type=int, default=0)
    parser.add_argument("--writer-option", action="append", default=[])
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    folder = os.path.join(args.work, "folder")
    write = [PYTHON, os.path.join(HERE, WRITERS[args.family]), args.variant, args.size, folder]
    if args.format:
        write += ["--format", args.format]
    if args.dtype:
        write += ["--dtype", args.dtype]
    write += args.writer_option
    if not run(write, "writing the folder"):
        return 1
    texts, pictures = make_inputs(args.work, args.texts, args.images)
    ok = True
    computes = [c for c in args.compute.split(",") if c]
    classes = [c for c in args.classes.split(",") if c]
    for compute in computes:
        if compute not in ("f32", "bf16", "i8"):
            print(f"FAIL unknown compute {compute}")
            return 1
        for cpu_class in classes:
            dump = os.path.join(args.work, f"dump_{compute}_{cpu_class}")
            command = [args.dumper, folder, dump, "--compute", compute]
            has_tokenizer = os.path.exists(os.path.join(folder, "tokenizer.json")) or \
                any(name.endswith(".model") for name in os.listdir(folder))
            if args.texts and has_tokenizer:
                command += ["--texts", texts]
            if args.images and args.family != "bert":
                command += ["--images"] + pictures
            if args.dimensions:
                command += ["--dimensions", str(args.dimensions)]
            environment = dict(os.environ)
            if cpu_class != "native":
                environment["UFORM_CPU_CLASS"] = cpu_class
            print(f"== {compute} compute, {cpu_class} class", flush=True)
            if not run(command, "the engine's dump", environment):
                ok = False
                continue
            compare = [PYTHON, os.path.join(HERE, f"{args.family}_compare.py"), dump, "--tolerance", compute]
            if args.dimensions and args.family == "uform3":
                compare += ["--dimensions", str(args.dimensions)]
            if args.reference_dtype and args.family in ("clip", "openclip", "siglip"):
                compare += ["--reference-dtype", args.reference_dtype]
            ok = run(compare, "the comparison with the reference") and ok
            if args.negative and compute == computes[0] and cpu_class == classes[0]:
                ok = run(compare[:3] + ["--self-check-negative"], "the negative control") and ok
            ok = check_pruned(dump) and ok
    print("parity", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
