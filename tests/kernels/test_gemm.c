/*
 * GEMM kernels of every class this CPU runs, against references:
 *   - SERIAL against a double-precision product of the same (F32 or BF16) inputs;
 *   - every other class against SERIAL (and GENOA's BF16 paths also against double precision of
 *     the BF16-rounded activations, which is what vdpbf16ps multiplies);
 *   - forward (no epilogue, bias, GELU, bias + GELU), dX, dW accumulation, db; F32 and BF16
 *     weights, F32 and BF16 activations, plain and packed weights; shapes with 1, primes and the
 *     ragged tails of every register tile and cache block; strided sub-matrices whose padding
 *     holds NaN (reading it would poison the result) and sentinels (writing it is caught);
 *   - dX, dW, db against central finite differences of the class's own forward;
 *   - bit-identical results with 1, 2 and 3 threads (and with the caller's scratch);
 *   - the vector GELU against double erfc; no NULL slot in any table; argument errors.
 * Tolerances: F32 paths |error| ≤ (4·√K + 16)·2⁻²⁴·Σ|a·b|; BF16-rounded activations add 2⁻⁸·Σ|a·b|.
 * Run with an optional seed argument (printed either way).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "kernels/gemm.h"
#include "kernels/test_gemm_pool.h"
#include "kernels/test_gemm_support.h"

static uint64_t seed_state;

typedef struct shape_t {
    size_t m, n, k;
} shape_t;

/* 1, primes, and tails of the tiles (4/6/14 rows, 16/32 columns), of KC (256..1536), MC (128..168)
 * and NC (1024/1536). */
static const shape_t shapes[] = {
    {1, 1, 1},     {1, 7, 13},    {7, 13, 97},    {13, 97, 257},  {14, 32, 2},   {15, 33, 3},
    {6, 16, 512},  {29, 65, 513}, {97, 31, 300},  {170, 47, 1025}, {3, 1601, 19}, {257, 257, 7},
    {9, 70, 1601}, /* K beyond GENOA's 1536-long slices: two slices of 801 and 800 */
    {10, 130, 70}, /* a 4-row tail (6 + 4; the AVX-512 tile has one variant per row count) over 3 panels */
};

static float *random_floats(size_t count) {
    float *values = malloc(count * sizeof(float) + 1);
    for (size_t i = 0; i < count; ++i) values[i] = check_random_float(&seed_state);
    return values;
}

/* A [rows, cols] matrix with row stride `ld`; the padding holds NaN. */
static void *random_matrix(size_t rows, size_t cols, size_t ld, uform__gemm_dtype_t dtype, double *as_double) {
    size_t count = rows * ld + 1;
    if (dtype == UFORM__GEMM_F32) {
        float *values = malloc(count * sizeof(float));
        for (size_t i = 0; i < count; ++i) values[i] = NAN;
        for (size_t r = 0; r < rows; ++r)
            for (size_t c = 0; c < cols; ++c) {
                values[r * ld + c] = check_random_float(&seed_state);
                as_double[r * cols + c] = values[r * ld + c];
            }
        return values;
    }
    uform__bf16_t *values = malloc(count * sizeof(uform__bf16_t));
    for (size_t i = 0; i < count; ++i) values[i] = 0x7FC0; /* NaN */
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            values[r * ld + c] = uform__gemm_bf16_from_f32(check_random_float(&seed_state));
            as_double[r * cols + c] = uform__gemm_f32_from_bf16(values[r * ld + c]);
        }
    return values;
}

static double bf16_round_double(double value) { return uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32((float)value)); }

