/*
 * The forward product's activations (uform__gemm_gelu_t) and the bias + activation folded into the
 * tiles, on every class this CPU runs:
 *   - each activation through the class's epilogue against a double reference written from its
 *     definition (GELU: libm's erfc, 0.5·x·erfc(−x/√2); QuickGELU x·σ(1.702·x); the tanh form
 *     through tanh, and through x·σ(2u) where 1 + tanh(u) cancels) over a dense grid on
 *     [−30, 30], every 1021st F32 bit pattern (subnormals, huge values, infinities, NaNs) and ±0,
 *     the smallest subnormals, ±FLT_MAX, ±∞ and NaN (+∞ → +∞, −∞ → NaN as the formulas and
 *     PyTorch give, NaN → NaN, ±0 → 0): FAST within 2e-7·max(1, |x|), EXACT within 6e-7
 *     relative, QUICK and TANH within 3e-7 relative (gemm.h's bounds);
 *   - forward with bias and each activation equals, bit for bit, the same product without them
 *     followed by the class's epilogue (what the driver did before the tiles took the epilogue
 *     into their registers), with and without `accumulate`, F32 and BF16 weights, F32 and BF16
 *     activations, plain and packed weights, shapes with ragged tiles, several K slices and
 *     several column chunks;
 *   - forward with bias + activation against a double-precision reference of the same inputs;
 *   - 1 and 2 threads give identical bits with the fast GELU; `gelu` = 5 and −1 are refused.
 * Run with an optional seed argument (printed either way).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "kernels/gemm.h"
#include "kernels/test_gemm_pool.h"
#include "kernels/test_gemm_support.h"
#include "common/skip.h"

static uint64_t seed_state;

static double gelu_double(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }

/* x·σ(z) in double, from e^(−|z|) so that neither branch overflows. */
static double x_sigmoid_double(double x, double z) {
    double e = exp(-fabs(z));
    return z >= 0 ? x / (1.0 + e) : x * e / (1.0 + e);
}

/* The activations in double (≈1e-14 relative at worst here, far below the bounds tested; not long
 * double, whose x87 arithmetic QEMU emulates ~100× slower under `make test-avx2`), written from
 * their definitions: QuickGELU x·σ(1.702·x), and the tanh form 0.5·x·(1 + tanh(√(2/π)·(x +
 * 0.044715·x³))) through tanh where 1 + tanh keeps its digits (x ≥ −3: it loses at most 8 bits),
 * through x·σ(2u) below, where 1 + tanh(u) would cancel. */
static double activation_double(int kind, double x) {
    switch (kind) {
    case UFORM__GEMM_GELU_QUICK: return x_sigmoid_double(x, 1.702 * x);
    case UFORM__GEMM_GELU_TANH: {
        double u = sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
        return x >= -3.0 ? 0.5 * x * (1.0 + tanh(u)) : x_sigmoid_double(x, 2.0 * u);
    }
    case UFORM__GEMM_GELU_NONE: return x;
    default: return gelu_double(x);
    }
}

static const char *activation_name(int kind) {
    static const char *names[] = {"none", "exact", "fast", "quick", "tanh"};
    return kind >= 0 && kind <= UFORM__GEMM_GELU_LAST ? names[kind] : "unknown";
}

static float float_from_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Every value the sweep covers: a grid, bit patterns, and the special values. Under make test-avx2's
 * emulator (UFORM_TEST_EMULATED set), every 8th of the grid and of the bit patterns: the same code
 * paths of the AVX2 class, at an eighth of the emulated minutes. */
static float *sweep_values(size_t *count) {
    size_t stride = check_emulated() ? 8 : 1;
    size_t grid = 600001 / stride, patterns = (size_t)(UINT32_MAX / (1021u * stride)) + 1;
    static const uint32_t special_bits[] = {
        0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00800000u, 0x80800000u, 0x7F7FFFFFu,
        0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x33800000u,
        0xB3800000u, 0x41A00000u, 0xC1A00000u, 0x41540000u, 0xC1540000u, /* ±2^-24, ±20, ±13.25 */
    };
    size_t specials = sizeof special_bits / sizeof special_bits[0];
    float *values = malloc((grid + patterns + specials) * sizeof(float));
    size_t n = 0;
    for (size_t i = 0; i < grid; ++i) values[n++] = (float)(-30.0 + 60.0 * (double)i / (double)(grid - 1));
    for (size_t i = 0; i < patterns; ++i) values[n++] = float_from_bits((uint32_t)(i * 1021u * stride));
    for (size_t i = 0; i < specials; ++i) values[n++] = float_from_bits(special_bits[i]);
    *count = n;
    return values;
}

