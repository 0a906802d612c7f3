"""Checks a quantized checkpoint (what `uform quantize` writes) against docs/int8.md, read with a
reader of its own: nothing of the engine is imported or run here.

    /usr/bin/python3 tests/reference/check_quantized.py ORIGINAL QUANTIZED
    /usr/bin/python3 tests/reference/check_quantized.py --edge-cases CHECKPOINT OUT

The second form writes OUT, a copy of CHECKPOINT that exercises the doc's edge cases: trunk.0's
qkv matrix in F32 with a zero row, a row below 2^-96, a row at 2^-96 exactly, a row of exact
quantization ties (x·inv = k + 1/2) and a row with one huge value; trunk.0's attn.out matrix in
F16; and an `optimizer.` tensor, which the quantized copy must drop.

Both files are read as the safetensors format defines them (an 8-byte little-endian header length,
a JSON header of name -> {dtype, shape, data_offsets} relative to the end of the header, then the
bytes), and every promise of docs/int8.md, "Quantized checkpoints", is checked:

- each trunk matrix `trunk.{i}.{attn.qkv, attn.out, mlp.up, mlp.down}.weight` is I8 of the original
  shape [n, k], with `<name>_scale` F32 [n]; both equal, bit for bit, a NumPy quantization of the
  original's values per row as the doc's "The scheme" states it (amax on |x|, scale = fl32(amax/127),
  inv = fl32(127/amax), q = rint(fl32(x·inv)) ties to even, rows with amax < 2^-96 zeros with scale 0,
  rows holding an infinity or a NaN zeros with scale NaN); no value is -128;
- every other tensor has the original's dtype, shape and bytes; `optimizer.*` tensors are gone; no
  tensor is added but the scales; `__metadata__` has "uform.quantization": "int8-per-channel".

Negative controls, on the values read: one int8 value moved by one step, and the scales computed
per matrix instead of per row, must each be reported as a mismatch, or these checks could not fail.
One line per check, then "N passed, N failed"; exit 1 on any failure or on no trunk matrix at all.
"""

import json
import re
import struct
import sys

import numpy as np

TRUNK = re.compile(r"^trunk\.\d+\.(attn\.qkv|attn\.out|mlp\.up|mlp\.down)\.weight$")
TINY = np.float32(2.0 ** -96)


def read_safetensors(path):
    """-> (metadata dict, {name: (dtype string, shape list, raw bytes)})."""
    with open(path, "rb") as handle:
        blob = handle.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length].decode("utf-8"))
    data = blob[8 + length:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        tensors[name] = (entry["dtype"], list(entry["shape"]), data[begin:end])
    return metadata, tensors


def write_safetensors(path, metadata, tensors):
    """The inverse of read_safetensors, tensors in name order."""
    header, offset = {"__metadata__": metadata}, 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + b"".join(tensors[name][2] for name in sorted(tensors)))


def edge_cases(source, out):
    metadata, tensors = read_safetensors(source)
    name = "trunk.0.attn.qkv.weight"
    w = as_float32(*tensors[name]).copy()
    k = w.shape[1]
    w[0] = 0
    w[1] = np.float32(2.0 ** -97) * np.linspace(-1, 1, k, dtype=np.float32)   # amax below 2^-96
    w[2] = np.float32(2.0 ** -96) * np.linspace(-1, 1, k, dtype=np.float32)   # amax at 2^-96
    # amax 127 gives inv 1 and scale 1: the values k + 1/2 are exact ties, to the even integer.
    w[3] = (np.arange(k, dtype=np.float32) % 254 - 126.5).clip(-126.5, 126.5)
    w[3, 0] = 127
    w[4, :] = np.float32(1e-3)
    w[4, 7] = np.float32(3e38)                                                # one huge value
    tensors[name] = ("F32", list(w.shape), w.astype("<f4").tobytes())
    name = "trunk.0.attn.out.weight"
    half = as_float32(*tensors[name]).astype("<f2")
    tensors[name] = ("F16", list(half.shape), half.tobytes())
    tensors["optimizer.step"] = ("F32", [1], np.array([3], "<f4").tobytes())
    write_safetensors(out, metadata, tensors)


def as_float32(dtype, shape, raw):
    """The tensor's values widened exactly to float32 (BF16 by its 16 high bits, F16 by NumPy)."""
    if dtype == "F32":
        values = np.frombuffer(raw, dtype="<f4")
    elif dtype == "BF16":
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    elif dtype == "F16":
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    else:
        raise ValueError(f"dtype {dtype} is not a float the doc quantizes")
    return values.reshape(shape).astype(np.float32)


