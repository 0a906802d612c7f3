"""Checks the engine's step-parity dump against the PyTorch training reference.

    /usr/bin/python3 tests/reference/compare_train.py DUMP_DIR [--threads N] [--resync] [--spread N]
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
  storage's rounding (2^-8 relative for BF16).

Per tensor the error is max|a - b| / max(max|b|, floor) and must be <= 1e-4 (F32 compute) or 1e-2
(BF16 compute); the elementwise worst relative error is printed, not judged.  The floor makes a
tensor whose reference is zero everywhere (the moments of a tensor no batch reached, say) an
absolute check: FLOORS below, so 0 against 1e-30 passes and 0 against 1e-12 does not.

One line per comparison, then "N passed, N failed"; the exit status is 1 when any failed.
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

TOLERANCE = {"f32": 1e-4, "bf16": 1e-2}
SCALAR_FLOOR = 1e-6
# Absolute floors of the per-tensor scale max|b|: a reference that is zero everywhere accepts an
# engine value up to tolerance * floor (1e-16 for gradients, moments and weights under F32 compute,
# 1e-28 for v, the square's scale).  Real tensors sit far above: a gradient of 1e-12 is already
# one no batch meaningfully reached.
FLOORS = {"gradient": 1e-12, "weights": 1e-12, "m": 1e-12, "v": 1e-24, "embeddings": 1e-12}
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


def compare_tensor(tally, label, engine, reference, tolerance, floor, excusable=None):
    """Per tensor: max|a - b| / max(max|b|, floor) <= tolerance.  `excusable` (BF16 master weights
    only) is the per-element disagreement AdamW explains: see excusable_allowance."""
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
    excused = 0
    if excusable is not None:
        # excusable: per element, the disagreement AdamW can explain there (0 where it explains none).
        over = difference > tolerance * scale
        explained = over & (difference <= tolerance * scale + excusable)
        excused = int(np.sum(explained))
        difference = np.where(explained, 0.0, difference)
    worst = float(difference.max())
    elementwise = float(np.max(difference / np.maximum(np.abs(reference), floor)))
    index = np.unravel_index(int(np.argmax(difference)), engine.shape)
    tally.record(worst / scale <= tolerance, label,
                 f"max_abs {worst:.3e} max_rel {worst / scale:.3e} worst_elem_rel {elementwise:.3e} tol {tolerance:.0e}"
                 f"{' (floor ' + format(floor, '.0e') + ')' if peak < floor else ''}"
                 f" at {list(map(int, index))} engine {engine[index]:.9g} reference {reference[index]:.9g}"
                 + (f"; {excused} element(s) excused (gradient within the BF16 tolerance of zero)" if excused else ""))


def excusable_allowance(gradient, update, tolerance):
    """Under BF16 compute, an element whose reference gradient is within the tolerance of zero
    relative to its tensor (|g| <= tolerance * max|g|) has no sign at BF16 precision, and AdamW's
    normalised step m/(sqrt(v) + eps) still moves it by a full step in whichever direction that sign
    says: a weight difference of up to about twice the step from a gradient difference the gradient
    check already accepts.  Such an element may exceed the weights' tolerance by at most 3x the
    reference's own step there (`update`, the change of the reference's weight this step); every
    other element gets no allowance.  Answers the per-element allowance."""
    magnitude = np.abs(np.asarray(gradient, dtype=np.float64))
    small = magnitude <= tolerance * max(float(magnitude.max()), FLOORS["gradient"])
    return np.where(small, 3.0 * np.abs(np.asarray(update, dtype=np.float64)), 0.0)


def compare_scalar(tally, label, engine, reference, tolerance):
    try:
        engine = float(engine)
    except (TypeError, ValueError):
        tally.record(False, label, f"engine value {engine!r} is not a number")
        return
    error = abs(engine - reference) / max(abs(reference), SCALAR_FLOOR)
    ok = np.isfinite(engine) and error <= tolerance
    tally.record(bool(ok), label, f"engine {engine:.9g} reference {reference:.9g} rel {error:.3e} tol {tolerance:.0e}")


def square_tolerance(tolerance):
    """v accumulates squared gradients: gradients within `tolerance` of max|g| put v within
    (1 + tolerance)^2 - 1 of max|v| (first order 2 * tolerance), so v is judged at that."""
    return tolerance * (2.0 + tolerance)


def safetensors_dtypes(path):
    """{name: dtype string} from a safetensors header."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length).decode("utf-8"))
    header.pop("__metadata__", None)
    return {name: entry["dtype"] for name, entry in header.items()}


def compare_gradients(tally, label, path, reference, tolerance):
    _, arrays = R.read_safetensors(path)
    for name, expected in reference.items():
        if name not in arrays:
            tally.record(False, f"{label}.{name}", "missing from the engine's gradients")
            continue
        compare_tensor(tally, f"{label}.{name}", arrays[name], expected.numpy(), tolerance, FLOORS["gradient"])
    extra = sorted(set(arrays) - set(reference))
    if extra:
        tally.record(False, f"{label} names", f"tensors the reference does not have: {extra[:8]}")


