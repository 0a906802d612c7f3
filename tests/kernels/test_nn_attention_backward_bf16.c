/*
 * attention_backward_bf16 on every class this machine runs:
 *   - against a double-precision reference that rounds exactly where nn.h says (BF16 Q, K, V
 *     and dO in S, dP and dV, P after dS took it; D and dS from unrounded values; dK and dQ from
 *     the unrounded dS, Q and K), within 1e-5 of each gradient's max magnitude (dq, dk, dv apart)
 *     plus, per element of dv, the weight of the few P values so close to a BF16 rounding
 *     boundary that a class's F32 noise may round them either way;
 *   - against exact gradients in double (no rounding, exact softmax) within 2e-2 of each
 *     gradient's max magnitude for inputs of unit scale, 1e-1 for a peaked softmax (inputs ×4,
 *     scores of ~±20 whose BF16 operands move them by ~0.1) and for head width 1 (a handful of
 *     products per gradient): BF16's own error. Over seeds 10..60 the worst were 6.5e-3 at unit
 *     scale and 7.0e-2 peaked or at head width 1 (8.1e-3 and 6.9e-2 when dS was rounded too);
 *     the run prints its own;
 *   - F32 compute (attention_backward) must miss the tight tolerance, so the test sees the
 *     rounding points;
 *   - lengths 1, odd, 64, 65, 197, 256, an empty item; head widths 1, 13, 31, 64, 128; peaked
 *     softmax (inputs ×4); D stored; NaN stays in its item; bit-identical results on 1, 2 and 3
 *     threads; head widths the tiles cannot hold give NaN;
 *   - causal shapes (the shape's `causal`) through the same checks, the references summing each
 *     row over its item's keys up to itself: the cases above, and items of 1, 2, 15, 16, 17, 77
 *     and 300 tokens at head widths 32, 64 and 128.
 * out and lse come from SERIAL's attention_forward_bf16, the same for every class.
 */
#include "kernels/nn_attention_test_cases.h"
#include "kernels/nn_test_support.h"
#include "common/skip.h"

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

/* x rounded to BF16 (through F32, as the kernels round their F32 values); *doubt receives the
 * gap between |x|'s two BF16 neighbours when |x| lies within `window` of their midpoint (where a
 * kernel's F32 value, that far off, may round the other way), else 0. */
static double bf16_round_with_doubt(double x, double window, double *doubt) {
    float f = (float)fabs(x);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t low_bits = bits & 0xFFFF0000u, high_bits = low_bits + 0x10000u;
    float low, high;
    memcpy(&low, &low_bits, sizeof low);
    memcpy(&high, &high_bits, sizeof high);
    double middle = 0.5 * ((double)low + (double)high);
    *doubt = fabs(fabs(x) - middle) <= window ? (double)high - (double)low : 0.0;
    return bf16_round((float)x);
}

/* How far a class's F32 p and dS may sit from the double values (relative for p; dS adds what the
 * F32 sums of dp and D may be off): the F32 score sums, the vector exp (~3e-7 + 2^-23·|argument|)
 * and F32 roundings, with room to spare. A p that close to a BF16 boundary may round either way
 * (dV's slack); dS is not rounded, so its F32 error reaches dK and dQ in proportion (their slack). */
enum { p_window_ppm = 60 };
static const double sum_relative = 1e-5;

typedef struct gradients_t {
    double *dqkv, *slack; /* [T, 3d] each; slack only with BF16 roundings */
} gradients_t;

/*
 * The backward in double for the given out and lse (as F32 values), one query row at a time.
 * `bf16`: the roundings of nn.h's attention_backward_bf16, with the slack of near-boundary P and
 * dS; otherwise exact gradients (P from lse, which must then be the exact one). Causal shapes:
 * row i over keys begin .. i only.
 */
