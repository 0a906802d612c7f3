/*
 * test_gemm_i8 [seed]: the INT8 GEMM kernels (src/kernels/gemm_i8.h).
 *
 *   - SERIAL's quantizer against the scheme computed here from its definition (largest |x| by
 *     fabsf, 127/amax, rint), on random rows, odd widths, zeros, tiny, huge, infinite and NaN rows;
 *     every other class's quantizer bit for bit against SERIAL's (q, scale, Σ q), F32 and BF16 rows;
 *   - SERIAL's int32 sums against 64-bit sums of the same quantized rows, exactly; its F32 outputs
 *     against fma(float(acc), sx·sw, bias) evaluated here, exactly, and against the double
 *     product of the dequantized operands (the quantization error bound);
 *   - every class this CPU runs against SERIAL bit for bit (I32 sums, F32 with and without bias,
 *     accumulate, BF16 out) on odd shapes, with 1, 2 and 3 threads; GELU within its bound;
 *   - BF16 out at unit scales, where integer sums land on rounding ties (ties to even, counted);
 *   - the largest K (65,536) at ±127 everywhere, where VNNI's biased sums reach 255·127·K and
 *     vpmaddubsw's pairs 2·127·127: exact on every class;
 *   - the argument checks.
 * Classes this CPU cannot run are listed on one line "not exercised on this CPU: ...".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "kernels/gemm_i8.h"
#include "kernels/test_gemm_pool.h"

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                            UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                            UFORM_CPU_CLASS_AMD_GENOA};
enum { class_count = sizeof classes / sizeof classes[0] };

static uint32_t bits_of(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* The scheme from its definition (gemm_i8.h), independently of the library's code. */
static void reference_quantize(size_t k, const float *x, int8_t *q, float *scale, int32_t *sum) {
    float amax = 0.0f;
    int special = 0;
    for (size_t i = 0; i < k; ++i) {
        if (isnan(x[i]) || isinf(x[i])) special = 1;
        else amax = fmaxf(amax, fabsf(x[i]));
    }
    *sum = 0;
    if (special || amax < 0x1p-96f) {
        *scale = special ? NAN : 0.0f;
        memset(q, 0, k);
        return;
    }
    *scale = amax / 127.0f;
    float inv = 127.0f / amax;
    for (size_t i = 0; i < k; ++i) {
        long value = lrintf(x[i] * inv);
        q[i] = (int8_t)value;
        *sum += (int32_t)value;
    }
}

static float random_float(uint64_t *state) { return check_random_float(state); }

/* A row of `k` values of one of several kinds, as F32 (and as BF16 when `x16` is given: then
 * `x` holds the BF16 values widened, the ones the quantizer sees). */
static void fill_row(uint64_t *state, size_t k, int kind, float *x, uform__bf16_t *x16) {
    float magnitude = kind == 3 ? 1e-30f : kind == 4 ? 3e37f : 1.0f + 9.0f * (float)(check_random_next(state) % 1000) / 1000.0f;
    for (size_t i = 0; i < k; ++i) {
        float value = kind == 1 ? 0.0f : magnitude * random_float(state);
        if (kind == 5 && i == k / 2) value = INFINITY;
        if (kind == 6 && i == k / 3) value = NAN;
        if (kind == 7) value = 0x1p-100f * random_float(state); /* below 2^-96: zeros */
        if (kind == 8 && i % 3 == 0) value = (i % 2 ? -1.0f : 1.0f) * magnitude; /* ties to ±amax */
        if (x16) {
            x16[i] = uform__gemm_bf16_from_f32(value);
            value = uform__gemm_f32_from_bf16(x16[i]);
        }
        x[i] = value;
    }
}

