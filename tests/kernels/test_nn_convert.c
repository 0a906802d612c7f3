/*
 * Scalar conversions of every class against references written here independently of the
 * kernels (double arithmetic with rint and ldexp instead of bit tricks): all 2^16 BF16 and F16
 * values to F32, and F32 → BF16/F16 over every BF16 rounding boundary (ties, one below, one
 * above), every F16 midpoint and its neighbours, subnormals, overflow, infinities, NaNs and a
 * million random bit patterns; F32 → I8 and B1 likewise.
 */
#include <float.h>

#include "kernels/nn_test_support.h"
#include "common/skip.h"

static float float_of(uint32_t bits) {
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

static uint32_t bits_of(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return bits;
}

/* Round |x| to `precision` significant bits with exponents no lower than `min_exponent`
 * (the smallest normal's), ties to even, in double: exact because the quantum is a power of 2. */
static double round_to_format(double magnitude, int precision, int min_exponent) {
    if (magnitude == 0.0) return 0.0;
    int exponent = ilogb(magnitude);
    if (exponent < min_exponent) exponent = min_exponent;
    double quantum = ldexp(1.0, exponent - (precision - 1));
    return rint(magnitude / quantum) * quantum;
}

static int reference_bf16(float x, uint16_t *out) { /* answers 0 for NaN (any NaN is right) */
    if (isnan(x)) return 0;
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isinf(x)) {
        *out = sign | 0x7F80;
        return 1;
    }
    double r = round_to_format(fabs((double)x), 8, -126);
    if (r >= ldexp(1.0, 128)) {
        *out = sign | 0x7F80;
        return 1;
    }
    *out = (uint16_t)(sign | (bits_of((float)r) >> 16));
    return 1;
}

static int reference_f16(float x, uint16_t *out) {
    if (isnan(x)) return 0;
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isinf(x)) {
        *out = sign | 0x7C00;
        return 1;
    }
    double r = round_to_format(fabs((double)x), 11, -14);
    if (r >= 65536.0)
        *out = sign | 0x7C00;
    else if (r < ldexp(1.0, -14))
        *out = (uint16_t)(sign | (uint16_t)(r / ldexp(1.0, -24)));
    else {
        int exponent = ilogb(r);
        *out = (uint16_t)(sign | ((exponent + 15) << 10) | (uint16_t)(r / ldexp(1.0, exponent - 10) - 1024.0));
    }
    return 1;
}

static double decode_f16(uint16_t h) {
    int exponent = (h >> 10) & 31, mantissa = h & 1023;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0) return sign * ldexp(mantissa, -24);
    if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
    return sign * ldexp(1024 + mantissa, exponent - 25);
}

static double decode_bf16(uint16_t b) {
    int exponent = (b >> 7) & 255, mantissa = b & 127;
    double sign = (b & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0) return sign * ldexp(mantissa, -133);
    if (exponent == 255) return mantissa ? NAN : sign * INFINITY;
    return sign * ldexp(128 + mantissa, exponent - 134);
}

static int8_t reference_i8(float x) {
    if (isnan(x)) return 0;
    double v = (double)x * 127.0, below = floor(v), fraction = v - below;
    double r = fraction > 0.5 ? below + 1 : fraction < 0.5 ? below : (fmod(below, 2.0) == 0.0 ? below : below + 1);
    return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}

