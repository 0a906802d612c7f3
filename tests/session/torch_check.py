"""Evaluates each case test_session_torch wrote with PyTorch and compares it with the session.

Usage: python3 torch_check.py DIRECTORY   (Debian's /usr/bin/python3, which has torch)
Each manifest line: name, expression, rtol, atol, input count, the inputs' dtype:dims, the
output's dtype:dims. Tolerance 0 means bit-exact (NaN matches NaN). Exits 1 on any mismatch and
prints both values.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F  # noqa: F401 (used by the expressions)

DTYPES = {"f32": (np.float32, torch.float32), "f64": (np.float64, torch.float64), "f16": (np.float16, torch.float16),
          "bf16": (np.uint16, torch.bfloat16), "i8": (np.int8, torch.int8), "i32": (np.int32, torch.int32),
          "i64": (np.int64, torch.int64), "u8": (np.uint8, torch.uint8), "bool": (np.bool_, torch.bool)}


def load(path, spec):
    name, dims = spec.split(":")
    shape = tuple(int(d) for d in dims.split(",")) if dims else ()
    numpy_type, torch_type = DTYPES[name]
    array = np.fromfile(path, dtype=numpy_type).reshape(shape)
    if name == "bf16":  # bfloat16 bits: the upper half of a float32
        return torch.from_numpy((array.astype(np.uint32) << 16).view(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(array.copy())


def main():
    directory = sys.argv[1]
    failures, cases = 0, 0
    torch.set_num_threads(1)
    for line in open(f"{directory}/manifest.tsv"):
        fields = line.rstrip("\n").split("\t")
        name, expression, rtol, atol, count = fields[0], fields[1], float(fields[2]), float(fields[3]), int(fields[4])
        inputs = {f"x{i}": load(f"{directory}/{name}.x{i}.bin", fields[5 + i]) for i in range(count)}
        got = load(f"{directory}/{name}.y.bin", fields[5 + count]).double()
        expected = eval(expression, {"torch": torch, "F": F}, inputs).double()  # noqa: S307 (our own manifest)
        cases += 1
        if tuple(got.shape) != tuple(expected.shape):
            print(f"{name}: shape {tuple(got.shape)}, torch gives {tuple(expected.shape)}")
            failures += 1
            continue
        both_nan = torch.isnan(got) & torch.isnan(expected)
        close = (got == expected) | both_nan | ((got - expected).abs() <= atol + rtol * expected.abs())
        if not bool(close.all()):
            index = int((~close).flatten().nonzero()[0])
            print(f"{name} ({expression}): element {index}: session {got.flatten()[index].item()!r}, "
                  f"torch {expected.flatten()[index].item()!r}; {int((~close).sum())} of {close.numel()} differ")
            failures += 1
    print(f"{cases - failures} cases agree with torch {torch.__version__}, {failures} differ")
    return 1 if failures or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