static void test_quantizers(uint64_t *state) {
    static const size_t widths[] = {1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 100, 384, 385, 1536};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w)
        for (int kind = 0; kind < 9; ++kind)
            for (int bf16 = 0; bf16 < 2; ++bf16) {
                size_t k = widths[w], kp = uform__gemm_i8_k_padded(k);
                float *x = malloc(k * sizeof(float));
                uform__bf16_t *x16 = malloc(k * sizeof(uform__bf16_t));
                fill_row(state, k, kind, x, bf16 ? x16 : NULL);
                int8_t expected_q[1536], q[1536 + 4];
                float expected_scale, scale;
                int32_t expected_sum, sum;
                reference_quantize(k, x, expected_q, &expected_scale, &expected_sum);
                for (size_t c = 0; c < class_count; ++c) {
                    if (!uform_cpu_class_supported(classes[c])) continue;
                    memset(q, 0x55, sizeof q);
                    uform__gemm_i8_kernels(classes[c])->quantize(1, k, bf16 ? (const void *)x16 : (const void *)x, k,
                                                                 bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, q, kp, &scale,
                                                                 &sum, NULL);
                    int same_q = memcmp(q, expected_q, k) == 0, padded = 1;
                    for (size_t i = k; i < kp; ++i) padded &= q[i] == 0;
                    int same_scale = bits_of(scale) == bits_of(expected_scale) || (isnan(scale) && isnan(expected_scale));
                    CHECK_MSG(same_q && padded && same_scale && sum == expected_sum,
                              "%s quantizer, k %zu, kind %d, %s: q %s, padding %s, scale %.9g vs %.9g, sum %d vs %d",
                              uform_cpu_class_name(classes[c]), k, kind, bf16 ? "bf16" : "f32", same_q ? "equal" : "differs",
                              padded ? "zero" : "not zero", scale, expected_scale, sum, expected_sum);
                }
                free(x), free(x16);
            }
}

/* One product's operands: quantized rows of X [m, k] and W [n, k] (from random F32), a bias. */
typedef struct operands_t {
    size_t m, n, k, ldx;
    int8_t *qx, *qw;
    float *sx, *sw, *bias;
    int32_t *sums;
} operands_t;

static void make_operands(uint64_t *state, size_t m, size_t n, size_t k, operands_t *o) {
    size_t kp = uform__gemm_i8_k_padded(k);
    *o = (operands_t){.m = m, .n = n, .k = k, .ldx = kp + 4 * (check_random_next(state) % 3)};
    o->qx = calloc(m * o->ldx + 4, 1), o->qw = calloc(n * kp + 4, 1);
    o->sx = malloc(m * sizeof(float)), o->sw = malloc(n * sizeof(float)), o->bias = malloc(n * sizeof(float));
    o->sums = malloc(m * sizeof(int32_t));
    float *row = malloc((k + 1) * sizeof(float));
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    for (size_t i = 0; i < m; ++i) {
        fill_row(state, k, i % 11 == 5 ? 1 : 0, row, NULL); /* an all-zero row now and then */
        serial->quantize(1, k, row, k, UFORM__GEMM_F32, o->qx + i * o->ldx, kp, o->sx + i, o->sums + i, NULL);
    }
    for (size_t j = 0; j < n; ++j) {
        fill_row(state, k, 0, row, NULL);
        serial->quantize(1, k, row, k, UFORM__GEMM_F32, o->qw + j * kp, kp, o->sw + j, NULL, NULL);
        o->bias[j] = random_float(state);
    }
    free(row);
}

static void free_operands(operands_t *o) { free(o->qx), free(o->qw), free(o->sx), free(o->sw), free(o->bias), free(o->sums); }

/* Packs W for `table` into fresh memory (freed by the caller). */
static void *pack(const uform__gemm_i8_kernels_t *table, const operands_t *o, uform__gemm_i8_packed_t *packed) {
    size_t size = table->packed_size(o->n, o->k);
    void *memory = aligned_alloc(64, (size + 63) / 64 * 64);
    uform_outcome_t outcome = {0};
    CHECK_STATUS(table->pack(o->qw, uform__gemm_i8_k_padded(o->k), o->sw, o->n, o->k, memory, size, packed, &outcome),
                 UFORM_OK);
    return memory;
}