def quantize(w, per_row=True):
    """docs/int8.md's quantization of every row of w (float32 [n, k]) -> (int8 [n, k], float32 [n]).
    per_row=False (one amax for the whole matrix) is the negative control's wrong scheme."""
    n = w.shape[0]
    finite = np.isfinite(w).all(axis=1)
    magnitude = np.abs(w).astype(np.float32)
    amax = magnitude.max(axis=1) if per_row else np.full(n, magnitude[np.isfinite(magnitude)].max(), np.float32)
    zero = ~finite | (amax < TINY)
    safe = np.where(zero, np.float32(1), amax).astype(np.float32)
    scale = (safe / np.float32(127)).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    q = np.rint((w * inv[:, None]).astype(np.float32))  # one float32 product, then ties to even
    q[zero] = 0
    scale = np.where(~finite, np.float32(np.nan), np.where(zero, np.float32(0), scale)).astype(np.float32)
    return q.astype(np.int8), scale


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, ok, label, detail):
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}")
        self.passed += ok
        self.failed += not ok


def same_bits(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def main(argv):
    if len(argv) == 3 and argv[0] == "--edge-cases":
        edge_cases(argv[1], argv[2])
        return 0
    if len(argv) != 2:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    original_meta, original = read_safetensors(argv[0])
    quantized_meta, quantized = read_safetensors(argv[1])
    tally = Tally()
    tally.record(quantized_meta.get("uform.quantization") == "int8-per-channel", "__metadata__",
                 f"uform.quantization = {quantized_meta.get('uform.quantization')!r}")
    kept = {name for name in original if not name.startswith("optimizer.")}
    expected = kept | {name + "_scale" for name in kept if TRUNK.match(name)}
    tally.record(set(quantized) == expected, "tensor names",
                 f"{len(quantized)} tensors; missing {sorted(expected - set(quantized))[:4]}, "
                 f"unexpected {sorted(set(quantized) - expected)[:4]}")
    matrices = sorted(name for name in kept if TRUNK.match(name))
    tally.record(len(matrices) > 0 and len(matrices) % 4 == 0, "trunk matrices", f"{len(matrices)} found")
    copied_ok = 0
    for name in sorted(kept - set(matrices)):
        ok = name in quantized and quantized[name] == original[name]
        copied_ok += ok
        if not ok:
            tally.record(False, name, "not copied unchanged (dtype, shape or bytes differ)")
    tally.record(copied_ok == len(kept) - len(matrices), "other tensors",
                 f"{copied_ok} of {len(kept) - len(matrices)} copied with dtype, shape and bytes unchanged")
    controls = 0
    for name in matrices:
        if name not in quantized or name + "_scale" not in quantized:
            continue
        dtype, shape, raw = quantized[name]
        scale_dtype, scale_shape, scale_raw = quantized[name + "_scale"]
        layout = dtype == "I8" and shape == original[name][1] and len(shape) == 2 and scale_dtype == "F32" \
            and scale_shape == shape[:1] and len(raw) == shape[0] * shape[1] and len(scale_raw) == 4 * shape[0]
        tally.record(layout, f"{name} layout", f"{dtype} {shape}, scale {scale_dtype} {scale_shape}")
        if not layout:
            continue
        q = np.frombuffer(raw, dtype=np.int8).reshape(shape)
        scale = np.frombuffer(scale_raw, dtype="<f4")
        w = as_float32(*original[name])
        expected_q, expected_scale = quantize(w)
        rows_wrong = int(np.count_nonzero((q != expected_q).any(axis=1)))
        tally.record(same_bits(q, expected_q) and same_bits(scale, expected_scale) and int(q.min()) > -128,
                     f"{name} values", f"{rows_wrong} of {shape[0]} rows differ, scales equal bit for bit: "
                     f"{same_bits(scale, expected_scale)}, min q {int(q.min())}")
        # Negative controls (on the first matrix): these comparisons must see a one-step change
        # and a per-matrix scale.
        if controls == 0:
            moved = q.copy()
            moved[shape[0] // 2, shape[1] // 3] += 1 if moved[shape[0] // 2, shape[1] // 3] < 127 else -1
            per_matrix_q, per_matrix_scale = quantize(w, per_row=False)
            caught = not same_bits(moved, expected_q) and not (same_bits(per_matrix_q, q) and
                                                                 same_bits(per_matrix_scale, scale))
            tally.record(caught, f"{name} (negative controls)",
                         "a value moved one step and per-matrix scales are both told apart" if caught
                         else "a wrong checkpoint would pass")
            controls += 1
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