static void reference(const uform__attention_shape_t *shape, const float *qkv32, const float *dout32,
                      const float *out32, const float *lse32, int bf16, gradients_t *result) {
    size_t H = shape->heads, dh = shape->head_width, d = H * dh, T = shape->tokens;
    double scale = 1.0 / sqrt((double)dh);
    double *qkv = malloc((T * 3 * d + 1) * sizeof(double)), *g = malloc((T * d + 1) * sizeof(double));
    double *qkv_exact = malloc((T * 3 * d + 1) * sizeof(double)); /* dK's and dQ's operands */
    for (size_t i = 0; i < T * 3 * d; ++i) qkv[i] = bf16 ? bf16_round(qkv32[i]) : qkv32[i], qkv_exact[i] = qkv32[i];
    for (size_t i = 0; i < T * d; ++i) g[i] = bf16 ? bf16_round(dout32[i]) : dout32[i];
    double *dqkv = result->dqkv, *slack = result->slack;
    memset(dqkv, 0, T * 3 * d * sizeof(double));
    if (slack) memset(slack, 0, T * 3 * d * sizeof(double));
    for (size_t item = 0; item < shape->count; ++item) {
        size_t begin = shape->offsets[item], end = shape->offsets[item + 1];
        for (size_t h = 0; h < H; ++h)
            for (size_t i = begin; i < end; ++i) {
                const double *q = qkv + i * 3 * d + h * dh, *gi = g + i * d + h * dh;
                const double *q_exact = qkv_exact + i * 3 * d + h * dh;
                double delta = 0.0, delta_magnitude = 0.0;
                for (size_t e = 0; e < dh; ++e) {
                    double term = (double)dout32[i * d + h * dh + e] * (double)out32[i * d + h * dh + e];
                    delta += term, delta_magnitude += fabs(term);
                }
                for (size_t j = begin; j < (shape->causal ? i + 1 : end); ++j) {
                    const double *k = qkv + j * 3 * d + d + h * dh, *v = k + d;
                    const double *k_exact = qkv_exact + j * 3 * d + d + h * dh;
                    double s = 0.0, dp = 0.0, dp_magnitude = 0.0;
                    for (size_t e = 0; e < dh; ++e) s += q[e] * k[e];
                    for (size_t e = 0; e < dh; ++e) dp += gi[e] * v[e], dp_magnitude += fabs(gi[e] * v[e]);
                    double p = exp(s * scale - (double)lse32[h * T + i]);
                    double ds = p * (dp - delta), p_doubt = 0.0, p_used = p;
                    if (bf16) p_used = bf16_round_with_doubt(p, p * p_window_ppm * 1e-6, &p_doubt);
                    double *dq = dqkv + i * 3 * d + h * dh, *dk = dqkv + j * 3 * d + d + h * dh, *dv = dk + d;
                    for (size_t e = 0; e < dh; ++e) {
                        dq[e] += scale * ds * k_exact[e];
                        dk[e] += scale * ds * q_exact[e];
                        dv[e] += p_used * gi[e];
                    }
                    if (slack) {
                        double ds_error = p * sum_relative * (dp_magnitude + delta_magnitude) +
                                          fabs(ds) * (p_window_ppm * 1e-6 + 1e-6);
                        double *sq = slack + i * 3 * d + h * dh, *sk = slack + j * 3 * d + d + h * dh, *sv = sk + d;
                        for (size_t e = 0; e < dh; ++e) {
                            sq[e] += scale * ds_error * fabs(k_exact[e]);
                            sk[e] += scale * ds_error * fabs(q_exact[e]);
                            sv[e] += p_doubt * fabs(gi[e]);
                        }
                    }
                }
            }
    }
    free(qkv), free(qkv_exact), free(g);
}

/* The exact forward's lse in double, for the exact gradients. */
static void exact_lse(const uform__attention_shape_t *shape, const float *qkv, float *lse) {
    size_t H = shape->heads, dh = shape->head_width, d = H * dh, T = shape->tokens;
    double scale = 1.0 / sqrt((double)dh);
    for (size_t item = 0; item < shape->count; ++item) {
        size_t begin = shape->offsets[item], end = shape->offsets[item + 1];
        for (size_t h = 0; h < H; ++h)
            for (size_t i = begin; i < end; ++i) {
                double max = -INFINITY, sum = 0.0;
                for (int pass = 0; pass < 2; ++pass)
                    for (size_t j = begin; j < (shape->causal ? i + 1 : end); ++j) {
                        double s = 0.0;
                        for (size_t e = 0; e < dh; ++e)
                            s += (double)qkv[i * 3 * d + h * dh + e] * (double)qkv[j * 3 * d + d + h * dh + e];
                        s *= scale;
                        if (pass == 0) max = s > max ? s : max;
                        else sum += exp(s - max);
                    }
                lse[h * T + i] = (float)(max + log(sum));
            }
    }
}