static double gelu_double(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

static double tolerance_f32(double magnitude, size_t k) { return (4.0 * sqrt((double)k) + 16.0) * ldexp(1.0, -24) * magnitude + 1e-30; }

/*
 * Compares got[rows, cols] (row stride ld) with expected (dense), element tolerance from
 * `magnitude` (Σ|a·b| per element): tol = scale_f32·tolerance_f32 + bf16 · 2⁻⁸ · magnitude, and
 * GELU adds 2e-6 relative. Checks the padding columns still hold `sentinel`. Prints the first
 * failure with both values and the tolerance.
 */
static void compare(const char *what, const float *got, size_t rows, size_t cols, size_t ld, const double *expected,
                    const double *magnitude, size_t k, int bf16, int gelu) {
    size_t failures = 0;
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            double tol = tolerance_f32(magnitude[r * cols + c], k) + (bf16 ? ldexp(1.0, -8) * magnitude[r * cols + c] : 0.0);
            if (gelu) tol = 1.2 * tol + 2e-6 * fabs(expected[r * cols + c]);
            double value = got[r * ld + c], want = expected[r * cols + c];
            if (!(fabs(value - want) <= tol) || isnan(value)) {
                if (failures++ == 0) {
                    fprintf(stderr, "%s: element [%zu, %zu] of [%zu, %zu] (K=%zu):\n", what, r, c, rows, cols, k);
                    CHECK_NEAR(value, want, tol, 0.0);
                }
            }
        }
    for (size_t r = 0; r + 1 < rows; ++r)
        for (size_t c = cols; c < ld; ++c)
            if (got[r * ld + c] != -7.0f && failures++ == 0) {
                fprintf(stderr, "%s: padding [%zu, %zu] was overwritten: %g\n", what, r, c, got[r * ld + c]);
                CHECK(got[r * ld + c] == -7.0f);
            }
    CHECK_MSG(failures == 0, "%s: %zu of %zu elements out of tolerance", what, failures, rows * cols);
}

static float *output_matrix(size_t rows, size_t ld, const float *initial, size_t cols) {
    float *values = malloc((rows * ld + 1) * sizeof(float));
    for (size_t i = 0; i < rows * ld + 1; ++i) values[i] = -7.0f;
    if (initial)
        for (size_t r = 0; r < rows; ++r) memcpy(values + r * ld, initial + r * cols, cols * sizeof(float));
    return values;
}

static const char *class_name(uform_cpu_class_t cpu_class) { return uform_cpu_class_name(cpu_class); }

/* Forward products of one class on one shape, against double precision (x, w as the kernel
 * sees them: `x_rounded` says GENOA rounds F32 activations to BF16). */
static void test_forward(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype,
                         uform__gemm_dtype_t x_dtype, int packed, int epilogue) {
    size_t m = shape->m, n = shape->n, k = shape->k, ldx = k + 3, ldw = k + 1, ldy = n + 2;
    double *x_double = malloc(m * k * sizeof(double)), *w_double = malloc(n * k * sizeof(double));
    void *x = random_matrix(m, k, ldx, x_dtype, x_double), *w = random_matrix(n, k, ldw, w_dtype, w_double);
    float *bias = random_floats(n);
    int with_bias = epilogue & 1, gelu = (epilogue & 2) != 0;
    int rounds_x = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_dtype == UFORM__GEMM_BF16 && x_dtype == UFORM__GEMM_F32;
    double *expected = malloc(m * n * sizeof(double)), *magnitude = malloc(m * n * sizeof(double));
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            double sum = 0, size = 0;
            for (size_t p = 0; p < k; ++p) {
                double xv = rounds_x ? bf16_round_double(x_double[i * k + p]) : x_double[i * k + p];
                sum += xv * w_double[j * k + p];
                size += fabs(xv * w_double[j * k + p]);
            }
            if (with_bias) sum += bias[j], size += fabs(bias[j]);
            expected[i * n + j] = gelu ? gelu_double(sum) : sum;
            magnitude[i * n + j] = size;
        }
    float *y = output_matrix(m, ldy, NULL, 0);
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = ldx, .x_dtype = x_dtype, .w = w, .ldw = ldw,
                                  .w_dtype = w_dtype, .bias = with_bias ? bias : NULL, .gelu = gelu, .y = y, .ldy = ldy};
    uform__gemm_packed_t packed_weight;
    void *memory = NULL;
    uform_outcome_t outcome = {0};
    if (packed) {
        memory = test_gemm_pack_weight(table, &args, &packed_weight, &outcome);
        args.w = NULL;
    }
    uform__gemm_forward_fn forward = w_dtype == UFORM__GEMM_F32 ? table->forward_f32 : table->forward_bf16;
    CHECK_STATUS(forward(&args, NULL, &outcome), UFORM_OK);
    char what[200];
    snprintf(what, sizeof what, "%s forward W=%s X=%s %s bias=%d gelu=%d (seed-driven)", class_name(table->cpu_class),
             w_dtype ? "bf16" : "f32", x_dtype ? "bf16" : "f32", packed ? "packed" : "plain", with_bias, gelu);
    compare(what, y, m, n, ldy, expected, magnitude, k, 0, gelu);
    free(x_double), free(w_double), free(x), free(w), free(bias), free(expected), free(magnitude), free(y), free(memory);
}

