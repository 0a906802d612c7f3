/*
 * Where the GEMM kernels round, pinned bit for bit on every class this CPU runs.
 *
 * The operands are chosen so that every product and every partial sum is exact in F32: values are
 * small integers times a power of two, and the integers are small enough that no sum of the shapes
 * used needs more than 24 significant bits. The order in which a kernel adds is then irrelevant,
 * and the only inexact steps left are the roundings the kernel documents (gemm.h): an exact
 * reference in 64-bit integers that rounds the same operands to BF16 at the same places must equal
 * the kernel's output exactly, and one that rounds elsewhere must not. The activations carry more
 * significant bits than BF16 holds (12 for the forward and backward_x, 9 for backward_w_bf16), so
 * rounding them or not changes the result; the weights are BF16 with 4 significant bits.
 *
 *   - forward, BF16 weights × F32 activations: GENOA rounds the activations to BF16 (vdpbf16ps),
 *     the other classes multiply them unrounded; BF16 activations and F32 weights: never rounded;
 *     plain and packed weights, with bias (exact too), F32 and BF16 output (the exact sum rounded
 *     once, to nearest even);
 *   - backward_x, dY (F32) × W: GENOA rounds dY to BF16 when W is BF16, the others do not;
 *   - backward_w (F32 on every class): nothing is rounded; backward_w_bf16: GENOA rounds dY and
 *     X to BF16, the others do not; both accumulate into an exact dW;
 *   - backward_b: nothing is rounded.
 * Each case also checks the reference that rounds the other way differs (so the inputs see the
 * rounding). GELU epilogues are not exact and are tested against double in test_gemm_gelu.
 * Run with an optional seed argument (printed either way).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/round_bits.h"
#include "kernels/gemm.h"
#include "kernels/test_gemm_support.h"

static uint64_t seed_state;
static size_t inexact; /* operands or sums the construction failed to keep exact (must stay 0) */

/* An integer in [-limit, limit], never 0 (so that sums rarely cancel to a signed zero). */
static int64_t random_integer(int64_t limit) {
    int64_t value = (int64_t)(check_random_next(&seed_state) % (uint64_t)(2 * limit + 1)) - limit;
    return value ? value : 1;
}

/* Integers as the values the kernels read: a · 2^exponent. */
typedef struct operand_t {
    int64_t *integers;
    int exponent;
} operand_t;

static operand_t random_operand(size_t count, int64_t limit, int exponent) {
    operand_t operand = {malloc(count * sizeof(int64_t) + 8), exponent};
    for (size_t i = 0; i < count; ++i) operand.integers[i] = random_integer(limit);
    return operand;
}

/* F32 [rows, cols] with row stride ld (padding 0) of the operand, rounded to BF16 first when `bf16`. */
static float *as_f32(const operand_t *operand, size_t rows, size_t cols, size_t ld, int rounded) {
    float *values = calloc(rows * ld + 1, sizeof(float));
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            int64_t a = operand->integers[r * cols + c];
            values[r * ld + c] = (float)ldexp((double)(rounded ? test_round_bits(a, 8) : a), operand->exponent);
        }
    return values;
}

/* The same as BF16 (the integers must fit 8 significant bits, or `round_bits` them first). */
static uform__bf16_t *as_bf16(const operand_t *operand, size_t rows, size_t cols, size_t ld) {
    uform__bf16_t *values = calloc(rows * ld + 1, sizeof(uform__bf16_t));
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            float value = (float)ldexp((double)test_round_bits(operand->integers[r * cols + c], 8), operand->exponent);
            values[r * ld + c] = uform__gemm_bf16_from_f32(value);
            inexact += uform__gemm_f32_from_bf16(values[r * ld + c]) != value; /* exact in BF16 */
        }
    return values;
}

/* Exact Σ over p of a[i, p]·b[j, p] (+ initial) with a and b rounded to BF16 where asked; the
 * result is a multiple of 2^exponent, and fits F32 exactly (checked). */
static double exact_dot(const operand_t *a, size_t a_row, size_t a_step, const operand_t *b, size_t b_row,
                        size_t b_step, size_t length, int round_a, int round_b, int64_t initial, int initial_exponent) {
    int exponent = a->exponent + b->exponent;
    int64_t sum = initial * ((int64_t)1 << (initial_exponent - exponent)); /* initial_exponent ≥ exponent; a product, since shifting a negative is undefined */
    for (size_t p = 0; p < length; ++p) {
        int64_t x = a->integers[a_row + p * a_step], y = b->integers[b_row + p * b_step];
        sum += (round_a ? test_round_bits(x, 8) : x) * (round_b ? test_round_bits(y, 8) : y);
    }
    inexact += test_round_bits(sum, 24) != sum; /* every partial sum is then exact too: the bound below */
    return ldexp((double)sum, exponent);
}