/* The largest |x| over the rows' part `part` (0: q, 1: k, 2: v) of [T, 3d]. */
static double part_max(const double *x, size_t T, size_t d, size_t part) {
    double most = 0.0;
    for (size_t t = 0; t < T; ++t)
        for (size_t e = 0; e < d; ++e) {
            double value = fabs(x[t * 3 * d + part * d + e]);
            most = value > most ? value : most;
        }
    return most > 0.0 ? most : 1.0;
}

/* Counts values of part `part` outside |got − expected| ≤ tolerance·max|expected part| + slack;
 * prints the first few with both values (unless quiet); *worst gets the largest error relative
 * to the part's max magnitude. */
static size_t count_misses(const char *what, const float *got, const double *expected, const double *slack, size_t T,
                           size_t d, size_t part, double tolerance, int quiet, double *worst) {
    static const char *names[3] = {"dq", "dk", "dv"};
    double most = part_max(expected, T, d, part), absolute = tolerance * most;
    size_t misses = 0;
    *worst = 0.0;
    for (size_t t = 0; t < T; ++t)
        for (size_t e = 0; e < d; ++e) {
            size_t i = t * 3 * d + part * d + e;
            double error = fabs((double)got[i] - expected[i]);
            double allowed = absolute + (slack ? slack[i] * (1.0 + 1e-6) : 0.0); /* the slack's own rounding */
            if (isnan(got[i]) || isnan(expected[i])) error = INFINITY;
            if (error / most > *worst) *worst = error / most;
            if (error > allowed && misses++ < 5 && !quiet)
                fprintf(stderr, "  %s %s[token %zu][%zu]: got %.9g, expected %.9g (allowed %.3g)\n", what, names[part],
                        t, e, got[i], expected[i], allowed);
        }
    return misses;
}

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                            UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                            UFORM_CPU_CLASS_AMD_GENOA};
enum { class_count = sizeof classes / sizeof classes[0] };

static double worst_exact_unit = 0.0, worst_exact_loose = 0.0;

