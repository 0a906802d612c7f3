/*
 * The class packing hooks (uform__gemm_micro_t's pack_transposed, pack_pairs and pack_pairs16) against the
 * driver's portable loops, bit for bit, and backward_w's folded bias gradient against backward_b:
 *   - every micro-kernel with hooks that this CPU runs (HASWELL's, SKYLAKE's — which ICELAKE and
 *     GENOA's F32 products share — and GENOA's BF16) computes backward_w (F32 and BF16 X) and
 *     backward_x with F32 W once as it is and once as a copy with the hooks removed: the results
 *     must be the same bits (the tile and the loops are the same, only the packing differs);
 *   - shapes ragged against every tile, block and slice (M, N, K of 1, primes, odd token counts
 *     so the last BF16 pair is half empty, more rows than MC, more tokens than KC, more columns
 *     than NC), dense and strided operands whose padding holds NaN, dY and X sprinkled with ±0 and
 *     F32 subnormals (which GENOA's hook rounds to ±0 and the portable loop to BF16 subnormals,
 *     both read as ±0 by vdpbf16ps), 1, 2 and 3 threads;
 *   - `db` of backward_w (every class's table, F32 and BF16 slots) has backward_b's bits, and
 *     asking for it leaves dW's bits unchanged; an empty X (K = 0) still sums db.
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
    size_t m, n, k; /* tokens, outputs (dY's columns), inputs (X's columns) */
} shape_t;

/* Tokens are backward_w's K: odd counts leave the last BF16 pair half empty; 1601 and 3001 span
 * two to four K slices (KC 512..1536, near-equal, some odd); N = 170 and 200 exceed MC (144..168);
 * K = 1601 exceeds NC (1536), so db comes from the first column chunk only. */
static const shape_t shapes[] = {
    {1, 1, 1},    {1, 7, 5},      {2, 17, 3},    {3, 16, 64},    {31, 16, 64},  {33, 17, 65},  {97, 170, 13},
    {300, 45, 130}, {1601, 20, 33}, {3001, 37, 70}, {64, 200, 96}, {7, 3, 1601}, {15, 1, 9},
};

/* A [rows, cols] F32 matrix with row stride ld: padding NaN; values uniform in [−1, 1) with every
 * 13th a subnormal (±1e-40 or ±3e-39) and every 29th ±0. */
static float *random_operand(size_t rows, size_t cols, size_t ld) {
    float *values = malloc((rows * ld + 1) * sizeof(float));
    for (size_t i = 0; i < rows * ld + 1; ++i) values[i] = NAN;
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            float value = check_random_float(&seed_state);
            uint64_t pick = check_random_next(&seed_state) % 29;
            if (pick == 0) value = value < 0 ? -0.0f : 0.0f;
            else if (pick < 3) value = (value < 0 ? -1.0f : 1.0f) * (pick == 1 ? 1e-40f : 3e-39f);
            values[r * ld + c] = value;
        }
    return values;
}

/* The same values as BF16 (nearest even), padding NaN. */
static uform__bf16_t *to_bf16(const float *values, size_t rows, size_t ld) {
    uform__bf16_t *out = malloc((rows * ld + 1) * sizeof(uform__bf16_t));
    for (size_t i = 0; i < rows * ld + 1; ++i) out[i] = uform__gemm_bf16_from_f32(values[i]);
    return out;
}

static float *copy_floats(const float *values, size_t count) {
    float *out = malloc((count ? count : 1) * sizeof(float));
    if (count) memcpy(out, values, count * sizeof(float));
    return out;
}

/* got and want [rows, cols] (row stride ld) bit for bit; prints the first difference. */
static void check_bits(const char *what, const float *got, const float *want, size_t rows, size_t cols, size_t ld) {
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            uint32_t a, b;
            memcpy(&a, got + r * ld + c, sizeof a);
            memcpy(&b, want + r * ld + c, sizeof b);
            if (a != b) {
                CHECK_MSG(a == b, "%s: element [%zu, %zu] of [%zu, %zu] is %.9g (0x%08x), expected %.9g (0x%08x)", what, r,
                          c, rows, cols, got[r * ld + c], a, want[r * ld + c], b);
                return;
            }
        }
    CHECK(1);
}

typedef struct micro_case_t {
    uform_cpu_class_t cpu_class; /* the class whose instructions the micro-kernel uses */
    const uform__gemm_micro_t *micro;
    const char *name;
} micro_case_t;

/* One micro-kernel on one shape and layout: the hooked and the portable packing give the same bits
 * for backward_w (F32 and BF16 X, with and without db) and, on BF16 panels, backward_x with F32 W;
 * 1, 2 and 3 threads give the 1-thread bits. */
