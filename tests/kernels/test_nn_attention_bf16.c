/*
 * attention_forward_bf16 on every class this machine runs:
 *   - against a double-precision reference that applies exactly the roundings nn.h documents
 *     (BF16 Q, K, V and P, P relative to the running max of 64-key blocks, the normaliser from
 *     unrounded P), within 1e-5 of max|out| plus, per element, the weight of the few P values
 *     that sit so close to a BF16 rounding boundary that F32 noise may round them either way;
 *   - against exact attention in double within 1.5e-2 of max|out| (BF16's own error);
 *   - F32 compute must miss the tight tolerance (so the test sees the rounding points);
 *   - on inputs built so that everything but the documented roundings is exact (p is 0 or 1),
 *     out (within a few ulps where the class's exp(0) is not 1) and the backward's dV bit for bit
 *     against an exact reference that rounds Q, K, V and dout where nn.h says
 *     (check_exact_rounding says why general inputs cannot be exact);
 *   - lengths 1, odd, 64, 65, 197, 256, an empty item; head widths 1, 13, 64, 128; one query
 *     per item; NaN propagation; bit-identical results on 1, 2 and 3 threads; no NULL slot;
 *   - causal shapes (the shape's `causal`) through the same checks: the reference walks each row's
 *     key blocks up to its own and, in that block, its keys up to itself (nn.h), on the cases
 *     above and on items of 1, 2, 15, 16, 17, 77 and 300 tokens at head widths 32, 64 and 128,
 *     all rows and one query per item.
 */
#include "kernels/nn_attention_test_cases.h"
#include "kernels/nn_test_support.h"
#include "common/round_bits.h"
#include "common/skip.h"

enum { reference_block = 64 }; /* UFORM__NN_ATTENTION_BLOCK, restated: the semantics depend on it */

