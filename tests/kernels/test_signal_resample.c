/*
 * The windowed-sinc resampler against torchaudio 0.13's functional.resample on random signals
 * (the rates the audio stem meets, plus up-sampling and odd ratios, short and long signals), then
 * its quality measured with sines: pass-band gain and the aliasing of tones above the new Nyquist.
 * Usage: test_signal_resample PYTHON SCRIPT [SEED].
 */
#include "core/cpu.h"
#include "kernels/signal.h"
#include "test_signal_common.h"

typedef struct resample_case_t {
    size_t samples, from, to;
} resample_case_t;

static const resample_case_t cases[] = {
    {44100, 44100, 16000}, {48000, 48000, 16000}, {8000, 8000, 16000},  {22050, 22050, 16000},
    {16000, 16000, 16000}, {4410, 16000, 44100},  {11025, 11025, 16000}, {32001, 32000, 16000},
    {1, 44100, 16000},     {3, 8000, 16000},      {100, 48000, 16000},   {220500, 44100, 16000},
    {777, 16000, 8000},    {5000, 96000, 16000},  {40000, 768000, 16000}, /* 580 taps: chunked edges */
};
#define CASES (sizeof(cases) / sizeof(cases[0]))

static void compare(const resample_case_t *c, const char *name, const float *x) {
    uform__signal_resample_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_resample_plan_init(&plan, c->from, c->to, &outcome), UFORM_OK);
    const size_t n = uform__signal_resample_length(&plan, c->samples);
    float *expected = malloc((n + 1) * sizeof(float)), *actual = malloc((n + 1) * sizeof(float)),
          *threaded = malloc((n + 1) * sizeof(float));
    if (signal_read(name, "f32", expected, n * sizeof(float))) {
        uform__signal_resample_f32(&plan, x, c->samples, actual, NULL, NULL);
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < n; ++i) {
            double d = fabs((double)actual[i] - expected[i]);
            if (isnan(d)) d = INFINITY;
            if (d > worst) worst = d, at = i;
        }
        CHECK_MSG(worst <= 1e-5, "%s %zu -> %zu: sample %zu: got %.9g, expected %.9g", name, c->from, c->to, at,
                  (double)actual[at], (double)expected[at]);
        printf("%-9s %6zu samples %5zu -> %5zu Hz (%zu/%zu, width %zu): %zu out, max |diff| %.3g\n", name, c->samples,
               c->from, c->to, plan.next, plan.orig, plan.width, n, worst);
        uform__signal_resample_f32(&plan, x, c->samples, threaded, uform__signal_kernels(uform__cpu_class_hardware()),
                                   &signal_pool);
        CHECK_MSG(memcmp(threaded, actual, n * sizeof(float)) == 0, "%s: 3 threads differ from serial", name);
    }
    free(expected), free(actual), free(threaded);
    uform__signal_resample_plan_free(&plan);
}

/* Resampling only the samples source_needed names gives the first outputs bit for bit. */
static void test_prefix(uint64_t *state) {
    static const size_t rates[][2] = {{44100, 16000}, {48000, 16000}, {8000, 16000}, {22050, 16000}, {16000, 44100},
                                      {16000, 16000}};
    const size_t count = 50000;
    float *x = malloc(count * sizeof(float)), *full = malloc(3 * count * sizeof(float)),
          *part = malloc(3 * count * sizeof(float));
    for (size_t t = 0; t < count; ++t) x[t] = check_random_float(state);
    for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); ++r) {
        uform__signal_resample_plan_t plan;
        CHECK_STATUS(uform__signal_resample_plan_init(&plan, rates[r][0], rates[r][1], NULL), UFORM_OK);
        uform__signal_resample_f32(&plan, x, count, full, NULL, NULL);
        static const size_t wanted[] = {1, 2, 159, 160, 161, 1000, 4097};
        for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); ++w) {
            size_t needed = uform__signal_resample_source_needed(&plan, wanted[w]);
            if (needed > count) needed = count;
            CHECK(uform__signal_resample_length(&plan, needed) >= wanted[w]);
            uform__signal_resample_f32(&plan, x, needed, part, NULL, NULL);
            CHECK_MSG(memcmp(part, full, wanted[w] * sizeof(float)) == 0,
                      "%zu -> %zu: the first %zu outputs from %zu samples differ from the full signal's", rates[r][0],
                      rates[r][1], wanted[w], needed);
            /* And it is tight: one sample fewer changes some output (or leaves too few). */
            if (needed > 1 && rates[r][0] != rates[r][1]) {
                uform__signal_resample_f32(&plan, x, needed - 1, part, NULL, NULL);
                CHECK_MSG(uform__signal_resample_length(&plan, needed - 1) < wanted[w] ||
                              memcmp(part, full, wanted[w] * sizeof(float)) != 0,
                          "%zu -> %zu: %zu outputs need fewer than %zu samples", rates[r][0], rates[r][1], wanted[w],
                          needed);
            }
        }
        uform__signal_resample_plan_free(&plan);
    }
    free(x), free(full), free(part);
}

/* Gain in dB of a unit sine at `hz` through from -> to, measured as output RMS over the middle half
 * (away from the zero-padded edges) against the input's 1/sqrt(2). */
