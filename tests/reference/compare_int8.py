"""Checks the engine's I8 compute against the NumPy implementation of the scheme (int8_reference.py).

    /usr/bin/python3 tests/reference/compare_int8.py DUMP_DIR [--tolerance 1e-3]

DUMP_DIR is what `parity_dump CHECKPOINT DUMP_DIR --int8` writes (manifest format:
tests/reference/README.md; each case has "compute": "i8" and "float_compute": "bf16" or "f32").
The model's inputs are the engine's own preprocessed images, frames and log-mels where the dump has
them (compare.py checks the preprocessing itself against torchvision and torchaudio; here a 1e-7
difference in a pixel could move a BF16 rounding of the patch projection's input and hide what is
being tested), else preprocessed as compare.py does; then the NumPy model runs and every float
output must agree within its tolerance, ||a - b|| / ||b|| per tensor (`compare` says why norm-wise),
offsets exactly:

- the "blocks" case, every trunk block alone started from the engine's own rows before it, within
  1e-3 (--tolerance), and, as a negative control, the block's update (output less input) at least
  3 times closer to this scheme's than to the same block's unquantized: this is where the scheme is checked, to the last rounding (measured 1e-7
  but for the rows where a float64 activation and the engine's float32 one straddle a rounding tie);
- the end-to-end outputs of every modality and text_choose within 5e-2 (--end-to-end-tolerance):
  once one value of one block has rounded the other way, the next blocks' activations differ in
  their 4th digit instead of their 8th, many more values straddle ties, and after 12 blocks two
  implementations of the same scheme differ by as much as the quantization differs from F32
  (measured on random `small`: 1-2e-2 end to end, against cosine 0.9996 between I8 and F32). So the
  end-to-end check catches what is gross (a missing bias, a wrong layer in int8, a transposed
  scale), the per-block check what is fine. One line per comparison, then "N passed, N failed"; exit 1 on any failure.
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
    """The model's inputs: token id lists, or float64 images / videos / log-mels."""
    inputs, preprocessed = case["inputs"], case.get("preprocessed", {})
    npy = lambda name: np.load(os.path.join(directory, name), allow_pickle=False)  # noqa: E731
    for kind, key in (("pixels", "images"), ("frames", "images"), ("samples", "log_mels")):
        if kind in inputs and len(preprocessed.get(key, [])) == len(inputs[kind]):
            return [npy(name).astype(np.float64) for name in preprocessed[key]]
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


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="per trunk block")
    parser.add_argument("--end-to-end-tolerance", type=float, default=5e-2)
    args = parser.parse_args(argv)
    with open(os.path.join(args.dump, "manifest.json")) as handle:
        manifest = json.load(handle)
    checkpoint = manifest["checkpoint"]
    if not os.path.isabs(checkpoint):
        checkpoint = os.path.join(args.dump, checkpoint)
    config, tensors = R.load(checkpoint, torch.float64)
    weights = {name: tensor.numpy() for name, tensor in tensors.items()}
    models, tally = {}, Tally()
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
            # Every block alone, from the engine's own rows before it: no error carried between blocks.
            offsets = npy(case["inputs"]["offsets"])
            rows = [npy(case["inputs"]["x"]).astype(np.float64)] + [npy(name).astype(np.float64) for name in outputs["blocks"]]
            floating = Q.Int8Model(config, weights, float_compute, quantized=False)
            for b in range(len(rows) - 1):
                items = [rows[b][offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
                reference = np.concatenate([model.block(item, b) for item in items])
                compare(tally, f"{label}.block{b}", rows[b + 1], reference, args.tolerance)
                # Negative control, on the block's update (output less input, which the residual
                # would dilute): the engine's is at least 3 times closer to the quantized reference's
                # than to the unquantized one's, or this check could not tell I8 compute from float.
                update = rows[b + 1] - rows[b]
                unquantized = np.concatenate([floating.block(item, b) for item in items]) - rows[b]
                to_int8 = float(np.linalg.norm(update - (reference - rows[b])) / np.linalg.norm(update))
                to_float = float(np.linalg.norm(update - unquantized) / np.linalg.norm(update))
                tally.record(3 * to_int8 < to_float, f"{label}.block{b} update (negative control)",
                             f"||diff|| / ||update||: {to_int8:.2e} to the I8 scheme, {to_float:.2e} to the block unquantized")
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
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
