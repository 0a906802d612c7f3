"""Checks the engine's step-parity dump against the PyTorch training reference.

    /usr/bin/python3 tests/reference/compare_train.py DUMP_DIR [--threads N] [--control lr=F|without=SITE]
                                                      [--flat TOL] [--resync] [--spread N]
    /usr/bin/python3 tests/reference/compare_train.py --write-dump DIR [--compute f32|bf16] [--dtype float32|float64] [--seed N]

DUMP_DIR/manifest.json names the starting checkpoint, the compute mode, the optimizer settings and
the steps (format: tests/reference/README.md).  The reference (train_reference.py, float64) starts
from the checkpoint's optimizer.weights.* when present (else its weights widened), its moments
(else zeros) and its step count (else 0), runs every step in order on its own state (the engine's
state is never reloaded between steps), and after each step compares.  Under "compute": "bf16" the
reference runs BF16 compute as the engine documents it (train_reference.py: BF16 operands of the
stems', trunk's and projections' products, forward and backward, and of the attention's score and
value products; F32 elsewhere) and prints how many trunk items span more than one 64-key block of
the attention.  It compares:

- the logged scalars (loss, contrastive, choice, learning_rate, grad_norm): |a - b| / max(|b|, 1e-6);
- the temperatures the step used and the bag embeddings [bags, E];
- when the step names "gradients": every parameter's gradient before clipping, one line per tensor;
- the "after" checkpoint: every optimizer.weights.*, optimizer.m.*, optimizer.v.* against the
  reference's state, optimizer.step exactly, and the stored inference weights (BF16, or F32 for
  norms and temperatures) against the reference's master weights within the tolerance plus the
  storage's rounding (2^-8 relative for BF16);
- over the whole model (||a - b|| / ||b||, every tensor at once): the gradients, both moments and the
  update (the master weights minus the starting ones).

Per tensor the error is max|a - b| / max(max|b|, floor); the elementwise worst relative error is
printed, not judged.  Each quantity of each step has its own tolerance, twice the spread measured
between correct computations of train_parity_dump's steps (CHAINED below; --flat TOL for other
dumps).  The floor makes a tensor whose reference is zero everywhere (the moments of a tensor no
batch reached, say) an absolute check: FLOORS below, so 0 against 1e-30 passes and 0 against 1e-12
does not.

One line per comparison, then "N passed, N failed"; the exit status is 1 when any failed (with
--control, 0 only when one failed).
"""

import json
import os
import struct
import sys
import time
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import uform_reference as R  # noqa: E402
import train_reference as T  # noqa: E402