typedef struct shape_t {
    size_t m, n, k;
} shape_t;

/* M, N, K with 1, primes, ragged tails and several kernel tiles; K and M stay small enough that
 * |Σ| < 2^24 quanta for the integer ranges below. */
static const shape_t shapes[] = {{1, 1, 1}, {1, 17, 31}, {7, 64, 64}, {13, 129, 97}, {64, 96, 255}, {97, 33, 400},
                                 {6, 130, 511}};

/* Compares got (row stride ld) with the reference rounding where the kernel documents it and, for
 * the rounding cases, checks that the other reference differs somewhere. */
static void compare(const char *what, const float *got, size_t ld, const double *documented, const double *other,
                    size_t rows, size_t cols) {
    size_t mismatches = 0, first = SIZE_MAX, differs = 0;
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            double value = got[r * ld + c], want = documented[r * cols + c];
            if (!(value == want)) mismatches += 1, first = first == SIZE_MAX ? r * cols + c : first;
            if (other && other[r * cols + c] != want) differs += 1;
        }
    if (mismatches)
        fprintf(stderr, "%s: element %zu is %.9g, the documented rounding gives %.9g\n", what, first,
                (double)got[(first / cols) * ld + first % cols], documented[first]);
    CHECK_MSG(mismatches == 0, "%s: %zu of %zu elements differ from the exact reference", what, mismatches, rows * cols);
    CHECK_MSG(inexact == 0, "%s: %zu operands or sums were not exact (the test's construction)", what, inexact);
    inexact = 0;
    if (other) CHECK_MSG(differs > 0, "%s: the inputs do not tell rounding from not rounding", what);
}

static void test_forward(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype,
                         uform__gemm_dtype_t x_dtype, int packed, int bias_on, uform__gemm_dtype_t y_dtype) {
    size_t m = shape->m, n = shape->n, k = shape->k, ldx = k + 1, ldw = k + 3, ldy = n + 2;
    /* x: 12 significant bits (2^-11 quanta), w: 4 (2^-4): products < 2^15 quanta of 2^-15, K ≤ 511. */
    operand_t x = random_operand(m * k, 2047, -11), w = random_operand(n * k, 15, -4), bias = random_operand(n, 4095, -15);
    void *x_memory = x_dtype == UFORM__GEMM_F32 ? (void *)as_f32(&x, m, k, ldx, 0) : (void *)as_bf16(&x, m, k, ldx);
    void *w_memory = w_dtype == UFORM__GEMM_F32 ? (void *)as_f32(&w, n, k, ldw, 0) : (void *)as_bf16(&w, n, k, ldw);
    float *bias_values = as_f32(&bias, 1, n, n, 0);
    /* gemm.h: only GENOA's BF16 slot rounds F32 activations; BF16 ones already are. */
    int rounds = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_dtype == UFORM__GEMM_BF16 && x_dtype == UFORM__GEMM_F32;
    int bf16_x = x_dtype == UFORM__GEMM_BF16;
    double *documented = malloc(m * n * sizeof(double)), *other = malloc(m * n * sizeof(double));
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            int64_t b = bias_on ? bias.integers[j] : 0;
            documented[i * n + j] = exact_dot(&x, i * k, 1, &w, j * k, 1, k, rounds || bf16_x, 0, b, -15);
            other[i * n + j] = exact_dot(&x, i * k, 1, &w, j * k, 1, k, !rounds && !bf16_x, 0, b, -15);
            if (y_dtype == UFORM__GEMM_BF16) {
                documented[i * n + j] = uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32((float)documented[i * n + j]));
                other[i * n + j] = uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32((float)other[i * n + j]));
            }
        }
    void *y = calloc(m * ldy + 1, y_dtype == UFORM__GEMM_F32 ? sizeof(float) : sizeof(uform__bf16_t));
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x_memory, .ldx = ldx, .x_dtype = x_dtype, .w = w_memory,
                                  .ldw = ldw, .w_dtype = w_dtype, .bias = bias_on ? bias_values : NULL, .y = y,
                                  .ldy = ldy, .y_dtype = y_dtype};
    uform__gemm_packed_t packed_weight;
    void *packed_memory = NULL;
    uform_outcome_t outcome = {0};
    if (packed) packed_memory = test_gemm_pack_weight(table, &args, &packed_weight, &outcome), args.w = NULL;
    CHECK_STATUS((w_dtype == UFORM__GEMM_F32 ? table->forward_f32 : table->forward_bf16)(&args, NULL, &outcome), UFORM_OK);
    float *got = (float *)y;
    if (y_dtype == UFORM__GEMM_BF16) {
        got = malloc((m * ldy + 1) * sizeof(float));
        for (size_t i = 0; i < m * ldy; ++i) got[i] = uform__gemm_f32_from_bf16(((uform__bf16_t *)y)[i]);
    }
    char what[200];
    snprintf(what, sizeof what, "%s forward W=%s X=%s Y=%s %s bias=%d [%zu, %zu, %zu]",
             uform_cpu_class_name(table->cpu_class), w_dtype ? "bf16" : "f32", x_dtype ? "bf16" : "f32",
             y_dtype ? "bf16" : "f32", packed ? "packed" : "plain", bias_on, m, n, k);
    /* BF16 activations leave nothing to round, so no other reference tells anything there; a
     * BF16 output may hide the difference on small shapes. */
    compare(what, got, ldy, documented, bf16_x || y_dtype == UFORM__GEMM_BF16 || k < 31 ? NULL : other, m, n);
    if (got != (float *)y) free(got);
    free(x.integers), free(w.integers), free(bias.integers), free(x_memory), free(w_memory), free(bias_values);
    free(documented), free(other), free(y), free(packed_memory);
}

