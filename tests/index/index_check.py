"""Checks of `uform index` output for test_index_cli.sh (Debian's python3 with NumPy).

    index_check.py corpus INDEX CORPUS_DIR          the mixed corpus: items, modalities, errors
    index_check.py paths INDEX MODALITY             prints the paths of one modality's items, in order
    index_check.py equal INDEX MODALITY NPY [i8|b1] the modality's rows equal `uform encode`'s .npy rows
    index_check.py manifest INDEX                   the manifest run's items and errors
    index_check.py same-items INDEX_A INDEX_B       same paths, modalities and embeddings (any order)

Every failure prints what was found and what was expected; the exit status is 1 then.
"""

import json
import os
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I8": np.int8, "U8": np.uint8, "I64": np.int64}
NAMES = ["text", "image", "video", "audio"]


def tensor(path, name):
    """One tensor of an index file, read with NumPy from the safetensors layout (also imported by the
    index tests written with pytest)."""
    raw = open(path, "rb").read()
    length = int.from_bytes(raw[:8], "little")
    entry = json.loads(raw[8:8 + length])[name]
    begin, end = entry["data_offsets"]
    return np.frombuffer(raw[8 + length + begin:8 + length + end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])


def load(path):
    raw = open(path, "rb").read()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name != "__metadata__":
            begin, end = entry["data_offsets"]
            tensors[name] = np.frombuffer(data[begin:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
    offsets = tensors["items.path_offsets"]
    blob = tensors["items.paths"].tobytes()
    paths = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "surrogateescape") for i in range(len(offsets) - 1)]
    modality = [int(m) for m in tensors["items.modality"]]
    rows, seen = [], [0, 0, 0, 0]
    for m in modality:
        rows.append(tensors["embeddings." + NAMES[m]][seen[m]])
        seen[m] += 1
    return header["__metadata__"], paths, modality, rows


def errors_of(index):
    lines = open(index + ".errors.jsonl").read().splitlines()
    return [json.loads(line) for line in lines]


def expect(condition, message):
    if not condition:
        print("FAIL:", message)
        expect.failures += 1


expect.failures = 0


def corpus(index, folder):
    metadata, paths, modality, rows = load(index)
    bad = {"empty.jpg", "truncated.jpg", "random.bin"}
    expected = {}
    for root, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            if name.startswith(".") or name in bad:
                continue
            path = os.path.join(root, name)
            lower = name.lower()
            if lower.endswith((".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a")) and name != "renamed.wav":
                kind = 3
            elif lower.endswith((".mp4", ".webm", ".mkv")):
                kind = 2
            elif lower.endswith(".txt"):
                kind = 0
            else:
                kind = 1
            expected[path] = kind
    expect(len(paths) == len(set(paths)), f"duplicate paths in the index: {len(paths)} items, {len(set(paths))} distinct")
    expect(set(paths) == set(expected), f"indexed {sorted(set(paths) - set(expected))} unexpectedly, "
                                        f"missing {sorted(set(expected) - set(paths))}")
    for path, m in zip(paths, modality):
        if path in expected:
            expect(m == expected[path], f"{path}: modality {NAMES[m]}, expected {NAMES[expected[path]]}")
    expect(metadata["uform.index.count"] == str(len(paths)), f"metadata count {metadata['uform.index.count']} for {len(paths)} items")
    for row in rows:
        expect(abs(float(np.linalg.norm(row.astype(np.float64))) - 1) < 1e-4, "an embedding is not unit length")
    errors = {os.path.basename(e["path"]): e for e in errors_of(index)}
    expect(set(errors) == bad, f"errors list {sorted(errors)}, expected {sorted(bad)}")
    wanted = {"empty.jpg": "empty", "truncated.jpg": "JPEG", "random.bin": "neither media"}
    for name, fragment in wanted.items():
        if name in errors:
            expect(fragment in errors[name]["message"], f"{name}: message {errors[name]['message']!r} lacks {fragment!r}")
            expect(errors[name]["status"] == "format", f"{name}: status {errors[name]['status']}")
    print(f"{len(paths)} items, {len(errors)} errors checked")


def paths(index, modality):
    _, all_paths, kinds, _ = load(index)
    for path, m in zip(all_paths, kinds):
        if NAMES[m] == modality:
            print(path)


def equal(index, modality, npy, scalar="f32"):
    _, all_paths, kinds, rows = load(index)
    ours = [row for row, m in zip(rows, kinds) if NAMES[m] == modality]
    theirs = np.load(npy)
    expect(len(ours) > 0, f"the index holds no {modality} rows: nothing to compare")
    expect(len(ours) == theirs.shape[0], f"{len(ours)} {modality} rows in the index, {theirs.shape[0]} from uform encode")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a = np.asarray(a).reshape(-1)
        b = np.asarray(b).reshape(-1)
        if scalar in ("i8", "b1"):
            expect(np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{modality} row {i}: {a[:6]} vs {b[:6]}")
        else:
            difference = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
            expect(a.shape == b.shape and difference == 0.0, f"{modality} row {i}: differs by {difference}")
    print(f"{len(ours)} {modality} rows equal uform encode's")


def manifest(index):
    _, all_paths, kinds, _ = load(index)
    got = dict(zip(all_paths, kinds))
    expected = {"man/../corpus/images/baseline.jpg": 1, "greeting": 0, "man/../corpus/sounds/pcm16.wav": 3,
                "man/manifest.jsonl:6": 0}
    expect(got == expected, f"manifest items {got}, expected {expected}")
    errors = {e["path"]: e["message"] for e in errors_of(index)}
    expect(set(errors) == {"man/missing.jpg", "man/manifest.jsonl:4"}, f"manifest errors {errors}")
    expect("cannot open" in errors.get("man/missing.jpg", ""), f"missing.jpg: {errors.get('man/missing.jpg')}")
    print("manifest checked")


def same_items(a, b):
    _, paths_a, kinds_a, rows_a = load(a)
    _, paths_b, kinds_b, rows_b = load(b)
    left = {p: (k, r.tobytes()) for p, k, r in zip(paths_a, kinds_a, rows_a)}
    right = {p: (k, r.tobytes()) for p, k, r in zip(paths_b, kinds_b, rows_b)}
    expect(bool(right), f"{b} holds no items: nothing to compare")
    expect(left == right, f"{a} and {b} differ: {len(left)} vs {len(right)} items, "
                          f"{sum(1 for p in left if p in right and left[p] != right[p])} different rows")


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"corpus": corpus, "paths": paths, "equal": equal, "manifest": manifest, "same-items": same_items}[command](*arguments)
    sys.exit(1 if expect.failures else 0)
