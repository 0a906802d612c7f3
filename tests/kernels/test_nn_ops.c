/*
 * LayerNorm, GELU, softmax + cross-entropy, L2 normalisation, mean pooling, embeddings, AdamW
 * and the sum of squares: SERIAL and every SIMD class this machine runs against double-precision
 * references, every backward against central finite differences of the double forward, every
 * class against SERIAL, and bit-identical results with 1, 2 and 3 threads.
 */
#include "kernels/nn_test_support.h"
#include "common/skip.h"

static uint64_t seed;

/* SERIAL first, then each SIMD class this machine runs. */
static size_t classes_here(uform_cpu_class_t *classes) {
    size_t count = 0;
    classes[count++] = UFORM_CPU_CLASS_SERIAL;
    for (size_t k = 0; k < test_simd_class_count; ++k)
        if (check_class_runs(test_simd_classes[k])) classes[count++] = test_simd_classes[k];
    return count;
}

static double *widen(const float *x, size_t n) {
    double *wide = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; ++i) wide[i] = x[i];
    return wide;
}

/* Runs `body(kernels, parallel, context)` with 1, 2 and 3 threads and compares the `bytes` at
 * `output` bitwise against the 1-thread run. */
typedef void (*threaded_fn)(const uform__nn_kernels_t *kernels, const uform__parallel_t *parallel, void *context);
static void check_threads(const char *what, threaded_fn body, void *context, const void *output, size_t bytes) {
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    void *first = malloc(bytes ? bytes : 1);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        body(kernels, NULL, context);
        memcpy(first, output, bytes);
        for (size_t threads = 2; threads <= 3; ++threads) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            body(kernels, &parallel, context);
            char label[128];
            snprintf(label, sizeof label, "%s %s with %zu threads vs 1", uform_cpu_class_name(classes[k]), what,
                     threads);
            test_compare_bits(label, output, first, bytes);
        }
    }
    free(first);
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm.
 */

static void layernorm_reference(size_t rows, size_t width, const double *x, const double *w, const double *b,
                                double eps, double *y) {
    for (size_t r = 0; r < rows; ++r) {
        double mean = 0.0, var = 0.0;
        for (size_t i = 0; i < width; ++i) mean += x[r * width + i];
        mean /= (double)width;
        for (size_t i = 0; i < width; ++i) var += (x[r * width + i] - mean) * (x[r * width + i] - mean);
        var /= (double)width;
        for (size_t i = 0; i < width; ++i) y[r * width + i] = (x[r * width + i] - mean) / sqrt(var + eps) * w[i] + b[i];
    }
}