static size_t build_inputs(float *x) {
    size_t n = 0;
    static const uint32_t offsets[] = {0x0000, 0x7FFF, 0x8000, 0x8001, 0x0001, 0xFFFF, 0x17FFF & 0xFFFF};
    for (uint32_t b = 0; b < 65536; ++b)
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; ++o) x[n++] = float_of((b << 16) | offsets[o]);
    for (uint32_t h = 0; h < 0x7C00; ++h) {
        double a = decode_f16((uint16_t)h), b = decode_f16((uint16_t)(h + 1));
        float mid = (float)((a + b) / 2); /* exact: at most 12 significant bits */
        float around[3] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (size_t i = 0; i < 3; ++i) x[n++] = around[i], x[n++] = -around[i];
    }
    const float specials[] = {0.0f,
                              -0.0f,
                              INFINITY,
                              -INFINITY,
                              NAN,
                              -NAN,
                              FLT_MAX,
                              -FLT_MAX,
                              FLT_MIN,
                              FLT_TRUE_MIN,
                              65504.0f,
                              65519.996f,
                              65520.0f,
                              65536.0f,
                              0x1p-24f,
                              0x1p-25f,
                              nextafterf(0x1p-25f, 1.0f),
                              0x3p-26f,
                              0x1p-14f,
                              nextafterf(0x1p-14f, 0.0f),
                              1.0f / 127.0f,
                              0.5f / 127.0f,
                              1.5f / 127.0f,
                              2.5f / 127.0f,
                              -2.5f / 127.0f,
                              1.0f,
                              -1.0f,
                              1.0000001f,
                              0.99999994f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) x[n++] = specials[i];
    const uint32_t nans[] = {0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FBFFFFFu, 0xFF800001u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; ++i) x[n++] = float_of(nans[i]);
    uint64_t state = 0xC0FFEEull;
    for (size_t i = 0; i < 1000000; ++i) x[n++] = float_of((uint32_t)check_random_next(&state));
    /* Values in the range I8 and B1 see: normalised embedding coordinates. */
    for (size_t i = 0; i < 100000; ++i) x[n++] = check_random_float(&state) * 1.01f;
    return n;
}

static void check_class(uform_cpu_class_t cpu_class, const float *x, size_t n) {
    const uform__nn_kernels_t *kernels = uform__nn_kernels(cpu_class);
    const char *name = uform_cpu_class_name(cpu_class);
    uint16_t *half = malloc(n * 2);
    float *back = malloc(n * 4);
    int8_t *i8 = malloc(n);
    uint8_t *b1 = malloc(n / 8 + 1);

    size_t bad = 0;
    kernels->f32_to_bf16(n, x, half);
    for (size_t i = 0; i < n; ++i) {
        uint16_t expected = 0;
        int ok =
            reference_bf16(x[i], &expected) ? half[i] == expected : ((half[i] & 0x7F80) == 0x7F80 && (half[i] & 0x7F));
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s f32_to_bf16(%a = 0x%08x): got 0x%04x, expected 0x%04x\n", name, x[i], bits_of(x[i]),
                    half[i], expected);
    }
    CHECK_MSG(bad == 0, "%s f32_to_bf16: %zu of %zu wrong", name, bad, n);

    bad = 0;
    kernels->f32_to_f16(n, x, half);
    for (size_t i = 0; i < n; ++i) {
        uint16_t expected = 0;
        int ok =
            reference_f16(x[i], &expected) ? half[i] == expected : ((half[i] & 0x7C00) == 0x7C00 && (half[i] & 0x3FF));
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s f32_to_f16(%a = 0x%08x): got 0x%04x, expected 0x%04x\n", name, x[i], bits_of(x[i]),
                    half[i], expected);
    }
    CHECK_MSG(bad == 0, "%s f32_to_f16: %zu of %zu wrong", name, bad, n);

    /* All 2^16 values of each 16-bit format back to F32. */
    uint16_t *all = malloc(65536 * 2);
    for (uint32_t i = 0; i < 65536; ++i) all[i] = (uint16_t)i;
    size_t bad_f16 = 0, bad_bf16 = 0;
    kernels->f16_to_f32(65536, all, back);
    for (uint32_t i = 0; i < 65536; ++i) {
        double e = decode_f16((uint16_t)i);
        int ok = isnan(e) ? isnan(back[i]) : (back[i] == e && !signbit(back[i]) == !signbit(e));
        if (!ok && bad_f16++ < 5)
            fprintf(stderr, "  %s f16_to_f32(0x%04x): got %a, expected %a\n", name, i, back[i], e);
    }
    kernels->bf16_to_f32(65536, all, back);
    for (uint32_t i = 0; i < 65536; ++i) {
        double e = decode_bf16((uint16_t)i);
        int ok = isnan(e) ? isnan(back[i]) : (back[i] == e && !signbit(back[i]) == !signbit(e));
        if (!ok && bad_bf16++ < 5)
            fprintf(stderr, "  %s bf16_to_f32(0x%04x): got %a, expected %a\n", name, i, back[i], e);
    }
    CHECK_MSG(bad_f16 == 0, "%s f16_to_f32: %zu of 65536 wrong", name, bad_f16);
    CHECK_MSG(bad_bf16 == 0, "%s bf16_to_f32: %zu of 65536 wrong", name, bad_bf16);

    bad = 0;
    kernels->f32_to_i8(n, x, i8);
    for (size_t i = 0; i < n; ++i)
        if (i8[i] != reference_i8(x[i]) && bad++ < 5)
            fprintf(stderr, "  %s f32_to_i8(%a): got %d, expected %d\n", name, x[i], i8[i], reference_i8(x[i]));
    CHECK_MSG(bad == 0, "%s f32_to_i8: %zu of %zu wrong", name, bad, n);

    /* B1 over several lengths (ragged last bytes), the last byte's spare bits preset to 1 in
     * the output buffer so a kernel that leaves them must fail. */
    const size_t lengths[] = {1, 7, 8, 9, 63, 64, 65, 1001};
    bad = 0;
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; ++l) {
        size_t len = lengths[l], bytes = (len + 7) / 8;
        const float *source = x + 65536 * 7 + 17 * l; /* varied signs, zeros and NaNs nearby */
        memset(b1, 0xFF, bytes);
        kernels->f32_to_b1(len, source, b1);
        for (size_t byte = 0; byte < bytes; ++byte) {
            unsigned expected = 0;
            for (size_t bit = 0; bit < 8; ++bit)
                if (byte * 8 + bit < len && source[byte * 8 + bit] > 0.0f) expected |= 0x80u >> bit;
            if (b1[byte] != expected && bad++ < 5)
                fprintf(stderr, "  %s f32_to_b1 length %zu byte %zu: got 0x%02x, expected 0x%02x\n", name, len, byte,
                        b1[byte], expected);
        }
    }
    float signs[10] = {1.0f, -1.0f, 0.0f, -0.0f, NAN, 2.0f, FLT_TRUE_MIN, -3.0f, 5.0f, 0.1f};
    kernels->f32_to_b1(10, signs, b1);
    /* 1, −1, 0, −0, NaN, 2, the smallest subnormal, −3 | 5, 0.1: bits 1000 0110 | 11(000000). */
    CHECK_MSG(b1[0] == 0x86 && b1[1] == 0xC0, "%s f32_to_b1 of the sign pattern: 0x%02x 0x%02x, expected 0x86 0xc0",
              name, b1[0], b1[1]);
    CHECK_MSG(bad == 0, "%s f32_to_b1: %zu bytes wrong", name, bad);
    free(half), free(back), free(i8), free(b1), free(all);
}

