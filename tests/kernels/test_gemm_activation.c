/*
 * test_gemm_activation [seed]: the MLP activations (gemm.h's uform__gemm_gelu_t) where
 * test_gemm_gelu.c does not reach them (it holds every activation of every class to its bound
 * through the epilogue, and the folded tiles to the separate pass, bit for bit):
 *   - nn's element-wise slot (activation_forward) of every class, every kind, out of place and in
 *     place, 1 and 2 threads: bit for bit what the class's GEMM epilogue gives the same values
 *     (the slot's contract); NONE copies; an unknown kind writes NaN;
 *   - one product per class and activation against SERIAL's (the portable reference, itself held
 *     to double precision by test_gemm_gelu): F32 and BF16 weights, operands that are BF16 values
 *     (so GENOA's rounding of activations changes nothing), bias; tolerance = the two products'
 *     F32 summation error through the activation's slope (< 1.13) + both activations' bounds;
 *   - the same products with a BF16 Y: bit for bit the class's own F32 Y rounded to nearest even;
 *   - the int8 products with each activation: bit for bit the same product without it, then the
 *     class's F32 epilogue (gemm_i8.h: "GELU follows each class's float kernels"), and within the
 *     activation's bound of SERIAL's int8 product (whose int32 sums and dequantization are the
 *     same bits on every class).
 * Prints "exercised: CLASS" for each class run (scripts/test-avx2.sh reads it).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"
#include "kernels/nn.h"
#include "kernels/test_gemm_pool.h"

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                            UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                            UFORM_CPU_CLASS_AMD_GENOA};
enum { class_count = sizeof classes / sizeof classes[0] };

static uint64_t seed_state;

/* A value the BF16 round trip keeps: scale·random rounded to BF16 and widened back. */
static float random_bf16_value(float scale) {
    return uform__gemm_f32_from_bf16(uform__gemm_bf16_from_f32(scale * check_random_float(&seed_state)));
}

/* The bound test_gemm_gelu asserts per activation (gemm.h): relative 6e-7 (EXACT), 3e-7 (QUICK,
 * TANH), absolute 2e-7·max(1, |x|) (FAST). */
static double activation_bound(int gelu, double x, double y) {
    if (gelu == UFORM__GEMM_GELU_FAST) return 2e-7 * fmax(1.0, fabs(x));
    if (gelu == UFORM__GEMM_GELU_NONE) return 0.0;
    return (gelu == UFORM__GEMM_GELU_EXACT ? 6e-7 : 3e-7) * fabs(y) + 3e-45;
}

static size_t bits_differ(const float *a, const float *b, size_t n, size_t *first) {
    size_t count = 0;
    for (size_t i = 0; i < n; ++i)
        if (memcmp(a + i, b + i, sizeof(float)) && count++ == 0) *first = i;
    return count;
}

/* The slot against the class's epilogue: values over [−24, 24] (where every form bends or
 * saturates) and 4,322 bit patterns spread over all 2^32 (huge, tiny, subnormal, infinite, NaN), a
 * ragged count. */
static void test_slot(uform_cpu_class_t cpu_class, test_pool_t *pool) {
    const uform__nn_kernels_t *nn = uform__nn_kernels(cpu_class);
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    size_t grid = 20011, n = grid + 4322;
    float *x = malloc(n * sizeof(float)), *expected = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    size_t count = 0;
    for (size_t i = 0; i < grid; ++i) x[count++] = 24.0f * check_random_float(&seed_state);
    for (uint32_t bits = 0; count < n; bits += 993747u) memcpy(x + count++, &bits, sizeof bits);
    const char *name = uform_cpu_class_name(cpu_class);
    for (int kind = 0; kind <= UFORM__GEMM_GELU_LAST; ++kind) {
        memcpy(expected, x, n * sizeof(float));
        if (kind) gemm->epilogue(expected, n, 1, n, NULL, kind);
        for (int threads = 1; threads <= 2; ++threads)
            for (int in_place = 0; in_place <= 1; ++in_place) {
                memset(y, 0xFF, n * sizeof(float));
                if (in_place) memcpy(y, x, n * sizeof(float));
                nn->activation_forward(kind, n, in_place ? y : x, y, threads > 1 ? &pool->parallel : NULL);
                size_t first = 0, differ = bits_differ(y, expected, n, &first);
                CHECK_MSG(differ == 0,
                          "%s activation_forward kind %d, %d thread(s), %s: %zu values differ from the epilogue's; "
                          "first [%zu]: x %.9g, slot %.9g, epilogue %.9g",
                          name, kind, threads, in_place ? "in place" : "out of place", differ, first, x[first],
                          y[first], expected[first]);
            }
    }
    for (int kind = -1; kind <= UFORM__GEMM_GELU_LAST + 1; kind += UFORM__GEMM_GELU_LAST + 2) {
        memset(y, 0, n * sizeof(float));
        nn->activation_forward(kind, n, x, y, NULL);
        size_t finite = 0;
        for (size_t i = 0; i < n; ++i) finite += !isnan(y[i]);
        CHECK_MSG(finite == 0, "%s activation_forward kind %d (unknown): %zu values are not NaN", name, kind, finite);
    }
    free(x), free(expected), free(y);
}