/* The bound each activation is held to over the sweep (gemm.h documents them): FAST the absolute
 * 2e-7·max(1, |x|); the others relative (EXACT 6e-7, QUICK and TANH 3e-7) plus two subnormal ulps. */
static double sweep_tolerance(int gelu, double in, double want) {
    if (gelu == UFORM__GEMM_GELU_FAST) return 2e-7 * fmax(1.0, fabs(in));
    return (gelu == UFORM__GEMM_GELU_EXACT ? 6e-7 : 3e-7) * fabs(want) + 3e-45;
}

/* Every class's epilogue, activation `gelu` (not NONE), over the sweep; the reference is computed
 * once for all classes. */
static void test_gelu_sweep(int gelu) {
    size_t count;
    float *x = sweep_values(&count), *y = malloc(count * sizeof(float));
    double *reference = malloc(count * sizeof(double));
    for (size_t i = 0; i < count; ++i) reference[i] = activation_double(gelu, x[i]);
    for (size_t c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        memcpy(y, x, count * sizeof(float));
        table->epilogue(y, count, 1, count, NULL, gelu);
        size_t failures = 0;
        double worst = 0, worst_at = 0;
        const char *name = uform_cpu_class_name(table->cpu_class), *mode = activation_name(gelu);
        for (size_t i = 0; i < count; ++i) {
            double in = x[i], out = y[i], want = reference[i];
            int ok;
            double tol = 0;
            if (isnan(in) || (isinf(in) && in < 0)) ok = isnan(out); /* −∞·0 is NaN, as in PyTorch */
            else if (isinf(in)) ok = out == in;
            else {
                tol = sweep_tolerance(gelu, in, want);
                double error = fabs(out - want);
                double measure = gelu == UFORM__GEMM_GELU_FAST ? error / fmax(1.0, fabs(in))
                                                               : (fabs(want) > 1e-37 ? error / fabs(want) : 0);
                if (measure > worst) worst = measure, worst_at = in;
                ok = error <= tol;
            }
            if (!ok && failures++ < 3) {
                uint32_t bits;
                memcpy(&bits, x + i, sizeof bits);
                fprintf(stderr, "%s %s GELU(%.9g) (bits 0x%08x):\n", name, mode, in, (unsigned)bits);
                CHECK_NEAR(out, want, tol, 0.0);
            }
        }
        CHECK_MSG(failures == 0, "%s %s GELU: %zu of %zu values out of bound", name, mode, failures, count);
        printf("%s %s GELU: worst %s error %.3g (at x = %.7g) over %zu values\n", name, mode,
               gelu == UFORM__GEMM_GELU_FAST ? "|error|/max(1,|x|)" : "relative", worst, worst_at, count);
    }
    free(x), free(y), free(reference);
}

typedef struct shape_t {
    size_t m, n, k;
} shape_t;

/* Ragged tiles of every class (MR 4/6, NR 16/64), K slices (GENOA's 1536: 1601 and 3100 make two
 * and three), column chunks (NC 1024/1536: N = 1601). */
static const shape_t shapes[] = {{1, 1, 1},   {7, 13, 97},   {13, 97, 257}, {29, 65, 513},
                                 {9, 70, 1601}, {5, 1601, 19}, {12, 64, 3100}, {61, 200, 384}};

/*
 * One product with bias + GELU (`gelu`, and `accumulate`) against the same product without
 * either followed by the class's epilogue: bit for bit. Without accumulate, also against a
 * double reference (fast GELU: its bound on top of the product's own tolerance).
 */
/* The row after `i` when visiting every `step`th row of `m` and then the last one. */
static size_t next_row(size_t i, size_t m, size_t step) {
    if (i == m - 1) return m;
    return i + step < m ? i + step : m - 1;
}