# Chained steps (README.md, "Chained steps"): per compute, quantity and step (columns: steps 0, 1,
# 2), twice the largest difference measured between two of six correct computations of the same
# steps — this reference in float64 and in float32, the engine's SERIAL, HASWELL, SKYLAKE and GENOA
# kernels — over starting points of train_parity_dump (F32: --seed 5, 1, 2; BF16: --seed 5, 1, 2,
# 3; both also seeds 5 and 1 with text.positions drawn from N(0, 0.02)); the measured maxima are in
# the comments. Per tensor (max|a - b| / max|b|): the logged scalars, the bag embeddings, the
# gradients, both moments and the master weights (the stored BF16 weights add their 2^-8); over
# the whole model (||a - b|| / ||b||, every tensor at once): the gradients, both moments and the
# update (the master weights minus the starting ones). tests/reference/train_spread.py measures
# them. A learning rate 5 % off fails at steps 1 and 2 (the losses, the whole-model gradients,
# moments and update; under F32 compute from step 0): the CTest controls.
CHAINED = {
    "f32": {
        "scalars": (1.1e-6, 1.5e-5, 2.9e-4),       # measured 5.1e-7 7.1e-6 1.44e-4
        "embeddings": (9.8e-7, 4.9e-5, 4.4e-5),    # measured 4.9e-7 2.4e-5 2.2e-5
        "gradient": (5.9e-6, 7.5e-5, 4.3e-4),      # measured 2.9e-6 3.8e-5 2.1e-4 (choose.head.bias: p - 1 with p near 1)
        "m": (5.6e-6, 8.1e-5, 4.6e-5),             # measured 2.8e-6 4.1e-5 2.3e-5
        "v": (1.2e-5, 9.8e-5, 8.1e-5),             # measured 5.8e-6 4.9e-5 4.0e-5
        "weights": (3.3e-5, 3.6e-5, 3.7e-5),       # measured 1.6e-5 1.8e-5 1.8e-5 (AdamW's full step on a near-zero gradient)
        "gradient.all": (1.6e-6, 6.2e-6, 1.3e-5),  # measured 7.9e-7 3.1e-6 6.4e-6
        "m.all": (1.7e-6, 5.1e-6, 9.3e-6),         # measured 8.2e-7 2.5e-6 4.6e-6
        "v.all": (2.7e-6, 3.1e-6, 3.9e-6),         # measured 1.3e-6 1.5e-6 1.9e-6
        "update.all": (2.6e-5, 1.4e-5, 1.1e-5),    # measured 1.3e-5 6.8e-6 5.5e-6
    },
    "bf16": {
        "scalars": (1.7e-3, 5.4e-3, 1.8e-2),       # measured 8.4e-4 2.7e-3 8.8e-3
        "embeddings": (4.5e-3, 4.9e-2, 4.6e-2),    # measured 2.2e-3 2.4e-2 2.3e-2
        "gradient": (2.6e-2, 6.8e-2, 2.1e-1),      # measured 1.3e-2 3.4e-2 1.04e-1 (choose.head.bias: p - 1 with p near 1)
        "m": (2.6e-2, 6.9e-2, 1.1e-1),             # measured 1.3e-2 3.4e-2 5.0e-2
        "v": (3.2e-2, 1.2e-1, 2.0e-1),             # measured 1.6e-2 5.9e-2 9.6e-2
        "weights": (3.0e-2, 6.4e-2, 6.5e-2),       # measured 1.5e-2 3.2e-2 3.2e-2 (AdamW's full step on a near-zero gradient)
        "gradient.all": (6.7e-3, 2.1e-2, 4.0e-2),  # measured 3.3e-3 1.03e-2 2.0e-2
        "m.all": (6.7e-3, 1.7e-2, 3.4e-2),         # measured 3.3e-3 8.4e-3 1.7e-2
        "v.all": (6.0e-3, 9.1e-3, 2.0e-2),         # measured 3.0e-3 4.5e-3 9.6e-3
        "update.all": (7.3e-2, 5.3e-2, 5.1e-2),    # measured 3.7e-2 2.6e-2 2.5e-2
    },
}
SCALAR_FLOOR = 1e-6
# Absolute floors of the per-tensor scale max|b|: a reference that is zero everywhere accepts an
# engine value up to tolerance * floor (1e-16 for gradients, moments and weights under F32 compute,
# 1e-28 for v, the square's scale).  Real tensors sit far above: a gradient of 1e-12 is already
# one no batch meaningfully reached.
FLOORS = {"gradient": 1e-12, "weights": 1e-12, "m": 1e-12, "v": 1e-24, "embeddings": 1e-12, "update": 1e-12}
BF16_STORAGE = 2.0 ** -8       # relative rounding of a BF16-stored weight (half an ulp is 2^-9)


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, ok, label, detail):
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


class Tolerances:
    """What step `index` is judged at: `tensor(kind, index)` per tensor (kind: scalars, embeddings,
    gradient, m, v, weights), `whole(kind, index)` over the whole model (gradient, m, v, update):
    CHAINED's column of the step for the dump's compute; with `resync` every step starts from the
    engine's state, so every step is judged like step 0. CHAINED is measured on train_parity_dump's
    model and batches; `flat` judges another dump (the self-tests' examples) per tensor at one
    tolerance for every step, v at its square's (1 + flat)^2 - 1, and nothing over the whole model
    (whose update, the master weights minus the starting ones, F32 storage alone can move by more
    than any flat tolerance where a step barely moves a tensor)."""

    def __init__(self, compute, resync=False, flat=None):
        self.table, self.resync, self.flat = CHAINED[compute], resync, flat
        if flat is not None:
            self.table = {kind: (flat * (2.0 + flat) if kind.startswith("v") else flat,) * 3 for kind in self.table}

    def _column(self, index):
        column = 0 if self.resync else index
        if column >= len(self.table["scalars"]):
            raise ValueError(f"step {index}: the tolerances are measured for {len(self.table['scalars'])} chained "
                             "steps (train_spread.py measures more)")
        return column

    def tensor(self, kind, index):
        return self.table[kind][self._column(index)]

    def whole(self, kind, index):
        """None: not judged (flat)."""
        return None if self.flat is not None else self.table[kind + ".all"][self._column(index)]