typedef struct shape_t {
    size_t m, n, k;
} shape_t;

/* Ragged tiles; K = 1601 spans two of GENOA's K slices (and the BF16 Y's F32 buffer). */
static const shape_t shapes[] = {{37, 150, 300}, {7, 70, 1601}, {1, 3, 5}};

/* A product's operands, BF16 values in F32 and BF16 form, and the bias. */
typedef struct product_t {
    shape_t shape;
    float *x, *w, *bias;
    uform__bf16_t *w16;
    double *pre, *size; /* [M, N]: the pre-activations X·Wᵀ + bias in double, and Σ|terms| */
    float *serial[UFORM__GEMM_GELU_LAST + 1][2]; /* SERIAL's Y per activation, F32 and BF16 weights */
} product_t;

static void product_init(product_t *p, const shape_t *shape) {
    memset(p, 0, sizeof *p);
    p->shape = *shape;
    size_t m = shape->m, n = shape->n, k = shape->k;
    p->x = malloc(m * k * sizeof(float)), p->w = malloc(n * k * sizeof(float));
    p->w16 = malloc(n * k * sizeof(uform__bf16_t)), p->bias = malloc(n * sizeof(float));
    /* Pre-activations spread over ≈[−6, 6]. */
    float x_scale = (float)(3.0 / sqrt((double)k));
    for (size_t i = 0; i < m * k; ++i) p->x[i] = random_bf16_value(x_scale);
    for (size_t i = 0; i < n * k; ++i) p->w[i] = random_bf16_value(2.0f), p->w16[i] = uform__gemm_bf16_from_f32(p->w[i]);
    for (size_t j = 0; j < n; ++j) p->bias[j] = 2.0f * check_random_float(&seed_state);
    p->pre = malloc(m * n * sizeof(double)), p->size = malloc(m * n * sizeof(double));
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            double pre = p->bias[j], size = fabs(p->bias[j]);
            for (size_t t = 0; t < k; ++t) {
                double term = (double)p->x[i * k + t] * p->w[j * k + t];
                pre += term, size += fabs(term);
            }
            p->pre[i * n + j] = pre, p->size[i * n + j] = size;
        }
}

static void product_free(product_t *p) {
    free(p->x), free(p->w), free(p->w16), free(p->bias), free(p->pre), free(p->size);
    for (int g = 0; g <= UFORM__GEMM_GELU_LAST; ++g) free(p->serial[g][0]), free(p->serial[g][1]);
}

/* Y (F32, or BF16 when `y16`) of `table`'s forward for weights `bf16` with activation `gelu`. */
static void product_run(const uform__gemm_kernels_t *table, const product_t *p, int bf16, int gelu, float *y,
                        uform__bf16_t *y16) {
    const shape_t *s = &p->shape;
    uform__gemm_forward_t args = {.m = s->m, .n = s->n, .k = s->k, .x = p->x, .ldx = s->k, .x_dtype = UFORM__GEMM_F32,
                                  .w = bf16 ? (const void *)p->w16 : (const void *)p->w, .ldw = s->k,
                                  .w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .bias = p->bias, .gelu = gelu,
                                  .y = y16 ? (void *)y16 : (void *)y, .ldy = s->n,
                                  .y_dtype = y16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32};
    uform_outcome_t outcome = {0};
    CHECK_STATUS((bf16 ? table->forward_bf16 : table->forward_f32)(&args, NULL, &outcome), UFORM_OK);
}