static void test_backward_x(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype) {
    size_t m = shape->m, n = shape->n, k = shape->k, lddy = n + 1, ldw = k + 2, lddx = k + 3;
    double *dy_double = malloc(m * n * sizeof(double)), *w_double = malloc(n * k * sizeof(double));
    float *dy = random_matrix(m, n, lddy, UFORM__GEMM_F32, dy_double);
    void *w = random_matrix(n, k, ldw, w_dtype, w_double);
    int rounds = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_dtype == UFORM__GEMM_BF16;
    double *expected = malloc(m * k * sizeof(double)), *magnitude = malloc(m * k * sizeof(double));
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < k; ++j) {
            double sum = 0, size = 0;
            for (size_t p = 0; p < n; ++p) {
                double a = rounds ? bf16_round_double(dy_double[i * n + p]) : dy_double[i * n + p];
                sum += a * w_double[p * k + j];
                size += fabs(a * w_double[p * k + j]);
            }
            expected[i * k + j] = sum, magnitude[i * k + j] = size;
        }
    float *dx = output_matrix(m, lddx, NULL, 0);
    uform__gemm_backward_x_t args = {.m = m, .n = n, .k = k, .dy = dy, .lddy = lddy, .w = w, .ldw = ldw,
                                     .w_dtype = w_dtype, .dx = dx, .lddx = lddx};
    uform__gemm_backward_x_fn backward = w_dtype == UFORM__GEMM_F32 ? table->backward_x_f32 : table->backward_x_bf16;
    CHECK_STATUS(backward(&args, NULL, NULL), UFORM_OK);
    char what[160];
    snprintf(what, sizeof what, "%s backward_x W=%s", class_name(table->cpu_class), w_dtype ? "bf16" : "f32");
    compare(what, dx, m, k, lddx, expected, magnitude, n, 0, 0);
    free(dy_double), free(w_double), free(dy), free(w), free(expected), free(magnitude), free(dx);
}

/* `bf16_slot`: backward_w_bf16, which GENOA computes on BF16-rounded dY and X (the reference
 * rounds them the same way and keeps the F32 tolerance). */
static void test_backward_w(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t x_dtype,
                            int bf16_slot) {
    size_t m = shape->m, n = shape->n, k = shape->k, lddy = n + 2, ldx = k + 1, lddw = k + 4;
    double *dy_double = malloc(m * n * sizeof(double)), *x_double = malloc(m * k * sizeof(double));
    float *dy = random_matrix(m, n, lddy, UFORM__GEMM_F32, dy_double);
    void *x = random_matrix(m, k, ldx, x_dtype, x_double);
    float *initial = random_floats(n * k);
    int rounds = bf16_slot && table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA;
    double *expected = malloc(n * k * sizeof(double)), *magnitude = malloc(n * k * sizeof(double));
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < k; ++j) {
            double sum = initial[i * k + j], size = fabs(initial[i * k + j]);
            for (size_t p = 0; p < m; ++p) {
                double a = rounds ? bf16_round_double(dy_double[p * n + i]) : dy_double[p * n + i];
                double b = rounds ? bf16_round_double(x_double[p * k + j]) : x_double[p * k + j];
                sum += a * b;
                size += fabs(a * b);
            }
            expected[i * k + j] = sum, magnitude[i * k + j] = size;
        }
    float *dw = output_matrix(n, lddw, initial, k);
    uform__gemm_backward_w_t args = {.m = m, .n = n, .k = k, .dy = dy, .lddy = lddy, .x = x, .ldx = ldx,
                                     .x_dtype = x_dtype, .dw = dw, .lddw = lddw};
    CHECK_STATUS((bf16_slot ? table->backward_w_bf16 : table->backward_w)(&args, NULL, NULL), UFORM_OK);
    char what[160];
    snprintf(what, sizeof what, "%s backward_w%s X=%s", class_name(table->cpu_class), bf16_slot ? "_bf16" : "",
             x_dtype ? "bf16" : "f32");
    compare(what, dw, n, k, lddw, expected, magnitude, m + 1, 0, 0);
    free(dy_double), free(x_double), free(dy), free(x), free(initial), free(expected), free(magnitude), free(dw);
}

