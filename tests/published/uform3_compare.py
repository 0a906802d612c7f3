"""Judges the engine's dump of a UForm 3 folder against the PyTorch reference (uform3_reference.py).

    /usr/bin/python3 tests/published/uform3_compare.py DUMP [--tolerance f32|bf16|i8] [--dimensions N]
                                                           [--self-check-negative [NAME,...]]

DUMP holds meta.json {"folder", "compute", "texts", "images"} and any of: text_ids.json (the ids the
engine fed its text tower, unpadded: uform masks padding out; checked for their length, the
vocabulary and the post-processor's frame, the ids themselves being the tokenizer tests' business),
text_embeddings.npy [N, E],
text_states.npy + text_offsets.npy, image_embeddings.npy [M, E], image_states.npy + image_offsets.npy.

The reference reads the folder with its own readers, pads the ids the way uform's TextProcessor does
(to max_position_embeddings with padding_idx, mask on the real tokens), preprocesses the image FILES
as uform's ImageProcessor does, and runs in float64. What is compared:
- embeddings: uform's forward_embedding (embedding_projection of the pooled features), L2-normalised;
  with --dimensions N (or meta.json "dimensions", or a dump narrower than the model's embedding) the
  first N values, renormalised (Matryoshka);
- text states: the last unimodal block's output (post-norm blocks: no extra norm), one row per id;
- image states: the final `norm` applied to every row: cls, then num_reg_tokens registers, then the
  patches row-major (1 + R + (S/p)^2 rows).
Per row: cosine >= 0.99999 and max|a - b| / max|b| <= 1e-4 (f32), >= 0.999 and <= 1e-2 (bf16), cosine
>= 0.99 (i8). The tolerance defaults to meta.json's "compute". For states, max|b| is the largest value
of the item's states, not of the row: BF16 products alone (uform3_selftest.py's stand-in: every
product's inputs rounded to BF16, sums in float32) put single state rows of the tiny folders at up to
1.2e-2 of their own largest value while no row exceeds 6.7e-3 of its item's (embeddings: <= 7.7e-3),
so a per-row bound would fail a correct BF16 engine on chance rows. One line per comparison, the worst
row with both values on a failure; exit 1 on any failure.

--self-check-negative runs the same comparisons with one deliberate error in the reference at a time
(uform3_reference.PERTURBATIONS, all that touch a dumped modality unless NAMEs are given) and exits 0
only if EVERY such comparison fails: a dump that also "matches" a wrong reference proves nothing.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uform3_reference as reference  # noqa: E402

TOLERANCES = {  # (minimum cosine, maximum of max|a - b| / max|b|, or None: not judged)
    "f32": (0.99999, 1e-4),
    "bf16": (0.999, 1e-2),
    "i8": (0.99, None),
}


def _load(dump, name):
    path = os.path.join(dump, name)
    return np.load(path) if os.path.exists(path) else None


def _rows(values, offsets, count, what):
    """Splits STATES [sum, d] at OFFSETS [count + 1] into count arrays."""
    if offsets is None:
        raise ValueError(f"{what}: states without offsets")
    offsets = offsets.astype(np.int64)
    if offsets.shape != (count + 1,) or offsets[0] != 0 or offsets[-1] != values.shape[0] or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{what}: offsets {offsets.tolist()[:8]} do not split {values.shape[0]} rows into {count} items")
    return [values[offsets[i]:offsets[i + 1]] for i in range(count)]


class Judge:
    """Collects the comparisons' verdicts and their one-line reports."""

    def __init__(self, tolerance, quiet=False):
        self.cosine, self.relative = TOLERANCES[tolerance]
        self.tolerance, self.quiet, self.failures, self.passes, self.lines = tolerance, quiet, 0, 0, []

    def say(self, line):
        self.lines.append(line)
        if not self.quiet:
            print(line)

    def fail(self, what, reason):
        self.failures += 1
        self.say(f"FAIL {what}: {reason}")

    def rows(self, what, engine, expected, scale="row"):
        """ENGINE and EXPECTED: per item, rows [n, width] (numpy / float64 torch). Each row is judged
        by its cosine and by max|a - b| over the row divided by max|b| over the row (SCALE "row") or
        over the item's rows ("item", for states: see the module's docstring)."""
        worst_cosine, worst_relative, worst_at, rows, not_finite = 2.0, 0.0, None, 0, 0
        verdict = True
        for item, (got, want) in enumerate(zip(engine, expected)):
            got = torch.as_tensor(np.asarray(got, dtype=np.float64))
            want = want.to(torch.float64)
            if got.shape != want.shape:
                self.fail(what, f"item {item} has shape {list(got.shape)}, the reference {list(want.shape)}")
                return False
            if got.shape[0] == 0:
                continue
            # Every row of the item at once: cosine and max|a - b| over the row, over the scale.
            cosines = (got * want).sum(dim=1) / (got.norm(dim=1) * want.norm(dim=1)).clamp_min(1e-300)
            if scale == "item":
                largest = want.abs().max().clamp_min(1e-300).expand(want.shape[0])
            else:
                largest = want.abs().max(dim=1).values.clamp_min(1e-300)
            relatives = (got - want).abs().max(dim=1).values / largest
            bad = ~(cosines >= self.cosine)  # written so that a NaN is bad
            if self.relative is not None:
                bad = bad | ~(relatives <= self.relative)
            scores = torch.nan_to_num(-cosines if self.relative is None else relatives, nan=float("inf"))
            if bool(bad.any()):
                scores = torch.where(bad, scores, torch.full_like(scores, -float("inf")))
            row = int(torch.argmax(scores))
            score = (bool(bad[row]), float(scores[row]))
            if worst_at is None or score > worst_at[0]:
                worst_at = (score, item, row, got[row], want[row])
            rows += got.shape[0]
            not_finite += int((~torch.isfinite(got).all(dim=1)).sum())
            worst_cosine = min(worst_cosine, float(cosines.min()))
            worst_relative = max(worst_relative, float(relatives.max()))
            verdict = verdict and not bool(bad.any())
        if worst_at is None:
            self.fail(what, "nothing to compare")
            return False
        denominator = "max|b| of the item" if scale == "item" else "max|b|"
        summary = (f"{rows} rows" + (f" ({not_finite} with values not finite)" if not_finite else "") + f", worst cosine {worst_cosine:.8f}, worst max|a-b|/{denominator} {worst_relative:.3e} "
                   f"(bounds: cosine >= {self.cosine}" + (f", <= {self.relative:g}" if self.relative else "") + ")")
        if verdict:
            self.passes += 1
            self.say(f"ok   {what}: {summary}")
            return True
        _, item, row, a, b = worst_at
        position = int((a - b).abs().argmax())
        self.fail(what, summary + f"\n     worst: item {item} row {row}, column {position}: engine {float(a[position]):.7g} "
                  f"reference {float(b[position]):.7g}\n     engine    {np.array2string(a[:8].numpy(), precision=5)}\n"
                  f"     reference {np.array2string(b[:8].numpy(), precision=5)}")
        return False


