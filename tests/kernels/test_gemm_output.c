/*
 * The forward product's BF16 output (`y_dtype` = BF16) on every class this CPU runs:
 *   - each BF16 result is the F32 result of the same product (bias, GELU none/exact/fast) rounded
 *     to nearest even, bit for bit (a subnormal one may be flushed to a zero of its sign, as
 *     GENOA's vcvtne2ps2bf16 does), and nothing beyond the N columns of a row is written; F32 and
 *     BF16 weights, F32 and BF16 activations, plain and packed weights, ragged tiles, several K
 *     slices (the call-owned F32 buffer) and column chunks, K = 0;
 *   - a chain as the trunk's MLP runs it, up (GELU, BF16 out) then down reading that BF16 in
 *     place, equals bit for bit the chain through F32: on GENOA (whose BF16 slot rounds F32
 *     activations to BF16 anyway) against the F32 hidden activations, elsewhere against the
 *     F32 chain fed the BF16-rounded hidden activations;
 *   - 1 and 2 threads give identical bits; `accumulate` with a BF16 Y and an unknown y_dtype
 *     are refused.
 * The F32 products themselves are tested against double precision in test_gemm and
 * test_gemm_gelu. Run with an optional seed argument (printed either way).
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

/* Ragged tiles, one and several K slices for every class (SERIAL's KC is 256, HASWELL's 512,
 * SKYLAKE's 768, GENOA's 1536), two column chunks (N = 1601), and K = 0. */
static const shape_t shapes[] = {{1, 1, 1},     {7, 13, 97},   {13, 97, 257}, {61, 200, 384},
                                 {9, 70, 1601}, {5, 1601, 19}, {12, 64, 3100}, {4, 33, 0}};

enum { SENTINEL = 0xABCD };

static void test_output(const uform__gemm_kernels_t *table, const shape_t *shape, uform__gemm_dtype_t w_dtype,
                        uform__gemm_dtype_t x_dtype, int packed, int with_bias, int gelu, const uform__parallel_t *parallel) {
    size_t m = shape->m, n = shape->n, k = shape->k, ldx = k + 2, ldw = k + 1, ldy = n + 5;
    void *x = test_gemm_random_matrix(&seed_state, m, k, ldx, x_dtype, (float)(3.0 / sqrt((double)k + 1.0)), NULL);
    void *w = test_gemm_random_matrix(&seed_state, n, k, ldw, w_dtype, 2.0f, NULL);
    float *bias = malloc((n + 1) * sizeof(float));
    for (size_t j = 0; j < n; ++j) bias[j] = check_random_float(&seed_state);
    float *y32 = malloc((m * ldy + 1) * sizeof(float));
    uform__bf16_t *y16 = malloc((m * ldy + 1) * sizeof(uform__bf16_t));
    for (size_t i = 0; i < m * ldy + 1; ++i) y16[i] = SENTINEL;
    uform__gemm_forward_t args = {.m = m, .n = n, .k = k, .x = x, .ldx = ldx, .x_dtype = x_dtype, .w = w, .ldw = ldw,
                                  .w_dtype = w_dtype, .bias = with_bias ? bias : NULL, .gelu = gelu, .y = y32, .ldy = ldy};
    uform__gemm_packed_t packed_weight;
    void *memory = NULL;
    uform_outcome_t outcome = {0};
    if (packed) memory = test_gemm_pack_weight(table, &args, &packed_weight, &outcome);
    uform__gemm_forward_fn forward = w_dtype == UFORM__GEMM_F32 ? table->forward_f32 : table->forward_bf16;
    CHECK_STATUS(forward(&args, NULL, &outcome), UFORM_OK);
    args.y = y16, args.y_dtype = UFORM__GEMM_BF16;
    CHECK_STATUS(forward(&args, parallel, &outcome), UFORM_OK);
    size_t differ = 0, overwritten = 0;
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < ldy; ++j) {
            uform__bf16_t got = y16[i * ldy + j];
            if (j >= n) {
                overwritten += got != SENTINEL;
                continue;
            }
            uform__bf16_t want = uform__gemm_bf16_from_f32(y32[i * ldy + j]);
            /* vcvtne2ps2bf16 (GENOA) flushes subnormal values to zero of the same sign. */
            if (fpclassify(y32[i * ldy + j]) == FP_SUBNORMAL && got == (want & 0x8000u)) continue;
            if (got != want && differ++ == 0)
                fprintf(stderr, "%s [%zu, %zu]: BF16 y 0x%04x (%.6g), rounded F32 y 0x%04x (%.9g)\n",
                        uform_cpu_class_name(table->cpu_class), i, j, got, uform__gemm_f32_from_bf16(got), want,
                        y32[i * ldy + j]);
        }
    CHECK_MSG(differ == 0 && overwritten == 0,
              "%s M=%zu N=%zu K=%zu W=%s X=%s %s bias=%d gelu=%d threads=%zu: %zu results differ from the rounded F32 "
              "ones, %zu padding elements written",
              uform_cpu_class_name(table->cpu_class), m, n, k, w_dtype ? "bf16" : "f32", x_dtype ? "bf16" : "f32",
              packed ? "packed" : "plain", with_bias, gelu, uform__parallel_threads(parallel), differ, overwritten);
    free(x), free(w), free(bias), free(y32), free(y16), free(memory);
}