/* x rounded to the nearest BF16 (ties to even), as a float; NaN stays NaN. */
static float bf16_round(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return x;
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* p ≥ 0 rounded to BF16; *doubt receives the gap between p's two BF16 neighbours when p lies
 * within `window`·p of their midpoint (where the kernels' F32 p, a few ulps off, may round the
 * other way), else 0. */
static double bf16_round_with_doubt(double p, double window, double *doubt) {
    float f = (float)p;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t low_bits = bits & 0xFFFF0000u, high_bits = low_bits + 0x10000u;
    float low, high;
    memcpy(&low, &low_bits, sizeof low);
    memcpy(&high, &high_bits, sizeof high);
    double middle = 0.5 * ((double)low + (double)high);
    *doubt = fabs(p - middle) <= window * p ? (double)high - (double)low : 0.0;
    return bf16_round(f);
}

/*
 * Attention in double for the output rows `rows` (token indices; NULL: every token), FA2 form
 * over key blocks of 64. `bf16`: Q, K, V rounded to BF16 and P = exp(s − running max) rounded
 * too (the normaliser sums unrounded P); otherwise exact attention. out [n, d], lse [H, n] and
 * slack [n, d] (the doubt of near-boundary P, weighted by |v| and normalised like out). Causal
 * shapes: row i's keys end at i + 1 (its last block is cut there, so its running max is taken
 * over the keys it sees, as the kernels take it).
 */
static void reference(const uform__attention_shape_t *shape, const float *qkv32, const size_t *rows, int bf16,
                      double *out, double *lse, double *slack) {
    size_t H = shape->heads, dh = shape->head_width, d = H * dh, T = shape->tokens;
    size_t n = rows ? shape->count : T;
    double scale = 1.0 / sqrt((double)dh);
    double *qkv = malloc((T * 3 * d + 1) * sizeof(double));
    for (size_t i = 0; i < T * 3 * d; ++i) qkv[i] = bf16 ? bf16_round(qkv32[i]) : qkv32[i];
    double *s = malloc(reference_block * sizeof(double)), *acc = malloc(dh * sizeof(double));
    double *doubt = malloc(dh * sizeof(double));
    for (size_t item = 0; item < shape->count; ++item) {
        size_t begin = shape->offsets[item], end = shape->offsets[item + 1];
        for (size_t h = 0; h < H; ++h)
            for (size_t i = begin; i < end; ++i) {
                size_t o = i; /* the output row */
                if (rows) {
                    if (i != rows[item]) continue;
                    o = item;
                }
                const double *q = qkv + i * 3 * d + h * dh;
                double m = -INFINITY, l = 0.0;
                for (size_t e = 0; e < dh; ++e) acc[e] = 0.0, doubt[e] = 0.0;
                size_t keys_end = shape->causal ? i + 1 : end;
                for (size_t k0 = begin; k0 < keys_end; k0 += reference_block) {
                    size_t cols = keys_end - k0 < reference_block ? keys_end - k0 : reference_block;
                    double tile_max = -INFINITY;
                    for (size_t c = 0; c < cols; ++c) {
                        const double *k = qkv + (k0 + c) * 3 * d + d + h * dh;
                        double dot = 0.0;
                        for (size_t e = 0; e < dh; ++e) dot += q[e] * k[e];
                        s[c] = dot * scale;
                        tile_max = s[c] > tile_max ? s[c] : tile_max;
                    }
                    double new_m = tile_max > m ? tile_max : m;
                    double rescale = k0 == begin ? 0.0 : exp(m - new_m);
                    l *= rescale;
                    for (size_t e = 0; e < dh; ++e) acc[e] *= rescale, doubt[e] *= rescale;
                    for (size_t c = 0; c < cols; ++c) {
                        const double *v = qkv + (k0 + c) * 3 * d + 2 * d + h * dh;
                        double p = exp(s[c] - new_m), p_doubt = 0.0;
                        l += p;
                        double weight = bf16 ? bf16_round_with_doubt(p, 6e-5, &p_doubt) : p;
                        for (size_t e = 0; e < dh; ++e) acc[e] += weight * v[e], doubt[e] += p_doubt * fabs(v[e]);
                    }
                    m = new_m;
                }
                for (size_t e = 0; e < dh; ++e) out[o * d + h * dh + e] = acc[e] / l, slack[o * d + h * dh + e] = doubt[e] / l;
                lse[h * n + o] = m + log(l);
            }
    }
    free(qkv), free(s), free(acc), free(doubt);
}

static double max_abs(const double *x, size_t n) {
    double most = 0.0;
    for (size_t i = 0; i < n; ++i) most = fabs(x[i]) > most ? fabs(x[i]) : most;
    return most;
}

/* Counts values outside |got − expected| ≤ absolute + slack[i] (slack may be NULL); prints the
 * first few with both values; answers the count and the largest |got − expected| in *worst. */
static size_t count_misses(const char *what, const float *got, const double *expected, const double *slack, size_t n,
                           double absolute, int quiet, double *worst) {
    size_t misses = 0;
    *worst = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double error = fabs((double)got[i] - expected[i]), tolerance = absolute + (slack ? slack[i] : 0.0);
        if (isnan(got[i]) || isnan(expected[i])) error = INFINITY;
        if (error > *worst) *worst = error;
        if (error > tolerance && misses++ < 5 && !quiet)
            fprintf(stderr, "  %s[%zu]: got %.9g, expected %.9g (tolerance %.3g)\n", what, i, got[i], expected[i],
                    tolerance);
    }
    return misses;
}

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                            UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                            UFORM_CPU_CLASS_AMD_GENOA};
enum { class_count = sizeof classes / sizeof classes[0] };

/* Runs one case on every class, all rows or (`one_query`) one query row per item, bidirectional
 * or `causal`. */
