"""Checks the engine's I8 compute against the NumPy implementation of the scheme (int8_reference.py).

    /usr/bin/python3 tests/reference/compare_int8.py DUMP_DIR [--tolerance 1e-3] [--chained-tolerance 1e-3]
                                                              [--end-to-end-tolerance 5e-2]

DUMP_DIR is what `parity_dump CHECKPOINT DUMP_DIR --int8` writes (manifest format:
tests/reference/README.md; each case has "compute": "i8" and "float_compute": "bf16" or "f32").
Nothing the engine computed enters the reference, except in the "alone" check below: the model's
inputs are the raw ones (texts, pixels, frames, samples) preprocessed as compare.py does, with
torchvision and torchaudio, not the engine's preprocessed arrays the dump also holds. Every float
output must agree norm-wise, ||a - b|| / ||b|| per tensor (`relative`), offsets exactly:

- "blocks" cases (random rows x0 through every trunk block; three cases: unfused, fused per item,
  fused per 48 rows), checked two ways:
  * chained: the reference's own chain from x0, block k+1 from the reference's block k, within
    (k + 1)·--chained-tolerance of the engine's rows after block k. Measured on random `small`:
    9e-5 after block 0 growing to 7.9e-3 after block 11, about 6.6e-4 per block; on `tiny` at most
    9e-5. Why it grows, and why no tight elementwise bound can hold: the reference's LayerNorm and
    attention run in float64, the engine's in float32, so now and then a value x·inv lands on the
    other side of a quantization tie (k + 1/2) in one implementation: that element moves by a whole
    step (scale·|w|), the next blocks quantize rows that differ in their 4th digit instead of their
    8th, more ties are straddled, and after 12 blocks two correct implementations differ by as much
    as a wrong scheme differs per block. So the chained check bounds drift (the engine may not
    move away from the scheme faster than two correct implementations do) but cannot tell the
    scheme from a wrong one;
  * alone: every block started from the engine's own rows before it, within --tolerance: here
    only one block's straddled ties count. Measured 4e-8 to 4.6e-4 on `small` (the largest where
    one straddled tie sits in a row whose small residual the block's output does not dilute),
    at most 5.2e-5 on `tiny`; CMake passes 1e-3 for small and 2e-4 for tiny. This is the fine
    check. Negative controls on the first blocks case: the same block with its four products
    unquantized, and quantized with one scale per matrix instead of one per row, must exceed the
    same bound (measured: 2.7e-3 and more on `small`, 8.4e-4 and more on `tiny`);
- the end-to-end outputs of every modality and text_choose (the reference's own chain from its own
  preprocessing) within --end-to-end-tolerance 5e-2: measured at most 2.5e-2 on `small`, 1.1e-2 on
  `tiny` (the drift above, plus BF16 ties of the patch projection's input under BF16 float compute).
One line per comparison, then "N passed, N failed"; exit 1 on any failure or on no comparison.
"""

import argparse
import base64
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int8_reference as Q  # noqa: E402
import uform_reference as R  # noqa: E402
from compare import Tally, comparable  # noqa: E402


def compare(tally, label, engine, reference, tolerance):
    """Judges the norm-wise relative error ||a - b|| / ||b|| (Frobenius) against the tolerance and
    prints the elementwise one, max|a - b| / max|b|, beside it. The norm-wise measure is the one
    that a rounding boundary cannot break: where a float64 activation and the engine's float32
    one straddle a quantization tie (or, under BF16 float compute, a BF16 tie), that one value
    lands one step apart, and a random checkpoint's small residual stream lets the final norm
    magnify it in a few rows (measured on random `small`, one block alone: up to 1.0e-3 of max|b|
    in the row concerned, 1e-7 elsewhere)."""
    engine, reference = comparable(tally, label, engine, reference)
    if engine is None:
        return
    norm = max(float(np.linalg.norm(reference)), 1e-30)
    relative = float(np.linalg.norm(engine - reference)) / norm
    scale = max(float(np.abs(reference).max()) if reference.size else 0.0, 1e-30)
    worst = float(np.abs(engine - reference).max()) / scale if engine.size else 0.0
    tally.record(relative <= tolerance, label,
                 f"||diff||/||ref|| {relative:.2e} (tolerance {tolerance:.0e}); max|diff|/max|ref| {worst:.2e}")


def inputs_of(case, directory, config):
    """The model's inputs from the raw ones, preprocessed as compare.py does (torchvision's resize,
    torchaudio's resampling, the reference's log-mel), never the engine's own preprocessed arrays
    the dump also holds: token id lists, or float64 images / videos / log-mels."""
    inputs = case["inputs"]
    npy = lambda name: np.load(os.path.join(directory, name), allow_pickle=False)  # noqa: E731
    if "texts" in inputs:
        choose = case["modality"] == "choose"
        texts = [base64.b64decode(t) for t in inputs["texts"]]
        return [[Q.CLS_ID] + list(R.truncate_text(t, config, keep_end=choose)) + ([Q.NEXT_ID] if choose else [])
                for t in texts]
    if "pixels" in inputs:
        return [R.preprocess_image(npy(p["npy"]), config, torch.float32).double().numpy() for p in inputs["pixels"]]
    if "frames" in inputs:
        return [R.preprocess_video(npy(f["npy"]), config, torch.float32).double().numpy() for f in inputs["frames"]]
    mels = []
    for entry in inputs["samples"]:
        samples = np.asarray(npy(entry["npy"]), dtype=np.float32)
        fitted = R.fit_audio(R.resample(samples, entry["rate"], torch.float32), config["audio"]["seconds"])
        mels.append(R.log_mel(fitted.double(), config["audio"]["mels"]).numpy())
    return mels


