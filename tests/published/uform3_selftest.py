"""Self-tests of the UForm 3 writer, reference and comparison; no engine needed (CTest uform3_reference_self).

    /usr/bin/python3 tests/published/uform3_selftest.py [--size tiny|base] [--variants small,large,...]
                                                        [--keep DIR]

For each variant: writes a folder (uform3_write.py, tokenizer from the generators), then checks
- the files are what uform reads: config.json sections with exactly the fields uform's dataclasses and
  processors take, vocab_size and padding_idx from the tokenizer, safetensors headers (dtype, packed
  offsets, 8-byte header), .pt files as torch.save'd OrderedDicts (with state_dict's _metadata) of the
  dtype asked for, nested where asked, and both weight files holding the same values;
- the reference's strict reader accepts them (every name and shape uform's modules have, nothing else);
- the two formulations of uform3_reference.py agree in float64 (texts of several lengths, one longer
  than max_position_embeddings, so sliced; random pixels);
- uform3_compare.py on an example dump written by the written-out formulation in float32 (standing in
  for the engine, with real image files through the preprocessing) passes, its negative controls all
  fail, and corrupted copies of the dump (one value nudged by 1e-3 relative, a state row dropped, a NaN, a
  short text's closing token dropped) fail;
- a dump from BF16 products passes under the bf16 tolerance and fails under f32's; once per run, a
  Matryoshka prefix dump passes, and fails when judged with another number of dimensions.
Prints "N passed, N failed"; exit 1 on any failure.
"""

import argparse
import collections
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import uform3_compare as compare  # noqa: E402
import uform3_reference as reference  # noqa: E402
import uform3_write as writer  # noqa: E402

# The fields of uform's TextEncoder / ImageEncoder dataclasses (torch_encoders.py, v3.1) and the keys
# its processors read, as the published config.json files hold them; "tokenizer_class" is in the
# published files though nothing in uform reads it.
TEXT_FIELDS = {"model_type", "dim", "context_dim", "vocab_size", "padding_idx", "num_layers", "num_heads",
               "embedding_dim", "multimodal_layers_ids", "head_one_neuron", "pooling", "max_position_embeddings",
               "dropout_prob", "tokenizer_class"}
IMAGE_FIELDS = {"dim", "patch_size", "image_size", "num_layers", "num_heads", "embedding_dim", "pooling",
                "normalization_means", "normalization_deviations"}

# Variant -> (format, dtype, extra writer arguments): every weight format and dtype, and the two
# unpublished options, somewhere.
CASES = {
    "small": ("both", "bf16", {}),
    "base": ("safetensors", "f32", {}),
    "large": ("pt", "bf16", {}),
    "multilingual": ("pt-nested", "f16", {}),
    "small-roberta": ("safetensors", "bf16", {"text_model_type": "roberta", "image_pooling": "mean"}),
}
SAFETENSORS_CODES = {"bf16": "BF16", "f16": "F16", "f32": "F32"}
TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}")
        return condition


def safetensors_header(path):
    with open(path, "rb") as stream:
        (length,) = struct.unpack("<Q", stream.read(8))
        header = json.loads(stream.read(length))
        stream.seek(0, os.SEEK_END)
        return length, header, stream.tell() - 8 - length