static void check_case(const attention_case_t *c, int one_query, uint64_t seed, int causal) {
    size_t offsets[9] = {0}, queries[8];
    for (size_t i = 0; i < c->count; ++i) offsets[i + 1] = offsets[i] + c->lengths[i];
    size_t T = offsets[c->count], H = c->heads, dh = c->head_width, d = H * dh;
    for (size_t i = 0; i < c->count; ++i) queries[i] = offsets[i] + (i * 37 + 5) % (c->lengths[i] ? c->lengths[i] : 1);
    uform__attention_shape_t shape = {T, H, dh, offsets, c->count, one_query ? queries : NULL, causal};
    CHECK_STATUS(uform__nn_check_attention(&shape, NULL), UFORM_OK);
    size_t n = one_query ? c->count : T;

    uint64_t state = seed;
    float *qkv = malloc((T * 3 * d + 1) * sizeof(float));
    test_fill(qkv, T * 3 * d, &state, 2.0f);
    double *out = malloc((n * d + 1) * sizeof(double)), *lse = malloc((H * n + 1) * sizeof(double));
    double *slack = malloc((n * d + 1) * sizeof(double)), *exact = malloc((n * d + 1) * sizeof(double));
    double *exact_lse = malloc((H * n + 1) * sizeof(double)), *unused = malloc((n * d + 1) * sizeof(double));
    reference(&shape, qkv, one_query ? queries : NULL, 1, out, lse, slack);
    reference(&shape, qkv, one_query ? queries : NULL, 0, exact, exact_lse, unused);
    double scale_out = max_abs(out, n * d), tight = 1e-5 * (scale_out > 0 ? scale_out : 1.0);
    double loose = 1.5e-2 * (scale_out > 0 ? scale_out : 1.0);
    for (size_t i = 0; i < n * d; ++i) slack[i] *= 1.0 + 1e-6; /* the slack's own rounding */

    float *got = malloc((n * d + 1) * sizeof(float)), *got_lse = malloc((H * n + 1) * sizeof(float));
    float *one = malloc((n * d + 1) * sizeof(float)), *one_lse = malloc((H * n + 1) * sizeof(float));
    char label[128];
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) {
            continue;
        }
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        const char *name = uform_cpu_class_name(classes[k]);
        memset(got, 0xFF, n * d * sizeof(float));
        kernels->attention_forward_bf16(&shape, qkv, got, got_lse, NULL);
        double worst, worst_exact;
        snprintf(label, sizeof label, "%s%s bf16 H=%zu dh=%zu%s out", causal ? "causal " : "", name, H, dh,
                 one_query ? " queries" : "");
        size_t misses = count_misses(label, got, out, slack, n * d, tight, 0, &worst);
        CHECK_MSG(misses == 0, "%s: %zu of %zu values beyond %.3g (+ slack) of the BF16-rounding reference, worst %.3g",
                  label, misses, n * d, tight, worst);
        misses = count_misses(label, got, exact, NULL, n * d, loose, 0, &worst_exact);
        CHECK_MSG(misses == 0, "%s: %zu of %zu values beyond %.3g of exact attention, worst %.3g", label, misses,
                  n * d, loose, worst_exact);
        snprintf(label, sizeof label, "%s%s bf16 H=%zu dh=%zu%s lse", causal ? "causal " : "", name, H, dh,
                 one_query ? " queries" : "");
        test_compare_f32(label, got_lse, lse, H * n, 2e-6, 2e-6);
        printf("%-14s H=%zu dh=%-3zu %s%s max|out| %.3g: vs BF16 reference %.2e, vs exact %.2e (%.2e of max|out|)\n",
               name, H, dh, causal ? "causal " : "", one_query ? "queries" : "all rows", scale_out, worst, worst_exact,
               worst_exact / (scale_out > 0 ? scale_out : 1.0));

        /* The tight check must see the rounding points: F32 compute misses it (on long items). */
        if (!one_query && T >= 64 && dh >= 13) {
            kernels->attention_forward(&shape, qkv, one, one_lse, NULL);
            double worst_f32;
            size_t f32_misses = count_misses(label, one, out, slack, n * d, tight, 1, &worst_f32);
            CHECK_MSG(f32_misses > 0, "%s: F32 compute also passes the BF16 reference (worst %.3g): the test is blind",
                      name, worst_f32);
        }

        /* Bit-identical whatever the thread count. */
        memcpy(one, got, n * d * sizeof(float));
        memcpy(one_lse, got_lse, H * n * sizeof(float));
        for (size_t threads = 2; threads <= 3; ++threads) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            memset(got, 0xFF, n * d * sizeof(float));
            memset(got_lse, 0xFF, H * n * sizeof(float));
            kernels->attention_forward_bf16(&shape, qkv, got, got_lse, &parallel);
            snprintf(label, sizeof label, "%s bf16 dh=%zu, %zu threads vs 1", name, dh, threads);
            test_compare_bits(label, got, one, n * d * sizeof(float));
            test_compare_bits(label, got_lse, one_lse, H * n * sizeof(float));
            pthread_mutex_destroy(&pool.lock);
        }
    }
    free(qkv), free(out), free(lse), free(slack), free(exact), free(exact_lse), free(unused);
    free(got), free(got_lse), free(one), free(one_lse);
}

