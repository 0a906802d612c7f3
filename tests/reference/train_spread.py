"""Measures how far two correct training computations drift apart over chained steps, the basis of
compare_train.py's chained tolerances (tests/reference/README.md, "Chained steps").

    /usr/bin/python3 tests/reference/train_spread.py DUMP [DUMP ...] [--controls] [--threads N]

Every DUMP is a step-parity dump of the same start, batches and compute (train_parity_dump [--bf16]
[--seed N] run with UFORM_CPU_CLASS=serial, haswell, skylake, genoa ...). Compared per step,
chained (each run on its own state from the start): every engine dump against the float64
reference, the engines against each other, and a float32 twin of the reference (same compute)
against the float64 one. With --controls, also the first engine against references that are
deliberately wrong: a learning rate off by 5 % and by 2 %, and under BF16 compute each rounding
site dropped in turn and all of them. For each pair and step it prints the worst tensor of every
metric compare_train.chained_errors computes. Judges nothing.
"""

import argparse
import itertools
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_train as C  # noqa: E402
import train_reference as T  # noqa: E402
import uform_reference as R  # noqa: E402


def engine_run(directory):
    """[{kind: {name: array}}] per step from an engine dump: gradients, weights, m, v, the update
    since the start, bag embeddings and the logged scalars."""
    with open(os.path.join(directory, "manifest.json")) as handle:
        manifest = json.load(handle)
    start = T.TrainerState.from_checkpoint(os.path.join(directory, manifest["checkpoint"]), manifest["optimizer"])
    steps = []
    for entry in manifest["steps"]:
        _, grads = R.read_safetensors(os.path.join(directory, entry["gradients"]))
        _, after = R.read_safetensors(os.path.join(directory, entry["after"]))
        record = {"gradient": {n: grads[n].astype(np.float64) for n in start.names}}
        for kind in ("weights", "m", "v"):
            record[kind] = {n: after[f"optimizer.{kind}.{n}"].astype(np.float64) for n in start.names}
        record["update"] = {n: record["weights"][n] - start.weights[n].numpy() for n in start.names}
        record["embeddings"] = {"bags": np.load(os.path.join(directory, entry["outputs"]["bag_embeddings"])).astype(np.float64)}
        record["scalars"] = {k: float(entry["outputs"][k]) for k in ("loss", "contrastive", "choice", "grad_norm")}
        steps.append(record)
    return manifest, steps


def reference_run(directory, manifest, dtype=torch.float64, optimizer=None, rounding=None):
    """The same records from the training reference stepping the dump's batches on its own state,
    with the dump's compute."""
    bf16 = str(manifest.get("compute", "f32")).lower() == "bf16"
    state = T.TrainerState.from_checkpoint(os.path.join(directory, manifest["checkpoint"]),
                                           optimizer or manifest["optimizer"], dtype)
    start = {n: w.numpy().astype(np.float64).copy() for n, w in state.weights.items()}
    steps = []
    for entry in manifest["steps"]:
        batch = T.Batch.from_json(entry["batch"], directory)
        out = state.step(batch, bf16=bf16, rounding=rounding)
        record = {"gradient": {n: g.numpy().astype(np.float64) for n, g in out["gradients"].items()}}
        for kind, store in (("weights", state.weights), ("m", state.m), ("v", state.v)):
            record[kind] = {n: t.numpy().astype(np.float64).copy() for n, t in store.items()}
        record["update"] = {n: record["weights"][n] - start[n] for n in state.names}
        record["embeddings"] = {"bags": out["bag_embeddings"].numpy().astype(np.float64)}
        record["scalars"] = {k: float(out[k]) for k in ("loss", "contrastive", "choice", "grad_norm")}
        steps.append(record)
    return steps


def report(label, ours, theirs):
    for index, (a, b) in enumerate(zip(ours, theirs)):
        errors = C.chained_errors(a, b)
        cells = [f"{metric} {value:.2e} ({where})" for metric, (value, where) in errors.items()]
        print(f"{label} step{index}: " + "; ".join(cells), flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--controls", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    runs = {}
    for directory in args.dumps:
        manifest, steps = engine_run(directory)
        runs[os.path.basename(os.path.normpath(directory))] = steps
    first = args.dumps[0]
    reference = reference_run(first, manifest)
    for name, steps in runs.items():
        report(f"engine {name} vs f64", steps, reference)
    for (a, sa), (b, sb) in itertools.combinations(runs.items(), 2):
        report(f"engine {a} vs engine {b}", sa, sb)
    report("f32 twin vs f64", reference_run(first, manifest, torch.float32), reference)
    if args.controls:
        name, steps = next(iter(runs.items()))
        for factor in (1.05, 1.02):
            faster = dict(manifest["optimizer"], learning_rate=manifest["optimizer"]["learning_rate"] * factor)
            report(f"engine {name} vs f64 lr x{factor}", steps, reference_run(first, manifest, optimizer=faster))
        if str(manifest.get("compute", "f32")).lower() != "bf16":
            return 0
        for site in T.ROUNDING_SITES:
            report(f"engine {name} vs f64 without rounding {site}", steps,
                   reference_run(first, manifest, rounding=T.rounding_without(site)))
        report(f"engine {name} vs f64 without any rounding", steps, reference_run(first, manifest, rounding=T.no_rounding))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