static void test_backward_b(const uform__gemm_kernels_t *table, const shape_t *shape) {
    size_t m = shape->m, n = shape->n, lddy = n + 5;
    double *dy_double = malloc(m * n * sizeof(double));
    float *dy = random_matrix(m, n, lddy, UFORM__GEMM_F32, dy_double);
    float *db = random_floats(n);
    double *expected = malloc(n * sizeof(double)), *magnitude = malloc(n * sizeof(double));
    for (size_t j = 0; j < n; ++j) {
        expected[j] = db[j], magnitude[j] = fabs(db[j]);
        for (size_t i = 0; i < m; ++i) expected[j] += dy_double[i * n + j], magnitude[j] += fabs(dy_double[i * n + j]);
    }
    uform__gemm_backward_b_t args = {.m = m, .n = n, .dy = dy, .lddy = lddy, .db = db};
    CHECK_STATUS(table->backward_b(&args, NULL, NULL), UFORM_OK);
    char what[160];
    snprintf(what, sizeof what, "%s backward_b", class_name(table->cpu_class));
    compare(what, db, 1, n, n, expected, magnitude, m + 1, 0, 0);
    free(dy_double), free(dy), free(db), free(expected), free(magnitude);
}

/* Every class against SERIAL on the same inputs (the other direction of the reference chain). */
static void test_against_serial(const uform__gemm_kernels_t *table, const shape_t *shape) {
    const uform__gemm_kernels_t *serial = uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL);
    size_t m = shape->m, n = shape->n, k = shape->k;
    double *x_double = malloc(m * k * sizeof(double)), *w_double = malloc(n * k * sizeof(double));
    for (int w_bf16 = 0; w_bf16 < 2; ++w_bf16) {
        uform__gemm_dtype_t w_dtype = w_bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
        float *x = random_matrix(m, k, k, UFORM__GEMM_F32, x_double);
        void *w = random_matrix(n, k, k, w_dtype, w_double);
        float *bias = random_floats(n);
        double *magnitude = malloc(m * n * sizeof(double)), *expected = malloc(m * n * sizeof(double));
        for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; ++j) {
                double size = fabs(bias[j]);
                for (size_t p = 0; p < k; ++p) size += fabs(x_double[i * k + p] * w_double[j * k + p]);
                magnitude[i * n + j] = size;
            }
        float *y = output_matrix(m, n, NULL, 0), *y_serial = output_matrix(m, n, NULL, 0);
        uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = k, .x_dtype = UFORM__GEMM_F32, .w = w,
                                      .ldw = k, .w_dtype = w_dtype, .bias = bias, .gelu = 1, .y = y_serial, .ldy = n};
        CHECK_STATUS((w_bf16 ? serial->forward_bf16 : serial->forward_f32)(&args, NULL, NULL), UFORM_OK);
        args.y = y;
        CHECK_STATUS((w_bf16 ? table->forward_bf16 : table->forward_f32)(&args, NULL, NULL), UFORM_OK);
        for (size_t i = 0; i < m * n; ++i) expected[i] = y_serial[i];
        int rounds = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_bf16;
        char what[160];
        snprintf(what, sizeof what, "%s vs serial forward+bias+gelu W=%s", class_name(table->cpu_class),
                 w_bf16 ? "bf16" : "f32");
        /* Both sides carry an F32 rounding error, hence twice the F32 tolerance. */
        for (size_t i = 0; i < m * n; ++i) magnitude[i] *= 2.0;
        compare(what, y, m, n, n, expected, magnitude, k, rounds, 1);
        free(x), free(w), free(bias), free(magnitude), free(expected), free(y), free(y_serial);
    }
    free(x_double), free(w_double);
}