static double gain_db(size_t from, size_t to, double hz) {
    uform__signal_resample_plan_t plan;
    if (uform__signal_resample_plan_init(&plan, from, to, NULL) != UFORM_OK) return NAN;
    const size_t count = from; /* one second */
    float *x = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) x[i] = (float)sin(2.0 * 3.14159265358979323846 * hz * (double)i / (double)from);
    const size_t n = uform__signal_resample_length(&plan, count);
    float *y = malloc(n * sizeof(float));
    uform__signal_resample_f32(&plan, x, count, y, NULL, NULL);
    double energy = 0;
    for (size_t i = n / 4; i < 3 * n / 4; ++i) energy += (double)y[i] * y[i];
    const double rms = sqrt(energy / (double)(3 * n / 4 - n / 4));
    free(x), free(y);
    uform__signal_resample_plan_free(&plan);
    return 20.0 * log10(rms * sqrt(2.0) + 1e-30);
}

static void quality(void) {
    /* 48 kHz -> 16 kHz: pass band up to 0.99 · 8 kHz, then the Hann-sinc's transition. */
    static const double pass[] = {100, 1000, 4000, 6000, 7000};
    static const double stop[] = {8500, 9000, 10000, 12000, 16000, 20000};
    double ripple = 0;
    for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); ++i) {
        const double g = gain_db(48000, 16000, pass[i]);
        printf("48000 -> 16000: %6.0f Hz pass  gain %+.4f dB\n", pass[i], g);
        if (pass[i] <= 6000 && fabs(g) > ripple) ripple = fabs(g);
        /* torchaudio's Hann-sinc of 6 zero crossings rolls off early: -1.8 dB at 7 kHz of 8. */
        if (pass[i] == 7000) CHECK_MSG(g > -2.5 && g < 0.0, "7 kHz gain %.3f dB", g);
    }
    double alias = -INFINITY;
    for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); ++i) {
        const double g = gain_db(48000, 16000, stop[i]);
        printf("48000 -> 16000: %6.0f Hz alias gain %+.2f dB\n", stop[i], g);
        if (g > alias) alias = g;
        /* The transition band is wide (8.5 kHz aliases at -11 dB, 9 kHz at -17 dB); from 10 kHz on
         * the alias must sit below -40 dB. */
        if (stop[i] >= 10000) CHECK_MSG(g < -40.0, "%.0f Hz aliases at %.2f dB", stop[i], g);
        if (stop[i] == 9000) CHECK_MSG(g < -15.0, "%.0f Hz aliases at %.2f dB", stop[i], g);
    }
    printf("48000 -> 16000: pass band (<= 6 kHz) within %.3f dB, worst alias of 8.5-20 kHz %.1f dB\n", ripple, alias);
    CHECK_MSG(ripple < 0.2, "pass band ripple %.3f dB", ripple);
    const double g1 = gain_db(44100, 16000, 1000.0), g2 = gain_db(44100, 16000, 12000.0);
    printf("44100 -> 16000: 1 kHz %+.4f dB, 12 kHz %+.2f dB\n", g1, g2);
    CHECK_MSG(fabs(g1) < 0.05, "44100 -> 16000 1 kHz gain %.4f dB", g1);
    CHECK_MSG(g2 < -40.0, "44100 -> 16000 12 kHz aliases at %.2f dB", g2);
}

static void test_errors(void) {
    uform__signal_resample_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_resample_plan_init(&plan, 0, 16000, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "0 -> 16000");
    /* Coprime rates of ~10^6 would need a bank of 10^12 taps. */
    CHECK_STATUS(uform__signal_resample_plan_init(&plan, 1000003, 999983, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "exceeds");
    uform__signal_resample_plan_free(&plan);
    uform__signal_resample_plan_free(&plan);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PYTHON SCRIPT [SEED]\n", argv[0]);
        return 2;
    }
    uint64_t state = signal_seed(argc, argv, 3);
    test_errors();
    if (!signal_directory_make()) return check_finish();
    float *inputs[CASES];
    char name[64];
    for (size_t i = 0; i < CASES; ++i) {
        inputs[i] = malloc(cases[i].samples * sizeof(float));
        /* Random walk plus white noise: energy at every frequency, in [-1, 1]. */
        float walk = 0;
        for (size_t t = 0; t < cases[i].samples; ++t) {
            walk = 0.98f * walk + 0.1f * check_random_float(&state);
            inputs[i][t] = 0.5f * walk + 0.3f * check_random_float(&state);
        }
        snprintf(name, sizeof(name), "resample%zu", i);
        signal_write(name, "in", inputs[i], cases[i].samples * sizeof(float));
        signal_case("resample %s %zu %zu %zu", name, cases[i].samples, cases[i].from, cases[i].to);
    }
    if (signal_run_reference(argv[1], argv[2]))
        for (size_t i = 0; i < CASES; ++i) {
            snprintf(name, sizeof(name), "resample%zu", i);
            compare(&cases[i], name, inputs[i]);
        }
    for (size_t i = 0; i < CASES; ++i) free(inputs[i]);
    signal_directory_remove();
    test_prefix(&state);
    quality();
    return check_finish();
}