def relative(engine, reference):
    """||a - b|| / ||b|| (Frobenius)."""
    return float(np.linalg.norm(engine - reference)) / max(float(np.linalg.norm(reference)), 1e-30)


def check_blocks(tally, label, case, npy, config, weights, model, args, controls):
    """The trunk blocks of a "blocks" case, two ways (see the top of this file):

    - alone: every block started from the engine's own rows before it, within --tolerance;
      with `controls`, the same comparison against two wrong schemes (the products unquantized,
      and one scale per matrix instead of one per row) must fail that bound, every block;
    - chained: the reference's own chain from the case's input rows x0 (random, the same for both),
      block k+1 started from the reference's block k, against the engine's rows after block k,
      within (k + 1)·--chained-tolerance."""
    offsets = npy(case["inputs"]["offsets"])
    rows = [npy(case["inputs"]["x"]).astype(np.float64)] + [npy(name).astype(np.float64)
                                                             for name in case["outputs"]["blocks"]]
    depth = config["depth"]
    if len(offsets) < 2 or len(rows) != depth + 1:
        tally.record(False, f"{label}.blocks", f"{len(offsets) - 1} items, {len(rows) - 1} blocks dumped for depth {depth}")
        return
    wrong = {}
    if controls:
        wrong = {"unquantized": Q.Int8Model(config, weights, model.float_compute, quantized=False),
                 "per-tensor": Q.Int8Model(config, weights, model.float_compute, per_tensor=True)}

    def run(scheme, x, b):
        return np.concatenate([scheme.block(x[offsets[i]:offsets[i + 1]], b) for i in range(len(offsets) - 1)])

    chain = rows[0]
    for b in range(depth):
        alone = relative(rows[b + 1], run(model, rows[b], b))
        tally.record(alone <= args.tolerance, f"{label}.block{b} alone",
                     f"||diff||/||ref|| {alone:.2e} (tolerance {args.tolerance:.0e})")
        chain = run(model, chain, b)
        chained, bound = relative(rows[b + 1], chain), (b + 1) * args.chained_tolerance
        tally.record(chained <= bound, f"{label}.block{b} chained", f"||diff||/||ref|| {chained:.2e} (tolerance {bound:.1e})")
        for name, scheme in wrong.items():
            off = relative(rows[b + 1], run(scheme, rows[b], b))
            tally.record(off > args.tolerance, f"{label}.block{b} alone, {name} (negative control)",
                         f"||diff||/||ref|| {off:.2e} must exceed {args.tolerance:.0e}")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="every trunk block alone, from the engine's rows")
    parser.add_argument("--chained-tolerance", type=float, default=1e-3,
                        help="block k of the reference's own chain within (k + 1) times this")
    parser.add_argument("--end-to-end-tolerance", type=float, default=5e-2)
    args = parser.parse_args(argv)
    with open(os.path.join(args.dump, "manifest.json")) as handle:
        manifest = json.load(handle)
    checkpoint = manifest["checkpoint"]
    if not os.path.isabs(checkpoint):
        checkpoint = os.path.join(args.dump, checkpoint)
    config, tensors = R.load(checkpoint, torch.float64)
    weights = {name: tensor.numpy() for name, tensor in tensors.items()}
    models, tally, controlled = {}, Tally(), 0
    for case in manifest["cases"]:
        if case.get("compute") != "i8":
            tally.record(False, case.get("name", "?"), f"compute {case.get('compute')!r}: this script checks i8 cases")
            continue
        float_compute = case.get("float_compute")
        if float_compute not in models:
            models[float_compute] = Q.Int8Model(config, weights, float_compute)
        model, label = models[float_compute], f"{case['name']}/i8/float {float_compute}"
        outputs = case.get("outputs", {})
        npy = lambda name: np.load(os.path.join(args.dump, name), allow_pickle=False)  # noqa: E731
        if case["modality"] == "blocks":
            # The wrong schemes on the first blocks case only: they cost two more runs of every block.
            controls = case["name"] == "blocks_i8"
            controlled += controls
            check_blocks(tally, label, case, npy, config, weights, model, args, controls)
            continue
        items = inputs_of(case, args.dump, config)
        if case["modality"] == "choose":
            choices = [list(base64.b64decode(c)) for c in case["inputs"]["choices"]]
            groups = case["inputs"].get("groups") or [0] * len(items)
            probabilities = np.concatenate(model.choose(items, choices, groups))
            compare(tally, f"{label}.probabilities", npy(outputs["probabilities"]), probabilities, args.end_to_end_tolerance)
            continue
        reference = model.encode(case["modality"], items, int(case.get("dimensions", 0) or 0))
        for name in ("embeddings", "token_vectors", "states"):
            if name in outputs:
                compare(tally, f"{label}.{name}", npy(outputs[name]), reference[name], args.end_to_end_tolerance)
        for name in ("token_offsets", "state_offsets"):
            if name in outputs:
                same = np.array_equal(npy(outputs[name]), reference[name])
                tally.record(same, f"{label}.{name}", "equal" if same else f"{npy(outputs[name])} vs {reference[name]}")
    # Without the negative controls the block checks could not be shown able to fail.
    tally.record(controlled > 0, "negative controls", f"run on {controlled} blocks case(s) (blocks_i8)")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
