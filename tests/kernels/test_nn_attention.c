/*
 * Packed variable-length attention, bidirectional and causal (the shape's `causal`): SERIAL
 * against a naive double-precision reference (forward and analytic backward; causal: each query
 * over its item's keys up to itself), the backward against central finite differences of the
 * double forward, every SIMD class this machine runs against SERIAL and the reference, the fused
 * and two-pass backward schedules bit for bit, bit-identical results with 1, 2 and 3 threads, one
 * query per item, a NaN in a later key that must not reach the earlier rows of a causal item, and
 * the argument checks. Causal cases: items of 1, 2, 15, 16, 17, 77 and 300 tokens at head widths
 * 32, 64 and 128 (nn_attention_test_cases.h), and the bidirectional cases again.
 */
#include "kernels/nn_attention_test_cases.h"
#include "kernels/nn_test_support.h"
#include "common/skip.h"

/* Naive attention in double. qkv [T, 3d] → out [T, d], lse [H, T]. Causal: query i attends to
 * its item's keys begin .. i only (`end` below is then i + 1). */
static void reference_forward(const uform__attention_shape_t *shape, const double *qkv, double *out, double *lse) {
    size_t H = shape->heads, dh = shape->head_width, d = H * dh, T = shape->tokens;
    double scale = 1.0 / sqrt((double)dh);
    double *scores = malloc((T ? T : 1) * sizeof(double));
    for (size_t item = 0; item < shape->count; ++item) {
        size_t begin = shape->offsets[item], item_end = shape->offsets[item + 1];
        for (size_t h = 0; h < H; ++h)
            for (size_t i = begin; i < item_end; ++i) {
                size_t end = shape->causal ? i + 1 : item_end;
                double max = -INFINITY;
                for (size_t j = begin; j < end; ++j) {
                    double s = 0.0;
                    for (size_t e = 0; e < dh; ++e) s += qkv[i * 3 * d + h * dh + e] * qkv[j * 3 * d + d + h * dh + e];
                    scores[j - begin] = s * scale;
                    max = scores[j - begin] > max ? scores[j - begin] : max;
                }
                double sum = 0.0;
                for (size_t j = begin; j < end; ++j) sum += exp(scores[j - begin] - max);
                for (size_t e = 0; e < dh; ++e) {
                    double o = 0.0;
                    for (size_t j = begin; j < end; ++j)
                        o += exp(scores[j - begin] - max) / sum * qkv[j * 3 * d + 2 * d + h * dh + e];
                    out[i * d + h * dh + e] = o;
                }
                lse[h * T + i] = max + log(sum);
            }
    }
    free(scores);
}

/* The analytic backward in double (softmax Jacobian written out), dout [T, d] → dqkv [T, 3d]. */
static void reference_backward(const uform__attention_shape_t *shape, const double *qkv, const double *dout,
                               double *dqkv) {
    size_t H = shape->heads, dh = shape->head_width, d = H * dh, T = shape->tokens;
    double scale = 1.0 / sqrt((double)dh);
    memset(dqkv, 0, T * 3 * d * sizeof(double));
    for (size_t item = 0; item < shape->count; ++item) {
        size_t begin = shape->offsets[item], item_end = shape->offsets[item + 1], length = item_end - begin;
        if (!length) continue;
        double *p = malloc(length * sizeof(double)), *dp = malloc(length * sizeof(double));
        for (size_t h = 0; h < H; ++h)
            for (size_t i = begin; i < item_end; ++i) {
                size_t end = shape->causal ? i + 1 : item_end, n = end - begin; /* the keys i sees */
                const double *q = qkv + i * 3 * d + h * dh, *g = dout + i * d + h * dh;
                double max = -INFINITY, sum = 0.0, delta = 0.0;
                for (size_t j = begin; j < end; ++j) {
                    double s = 0.0;
                    for (size_t e = 0; e < dh; ++e) s += q[e] * qkv[j * 3 * d + d + h * dh + e];
                    p[j - begin] = s * scale;
                    max = p[j - begin] > max ? p[j - begin] : max;
                }
                for (size_t j = 0; j < n; ++j) sum += (p[j] = exp(p[j] - max));
                for (size_t j = 0; j < n; ++j) p[j] /= sum;
                for (size_t j = begin; j < end; ++j) {
                    double s = 0.0;
                    for (size_t e = 0; e < dh; ++e) s += g[e] * qkv[j * 3 * d + 2 * d + h * dh + e];
                    dp[j - begin] = s;
                    delta += p[j - begin] * s;
                }
                for (size_t j = begin; j < end; ++j) {
                    double ds = p[j - begin] * (dp[j - begin] - delta) * scale;
                    for (size_t e = 0; e < dh; ++e) {
                        dqkv[i * 3 * d + h * dh + e] += ds * qkv[j * 3 * d + d + h * dh + e];
                        dqkv[j * 3 * d + d + h * dh + e] += ds * q[e];
                        dqkv[j * 3 * d + 2 * d + h * dh + e] += p[j - begin] * g[e];
                    }
                }
            }
        free(p);
        free(dp);
    }
}