def check_files(checks, folder, variant, size, weight_format, dtype, options):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as stream:
        config = json.load(stream)
    text, image = config["text_encoder"], config["image_encoder"]
    checks.check(set(config) == {"text_encoder", "image_encoder"}, f"{variant}: config sections {sorted(config)}")
    checks.check(set(text) == TEXT_FIELDS, f"{variant}: text fields {sorted(set(text) ^ TEXT_FIELDS)} differ")
    expected_image = IMAGE_FIELDS | ({"num_reg_tokens"} if "num_reg_tokens" in image else set())
    checks.check(set(image) == expected_image, f"{variant}: image fields {sorted(set(image) ^ expected_image)} differ")
    vocabulary, tokens = writer.tokenizer_vocabulary(os.path.join(folder, "tokenizer.json"))
    if size == "tiny":
        checks.check(text["vocab_size"] == vocabulary, f"{variant}: vocab_size {text['vocab_size']} != tokenizer's {vocabulary}")
    else:  # the published table size, or the tokenizer's where that is larger
        published = writer.PUBLISHED[variant.split("-")[0]]["text_encoder"]["vocab_size"]
        checks.check(text["vocab_size"] == max(vocabulary, published),
                     f"{variant}: vocab_size {text['vocab_size']}, tokenizer's {vocabulary}, published {published}")
    pad = next((tokens[token] for token in ("[PAD]", "<pad>") if token in tokens), None)
    checks.check(text["padding_idx"] == pad, f"{variant}: padding_idx {text['padding_idx']} != the pad token's {pad}")
    if options.get("text_model_type"):
        checks.check(text["model_type"] == options["text_model_type"], f"{variant}: model_type {text['model_type']}")
    for encoder in ("text_encoder", "image_encoder"):
        st_path, pt_path = (os.path.join(folder, encoder + suffix) for suffix in (".safetensors", ".pt"))
        wants_st = weight_format in ("safetensors", "both")
        wants_pt = weight_format in ("pt", "pt-nested", "both")
        checks.check(os.path.exists(st_path) == wants_st, f"{variant}: {encoder}.safetensors presence")
        checks.check(os.path.exists(pt_path) == wants_pt, f"{variant}: {encoder}.pt presence")
        if wants_st:
            length, header, data = safetensors_header(st_path)
            checks.check(length % 8 == 0, f"{variant}: {encoder}.safetensors header length {length}")
            checks.check(header.get("__metadata__") == {"format": "pt"}, f"{variant}: {encoder} metadata")
            entries = sorted((entry["data_offsets"], entry["dtype"]) for name, entry in header.items() if name != "__metadata__")
            end = 0
            for (begin, stop), code in entries:
                checks.check(begin == end and code == SAFETENSORS_CODES[dtype],
                             f"{variant}: {encoder}.safetensors entry at {begin} ({code}) after {end}")
                end = stop
            checks.check(end == data, f"{variant}: {encoder}.safetensors data ends at {end}, file holds {data}")
        if wants_pt:
            state = torch.load(pt_path, map_location="cpu")
            if weight_format == "pt-nested":
                checks.check(set(state) == {encoder}, f"{variant}: nested {encoder}.pt keys {list(state)[:3]}")
                state = state.get(encoder, {})
            checks.check(type(state) is collections.OrderedDict, f"{variant}: {encoder}.pt holds {type(state).__name__}")
            checks.check(getattr(state, "_metadata", {}).get("", None) == {"version": 1},
                         f"{variant}: {encoder}.pt lacks state_dict's _metadata")
            checks.check(all(value.dtype == TORCH_DTYPES[dtype] for value in state.values()),
                         f"{variant}: {encoder}.pt dtypes {sorted({str(v.dtype) for v in state.values()})}")
        if wants_st and wants_pt:
            a, b = reference.read_safetensors(st_path), reference.read_pt(pt_path, encoder)
            checks.check(list(a) == list(b) and all(torch.equal(a[name], b[name]) for name in a),
                         f"{variant}: {encoder}.safetensors and .pt differ")
    return config


