"""Self-test of the BERT-family writer, reference and comparison, without the C engine.

    /usr/bin/python3 tests/published/bert_selftest.py WORK_FOLDER [--size tiny|base] [--variant NAME]...

For every variant (several weight formats, dtypes and pooling modes among them) it:
1. writes the folder with bert_write.py, and the same folder in float32 safetensors; every encoder
   tensor read back from the first (safetensors / sharded / torch.save zip / legacy pickle, F32 / F16 /
   BF16, BertModel or BertForMaskedLM names) must equal the float32 one rounded to the dtype;
2. makes an engine-like dump (meta.json, text_ids.json, states, offsets, embeddings) with the OTHER
   formulation (bert_reference.HandWritten: transformers' modeling_bert spelled out) in float32, and
   bert_compare.py (torch.nn.TransformerEncoderLayer, float64) must pass it at the f32 tolerance;
3. runs bert_compare's negative controls on that dump: each perturbation must fail;
4. damages the dump (two state rows swapped, one text's last id dropped, 1e-3 noise on the
   embeddings) and the comparison must fail, except the noise under the bf16 tolerance, which must pass.
Tokenizer files come from tests/text/make_tokenizers.py / sp_make_models.py when they exist (each
kind generated once, then copied); without them the folders have none and the ids are random.
One line per check, then "N passed, N failed"; the exit status is 1 when any failed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bert_compare as C  # noqa: E402
import bert_reference as R  # noqa: E402
import bert_write as W  # noqa: E402

# (case name, variant, format, dtype, extra writer arguments, plain pooling)
CASES = (
    ("minilm", "minilm", "safetensors", "f32", {}, None),
    ("bert-cls-sharded-bf16", "bert-cls", "sharded", "bf16", {}, None),
    ("bert-base-bin-f16", "bert-base", "bin", "f16", {}, None),
    ("dense-max", "dense", "safetensors", "f32", {}, None),
    ("dense-mean-sqrt-bin", "dense", "bin", "f32", {"pooling": "mean_sqrt_len_tokens"}, None),
    ("dense-cls-mean-gelu-new", "dense", "sharded", "f32", {"pooling": "cls+mean", "hidden_act": "gelu_new"}, None),
    ("roberta", "roberta", "safetensors", "f32", {}, None),
    ("roberta-relu-legacy", "roberta", "bin-legacy", "f32", {"hidden_act": "relu"}, None),
    ("xlm-roberta-bf16", "xlm-roberta", "safetensors", "bf16", {}, None),
    ("multilingual-minilm", "multilingual-minilm", "bin", "f32", {}, None),
    ("plain-mean", "plain", "safetensors", "f32", {}, "mean"),
    ("plain-cls-legacy", "plain", "bin-legacy", "f32", {}, "cls"),
    ("plain-pooler-bin", "plain", "bin", "f32", {}, "pooler"),
)


def tokenizer_cache(work, variant):
    """A folder with the generator's files for the variant's tokenizer kind, or "none" when the
    generator is not in the tree yet."""
    script, kind = W.VARIANTS[variant]["tokenizer"]
    if not os.path.exists(os.path.join(W.TEXT_TESTS, script + ".py")):
        return "none"
    folder = os.path.join(work, "tokenizers", kind)
    if not os.path.exists(os.path.join(folder, "tokenizer.json")):
        os.makedirs(folder, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(W.TEXT_TESTS, script + ".py"), kind, folder, "--seed", "1"],
                       check=True, stdout=subprocess.DEVNULL)
    return folder


def random_ids(pipeline, folder, generator, lengths):
    """Id lists of the given lengths: the tokenizer's first and last specials around random ids,
    never the padding id, except one literal padding id inside the third text of a RoBERTa-style
    model (a "<pad>" typed in the text: attended, yet at position padding_idx upstream)."""
    vocabulary = int(pipeline.config["vocab_size"])
    first, last = [0], [min(2, vocabulary - 1)]
    specials = R.tokenizer_specials(folder)
    if specials is not None:
        first, last = specials
    elif os.path.exists(os.path.join(folder, "tokenizer.json")):
        _, named = W._tokenizer_vocabulary(os.path.join(folder, "tokenizer.json"))
        first = [named.get("[CLS]", named.get("<s>", first[0]))]
        last = [named.get("[SEP]", named.get("</s>", last[0]))]
    pad = pipeline.padding_id()
    lists = []
    for n, length in enumerate(lengths):
        body = [int(i) for i in generator.integers(3, vocabulary, length - len(first) - len(last))]
        body = [i + 1 if i == pad else i for i in body]
        if n == 2 and pipeline.encoder.model_type != "bert" and len(body) > 2:
            body[len(body) // 2] = pad
        lists.append(first + body + last)
    return lists


def make_dump(dump, folder, id_lists, plain_pooling):
    """The dump an F32 engine would write, made by the hand-written formulation in float32."""
    os.makedirs(dump, exist_ok=True)
    pipeline = R.Pipeline(folder, dtype=torch.float32, plain_pooling=plain_pooling or "mean")
    states = R.HandWritten(pipeline.encoder).states(id_lists, pipeline.padding_id())
    embeddings = pipeline.embeddings(states)
    meta = {"folder": os.path.abspath(folder), "compute": "f32", "texts": [f"text {i}" for i in range(len(id_lists))],
            "images": []}
    if plain_pooling:
        meta["pooling"] = plain_pooling
    with open(os.path.join(dump, "meta.json"), "w") as handle:
        json.dump(meta, handle)
    with open(os.path.join(dump, "text_ids.json"), "w") as handle:
        json.dump(id_lists, handle)
    np.save(os.path.join(dump, "text_states.npy"), torch.cat(states).numpy().astype(np.float32))
    np.save(os.path.join(dump, "text_offsets.npy"), np.concatenate([[0], np.cumsum([len(i) for i in id_lists])]).astype(np.int64))
    np.save(os.path.join(dump, "text_embeddings.npy"), embeddings.numpy().astype(np.float32))


def rounded(tensor, dtype):
    return tensor.float().to(W.DTYPES[dtype][1]).double()


def check_readback(tally, name, folder, f32_folder, dtype):
    tensors = R.encoder_tensors(R.read_weights(folder)[0])
    expected = R.encoder_tensors(R.read_weights(f32_folder)[0])
    problems = []
    if set(tensors) != set(expected):
        problems.append(f"names differ: {sorted(set(tensors) ^ set(expected))[:4]}")
    for key in sorted(set(tensors) & set(expected)):
        a, b = tensors[key], expected[key]
        if list(a.shape) != list(b.shape):
            problems.append(f"{key}: {list(a.shape)} vs {list(b.shape)}")
        elif a.is_floating_point() and not torch.equal(a.double(), rounded(b, dtype)):
            problems.append(f"{key}: values differ from the float32 file rounded to {dtype}")
    for dense in ("2_Dense",):
        if os.path.isdir(os.path.join(folder, dense)):
            a = R.read_weights(os.path.join(folder, dense))[0]
            b = R.read_weights(os.path.join(f32_folder, dense))[0]
            if any(not torch.equal(a[k].double(), rounded(b[k], dtype)) for k in b):
                problems.append(f"{dense}: values differ")
    tally.record(not problems, f"{name}: weights read back", "; ".join(problems[:4]) or
                 f"{len(tensors)} encoder tensors equal the float32 folder's rounded to {dtype}")


def damaged(tally, name, dump, plain_pooling):
    """Copies of the dump with one thing wrong must fail (the noise under bf16 must pass)."""
    meta, ids, arrays = C.load_dump(dump)
    pipeline = R.Pipeline(meta["folder"], plain_pooling=meta.get("pooling", plain_pooling or "mean"))
    bad, cache = dump + "-damaged", {}

    def variant(change):
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(dump, bad)
        change()
        return C.compare(bad, quiet=True, pipeline=pipeline, cache=cache)

    def swap_rows():
        states = arrays["text_states"].copy()
        states[[1, 2]] = states[[2, 1]]
        np.save(os.path.join(bad, "text_states.npy"), states)

    def drop_last_id():
        shorter = [list(item) for item in ids]
        shorter[-1] = shorter[-1][:-1]
        with open(os.path.join(bad, "text_ids.json"), "w") as handle:
            json.dump(shorter, handle)

    def noise():
        generator = np.random.default_rng(5)
        embeddings = arrays["text_embeddings"]
        noisy = embeddings + 1e-3 * np.abs(embeddings).max(axis=1, keepdims=True) * generator.standard_normal(embeddings.shape)
        np.save(os.path.join(bad, "text_embeddings.npy"), (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32))

    for label, change in (("two state rows swapped", swap_rows), ("last id dropped", drop_last_id),
                          ("1e-3 noise on the embeddings", noise)):
        result = variant(change)
        tally.record(result.failed > 0, f"{name}: damaged dump ({label}) fails",
                     f"{result.failed} of {result.passed + result.failed} checks fail")
    meta["compute"] = "bf16"
    result = variant(lambda: (noise(), json.dump(meta, open(os.path.join(bad, "meta.json"), "w"))))
    tally.record(result.failed == 0, f"{name}: 1e-3 noise passes the bf16 tolerance",
                 f"{result.failed} of {result.passed + result.failed} checks fail")
    shutil.rmtree(bad, ignore_errors=True)


def formulations_agree(tally, name, pipeline, id_lists):
    """The two formulations in float64 agree to rounding (1e-10 relative)."""
    a = torch.cat(R.LayerStack(pipeline.encoder).states(id_lists, pipeline.padding_id()))
    b = torch.cat(R.HandWritten(pipeline.encoder).states(id_lists, pipeline.padding_id()))
    relative = float((a - b).abs().max() / b.abs().max())
    tally.record(relative < 1e-10, f"{name}: nn.TransformerEncoderLayer and hand-written BERT agree in float64",
                 f"max|a-b|/max|b| {relative:.3g}")


def spec_checks(tally, work):
    """The reference's rules against values worked out by hand from the upstream code."""
    # RoBERTa positions: padding_idx + cumsum(id != pad), pad ids keep padding_idx.
    encoder = R.Encoder.__new__(R.Encoder)
    encoder.model_type, encoder.padding_idx = "roberta", 1
    got = encoder.position_ids(torch.tensor([[0, 5, 1, 6, 2, 1, 1]])).tolist()
    tally.record(got == [[2, 3, 1, 4, 5, 1, 1]], "spec: RoBERTa positions of [<s> a <pad> b </s> <pad> <pad>]",
                 f"{got}, expected [[2, 3, 1, 4, 5, 1, 1]]")
    encoder.model_type = "bert"
    got = encoder.position_ids(torch.tensor([[101, 5, 0, 102, 0]])).tolist()
    tally.record(got == [[0, 1, 2, 3, 4]], "spec: BERT positions", f"{got}")
    # Pooling modes over the real rows, concatenated as cls, max, mean, mean_sqrt_len, weightedmean, lasttoken.
    rows = torch.tensor([[1.0, -2.0], [3.0, 0.0], [-1.0, 5.0], [1.0, 1.0]], dtype=torch.float64)
    expected = [1.0, -2.0, 3.0, 5.0, 1.0, 1.0, 2.0, 2.0, 0.8, 1.7, 1.0, 1.0]
    got = R.pool([rows], list(reversed(R.POOLING_ORDER)))[0].tolist()
    tally.record(np.allclose(got, expected), "spec: pooling modes and their order", f"{got}, expected {expected}")
    # A pooling config without pooling_mode_mean_tokens means mean (Pooling's argument default).
    folder = os.path.join(work, "spec-pooling")
    shutil.rmtree(folder, ignore_errors=True)
    W.write_folder("minilm", "tiny", folder, tokenizer="none")
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as handle:
        json.dump({"word_embedding_dimension": 64, "pooling_mode_cls_token": True}, handle)
    modes = R.Pipeline(folder).pooling
    tally.record(modes == ["cls", "mean"], "spec: a pooling config without the mean key pools cls + mean",
                 f"{modes}")
    # The three post-processor forms of tokenizer.json.
    forms = (
        {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]},
        {"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "RobertaProcessing",
                                                                     "sep": ["</s>", 2], "cls": ["<s>", 0]}]},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": "</s>", "type_id": 0}}],
         "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                            "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
    )
    results = []
    for form in forms:
        with open(os.path.join(folder, "tokenizer.json"), "w") as handle:
            json.dump({"post_processor": form}, handle)
        results.append(R.tokenizer_specials(folder))
    expected = [([101], [102]), ([0], [2]), ([0], [2])]
    tally.record(results == expected, "spec: the special ids of the three post-processor forms", f"{results}")