static void test_backward_x(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype) {
    size_t m = shape->m, n = shape->n, k = shape->k, lddy = n + 1, ldw = k + 2, lddx = k + 3;
    if (n > 511) return;
    operand_t dy = random_operand(m * n, 2047, -11), w = random_operand(n * k, 15, -4);
    float *dy_values = as_f32(&dy, m, n, lddy, 0);
    void *w_memory = w_dtype == UFORM__GEMM_F32 ? (void *)as_f32(&w, n, k, ldw, 0) : (void *)as_bf16(&w, n, k, ldw);
    int rounds = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA && w_dtype == UFORM__GEMM_BF16;
    double *documented = malloc(m * k * sizeof(double)), *other = malloc(m * k * sizeof(double));
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < k; ++j) {
            documented[i * k + j] = exact_dot(&dy, i * n, 1, &w, j, k, n, rounds, 0, 0, -15);
            other[i * k + j] = exact_dot(&dy, i * n, 1, &w, j, k, n, !rounds, 0, 0, -15);
        }
    float *dx = calloc(m * lddx + 1, sizeof(float));
    uform__gemm_backward_x_t args = {.m = m, .n = n, .k = k, .dy = dy_values, .lddy = lddy, .w = w_memory, .ldw = ldw,
                                     .w_dtype = w_dtype, .dx = dx, .lddx = lddx};
    CHECK_STATUS((w_dtype == UFORM__GEMM_F32 ? table->backward_x_f32 : table->backward_x_bf16)(&args, NULL, NULL), UFORM_OK);
    char what[200];
    snprintf(what, sizeof what, "%s backward_x W=%s [%zu, %zu, %zu]", uform_cpu_class_name(table->cpu_class),
             w_dtype ? "bf16" : "f32", m, n, k);
    compare(what, dx, lddx, documented, n < 31 ? NULL : other, m, k);
    free(dy.integers), free(w.integers), free(dy_values), free(w_memory), free(documented), free(other), free(dx);
}