static void check_layernorm_shape(size_t rows, size_t width) {
    uint64_t state = seed ^ (rows * 131 + width);
    size_t n = rows * width;
    float *x = malloc(n * 4), *w = malloc(width * 4), *b = malloc(width * 4), *y = malloc(n * 4);
    float *mean = malloc(rows * 4), *rstd = malloc(rows * 4), *dy = malloc(n * 4), *dx = malloc(n * 4);
    float *dw = malloc(width * 4), *db = malloc(width * 4);
    test_fill(x, n, &state, 3.0f);
    for (size_t i = 0; i < n; ++i) x[i] += 1.5f; /* an offset mean, as residual streams have */
    test_fill(w, width, &state, 1.0f), test_fill(b, width, &state, 1.0f), test_fill(dy, n, &state, 1.0f);
    const float eps = 1e-6f;
    double *xd = widen(x, n), *wd = widen(w, width), *bd = widen(b, width), *yd = malloc(n * 8);
    layernorm_reference(rows, width, xd, wd, bd, eps, yd);

    /* Gradients by central differences of L = Σ dy·y in double (x, weight, bias). */
    double *gx = malloc(n * 8), *gw = malloc(width * 8), *gb = malloc(width * 8), *yp = malloc(n * 8);
    const double step = 1e-6;
    double *params[3] = {xd, wd, bd}, *grads[3] = {gx, gw, gb};
    size_t sizes[3] = {n, width, width};
    for (size_t p = 0; p < 3; ++p)
        for (size_t i = 0; i < sizes[p]; ++i) {
            double saved = params[p][i], plus = 0.0, minus = 0.0;
            params[p][i] = saved + step;
            layernorm_reference(rows, width, xd, wd, bd, eps, yp);
            for (size_t j = 0; j < n; ++j) plus += dy[j] * yp[j];
            params[p][i] = saved - step;
            layernorm_reference(rows, width, xd, wd, bd, eps, yp);
            for (size_t j = 0; j < n; ++j) minus += dy[j] * yp[j];
            params[p][i] = saved;
            grads[p][i] = (plus - minus) / (2 * step);
        }
    /* dweight and dbias accumulate: start them at 0.25 and expect 0.25 + gradient. */
    for (size_t i = 0; i < width; ++i) gw[i] += 0.25, gb[i] += 0.25;

    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        char label[96];
        kernels->layernorm_forward(rows, width, x, width, w, b, eps, y, width, mean, rstd, NULL);
        snprintf(label, sizeof label, "%s layernorm y [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, y, yd, n, 1e-5, 1e-5);
        test_versus_serial(k, 0, label, y, n, 1e-5, 1e-5);
        /* BF16 output: the class's F32 values rounded to nearest even (HASWELL takes SERIAL's, whose
         * statistics are in double), and within BF16 rounding of the double reference; the saved
         * statistics are the F32 form's. */
        uint16_t *y16 = malloc(n * sizeof(uint16_t) + 2);
        float *mean16 = malloc(rows * 4), *rstd16 = malloc(rows * 4), *y16_wide = malloc(n * 4);
        kernels->layernorm_forward_bf16(rows, width, x, width, w, b, eps, y16, width, mean16, rstd16, NULL);
        const float *rounded_from = y;
        float *serial_y = NULL;
        if (classes[k] == UFORM_CPU_CLASS_INTEL_HASWELL) {
            serial_y = malloc(n * 4);
            float *serial_mean = malloc(rows * 4), *serial_rstd = malloc(rows * 4);
            uform__nn_layernorm_forward_f32_serial(rows, width, x, width, w, b, eps, serial_y, width, serial_mean,
                                                   serial_rstd, NULL);
            rounded_from = serial_y;
            free(serial_mean), free(serial_rstd);
        }
        size_t mismatches = 0;
        for (size_t i = 0; i < n; ++i) {
            union { float f; uint32_t u; } bits = {.f = rounded_from[i]};
            uint16_t expected = (uint16_t)((bits.u + 0x7FFFu + ((bits.u >> 16) & 1u)) >> 16);
            if (y16[i] != expected) {
                if (mismatches++ < 3)
                    printf("FAIL %s layernorm bf16 [%zu]: 0x%04x, expected 0x%04x (F32 %.9g)\n",
                           uform_cpu_class_name(classes[k]), i, y16[i], expected, rounded_from[i]);
            }
            union { uint32_t u; float f; } wide = {.u = (uint32_t)y16[i] << 16};
            y16_wide[i] = wide.f;
        }
        CHECK_MSG(mismatches == 0, "%s layernorm bf16 [%zu, %zu]: %zu of %zu values are not the F32 ones rounded",
                  uform_cpu_class_name(classes[k]), rows, width, mismatches, n);
        snprintf(label, sizeof label, "%s layernorm bf16 y [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, y16_wide, yd, n, 4e-3, 4e-3);
        if (classes[k] != UFORM_CPU_CLASS_INTEL_HASWELL)
            CHECK_MSG(memcmp(mean16, mean, rows * 4) == 0 && memcmp(rstd16, rstd, rows * 4) == 0,
                      "%s layernorm bf16: mean/rstd differ from the F32 form's", uform_cpu_class_name(classes[k]));
        free(y16), free(mean16), free(rstd16), free(y16_wide), free(serial_y);
        for (size_t i = 0; i < width; ++i) dw[i] = db[i] = 0.25f;
        kernels->layernorm_backward(rows, width, x, width, w, mean, rstd, dy, width, dx, width, dw, db, NULL);
        snprintf(label, sizeof label, "%s layernorm dx [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, dx, gx, n, 1e-4, 1e-4);
        /* dx = rstd·(g − mean g − x̂·mean(g·x̂)) cancels terms of size rstd·|g|: an ulp of g (and the
         * classes round g differently, FMA-contracted or not) moves it by ~6e-8·rstd, and rstd
         * reaches 1/√eps = 1000 for a single column. */
        float rstd_most = 0.0f;
        for (size_t r = 0; r < rows; ++r) rstd_most = rstd[r] > rstd_most ? rstd[r] : rstd_most;
        test_versus_serial(k, 1, label, dx, n, 1e-5 + 2e-7 * rstd_most, 1e-5);
        snprintf(label, sizeof label, "%s layernorm dweight [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, dw, gw, width, 1e-4, 1e-4);
        test_versus_serial(k, 2, label, dw, width, 1e-5, 1e-5);
        snprintf(label, sizeof label, "%s layernorm dbias [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, db, gb, width, 1e-4, 1e-4);
        test_versus_serial(k, 3, label, db, width, 1e-5, 1e-5);
    }
    free(x), free(w), free(b), free(y), free(mean), free(rstd), free(dy), free(dx), free(dw), free(db);
    free(xd), free(wd), free(bd), free(yd), free(gx), free(gw), free(gb), free(yp);
}

typedef struct layernorm_threads_t {
    size_t rows, width;
    float *x, *w, *b, *y, *mean, *rstd, *dy, *out; /* out: [dx | dw | db] */
} layernorm_threads_t;

static void layernorm_threads_body(const uform__nn_kernels_t *kernels, const uform__parallel_t *parallel,
                                   void *opaque) {
    layernorm_threads_t *c = opaque;
    size_t n = c->rows * c->width;
    float *dx = c->out, *dw = c->out + n, *db = dw + c->width;
    memset(dw, 0, 2 * c->width * sizeof(float));
    kernels->layernorm_forward(c->rows, c->width, c->x, c->width, c->w, c->b, 1e-6f, c->y, c->width, c->mean, c->rstd,
                               parallel);
    kernels->layernorm_backward(c->rows, c->width, c->x, c->width, c->w, c->mean, c->rstd, c->dy, c->width, dx,
                                c->width, dw, db, parallel);
    memcpy(c->out + n + 2 * c->width, c->y, n * sizeof(float));
}

static void check_layernorm(void) {
    check_layernorm_shape(1, 1);
    check_layernorm_shape(3, 5);
    check_layernorm_shape(7, 67);
    check_layernorm_shape(2, 384);
    layernorm_threads_t c = {301, 384};
    size_t n = c.rows * c.width;
    uint64_t state = seed + 1;
    c.x = malloc(n * 4), c.w = malloc(c.width * 4), c.b = malloc(c.width * 4), c.y = malloc(n * 4);
    c.mean = malloc(c.rows * 4), c.rstd = malloc(c.rows * 4), c.dy = malloc(n * 4);
    c.out = malloc((2 * n + 2 * c.width) * 4);
    test_fill(c.x, n, &state, 2.0f), test_fill(c.w, c.width, &state, 1.0f), test_fill(c.b, c.width, &state, 1.0f);
    test_fill(c.dy, n, &state, 1.0f);
    check_threads("layernorm", layernorm_threads_body, &c, c.out, (2 * n + 2 * c.width) * 4);
    free(c.x), free(c.w), free(c.b), free(c.y), free(c.mean), free(c.rstd), free(c.dy), free(c.out);
}

/* ---------------------------------------------------------------------------------------------
 * GELU.
 */

static double gelu_reference(double x) {
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

static void check_gelu(void) {
    enum { n = 3001 };
    float *x = malloc(n * 4), *y = malloc(n * 4), *dy = malloc(n * 4), *dx = malloc(n * 4);
    double *yd = malloc(n * 8), *gd = malloc(n * 8);
    uint64_t state = seed + 2;
    test_fill(x, n, &state, 7.0f);
    test_fill(dy, n, &state, 1.0f);
    const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, 10.0f, -10.0f, 5.5f, -5.5f, 0.5f, -0.5f, 3e-3f};
    memcpy(x, specials, sizeof specials);
    for (size_t i = 0; i < n; ++i) {
        double v = x[i], h = 1e-6 * (fabs(v) > 1 ? fabs(v) : 1);
        yd[i] = gelu_reference(v);
        gd[i] = dy[i] * (gelu_reference(v + h) - gelu_reference(v - h)) / (2 * h);
    }
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        char label[96];
        kernels->gelu_forward(n, x, y, NULL);
        snprintf(label, sizeof label, "%s gelu", uform_cpu_class_name(classes[k]));
        /* Relative 1e-5: rounding x/√2 to F32 alone moves erfc(x/√2) by ~x²·6e-8 relative deep
         * in the negative tail (|x| ≤ 7 here). */
        test_compare_f32(label, y, yd, n, 1e-37, 1e-5);
        test_versus_serial(k, 4, label, y, n, 1e-37, 1e-5);
        kernels->gelu_backward(n, x, dy, dx, NULL);
        snprintf(label, sizeof label, "%s gelu backward vs finite differences", uform_cpu_class_name(classes[k]));
        test_compare_f32(label, dx, gd, n, 1e-7, 1e-5);
        test_versus_serial(k, 5, label, dx, n, 1e-7, 1e-5);
        float nan_in[3] = {NAN, INFINITY, -INFINITY}, nan_out[3], ones[3] = {1, 1, 1};
        kernels->gelu_forward(3, nan_in, nan_out, NULL);
        CHECK_MSG(isnan(nan_out[0]) && nan_out[1] == INFINITY && isnan(nan_out[2]),
                  "%s gelu(NaN, inf, -inf) = %g, %g, %g; expected NaN, inf, NaN as torch gives",
                  uform_cpu_class_name(classes[k]), nan_out[0], nan_out[1], nan_out[2]);
        kernels->gelu_backward(1, nan_in, ones, nan_out, NULL);
        CHECK_MSG(isnan(nan_out[0]), "%s gelu'(NaN) = %g", uform_cpu_class_name(classes[k]), nan_out[0]);
    }
    free(x), free(y), free(dy), free(dx), free(yd), free(gd);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax + cross-entropy with a per-row scale.
 */

static void xent_reference(size_t rows, size_t width, const double *z, const int32_t *targets, const double *scale,
                           double *loss, double *probs) {
    for (size_t r = 0; r < rows; ++r) {
        double s = scale ? scale[r] : 1.0, max = -INFINITY, sum = 0.0;
        for (size_t i = 0; i < width; ++i) max = s * z[r * width + i] > max ? s * z[r * width + i] : max;
        for (size_t i = 0; i < width; ++i) sum += exp(s * z[r * width + i] - max);
        if (probs)
            for (size_t i = 0; i < width; ++i) probs[r * width + i] = exp(s * z[r * width + i] - max) / sum;
        loss[r] = targets[r] < 0 ? 0.0 : log(sum) + max - s * z[r * width + targets[r]];
    }
}

static void check_xent_shape(size_t rows, size_t width, int with_scale) {
    uint64_t state = seed ^ (rows * 7919 + width * 3 + (size_t)with_scale);
    size_t n = rows * width;
    float *z = malloc(n * 4), *scale = malloc(rows * 4), *probs = malloc(n * 4), *loss = malloc(rows * 4);
    float *dloss = malloc(rows * 4), *dz = malloc(n * 4), *dscale = malloc(rows * 4);
    int32_t *targets = malloc(rows * 4);
    test_fill(z, n, &state, 3.0f);
    test_fill(dloss, rows, &state, 1.0f);
    for (size_t r = 0; r < rows; ++r) {
        scale[r] = 0.5f + 20.0f * (0.5f + 0.5f * check_random_float(&state));
        targets[r] = (int32_t)(check_random_next(&state) % width);
    }
    if (rows > 2) targets[1] = -1; /* a row without a loss */
    const float *scale_used = with_scale ? scale : NULL;
    double *zd = widen(z, n), *sd = widen(scale, rows), *lossd = malloc(rows * 8), *probsd = malloc(n * 8);
    double *gz = malloc(n * 8), *gs = malloc(rows * 8), *lp = malloc(rows * 8);
    xent_reference(rows, width, zd, targets, with_scale ? sd : NULL, lossd, probsd);
    const double step = 1e-6;
    double *params[2] = {zd, sd}, *grads[2] = {gz, gs};
    size_t sizes[2] = {n, rows};
    for (size_t p = 0; p < (with_scale ? 2u : 1u); ++p)
        for (size_t i = 0; i < sizes[p]; ++i) {
            double saved = params[p][i], plus = 0.0, minus = 0.0;
            params[p][i] = saved + step;
            xent_reference(rows, width, zd, targets, with_scale ? sd : NULL, lp, NULL);
            for (size_t r = 0; r < rows; ++r) plus += dloss[r] * lp[r];
            params[p][i] = saved - step;
            xent_reference(rows, width, zd, targets, with_scale ? sd : NULL, lp, NULL);
            for (size_t r = 0; r < rows; ++r) minus += dloss[r] * lp[r];
            params[p][i] = saved;
            grads[p][i] = (plus - minus) / (2 * step);
        }
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        char label[96];
        const char *name = uform_cpu_class_name(classes[k]);
        kernels->softmax_xent_forward(rows, width, z, width, targets, scale_used, probs, loss, NULL);
        snprintf(label, sizeof label, "%s xent loss [%zu, %zu] scale %d", name, rows, width, with_scale);
        test_compare_f32(label, loss, lossd, rows, 1e-5, 1e-5);
        test_versus_serial(k, 6, label, loss, rows, 1e-5, 1e-5);
        snprintf(label, sizeof label, "%s xent probs [%zu, %zu] scale %d", name, rows, width, with_scale);
        test_compare_f32(label, probs, probsd, n, 1e-7, 1e-5);
        test_versus_serial(k, 7, label, probs, n, 1e-7, 1e-5);
        kernels->softmax_xent_backward(rows, width, z, width, targets, scale_used, probs, dloss, dz, width, dscale,
                                       NULL);
        snprintf(label, sizeof label, "%s xent dlogits [%zu, %zu] scale %d", name, rows, width, with_scale);
        test_compare_f32(label, dz, gz, n, 1e-4, 1e-4);
        test_versus_serial(k, 8, label, dz, n, 1e-5, 1e-5);
        if (with_scale) {
            snprintf(label, sizeof label, "%s xent dscale [%zu, %zu]", name, rows, width);
            test_compare_f32(label, dscale, gs, rows, 1e-4, 1e-4);
            test_versus_serial(k, 9, label, dscale, rows, 1e-5, 1e-5);
        }
    }
    free(z), free(scale), free(probs), free(loss), free(dloss), free(dz), free(dscale), free(targets);
    free(zd), free(sd), free(lossd), free(probsd), free(gz), free(gs), free(lp);
}

static void check_xent(void) {
    check_xent_shape(1, 1, 1);
    check_xent_shape(5, 7, 0);
    check_xent_shape(13, 7, 1);
    check_xent_shape(4, 257, 1);
    /* A NaN logit makes that row's loss NaN. */
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k)
        for (size_t where = 0; where < 3; ++where) {
            float z[3] = {1.0f, -2.0f, 2.0f}, probs[3], loss;
            z[where] = NAN;
            int32_t target = 0;
            uform__nn_kernels(classes[k])->softmax_xent_forward(1, 3, z, 3, &target, NULL, probs, &loss, NULL);
            CHECK_MSG(isnan(loss), "%s xent with a NaN logit at %zu gave loss %g", uform_cpu_class_name(classes[k]),
                      where, loss);
        }
}

/* ---------------------------------------------------------------------------------------------
 * L2 normalisation, mean pooling, embeddings.
 */

static void l2_reference(size_t rows, size_t width, const double *x, double eps, double *y) {
    for (size_t r = 0; r < rows; ++r) {
        double norm = 0.0;
        for (size_t i = 0; i < width; ++i) norm += x[r * width + i] * x[r * width + i];
        norm = sqrt(norm);
        norm = norm > eps ? norm : eps;
        for (size_t i = 0; i < width; ++i) y[r * width + i] = x[r * width + i] / norm;
    }
}

static void check_l2(size_t rows, size_t width) {
    uint64_t state = seed ^ (rows * 31 + width);
    size_t n = rows * width;
    float *x = malloc(n * 4), *y = malloc(n * 4), *norm = malloc(rows * 4), *dy = malloc(n * 4), *dx = malloc(n * 4);
    test_fill(x, n, &state, 2.0f), test_fill(dy, n, &state, 1.0f);
    const float eps = 1e-12f;
    double *xd = widen(x, n), *yd = malloc(n * 8), *gx = malloc(n * 8), *yp = malloc(n * 8);
    l2_reference(rows, width, xd, eps, yd);
    for (size_t i = 0; i < n; ++i) {
        double saved = xd[i], plus = 0.0, minus = 0.0;
        xd[i] = saved + 1e-6;
        l2_reference(rows, width, xd, eps, yp);
        for (size_t j = 0; j < n; ++j) plus += dy[j] * yp[j];
        xd[i] = saved - 1e-6;
        l2_reference(rows, width, xd, eps, yp);
        for (size_t j = 0; j < n; ++j) minus += dy[j] * yp[j];
        xd[i] = saved;
        gx[i] = (plus - minus) / 2e-6;
    }
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        char label[96];
        kernels->l2norm_forward(rows, width, x, width, eps, y, width, norm, NULL);
        snprintf(label, sizeof label, "%s l2norm [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, y, yd, n, 1e-7, 1e-6);
        test_versus_serial(k, 10, label, y, n, 1e-7, 1e-6);
        kernels->l2norm_backward(rows, width, y, width, norm, eps, dy, width, dx, width, NULL);
        snprintf(label, sizeof label, "%s l2norm dx [%zu, %zu]", uform_cpu_class_name(classes[k]), rows, width);
        test_compare_f32(label, dx, gx, n, 1e-4, 1e-4);
        test_versus_serial(k, 11, label, dx, n, 1e-5, 1e-5);
    }
    /* A zero row normalises to zeros (the clamped norm), not NaN. */
    float zero[4] = {0, 0, 0, 0}, out[4], zero_norm;
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->l2norm_forward(1, 4, zero, 4, eps, out, 4, &zero_norm, NULL);
    CHECK_MSG(out[0] == 0.0f && out[3] == 0.0f && zero_norm == eps, "zero row: y %g, norm %g", out[0], zero_norm);
    free(x), free(y), free(norm), free(dy), free(dx), free(xd), free(yd), free(gx), free(yp);
}

static void check_pool_and_embeddings(void) {
    /* Mean pooling over groups of 3, 0, 1 and 6 rows; the backward is the transpose of the
     * averaging map, compared with the reference map applied in double. */
    const size_t offsets[] = {0, 3, 3, 4, 10}, groups = 4, rows = 10, width = 19;
    uint64_t state = seed + 5;
    float x[10 * 19], y[4 * 19], dy[4 * 19], dx[10 * 19];
    double yd[4 * 19], dxd[10 * 19];
    test_fill(x, rows * width, &state, 1.0f), test_fill(dy, groups * width, &state, 1.0f);
    for (size_t g = 0; g < groups; ++g)
        for (size_t i = 0; i < width; ++i) {
            double sum = 0.0;
            size_t len = offsets[g + 1] - offsets[g];
            for (size_t r = offsets[g]; r < offsets[g + 1]; ++r) sum += x[r * width + i];
            yd[g * width + i] = len ? sum / (double)len : 0.0;
            for (size_t r = offsets[g]; r < offsets[g + 1]; ++r) dxd[r * width + i] = dy[g * width + i] / (double)len;
        }
    /* The embedding table has repeated ids; dtable starts at 0.5 (it accumulates). */
    enum { vocabulary = 9, ids_count = 23, embed = 11 };
    uint32_t ids[ids_count];
    float table[vocabulary * embed], out[ids_count * embed], dout[ids_count * embed], dtable[vocabulary * embed];
    double outd[ids_count * embed], dtabled[vocabulary * embed];
    test_fill(table, vocabulary * embed, &state, 1.0f), test_fill(out, ids_count * embed, &state, 1.0f);
    test_fill(dout, ids_count * embed, &state, 1.0f);
    for (size_t i = 0; i < ids_count; ++i) ids[i] = (uint32_t)(check_random_next(&state) % 5); /* rows 5..8 unused */
    for (size_t i = 0; i < vocabulary * embed; ++i) dtabled[i] = 0.5;
    for (size_t i = 0; i < ids_count; ++i)
        for (size_t e = 0; e < embed; ++e) {
            outd[i * embed + e] = (double)out[i * embed + e] + table[ids[i] * embed + e];
            dtabled[ids[i] * embed + e] += dout[i * embed + e];
        }
    float out_initial[ids_count * embed];
    memcpy(out_initial, out, sizeof out);

    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        const char *name = uform_cpu_class_name(classes[k]);
        char label[96];
        kernels->mean_pool_forward(groups, offsets, width, x, width, y, width, NULL);
        snprintf(label, sizeof label, "%s mean pool", name);
        test_compare_f32(label, y, yd, groups * width, 1e-7, 1e-6);
        test_versus_serial(k, 12, label, y, groups * width, 1e-7, 1e-6);
        kernels->mean_pool_backward(groups, offsets, width, dy, width, dx, width, NULL);
        snprintf(label, sizeof label, "%s mean pool backward", name);
        test_compare_f32(label, dx, dxd, rows * width, 1e-7, 1e-6);
        test_versus_serial(k, 13, label, dx, rows * width, 1e-7, 1e-6);
        memcpy(out, out_initial, sizeof out);
        kernels->embedding_forward(ids_count, ids, embed, table, embed, out, embed, NULL);
        snprintf(label, sizeof label, "%s embedding gather", name);
        test_compare_f32(label, out, outd, ids_count * embed, 1e-7, 1e-6);
        test_versus_serial(k, 14, label, out, ids_count * embed, 1e-7, 1e-6);
        for (size_t i = 0; i < vocabulary * embed; ++i) dtable[i] = 0.5f;
        kernels->embedding_backward(ids_count, ids, embed, dout, embed, vocabulary, dtable, embed, NULL);
        snprintf(label, sizeof label, "%s embedding scatter-add", name);
        test_compare_f32(label, dtable, dtabled, vocabulary * embed, 1e-6, 1e-6);
        test_versus_serial(k, 15, label, dtable, vocabulary * embed, 1e-6, 1e-6);
    }
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uint32_t bad_ids[] = {1, 2, 9};
    CHECK_STATUS(uform__nn_check_ids(3, bad_ids, vocabulary, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "ids[2] is 9");
    const size_t bad_offsets[] = {0, 3, 2, 4};
    CHECK_STATUS(uform__nn_check_offsets(3, bad_offsets, 4, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "offsets[2] < offsets[1]");
    int32_t bad_targets[] = {0, -1, 7};
    CHECK_STATUS(uform__nn_check_targets(3, 7, bad_targets, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "targets[2] is 7");
}

typedef struct scatter_threads_t {
    size_t n, vocabulary, width;
    uint32_t *ids;
    float *dout, *dtable;
} scatter_threads_t;

static void scatter_threads_body(const uform__nn_kernels_t *kernels, const uform__parallel_t *parallel, void *opaque) {
    scatter_threads_t *c = opaque;
    memset(c->dtable, 0, c->vocabulary * c->width * sizeof(float));
    kernels->embedding_backward(c->n, c->ids, c->width, c->dout, c->width, c->vocabulary, c->dtable, c->width,
                                parallel);
}

static void check_scatter_threads(void) {
    scatter_threads_t c = {5000, 300, 24};
    uint64_t state = seed + 6;
    c.ids = malloc(c.n * 4), c.dout = malloc(c.n * c.width * 4), c.dtable = malloc(c.vocabulary * c.width * 4);
    for (size_t i = 0; i < c.n; ++i) c.ids[i] = (uint32_t)(check_random_next(&state) % c.vocabulary);
    test_fill(c.dout, c.n * c.width, &state, 1.0f);
    check_threads("embedding scatter-add", scatter_threads_body, &c, c.dtable, c.vocabulary * c.width * 4);
    free(c.ids), free(c.dout), free(c.dtable);
}

/* The row-wise and elementwise kernels on 1, 2 and 3 threads: GELU, softmax + cross-entropy, L2,
 * mean pooling, embedding gather and AdamW, all outputs in one buffer compared bitwise. */
enum { rows_r = 203, rows_w = 97, rows_groups = 37 };
typedef struct rowwise_threads_t {
    float *x, *dy, *scale, *params0, *out;
    int32_t *targets;
    uint32_t *ids;
    size_t *offsets;
} rowwise_threads_t;

static void rowwise_threads_body(const uform__nn_kernels_t *kernels, const uform__parallel_t *parallel, void *opaque) {
    rowwise_threads_t *c = opaque;
    size_t n = rows_r * rows_w;
    float *o = c->out;
    kernels->gelu_forward(n, c->x, o, parallel), o += n;
    kernels->gelu_backward(n, c->x, c->dy, o, parallel), o += n;
    float *probs = o;
    kernels->softmax_xent_forward(rows_r, rows_w, c->x, rows_w, c->targets, c->scale, probs, o + n, parallel);
    o += n + rows_r;
    kernels->softmax_xent_backward(rows_r, rows_w, c->x, rows_w, c->targets, c->scale, probs, c->dy, o, rows_w, o + n,
                                   parallel);
    o += n + rows_r;
    float *y = o, *norm = o + n;
    kernels->l2norm_forward(rows_r, rows_w, c->x, rows_w, 1e-12f, y, rows_w, norm, parallel);
    o += n + rows_r;
    kernels->l2norm_backward(rows_r, rows_w, y, rows_w, norm, 1e-12f, c->dy, rows_w, o, rows_w, parallel), o += n;
    kernels->mean_pool_forward(rows_groups, c->offsets, rows_w, c->x, rows_w, o, rows_w, parallel), o += n;
    kernels->mean_pool_backward(rows_groups, c->offsets, rows_w, c->dy, rows_w, o, rows_w, parallel), o += n;
    memset(o, 0, n * sizeof(float));
    kernels->embedding_forward(rows_r, c->ids, rows_w, c->x, rows_w, o, rows_w, parallel), o += n;
    float *p = o, *m = o + n, *v = o + 2 * n;
    memcpy(p, c->params0, n * sizeof(float)), memset(m, 0, 2 * n * sizeof(float));
    for (uint64_t step = 1; step <= 2; ++step)
        kernels->adamw(n, p, c->dy, m, v, 1e-3f, 0.9f, 0.98f, 1e-6f, 0.1f, step, parallel);
}

static void check_rowwise_threads(void) {
    size_t n = rows_r * rows_w;
    rowwise_threads_t c;
    uint64_t state = seed + 9;
    c.x = malloc(n * 4), c.dy = malloc(n * 4), c.scale = malloc(rows_r * 4), c.params0 = malloc(n * 4);
    c.targets = malloc(rows_r * 4), c.ids = malloc(rows_r * 4), c.offsets = malloc((rows_groups + 1) * sizeof(size_t));
    size_t out_floats = 16 * n + 4 * rows_r;
    c.out = calloc(out_floats, 4);
    test_fill(c.x, n, &state, 3.0f), test_fill(c.dy, n, &state, 1.0f), test_fill(c.params0, n, &state, 1.0f);
    for (size_t r = 0; r < rows_r; ++r) {
        c.scale[r] = 1.0f + (float)r * 0.1f;
        c.targets[r] = (int32_t)(check_random_next(&state) % rows_w) - (r % 17 == 0 ? rows_w + 1 : 0);
        c.ids[r] = (uint32_t)(check_random_next(&state) % rows_r);
    }
    /* Ragged groups over the rows, the last covering what is left; some empty. */
    c.offsets[0] = 0;
    for (size_t g = 1; g < rows_groups; ++g) c.offsets[g] = c.offsets[g - 1] + (g % 5 == 0 ? 0 : g % 9);
    c.offsets[rows_groups] = rows_r;
    check_threads("row-wise kernels", rowwise_threads_body, &c, c.out, out_floats * 4);
    free(c.x), free(c.dy), free(c.scale), free(c.params0), free(c.targets), free(c.ids), free(c.offsets), free(c.out);
}

/* ---------------------------------------------------------------------------------------------
 * AdamW and the sum of squares.
 */

static void check_adamw(void) {
    enum { n = 1031 };
    float p[n], g[n], m[n], v[n];
    double pd[n], md[n], vd[n];
    uint64_t state = seed + 7;
    test_fill(p, n, &state, 1.0f);
    for (size_t i = 0; i < n; ++i) pd[i] = p[i], md[i] = vd[i] = 0.0, m[i] = v[i] = 0.0f;
    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.98f, eps = 1e-6f, decay = 0.1f;
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    float(*copies)[4][n] = malloc(sizeof(float[8][4][n]));
    for (size_t k = 0; k < count; ++k) {
        memcpy(copies[k][0], p, sizeof p), memset(copies[k][1], 0, sizeof m), memset(copies[k][2], 0, sizeof v);
    }
    for (uint64_t step = 1; step <= 3; ++step) {
        test_fill(g, n, &state, 1.0f);
        double c1 = 1.0 - pow(beta1, (double)step), c2 = 1.0 - pow(beta2, (double)step);
        for (size_t i = 0; i < n; ++i) {
            pd[i] *= 1.0 - (double)lr * decay;
            md[i] = beta1 * md[i] + (1.0 - beta1) * g[i];
            vd[i] = beta2 * vd[i] + (1.0 - beta2) * (double)g[i] * g[i];
            pd[i] -= lr * (md[i] / c1) / (sqrt(vd[i] / c2) + eps);
        }
        for (size_t k = 0; k < count; ++k)
            uform__nn_kernels(classes[k])
                ->adamw(n, copies[k][0], g, copies[k][1], copies[k][2], lr, beta1, beta2, eps, decay, step, NULL);
    }
    for (size_t k = 0; k < count; ++k) {
        char label[96];
        snprintf(label, sizeof label, "%s adamw params after 3 steps", uform_cpu_class_name(classes[k]));
        test_compare_f32(label, copies[k][0], pd, n, 1e-7, 1e-6);
        test_versus_serial(k, 30, label, copies[k][0], n, 1e-7, 1e-6);
        snprintf(label, sizeof label, "%s adamw first moment", uform_cpu_class_name(classes[k]));
        test_compare_f32(label, copies[k][1], md, n, 1e-7, 1e-5);
    }
    free(copies);
}

typedef struct sum_threads_t {
    size_t n;
    float *x;
    double result;
} sum_threads_t;

static void sum_threads_body(const uform__nn_kernels_t *kernels, const uform__parallel_t *parallel, void *opaque) {
    sum_threads_t *c = opaque;
    c->result = kernels->sum_squares(c->n, c->x, parallel);
}

static void check_sum_squares(void) {
    const size_t sizes[] = {0, 1, 17, 4096, 4097, 1000003};
    float *x = malloc(1000003 * 4);
    uint64_t state = seed + 8;
    test_fill(x, 1000003, &state, 3.0f);
    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        long double expected = 0.0L;
        for (size_t i = 0; i < sizes[s]; ++i) expected += (long double)x[i] * x[i];
        for (size_t k = 0; k < count; ++k) {
            double got = uform__nn_kernels(classes[k])->sum_squares(sizes[s], x, NULL);
            CHECK_NEAR(got, (double)expected, 1e-300, 1e-12);
        }
    }
    sum_threads_t c = {1000003, x, 0.0};
    check_threads("sum of squares", sum_threads_body, &c, &c.result, sizeof c.result);
    free(x);
}

/* Every slot of every class's table is filled, and the classes map as nn.h documents. */
static void check_tables(void) {
    for (int cpu_class = 0; cpu_class <= 18; ++cpu_class) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels((uform_cpu_class_t)cpu_class);
        CHECK_MSG(kernels != NULL, "class %d has no table", cpu_class);
        if (!kernels) continue;
        const void *const *slots = (const void *const *)kernels;
        for (size_t s = 0; s < sizeof *kernels / sizeof(void *); ++s)
            CHECK_MSG(slots[s] != NULL, "class %d (%s): slot %zu is NULL", cpu_class,
                      uform_cpu_class_name((uform_cpu_class_t)cpu_class), s);
    }
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_INTEL_SIERRA) == uform__nn_kernels(UFORM_CPU_CLASS_INTEL_HASWELL));
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_INTEL_SAPPHIRE) == uform__nn_kernels(UFORM_CPU_CLASS_AMD_GENOA));
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_APPLE_M4) == uform__nn_kernels(UFORM_CPU_CLASS_SERIAL));
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_INTEL_SKYLAKE)->attention_forward !=
          uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_forward);
}

int main(int argc, char **argv) {
    seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x0DDBA11ull;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    check_tables();
    check_layernorm();
    check_gelu();
    check_xent();
    check_l2(1, 1);
    check_l2(3, 5);
    check_l2(4, 131);
    check_pool_and_embeddings();
    check_scatter_threads();
    check_rowwise_threads();
    check_adamw();
    check_sum_squares();
    return check_finish();
}
