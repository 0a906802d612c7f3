/*
 * An integer rounded to a number of significant bits, ties to even: what rounding a value
 * a·2^e to a float format with that many significant bits (BF16: 8) does to its integer a, in
 * exact integer arithmetic. The kernel tests that pin where BF16 rounding happens build their
 * exact references with it (test_gemm_rounding.c, test_nn_attention_bf16.c).
 */
#ifndef UFORM_TESTS_COMMON_ROUND_BITS_H
#define UFORM_TESTS_COMMON_ROUND_BITS_H

#include <stdint.h>

static inline int64_t test_round_bits(int64_t a, int bits) {
    int64_t magnitude = a < 0 ? -a : a;
    int length = 0;
    while ((magnitude >> length) != 0) ++length;
    if (length <= bits) return a;
    int drop = length - bits;
    int64_t kept = magnitude >> drop, rest = magnitude & (((int64_t)1 << drop) - 1), half = (int64_t)1 << (drop - 1);
    if (rest > half || (rest == half && (kept & 1))) kept += 1;
    kept <<= drop;
    return a < 0 ? -kept : kept;
}

#endif