static uform__gemm_i8_forward_t forward_args(const operands_t *o, const uform__gemm_i8_packed_t *packed, void *y,
                                             size_t ldy, uform__gemm_i8_output_t output, int bias, int gelu,
                                             int accumulate) {
    return (uform__gemm_i8_forward_t){.m = o->m, .n = o->n, .k = o->k,
                                      .x = {.q = o->qx, .ld = o->ldx, .scale = o->sx, .sums = o->sums},
                                      .packed = packed, .bias = bias ? o->bias : NULL, .gelu = gelu, .y = y, .ldy = ldy,
                                      .output = output, .accumulate = accumulate};
}

/* SERIAL against 64-bit sums, the stated F32 epilogue and the double product. */
static void test_serial_reference(uint64_t *state) {
    static const size_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {6, 33, 17}, {13, 100, 40}, {9, 385, 31}};
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        operands_t o;
        make_operands(state, shapes[s][0], shapes[s][2], shapes[s][1], &o);
        uform__gemm_i8_packed_t packed;
        void *memory = pack(serial, &o, &packed);
        int32_t *sums = malloc(o.m * o.n * sizeof(int32_t));
        float *y = malloc(o.m * o.n * sizeof(float));
        uform_outcome_t outcome = {0};
        uform__gemm_i8_forward_t args = forward_args(&o, &packed, sums, o.n, UFORM__GEMM_I8_I32, 0, 0, 0);
        CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_OK);
        args = forward_args(&o, &packed, y, o.n, UFORM__GEMM_I8_F32, 1, 0, 0);
        CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_OK);
        size_t wrong_sums = 0, wrong_values = 0;
        double worst = 0, scale = 0;
        for (size_t i = 0; i < o.m; ++i)
            for (size_t j = 0; j < o.n; ++j) {
                int64_t exact = 0;
                double product = 0;
                for (size_t p = 0; p < o.k; ++p) {
                    exact += (int64_t)o.qx[i * o.ldx + p] * o.qw[j * uform__gemm_i8_k_padded(o.k) + p];
                    product += (double)o.qx[i * o.ldx + p] * o.sx[i] * (double)o.qw[j * uform__gemm_i8_k_padded(o.k) + p] * o.sw[j];
                }
                wrong_sums += sums[i * o.n + j] != exact;
                float stated = fmaf((float)exact, o.sx[i] * o.sw[j], o.bias[j]);
                wrong_values += bits_of(y[i * o.n + j]) != bits_of(stated);
                worst = fmax(worst, fabs(y[i * o.n + j] - (product + o.bias[j])));
                scale = fmax(scale, fabs(product + o.bias[j]));
            }
        CHECK_MSG(wrong_sums == 0, "serial [%zu,%zu,%zu]: %zu int32 sums differ from the 64-bit sums", o.m, o.k, o.n, wrong_sums);
        CHECK_MSG(wrong_values == 0, "serial [%zu,%zu,%zu]: %zu outputs differ from fma(float(acc), sx*sw, bias)", o.m, o.k,
                  o.n, wrong_values);
        CHECK_MSG(worst <= 1e-6 * fmax(scale, 1.0), "serial [%zu,%zu,%zu]: %.3g from the double product (scale %.3g)", o.m,
                  o.k, o.n, worst, scale);
        free(sums), free(y), free(memory);
        free_operands(&o);
    }
}

/* Every class against SERIAL: I32, F32 (bias or not), accumulate, BF16 out bit for bit; GELU
 * within its bound; threads 1, 2, 3. */