/* 1, 2 and 3 threads must give identical bits for every product. */
static void test_determinism(const uform__gemm_kernels_t *table, test_pool_t pools[3]) {
    size_t m = 300, n = 200, k = 600;
    double *scratch = malloc((size_t)m * k * sizeof(double) + (size_t)n * k * sizeof(double));
    float *x = random_matrix(m, k, k, UFORM__GEMM_F32, scratch), *dy = random_matrix(m, n, n, UFORM__GEMM_F32, scratch);
    void *w16 = random_matrix(n, k, k, UFORM__GEMM_BF16, scratch);
    float *w32 = random_matrix(n, k, k, UFORM__GEMM_F32, scratch), *bias = random_floats(n);
    /* Runs: 1, 2, 3 threads with scratch the kernels allocate, then 2 threads with the caller's. */
    float *results[4][6];
    size_t scratch_size = table->scratch_bytes(2);
    void *caller_scratch = aligned_alloc(64, (scratch_size + 63) / 64 * 64);
    for (int t = 0; t < 4; ++t) {
        const uform__parallel_t *parallel = t == 0 ? NULL : &pools[t == 3 ? 1 : t].parallel;
        void *run_scratch = t == 3 ? caller_scratch : NULL;
        size_t run_capacity = t == 3 ? scratch_size : 0;
        for (int product = 0; product < 6; ++product) results[t][product] = calloc((size_t)m * k + n * k, sizeof(float));
        uform__gemm_forward_t forward = {.m = m, .n = n, .k = k, .x = x, .ldx = k, .x_dtype = UFORM__GEMM_F32, .w = w16,
                                         .ldw = k, .w_dtype = UFORM__GEMM_BF16, .bias = bias, .gelu = 1,
                                         .y = results[t][0], .ldy = n, .scratch = run_scratch,
                                         .scratch_capacity = run_capacity};
        CHECK_STATUS(table->forward_bf16(&forward, parallel, NULL), UFORM_OK);
        forward.w = w32, forward.w_dtype = UFORM__GEMM_F32, forward.y = results[t][1];
        CHECK_STATUS(table->forward_f32(&forward, parallel, NULL), UFORM_OK);
        uform__gemm_backward_x_t backward_x = {.m = m, .n = n, .k = k, .dy = dy, .lddy = n, .w = w16, .ldw = k,
                                               .w_dtype = UFORM__GEMM_BF16, .dx = results[t][2], .lddx = k,
                                               .scratch = run_scratch, .scratch_capacity = run_capacity};
        CHECK_STATUS(table->backward_x_bf16(&backward_x, parallel, NULL), UFORM_OK);
        uform__gemm_backward_w_t backward_w = {.m = m, .n = n, .k = k, .dy = dy, .lddy = n, .x = x, .ldx = k,
                                               .x_dtype = UFORM__GEMM_F32, .dw = results[t][3], .lddw = k,
                                               .scratch = run_scratch, .scratch_capacity = run_capacity};
        CHECK_STATUS(table->backward_w(&backward_w, parallel, NULL), UFORM_OK);
        backward_w.dw = results[t][5];
        CHECK_STATUS(table->backward_w_bf16(&backward_w, parallel, NULL), UFORM_OK);
        uform__gemm_backward_b_t backward_b = {.m = m, .n = n, .dy = dy, .lddy = n, .db = results[t][4]};
        CHECK_STATUS(table->backward_b(&backward_b, parallel, NULL), UFORM_OK);
    }
    static const char *names[6] = {"forward_bf16", "forward_f32", "backward_x_bf16", "backward_w", "backward_b",
                                   "backward_w_bf16"};
    for (int product = 0; product < 6; ++product)
        for (int t = 1; t < 4; ++t)
            CHECK_MSG(memcmp(results[0][product], results[t][product], ((size_t)m * k + n * k) * sizeof(float)) == 0,
                      "%s %s: run %d (%d threads%s) differs from 1 thread", class_name(table->cpu_class), names[product],
                      t, t == 3 ? 2 : t + 1, t == 3 ? ", caller's scratch" : "");
    for (int t = 0; t < 4; ++t)
        for (int product = 0; product < 6; ++product) free(results[t][product]);
    free(caller_scratch);
    free(scratch), free(x), free(dy), free(w16), free(w32), free(bias);
}