def run_case(tally, work, size, case):
    name, variant, layout, dtype, extra, plain_pooling = case
    started = time.time()
    tokenizer = tokenizer_cache(work, variant)
    folder, f32_folder = os.path.join(work, name), os.path.join(work, name + "-f32")
    for path, (kind, precision) in ((folder, (layout, dtype)), (f32_folder, ("safetensors", "f32"))):
        shutil.rmtree(path, ignore_errors=True)
        W.write_folder(variant, size, path, seed=11, dtype=precision, layout=kind, tokenizer=tokenizer, **extra)
    check_readback(tally, name, folder, f32_folder, dtype)
    pipeline = R.Pipeline(folder, plain_pooling=plain_pooling or "mean")
    generator = np.random.default_rng(7)
    lengths = [2, 9, 17, 33, 5]
    if size == "tiny" and name in ("minilm", "roberta", "multilingual-minilm"):
        lengths.append(pipeline.max_seq_length)  # the longest text the folder allows
    id_lists = random_ids(pipeline, folder, generator, lengths)
    if name in ("minilm", "roberta"):
        formulations_agree(tally, name, pipeline, id_lists)
    dump = os.path.join(work, name + "-dump")
    make_dump(dump, folder, id_lists, plain_pooling)
    result = C.compare(dump, quiet=True, pipeline=pipeline)
    tally.record(result.failed == 0 and result.passed >= 3, f"{name}: the reference passes the hand-written dump",
                 f"{result.passed} passed, {result.failed} failed")
    if result.failed:
        C.compare(dump, pipeline=pipeline)  # again, printing every line
    negative = C.self_check_negative(dump)
    tally.record(negative.failed == 0 and negative.passed >= 4, f"{name}: every negative control fails",
                 f"{negative.passed} perturbations caught, {negative.failed} missed")
    damaged(tally, name, dump, plain_pooling)
    print(f"     {name}: {time.time() - started:.1f} s", flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work")
    parser.add_argument("--size", choices=("tiny", "base"), default="tiny")
    parser.add_argument("--case", action="append", help="run only these cases (names in CASES)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    tally = C.Tally()
    if not args.case:
        spec_checks(tally, args.work)
    for case in CASES:
        if args.case and case[0] not in args.case:
            continue
        run_case(tally, args.work, args.size, case)
    if not os.path.exists(os.path.join(W.TEXT_TESTS, "make_tokenizers.py")):
        print("NOTE tests/text/make_tokenizers.py is not in the tree: folders were written without tokenizer files")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed or not tally.passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