static void check_case(const attention_case_t *c, float spread, uint64_t seed, int causal) {
    size_t offsets[9] = {0};
    for (size_t i = 0; i < c->count; ++i) offsets[i + 1] = offsets[i] + c->lengths[i];
    size_t T = offsets[c->count], H = c->heads, dh = c->head_width, d = H * dh;
    uform__attention_shape_t shape = {T, H, dh, offsets, c->count, NULL, causal};
    CHECK_STATUS(uform__nn_check_attention(&shape, NULL), UFORM_OK);

    uint64_t state = seed;
    float *qkv = malloc((T * 3 * d + 1) * sizeof(float)), *dout = malloc((T * d + 1) * sizeof(float));
    float *out = malloc((T * d + 1) * sizeof(float)), *lse = malloc((H * T + 1) * sizeof(float));
    float *out_exact = malloc((T * d + 1) * sizeof(float)), *lse_exact = malloc((H * T + 1) * sizeof(float));
    test_fill(qkv, T * 3 * d, &state, 2.0f * spread);
    test_fill(dout, T * d, &state, 1.0f);
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_forward_bf16(&shape, qkv, out, lse, NULL);
    /* Exact gradients need the exact forward's out (for D) and lse. */
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_forward(&shape, qkv, out_exact, lse_exact, NULL);
    exact_lse(&shape, qkv, lse_exact);

    size_t n = T * 3 * d;
    gradients_t expected = {malloc((n + 1) * sizeof(double)), malloc((n + 1) * sizeof(double))};
    gradients_t exact = {malloc((n + 1) * sizeof(double)), NULL};
    reference(&shape, qkv, dout, out, lse, 1, &expected);
    reference(&shape, qkv, dout, out_exact, lse_exact, 0, &exact);

    float *got = malloc((n + 1) * sizeof(float)), *one = malloc((n + 1) * sizeof(float));
    float *deltas = malloc((H * T + 1) * sizeof(float));
    char label[160];
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) {
            continue;
        }
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        const char *name = uform_cpu_class_name(classes[k]);
        memset(got, 0xFF, n * sizeof(float));
        memset(deltas, 0xFF, H * T * sizeof(float));
        kernels->attention_backward_bf16(&shape, qkv, out, lse, dout, deltas, got, NULL);
        double worst[3], worst_exact[3];
        for (size_t part = 0; part < 3; ++part) {
            snprintf(label, sizeof label, "%s%s bf16 backward H=%zu dh=%zu spread %g", causal ? "causal " : "", name, H,
                     dh, spread);
            size_t misses = count_misses(label, got, expected.dqkv, expected.slack, T, d, part, 1e-5, 0, &worst[part]);
            CHECK_MSG(misses == 0, "%s: %zu values of part %zu beyond 1e-5 of max (+ slack) of the BF16 reference",
                      label, misses, part);
            int loose = spread > 1.0f || dh == 1;
            double bound = loose ? 1e-1 : 2e-2;
            misses = count_misses(label, got, exact.dqkv, NULL, T, d, part, bound, 0, &worst_exact[part]);
            CHECK_MSG(misses == 0, "%s: %zu values of part %zu beyond %.3g of max of the exact gradients, worst %.3g",
                      label, misses, part, bound, worst_exact[part]);
            double *seen = loose ? &worst_exact_loose : &worst_exact_unit;
            if (worst_exact[part] > *seen) *seen = worst_exact[part];
        }
        printf("%-14s H=%zu dh=%-3zu spread %g%s: vs BF16 reference %.1e %.1e %.1e, vs exact %.1e %.1e %.1e "
               "(dq dk dv, of max)\n",
               name, H, dh, spread, causal ? " causal" : "", worst[0], worst[1], worst[2], worst_exact[0], worst_exact[1], worst_exact[2]);

        /* D: the F32 backward's, which the F32 tests check. */
        float *deltas_f32 = malloc((H * T + 1) * sizeof(float));
        kernels->attention_backward(&shape, qkv, out, lse, dout, deltas_f32, one, NULL);
        snprintf(label, sizeof label, "%s bf16 backward deltas H=%zu dh=%zu", name, H, dh);
        test_compare_f32_f32(label, deltas, deltas_f32, H * T, 0.0, 0.0);
        free(deltas_f32);

        /* The tight check must see the rounding points: F32 compute misses it (on long items). */
        if (T >= 64 && dh >= 13) {
            size_t f32_misses = 0;
            double unused;
            for (size_t part = 0; part < 3; ++part)
                f32_misses += count_misses(label, one, expected.dqkv, expected.slack, T, d, part, 1e-5, 1, &unused);
            CHECK_MSG(f32_misses > 0, "%s: F32 compute also passes the BF16 reference: the test is blind", name);
        }

        /* Bit-identical whatever the thread count. */
        memcpy(one, got, n * sizeof(float));
        for (size_t threads = 2; threads <= 3; ++threads) {
            test_pool_t pool;
            uform__parallel_t parallel;
            test_parallel_init(&parallel, &pool, threads);
            memset(got, 0xFF, n * sizeof(float));
            kernels->attention_backward_bf16(&shape, qkv, out, lse, dout, deltas, got, &parallel);
            snprintf(label, sizeof label, "%s bf16 backward dh=%zu, %zu threads vs 1", name, dh, threads);
            test_compare_bits(label, got, one, n * sizeof(float));
            pthread_mutex_destroy(&pool.lock);
        }
    }
    free(qkv), free(dout), free(out), free(lse), free(out_exact), free(lse_exact);
    free(expected.dqkv), free(expected.slack), free(exact.dqkv), free(got), free(one), free(deltas);
}