def _dimensions(requested, engine, width, what, judge):
    if engine is None:
        return requested
    columns = engine.shape[1]
    if requested and columns != requested:
        judge.fail(what, f"{columns} columns, expected the {requested}-dimension prefix")
    if not requested and columns < width:
        judge.say(f"note {what}: {columns} of {width} columns, compared as a Matryoshka prefix")
        return columns
    return requested


def compare_text(dump, meta, folder, judge, dimensions, perturb):
    embeddings = _load(dump, "text_embeddings.npy")
    states = _load(dump, "text_states.npy")
    if embeddings is None and states is None:
        return
    if not os.path.exists(os.path.join(dump, "text_ids.json")):
        judge.fail("text ids", "text_ids.json is missing: the ids the engine fed its text tower are needed")
        return
    with open(os.path.join(dump, "text_ids.json"), encoding="utf-8") as stream:
        ids = json.load(stream)
    config = folder.text
    count = len(meta.get("texts", ids))
    if len(ids) != count:
        judge.fail("text ids", f"{len(ids)} id lists for {count} texts")
        return
    for item, sequence in enumerate(ids):
        if not 0 < len(sequence) <= config["max_position_embeddings"]:
            judge.fail("text ids", f"text {item} has {len(sequence)} ids; uform feeds 1 to "
                       f"max_position_embeddings = {config['max_position_embeddings']} (it slices longer ones)")
            return
        outside = [value for value in sequence if not 0 <= value < config["vocab_size"]]
        if outside:
            judge.fail("text ids", f"text {item} holds ids {outside[:4]} outside the vocabulary of {config['vocab_size']}")
            return
    frame = reference.tokenizer_frame(folder.path)
    if frame is not None:
        # tokenizers frames the (truncated) text with the post-processor's tokens; uform's processor
        # then slices at max_position_embeddings, so only a list shorter than that must end framed
        # (unless tokenizer.json truncates, which keeps the frame).
        before, after, truncation = frame
        for item, sequence in enumerate(ids):
            framed_end = len(sequence) < config["max_position_embeddings"] or truncation is not None
            if sequence[:len(before)] != before or (framed_end and sequence[len(sequence) - len(after):] != after):
                judge.fail("text ids", f"text {item}: ids {sequence[:3]} ... {sequence[-3:]} are not framed by "
                           f"{before} ... {after} (tokenizer.json's post-processor)")
                return
    results = reference.encode_texts(folder, ids, perturb)
    if embeddings is not None:
        dimensions = _dimensions(dimensions, embeddings, config["embedding_dim"], "text embeddings", judge)
        expected = torch.stack([reference.normalise(vector, dimensions) for _, vector in results])
        if embeddings.shape[0] != count:
            judge.fail("text embeddings", f"{embeddings.shape[0]} rows for {count} texts")
        else:
            judge.rows("text embeddings", embeddings[:, None], expected[:, None])
    if states is not None:
        try:
            engine = _rows(states, _load(dump, "text_offsets.npy"), count, "text states")
        except ValueError as error:
            judge.fail("text states", str(error))
            return
        judge.rows("text states", engine, [rows for rows, _ in results], scale="item")