typedef struct buffers_t {
    uform__attention_shape_t shape;
    size_t offsets[9];
    size_t d, T;
    float *qkv, *dout, *out, *lse, *dqkv, *deltas;
} buffers_t;

static void buffers_init(buffers_t *b, const attention_case_t *c, uint64_t *state, int causal) {
    b->offsets[0] = 0;
    for (size_t i = 0; i < c->count; ++i) b->offsets[i + 1] = b->offsets[i] + c->lengths[i];
    b->T = b->offsets[c->count];
    b->d = c->heads * c->head_width;
    b->shape = (uform__attention_shape_t){b->T, c->heads, c->head_width, b->offsets, c->count, NULL, causal};
    b->qkv = malloc(b->T * 3 * b->d * sizeof(float) + 4);
    b->dout = malloc(b->T * b->d * sizeof(float) + 4);
    b->out = malloc(b->T * b->d * sizeof(float) + 4);
    b->lse = malloc(c->heads * b->T * sizeof(float) + 4);
    b->dqkv = malloc(b->T * 3 * b->d * sizeof(float) + 4);
    b->deltas = malloc(c->heads * b->T * sizeof(float) + 4);
    test_fill(b->qkv, b->T * 3 * b->d, state, 2.0f);
    test_fill(b->dout, b->T * b->d, state, 1.0f);
}

static void buffers_free(buffers_t *b) {
    free(b->qkv), free(b->dout), free(b->out), free(b->lse), free(b->dqkv), free(b->deltas);
}

static void run(const uform__nn_kernels_t *kernels, buffers_t *b, const uform__parallel_t *parallel) {
    kernels->attention_forward(&b->shape, b->qkv, b->out, b->lse, parallel);
    kernels->attention_backward(&b->shape, b->qkv, b->out, b->lse, b->dout, b->deltas, b->dqkv, parallel);
}

/* Whether a class before classes[k] that this CPU runs has the same F32 attention (ICELAKE's and
 * GENOA's are SKYLAKE's): running it again would check nothing new, and the double references
 * and SERIAL already take most of this test's time. */
static int same_f32_attention_as_earlier(const uform_cpu_class_t *classes, size_t k) {
    const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
    for (size_t j = 0; j < k; ++j) {
        const uform__nn_kernels_t *earlier = uform__nn_kernels(classes[j]);
        int ran = uform_cpu_class_supported(classes[j]) && !(classes[j] == UFORM_CPU_CLASS_SERIAL && check_serial_left_to_native());
        if (ran && earlier->attention_forward == kernels->attention_forward &&
            earlier->attention_backward == kernels->attention_backward &&
            uform__nn_attention_ops(classes[j]) == uform__nn_attention_ops(classes[k]))
            return 1;
    }
    return 0;
}