/* Y = GELU(x·1) over [−20, 20] and special values, against double erfc, for every class. */
static void test_gelu(const uform__gemm_kernels_t *table) {
    enum { COUNT = 4003 };
    static float x[COUNT], y[COUNT];
    float one = 1.0f;
    for (int i = 0; i < COUNT - 3; ++i) x[i] = -20.0f + 40.0f * (float)i / (float)(COUNT - 4);
    x[COUNT - 3] = 0.0f, x[COUNT - 2] = 1e-30f, x[COUNT - 1] = -3.3e-7f;
    uform__gemm_forward_t args = {.m = COUNT, .n = 1, .k = 1, .x = x, .ldx = 1, .x_dtype = UFORM__GEMM_F32, .w = &one,
                                  .ldw = 1, .w_dtype = UFORM__GEMM_F32, .gelu = 1, .y = y, .ldy = 1};
    CHECK_STATUS(table->forward_f32(&args, NULL, NULL), UFORM_OK);
    size_t failures = 0;
    double worst = 0;
    for (int i = 0; i < COUNT; ++i) {
        double want = gelu_double(x[i]);
        double tol = 1e-6 * fabs(want) + 3e-45; /* two subnormal ulps */
        double error = fabs(y[i] - want);
        if (fabs(want) > 1e-37) worst = fmax(worst, error / fabs(want));
        if (!(error <= tol)) {
            if (failures++ == 0) {
                fprintf(stderr, "%s GELU(%.9g):\n", class_name(table->cpu_class), x[i]);
                CHECK_NEAR(y[i], want, tol, 0.0);
            }
        }
    }
    CHECK_MSG(failures == 0, "%s GELU: %zu of %d values out of tolerance", class_name(table->cpu_class), failures, COUNT);
    printf("%s GELU: worst relative error %.3g over [-20, 20]\n", class_name(table->cpu_class), worst);
}

/* L = Σ G ⊙ (X·Wᵀ + b) through the class's own forward, summed in double. */
static double fd_loss(const uform__gemm_kernels_t *table, size_t m, size_t n, size_t k, const float *x, const float *w,
                      const float *bias, const float *g, float *y) {
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = k, .w = w, .ldw = k, .bias = bias, .y = y, .ldy = n};
    if (table->forward_f32(&args, NULL, NULL) != UFORM_OK) return NAN;
    double loss = 0;
    for (size_t i = 0; i < m * n; ++i) loss += (double)g[i] * y[i];
    return loss;
}

/* dX, dW, db of every class against central finite differences of its own forward: L is linear,
 * so with h = 1/64 the difference quotient is exact up to the F32 rounding of the forward. */
static void test_finite_differences(const uform__gemm_kernels_t *table) {
    enum { M = 5, N = 7, K = 9 };
    float x[M * K], w[N * K], bias[N], g[M * N], y[M * N], dx[M * K], dw[N * K] = {0}, db[N] = {0};
    for (int i = 0; i < M * K; ++i) x[i] = check_random_float(&seed_state);
    for (int i = 0; i < N * K; ++i) w[i] = check_random_float(&seed_state);
    for (int i = 0; i < N; ++i) bias[i] = check_random_float(&seed_state);
    for (int i = 0; i < M * N; ++i) g[i] = check_random_float(&seed_state);
    uform__gemm_backward_x_t backward_x = {.m = M, .n = N, .k = K, .dy = g, .lddy = N, .w = w, .ldw = K, .dx = dx, .lddx = K};
    uform__gemm_backward_w_t backward_w = {.m = M, .n = N, .k = K, .dy = g, .lddy = N, .x = x, .ldx = K, .dw = dw, .lddw = K};
    uform__gemm_backward_b_t backward_b = {.m = M, .n = N, .dy = g, .lddy = N, .db = db};
    CHECK_STATUS(table->backward_x_f32(&backward_x, NULL, NULL), UFORM_OK);
    CHECK_STATUS(table->backward_w(&backward_w, NULL, NULL), UFORM_OK);
    CHECK_STATUS(table->backward_b(&backward_b, NULL, NULL), UFORM_OK);
    const float h = 1.0f / 64.0f;
    struct { const char *name; float *parameter; const float *gradient; int count; } cases[3] = {
        {"dX", x, dx, M * K}, {"dW", w, dw, N * K}, {"db", bias, db, N}};
    for (int c = 0; c < 3; ++c) {
        size_t failures = 0;
        for (int i = 0; i < cases[c].count; ++i) {
            float saved = cases[c].parameter[i];
            cases[c].parameter[i] = saved + h;
            double plus = fd_loss(table, M, N, K, x, w, bias, g, y);
            cases[c].parameter[i] = saved - h;
            double minus = fd_loss(table, M, N, K, x, w, bias, g, y);
            cases[c].parameter[i] = saved;
            double difference = (plus - minus) / (2.0 * h);
            double tol = 2e-4 * (1.0 + fabs(difference));
            if (!(fabs(cases[c].gradient[i] - difference) <= tol) && failures++ == 0) {
                fprintf(stderr, "%s %s[%d] against central differences:\n", class_name(table->cpu_class), cases[c].name, i);
                CHECK_NEAR(cases[c].gradient[i], difference, tol, 0.0);
            }
        }
        CHECK_MSG(failures == 0, "%s %s: %zu of %d gradients disagree with central differences",
                  class_name(table->cpu_class), cases[c].name, failures, cases[c].count);
    }
}