/* One class's products against SERIAL's (kept in `p` when `cpu_class` is SERIAL). */
static void test_products(uform_cpu_class_t cpu_class, product_t *p) {
    const uform__gemm_kernels_t *table = uform__gemm_kernels(cpu_class);
    const shape_t *s = &p->shape;
    size_t m = s->m, n = s->n, k = s->k;
    const char *name = uform_cpu_class_name(cpu_class);
    float *y = malloc(m * n * sizeof(float));
    uform__bf16_t *y16 = malloc(m * n * sizeof(uform__bf16_t));
    for (int gelu = 0; gelu <= UFORM__GEMM_GELU_LAST; ++gelu)
        for (int bf16 = 0; bf16 <= 1; ++bf16) {
            product_run(table, p, bf16, gelu, y, NULL);
            if (cpu_class == UFORM_CPU_CLASS_SERIAL) {
                p->serial[gelu][bf16] = malloc(m * n * sizeof(float));
                memcpy(p->serial[gelu][bf16], y, m * n * sizeof(float));
            } else {
                const float *expected = p->serial[gelu][bf16];
                size_t bad = 0;
                for (size_t i = 0; i < m; ++i)
                    for (size_t j = 0; j < n; ++j) {
                        double pre = p->pre[i * n + j], size = p->size[i * n + j];
                        double want = expected[i * n + j], got = y[i * n + j];
                        double tol = 2 * 1.13 * (4.0 * sqrt((double)k) + 16.0) * ldexp(1.0, -24) * size +
                                     2 * activation_bound(gelu, pre, want);
                        if (!(fabs(got - want) <= tol) && bad++ == 0) {
                            fprintf(stderr, "%s %s [%zu, %zu] (pre-activation %.9g):\n", name,
                                    bf16 ? "bf16" : "f32", i, j, pre);
                            CHECK_NEAR(got, want, tol, 0.0);
                        }
                    }
                CHECK_MSG(bad == 0, "%s M=%zu N=%zu K=%zu W=%s activation %d: %zu values out of tolerance of SERIAL's",
                          name, m, n, k, bf16 ? "bf16" : "f32", gelu, bad);
            }
            if (!bf16) continue; /* a BF16 Y takes BF16 weights on every class (the model's use) */
            product_run(table, p, bf16, gelu, NULL, y16);
            size_t differ = 0, first = 0;
            for (size_t i = 0; i < m * n; ++i)
                if (y16[i] != uform__gemm_bf16_from_f32(y[i]) && differ++ == 0) first = i;
            CHECK_MSG(differ == 0,
                      "%s M=%zu N=%zu K=%zu activation %d: %zu BF16 outputs differ from the F32 Y rounded; first [%zu]: "
                      "0x%04x vs %.9g",
                      name, m, n, k, gelu, differ, first, (unsigned)y16[first], y[first]);
        }
    free(y), free(y16);
}

/* The int8 product with each activation on every class: against the same product without it
 * followed by the class's F32 epilogue (bit for bit), and against SERIAL's (within the bound). */