static void check_against_reference(const attention_case_t *c, uint64_t seed, int causal) {
    uint64_t state = seed;
    buffers_t b;
    buffers_init(&b, c, &state, causal);
    const char *mode = causal ? "causal " : "";
    size_t T = b.T, d = b.d;
    double *qkv = malloc(T * 3 * d * sizeof(double) + 8), *dout = malloc(T * d * sizeof(double) + 8);
    double *out = malloc(T * d * sizeof(double) + 8), *lse = malloc(c->heads * T * sizeof(double) + 8);
    double *dqkv = malloc(T * 3 * d * sizeof(double) + 8);
    for (size_t i = 0; i < T * 3 * d; ++i) qkv[i] = b.qkv[i];
    for (size_t i = 0; i < T * d; ++i) dout[i] = b.dout[i];
    reference_forward(&b.shape, qkv, out, lse);
    reference_backward(&b.shape, qkv, dout, dqkv);

    /* Under the emulator SERIAL is left to the native run (skip.h); the SIMD classes are still
     * checked against the double reference, and against SERIAL's results when it ran. */
    int with_serial = check_class_runs_unless_serial_left_to_native(UFORM_CPU_CLASS_SERIAL);
    char label[96];
    if (with_serial) {
        run(uform__nn_kernels(UFORM_CPU_CLASS_SERIAL), &b, NULL);
        snprintf(label, sizeof label, "%sserial out H=%zu dh=%zu", mode, c->heads, c->head_width);
        test_compare_f32(label, b.out, out, T * d, 2e-6, 2e-5);
        snprintf(label, sizeof label, "%sserial lse H=%zu dh=%zu", mode, c->heads, c->head_width);
        test_compare_f32(label, b.lse, lse, c->heads * T, 2e-6, 2e-6);
        snprintf(label, sizeof label, "%sserial dqkv H=%zu dh=%zu", mode, c->heads, c->head_width);
        test_compare_f32(label, b.dqkv, dqkv, T * 3 * d, 1e-5, 1e-4);
    }

    float *out_serial = malloc(T * d * sizeof(float) + 4), *dqkv_serial = malloc(T * 3 * d * sizeof(float) + 4);
    memcpy(out_serial, b.out, T * d * sizeof(float));
    memcpy(dqkv_serial, b.dqkv, T * 3 * d * sizeof(float));

    for (size_t k = 0; k < test_simd_class_count; ++k) {
        uform_cpu_class_t cpu_class = test_simd_classes[k];
        if (!check_class_runs_unless_serial_left_to_native(cpu_class) || same_f32_attention_as_earlier(test_simd_classes, k)) continue;
        const uform__nn_kernels_t *kernels = uform__nn_kernels(cpu_class);
        run(kernels, &b, NULL);
        snprintf(label, sizeof label, "%s%s out H=%zu dh=%zu", mode, uform_cpu_class_name(cpu_class), c->heads,
                 c->head_width);
        test_compare_f32(label, b.out, out, T * d, 2e-6, 2e-5);
        if (with_serial) test_compare_f32_f32(label, b.out, out_serial, T * d, 2e-6, 2e-5);
        snprintf(label, sizeof label, "%s%s dqkv H=%zu dh=%zu", mode, uform_cpu_class_name(cpu_class), c->heads,
                 c->head_width);
        test_compare_f32(label, b.dqkv, dqkv, T * 3 * d, 1e-5, 1e-4);
        if (with_serial) test_compare_f32_f32(label, b.dqkv, dqkv_serial, T * 3 * d, 1e-5, 1e-4);

        /* Bit-identical whatever the thread count. */
        float *out_one = malloc(T * d * sizeof(float) + 4), *dqkv_one = malloc(T * 3 * d * sizeof(float) + 4);
        memcpy(out_one, b.out, T * d * sizeof(float));
        memcpy(dqkv_one, b.dqkv, T * 3 * d * sizeof(float));
        for (size_t threads = 2; threads <= 3; ++threads) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            memset(b.out, 0xFF, T * d * sizeof(float));
            memset(b.dqkv, 0xFF, T * 3 * d * sizeof(float));
            run(kernels, &b, &parallel);
            snprintf(label, sizeof label, "%s%s out, %zu threads vs 1", mode, uform_cpu_class_name(cpu_class), threads);
            test_compare_bits(label, b.out, out_one, T * d * sizeof(float));
            snprintf(label, sizeof label, "%s%s dqkv, %zu threads vs 1", mode, uform_cpu_class_name(cpu_class), threads);
            test_compare_bits(label, b.dqkv, dqkv_one, T * 3 * d * sizeof(float));
        }
        free(out_one), free(dqkv_one);
    }
    free(out_serial), free(dqkv_serial);
    free(qkv), free(dout), free(out), free(lse), free(dqkv);
    buffers_free(&b);
}

/* The fused and two-pass backward schedules must agree bit for bit on every class (nn.h,
 * uform__nn_attention_backward_schedule_with), with 1 and 3 threads; so must deltas. The inputs
 * are scaled by `spread` too, so that large scores (exp far from 1, many underflows) are covered. */
static void compare_floats_bits(const char *what, const float *got, const float *expected, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (memcmp(got + i, expected + i, sizeof(float))) {
            CHECK_MSG(0, "%s: not bit-identical at [%zu]: %.9g vs %.9g", what, i, got[i], expected[i]);
            return;
        }
}