/* A NaN in one item's Q, K or V must reach that item's output (all rows for K and V) and no
 * other item's. */
static void check_nan_propagates(void) {
    size_t offsets[] = {0, 70, 75};
    const size_t H = 1, dh = 16, d = 16, T = 75;
    uform__attention_shape_t shape = {T, H, dh, offsets, 2, NULL};
    float *qkv = malloc(T * 3 * d * sizeof(float)), *out = malloc(T * d * sizeof(float)), lse[75];
    for (int which = 0; which < 3; ++which) {
        uint64_t state = 11;
        test_fill(qkv, T * 3 * d, &state, 1.0f);
        size_t token = which == 0 ? 3 : 66; /* Q: row 3 only; K, V: a key in the second key block */
        qkv[token * 3 * d + (size_t)which * d + 5] = NAN;
        for (size_t k = 0; k < class_count; ++k) {
            if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
            uform__nn_kernels(classes[k])->attention_forward_bf16(&shape, qkv, out, lse, NULL);
            const char *name = uform_cpu_class_name(classes[k]), *part = which == 0 ? "q" : which == 1 ? "k" : "v";
            CHECK_MSG(isnan(out[3 * d + 5]), "%s: a NaN in %s gave out[3][5] = %g", name, part, out[3 * d + 5]);
            if (which > 0) /* a NaN key spoils every column, a NaN value its own column */
                CHECK_MSG(isnan(out[5]) && isnan(out[69 * d + 5]), "%s: a NaN in %s left rows 0 and 69 at %g, %g",
                          name, part, out[5], out[69 * d + 5]);
            if (which == 1) CHECK_MSG(isnan(out[0]), "%s: a NaN key left out[0][0] at %g", name, out[0]);
            if (which == 2) CHECK_MSG(!isnan(out[4]), "%s: a NaN in value column 5 spoiled column 4", name);
            if (which == 0) CHECK_MSG(!isnan(out[2 * d]), "%s: a NaN in query row 3 leaked into row 2", name);
            CHECK_MSG(!isnan(out[70 * d]) && !isnan(out[74 * d + 15]), "%s: a NaN in item 0 leaked into item 1", name);
        }
    }
    free(qkv), free(out);
}

/* Every slot of every class's table is filled; head widths the tiles cannot hold give NaN. */
static void check_tables(void) {
    for (int c = 0; c <= UFORM_CPU_CLASS_MONOVERSIONED; ++c) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels((uform_cpu_class_t)c);
        void *slots[sizeof(uform__nn_kernels_t) / sizeof(void *)];
        memcpy(slots, kernels, sizeof slots);
        size_t empty = 0;
        for (size_t s = 0; s < sizeof slots / sizeof slots[0]; ++s) empty += slots[s] == NULL;
        CHECK_MSG(empty == 0, "class %d (%s): %zu NULL slots", c, uform_cpu_class_name((uform_cpu_class_t)c), empty);
    }
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_INTEL_SAPPHIRE) == uform__nn_kernels(UFORM_CPU_CLASS_AMD_GENOA));
    CHECK(uform__nn_kernels(UFORM_CPU_CLASS_AMD_GENOA)->attention_forward ==
          uform__nn_kernels(UFORM_CPU_CLASS_INTEL_SKYLAKE)->attention_forward);

    size_t offsets[] = {0, 3};
    uform__attention_shape_t shape = {3, 1, 129, offsets, 1, NULL};
    float qkv[3 * 3 * 129] = {0}, out[3 * 129], lse[3];
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        uform__nn_kernels(classes[k])->attention_forward_bf16(&shape, qkv, out, lse, NULL);
        CHECK_MSG(isnan(out[0]) && isnan(out[3 * 129 - 1]) && isnan(lse[2]), "%s: head width 129 gave %g, %g",
                  uform_cpu_class_name(classes[k]), out[0], lse[2]);
    }
}