/* A NaN in one item's Q must reach that item's gradients and no other item's. */
static void check_nan_propagates(void) {
    size_t offsets[] = {0, 70, 75};
    const size_t H = 1, dh = 16, d = 16, T = 75;
    uform__attention_shape_t shape = {T, H, dh, offsets, 2, NULL};
    float *qkv = malloc(T * 3 * d * sizeof(float)), *dout = malloc(T * d * sizeof(float));
    float *out = malloc(T * d * sizeof(float)), *dqkv = malloc(T * 3 * d * sizeof(float)), lse[75], deltas[75];
    uint64_t state = 11;
    test_fill(qkv, T * 3 * d, &state, 1.0f);
    test_fill(dout, T * d, &state, 1.0f);
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->attention_forward_bf16(&shape, qkv, out, lse, NULL);
    qkv[3 * 3 * d + 5] = NAN; /* q of token 3 */
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        const char *name = uform_cpu_class_name(classes[k]);
        uform__nn_kernels(classes[k])->attention_backward_bf16(&shape, qkv, out, lse, dout, deltas, dqkv, NULL);
        CHECK_MSG(isnan(dqkv[3 * 3 * d]) && isnan(dqkv[66 * 3 * d + d]), "%s: a NaN in q[3] gave dq[3] %g, dk[66] %g",
                  name, dqkv[3 * 3 * d], dqkv[66 * 3 * d + d]);
        int clean = 1;
        for (size_t i = 70 * 3 * d; i < T * 3 * d; ++i) clean &= !isnan(dqkv[i]);
        CHECK_MSG(clean, "%s: a NaN in item 0 leaked into item 1's gradients", name);
    }
    free(qkv), free(dout), free(out), free(dqkv);
}

static void check_unsupported_width(void) {
    size_t offsets[] = {0, 3};
    uform__attention_shape_t shape = {3, 1, 129, offsets, 1, NULL};
    float qkv[3 * 3 * 129] = {0}, out[3 * 129] = {0}, dqkv[3 * 3 * 129], lse[3] = {0}, deltas[3];
    for (size_t k = 0; k < class_count; ++k) {
        if (!check_class_runs_unless_serial_left_to_native(classes[k])) continue;
        uform__nn_kernels(classes[k])->attention_backward_bf16(&shape, qkv, out, lse, out, deltas, dqkv, NULL);
        CHECK_MSG(isnan(dqkv[0]) && isnan(dqkv[3 * 3 * 129 - 1]), "%s: head width 129 gave %g, %g",
                  uform_cpu_class_name(classes[k]), dqkv[0], dqkv[3 * 3 * 129 - 1]);
    }
}

/* Built twice from this file (nn.cmake): test_nn_attention_backward_bf16 runs the bidirectional
 * shapes, test_nn_attention_causal_backward_bf16 (NN_ATTENTION_CAUSAL = 1) the causal ones
 * (test_nn_attention.c says why two). */
#ifndef NN_ATTENTION_CAUSAL
#define NN_ATTENTION_CAUSAL 0
#endif

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0xBF16BAC4ull;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    /* An item of four whole blocks between ragged ones; an odd head width (31: a half-padded
     * BF16 pair); a peaked softmax. */
    const attention_case_t more[] = {{2, 64, 3, {65, 256, 33}}, {1, 31, 1, {200}}, {6, 64, 2, {197, 3}}};
    const int causal = NN_ATTENTION_CAUSAL;
    for (size_t i = 0; i < nn_attention_case_count; ++i) check_case(&nn_attention_cases[i], 1.0f, seed + i, causal);
    for (size_t i = 0; i < sizeof more / sizeof more[0]; ++i)
        check_case(&more[i], i == 2 ? 4.0f : 1.0f, seed + nn_attention_case_count + i, causal);
    if (causal)
        for (size_t i = 0; i < nn_attention_causal_case_count; ++i)
            check_case(&nn_attention_causal_cases[i], 1.0f, seed + 200 + i, 1);
    else {
        check_nan_propagates();
        check_unsupported_width();
    }
    printf("worst error against exact gradients, of the gradient's max magnitude: %.3g at unit scale (bound 2e-2), "
           "%.3g peaked or at head width 1 (bound 1e-1)\n",
           worst_exact_unit, worst_exact_loose);
    return check_finish();
}