/* F32 → BF16 against an independent rounding: scale to 8 significant bits, rint (ties to even
 * in the default mode), scale back; ties, overflow to infinity, subnormals and NaN included. */
static void test_bf16_rounding(void) {
    size_t failures = 0;
    for (int i = 0; i < 200000; ++i) {
        uint32_t bits = (uint32_t)check_random_next(&seed_state);
        if (i % 4 == 1) bits = (bits & 0xFFFF0000u) | 0x8000u; /* an exact tie */
        if (i % 4 == 2) bits &= 0x807FFFFFu;                   /* subnormal */
        float value;
        memcpy(&value, &bits, sizeof value);
        float got = uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32(value));
        double want;
        if (isnan(value)) want = NAN;
        else if (value == 0.0f || isinf(value)) want = value;
        else {
            int exponent;
            frexp(value, &exponent);
            if (exponent < -125) exponent = -125; /* subnormals: BF16 keeps F32's absolute grid */
            double scaled = ldexp((double)value, 8 - exponent);
            want = ldexp(rint(scaled), exponent - 8);
            if (fabs(want) > 3.3895313892515355e38) want = copysign(INFINITY, value); /* beyond BF16's max */
        }
        int same = isnan(want) ? isnan(got) : (double)got == want;
        if (!same && failures++ == 0) {
            fprintf(stderr, "bf16 rounding of %.9g (0x%08x): got %.9g, expected %.9g\n", value, bits, got, want);
            CHECK(same);
        }
    }
    CHECK_MSG(failures == 0, "bf16 rounding: %zu of 200000 values wrong", failures);
}

static void test_tables(void) {
    for (int c = 0; c <= 18; ++c) {
        const uform__gemm_kernels_t *table = uform__gemm_kernels((uform_cpu_class_t)c);
        CHECK_MSG(table != NULL, "class %d has no table", c);
        if (!table) continue;
        CHECK_MSG(table->forward_f32 && table->forward_bf16 && table->backward_x_f32 && table->backward_x_bf16 &&
                      table->backward_w && table->backward_w_bf16 && table->backward_b && table->packed_size_f32 && table->packed_size_bf16 &&
                      table->pack_f32 && table->pack_bf16 && table->scratch_bytes && table->epilogue,
                  "class %d (%s) has a NULL slot", c, class_name((uform_cpu_class_t)c));
    }
    CHECK(uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_SAPPHIRE) == uform__gemm_kernels(UFORM_CPU_CLASS_AMD_GENOA));
    CHECK(uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_SIERRA) == uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_HASWELL));
    CHECK(uform__gemm_kernels(UFORM_CPU_CLASS_MONOVERSIONED) == uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL));
}