/* ---- Rounding pinned bit for bit, on inputs where everything else is exact ----
 *
 * nn.h's rounding points cannot all be pinned bit for bit: p = exp(s − m) is the class's own exp,
 * and the normaliser sums F32 p in a class-specific order, so on general inputs only a tolerance
 * (with the doubt of near-boundary p, above) can judge them. On these inputs they can: every
 * query row is G·(x, y, 0, …) with x = 1 + 2^-10 and y = 1 + 2^-9, which both round to 1 in BF16;
 * the 32 "matching" keys of an item are (1 + δ, 0, …) or (0, 1 + δ, …) with δ < 2^-8 (1 in BF16),
 * spread over several 64-key blocks with none in the first; every other key is (−256, 0, …). With
 * Q and K rounded as documented every matching score is exactly scale·G and every other one is
 * 257 below it, so p is exp(0) or (nearly) 0 — exp(−257) is 0 or 2^-149 — and the first block's
 * running max is rescaled away; where exp(0) is 1, l = 32 and out = Σ bf16(v_j) / 32 over the
 * matching keys exactly (SKYLAKE's exp gives 1 + 2^-23, hence a slack of a few ulps there): exact for
 * values of 12 significant bits, whose BF16 rounding is visible. Without Q's rounding the two
 * kinds of matching keys would score differently, without K's the matching keys would, and
 * without V's the sum would be Σ v_j: each gives another out. The backward's dV is then exactly
 * Σ_r bf16(p_rc)·bf16(dout_r) with bf16(p) = 2^-5 (p = exp(s − lse) is within a few ulps of 1/32,
 * far from a BF16 boundary) for matching keys and 0 for the others. */