def special_ids(folder):
    """(first id, last id, every added token's id) from the tokenizer.json's added_tokens."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as stream:
        added = {entry["content"]: entry["id"] for entry in json.load(stream).get("added_tokens", [])}
    first = added.get("[CLS]", added.get("<s>"))
    last = added.get("[SEP]", added.get("</s>"))
    return first, last, set(added.values())


def random_ids(folder, config, generator):
    """Token ids as a tokenizer gives them: first/last specials around ordinary ids; lengths 1 short,
    typical, exactly max_position_embeddings, and longer (sliced by the reference like uform)."""
    first, last, specials = special_ids(folder)
    text = config["text_encoder"]
    ordinary = torch.tensor([i for i in range(text["vocab_size"]) if i not in specials])
    limit, longer = text["max_position_embeddings"], 9
    if text["model_type"] == "roberta":  # uform's roberta positions run past the table beyond this
        limit, longer = limit - text["padding_idx"] - 1, None
    lists = []
    for count in (0, 5, 17, limit - 2) + ((limit + longer,) if longer else ()):
        body = ordinary[torch.randint(len(ordinary), (count,), generator=generator)].tolist()
        lists.append([first] + body + [last])
    return lists


def write_images(directory, generator):
    """Picture files of several sizes and modes (noise over gradients), as the engine would get them."""
    from PIL import Image
    os.makedirs(directory, exist_ok=True)
    paths = []
    for index, (width, height, mode) in enumerate(((300, 200, "RGB"), (181, 257, "L"), (224, 224, "RGB"),
                                                   (97, 131, "RGBA"))):
        y, x = np.mgrid[0:height, 0:width]
        base = np.stack([x * 255 / width, y * 255 / height, (x + y) * 127 / (width + height)], axis=-1)
        noise = torch.randint(0, 64, (height, width, 3), generator=generator).numpy()
        pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
        picture = Image.fromarray(pixels, "RGB").convert(mode)
        path = os.path.join(directory, f"picture{index}.png")
        picture.save(path)
        paths.append(path)
    return paths


def write_dump(dump, folder_path, ids, images, compute="f32", dimensions=0):
    """An example dump from the written-out formulation in float32 (BF16 products for compute bf16)."""
    os.makedirs(dump, exist_ok=True)
    folder = reference.Folder(folder_path)
    bf16 = compute == "bf16"
    texts = reference.explicit_text(folder, ids, torch.float32, bf16)
    pixels = torch.stack([reference.preprocess(path, folder.image) for path in images])
    pictures = reference.explicit_image(folder, pixels, torch.float32, bf16)
    kept = [sequence[:folder.text["max_position_embeddings"]] for sequence in ids]
    meta = {"folder": os.path.abspath(folder_path), "compute": compute, "texts": [f"text {i}" for i in range(len(ids))],
            "images": [os.path.abspath(path) for path in images]}
    if dimensions:
        meta["dimensions"] = dimensions
    with open(os.path.join(dump, "meta.json"), "w", encoding="utf-8") as stream:
        json.dump(meta, stream)
    with open(os.path.join(dump, "text_ids.json"), "w", encoding="utf-8") as stream:
        json.dump(kept, stream)
    for modality, results in (("text", texts), ("image", pictures)):
        embeddings = torch.stack([reference.normalise(vector, dimensions) for _, vector in results])
        np.save(os.path.join(dump, f"{modality}_embeddings.npy"), embeddings.numpy().astype(np.float32))
        np.save(os.path.join(dump, f"{modality}_states.npy"), torch.cat([rows for rows, _ in results]).numpy().astype(np.float32))
        offsets = np.cumsum([0] + [rows.shape[0] for rows, _ in results]).astype(np.int64)
        np.save(os.path.join(dump, f"{modality}_offsets.npy"), offsets)


def quietly(function, *args, **kwargs):
    """Runs FUNCTION with its prints swallowed; returns its result and the text it printed."""
    import contextlib
    import io
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = function(*args, **kwargs)
    return result, buffer.getvalue()


def check_variant(checks, name, size, scratch, generator, extras):
    weight_format, dtype, options = CASES[name]
    variant = name.split("-")[0]
    folder = os.path.join(scratch, name)
    tokenizer = None
    if extras.get("tokenizers"):
        kind = writer.PUBLISHED[variant]["text_encoder"]["tokenizer_class"]
        tokenizer = os.path.join(extras["tokenizers"], kind + ".json")
    writer.write_folder(variant, size, folder, seed=7, dtype_name=dtype, weight_format=weight_format,
                        tokenizer_json=tokenizer, **options)
    config = check_files(checks, folder, name, size, weight_format, dtype, options)
    try:
        loaded = reference.Folder(folder)
    except (KeyError, ValueError) as error:
        checks.check(False, f"{name}: the reference's strict reader refuses the folder: {error}")
        return
    checks.check(True, f"{name}: strict read")

    ids = random_ids(folder, config, generator)
    pixels = torch.randn(2, 3, config["image_encoder"]["image_size"], config["image_encoder"]["image_size"],
                         generator=generator)
    for what, ours, theirs in (("text", reference.encode_texts(loaded, ids), reference.explicit_text(loaded, ids)),
                               ("image", reference.encode_images(loaded, pixels), reference.explicit_image(loaded, pixels))):
        worst = max(float((a - b).abs().max() / b.abs().max()) for pair_a, pair_b in zip(ours, theirs)
                    for a, b in zip(pair_a, pair_b))
        checks.check(worst < 1e-9, f"{name}: the two {what} formulations differ by {worst:.3e}")

    if "images" not in extras:  # one set of picture files for every variant
        extras["images"] = write_images(os.path.join(scratch, "pictures"), generator)
        if reference._published_processor() is not None:  # two transcriptions of uform's ImageProcessor
            for path in extras["images"]:
                ours = reference.preprocess(path, loaded.image, processor="torchvision")
                theirs = reference.preprocess(path, loaded.image)
                checks.check(torch.equal(ours, theirs), f"published_processors' UForm 3 pixels differ for {path}: "
                             f"{float((ours - theirs).abs().max()):.3e}")
        else:
            print("NOTE tests/reference/published_processors.py is not in the tree: torchvision pipeline used")
    images = extras["images"]
    dump = os.path.join(scratch, name + "_dump")
    write_dump(dump, folder, ids, images)
    judge = compare.compare(dump, quiet=True)
    checks.check(judge.failures == 0 and judge.passes == 4,
                 f"{name}: compare on the f32 stand-in dump: {judge.passes} passed, {judge.failures} failed\n"
                 + "\n".join(judge.lines))
    status, printed = quietly(compare.negative_controls, dump)
    checks.check(status == 0, f"{name}: negative controls:\n{printed}")

    for corruption in ("nudge", "drop-row", "nan", "unframed"):
        broken = dump + "_" + corruption
        shutil.copytree(dump, broken)
        if corruption == "nudge":  # one embedding value off by 1e-3 of the row's largest
            values = np.load(os.path.join(broken, "image_embeddings.npy"))
            values[1, 3] += 1e-3 * np.abs(values[1]).max()
            np.save(os.path.join(broken, "image_embeddings.npy"), values)
        elif corruption == "unframed":  # a short text's closing token dropped (ids and states)
            with open(os.path.join(broken, "text_ids.json"), encoding="utf-8") as stream:
                kept = json.load(stream)
            kept[1] = kept[1][:-1]
            with open(os.path.join(broken, "text_ids.json"), "w", encoding="utf-8") as stream:
                json.dump(kept, stream)
        elif corruption == "nan":  # one state value not a number
            states = np.load(os.path.join(broken, "image_states.npy"))
            states[5, 2] = np.nan
            np.save(os.path.join(broken, "image_states.npy"), states)
        else:  # the last text's final state row missing, offsets adjusted
            states = np.load(os.path.join(broken, "text_states.npy"))[:-1]
            offsets = np.load(os.path.join(broken, "text_offsets.npy"))
            offsets[-1] -= 1
            np.save(os.path.join(broken, "text_states.npy"), states)
            np.save(os.path.join(broken, "text_offsets.npy"), offsets)
        judge = compare.compare(broken, quiet=True)
        checks.check(judge.failures > 0, f"{name}: the {corruption} corruption passes:\n" + "\n".join(judge.lines))
        if corruption == "unframed":
            checks.check(any("not framed" in line for line in judge.lines),
                         f"{name}: the unframed ids are not reported as such:\n" + "\n".join(judge.lines))

    bf16_dump = os.path.join(scratch, name + "_dump_bf16")
    write_dump(bf16_dump, folder, ids, images, compute="bf16")
    judge = compare.compare(bf16_dump, quiet=True)
    checks.check(judge.failures == 0 and judge.passes == 4,
                 f"{name}: bf16 stand-in under the bf16 tolerance:\n" + "\n".join(judge.lines))
    judge = compare.compare(bf16_dump, tolerance="f32", quiet=True)
    checks.check(judge.failures > 0, f"{name}: bf16 stand-in also passes the f32 tolerance (no BF16 error?)")
    if not extras.get("once"):
        extras["once"] = True
        prefix_dump = os.path.join(scratch, name + "_dump_prefix")
        dimensions = 64  # the smallest prefix the cards name
        write_dump(prefix_dump, folder, ids, images, dimensions=dimensions)
        judge = compare.compare(prefix_dump, quiet=True)
        checks.check(judge.failures == 0 and judge.passes == 4,
                     f"{name}: {dimensions}-dimension prefix dump:\n" + "\n".join(judge.lines))
        judge = compare.compare(prefix_dump, dimensions=dimensions + 1, quiet=True)
        checks.check(judge.failures > 0, f"{name}: a prefix dump judged with other dimensions passes")


def stub_tokenizers(directory):
    """Vocabulary-only stand-ins (bert.json, unigram.json) for the tokenizer generators of tests/text,
    used only while those are missing: the writer reads nothing but model.vocab and added_tokens, and
    the dumps here hold ids, not texts. The ids follow BERT's ([PAD] 0, [CLS] 101, [SEP] 102) and
    XLM-R's (<s> 0, <pad> 1, </s> 2) conventions."""
    os.makedirs(directory, exist_ok=True)
    vocab = {"[PAD]": 0, **{f"[unused{i}]": i for i in range(1, 100)}, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102,
             "[MASK]": 103, **{f"piece{i}": i for i in range(104, 1200)}}
    added = [{"id": vocab[token], "content": token, "special": True}
             for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    with open(os.path.join(directory, "bert.json"), "w", encoding="utf-8") as stream:
        json.dump({"version": "1.0", "added_tokens": added, "model": {"type": "WordPiece", "vocab": vocab}}, stream)
    pieces = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    pieces += [[f"piece{i}", -1.0 - i / 100] for i in range(4, 900)] + [["<mask>", 0.0]]
    added = [{"id": index, "content": piece, "special": True} for index, (piece, _) in enumerate(pieces)
             if piece.startswith("<")]
    with open(os.path.join(directory, "unigram.json"), "w", encoding="utf-8") as stream:
        json.dump({"version": "1.0", "added_tokens": added, "model": {"type": "Unigram", "vocab": pieces}}, stream)
    return directory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=["tiny", "base"], default="tiny")
    parser.add_argument("--variants", default=",".join(CASES))
    parser.add_argument("--keep", help="write the folders and dumps here and keep them")
    parser.add_argument("--tokenizers", help="a folder with bert.json and unigram.json to use instead of the "
                        "tokenizer generators of tests/text")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(5)
    checks, extras = Checks(), {"tokenizers": args.tokenizers}
    scratch = args.keep or tempfile.mkdtemp(prefix="uform3_selftest_")
    try:
        generators = [os.path.join(writer.ROOT, "tests", "text", script) for script, _ in writer.TOKENIZER_KIND.values()]
        if not args.tokenizers and not all(os.path.exists(path) for path in generators):
            print("NOTE the tokenizer generators of tests/text are not all in the tree: vocabulary-only stand-ins used")
            extras["tokenizers"] = stub_tokenizers(os.path.join(scratch, "tokenizers"))
        for name in args.variants.split(","):
            started = time.time()
            before = checks.failed
            check_variant(checks, name, args.size, scratch, generator, extras)
            print(f"{'ok  ' if checks.failed == before else 'FAIL'} {name} {args.size}: {time.time() - started:.1f} s")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