static void test_folded(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype,
                        uform__gemm_dtype_t x_dtype, int packed, int with_bias, int gelu, int accumulate) {
    size_t m = shape->m, n = shape->n, k = shape->k, ldx = k + 2, ldw = k + 1, ldy = n + 3;
    float *x_float = malloc(m * k * sizeof(float)), *w_float = malloc(n * k * sizeof(float));
    /* Scale so the pre-activations spread over ≈[−4, 4], where GELU bends. */
    float x_scale = (float)(4.0 / sqrt((double)k + 1.0));
    void *x = test_gemm_random_matrix(&seed_state, m, k, ldx, x_dtype, x_scale, x_float);
    void *w = test_gemm_random_matrix(&seed_state, n, k, ldw, w_dtype, 2.0f, w_float);
    float *bias = malloc(n * sizeof(float));
    for (size_t j = 0; j < n; ++j) bias[j] = 2.0f * check_random_float(&seed_state);
    float *start = malloc((m * ldy + 1) * sizeof(float));
    for (size_t i = 0; i < m * ldy + 1; ++i) start[i] = 3.0f * check_random_float(&seed_state);
    float *folded = malloc((m * ldy + 1) * sizeof(float)), *separate = malloc((m * ldy + 1) * sizeof(float));
    memcpy(folded, start, (m * ldy + 1) * sizeof(float));
    memcpy(separate, start, (m * ldy + 1) * sizeof(float));
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = ldx, .x_dtype = x_dtype, .w = w, .ldw = ldw,
                                  .w_dtype = w_dtype, .bias = with_bias ? bias : NULL, .gelu = gelu, .y = folded,
                                  .ldy = ldy, .accumulate = accumulate};
    uform__gemm_packed_t packed_weight;
    void *memory = NULL;
    uform_outcome_t outcome = {0};
    if (packed) memory = test_gemm_pack_weight(table, &args, &packed_weight, &outcome);
    uform__gemm_forward_fn forward = w_dtype == UFORM__GEMM_F32 ? table->forward_f32 : table->forward_bf16;
    CHECK_STATUS(forward(&args, NULL, &outcome), UFORM_OK);
    args.bias = NULL, args.gelu = 0, args.y = separate;
    CHECK_STATUS(forward(&args, NULL, &outcome), UFORM_OK);
    table->epilogue(separate, ldy, m, n, with_bias ? bias : NULL, gelu);
    char what[200];
    snprintf(what, sizeof what, "%s K=%zu N=%zu M=%zu W=%s X=%s %s bias=%d gelu=%d accumulate=%d",
             uform_cpu_class_name(table->cpu_class), k, n, m, w_dtype ? "bf16" : "f32", x_dtype ? "bf16" : "f32",
             packed ? "packed" : "plain", with_bias, gelu, accumulate);
    size_t differ = 0;
    for (size_t i = 0; i < m * ldy + 1; ++i) {
        uint32_t a, b;
        memcpy(&a, folded + i, sizeof a), memcpy(&b, separate + i, sizeof b);
        if (a != b && differ++ == 0)
            fprintf(stderr, "%s: element %zu: folded %.9g, product then epilogue %.9g\n", what, i, folded[i], separate[i]);
    }
    CHECK_MSG(differ == 0, "%s: %zu elements differ between the folded epilogue and the separate one", what, differ);
    if (!accumulate) {
        /* GENOA's BF16 slot rounds F32 activations to BF16: the reference does too. */
        int rounds = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_dtype == UFORM__GEMM_BF16;
        /* Under the emulator, every 7th row and the last against double (the folded check above
         * still covers every element): QEMU spends most of this test in this reference. */
        size_t bad = 0, row_step = check_emulated() ? 7 : 1;
        for (size_t i = 0; i < m; i = next_row(i, m, row_step))
            for (size_t j = 0; j < n; ++j) {
                double sum = with_bias ? bias[j] : 0.0, size = with_bias ? fabs(bias[j]) : 0.0;
                for (size_t p = 0; p < k; ++p) {
                    float xv = x_float[i * k + p];
                    if (rounds) xv = uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32(xv));
                    sum += (double)xv * w_float[j * k + p];
                    size += fabs((double)xv * w_float[j * k + p]);
                }
                /* The product's F32 error, through the activation (every slope below 1.13), plus the
                 * activation's own (sweep_tolerance). */
                double tol = 1.13 * (4.0 * sqrt((double)k) + 16.0) * ldexp(1.0, -24) * size;
                double want = activation_double(gelu, sum);
                if (gelu) tol += sweep_tolerance(gelu, sum, want);
                double got = folded[i * ldy + j];
                if (!(fabs(got - want) <= tol) && bad++ == 0) {
                    fprintf(stderr, "%s: element [%zu, %zu] against double:\n", what, i, j);
                    CHECK_NEAR(got, want, tol, 0.0);
                }
            }
        CHECK_MSG(bad == 0, "%s: %zu elements out of tolerance against double", what, bad);
    }
    free(x_float), free(w_float), free(x), free(w), free(bias), free(start), free(folded), free(separate), free(memory);
}