static void test_classes(uint64_t *state, test_pool_t pools[4]) {
    static const size_t shapes[][3] = {{1, 1, 1},     {1, 3, 17},    {2, 4, 64},     {5, 7, 13},     {7, 33, 65},
                                       {13, 100, 63}, {6, 64, 128},  {37, 385, 129}, {64, 1536, 64}, {100, 768, 200},
                                       {197, 384, 130}, {258, 129, 77}, {45, 1101, 33}};
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        operands_t o;
        make_operands(state, shapes[s][0], shapes[s][2], shapes[s][1], &o);
        size_t m = o.m, n = o.n, ldy = n + (s % 3);
        uform__gemm_i8_packed_t serial_packed;
        void *serial_memory = pack(serial, &o, &serial_packed);
        /* Expected: SERIAL, one thread. Variants: 0 I32, 1 F32, 2 F32 + bias, 3 accumulate, 4 BF16, 5 GELU exact, 6 GELU fast. */
        enum { variants = 7 };
        void *expected[variants], *y = malloc(m * ldy * sizeof(float) + 64);
        float *start = malloc(m * ldy * sizeof(float));
        for (size_t e = 0; e < m * ldy; ++e) start[e] = random_float(state);
        for (int v = 0; v < variants; ++v) {
            expected[v] = malloc(m * ldy * sizeof(float) + 64);
            memcpy(expected[v], start, m * ldy * sizeof(float));
            uform__gemm_i8_output_t output = v == 0 ? UFORM__GEMM_I8_I32 : v == 4 ? UFORM__GEMM_I8_BF16 : UFORM__GEMM_I8_F32;
            uform__gemm_i8_forward_t args = forward_args(&o, &serial_packed, expected[v], ldy, output, v >= 2, v == 5 ? 1 : v == 6 ? 2 : 0, v == 3);
            uform_outcome_t outcome = {0};
            CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_OK);
        }
        for (size_t c = 0; c < class_count; ++c) {
            if (!uform_cpu_class_supported(classes[c])) continue;
            const uform__gemm_i8_kernels_t *table = uform__gemm_i8_kernels(classes[c]);
            uform__gemm_i8_packed_t packed;
            void *memory = pack(table, &o, &packed);
            for (int t = 0; t < 3; ++t)
                for (int v = 0; v < variants; ++v) {
                    memcpy(y, start, m * ldy * sizeof(float));
                    uform__gemm_i8_output_t output = v == 0 ? UFORM__GEMM_I8_I32 : v == 4 ? UFORM__GEMM_I8_BF16 : UFORM__GEMM_I8_F32;
                    uform__gemm_i8_forward_t args = forward_args(&o, &packed, y, ldy, output, v >= 2, v == 5 ? 1 : v == 6 ? 2 : 0, v == 3);
                    uform_outcome_t outcome = {0};
                    CHECK_STATUS(table->forward(&args, t ? &pools[t + 1].parallel : NULL, &outcome), UFORM_OK);
                    size_t element = output == UFORM__GEMM_I8_BF16 ? 2 : 4, differ = 0, first = (size_t)-1;
                    double worst = 0;
                    for (size_t i = 0; i < m; ++i) {
                        for (size_t j = 0; j < ldy; ++j) { /* the padding columns too: they must stay as they were */
                            const unsigned char *got = (const unsigned char *)y + (i * ldy + j) * element;
                            const unsigned char *want = (const unsigned char *)expected[v] + (i * ldy + j) * element;
                            if (v >= 5 && j < n) {
                                float a = ((const float *)got)[0], b = ((const float *)want)[0];
                                double bound = (v == 5 ? 1e-6 : 4e-7) * fmax(1.0, fabs(b));
                                if (!(fabs(a - b) <= bound)) differ += 1, worst = fmax(worst, fabs(a - b));
                            } else if (memcmp(got, want, element) != 0) {
                                differ += 1;
                                if (first == (size_t)-1) first = i * ldy + j;
                            }
                        }
                    }
                    CHECK_MSG(differ == 0, "%s [%zu,%zu,%zu] variant %d, %d thread(s): %zu elements differ from SERIAL (first %zu, worst %.3g)",
                              uform_cpu_class_name(classes[c]), m, o.k, n, v, t + 1, differ, first, worst);
                }
            free(memory);
        }
        for (int v = 0; v < variants; ++v) free(expected[v]);
        free(y), free(start), free(serial_memory);
        free_operands(&o);
    }
}

/* BF16 output where rounding ties: with unit scales and no bias Y is float(Σ q), an integer, and
 * every odd one between 2^8 and 2^9 (and many above) sits halfway between two BF16 values, so
 * ties to even are exercised, not just nearest. Every class against SERIAL, bit for bit, with a
 * count of the ties seen (a test that met none would prove nothing). */