static void check_exact_rounding(void) {
    enum { H = 2, dh = 64, d = H * dh, T = 233, matching = 32 };
    size_t offsets[3] = {0, 200, 233};
    uform__attention_shape_t shape = {T, H, dh, offsets, 2, NULL};
    /* matching keys: item 0 tokens 70..85 and 140..155 (blocks 2 and 3), item 1 tokens 205..220 */
    int match[T] = {0};
    for (size_t j = 0; j < 16; ++j) match[70 + j] = match[140 + j] = match[205 + j] = 1;
    float *qkv = calloc(T * 3 * d, sizeof(float)), *out = malloc(T * d * sizeof(float)), *lse = malloc(H * T * sizeof(float));
    int64_t *v_int = malloc(T * d * sizeof(int64_t)), *dout_int = malloc(T * d * sizeof(int64_t));
    float *dout = malloc(T * d * sizeof(float)), *deltas = malloc(H * T * sizeof(float)), *dqkv = malloc(T * 3 * d * sizeof(float));
    uint64_t state = 0xE7AC7;
    const float G = 8.0f, x = 1.0f + 0x1p-10f, y = 1.0f + 0x1p-9f, deltas_k[4] = {0.0f, 0x1p-10f, 0x1p-9f, 0x3p-10f};
    for (size_t t = 0; t < T; ++t)
        for (size_t h = 0; h < H; ++h) {
            float *q = qkv + t * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
            q[0] = G * x, q[1] = G * y;
            if (match[t]) k[t % 2] = 1.0f + deltas_k[(t / 2) % 4];
            else k[0] = -256.0f;
            for (size_t e = 0; e < dh; ++e) {
                int64_t a = (int64_t)(check_random_next(&state) % 4095) - 2047, b = (int64_t)(check_random_next(&state) % 4095) - 2047;
                v_int[t * d + h * dh + e] = a, dout_int[t * d + h * dh + e] = b;
                v[e] = ldexpf((float)a, -8), dout[t * d + h * dh + e] = ldexpf((float)b, -8);
            }
        }
    /* out: Σ over the item's matching keys of bf16(v) / 32 (item 1: 16 keys); dV: Σ over the
     * item's rows of bf16(dout) / 32 (or / 16) for a matching key, 0 for the others. */
    double *want = malloc(T * d * sizeof(double)), *unrounded = malloc(T * d * sizeof(double));
    double *want_dv = malloc(T * d * sizeof(double)), *magnitude = malloc(T * d * sizeof(double));
    for (size_t item = 0; item < 2; ++item) {
        size_t begin = offsets[item], end = offsets[item + 1], count = item ? 16 : matching;
        for (size_t c = 0; c < d; ++c) {
            int64_t rounded = 0, plain = 0, rows = 0, absolute = 0;
            for (size_t j = begin; j < end; ++j) {
                if (match[j]) rounded += test_round_bits(v_int[j * d + c], 8), plain += v_int[j * d + c];
                if (match[j]) absolute += llabs(test_round_bits(v_int[j * d + c], 8));
                rows += test_round_bits(dout_int[j * d + c], 8);
            }
            for (size_t i = begin; i < end; ++i) {
                want[i * d + c] = ldexp((double)rounded, -8) / (double)count;
                unrounded[i * d + c] = ldexp((double)plain, -8) / (double)count;
                magnitude[i * d + c] = ldexp((double)absolute, -8) / (double)count;
                want_dv[i * d + c] = match[i] ? ldexp((double)rows, -8) / (double)count : 0.0;
            }
        }
    }
    size_t differs = 0;
    for (size_t i = 0; i < T * d; ++i) differs += (float)want[i] != (float)unrounded[i];
    CHECK_MSG(differs > T * d / 2, "exact rounding: V's rounding changes only %zu of %zu outputs", differs, (size_t)(T * d));
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        const char *name = uform_cpu_class_name(classes[k]);
        kernels->attention_forward_bf16(&shape, qkv, out, lse, NULL);
        /* SKYLAKE's base-2 exp (ICELAKE and GENOA use it too) gives exp(0) = 1 + 2^-23, so there
         * l sums n values 1 + 2^-23 in F32 (each addition rounding by up to 2^-24), a running
         * max that stays put still rescales acc and l by exp(0) at each of up to 3 later blocks
         * (2^-23 + 2^-24 each, relative to the partial Σ|v|/n), and out is acc / l: a slack of
         * (n + 3)·2^-24·|out| + 12·2^-24·Σ|bf16(v)|/n, at most 4e-6 here, where a missing
         * rounding of Q, K or V moves out by about 1e-3 (V's per-value 2^-9, Q's and K's 2^-10 in
         * the scores). SERIAL and HASWELL, whose exp(0) is 1, must be exact. */
        int exact_exp = classes[k] == UFORM_CPU_CLASS_SERIAL || classes[k] == UFORM_CPU_CLASS_INTEL_HASWELL;
        size_t wrong = 0, first = 0;
        for (size_t i = 0; i < T * d; ++i) {
            double slack = exact_exp ? 0.0
                                     : (double)((i / d < 200 ? matching : 16) + 3) * ldexp(fabs(want[i]), -24) +
                                           12.0 * ldexp(magnitude[i], -24);
            if (!(fabs((double)out[i] - want[i]) <= slack) && wrong++ == 0) first = i;
        }
        CHECK_MSG(wrong == 0, "%s: attention_forward_bf16 on exact inputs: %zu of %zu outputs differ from Σ bf16(v)/n%s "
                  "(first [%zu, %zu]: %.9g, expected %.9g)", name, wrong, (size_t)(T * d), exact_exp ? "" : " beyond the slack of exp(0) = 1 + 2^-23",
                  first / d, first % d, wrong ? out[first] : 0.0f, wrong ? want[first] : 0.0);
        wrong = 0;
        for (size_t h = 0; h < H; ++h)
            for (size_t i = 0; i < T; ++i) {
                double expected = 1.0 + log(i < 200 ? 32.0 : 16.0); /* m = scale·G = 1 */
                if (!(fabs(lse[h * T + i] - expected) <= 2e-6 * expected)) wrong += 1;
            }
        CHECK_MSG(wrong == 0, "%s: lse on exact inputs is not 1 + ln(n)", name);
        /* F32 compute rounds nothing, so it must miss these outputs. */
        float *f32_out = malloc(T * d * sizeof(float)), *f32_lse = malloc(H * T * sizeof(float));
        kernels->attention_forward(&shape, qkv, f32_out, f32_lse, NULL);
        size_t same = 0;
        for (size_t i = 0; i < T * d; ++i) same += (double)f32_out[i] == want[i];
        CHECK_MSG(same < T * d / 2, "%s: F32 attention gives %zu of %zu of the BF16 outputs: the inputs are blind", name,
                  same, (size_t)(T * d));
        free(f32_out), free(f32_lse);
        kernels->attention_backward_bf16(&shape, qkv, out, lse, dout, deltas, dqkv, NULL);
        wrong = 0;
        for (size_t t = 0; t < T; ++t)
            for (size_t c = 0; c < d; ++c) {
                double got = dqkv[t * 3 * d + 2 * d + c];
                if (!(got == want_dv[t * d + c]) && wrong++ == 0) first = t * d + c;
            }
        CHECK_MSG(wrong == 0, "%s: attention_backward_bf16's dV on exact inputs: %zu of %zu differ from Σ bf16(p)·bf16(dout) "
                  "(first [%zu, %zu]: %.9g, expected %.9g)", name, wrong, (size_t)(T * d), first / d, first % d,
                  wrong ? dqkv[(first / d) * 3 * d + 2 * d + first % d] : 0.0f, wrong ? want_dv[first] : 0.0);
        printf("%-14s exact inputs: out %s, dV bit for bit as nn.h's roundings give them\n", name,
               exact_exp ? "bit for bit" : "within the slack of exp(0) = 1 + 2^-23");
    }
    free(qkv), free(out), free(lse), free(v_int), free(dout_int), free(dout), free(deltas), free(dqkv);
    free(want), free(unrounded), free(want_dv), free(magnitude);
}

