"""Checks the engine's parity dump against the PyTorch reference.

    /usr/bin/python3 tests/reference/compare.py DUMP_DIR [--case NAME]... [--threads N]

DUMP_DIR/manifest.json names the checkpoint and the cases (format: tests/reference/README.md).
The reference runs every case from the raw inputs with its own preprocessing, and each output
the engine wrote is compared:

- float outputs (states, f32 embeddings and token vectors, probabilities): the per-tensor relative
  error max|a - b| / max|b| must stay within 1e-4 for F32 compute and 1e-2 for BF16 compute; the
  elementwise worst relative error is reported too;
- converted outputs (f16, bf16, i8, b1): the engine's value must be what the conversion gives for
  some value within the tolerance of the reference's, i.e. lie between convert(x - delta) and
  convert(x + delta) with delta = tolerance * max|x| (the conversions are monotonic); for b1 delta
  is 1e-5 * max|x| under F32 compute, so a sign may differ only where |x| is that small;
- offsets: exactly equal;
- preprocessing dumps: resized images and resampled samples within 1e-5 relative of torchvision /
  torchaudio run on float32 data and within 1e-4 relative of the exact (float64) filters; log-mel
  within 1e-4 absolute (computed from the engine's own resampled samples when they are dumped, so
  the check isolates the log-mel).

The model's inputs come from torchvision / torchaudio in float32 and the log-mel and model in
float64 (Case.items says why).

One line per comparison, then "N passed, N failed"; the exit status is 1 when any failed.
"""

import base64
import json
import os
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uform_reference as R  # noqa: E402

TOLERANCE = {"f32": 1e-4, "bf16": 1e-2}
B1_TOLERANCE = {"f32": 1e-5, "bf16": 1e-2}
LIBRARY_TOLERANCE = 1e-5               # resized images and resampled samples vs torchvision/torchaudio in float32
EXACT_PREPROCESSING_TOLERANCE = 1e-4   # the same vs the exact (float64) filters
LOG_MEL_TOLERANCE = 1e-4
TINY = 1e-30


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, ok, label, detail):
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def _errors(engine, reference):
    difference = np.abs(engine - reference)
    scale = max(float(np.max(np.abs(reference))) if reference.size else 0.0, TINY)
    worst = float(difference.max()) if difference.size else 0.0
    elementwise = float(np.max(difference / np.maximum(np.abs(reference), TINY))) if difference.size else 0.0
    return worst, worst / scale, elementwise, scale


