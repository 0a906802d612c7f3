"""SERIAL's BF16 rounding, erf GELU and int8 product against exact arithmetic, written here from the
definitions (Python integers and fractions, mpmath at 60 digits); nothing of the engine runs here.

    /usr/bin/python3 tests/kernels/serial_numerics_reference.py DIRECTORY

DIRECTORY is what serial_numerics_dump writes (its top comment lists the inputs). Checked:

- BF16 = the F32 value rounded to 8 significant bits, to nearest, ties to even, by exact rational
  arithmetic: quantum 2^(e-7) for a normal binade 2^e (the F32 subnormal quantum 2^-149 below 2^-126
  becomes 2^-133), results of magnitude 2^128 or more are infinities; ±0, ±∞ kept; NaN gives a quiet
  NaN (quiet bit set) of the same sign. Bit equality for every value;
- GELU(x) = x/2 · (1 + erf(x/√2)) evaluated in mpmath to 60 digits and rounded to F32 (ties to
  even). The GEMM epilogue (double through libm, rounded once; what I8's mlp.up uses) must give
  exactly that F32, or its neighbour only where the exact value lies within 2^-45 relative of the
  midpoint between them (double's evaluation error; subnormal x, where x/2 is a midpoint, are such
  cases); the NN table's gelu_forward (float erfcf) within 3e-5 relative + 1e-43 (measured 1.15e-5,
  5.2e-44). Both: +∞ -> +∞, -∞ -> NaN (∞·0), NaN -> NaN, ±0 -> 0;
- the int8 product: the int32 sums equal Python's exact integer sums; the F32 output equals
  round_f32(round_f32(acc) · round_f32(sx·sw) + bias) with each round_f32 exact (the sum in the
  multiply-add rounded once), and the BF16 output that F32 rounded to BF16, bit for bit. The counts
  of sums that round (|acc| > 2^24) and of exact ties among them are printed and must be nonzero.
One line per check, then "N passed, N failed"; exit 1 on any failure.
"""

import os
import struct
import sys
from fractions import Fraction

import mpmath
import numpy as np

mpmath.mp.dps = 60


def round_to_bits(value, significant, min_exponent, max_exponent):
    """value (Fraction, finite) rounded to `significant` significant bits, to nearest, ties to even,
    with the quantum floored at 2^(min_exponent - significant + 1) (subnormals); returns a Fraction,
    or ±inf (a float) when the result reaches 2^(max_exponent + 1)."""
    if value == 0:
        return Fraction(0)
    sign, magnitude = (-1 if value < 0 else 1), abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:  # floor(log2(magnitude)), exactly
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, min_exponent) - significant + 1)
    units = magnitude / quantum
    whole = units.numerator // units.denominator
    remainder = units - whole
    if remainder > Fraction(1, 2) or (remainder == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    result = whole * quantum
    if result >= Fraction(2) ** (max_exponent + 1):
        return sign * float("inf")
    return sign * result


def round_f32(value):
    return round_to_bits(value, 24, -126, 127)


def f32_bits_of(value, negative_zero=False):
    """A Fraction or ±inf -> the F32 bit pattern (exact: the value is representable)."""
    if value == 0:
        return 0x80000000 if negative_zero else 0
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


def bf16_expected(bits):
    """The definition of F32 -> BF16, from the bit pattern's value."""
    x = struct.unpack("<f", struct.pack("<I", bits))[0]
    sign = bits >> 31
    if x != x:
        return None  # any quiet NaN of this sign; checked separately
    if x in (float("inf"), float("-inf")) or x == 0:
        return bits >> 16
    rounded = round_to_bits(Fraction(x), 8, -126, 127)
    if isinstance(rounded, float):
        return (sign << 15) | 0x7F80
    if rounded == 0:  # a subnormal below half the smallest BF16 one: a zero of its sign
        return sign << 15
    return f32_bits_of(rounded) >> 16


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, ok, label, detail):
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}")
        self.passed += bool(ok)
        self.failed += not ok


