"""uform_embedding_truncate (include/uform/uform.h) through ctypes against NumPy.

Random unit rows (a fixed seed) are cut to several Matryoshka prefixes. Each prefix must equal,
byte for byte, NumPy doing the documented computation (the squares summed in double in column order,
each value divided by the double root and rounded once to float32), and lie within 1e-6 of textbook
float64 normalisation; the whole width is copied untouched; an all-zero prefix stays zero; the call
works in place; bad arguments answer UFORM_INVALID_ARGUMENT (4). Usage: test_embedding_truncate.py LIBUFORM
"""
import ctypes
import sys

import numpy as np

UFORM_OK, UFORM_INVALID_ARGUMENT = 0, 4
passed = failed = 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


library = ctypes.CDLL(sys.argv[1])
truncate = library.uform_embedding_truncate
float_pointer = ctypes.POINTER(ctypes.c_float)
truncate.argtypes = [float_pointer, ctypes.c_size_t, ctypes.c_size_t, float_pointer, ctypes.c_void_p]
truncate.restype = ctypes.c_int


def call(row, dims, out=None):
    out = np.full(dims, np.nan, dtype=np.float32) if out is None else out
    status = truncate(row.ctypes.data_as(float_pointer), row.size, dims, out.ctypes.data_as(float_pointer), None)
    return status, out


def expected(row, dims):
    wide = row[:dims].astype(np.float64)
    total = np.cumsum(wide * wide)[-1]  # column order, as documented
    if total == 0:
        return row[:dims].copy()
    return (wide / np.sqrt(total)).astype(np.float32)


rng = np.random.default_rng(36)
WIDTH = 256
rows = rng.standard_normal((64, WIDTH)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True).astype(np.float32)
compared = 0
for r, row in enumerate(rows):
    for dims in (1, 7, 32, 64, 128, 255):
        status, got = call(row, dims)
        check(status == UFORM_OK, f"row {r} dims {dims}: status {status}")
        want = expected(row, dims)
        check(got.size == dims and got.tobytes() == want.tobytes(), f"row {r} dims {dims}: bytes differ from NumPy")
        textbook = row[:dims].astype(np.float64) / np.linalg.norm(row[:dims].astype(np.float64))
        check(np.max(np.abs(got - textbook)) < 1e-6, f"row {r} dims {dims}: off textbook normalisation")
        compared += 1
    status, got = call(row, WIDTH)
    check(status == UFORM_OK and got.tobytes() == row.tobytes(), f"row {r}: the whole width must come back untouched")
check(compared == 64 * 6, f"compared {compared} prefixes")

# In place: the prefix written over the row's own first columns.
row = rows[0].copy()
status, _ = call(row, 32, row)
check(status == UFORM_OK and row[:32].tobytes() == expected(rows[0], 32).tobytes(), "in place")
check(row[32:].tobytes() == rows[0][32:].tobytes(), "in place: the columns past the prefix are left alone")

# A zero prefix has no direction: it stays zero (no NaN from 0 / 0).
row = rows[1].copy()
row[:16] = 0
status, got = call(row, 16)
check(status == UFORM_OK and np.all(got == 0) and not np.signbit(got).any(), f"zero prefix: {got[:4]}")

# Refusals.
check(call(rows[2], 0)[0] == UFORM_INVALID_ARGUMENT, "dimensions 0")
status = truncate(rows[2].ctypes.data_as(float_pointer), WIDTH, WIDTH + 1,
                  np.zeros(WIDTH + 1, np.float32).ctypes.data_as(float_pointer), None)
check(status == UFORM_INVALID_ARGUMENT, "dimensions above width")
check(truncate(None, WIDTH, 8, np.zeros(8, np.float32).ctypes.data_as(float_pointer), None) == UFORM_INVALID_ARGUMENT,
      "NULL embedding")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