static void test_bf16_ties(uint64_t *state) {
    static const size_t shapes[][3] = {{6, 64, 16}, {13, 100, 63}, {7, 33, 65}};
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    size_t ties = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        operands_t o;
        make_operands(state, shapes[s][0], shapes[s][2], shapes[s][1], &o);
        for (size_t i = 0; i < o.m; ++i) o.sx[i] = 1.0f;
        for (size_t j = 0; j < o.n; ++j) o.sw[j] = 1.0f;
        size_t m = o.m, n = o.n;
        uform__bf16_t *want = malloc(m * n * sizeof(uform__bf16_t)), *got = malloc(m * n * sizeof(uform__bf16_t));
        int32_t *sums = malloc(m * n * sizeof(int32_t));
        uform__gemm_i8_packed_t packed;
        void *memory = pack(serial, &o, &packed);
        uform__gemm_i8_forward_t args = forward_args(&o, &packed, want, n, UFORM__GEMM_I8_BF16, 0, 0, 0);
        uform_outcome_t outcome = {0};
        CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_OK);
        args = forward_args(&o, &packed, sums, n, UFORM__GEMM_I8_I32, 0, 0, 0);
        CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_OK);
        free(memory);
        for (size_t e = 0; e < m * n; ++e) {
            float value = (float)sums[e];
            uint32_t bits;
            memcpy(&bits, &value, sizeof bits);
            ties += (bits & 0xFFFFu) == 0x8000u;
        }
        for (size_t c = 0; c < class_count; ++c) {
            if (!uform_cpu_class_supported(classes[c])) continue;
            const uform__gemm_i8_kernels_t *table = uform__gemm_i8_kernels(classes[c]);
            memory = pack(table, &o, &packed);
            memset(got, 0xFF, m * n * sizeof(uform__bf16_t));
            args = forward_args(&o, &packed, got, n, UFORM__GEMM_I8_BF16, 0, 0, 0);
            CHECK_STATUS(table->forward(&args, NULL, &outcome), UFORM_OK);
            size_t differ = 0;
            for (size_t e = 0; e < m * n; ++e) differ += got[e] != want[e];
            CHECK_MSG(differ == 0, "%s [%zu,%zu,%zu] BF16 at unit scales: %zu elements differ from SERIAL",
                      uform_cpu_class_name(classes[c]), m, o.k, n, differ);
            free(memory);
        }
        free(want), free(got), free(sums);
        free_operands(&o);
    }
    CHECK_MSG(ties > 0, "no product hit a BF16 rounding tie: the ties-to-even check saw nothing");
    printf("BF16 output at unit scales: %zu ties to even among the products\n", ties);
}