def compare_after(tally, label, path, state, tolerance, excusable=None):
    _, arrays = R.read_safetensors(path)
    excusable = excusable or {}
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
            compare_tensor(tally, f"{label}.{key}", arrays[key], store[name].numpy(),
                           square_tolerance(tolerance) if kind == "v" else tolerance, FLOORS[kind],
                           excusable.get(name) if kind == "weights" else None)
    for name in state.names:
        if name not in arrays:
            tally.record(False, f"{label}.{name}", "missing from the engine's checkpoint")
            continue
        rounding = BF16_STORAGE if dtypes[name] == "BF16" else 0.0
        compare_tensor(tally, f"{label}.{name} ({dtypes[name]})", arrays[name], state.weights[name].numpy(),
                       tolerance + rounding, FLOORS["weights"], excusable.get(name))
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


def run_step(tally, directory, index, entry, state, tolerance, compute, spread=0, excusable=None):
    """One step of the reference and its comparison.  `excusable` ({name: per-element allowance},
    BF16 only) accumulates excusable_allowance since the state was last the engine's."""
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
    before = {name: tensor.numpy().copy() for name, tensor in state.weights.items()} if excusable is not None else None
    out = state.step(batch, bf16=(compute == "bf16"))
    engine = entry.get("outputs", {}) or {}
    for name in ("loss", "contrastive", "choice", "learning_rate", "grad_norm"):
        if name in engine:
            compare_scalar(tally, f"{label}/{name}", engine[name], out[name], tolerance)
        else:
            tally.record(False, f"{label}/{name}", "not in the dump's outputs")
    if "temperatures" in engine:
        compare_tensor(tally, f"{label}/temperatures", np.asarray(engine["temperatures"], dtype=np.float64),
                       out["temperatures"].numpy(), tolerance, FLOORS["weights"])
    else:
        tally.record(False, f"{label}/temperatures", "not in the dump's outputs")
    if "bag_embeddings" in engine:
        array = np.load(os.path.join(directory, engine["bag_embeddings"]), allow_pickle=False)
        compare_tensor(tally, f"{label}/bag_embeddings", array, out["bag_embeddings"].numpy(), tolerance,
                       FLOORS["embeddings"])
    else:
        tally.record(False, f"{label}/bag_embeddings", "not in the dump's outputs")
    if entry.get("gradients"):
        compare_gradients(tally, f"{label}/gradient", os.path.join(directory, entry["gradients"]),
                          out["gradients"], tolerance)
        if twins:
            report_spread(f"{label}/gradient", os.path.join(directory, entry["gradients"]), out["gradients"], twins,
                          tolerance)
    if excusable is not None:
        for name, gradient in out["gradients"].items():
            allowance = excusable_allowance(gradient.numpy(), state.weights[name].numpy() - before[name], tolerance)
            excusable[name] = allowance if name not in excusable else excusable[name] + allowance
    if entry.get("after"):
        compare_after(tally, f"{label}/after", os.path.join(directory, entry["after"]), state, tolerance, excusable)
    else:
        tally.record(False, f"{label}/after", "the step names no 'after' checkpoint")


def compare_dump(directory, threads=2, resync=False, spread=0):
    tally = Tally()
    manifest_path = os.path.join(directory, "manifest.json")
    torch.set_num_threads(max(1, threads))
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        compute = str(manifest.get("compute", "f32")).lower()
        if compute not in TOLERANCE:
            raise ValueError(f"compute {compute!r} is not f32 or bf16")
        checkpoint = manifest["checkpoint"]
        if not os.path.isabs(checkpoint):
            checkpoint = os.path.join(directory, checkpoint)
        optimizer = dict(manifest.get("optimizer", {}) or {})
        unknown = sorted(set(optimizer) - set(T.OPTIMIZER_DEFAULTS))
        if unknown:
            raise ValueError(f"optimizer keys {unknown} are unknown")
        state = T.TrainerState.from_checkpoint(checkpoint, optimizer, torch.float64)
        steps = manifest["steps"]
        if not steps:
            raise ValueError("no steps")
    except Exception as error:  # a broken manifest or checkpoint is one failure, not a crash
        tally.record(False, manifest_path, f"{type(error).__name__}: {error}")
        return tally
    print(f"# {len(steps)} steps, compute {compute}, from step {state.step_count}, "
          f"optimizer {json.dumps(state.optimizer, sort_keys=True)}", flush=True)
    excusable = {} if compute == "bf16" else None
    for index, entry in enumerate(steps):
        started = time.perf_counter()
        try:
            run_step(tally, directory, index, entry, state, TOLERANCE[compute], compute, spread, excusable)
        except Exception as error:
            traceback.print_exc()
            tally.record(False, f"step{index}", f"{type(error).__name__}: {error}")
            break                     # the reference's state is no longer the engine's starting point
        print(f"# step {index}: {time.perf_counter() - started:.2f} s", flush=True)
        if resync and entry.get("after"):
            # Diagnosis only: the next step starts from the engine's state, so each step is judged alone.
            state = T.TrainerState.from_checkpoint(os.path.join(directory, entry["after"]), state.optimizer, torch.float64)
            if excusable is not None:
                excusable.clear()
    return tally


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description="Compare an engine step-parity dump with the PyTorch training reference.")
    parser.add_argument("dump_dir", nargs="?")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the float64 reference")
    parser.add_argument("--resync", action="store_true",
                        help="start each step from the engine's previous 'after' state, so steps are judged one by "
                             "one (the BF16 parity test: BF16 roundings make two correct runs drift apart step "
                             "after step, so only a step from one state is a comparison of the computation)")
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
    tally = compare_dump(args.dump_dir, args.threads, args.resync, args.spread)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