/* dW += dYᵀ·X from an exact initial dW; `bf16_slot`: backward_w_bf16. */
static void test_backward_w(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t x_dtype,
                            int bf16_slot) {
    size_t m = shape->m, n = shape->n, k = shape->k, lddy = n + 2, ldx = k + 1, lddw = k + 4;
    if (m > 63) return; /* 9 + 9 significant bits a product: 63 of them and dW below 2^24 */
    operand_t dy = random_operand(m * n, 511, -9), x = random_operand(m * k, 511, -9);
    operand_t initial = random_operand(n * k, 1 << 16, -18);
    float *dy_values = as_f32(&dy, m, n, lddy, 0);
    void *x_memory = x_dtype == UFORM__GEMM_F32 ? (void *)as_f32(&x, m, k, ldx, 0) : (void *)as_bf16(&x, m, k, ldx);
    int bf16_x = x_dtype == UFORM__GEMM_BF16;
    int rounds = bf16_slot && table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA;
    double *documented = malloc(n * k * sizeof(double)), *other = malloc(n * k * sizeof(double));
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < k; ++j) {
            int64_t start = initial.integers[i * k + j];
            documented[i * k + j] = exact_dot(&dy, i, n, &x, j, k, m, rounds, rounds || bf16_x, start, -18);
            other[i * k + j] = exact_dot(&dy, i, n, &x, j, k, m, !rounds, !rounds || bf16_x, start, -18);
        }
    float *dw = as_f32(&initial, n, k, lddw, 0);
    uform__gemm_backward_w_t args = {.m = m, .n = n, .k = k, .dy = dy_values, .lddy = lddy, .x = x_memory, .ldx = ldx,
                                     .x_dtype = x_dtype, .dw = dw, .lddw = lddw};
    CHECK_STATUS((bf16_slot ? table->backward_w_bf16 : table->backward_w)(&args, NULL, NULL), UFORM_OK);
    char what[200];
    snprintf(what, sizeof what, "%s backward_w%s X=%s [%zu, %zu, %zu]", uform_cpu_class_name(table->cpu_class),
             bf16_slot ? "_bf16" : "", x_dtype ? "bf16" : "f32", m, n, k);
    compare(what, dw, lddw, documented, m < 7 ? NULL : other, n, k);
    free(dy.integers), free(x.integers), free(initial.integers), free(dy_values), free(x_memory);
    free(documented), free(other), free(dw);
}

static void test_backward_b(const uform__gemm_kernels_t *table, const shape_t *shape) {
    size_t m = shape->m, n = shape->n, lddy = n + 5;
    operand_t dy = random_operand(m * n, 2047, -11), initial = random_operand(n, 1 << 16, -11);
    float *dy_values = as_f32(&dy, m, n, lddy, 0), *db = as_f32(&initial, 1, n, n, 0);
    double *documented = malloc(n * sizeof(double));
    for (size_t j = 0; j < n; ++j) {
        int64_t sum = initial.integers[j];
        for (size_t i = 0; i < m; ++i) sum += dy.integers[i * n + j];
        documented[j] = ldexp((double)sum, -11);
    }
    uform__gemm_backward_b_t args = {.m = m, .n = n, .dy = dy_values, .lddy = lddy, .db = db};
    CHECK_STATUS(table->backward_b(&args, NULL, NULL), UFORM_OK);
    char what[160];
    snprintf(what, sizeof what, "%s backward_b [%zu, %zu]", uform_cpu_class_name(table->cpu_class), m, n);
    compare(what, db, n, documented, NULL, 1, n);
    free(dy.integers), free(initial.integers), free(dy_values), free(db), free(documented);
}

/* The integer rounding itself, against the library's F32 → BF16 on the same values. */
static void test_round_bits_itself(void) {
    size_t wrong = 0;
    for (int64_t a = -70000; a <= 70000; ++a) {
        float value = (float)a;
        if ((double)uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32(value)) != (double)test_round_bits(a, 8)) wrong += 1;
    }
    CHECK_MSG(wrong == 0, "test_round_bits(a, 8) differs from BF16 rounding for %zu integers", wrong);
}

int main(int argc, char **argv) {
    seed_state = test_gemm_seed(argc, argv, 20261201u);
    test_round_bits_itself();
    for (size_t c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        size_t before = check_failed_count;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
            const shape_t *shape = &shapes[s];
            for (int packed = 0; packed < 2; ++packed)
                for (int bias = 0; bias < 2; ++bias) {
                    test_forward(table, shape, UFORM__GEMM_F32, UFORM__GEMM_F32, packed, bias, UFORM__GEMM_F32);
                    test_forward(table, shape, UFORM__GEMM_BF16, UFORM__GEMM_F32, packed, bias, UFORM__GEMM_F32);
                    test_forward(table, shape, UFORM__GEMM_BF16, UFORM__GEMM_BF16, packed, bias, UFORM__GEMM_F32);
                    test_forward(table, shape, UFORM__GEMM_BF16, UFORM__GEMM_F32, packed, bias, UFORM__GEMM_BF16);
                }
            test_backward_x(table, shape, UFORM__GEMM_F32);
            test_backward_x(table, shape, UFORM__GEMM_BF16);
            for (int bf16_slot = 0; bf16_slot < 2; ++bf16_slot) {
                test_backward_w(table, shape, UFORM__GEMM_F32, bf16_slot);
                test_backward_w(table, shape, UFORM__GEMM_BF16, bf16_slot);
            }
            test_backward_b(table, shape);
        }
        printf("%s: %s\n", uform_cpu_class_name(test_gemm_classes[c]), check_failed_count == before ? "ok" : "FAILED");
    }
    return check_finish();
}