/* K = 65,536 with every value ±127: the extreme sums, exact on every class. */
static void test_extremes(void) {
    size_t m = 3, n = 70, k = UFORM__GEMM_I8_MAX_K;
    operands_t o = {.m = m, .n = n, .k = k, .ldx = k};
    o.qx = malloc(m * k), o.qw = malloc(n * k);
    o.sx = malloc(m * sizeof(float)), o.sw = malloc(n * sizeof(float)), o.sums = malloc(m * sizeof(int32_t));
    for (size_t i = 0; i < m; ++i) {
        o.sums[i] = 0;
        o.sx[i] = 1.0f;
        for (size_t p = 0; p < k; ++p) {
            /* row 0 all +127, row 1 all −127, row 2 alternating pairs */
            int value = i == 0 ? 127 : i == 1 ? -127 : ((p / 2) % 2 ? -127 : 127);
            o.qx[i * k + p] = (int8_t)value;
            o.sums[i] += value;
        }
    }
    for (size_t j = 0; j < n; ++j) {
        o.sw[j] = 1.0f;
        for (size_t p = 0; p < k; ++p) o.qw[j * k + p] = (int8_t)(j % 2 ? -127 : 127);
    }
    for (size_t c = 0; c < class_count; ++c) {
        if (!uform_cpu_class_supported(classes[c])) continue;
        const uform__gemm_i8_kernels_t *table = uform__gemm_i8_kernels(classes[c]);
        uform__gemm_i8_packed_t packed;
        void *memory = pack(table, &o, &packed);
        int32_t *sums = malloc(m * n * sizeof(int32_t));
        uform__gemm_i8_forward_t args = forward_args(&o, &packed, sums, n, UFORM__GEMM_I8_I32, 0, 0, 0);
        uform_outcome_t outcome = {0};
        CHECK_STATUS(table->forward(&args, NULL, &outcome), UFORM_OK);
        size_t wrong = 0;
        for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; ++j) {
                int64_t row_sign = i == 0 ? 1 : i == 1 ? -1 : 0, column_sign = j % 2 ? -1 : 1;
                int64_t want = row_sign * column_sign * 127 * 127 * (int64_t)k;
                wrong += sums[i * n + j] != want;
            }
        CHECK_MSG(wrong == 0, "%s: %zu of the K = 65,536 extreme sums are wrong (e.g. %d, expected %lld)",
                  uform_cpu_class_name(classes[c]), wrong, sums[0], 127LL * 127 * (long long)k);
        free(sums), free(memory);
    }
    free(o.qx), free(o.qw), free(o.sx), free(o.sw), free(o.sums);
}

static void test_refusals(uint64_t *state) {
    operands_t o;
    make_operands(state, 4, 20, 9, &o);
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    uform__gemm_i8_packed_t packed;
    void *memory = pack(serial, &o, &packed);
    float y[4 * 20];
    uform_outcome_t outcome = {0};
    uform__gemm_i8_forward_t args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_F32, 1, 1, 1);
    CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "accumulate");
    args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_I32, 0, 2, 0);
    CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_F32, 0, 0, 0);
    args.x.ld = 9;
    CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "rounded up to 4");
    args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_F32, 0, 0, 0);
    args.k = 10;
    CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_F32, 0, 0, 0);
    args.x.sums = NULL;
    CHECK_STATUS(serial->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "x.sums");
    for (size_t c = 1; c < class_count; ++c) { /* a weight packed by another layout */
        if (!uform_cpu_class_supported(classes[c])) continue;
        args = forward_args(&o, &packed, y, 20, UFORM__GEMM_I8_F32, 0, 0, 0);
        CHECK_STATUS(uform__gemm_i8_kernels(classes[c])->forward(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(outcome.message, "layout");
    }
    uform__gemm_i8_packed_t other;
    CHECK_STATUS(serial->pack(o.qw, 12, o.sw, 20, UFORM__GEMM_I8_MAX_K + 1, memory, 1 << 20, &other, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "65536");
    CHECK_STATUS(serial->pack(o.qw, 12, o.sw, 20, 9, memory, 10, &other, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(serial->pack(o.qw, 12, o.sw, 20, 9, (char *)memory + 1, 1 << 20, &other, &outcome),
                 UFORM_INVALID_ARGUMENT);
    free(memory);
    free_operands(&o);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261202;
    printf("seed %llu\n", (unsigned long long)seed);
    char missing[256] = "";
    for (size_t c = 0; c < class_count; ++c)
        if (!uform_cpu_class_supported(classes[c]))
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "",
                     uform_cpu_class_name(classes[c]));
    test_pool_t pools[4];
    CHECK(test_pool_start(&pools[2], 2) == 0);
    CHECK(test_pool_start(&pools[3], 3) == 0);
    uint64_t state = seed;
    test_quantizers(&state);
    test_serial_reference(&state);
    test_classes(&state, pools);
    test_bf16_ties(&state);
    test_extremes();
    test_refusals(&state);
    test_pool_stop(&pools[2]);
    test_pool_stop(&pools[3]);
    for (size_t c = 0; c < class_count; ++c)
        if (uform_cpu_class_supported(classes[c])) printf("exercised: %s\n", uform_cpu_class_name(classes[c]));
    if (missing[0]) printf("not exercised on this CPU: %s\n", missing);
    return check_finish();
}