/* Built twice from this file (nn.cmake): test_nn_attention_bf16 runs the bidirectional shapes,
 * test_nn_attention_causal_bf16 (NN_ATTENTION_CAUSAL = 1) the causal ones (test_nn_attention.c
 * says why two). */
#ifndef NN_ATTENTION_CAUSAL
#define NN_ATTENTION_CAUSAL 0
#endif

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0xBF16A77Eull;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    /* Also an item of four whole key blocks between ragged ones, and an odd head width (31: its
     * last BF16 pair is half padding). */
    const attention_case_t more[] = {{2, 64, 3, {65, 256, 33}}, {1, 31, 1, {200}}};
    const attention_case_t queries_case = {6, 64, 5, {1, 197, 64, 65, 130}};
    const int causal = NN_ATTENTION_CAUSAL;
    for (size_t i = 0; i < nn_attention_case_count; ++i) check_case(&nn_attention_cases[i], 0, seed + i, causal);
    for (size_t i = 0; i < sizeof more / sizeof more[0]; ++i)
        check_case(&more[i], 0, seed + nn_attention_case_count + i, causal);
    check_case(&queries_case, 1, seed + 100, causal);
    if (causal) {
        for (size_t i = 0; i < nn_attention_causal_case_count; ++i) {
            check_case(&nn_attention_causal_cases[i], 0, seed + 200 + i, 1);
            check_case(&nn_attention_causal_cases[i], 1, seed + 300 + i, 1);
        }
    } else {
        check_nan_propagates();
        check_tables();
        check_exact_rounding();
    }
    return check_finish();
}