static void test_micro_shape(const micro_case_t *test, const shape_t *shape, int strided, test_pool_t pools[2]) {
    const uform__gemm_micro_t *micro = test->micro;
    uform__gemm_micro_t portable = *micro;
    portable.pack_transposed = NULL, portable.pack_pairs = NULL, portable.pack_pairs16 = NULL;
    size_t m = shape->m, n = shape->n, k = shape->k;
    size_t lddy = n + (strided ? 3 : 0), ldx = k + (strided ? 5 : 0), lddw = k + (strided ? 2 : 0);
    size_t ldw = k + (strided ? 1 : 0), lddx = k + (strided ? 4 : 0);
    float *dy = random_operand(m, n, lddy), *x = random_operand(m, k, ldx), *w = random_operand(n, k, ldw);
    /* dY's column 0 all subnormal and X's column 0 near 1e30: dW[0, 0] is then a sum of products
     * of normal size (≈1e-10) unless the product reads the subnormals as 0, so the BF16 hook
     * (which flushes them while rounding) and the portable loop (which keeps BF16 subnormals)
     * agree only if vdpbf16ps reads BF16 subnormals as ±0 — the premise of pack_a's comment. */
    for (size_t p = 0; p < m; ++p) {
        dy[p * lddy] = (check_random_float(&seed_state) < 0 ? -1.0f : 1.0f) * (p % 2 ? 1e-40f : 3e-39f);
        x[p * ldx] = 1e30f * check_random_float(&seed_state);
    }
    uform__bf16_t *x16 = to_bf16(x, m, ldx);
    float *dw_initial = random_operand(n, k, lddw), *db_initial = random_operand(1, n, n);
    /* backward_b's db: the reference for every folded db. */
    float *db_reference = copy_floats(db_initial, n);
    uform__gemm_backward_b_t backward_b = {.m = m, .n = n, .dy = dy, .lddy = lddy, .db = db_reference};
    CHECK_STATUS(uform__gemm_backward_b_serial(&backward_b, NULL, NULL), UFORM_OK);
    char what[160];
    for (int x_bf16 = 0; x_bf16 < 2; ++x_bf16) {
        float *dw_want = copy_floats(dw_initial, n * lddw);
        uform__gemm_backward_w_t args = {.m = m, .n = n, .k = k, .dy = dy, .lddy = lddy,
                                         .x = x_bf16 ? (const void *)x16 : (const void *)x, .ldx = ldx,
                                         .x_dtype = x_bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .dw = dw_want,
                                         .lddw = lddw};
        CHECK_STATUS(uform__gemm_backward_w_drive(&portable, &args, NULL, NULL), UFORM_OK);
        for (int threads = 1; threads <= 3; ++threads) {
            const uform__parallel_t *parallel = threads == 1 ? NULL : &pools[threads - 2].parallel;
            for (int with_db = 0; with_db < 2; ++with_db)
                for (int hooked = 0; hooked < 2; ++hooked) {
                    if (!hooked && !with_db) continue; /* dw_want itself */
                    float *dw = copy_floats(dw_initial, n * lddw), *db = copy_floats(db_initial, n);
                    args.dw = dw, args.db = with_db ? db : NULL;
                    CHECK_STATUS(uform__gemm_backward_w_drive(hooked ? micro : &portable, &args, parallel, NULL), UFORM_OK);
                    snprintf(what, sizeof what, "%s backward_w X=%s M=%zu N=%zu K=%zu%s, %d thread%s, %s%s", test->name,
                             x_bf16 ? "bf16" : "f32", m, n, k, strided ? " strided" : "", threads, threads > 1 ? "s" : "",
                             hooked ? "hooks" : "portable", with_db ? ", db" : "");
                    check_bits(what, dw, dw_want, n, k, lddw);
                    if (with_db) {
                        char db_what[200];
                        snprintf(db_what, sizeof db_what, "%s: db against backward_b", what);
                        check_bits(db_what, db, db_reference, 1, n, n);
                    }
                    free(dw), free(db);
                }
        }
        free(dw_want);
    }
    if (micro->panel_dtype == UFORM__GEMM_BF16) {
        /* backward_x with F32 W: W's rows become K-pair panels through pack_pairs. Here dY [m, n]
         * and W [n, k] as the product's shapes; dX [m, k]. */
        float *dx_want = malloc((m * lddx + 1) * sizeof(float)), *dx = malloc((m * lddx + 1) * sizeof(float));
        uform__gemm_backward_x_t args = {.m = m, .n = n, .k = k, .dy = dy, .lddy = lddy, .w = w, .ldw = ldw,
                                         .w_dtype = UFORM__GEMM_F32, .dx = dx_want, .lddx = lddx};
        CHECK_STATUS(uform__gemm_backward_x_drive(&portable, &args, NULL, NULL), UFORM_OK);
        for (int threads = 1; threads <= 3; ++threads) {
            args.dx = dx;
            CHECK_STATUS(uform__gemm_backward_x_drive(micro, &args, threads == 1 ? NULL : &pools[threads - 2].parallel, NULL),
                         UFORM_OK);
            snprintf(what, sizeof what, "%s backward_x W=f32 M=%zu N=%zu K=%zu%s, %d thread%s, hooks", test->name, m, n, k,
                     strided ? " strided" : "", threads, threads > 1 ? "s" : "");
            check_bits(what, dx, dx_want, m, k, lddx);
        }
        free(dx_want), free(dx);
    }
    free(dy), free(x), free(w), free(x16), free(dw_initial), free(db_initial), free(db_reference);
}