static void check_schedules(const attention_case_t *c, uint64_t seed, float spread, int causal) {
    uint64_t state = seed;
    buffers_t b;
    buffers_init(&b, c, &state, causal);
    const char *mode = causal ? "causal " : "";
    size_t T = b.T, d = b.d;
    for (size_t i = 0; i < T * 3 * d; ++i) b.qkv[i] *= spread;
    float *dqkv_two = malloc(T * 3 * d * sizeof(float) + 4), *deltas_two = malloc(c->heads * T * sizeof(float) + 4);
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                         UFORM_CPU_CLASS_AMD_GENOA};
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k]) || same_f32_attention_as_earlier(classes, k)) continue;
        const uform__nn_attention_ops_t *ops = uform__nn_attention_ops(classes[k]);
        uform__nn_kernels(classes[k])->attention_forward(&b.shape, b.qkv, b.out, b.lse, NULL);
        memset(dqkv_two, 0xFF, T * 3 * d * sizeof(float));
        uform__nn_attention_backward_schedule_with(ops, UFORM__NN_ATTENTION_BACKWARD_TWO_PASS, &b.shape, b.qkv, b.out,
                                                   b.lse, b.dout, deltas_two, dqkv_two, NULL);
        for (size_t threads = 1; threads <= 3; threads += 2) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            memset(b.dqkv, 0xFF, T * 3 * d * sizeof(float));
            memset(b.deltas, 0xFF, c->heads * T * sizeof(float));
            uform__nn_attention_backward_schedule_with(ops, UFORM__NN_ATTENTION_BACKWARD_FUSED, &b.shape, b.qkv, b.out,
                                                       b.lse, b.dout, b.deltas, b.dqkv, threads > 1 ? &parallel : NULL);
            char label[128];
            snprintf(label, sizeof label, "%s%s fused vs two-pass dqkv, H=%zu dh=%zu spread %g, %zu threads", mode,
                     uform_cpu_class_name(classes[k]), c->heads, c->head_width, spread, threads);
            compare_floats_bits(label, b.dqkv, dqkv_two, T * 3 * d);
            snprintf(label, sizeof label, "%s%s fused vs two-pass deltas, H=%zu dh=%zu spread %g, %zu threads", mode,
                     uform_cpu_class_name(classes[k]), c->heads, c->head_width, spread, threads);
            compare_floats_bits(label, b.deltas, deltas_two, c->heads * T);
        }
    }
    free(dqkv_two), free(deltas_two);
    buffers_free(&b);
}

/* Central differences of L(qkv) = Σ dout ⊙ attention(qkv) computed in double, against every
 * class's backward. */
static void check_finite_differences(uint64_t seed, int causal) {
    const attention_case_t c = {2, 5, 3, {3, 1, 6}};
    uint64_t state = seed;
    buffers_t b;
    buffers_init(&b, &c, &state, causal);
    size_t T = b.T, d = b.d, n = T * 3 * d;
    double *qkv = malloc(n * sizeof(double)), *out = malloc(T * d * sizeof(double));
    double *lse = malloc(c.heads * T * sizeof(double)), *numeric = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; ++i) qkv[i] = b.qkv[i];
    const double step = 1e-6;
    for (size_t i = 0; i < n; ++i) {
        double saved = qkv[i], plus = 0.0, minus = 0.0;
        qkv[i] = saved + step;
        reference_forward(&b.shape, qkv, out, lse);
        for (size_t j = 0; j < T * d; ++j) plus += b.dout[j] * out[j];
        qkv[i] = saved - step;
        reference_forward(&b.shape, qkv, out, lse);
        for (size_t j = 0; j < T * d; ++j) minus += b.dout[j] * out[j];
        qkv[i] = saved;
        numeric[i] = (plus - minus) / (2 * step);
    }
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA};
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        run(uform__nn_kernels(classes[k]), &b, NULL);
        char label[96];
        snprintf(label, sizeof label, "%s%s dqkv vs finite differences", causal ? "causal " : "",
                 uform_cpu_class_name(classes[k]));
        test_compare_f32(label, b.dqkv, numeric, n, 2e-5, 1e-4);
    }
    free(qkv), free(out), free(lse), free(numeric);
    buffers_free(&b);
}

