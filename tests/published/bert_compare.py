"""Compares the engine's dump of a BERT-family folder with the independent PyTorch reference.

    /usr/bin/python3 tests/published/bert_compare.py DUMP [--tolerance f32|bf16|i8]
        [--plain-pooling mean|cls|pooler] [--formulation layers|hand] [--self-check-negative]

DUMP holds meta.json {"folder", "compute", "texts", ...}, text_ids.json (the ids the engine fed its
tower, one list per text, without padding), and any of text_embeddings.npy [N, E],
text_states.npy [sum of rows, d] with text_offsets.npy [N + 1]. The folder is read by
bert_reference.py (its own safetensors / torch.load reading), the ids are padded and masked as
the tokenizer's padding=True call does, and:

- states are last_hidden_state's rows (BERT-family towers are post-norm: every block ends with a
  LayerNorm, and nothing is applied after the last one); the engine must keep every row of every
  item (offsets[i + 1] - offsets[i] == len(ids[i]));
- embeddings are SentenceTransformer.encode's (Pooling, Dense modules, L2 normalisation; see
  bert_reference.Pipeline for a folder without modules.json, where meta.json's optional "pooling"
  decides, else --plain-pooling, default mean);
- each row must have cosine >= 0.99999 and max|a - b| / max|b| <= 1e-4 (f32 compute), cosine >=
  0.999 and <= 1e-2 (bf16), cosine >= 0.99 (i8). The tolerance follows meta.json's "compute"
  unless --tolerance says otherwise.
The ids are checked too: within the vocabulary, no longer than the folder's max_seq_length
(sentence_bert_config.json, else the Transformer module's fallback), which a wrong truncation
breaks, and framed by the special tokens of tokenizer.json's post-processor (kept when truncating).

--self-check-negative reruns the comparison with one deliberate mistake in the reference at a time
(ReLU for GELU, no embedding LayerNorm, the other family's positions, padding attended to, the
wrong pooling) and exits 0 only if every applicable one FAILS: a pass that cannot fail proves nothing.
One line per check, then "N passed, N failed"; the exit status is 1 when any failed.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_reference as R  # noqa: E402

TOLERANCES = {"f32": (0.99999, 1e-4), "bf16": (0.999, 1e-2), "i8": (0.99, None)}
PERTURBATIONS = ("activation", "embedding_norm", "positions", "mask", "pooling")


class Tally:
    def __init__(self, quiet=False):
        self.passed = self.failed = 0
        self.quiet = quiet

    def record(self, ok, label, detail=""):
        if not self.quiet:
            print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def _show(vector, at):
    """A few values of a row around position `at`, for a failure message."""
    begin = max(0, min(at - 2, len(vector) - 5))
    return "[" + ", ".join(f"{v:.6g}" for v in vector[begin:begin + 5]) + f"] from column {begin}"


def compare_rows(tally, label, engine, reference, tolerance, offsets=None):
    """Row by row cosine and max|a - b| / max|b|; records one line with the worst row (named as
    text and token when `offsets` [N + 1] says where each text's rows begin)."""
    engine = np.asarray(engine, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if engine.shape != reference.shape:
        tally.record(False, label, f"shape {list(engine.shape)}, reference {list(reference.shape)}")
        return
    if not np.all(np.isfinite(engine)):
        tally.record(False, label, f"{int(np.sum(~np.isfinite(engine)))} non-finite values in the engine's")
        return
    minimum_cosine, maximum_relative = TOLERANCES[tolerance]
    norms = np.linalg.norm(engine, axis=1) * np.linalg.norm(reference, axis=1)
    cosine = np.sum(engine * reference, axis=1) / np.maximum(norms, 1e-300)
    relative = np.max(np.abs(engine - reference), axis=1) / np.maximum(np.max(np.abs(reference), axis=1), 1e-300)
    bad = cosine < minimum_cosine
    if maximum_relative is not None:
        bad |= relative > maximum_relative
    worst = int(np.argmin(cosine)) if not bad.any() else int(np.flatnonzero(bad)[np.argmax(relative[bad])])
    column = int(np.argmax(np.abs(engine[worst] - reference[worst])))
    detail = (f"{engine.shape[0]} rows, worst cosine {cosine.min():.8f} (>= {minimum_cosine}), "
              f"worst max|a-b|/max|b| {relative.max():.3g}"
              + (f" (<= {maximum_relative:g})" if maximum_relative is not None else ""))
    if bad.any():
        where = f"row {worst}"
        if offsets is not None:
            text = int(np.searchsorted(offsets, worst, side="right")) - 1
            where += f" = text {text} token {worst - int(offsets[text])}"
        else:
            where += f" = text {worst}"
        detail += (f"; {int(bad.sum())} rows out, worst {where} (cosine {cosine[worst]:.8f}, relative "
                   f"{relative[worst]:.3g}) column {column}: engine {engine[worst, column]:.8g} reference "
                   f"{reference[worst, column]:.8g}; engine {_show(engine[worst], column)}, "
                   f"reference {_show(reference[worst], column)}")
    tally.record(not bad.any(), label, detail)


def load_dump(dump):
    with open(os.path.join(dump, "meta.json"), encoding="utf-8") as handle:
        meta = json.load(handle)
    with open(os.path.join(dump, "text_ids.json"), encoding="utf-8") as handle:
        ids = json.load(handle)
    arrays = {}
    for name in ("text_embeddings", "text_states", "text_offsets"):
        path = os.path.join(dump, name + ".npy")
        if os.path.exists(path):
            arrays[name] = np.load(path)
    return meta, ids, arrays


def check_ids(tally, pipeline, ids):
    """The ids' structure: items present, in the vocabulary, within max_seq_length."""
    vocabulary = int(pipeline.config["vocab_size"])
    problems = []
    for i, item in enumerate(ids):
        if not item:
            problems.append(f"text {i} has no ids")
        elif min(item) < 0 or max(item) >= vocabulary:
            problems.append(f"text {i}: id {max(item) if max(item) >= vocabulary else min(item)} "
                            f"outside the vocabulary [0, {vocabulary})")
        elif len(item) > pipeline.max_seq_length:
            problems.append(f"text {i}: {len(item)} ids, more than max_seq_length {pipeline.max_seq_length}")
    specials = R.tokenizer_specials(pipeline.folder)
    if specials is not None:
        # Python's tokenizers truncate the content and keep the special tokens.
        before, after = specials
        for i, item in enumerate(ids):
            if len(item) < len(before) + len(after) or item[:len(before)] != before or \
                    item[len(item) - len(after):] != after:
                problems.append(f"text {i}: ids {item[:3]} ... {item[-3:]} do not begin with {before} and end "
                                f"with {after} (tokenizer.json's post-processor)")
    tally.record(not problems and bool(ids), "text ids",
                 "; ".join(problems[:5]) if problems else
                 f"{len(ids)} texts, {sum(map(len, ids))} ids, longest {max(map(len, ids)) if ids else 0}"
                 f" (max_seq_length {pipeline.max_seq_length})")
    return not problems and bool(ids)


def reference_outputs(pipeline, ids, formulation="layers", perturb=None):
    """(list of [n_i, d] float64 states, [N, E] embeddings) of the reference, perturbed if asked."""
    if formulation == "hand":
        if perturb:
            raise ValueError("the perturbations are made in the layers formulation")
        states = R.HandWritten(pipeline.encoder).states(ids, pipeline.padding_id())
    else:
        states = R.LayerStack(pipeline.encoder, None if perturb == "pooling" else perturb).states(ids, pipeline.padding_id())
    pooling = None
    if perturb == "pooling":  # the first mode replaced by one the folder does not use, same width
        unused = next(mode for mode in R.POOLING_ORDER if mode not in pipeline.pooling)
        pooling = [unused] + list(pipeline.pooling[1:])
    return states, pipeline.embeddings(states, pooling)


def compare(dump, tolerance=None, plain_pooling="mean", formulation="layers", perturb=None, quiet=False, pipeline=None,
            cache=None):
    """Runs every comparison of `dump`; returns the Tally. `pipeline` and `cache` (a dict) let a
    caller comparing several dumps of one folder read it once and run the reference once per ids."""
    tally = Tally(quiet)
    meta, ids, arrays = load_dump(dump)
    tolerance = tolerance or meta.get("compute", "f32")
    if tolerance not in TOLERANCES:
        tally.record(False, "meta.json", f"compute {tolerance!r} is none of {sorted(TOLERANCES)}")
        return tally
    if pipeline is None:
        pipeline = R.Pipeline(meta["folder"], plain_pooling=meta.get("pooling", plain_pooling))
    if not check_ids(tally, pipeline, ids):
        return tally
    key = (formulation, perturb, json.dumps(ids))
    if cache is None or key not in cache:
        outputs = reference_outputs(pipeline, ids, formulation, perturb)
        if cache is not None:
            cache[key] = outputs
    states, embeddings = outputs if cache is None else cache[key]
    if "text_states" in arrays:
        offsets = arrays.get("text_offsets")
        lengths = [len(item) for item in ids]
        expected = np.concatenate([[0], np.cumsum(lengths)])
        if offsets is None or list(offsets) != list(expected):
            tally.record(False, "text_offsets", f"{None if offsets is None else list(offsets)[:8]}, "
                         f"expected every row of every item {list(expected)[:8]}")
        else:
            compare_rows(tally, f"text states ({tolerance})", arrays["text_states"],
                         torch.cat(states).numpy(), tolerance, expected)
    if "text_embeddings" in arrays:
        compare_rows(tally, f"text embeddings ({tolerance}, pooling {'+'.join(pipeline.pooling)}, "
                     f"{len(pipeline.dense)} dense)", arrays["text_embeddings"], embeddings.numpy(), tolerance)
    if "text_states" not in arrays and "text_embeddings" not in arrays:
        tally.record(False, "dump", "neither text_states.npy nor text_embeddings.npy")
    return tally


def self_check_negative(dump, tolerance=None, plain_pooling="mean"):
    """Every applicable perturbation must make the comparison fail. Returns the Tally of those checks."""
    meta, ids, arrays = load_dump(dump)
    pipeline = R.Pipeline(meta["folder"], plain_pooling=meta.get("pooling", plain_pooling))
    tally = Tally()
    for perturb in PERTURBATIONS:
        if perturb == "mask" and len({len(item) for item in ids}) < 2:
            print(f"SKIP negative control {perturb}: every text has the same length, nothing is padded")
            continue
        if perturb == "pooling" and "text_embeddings" not in arrays:
            print(f"SKIP negative control {perturb}: the dump has no embeddings")
            continue
        result = compare(dump, tolerance, plain_pooling, perturb=perturb, quiet=True, pipeline=pipeline)
        tally.record(result.failed > 0, f"negative control {perturb}",
                     f"the perturbed reference fails {result.failed} of {result.passed + result.failed} checks"
                     if result.failed else "the perturbed reference PASSES: the comparison cannot see this mistake")
    return tally


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump")
    parser.add_argument("--tolerance", choices=sorted(TOLERANCES))
    parser.add_argument("--plain-pooling", choices=("mean", "cls", "pooler"), default="mean")
    parser.add_argument("--formulation", choices=("layers", "hand"), default="layers")
    parser.add_argument("--self-check-negative", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.self_check_negative:
        tally = self_check_negative(args.dump, args.tolerance, args.plain_pooling)
    else:
        tally = compare(args.dump, args.tolerance, args.plain_pooling, args.formulation)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed or not tally.passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