def check_bf16(tally, load):
    inputs, outputs = load("bf16.in", "<u4"), load("bf16.out", "<u2")
    if inputs.size == 0 or inputs.size != outputs.size:
        tally.record(False, "bf16", f"{inputs.size} inputs, {outputs.size} outputs")
        return
    wrong, ties, nans = [], 0, 0
    for bits, got in zip(inputs.tolist(), outputs.tolist()):
        expected = bf16_expected(bits)
        if expected is None:
            nans += 1
            if (got & 0x7F80) != 0x7F80 or not (got & 0x0040) or (got >> 15) != (bits >> 31):
                wrong.append((bits, got, "quiet NaN of the same sign"))
            continue
        ties += (bits & 0xFFFF) == 0x8000 and (bits & 0x7F800000) != 0x7F800000
        if got != expected:
            wrong.append((bits, got, expected))
    tally.record(not wrong and ties > 100 and nans >= 4, "bf16 rounding",
                 f"{inputs.size} values ({ties} exact ties, {nans} NaNs): {len(wrong)} differ"
                 + (f", first {[tuple(hex(v) if isinstance(v, int) else v for v in w) for w in wrong[:3]]}" if wrong else ""))


def gelu_expected(x):
    """(the F32 rounding of x/2·(1 + erf(x/√2)) at 60 digits as a float, the exact value as a
    Fraction or None for the special values); nan and ±inf kept."""
    if x != x or x == float("-inf"):
        return float("nan"), None
    if x == float("inf"):
        return x, None
    if x == 0:
        return 0.0, Fraction(0)
    # Beyond |x| = 40, 1 + erf(x/√2) is within e^-800 of 2 (x > 0) or of 0 (x < 0), so the result
    # rounds to x itself, or to -0 (|x|·e^-800 is below half the smallest subnormal); mpmath's erfc
    # is slow there and would tell nothing more.
    if x > 40:
        return x, Fraction(x)
    if x < -40:
        return -0.0, Fraction(0)
    exact = mpmath.mpf(x) / 2 * mpmath.erfc(-mpmath.mpf(x) / mpmath.sqrt(2))
    sign, mantissa, exponent, _ = mpmath.mpf(exact)._mpf_  # (sign bit, mantissa ≥ 0, exponent, bits)
    value = (-1 if sign else 1) * Fraction(int(mantissa)) * (Fraction(2) ** int(exponent))
    return float(round_f32(value)), value


def ulps_apart(a, b):
    """Distance in F32 steps between two finite floats of either sign."""
    def ordered(v):
        bits = struct.unpack("<i", struct.pack("<f", v))[0]
        return bits if bits >= 0 else -(bits & 0x7FFFFFFF)
    return abs(ordered(a) - ordered(b))


# The NN table's GELU (gelu_forward) evaluates erfcf in float, not in double: measured on these
# inputs 1.15e-5 relative (in the negative tail, where erfcf's relative error grows) and 5.2e-44
# absolute on subnormal results; held to about twice that.
NN_RELATIVE, NN_ABSOLUTE = 3e-5, 1e-43


def check_gelu(tally, load):
    x = load("gelu.in", "<f4")
    expected = [gelu_expected(float(v)) for v in x.tolist()]
    for path in ("epilogue", "nn"):
        got = load(f"gelu.{path}.out", "<f4")
        if got.size == 0 or got.size != x.size:
            tally.record(False, f"gelu {path}", f"{x.size} inputs, {got.size} outputs")
            continue
        exact_bits, near_tie, far, worst = 0, 0, [], 0.0
        for value, (want, exact), have in zip(x.tolist(), expected, got.tolist()):
            if exact is None:  # NaN in, -inf in (inf·0 = NaN), +inf in: the special value itself
                if not ((want != want and have != have) or want == have):
                    far.append((value, have, want))
                continue
            if have == want:
                exact_bits += 1
                continue
            if path == "nn":
                error = abs(Fraction(have) - exact) if have == have and abs(have) != float("inf") else None
                if error is None or error > NN_RELATIVE * abs(exact) + Fraction(NN_ABSOLUTE):
                    far.append((value, have, want))
                elif abs(exact) >= Fraction(2) ** -126:  # relative error of normal results only
                    worst = max(worst, float(error / abs(exact)))
                continue
            # The epilogue evaluates in double and rounds once: it may miss the correct F32 only
            # where the exact value lies within double's error of the midpoint between the two
            # candidates (for a subnormal x, x/2 is such a midpoint: erfc(-x/√2) is 1 in double).
            midpoint = (Fraction(have) + Fraction(want)) / 2 if abs(have) != float("inf") else None
            if midpoint is None or ulps_apart(have, want) != 1 or abs(exact - midpoint) > abs(exact) * Fraction(2) ** -45:
                far.append((value, have, want))
            else:
                near_tie += 1
        finite = sum(1 for _, e in expected if e is not None)
        detail = (f"{x.size} values: {exact_bits} of {finite} finite ones the correctly rounded F32, "
                  f"{near_tie} one step off within 2^-45 of a midpoint, {len(far)} outside the bound")
        if path == "nn":
            detail += f" (largest relative error {worst:.2e}, bound {NN_RELATIVE:.0e})"
        tally.record(not far and finite > 0, f"gelu {path}", detail + (f", first {far[:3]}" if far else ""))