/* Every class's table: backward_w and backward_w_bf16 with db give backward_b's db and the dW of
 * the call without db; K = 0 (no X columns) still sums db and leaves dW alone; M = 0 adds nothing. */
static void test_table_db(const uform__gemm_kernels_t *table, test_pool_t pools[2]) {
    static const shape_t table_shapes[] = {{300, 45, 130}, {33, 17, 65}, {1601, 20, 33}, {5, 9, 0}, {0, 9, 5}};
    for (size_t s = 0; s < sizeof table_shapes / sizeof table_shapes[0]; ++s) {
        size_t m = table_shapes[s].m, n = table_shapes[s].n, k = table_shapes[s].k;
        size_t lddy = n + 1, ldx = k + 2, lddw = k + 3;
        float *dy = random_operand(m, n, lddy), *x = random_operand(m, k, ldx);
        float *dw_initial = random_operand(n, k, lddw), *db_initial = random_operand(1, n, n);
        float *db_reference = copy_floats(db_initial, n);
        uform__gemm_backward_b_t backward_b = {.m = m, .n = n, .dy = dy, .lddy = lddy, .db = db_reference};
        CHECK_STATUS(table->backward_b(&backward_b, NULL, NULL), UFORM_OK);
        for (int bf16_slot = 0; bf16_slot < 2; ++bf16_slot)
            for (int threads = 1; threads <= 3; ++threads) {
                const uform__parallel_t *parallel = threads == 1 ? NULL : &pools[threads - 2].parallel;
                uform__gemm_backward_w_fn backward_w = bf16_slot ? table->backward_w_bf16 : table->backward_w;
                float *dw_want = copy_floats(dw_initial, n * lddw), *dw = copy_floats(dw_initial, n * lddw);
                float *db = copy_floats(db_initial, n);
                uform__gemm_backward_w_t args = {.m = m, .n = n, .k = k, .dy = dy, .lddy = lddy, .x = x, .ldx = ldx,
                                                 .x_dtype = UFORM__GEMM_F32, .dw = dw_want, .lddw = lddw};
                CHECK_STATUS(backward_w(&args, parallel, NULL), UFORM_OK);
                args.dw = dw, args.db = db;
                CHECK_STATUS(backward_w(&args, parallel, NULL), UFORM_OK);
                char what[160];
                snprintf(what, sizeof what, "%s backward_w%s M=%zu N=%zu K=%zu, %d thread%s", uform_cpu_class_name(table->cpu_class),
                         bf16_slot ? "_bf16" : "", m, n, k, threads, threads > 1 ? "s" : "");
                check_bits(what, dw, dw_want, n, k, lddw);
                strncat(what, ": db against backward_b", sizeof what - strlen(what) - 1);
                check_bits(what, db, db_reference, 1, n, n);
                free(dw_want), free(dw), free(db);
            }
        free(dy), free(x), free(dw_initial), free(db_initial), free(db_reference);
    }
}

int main(int argc, char **argv) {
    seed_state = test_gemm_seed(argc, argv, 20261201);
    test_pool_t pools[2];
    CHECK(test_pool_start(&pools[0], 2) == 0);
    CHECK(test_pool_start(&pools[1], 3) == 0);
    static const micro_case_t micros[] = {
        {UFORM_CPU_CLASS_INTEL_HASWELL, &uform__gemm_micro_f32_haswell, "haswell f32"},
        {UFORM_CPU_CLASS_INTEL_SKYLAKE, &uform__gemm_micro_f32_skylake, "skylake f32 (also icelake, genoa f32)"},
        {UFORM_CPU_CLASS_AMD_GENOA, &uform__gemm_micro_bf16_genoa, "genoa bf16"},
    };
    for (size_t i = 0; i < sizeof micros / sizeof micros[0]; ++i) {
        if (!test_gemm_table(micros[i].cpu_class)) continue;
        CHECK_MSG(micros[i].micro->pack_transposed != NULL, "%s has no pack_transposed", micros[i].name);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int strided = 0; strided < 2; ++strided) test_micro_shape(&micros[i], &shapes[s], strided, pools);
        printf("%s: hooks against the portable packing done\n", micros[i].name);
    }
    for (int c = 0; c < test_gemm_class_count; ++c) {
        const uform__gemm_kernels_t *table = test_gemm_table(test_gemm_classes[c]);
        if (!table) continue;
        test_table_db(table, pools);
        printf("%s: db done\n", uform_cpu_class_name(test_gemm_classes[c]));
    }
    test_pool_stop(&pools[0]);
    test_pool_stop(&pools[1]);
    return check_finish();
}