/* The fast GELU's product with 1 and 2 threads: identical bits. */
static void test_threads(const uform__gemm_kernels_t *table, test_pool_t *pool) {
    size_t m = 300, n = 200, k = 600;
    float *x_float = malloc(m * k * sizeof(float)), *w_float = malloc(n * k * sizeof(float));
    float *x = test_gemm_random_matrix(&seed_state, m, k, k, UFORM__GEMM_F32, 0.2f, x_float);
    void *w = test_gemm_random_matrix(&seed_state, n, k, k, UFORM__GEMM_BF16, 1.0f, w_float);
    float *bias = malloc(n * sizeof(float)), *y1 = malloc(m * n * sizeof(float)), *y2 = malloc(m * n * sizeof(float));
    for (size_t j = 0; j < n; ++j) bias[j] = check_random_float(&seed_state);
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = k, .x_dtype = UFORM__GEMM_F32, .w = w, .ldw = k,
                                  .w_dtype = UFORM__GEMM_BF16, .bias = bias, .gelu = UFORM__GEMM_GELU_FAST, .y = y1,
                                  .ldy = n};
    CHECK_STATUS(table->forward_bf16(&args, NULL, NULL), UFORM_OK);
    args.y = y2;
    CHECK_STATUS(table->forward_bf16(&args, &pool->parallel, NULL), UFORM_OK);
    CHECK_MSG(memcmp(y1, y2, m * n * sizeof(float)) == 0, "%s fast GELU: 2 threads differ from 1",
              uform_cpu_class_name(table->cpu_class));
    free(x_float), free(w_float), free(x), free(w), free(bias), free(y1), free(y2);
}

int main(int argc, char **argv) {
    seed_state = test_gemm_seed(argc, argv, 20261129u);
    test_pool_t pool;
    CHECK(test_pool_start(&pool, 2) == 0);
    for (int gelu = 1; gelu <= UFORM__GEMM_GELU_LAST; ++gelu) test_gelu_sweep(gelu);
    for (size_t c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        size_t before = check_failed_count;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int gelu = 0; gelu <= UFORM__GEMM_GELU_LAST; ++gelu)
                for (int variant = 0; variant < 4; ++variant) {
                    uform__gemm_dtype_t w_dtype = variant & 1 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
                    uform__gemm_dtype_t x_dtype = variant == 3 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
                    int packed = variant >= 1 && (s + gelu) % 2 == 0;
                    test_folded(table, &shapes[s], w_dtype, x_dtype, packed, 1, gelu, 0);
                    if (gelu == 0) test_folded(table, &shapes[s], w_dtype, x_dtype, packed, 1, 0, 1);
                    else if (variant == 1) test_folded(table, &shapes[s], w_dtype, x_dtype, packed, 0, gelu, 0);
                }
        test_threads(table, &pool);
        printf("%s: %s\n", uform_cpu_class_name(test_gemm_classes[c]), check_failed_count == before ? "ok" : "FAILED");
    }
    test_pool_stop(&pool);
    /* An activation the header does not define is refused with its value (the classes share the
     * driver's check; the portable table answers on every CPU). */
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1}, y[4] = {0};
    uform__gemm_forward_t args = {.m = 2, .n = 2, .k = 2, .x = x, .ldx = 2, .w = w, .ldw = 2, .gelu = 5, .y = y, .ldy = 2};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL)->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'gelu' is 5; expected 0 (none), 1 (exact), 2 (fast), 3 (quick) or 4 (tanh)");
    args.gelu = -1;
    CHECK_STATUS(uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL)->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'gelu' is -1");
    return check_finish();
}