int main(void) {
    float *x = malloc(4000000 * sizeof(float));
    size_t n = build_inputs(x);
    printf("%zu F32 inputs\n", n);
    check_class(UFORM_CPU_CLASS_SERIAL, x, n);
    for (size_t k = 0; k < test_simd_class_count; ++k) {
        if (!check_class_runs(test_simd_classes[k])) {
            continue;
        }
        check_class(test_simd_classes[k], x, n);
    }
    /* Odd lengths reach the SIMD tails: compare with SERIAL on a short unaligned slice. */
    for (size_t k = 0; k < test_simd_class_count; ++k) {
        if (!check_class_runs(test_simd_classes[k])) continue;
        const uform__nn_kernels_t *simd = uform__nn_kernels(test_simd_classes[k]);
        const uform__nn_kernels_t *serial = uform__nn_kernels(UFORM_CPU_CLASS_SERIAL);
        for (size_t len = 1; len < 40; ++len) {
            uint16_t a[40], b[40];
            simd->f32_to_f16(len, x + 3 + len * 1000, a);
            serial->f32_to_f16(len, x + 3 + len * 1000, b);
            int same = 1;
            for (size_t i = 0; i < len; ++i)
                same &= a[i] == b[i] || (((a[i] & 0x7C00) == 0x7C00) && (a[i] & 0x3FF) && (b[i] & 0x3FF));
            CHECK_MSG(same, "%s f32_to_f16 tail of %zu differs from serial", uform_cpu_class_name(test_simd_classes[k]),
                      len);
        }
    }
    free(x);
    return check_finish();
}