def compare_tensor(tally, label, engine, reference, tolerance, floor):
    """Per tensor: max|a - b| / max(max|b|, floor) <= tolerance."""
    engine = np.asarray(engine, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if engine.shape != reference.shape:
        tally.record(False, label, f"shape {list(engine.shape)}, reference {list(reference.shape)}")
        return
    if not np.all(np.isfinite(engine)):
        tally.record(False, label, f"{int(np.sum(~np.isfinite(engine)))} non-finite values")
        return
    if engine.size == 0:
        tally.record(True, label, "empty")
        return
    difference = np.abs(engine - reference)
    peak = float(np.max(np.abs(reference)))
    scale = max(peak, floor)
    worst = float(difference.max())
    elementwise = float(np.max(difference / np.maximum(np.abs(reference), floor)))
    index = np.unravel_index(int(np.argmax(difference)), engine.shape)
    tally.record(worst / scale <= tolerance, label,
                 f"max_abs {worst:.3e} max_rel {worst / scale:.3e} worst_elem_rel {elementwise:.3e} tol {tolerance:.2g}"
                 f"{' (floor ' + format(floor, '.0e') + ')' if peak < floor else ''}"
                 f" at {list(map(int, index))} engine {engine[index]:.9g} reference {reference[index]:.9g}")


def compare_whole(tally, label, engine, reference, tolerance, floor):
    """Over every tensor at once: ||a - b|| / max(||b||, floor) <= tolerance, naming the tensor
    that contributes most to ||a - b||."""
    difference = norm = 0.0
    worst, where = -1.0, ""
    for name, b in reference.items():
        delta = np.asarray(engine[name], dtype=np.float64) - np.asarray(b, dtype=np.float64)
        d = float(np.sum(delta * delta))
        difference, norm = difference + d, norm + float(np.sum(np.asarray(b, dtype=np.float64) ** 2))
        if d > worst:
            worst, where = d, name
    error = difference ** 0.5 / max(norm ** 0.5, floor)
    ok = bool(np.isfinite(error)) and error <= tolerance
    tally.record(ok, label, f"rel {error:.3e} tol {tolerance:.2g} over {len(reference)} tensors "
                            f"(largest share: {where}, {(worst / difference if difference else 0.0):.0%})")


def compare_scalar(tally, label, engine, reference, tolerance):
    try:
        engine = float(engine)
    except (TypeError, ValueError):
        tally.record(False, label, f"engine value {engine!r} is not a number")
        return
    error = abs(engine - reference) / max(abs(reference), SCALAR_FLOOR)
    ok = np.isfinite(engine) and error <= tolerance
    tally.record(bool(ok), label, f"engine {engine:.9g} reference {reference:.9g} rel {error:.3e} tol {tolerance:.2g}")


def safetensors_dtypes(path):
    """{name: dtype string} from a safetensors header."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length).decode("utf-8"))
    header.pop("__metadata__", None)
    return {name: entry["dtype"] for name, entry in header.items()}


def compare_gradients(tally, label, path, reference, tolerance):
    """Every gradient per tensor; answers the engine's gradients."""
    _, arrays = R.read_safetensors(path)
    for name, expected in reference.items():
        if name not in arrays:
            tally.record(False, f"{label}.{name}", "missing from the engine's gradients")
            continue
        compare_tensor(tally, f"{label}.{name}", arrays[name], expected.numpy(), tolerance, FLOORS["gradient"])
    extra = sorted(set(arrays) - set(reference))
    if extra:
        tally.record(False, f"{label} names", f"tensors the reference does not have: {extra[:8]}")
    return arrays


def compare_after(tally, label, path, state, tolerances, index):
    """The engine's checkpoint after step `index` against the reference's state; answers the
    engine's arrays."""
    _, arrays = R.read_safetensors(path)
    dtypes = safetensors_dtypes(path)
    for kind, store in (("weights", state.weights), ("m", state.m), ("v", state.v)):
        for name in state.names:
            key = f"optimizer.{kind}.{name}"
            if key not in arrays:
                tally.record(False, f"{label}.{key}", "missing from the engine's checkpoint")
                continue
            if dtypes[key] != "F32":
                tally.record(False, f"{label}.{key}", f"dtype {dtypes[key]}, docs/training.md says F32")
                continue
            compare_tensor(tally, f"{label}.{key}", arrays[key], store[name].numpy(), tolerances.tensor(kind, index),
                           FLOORS[kind])
    for name in state.names:
        if name not in arrays:
            tally.record(False, f"{label}.{name}", "missing from the engine's checkpoint")
            continue
        rounding = BF16_STORAGE if dtypes[name] == "BF16" else 0.0
        compare_tensor(tally, f"{label}.{name} ({dtypes[name]})", arrays[name], state.weights[name].numpy(),
                       tolerances.tensor("weights", index) + rounding, FLOORS["weights"])
    if "optimizer.step" in arrays:
        step = arrays["optimizer.step"].reshape(-1)
        ok = dtypes["optimizer.step"] == "I64" and step.size == 1 and int(step[0]) == state.step_count
        tally.record(ok, f"{label}.optimizer.step", f"engine {step.tolist()} ({dtypes['optimizer.step']}), "
                                                    f"reference [{state.step_count}]")
    else:
        tally.record(False, f"{label}.optimizer.step", "missing from the engine's checkpoint")
    known = {f"optimizer.{k}.{n}" for k in ("weights", "m", "v") for n in state.names} | set(state.names) | {"optimizer.step"}
    extra = sorted(set(arrays) - known)
    if extra:
        tally.record(False, f"{label} names", f"tensors the reference does not know: {extra[:8]}")
    return arrays


def sequence_lengths(config, batch):
    """Tokens per trunk item of the step: the bag members' sequences, then the choice sequences."""
    offsets = batch.bag_offsets()
    lengths = []
    for i in range(offsets[0], offsets[-1]):
        modality, item = batch.contents[i]
        if modality == "text":
            lengths.append(1 + len(R.truncate_text(item, config)))
        elif modality == "image":
            lengths.append((config["image"]["size"] // config["image"]["patch"]) ** 2 + 1)
        elif modality == "video":
            v = config["video"]
            lengths.append((item.shape[0] // v["tubelet"]) * (v["size"] // v["patch"]) ** 2 + 1)
        else:
            lengths.append(item.shape[0] // R.AUDIO_FRAMES_PER_TOKEN + 1)
    lengths += [2 + len(R.truncate_text(batch.contents[i][1], config, keep_end=True)) for i in batch.choice_contents()]
    return lengths


JITTER = 1e-7      # relative jitter of the twins' weights: about float32's rounding (2^-24 = 6e-8)


def jittered_gradients(state, batch, bf16, count, seed):
    """Diagnosis (--spread): the gradients of `count` copies of the reference whose weights are
    multiplied by 1 + JITTER * N(0, 1), i.e. moved by about F32's own rounding.  Under BF16 compute
    the spread of these twins around the reference is the semantics' own sensitivity: an engine
    within it differs from the reference no more than the reference differs from itself."""
    generator = torch.Generator().manual_seed(seed)
    twins = []
    for _ in range(count):
        weights = {n: w * (1.0 + JITTER * torch.randn(w.shape, dtype=w.dtype, generator=generator))
                   for n, w in state.weights.items()}
        twin = T.TrainerState(state.config, weights, {n: t.clone() for n, t in state.m.items()},
                              {n: t.clone() for n, t in state.v.items()}, state.step_count, state.optimizer, state.dtype)
        twins.append(twin.step(batch, bf16=bf16)["gradients"])
    return twins


def report_spread(label, path, reference, twins, tolerance):
    """Prints '#' lines (judging nothing): per step the engine's and each twin's worst per-tensor
    gradient error against the reference, then every tensor where the engine exceeds `tolerance`
    with the twins' errors on the same tensor."""
    _, arrays = R.read_safetensors(path)

    def error(values, name):
        peak = max(float(reference[name].abs().max()), FLOORS["gradient"])
        return float(np.abs(np.asarray(values, dtype=np.float64) - reference[name].numpy()).max()) / peak

    names = [n for n in reference if n in arrays]
    engine = {n: error(arrays[n], n) for n in names}
    spread = [{n: error(t[n].numpy(), n) for n in names} for t in twins]
    worst = max(engine, key=engine.get)
    print(f"# {label} spread: engine worst {engine[worst]:.2e} ({worst}); jittered twins worst "
          + ", ".join(f"{max(e.values()):.2e} ({max(e, key=e.get)})" for e in spread), flush=True)
    for name in sorted((n for n in names if engine[n] > tolerance), key=engine.get, reverse=True):
        print(f"# {label} spread: {name} engine {engine[name]:.2e}, twins "
              + ", ".join(f"{e[name]:.2e}" for e in spread), flush=True)


# ---------------------------------------------------------------------------------------------
# Chained BF16 errors: per-tensor and whole-model errors of one step's state, two runs compared.

def chained_errors(ours, theirs):
    """ours, theirs: {kind: {name: array}} for kinds gradient, m, v, weights, update (weights minus
    the starting weights), embeddings, and {scalars: {name: float}}. Answers {metric: (value,
    where)}: for each kind K, K.max (the worst tensor's max|a - b| / max|b|), K.fro (the worst
    tensor's ||a - b|| / ||b||) and K.all (||a - b|| / ||b|| over every tensor at once); for the
    weights only max; the scalars' worst |a - b| / |b|."""
    errors = {}
    for kind in ("gradient", "m", "v", "update", "weights", "embeddings"):
        floor = FLOORS.get(kind, FLOORS["weights"])
        worst_max, worst_fro, where_max, where_fro, difference, norm = 0.0, 0.0, "", "", 0.0, 0.0
        for name, b in theirs[kind].items():
            a, b = np.asarray(ours[kind][name], dtype=np.float64), np.asarray(b, dtype=np.float64)
            delta = a - b
            value = float(np.abs(delta).max()) / max(float(np.abs(b).max()), floor) if b.size else 0.0
            if value > worst_max:
                worst_max, where_max = value, name
            d, n = float(np.sum(delta * delta)), float(np.sum(b * b))
            difference, norm = difference + d, norm + n
            value = (d ** 0.5) / max(n ** 0.5, floor)
            if value > worst_fro:
                worst_fro, where_fro = value, name
        errors[f"{kind}.max"] = (worst_max, where_max)
        if kind != "weights":
            errors[f"{kind}.fro"] = (worst_fro, where_fro)
            errors[f"{kind}.all"] = ((difference ** 0.5) / max(norm ** 0.5, floor), "")
    worst, where = 0.0, ""
    for name, b in theirs["scalars"].items():
        value = abs(ours["scalars"][name] - b) / max(abs(b), SCALAR_FLOOR)
        if value > worst:
            worst, where = value, name
    errors["scalars"] = (worst, where)
    return errors


def run_step(tally, directory, index, entry, state, tolerances, compute, start, spread=0, shown_lr=1.0, rounding=None):
    """One step of the reference and its comparison; `start` holds the master weights the chained
    run began from (the update is judged against them). `shown_lr` scales the learning rate the
    reference logs (a control steps with another rate but logs the dump's, so that only the step's
    effects are judged); `rounding` replaces BF16 compute's rounding (the controls without=…)."""
    label = f"step{index}"
    batch = T.Batch.from_json(entry["batch"], directory)
    if compute == "bf16":
        # The BF16 attention's rounding of p depends on the running max of its key blocks: say when
        # an item spans more than one block (BlockedAttention implements that case too).
        lengths = sequence_lengths(state.config, batch)
        over = [n for n in lengths if n > T.ATTENTION_BLOCK]
        print(f"# {label}: {len(lengths)} trunk items of up to {max(lengths, default=0)} tokens"
              + (f"; {len(over)} span more than one block of {T.ATTENTION_BLOCK} keys ({over})" if over else ""),
              flush=True)
    twins = jittered_gradients(state, batch, compute == "bf16", spread, index) if spread else []
    out = state.step(batch, bf16=(compute == "bf16"), rounding=rounding)
    engine = entry.get("outputs", {}) or {}
    for name in ("loss", "contrastive", "choice", "learning_rate", "grad_norm"):
        if name in engine:
            expected = out[name] * (shown_lr if name == "learning_rate" else 1.0)
            compare_scalar(tally, f"{label}/{name}", engine[name], expected, tolerances.tensor("scalars", index))
        else:
            tally.record(False, f"{label}/{name}", "not in the dump's outputs")
    if "temperatures" in engine:
        compare_tensor(tally, f"{label}/temperatures", np.asarray(engine["temperatures"], dtype=np.float64),
                       out["temperatures"].numpy(), tolerances.tensor("weights", index), FLOORS["weights"])
    else:
        tally.record(False, f"{label}/temperatures", "not in the dump's outputs")
    if "bag_embeddings" in engine:
        array = np.load(os.path.join(directory, engine["bag_embeddings"]), allow_pickle=False)
        compare_tensor(tally, f"{label}/bag_embeddings", array, out["bag_embeddings"].numpy(),
                       tolerances.tensor("embeddings", index), FLOORS["embeddings"])
    else:
        tally.record(False, f"{label}/bag_embeddings", "not in the dump's outputs")
    gradients = None
    if entry.get("gradients"):
        gradients = compare_gradients(tally, f"{label}/gradient", os.path.join(directory, entry["gradients"]),
                                      out["gradients"], tolerances.tensor("gradient", index))
        if twins:
            report_spread(f"{label}/gradient", os.path.join(directory, entry["gradients"]), out["gradients"], twins,
                          tolerances.tensor("gradient", index))
    if not entry.get("after"):
        tally.record(False, f"{label}/after", "the step names no 'after' checkpoint")
        return
    after = compare_after(tally, f"{label}/after", os.path.join(directory, entry["after"]), state, tolerances, index)
    if tolerances.whole("gradient", index) is None:
        return
    # Over the whole model: what a step's per-tensor worst cannot see (a learning rate off by a few
    # per cent moves every element a little).
    names = state.names
    wholes = [("gradient", gradients, {n: out["gradients"][n].numpy() for n in names}, ""),
              ("m", after, {n: state.m[n].numpy() for n in names}, "optimizer.m."),
              ("v", after, {n: state.v[n].numpy() for n in names}, "optimizer.v.")]
    for kind, arrays, reference, prefix in wholes:
        if arrays is None or any(prefix + n not in arrays for n in names):
            tally.record(False, f"{label}/whole.{kind}", "the engine's tensors are incomplete")
            continue
        compare_whole(tally, f"{label}/whole.{kind}", {n: arrays[prefix + n] for n in names}, reference,
                      tolerances.whole(kind, index), FLOORS[kind])
    if any(f"optimizer.weights.{n}" not in after for n in names):
        tally.record(False, f"{label}/whole.update", "the engine's master weights are incomplete")
        return
    compare_whole(tally, f"{label}/whole.update",
                  {n: after[f"optimizer.weights.{n}"].astype(np.float64) - start[n] for n in names},
                  {n: state.weights[n].numpy() - start[n] for n in names}, tolerances.whole("update", index),
                  FLOORS["update"])


def compare_dump(directory, threads=2, resync=False, spread=0, control=None, flat=None):
    """Runs the reference over the dump and compares. `control`, a deliberately wrong reference:
    "lr=FACTOR" steps with a learning rate FACTOR times the dump's (and logs the dump's);
    "without=SITE" (train_reference.ROUNDING_SITES) or "without=all" skips BF16 roundings."""
    tally = Tally()
    manifest_path = os.path.join(directory, "manifest.json")
    torch.set_num_threads(max(1, threads))
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        compute = str(manifest.get("compute", "f32")).lower()
        if compute not in CHAINED:
            raise ValueError(f"compute {compute!r} is not f32 or bf16")
        checkpoint = manifest["checkpoint"]
        if not os.path.isabs(checkpoint):
            checkpoint = os.path.join(directory, checkpoint)
        optimizer = dict(manifest.get("optimizer", {}) or {})
        unknown = sorted(set(optimizer) - set(T.OPTIMIZER_DEFAULTS))
        if unknown:
            raise ValueError(f"optimizer keys {unknown} are unknown")
        factor, rounding = 1.0, None
        if control and control.startswith("lr="):
            factor = float(control[3:])
            optimizer = dict(T.OPTIMIZER_DEFAULTS, **optimizer)
            optimizer["learning_rate"] *= factor
        elif control and control.startswith("without="):
            rounding = T.no_rounding if control == "without=all" else T.rounding_without(control[8:])
        elif control:
            raise ValueError(f"control {control!r} is not lr=FACTOR, without=SITE or without=all")
        state = T.TrainerState.from_checkpoint(checkpoint, optimizer, torch.float64)
        steps = manifest["steps"]
        if not steps:
            raise ValueError("no steps")
    except Exception as error:  # a broken manifest or checkpoint is one failure, not a crash
        tally.record(False, manifest_path, f"{type(error).__name__}: {error}")
        return tally
    tolerances = Tolerances(compute, resync, flat)
    print(f"# {len(steps)} steps, compute {compute}{', each from the engine state (--resync)' if resync else ', chained'}, "
          f"from step {state.step_count}, optimizer {json.dumps(state.optimizer, sort_keys=True)}", flush=True)
    start = {name: tensor.numpy().copy() for name, tensor in state.weights.items()}
    for index, entry in enumerate(steps):
        started = time.perf_counter()
        try:
            run_step(tally, directory, index, entry, state, tolerances, compute, start, spread, 1.0 / factor, rounding)
        except Exception as error:
            traceback.print_exc()
            tally.record(False, f"step{index}", f"{type(error).__name__}: {error}")
            break                     # the reference's state is no longer the engine's starting point
        print(f"# step {index}: {time.perf_counter() - started:.2f} s", flush=True)
        if resync and entry.get("after"):
            # Diagnosis only: the next step starts from the engine's state, so each step is judged alone.
            state = T.TrainerState.from_checkpoint(os.path.join(directory, entry["after"]), state.optimizer, torch.float64)
            start = {name: tensor.numpy().copy() for name, tensor in state.weights.items()}
    return tally


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description="Compare an engine step-parity dump with the PyTorch training reference.")
    parser.add_argument("dump_dir", nargs="?")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the float64 reference")
    parser.add_argument("--resync", action="store_true",
                        help="diagnosis: start each step from the engine's previous 'after' state, so steps are "
                             "judged one by one (under BF16 compute at the tolerances of step 0)")
    parser.add_argument("--flat", type=float, metavar="TOL",
                        help="judge every quantity of every step at TOL (v at (1 + TOL)^2 - 1) instead of CHAINED, "
                             "which is measured on train_parity_dump's dumps: for other dumps, such as the examples")
    parser.add_argument("--control", metavar="lr=FACTOR|without=SITE|without=all",
                        help="a negative control: the reference runs FACTOR times the dump's learning rate, or BF16 "
                             "compute without the rounding at SITE (x, weight, dy, qk, v, p, dout) or any; the exit "
                             "status is 0 only when the comparison fails")
    parser.add_argument("--spread", type=int, default=0, metavar="N",
                        help="diagnosis: also step N copies of the reference with weights jittered by 1e-7 relative "
                             "and print ('#' lines) their gradient errors beside the engine's; judges nothing")
    parser.add_argument("--write-dump", metavar="DIR", help="write an example dump (the reference standing in) instead")
    parser.add_argument("--compute", choices=("f32", "bf16"), default="f32", help="with --write-dump")
    parser.add_argument("--dtype", choices=("float32", "float64"),
                        help="with --write-dump: the stand-in's precision (default float32 for f32, float64 for bf16)")
    parser.add_argument("--seed", type=int, default=7, help="with --write-dump")
    args = parser.parse_args(argv)
    if args.write_dump:
        torch.set_num_threads(max(1, args.threads))
        T.write_example_dump(args.write_dump, args.compute, args.seed, dtype=T.example_dtype(args.compute, args.dtype))
        print(f"wrote {os.path.join(args.write_dump, 'manifest.json')}")
        return 0
    if not args.dump_dir:
        parser.error("DUMP_DIR is required (or --write-dump DIR)")
    tally = compare_dump(args.dump_dir, args.threads, args.resync, args.spread, args.control, args.flat)
    print(f"{tally.passed} passed, {tally.failed} failed")
    if args.control:
        # The comparison must see the wrong step; a broken dump fails the control too (0 passed).
        caught = tally.failed > 0 and tally.passed > 0
        print(f"control {args.control}: {'caught' if caught else 'NOT caught'} ({tally.failed} comparisons failed)")
        return 0 if caught else 1
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
