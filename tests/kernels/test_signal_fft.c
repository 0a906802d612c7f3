/*
 * The real FFT against a double-precision DFT (summed with exact-ish twiddles in long double):
 * lengths 1..64 all, radix-2/3/4/5 products, primes below the 64-point butterfly limit and above
 * it (Bluestein), Whisper's 400, large powers of two. Usage: test_signal_fft [PYTHON SCRIPT] [SEED] (the python
 * arguments are accepted for uniformity and unused).
 */
#include "kernels/signal.h"
#include "test_signal_common.h"

/* X[k] = Σ x[n]·exp(−2πi·k·n/N) in long double, from a table of the N roots indexed by (k·n) mod N
 * (exact angle reduction, and one sinl/cosl per root rather than per term). */
static void reference_dft(const float *x, size_t n, double *re, double *im) {
    const long double pi = 3.141592653589793238462643383279502884L;
    long double *cosines = malloc(n * sizeof(long double)), *sines = malloc(n * sizeof(long double));
    for (size_t t = 0; t < n; ++t) {
        const long double angle = -2.0L * pi * (long double)t / (long double)n;
        cosines[t] = cosl(angle), sines[t] = sinl(angle);
    }
    for (size_t k = 0; k <= n / 2; ++k) {
        long double sr = 0, si = 0;
        for (size_t t = 0, index = 0; t < n; ++t, index = (index + k) % n) {
            sr += (long double)x[t] * cosines[index];
            si += (long double)x[t] * sines[index];
        }
        re[k] = (double)sr, im[k] = (double)si;
    }
    free(cosines), free(sines);
}

/* Worst |X − X_ref| relative to sqrt(N)·rms(x) (the size of a typical bin), over all bins. */
static double fft_error(size_t n, uint64_t *state, int print) {
    uform__signal_fft_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_fft_plan_init(&plan, n, &outcome), UFORM_OK);
    float *x = malloc(n * sizeof(float)), *out = malloc((n / 2 + 1) * 2 * sizeof(float));
    float *scratch = malloc(uform__signal_fft_scratch_floats(&plan) * sizeof(float));
    double *re = malloc((n / 2 + 1) * sizeof(double)), *im = malloc((n / 2 + 1) * sizeof(double));
    double energy = 0.0;
    for (size_t t = 0; t < n; ++t) x[t] = check_random_float(state), energy += (double)x[t] * x[t];
    uform__signal_rfft_f32(&plan, x, out, scratch);
    reference_dft(x, n, re, im);
    const double unit = sqrt(energy) + 1e-30; /* sqrt(N)·rms */
    double worst = 0.0;
    size_t at = 0;
    for (size_t k = 0; k <= n / 2; ++k) {
        double d = hypot(out[2 * k] - re[k], out[2 * k + 1] - im[k]) / unit;
        if (isnan(d)) d = INFINITY;
        if (d > worst) worst = d, at = k;
    }
    /* float FFTs err by ~eps·log2(N); the generic O(p²) butterflies by ~eps·sqrt(p). 1e-5 is ~80 eps. */
    CHECK_MSG(worst <= 1e-5, "N=%zu bin %zu: got (%.9g, %.9g), expected (%.9g, %.9g), relative error %.3g", n, at,
              (double)out[2 * at], (double)out[2 * at + 1], re[at], im[at], worst);
    if (print) {
        printf("N=%-6zu factors", n);
        for (size_t s = 0; s < plan.factor_count; ++s) printf(" %zu", plan.factors[s]);
        if (plan.stage_length != plan.complex_length) printf(" (Bluestein over %zu)", plan.stage_length);
        printf(": max error %.3g of sqrt(N)·rms\n", worst);
    }
    free(x), free(out), free(scratch), free(re), free(im);
    uform__signal_fft_plan_free(&plan);
    return worst;
}

int main(int argc, char **argv) {
    uint64_t state = signal_seed(argc, argv, 3);
    double worst = 0.0;
    for (size_t n = 1; n <= 64; ++n) {
        const double e = fft_error(n, &state, 0);
        if (e > worst) worst = e;
    }
    printf("N=1..64: max error %.3g of sqrt(N)·rms\n", worst);
    static const size_t lengths[] = {97, 100, 128, 134, 210, 243, 286, 400, 401, 512, 625, 1000, 1024,
                                    4096, 4800, 122, 118, 6014, 10007, 2 * 61 * 67};
    for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); ++i) fft_error(lengths[i], &state, 1);

    /* A pure tone lands in one bin: exact structure, not just small error. */
    {
        uform__signal_fft_plan_t plan;
        CHECK_STATUS(uform__signal_fft_plan_init(&plan, 400, NULL), UFORM_OK);
        float x[400], out[402], scratch[800];
        for (size_t t = 0; t < 400; ++t) x[t] = (float)cos(2.0 * 3.14159265358979323846 * 7.0 * (double)t / 400.0);
        uform__signal_rfft_f32(&plan, x, out, scratch);
        CHECK_NEAR(out[14], 200.0, 1e-3, 0);
        CHECK_NEAR(out[15], 0.0, 1e-3, 0);
        CHECK_NEAR(out[16], 0.0, 1e-3, 0);
        CHECK_NEAR(out[0], 0.0, 1e-3, 0);
        uform__signal_fft_plan_free(&plan);
    }

    uform__signal_fft_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_fft_plan_init(&plan, 0, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "FFT length 0");
    uform__signal_fft_plan_free(&plan);
    return check_finish();
}
