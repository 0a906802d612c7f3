/*
 * Portable scalar conversions (the SERIAL kernels and the tails of the SIMD ones): F32↔BF16,
 * F32↔F16 with round-to-nearest-even done in integer arithmetic (so the result never depends on
 * the floating-point environment), and the I8 and B1 packings of uform_scalar_kind_t.
 */
#include <math.h>
#include <string.h>

#include "kernels/nn.h"

static uint32_t bits_of(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static float float_of(uint32_t bits) {
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

uint16_t uform__nn_f32_to_bf16_one(float x) {
    uint32_t bits = bits_of(x);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x0040u); /* quiet NaN */
    /* Adding 0x7FFF plus the kept part's lowest bit rounds half to even; a carry into the
     * exponent is the correct rounding, up to infinity. */
    return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float uform__nn_bf16_to_f32_one(uint16_t x) {
    return float_of((uint32_t)x << 16);
}

uint16_t uform__nn_f32_to_f16_one(float x) {
    uint32_t bits = bits_of(x);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((magnitude >> 13) & 0x03FFu)); /* quiet NaN */
    /* 65520 (0x477FF000) is halfway between the largest half 65504 (odd mantissa) and 2^16, so it
     * and everything above rounds to infinity. */
    if (magnitude >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
    if (magnitude < 0x38800000u) {
        /* Below 2^-14 the half is subnormal: count units of 2^-24, rounding half to even. */
        uint32_t exponent = magnitude >> 23;
        if (exponent == 0) return sign; /* float subnormals are far below half of 2^-24 */
        uint32_t mantissa = (magnitude & 0x007FFFFFu) | 0x00800000u;
        uint32_t shift = 126u - exponent; /* value = mantissa · 2^(exponent − 150) = units · 2^-24 */
        if (shift >= 32u) return sign;
        uint32_t units = mantissa >> shift, remainder = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (remainder > half || (remainder == half && (units & 1u))) ++units;
        return (uint16_t)(sign | units);
    }
    uint32_t half_bits = (magnitude - 0x38000000u) >> 13; /* rebias the exponent from 127 to 15 */
    uint32_t remainder = magnitude & 0x1FFFu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (half_bits & 1u))) ++half_bits;
    return (uint16_t)(sign | half_bits);
}

float uform__nn_f16_to_f32_one(uint16_t x) {
    uint32_t sign = (uint32_t)(x & 0x8000u) << 16, exponent = (x >> 10) & 0x1Fu, mantissa = x & 0x03FFu;
    if (exponent == 0) {
        float magnitude = (float)mantissa * 0x1p-24f; /* exact: at most 10 significant bits */
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) return float_of(sign | 0x7F800000u | (mantissa << 13));
    return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