def compare_images(dump, meta, folder, judge, dimensions, perturb, pixels_cache):
    embeddings = _load(dump, "image_embeddings.npy")
    states = _load(dump, "image_states.npy")
    if embeddings is None and states is None:
        return
    config = folder.image
    paths = meta.get("images", [])
    if "pixels" not in pixels_cache:
        pixels_cache["pixels"] = torch.stack([reference.preprocess(path, config) for path in paths])
    results = reference.encode_images(folder, pixels_cache["pixels"], perturb)
    if embeddings is not None:
        dimensions = _dimensions(dimensions, embeddings, config["embedding_dim"], "image embeddings", judge)
        expected = torch.stack([reference.normalise(vector, dimensions) for _, vector in results])
        if embeddings.shape[0] != len(paths):
            judge.fail("image embeddings", f"{embeddings.shape[0]} rows for {len(paths)} images")
        else:
            judge.rows("image embeddings", embeddings[:, None], expected[:, None])
    if states is not None:
        try:
            engine = _rows(states, _load(dump, "image_offsets.npy"), len(paths), "image states")
        except ValueError as error:
            judge.fail("image states", str(error))
            return
        judge.rows("image states", engine, [rows for rows, _ in results], scale="item")


def modalities_of(dump):
    present = set()
    for modality in ("text", "image"):
        if any(os.path.exists(os.path.join(dump, f"{modality}_{kind}.npy")) for kind in ("embeddings", "states")):
            present.add(modality)
    return present


def compare(dump, tolerance=None, dimensions=None, perturb=(), quiet=False, folder=None, cache=None):
    """Runs every comparison the dump allows; returns the Judge."""
    with open(os.path.join(dump, "meta.json"), encoding="utf-8") as stream:
        meta = json.load(stream)
    judge = Judge(tolerance or meta.get("compute", "f32"), quiet)
    if dimensions is None:
        dimensions = int(meta.get("dimensions", 0) or 0)
    present = modalities_of(dump)
    if not present:
        judge.fail("dump", f"{dump} holds no embeddings or states")
        return judge
    if folder is None:
        folder = reference.Folder(meta["folder"], sorted(present))
    cache = {} if cache is None else cache
    compare_text(dump, meta, folder, judge, dimensions, perturb)
    compare_images(dump, meta, folder, judge, dimensions, perturb, cache)
    return judge


def negative_controls(dump, tolerance=None, dimensions=None, names=None):
    """Exit status 0 when each perturbed reference FAILS against the dump."""
    present = modalities_of(dump)
    with open(os.path.join(dump, "meta.json"), encoding="utf-8") as stream:
        folder = reference.Folder(json.load(stream)["folder"], sorted(present))
    table = dict(reference.PERTURBATIONS, **reference.WEAK_PERTURBATIONS)
    if names is None:
        names = [name for name, (towers, _) in reference.PERTURBATIONS.items() if present & set(towers.split())]
    unknown = [name for name in names if name not in table]
    if unknown:
        print(f"unknown perturbations {unknown}; known: {sorted(table)}")
        return 2
    cache, vacuous = {}, []
    for name in names:
        judge = compare(dump, tolerance, dimensions, (name,), quiet=True, folder=folder, cache=cache)
        if judge.failures:
            print(f"ok   negative control {name} ({table[name][1]}): the comparison fails, as it must")
        else:
            print(f"FAIL negative control {name} ({table[name][1]}): the dump also matches this wrong reference")
            vacuous.append(name)
    print(f"{len(names) - len(vacuous)} passed, {len(vacuous)} failed")
    return 1 if vacuous or not names else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump")
    parser.add_argument("--tolerance", choices=sorted(TOLERANCES))
    parser.add_argument("--dimensions", type=int)
    parser.add_argument("--self-check-negative", nargs="?", const="", metavar="NAME,...",
                        help="judge wrong references instead; exit 0 only if all of them fail")
    args = parser.parse_args(argv)
    if args.self_check_negative is not None:
        names = [name for name in args.self_check_negative.split(",") if name] or None
        return negative_controls(args.dump, args.tolerance, args.dimensions, names)
    judge = compare(args.dump, args.tolerance, args.dimensions)
    print(f"{judge.passes} passed, {judge.failures} failed")
    return 1 if judge.failures else 0


if __name__ == "__main__":
    sys.exit(main())