def check_i8(tally, load):
    sx, sw, bias = load("i8.sx", "<f4"), load("i8.sw", "<f4"), load("i8.bias", "<f4")
    m, n = sx.size, sw.size
    qx, qw = load("i8.qx", "i1"), load("i8.qw", "i1")
    if m == 0 or n == 0 or qx.size % m or qw.size != n * (qx.size // m):
        tally.record(False, "i8 shapes", f"m {m}, n {n}, qx {qx.size}, qw {qw.size}")
        return
    k = qx.size // m
    qx, qw = qx.reshape(m, k).astype(object), qw.reshape(n, k).astype(object)
    sums = load("i8.i32", "<i4").reshape(m, n)
    y32, y16 = load("i8.f32", "<f4").reshape(m, n), load("i8.bf16", "<u2").reshape(m, n)
    exact = qx.dot(qw.T)  # Python integers: exact
    wrong_sums = sum(int(sums[i, j]) != exact[i, j] for i in range(m) for j in range(n))
    tally.record(wrong_sums == 0, "i8 int32 sums", f"{m}x{n} over K = {k}: {wrong_sums} differ from exact integer sums")
    wrong32, wrong16, inexact, tied = [], [], 0, 0
    for i in range(m):
        for j in range(n):
            acc = exact[i, j]
            if abs(acc) > 2 ** 24:
                inexact += Fraction(acc) != round_f32(Fraction(acc))
                # A tie: acc exactly halfway between two F32 neighbours.
                e = abs(acc).bit_length() - 1
                tied += (abs(acc) % (2 ** (e - 23))) * 2 == 2 ** (e - 23)
            scale = round_f32(Fraction(float(sx[i])) * Fraction(float(sw[j])))
            y = round_f32(round_f32(Fraction(acc)) * scale + Fraction(float(bias[j])))
            want = f32_bits_of(y, negative_zero=False)
            have = struct.unpack("<I", struct.pack("<f", float(y32[i, j])))[0]
            if have != want and not (y == 0 and have in (0, 0x80000000)):
                wrong32.append((i, j, hex(have), hex(want)))
            want16 = bf16_expected(want)
            if int(y16[i, j]) != want16 and not (y == 0 and int(y16[i, j]) in (0, 0x8000)):
                wrong16.append((i, j, hex(int(y16[i, j])), hex(want16)))
    tally.record(not wrong32 and inexact > 0 and tied > 0, "i8 F32 outputs",
                 f"{m * n} values ({inexact} sums beyond 2^24 that round, {tied} of them exact ties): "
                 f"{len(wrong32)} differ from the exact reference" + (f", first {wrong32[:3]}" if wrong32 else ""))
    tally.record(not wrong16, "i8 BF16 outputs", f"{m * n} values: {len(wrong16)} differ" + (f", first {wrong16[:3]}" if wrong16 else ""))


def main(argv):
    if len(argv) != 1:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    load = lambda name, dtype: np.fromfile(os.path.join(argv[0], name), dtype=dtype)  # noqa: E731
    tally = Tally()
    check_bf16(tally, load)
    check_gelu(tally, load)
    check_i8(tally, load)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