/* A NaN in one item's input must show in that item's output, not vanish (or leak elsewhere). */
static void check_nan_propagates(void) {
    const attention_case_t c = {1, 8, 2, {5, 4}};
    uint64_t state = 7;
    buffers_t b;
    buffers_init(&b, &c, &state, 0);
    b.qkv[1 * 3 * b.d + b.d + 2] = NAN; /* a key of item 0 */
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE};
    for (size_t k = 0; k < 3; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        uform__nn_kernels(classes[k])->attention_forward(&b.shape, b.qkv, b.out, b.lse, NULL);
        CHECK_MSG(isnan(b.out[0]), "%s: a NaN key gave out[0] = %g", uform_cpu_class_name(classes[k]), b.out[0]);
        CHECK_MSG(!isnan(b.out[5 * b.d]), "%s: a NaN in item 0 leaked into item 1", uform_cpu_class_name(classes[k]));
    }
    buffers_free(&b);
}

/* Causal: a NaN in the key of token j of an item reaches that item's rows j and later, never the
 * rows before j (their scores against it are computed, but must not enter their max, exp or
 * sum), in the F32 and BF16 forwards of every class, one query per item included. Keys at the
 * start, the middle and the end of key blocks of a 300-token item. */
static void check_causal_nan(uint64_t seed) {
    const attention_case_t c = {2, 64, 3, {77, 300, 5}};
    const size_t planted[] = {1, 63, 64, 70, 200, 299};
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA};
    for (size_t n = 0; n < sizeof planted / sizeof planted[0]; ++n) {
        uint64_t state = seed + n;
        buffers_t b;
        buffers_init(&b, &c, &state, 1);
        size_t begin = b.offsets[1], token = begin + planted[n], d = b.d;
        b.qkv[token * 3 * d + d + 70] = NAN; /* head 1's key */
        size_t queries[3] = {b.offsets[0] + 76, token - 1, b.offsets[2] + 2};
        for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
            if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
            const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
            for (int bf16 = 0; bf16 <= 1; ++bf16) {
                (bf16 ? kernels->attention_forward_bf16 : kernels->attention_forward)(&b.shape, b.qkv, b.out, b.lse, NULL);
                size_t leaked = 0, missing = 0;
                for (size_t i = begin; i < b.offsets[2]; ++i) {
                    int nan = isnan(b.out[i * d + 64 + 5]);
                    leaked += i < token && nan, missing += i >= token && !nan;
                }
                CHECK_MSG(leaked == 0 && missing == 0,
                          "%s %s causal: a NaN key at item position %zu reached %zu earlier rows and missed %zu later",
                          uform_cpu_class_name(classes[k]), bf16 ? "bf16" : "f32", planted[n], leaked, missing);
                uform__attention_shape_t shape = b.shape;
                shape.queries = queries;
                (bf16 ? kernels->attention_forward_bf16 : kernels->attention_forward)(&shape, b.qkv, b.out, b.lse, NULL);
                CHECK_MSG(!isnan(b.out[1 * d + 64]) && !isnan(b.out[0]) && !isnan(b.out[2 * d + 64]),
                          "%s %s causal, one query per item: the row before a NaN key at %zu is NaN",
                          uform_cpu_class_name(classes[k]), bf16 ? "bf16" : "f32", planted[n]);
            }
        }
        buffers_free(&b);
    }
}

/* One query row per item (the pruned last block of an encoder): row i of out and column i of lse
 * must equal the full attention's rows queries[i], on every class, with 1 and 2 threads. */
static void check_queries(uint64_t seed, int causal) {
    const attention_case_t c = {6, 64, 5, {1, 197, 64, 65, 130}};
    uint64_t state = seed;
    buffers_t b;
    buffers_init(&b, &c, &state, causal);
    size_t T = b.T, d = b.d, H = c.heads, count = c.count;
    double *qkv = malloc(T * 3 * d * sizeof(double)), *out = malloc(T * d * sizeof(double));
    double *lse = malloc(H * T * sizeof(double));
    for (size_t i = 0; i < T * 3 * d; ++i) qkv[i] = b.qkv[i];
    reference_forward(&b.shape, qkv, out, lse);
    /* First, last, middle and block-boundary rows. */
    size_t queries[5];
    for (size_t i = 0; i < count; ++i) queries[i] = b.offsets[i] + (i * 37) % c.lengths[i];
    queries[2] = b.offsets[3] - 1;
    double *expected_out = malloc(count * d * sizeof(double)), *expected_lse = malloc(H * count * sizeof(double));
    for (size_t i = 0; i < count; ++i) {
        for (size_t e = 0; e < d; ++e) expected_out[i * d + e] = out[queries[i] * d + e];
        for (size_t h = 0; h < H; ++h) expected_lse[h * count + i] = lse[h * T + queries[i]];
    }
    uform__attention_shape_t shape = b.shape;
    shape.queries = queries;
    CHECK_STATUS(uform__nn_check_attention(&shape, NULL), UFORM_OK);
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA};
    float *row_out = malloc(count * d * sizeof(float)), *row_lse = malloc(H * count * sizeof(float));
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        for (size_t threads = 1; threads <= 2; ++threads) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            memset(row_out, 0xFF, count * d * sizeof(float));
            uform__nn_kernels(classes[k])->attention_forward(&shape, b.qkv, row_out, row_lse, threads > 1 ? &parallel : NULL);
            char label[96];
            snprintf(label, sizeof label, "%s%s one query per item, %zu threads", causal ? "causal " : "",
                     uform_cpu_class_name(classes[k]), threads);
            test_compare_f32(label, row_out, expected_out, count * d, 2e-6, 2e-5);
            test_compare_f32(label, row_lse, expected_lse, H * count, 2e-6, 2e-6);
        }
    }
    queries[1] = b.offsets[2]; /* item 2's first token, outside item 1 */
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    CHECK_STATUS(uform__nn_check_attention(&shape, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "queries[1]");
    free(row_out), free(row_lse), free(expected_out), free(expected_lse), free(qkv), free(out), free(lse);
    buffers_free(&b);
}