/* up: H = GELU(X·W1ᵀ + b1), down: Z = H·W2ᵀ + b2, with H in BF16 read in place, against H in F32. */
static void test_chain(const uform__gemm_kernels_t *table) {
    size_t m = 50, d = 96, hidden = 384;
    float *x = test_gemm_random_matrix(&seed_state, m, d, d, UFORM__GEMM_F32, 0.3f, NULL);
    uform__bf16_t *w1 = test_gemm_random_matrix(&seed_state, hidden, d, d, UFORM__GEMM_BF16, 1.0f, NULL);
    uform__bf16_t *w2 = test_gemm_random_matrix(&seed_state, d, hidden, hidden, UFORM__GEMM_BF16, 0.2f, NULL);
    float *b1 = test_gemm_random_matrix(&seed_state, 1, hidden, hidden, UFORM__GEMM_F32, 0.5f, NULL);
    float *b2 = test_gemm_random_matrix(&seed_state, 1, d, d, UFORM__GEMM_F32, 0.5f, NULL);
    float *h32 = malloc(m * hidden * sizeof(float)), *z32 = malloc(m * d * sizeof(float)), *z16 = malloc(m * d * sizeof(float));
    uform__bf16_t *h16 = malloc(m * hidden * sizeof(uform__bf16_t));
    uform__gemm_forward_t up = {.m = m, .n = hidden, .k = d, .x = x, .ldx = d, .w = w1, .ldw = d, .w_dtype = UFORM__GEMM_BF16,
                                .bias = b1, .gelu = UFORM__GEMM_GELU_FAST, .y = h32, .ldy = hidden};
    CHECK_STATUS(table->forward_bf16(&up, NULL, NULL), UFORM_OK);
    up.y = h16, up.y_dtype = UFORM__GEMM_BF16;
    CHECK_STATUS(table->forward_bf16(&up, NULL, NULL), UFORM_OK);
    int genoa = table->cpu_class == UFORM_CPU_CLASS_AMD_GENOA;
    /* Classes that widen BF16 keep F32 activations: their reference is fed the rounded ones. */
    if (!genoa)
        for (size_t i = 0; i < m * hidden; ++i) h32[i] = uform__gemm_f32_from_bf16(h16[i]);
    uform__gemm_forward_t down = {.m = m, .n = d, .k = hidden, .x = h32, .ldx = hidden, .w = w2, .ldw = hidden,
                                  .w_dtype = UFORM__GEMM_BF16, .bias = b2, .y = z32, .ldy = d};
    CHECK_STATUS(table->forward_bf16(&down, NULL, NULL), UFORM_OK);
    down.x = h16, down.x_dtype = UFORM__GEMM_BF16, down.y = z16;
    CHECK_STATUS(table->forward_bf16(&down, NULL, NULL), UFORM_OK);
    CHECK_MSG(memcmp(z32, z16, m * d * sizeof(float)) == 0,
              "%s: the MLP through BF16 hidden activations differs from the one through F32 (%s)",
              uform_cpu_class_name(table->cpu_class), genoa ? "rounded while packing" : "rounded beforehand");
    free(x), free(w1), free(w2), free(b1), free(b2), free(h32), free(z32), free(z16), free(h16);
}

int main(int argc, char **argv) {
    seed_state = test_gemm_seed(argc, argv, 20261129u);
    test_pool_t pool;
    CHECK(test_pool_start(&pool, 2) == 0);
    for (size_t c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        size_t before = check_failed_count;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int variant = 0; variant < 4; ++variant) {
                uform__gemm_dtype_t w_dtype = variant & 1 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
                uform__gemm_dtype_t x_dtype = variant == 3 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
                int packed = variant >= 1 && s % 2 == 0;
                const uform__parallel_t *parallel = (s + variant) % 3 == 0 ? &pool.parallel : NULL;
                for (int gelu = 0; gelu <= 2; ++gelu) test_output(table, &shapes[s], w_dtype, x_dtype, packed, 1, gelu, parallel);
                test_output(table, &shapes[s], w_dtype, x_dtype, packed, 0, 0, parallel);
            }
        test_chain(table);
        printf("%s: %s\n", uform_cpu_class_name(test_gemm_classes[c]), check_failed_count == before ? "ok" : "FAILED");
    }
    test_pool_stop(&pool);
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1};
    uform__bf16_t y[4] = {0};
    uform__gemm_forward_t args = {.m = 2, .n = 2, .k = 2, .x = x, .ldx = 2, .w = w, .ldw = 2, .y = y, .ldy = 2,
                                  .y_dtype = UFORM__GEMM_BF16, .accumulate = 1};
    uform_outcome_t outcome = {0};
    const uform__gemm_kernels_t *genoa = uform__gemm_kernels(UFORM_CPU_CLASS_AMD_GENOA);
    CHECK_STATUS(genoa->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'accumulate' needs an F32 'y'");
    args.accumulate = 0, args.y_dtype = (uform__gemm_dtype_t)7;
    CHECK_STATUS(genoa->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "'y'");
    return check_finish();
}