def comparable(tally, label, engine, reference):
    """Both as float64 arrays when they can be compared; else None, None after recording why (other
    shapes, or non-finite values in the engine's)."""
    engine, reference = np.asarray(engine, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if engine.shape != reference.shape:
        tally.record(False, label, f"shape {list(engine.shape)}, reference {list(reference.shape)}")
        return None, None
    if not np.all(np.isfinite(engine)):
        tally.record(False, label, f"{int(np.sum(~np.isfinite(engine)))} non-finite values")
        return None, None
    return engine, reference


def compare_float(tally, label, engine, reference, tolerance, absolute=False):
    engine, reference = comparable(tally, label, engine, reference)
    if engine is None:
        return
    worst, relative, elementwise, _ = _errors(engine, reference)
    measured = worst if absolute else relative
    where = ""
    if engine.size:
        index = np.unravel_index(int(np.argmax(np.abs(engine - reference))), engine.shape)
        where = f" at {list(map(int, index))} engine {engine[index]:.9g} reference {reference[index]:.9g}"
    tally.record(measured <= tolerance, label,
                 f"max_abs {worst:.3e} max_rel {relative:.3e} worst_elem_rel {elementwise:.3e} "
                 f"tol {tolerance:.0e} {'abs' if absolute else 'rel'}{where}")


def compare_scalar(tally, label, stored, reference, kind, compute):
    """stored: the engine's array in dump storage; reference: float64 [rows, columns]."""
    reference = np.asarray(reference, dtype=np.float64)
    if kind == "f32":
        compare_float(tally, label, stored, reference, TOLERANCE[compute])
        return
    rows, columns = reference.shape
    stored = np.asarray(stored)
    expected_shape = (rows, (columns + 7) // 8) if kind == "b1" else (rows, columns)
    if stored.shape != expected_shape:
        tally.record(False, label, f"{kind} shape {list(stored.shape)}, expected {list(expected_shape)}")
        return
    scale = max(float(np.max(np.abs(reference))) if reference.size else 0.0, TINY)
    delta = (B1_TOLERANCE if kind == "b1" else TOLERANCE)[compute] * scale
    engine = R.decode_scalar(stored, kind, columns)
    low = R.decode_scalar(R.convert_scalar(reference - delta, kind), kind, columns)
    high = R.decode_scalar(R.convert_scalar(reference + delta, kind), kind, columns)
    exact = R.decode_scalar(R.convert_scalar(reference, kind), kind, columns)
    outside = (engine < low) | (engine > high)
    differing = int(np.sum(engine != exact))
    detail = (f"{kind}: {differing} of {engine.size} differ from the reference's conversion, "
              f"{int(outside.sum())} beyond delta {delta:.3e} (tol {TOLERANCE[compute] if kind != 'b1' else B1_TOLERANCE[compute]:.0e} x max|x| {scale:.3g})")
    if kind in ("f16", "bf16"):
        worst, relative, _, _ = _errors(engine, reference)
        detail += f"; decoded max_abs {worst:.3e} max_rel {relative:.3e}"
    if outside.any():
        index = tuple(int(i) for i in np.argwhere(outside)[0])
        detail += f"; first at {list(index)}: engine {engine[index]:g}, allowed [{low[index]:g}, {high[index]:g}], x {reference[index]:.9g}"
    tally.record(not outside.any(), label, detail)


def compare_offsets(tally, label, engine, reference):
    engine = np.asarray(engine).astype(np.int64).reshape(-1)
    reference = np.asarray(reference, dtype=np.int64).reshape(-1)
    ok = engine.shape == reference.shape and bool(np.all(engine == reference))
    tally.record(ok, label, f"engine {engine.tolist()[:12]}{'...' if engine.size > 12 else ''}, "
                            f"reference {reference.tolist()[:12]}{'...' if reference.size > 12 else ''}")


class Case:
    def __init__(self, directory, entry, model, cache):
        self.directory, self.entry, self.model, self.cache = directory, entry, model, cache
        self.name = entry.get("name", "?")
        self.modality = str(entry["modality"]).lower()
        self.compute = str(entry.get("compute", "f32")).lower()
        self.dimensions = int(entry.get("dimensions", 0) or 0)
        self.scalar = str(entry.get("scalar", "f32")).lower()
        self.inputs = entry.get("inputs", {})
        self.outputs = entry.get("outputs", {}) or {}
        self.preprocessed = entry.get("preprocessed", {}) or {}
        if self.compute not in TOLERANCE:
            raise ValueError(f"compute {self.compute!r} is not f32 or bf16")

    def npy(self, name):
        return np.load(os.path.join(self.directory, name), allow_pickle=False)

    def items(self):
        """The model's inputs and, per kind, the intermediate tensors.

        Resizing and resampling run in torchvision / torchaudio on float32 data, as the design names
        them; everything after (the log-mel, the model) runs in float64.  Float32 resampling is up
        to ~1e-5 relative off the exact filter, and the log-mel magnifies that in quiet bins (up to
        ~9e-4 at 10 s), enough to move `small`'s token vectors by ~1e-4; torchvision's float32
        filter coordinates put resized pixels up to ~5e-5 relative off the exact filter at S = 224.
        An engine that mirrors the libraries shares those roundings, so the model's inputs follow
        the libraries, and the exact (float64) filters bound both separately."""
        config, inputs = self.model.config, self.inputs
        if "texts" in inputs:
            return [base64.b64decode(text) for text in inputs["texts"]], {}
        if "pixels" in inputs:
            pixels = [self.npy(p["npy"]) for p in inputs["pixels"]]
            images = [R.preprocess_image(p, config, torch.float32) for p in pixels]
            return [x.double() for x in images], {"images": images, "sources": pixels}
        if "frames" in inputs:
            frames = [self.npy(f["npy"]) for f in inputs["frames"]]
            videos = [R.preprocess_video(f, config, torch.float32) for f in frames]
            return [x.double() for x in videos], {"images": videos, "sources": frames}
        if "samples" in inputs:
            resampled, mels, sources = [], [], []
            for entry in inputs["samples"]:
                samples = np.asarray(self.npy(entry["npy"]), dtype=np.float32)
                fitted = R.fit_audio(R.resample(samples, entry["rate"], torch.float32), config["audio"]["seconds"])
                resampled.append(fitted)
                mels.append(R.log_mel(fitted.double(), config["audio"]["mels"]))
                sources.append((samples, entry["rate"]))
            return mels, {"resampled": resampled, "log_mels": mels, "sources": sources}
        raise ValueError(f"inputs hold none of texts, pixels, frames, samples: {sorted(inputs)}")

    def exact(self, kind, intermediate):
        """The same preprocessing in float64: the exact filters."""
        config = self.model.config
        if kind == "images":
            if "frames" in self.inputs:
                return [R.preprocess_video(f, config) for f in intermediate["sources"]]
            return [R.preprocess_image(p, config) for p in intermediate["sources"]]
        return [R.preprocess_audio(samples, rate, config)[0] for samples, rate in intermediate["sources"]]

    def check_preprocessing(self, tally, intermediate):
        label = f"{self.name}/preprocessed"
        for kind in ("images", "resampled", "log_mels"):
            files = self.preprocessed.get(kind)
            if not files:
                continue
            library = intermediate.get(kind)
            if library is None:
                tally.record(False, f"{label}.{kind}", f"dumped for inputs {sorted(self.inputs)}, which have none")
                continue
            engines = [self.npy(name) for name in files]
            if kind == "log_mels":
                # Isolate the log-mel from the resampler: start from the engine's own samples when dumped.
                if self.preprocessed.get("resampled"):
                    mels = self.model.config["audio"]["mels"]
                    library = [R.log_mel(torch.from_numpy(self.npy(name).astype(np.float64)), mels)
                               for name in self.preprocessed["resampled"]]
                checks = [("", library, LOG_MEL_TOLERANCE, True)]
            else:
                name = "torchvision" if kind == "images" else "torchaudio"
                checks = [(f" vs {name} f32", library, LIBRARY_TOLERANCE, False),
                          (" vs exact (f64)", self.exact(kind, intermediate), EXACT_PREPROCESSING_TOLERANCE, False)]
            for suffix, references, tolerance, absolute in checks:
                if kind == "images" and references[0].dim() == 4 and engines and engines[0].ndim == 3:
                    references = [frame for video in references for frame in video]   # one file per frame
                if len(engines) != len(references):
                    tally.record(False, f"{label}.{kind}{suffix}", f"{len(engines)} files, reference has {len(references)} items")
                    continue
                for index, (engine, reference) in enumerate(zip(engines, references)):
                    compare_float(tally, f"{label}.{kind}[{index}]{suffix}", engine, reference.double().numpy(),
                                  tolerance, absolute)

    def reference_finals(self):
        """Preprocessed items, intermediates and the trunk's final states, shared by the cases that
        encode the same inputs (they differ only in scalar kind or dimensions)."""
        key = json.dumps([self.modality, self.inputs], sort_keys=True)
        if key not in self.cache:
            items, intermediate = self.items()
            finals = None
            if self.modality in R.MODALITIES:
                with torch.no_grad():
                    finals = self.model.trunk([self.model.stem(self.modality, item) for item in items])
            self.cache.clear()                     # keep one entry: the dumps group equal inputs together
            self.cache[key] = (items, intermediate, finals)
        return self.cache[key]

    def run(self, tally):
        items, intermediate, finals = self.reference_finals()
        self.check_preprocessing(tally, intermediate)
        if self.modality == "choose":
            self.run_choose(tally, items)
            return
        if self.modality not in R.MODALITIES:
            raise ValueError(f"modality {self.modality!r} is unknown")
        with torch.no_grad():
            reference = self.model.heads_of(self.modality, finals, self.dimensions)
        label = f"{self.name}/{self.modality}/{self.compute}/{self.scalar}/dims{self.dimensions}"
        for name in ("embeddings", "token_vectors"):
            if name in self.outputs:
                compare_scalar(tally, f"{label}.{name}", self.npy(self.outputs[name]),
                               reference[name].numpy(), self.scalar, self.compute)
        if "states" in self.outputs:
            compare_float(tally, f"{label}.states", self.npy(self.outputs["states"]),
                          reference["states"].numpy(), TOLERANCE[self.compute])
        for name in ("token_offsets", "state_offsets"):
            if name in self.outputs:
                compare_offsets(tally, f"{label}.{name}", self.npy(self.outputs[name]), reference[name])

    def run_choose(self, tally, texts):
        choices = [base64.b64decode(c) for c in self.inputs.get("choices", [])]
        if len(choices) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(choices)} choice lists")
        groups = self.inputs.get("groups") or [0] * len(texts)
        with torch.no_grad():
            probabilities = self.model.choose(texts, choices, groups)
        label = f"{self.name}/choose/{self.compute}"
        if "probabilities" in self.outputs:
            compare_float(tally, f"{label}.probabilities", self.npy(self.outputs["probabilities"]),
                          torch.cat(probabilities).numpy() if probabilities else np.zeros(0),
                          TOLERANCE[self.compute])
        if "choice_offsets" in self.outputs:
            offsets = np.cumsum([0] + [len(c) for c in choices])
            compare_offsets(tally, f"{label}.choice_offsets", self.npy(self.outputs["choice_offsets"]), offsets)


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description="Compare an engine parity dump with the PyTorch reference.")
    parser.add_argument("dump_dir")
    parser.add_argument("--case", action="append", help="only the named case(s)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the float64 reference")
    args = parser.parse_args(argv)
    tally = Tally()
    manifest_path = os.path.join(args.dump_dir, "manifest.json")
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        checkpoint = manifest["checkpoint"]
        if not os.path.isabs(checkpoint):
            checkpoint = os.path.join(args.dump_dir, checkpoint)
        model = R.Model.from_file(checkpoint, torch.float64)
    except Exception as error:  # a broken manifest or checkpoint is one failure, not a crash
        tally.record(False, manifest_path, f"{type(error).__name__}: {error}")
        print(f"{tally.passed} passed, {tally.failed} failed")
        return 1
    torch.set_num_threads(max(1, args.threads))
    cases = manifest.get("cases", [])
    cache = {}
    if not cases:
        tally.record(False, manifest_path, "no cases")
    for missing in sorted(set(args.case or []) - {entry.get("name") for entry in cases}):
        tally.record(False, missing, "no such case in the dump")
    for entry in cases:
        if args.case and entry.get("name") not in args.case:
            continue
        started = time.perf_counter()
        before = tally.passed + tally.failed
        try:
            Case(args.dump_dir, entry, model, cache).run(tally)
            print(f"# case {entry.get('name')}: {time.perf_counter() - started:.2f} s", flush=True)
            if tally.passed + tally.failed == before:    # a case that names no outputs proves nothing
                tally.record(False, f"{entry.get('name', '?')}", "the case names no outputs to compare")
        except Exception as error:
            traceback.print_exc()
            tally.record(False, f"{entry.get('name', '?')}", f"{type(error).__name__}: {error}")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