static void check_validation(void) {
    size_t offsets[] = {0, 4, 3};
    uform__attention_shape_t shape = {3, 2, 8, offsets, 2};
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    CHECK_STATUS(uform__nn_check_attention(&shape, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "offsets[2] < offsets[1] (3 < 4)");
    size_t good[] = {0, 4, 9};
    shape.offsets = good;
    shape.tokens = 9;
    CHECK_STATUS(uform__nn_check_attention(&shape, &outcome), UFORM_OK);
    shape.head_width = UFORM__NN_ATTENTION_MAX_HEAD_WIDTH + 1;
    CHECK_STATUS(uform__nn_check_attention(&shape, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "head width 129");
    /* Called anyway, the kernels answer NaN rather than overrunning their stack tiles. */
    float qkv[9 * 3 * 2 * 129], out[9 * 2 * 129], lse[2 * 9], dqkv[9 * 3 * 2 * 129], deltas[2 * 9];
    memset(qkv, 0, sizeof qkv), memset(out, 0, sizeof out), memset(dqkv, 0, sizeof dqkv);
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_forward(&shape, qkv, out, lse, NULL);
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_backward(&shape, qkv, out, lse, out, deltas, dqkv, NULL);
    CHECK_MSG(isnan(out[0]) && isnan(out[9 * 2 * 129 - 1]) && isnan(lse[17]) && isnan(dqkv[9 * 3 * 2 * 129 - 1]),
              "head width 129: out %g, lse %g, dqkv %g; expected NaN", out[0], lse[17], dqkv[0]);
    shape.head_width = 8;
    shape.tokens = 10;
    CHECK_STATUS(uform__nn_check_attention(&shape, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "10 tokens");
}

/* Built twice from this file (nn.cmake): test_nn_attention runs the bidirectional shapes,
 * test_nn_attention_causal (NN_ATTENTION_CAUSAL = 1) the same checks on causal ones and the causal
 * cases. Two executables, so that each stays short and `make test-avx2` can run either under its
 * emulator (the causal one costs about as much again there). */
#ifndef NN_ATTENTION_CAUSAL
#define NN_ATTENTION_CAUSAL 0
#endif

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5EEDA77Eull;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    const int causal = NN_ATTENTION_CAUSAL;
    for (size_t i = 0; i < nn_attention_case_count; ++i) check_against_reference(&nn_attention_cases[i], seed + i, causal);
    for (size_t i = 0; i < nn_attention_case_count; ++i) {
        check_schedules(&nn_attention_cases[i], seed + 17 * i, 1.0f, causal);
        check_schedules(&nn_attention_cases[i], seed + 17 * i + 1, 6.0f, causal);
    }
    check_finite_differences(seed, causal);
    check_queries(seed, causal);
    if (causal) {
        for (size_t i = 0; i < nn_attention_causal_case_count; ++i) {
            check_against_reference(&nn_attention_causal_cases[i], seed + 101 * i, 1);
            check_schedules(&nn_attention_causal_cases[i], seed + 101 * i + 1, 6.0f, 1);
        }
        check_causal_nan(seed);
    } else {
        check_nan_propagates();
        check_validation();
    }
    return check_finish();
}