static void test_int8(void) {
    size_t m = 19, n = 83, k = 301, kp = uform__gemm_i8_k_padded(k);
    float *x = malloc(m * k * sizeof(float)), *w = malloc(n * k * sizeof(float)), *bias = malloc(n * sizeof(float));
    for (size_t i = 0; i < m * k; ++i) x[i] = 0.3f * check_random_float(&seed_state);
    for (size_t i = 0; i < n * k; ++i) w[i] = check_random_float(&seed_state);
    for (size_t j = 0; j < n; ++j) bias[j] = check_random_float(&seed_state);
    int8_t *qx = malloc(m * kp), *qw = malloc(n * kp);
    float *sx = malloc(m * sizeof(float)), *sw = malloc(n * sizeof(float));
    int32_t *sums = malloc(m * sizeof(int32_t));
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    serial->quantize(m, k, x, k, UFORM__GEMM_F32, qx, kp, sx, sums, NULL);
    serial->quantize(n, k, w, k, UFORM__GEMM_F32, qw, kp, sw, NULL, NULL);
    float *reference[UFORM__GEMM_GELU_LAST + 1] = {0};
    float *y = malloc(m * n * sizeof(float)), *plain = malloc(m * n * sizeof(float));
    for (size_t c = 0; c < class_count; ++c) {
        if (!check_class_runs(classes[c])) continue;
        const uform__gemm_i8_kernels_t *table = uform__gemm_i8_kernels(classes[c]);
        const char *name = uform_cpu_class_name(classes[c]);
        uform_outcome_t outcome = {0};
        size_t size = table->packed_size(n, k);
        void *memory = aligned_alloc(64, (size + 63) / 64 * 64);
        uform__gemm_i8_packed_t packed;
        CHECK_STATUS(table->pack(qw, kp, sw, n, k, memory, size, &packed, &outcome), UFORM_OK);
        uform__gemm_i8_forward_t args = {.m = m, .n = n, .k = k, .x = {qx, kp, sx, sums}, .packed = &packed,
                                         .bias = bias, .y = plain, .ldy = n, .output = UFORM__GEMM_I8_F32};
        CHECK_STATUS(table->forward(&args, NULL, &outcome), UFORM_OK);
        for (int gelu = 1; gelu <= UFORM__GEMM_GELU_LAST; ++gelu) {
            args.gelu = gelu, args.y = y;
            CHECK_STATUS(table->forward(&args, NULL, &outcome), UFORM_OK);
            float *separate = malloc(m * n * sizeof(float));
            memcpy(separate, plain, m * n * sizeof(float));
            uform__gemm_kernels(classes[c])->epilogue(separate, n, m, n, NULL, gelu);
            size_t first = 0, differ = bits_differ(y, separate, m * n, &first);
            CHECK_MSG(differ == 0, "%s int8 activation %d: %zu values differ from the plain product + epilogue; "
                                   "first [%zu]: %.9g vs %.9g",
                      name, gelu, differ, first, y[first], separate[first]);
            free(separate);
            if (classes[c] == UFORM_CPU_CLASS_SERIAL) {
                reference[gelu] = malloc(m * n * sizeof(float));
                memcpy(reference[gelu], y, m * n * sizeof(float));
                continue;
            }
            size_t bad = 0;
            for (size_t i = 0; i < m * n; ++i) {
                double tol = 2 * activation_bound(gelu, plain[i], reference[gelu][i]);
                if (!(fabs((double)y[i] - reference[gelu][i]) <= tol) && bad++ == 0) {
                    fprintf(stderr, "%s int8 activation %d [%zu] (pre-activation %.9g):\n", name, gelu, i, plain[i]);
                    CHECK_NEAR(y[i], reference[gelu][i], tol, 0.0);
                }
            }
            CHECK_MSG(bad == 0, "%s int8 activation %d: %zu values out of bound of SERIAL's", name, gelu, bad);
        }
        free(memory);
    }
    for (int g = 0; g <= UFORM__GEMM_GELU_LAST; ++g) free(reference[g]);
    free(x), free(w), free(bias), free(qx), free(qw), free(sx), free(sw), free(sums), free(y), free(plain);
}

int main(int argc, char **argv) {
    seed_state = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261207u;
    printf("seed %llu\n", (unsigned long long)seed_state);
    test_pool_t pool;
    CHECK(test_pool_start(&pool, 2) == 0);
    for (size_t c = 0; c < class_count; ++c)
        if (check_class_runs(classes[c])) test_slot(classes[c], &pool);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        product_t product;
        product_init(&product, &shapes[s]);
        for (size_t c = 0; c < class_count; ++c)
            if (check_class_runs(classes[c])) test_products(classes[c], &product);
        product_free(&product);
    }
    test_int8();
    test_pool_stop(&pool);
    for (size_t c = 0; c < class_count; ++c)
        if (uform_cpu_class_supported(classes[c])) printf("exercised: %s\n", uform_cpu_class_name(classes[c]));
    return check_finish();
}