static void test_errors(void) {
    const uform__gemm_kernels_t *serial = uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL);
    float x[12] = {0}, w[12] = {0}, y[16] = {0};
    uform_outcome_t outcome = {0};
    uform__gemm_forward_t args = {.m = 4, .n = 4, .k = 3, .x = x, .ldx = 2, .w = w, .ldw = 3, .y = y, .ldy = 4};
    CHECK_STATUS(serial->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'x'");
    args.ldx = 3, args.w = NULL;
    CHECK_STATUS(serial->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'w'");
    args.w = w, args.x_dtype = UFORM__GEMM_BF16;
    CHECK_STATUS(serial->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "BF16 activations");
    /* A weight packed for one layout is refused by a class with another: packed by a SIMD class this
     * CPU runs (GENOA's, else HASWELL's: packing runs the class's own instructions). */
    uform_cpu_class_t packer = uform_cpu_class_supported(UFORM_CPU_CLASS_AMD_GENOA) ? UFORM_CPU_CLASS_AMD_GENOA
                                                                                    : UFORM_CPU_CLASS_INTEL_HASWELL;
    _Alignas(64) unsigned char memory[4096];
    uform__gemm_packed_t packed;
    CHECK_STATUS(serial->pack_f32(w, 3, UFORM__GEMM_F32, 4, 3, memory, 8, &packed, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "needs");
    if (uform_cpu_class_supported(packer)) {
        CHECK_STATUS(uform__gemm_kernels(packer)->pack_f32(w, 3, UFORM__GEMM_F32, 4, 3, memory, sizeof memory, &packed, &outcome),
                     UFORM_OK);
        args.x_dtype = UFORM__GEMM_F32, args.packed = &packed;
        CHECK_STATUS(serial->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(outcome.message, "layout");
        args.packed = NULL;
    }
    args.x_dtype = UFORM__GEMM_F32;
    /* k = 0 gives the bias (an empty sum). */
    float bias[4] = {1, -2, 3, -4};
    uform__gemm_forward_t empty = {.m = 4, .n = 4, .k = 0, .x = x, .ldx = 1, .w = w, .ldw = 1, .bias = bias, .y = y, .ldy = 4};
    CHECK_STATUS(serial->forward_f32(&empty, NULL, NULL), UFORM_OK);
    CHECK(y[5] == -2.0f && y[15] == -4.0f);
}

int main(int argc, char **argv) {
    seed_state = test_gemm_seed(argc, argv, 20261129u);
    test_tables();
    test_errors();
    test_bf16_rounding();
    test_pool_t pools[3];
    CHECK(test_pool_start(&pools[1], 2) == 0);
    CHECK(test_pool_start(&pools[2], 3) == 0);
    for (size_t c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        size_t before = check_failed_count;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
            const shape_t *shape = &shapes[s];
            for (int epilogue = 0; epilogue < 4; ++epilogue)
                test_forward(table, shape, UFORM__GEMM_F32, UFORM__GEMM_F32, 0, epilogue);
            test_forward(table, shape, UFORM__GEMM_F32, UFORM__GEMM_F32, 1, 1);
            for (int packed = 0; packed < 2; ++packed) {
                test_forward(table, shape, UFORM__GEMM_BF16, UFORM__GEMM_F32, packed, packed ? 3 : 0);
                test_forward(table, shape, UFORM__GEMM_BF16, UFORM__GEMM_BF16, packed, packed ? 1 : 2);
            }
            test_backward_x(table, shape, UFORM__GEMM_F32);
            test_backward_x(table, shape, UFORM__GEMM_BF16);
            for (int bf16_slot = 0; bf16_slot < 2; ++bf16_slot) {
                test_backward_w(table, shape, UFORM__GEMM_F32, bf16_slot);
                test_backward_w(table, shape, UFORM__GEMM_BF16, bf16_slot);
            }
            test_backward_b(table, shape);
            if (test_gemm_classes[c] != UFORM_CPU_CLASS_SERIAL) test_against_serial(table, shape);
        }
        test_gelu(table);
        test_finite_differences(table);
        test_determinism(table, pools);
        printf("%s: %s\n", class_name(test_gemm_classes[c]), check_failed_count == before ? "ok" : "FAILED");
    }
    test_pool_stop(&pools[1]);
    test_pool_stop(&pools[2]);
    return check_finish();
}
