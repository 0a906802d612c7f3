/*
 * STFT power against torch.stft (center=True, reflect, periodic Hann), the Slaney mel filters
 * against librosa's formula written independently in numpy (plus values derived by hand), and
 * Whisper's log-mel against whisper/audio.py's log_mel_spectrogram in torch, on random audio.
 * Usage: test_signal_mel PYTHON SCRIPT [SEED].
 */
#include "kernels/signal.h"
#include "test_signal_common.h"

typedef struct stft_case_t {
    size_t samples, n_fft, hop;
} stft_case_t;

static const stft_case_t stft_cases[] = {
    {16000, 400, 160}, {4001, 400, 160}, {201, 400, 160}, {3000, 512, 128}, {1001, 97, 31},
};
#define STFT_CASES (sizeof(stft_cases) / sizeof(stft_cases[0]))

typedef struct mel_case_t {
    size_t samples, mels;
    int kind; /* 0 noise, 1 tone + quiet noise, 2 speech-like bursts with digital silence */
} mel_case_t;

static const mel_case_t mel_cases[] = {
    {16000, 80, 0}, {160000, 80, 1}, {16000, 80, 2}, {480000, 80, 2}, {12345, 128, 1}, {400, 80, 0},
};
#define MEL_CASES (sizeof(mel_cases) / sizeof(mel_cases[0]))

static float *random_audio(uint64_t *state, size_t count, int kind) {
    float *x = malloc(count * sizeof(float));
    const double pi = 3.14159265358979323846;
    for (size_t i = 0; i < count; ++i) {
        const double t = (double)i / 16000.0, noise = check_random_float(state);
        if (kind == 0) x[i] = (float)(0.3 * noise);
        else if (kind == 1) x[i] = (float)(0.5 * sin(2 * pi * 440.0 * t) + 0.25 * sin(2 * pi * 3117.0 * t) + 1e-3 * noise);
        else {
            /* 0.3 s bursts of a gliding tone with noise, separated by exact zeros. */
            const int burst = ((size_t)(t / 0.3)) % 2 == 0;
            x[i] = burst ? (float)(0.4 * sin(2 * pi * (200.0 + 900.0 * t) * t) + 0.05 * noise) : 0.0f;
        }
    }
    return x;
}

static void test_filters(uint64_t *state) {
    /* Whisper's filters: (16000, 400, 80) and (16000, 400, 128) as large-v3 uses; one other size. */
    static const size_t shapes[][3] = {{16000, 400, 80}, {16000, 400, 128}, {22050, 2048, 64}};
    uform__signal_mel_plan_t plans[3];
    char name[64];
    for (size_t s = 0; s < 3; ++s) {
        CHECK_STATUS(uform__signal_mel_plan_init(&plans[s], shapes[s][0], shapes[s][1], 160, shapes[s][2], 0, 0, NULL),
                     UFORM_OK);
        snprintf(name, sizeof(name), "filters%zu", s);
        signal_case("melfilters %s %zu %zu %zu", name, shapes[s][0], shapes[s][1], shapes[s][2]);
    }
    /* Hand-derived (see signal_reference.py): filter 0 at bin 1 (40 Hz) = 0.925863 · 2 / 74.47841. */
    CHECK_NEAR(plans[0].filters[1], 0.0248626, 2e-6, 0);
    CHECK_NEAR(plans[0].filters[0], 0.0, 0, 0);
    CHECK_NEAR(plans[0].filters[2], 0.0, 0, 0);
    for (size_t s = 0; s < 3; ++s) uform__signal_mel_plan_free(&plans[s]);
    (void)state;
}

static void compare_filters(void) {
    static const size_t shapes[][3] = {{16000, 400, 80}, {16000, 400, 128}, {22050, 2048, 64}};
    char name[64];
    for (size_t s = 0; s < 3; ++s) {
        uform__signal_mel_plan_t plan;
        CHECK_STATUS(uform__signal_mel_plan_init(&plan, shapes[s][0], shapes[s][1], 160, shapes[s][2], 0, 0, NULL),
                     UFORM_OK);
        const size_t bins = shapes[s][1] / 2 + 1, n = shapes[s][2] * bins;
        float *expected = malloc(n * sizeof(float));
        snprintf(name, sizeof(name), "filters%zu", s);
        if (signal_read(name, "f32", expected, n * sizeof(float))) {
            double worst = 0, peak = 0;
            size_t at = 0;
            for (size_t i = 0; i < n; ++i) {
                const double d = fabs((double)plan.filters[i] - expected[i]);
                if (!(d <= worst)) worst = d, at = i;
                if (fabs(expected[i]) > peak) peak = fabs(expected[i]);
            }
            CHECK_MSG(worst <= 1e-6 * peak, "%s [%zu, %zu]: got %.9g, expected %.9g", name, at / bins, at % bins,
                      (double)plan.filters[at], (double)expected[at]);
            printf("mel filters sr %zu n_fft %zu mels %zu: max |diff| %.3g (peak %.3g)\n", shapes[s][0], shapes[s][1],
                   shapes[s][2], worst, peak);
        }
        free(expected);
        uform__signal_mel_plan_free(&plan);
    }
}

static void compare_stft(const stft_case_t *c, const char *name, const float *x) {
    uform__signal_mel_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_mel_plan_init(&plan, 16000, c->n_fft, c->hop, 8, 0, 0, &outcome), UFORM_OK);
    const size_t frames = uform__signal_stft_frames(&plan, c->samples), bins = c->n_fft / 2 + 1, n = frames * bins;
    float *expected = malloc(n * sizeof(float)), *actual = malloc(n * sizeof(float)),
          *threaded = malloc(n * sizeof(float));
    if (signal_read(name, "f32", expected, n * sizeof(float))) {
        CHECK_STATUS(uform__signal_stft_power_f32(&plan, x, c->samples, actual, NULL, &outcome), UFORM_OK);
        /* Power error scales with the frame's strongest bin: 1e-5 of it, plus 1e-5 relative. */
        double worst = 0;
        size_t bad = 0;
        for (size_t t = 0; t < frames; ++t) {
            double peak = 0;
            for (size_t k = 0; k < bins; ++k)
                if (expected[t * bins + k] > peak) peak = expected[t * bins + k];
            for (size_t k = 0; k < bins; ++k) {
                const double e = expected[t * bins + k], a = actual[t * bins + k], d = fabs(a - e) / (peak + 1e-30);
                if (!(d <= worst)) worst = d;
                if (!(fabs(a - e) <= 1e-5 * peak + 1e-5 * fabs(e)) && bad++ < 3)
                    fprintf(stderr, "%s frame %zu bin %zu: got %.9g, expected %.9g (frame peak %.3g)\n", name, t, k, a,
                            e, peak);
            }
        }
        CHECK_EQ_INT(bad, 0);
        printf("stft %-7s %6zu samples n_fft %3zu hop %3zu: %zu frames, max |diff| %.3g of frame peak\n", name,
               c->samples, c->n_fft, c->hop, frames, worst);
        CHECK_STATUS(uform__signal_stft_power_f32(&plan, x, c->samples, threaded, &signal_pool, &outcome), UFORM_OK);
        CHECK_MSG(memcmp(threaded, actual, n * sizeof(float)) == 0, "%s: 3 threads differ from serial", name);
    }
    free(expected), free(actual), free(threaded);
    uform__signal_mel_plan_free(&plan);
}

static void compare_log_mel(const mel_case_t *c, const char *name, const float *x) {
    uform__signal_mel_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_mel_plan_init(&plan, 16000, 400, 160, c->mels, 0.0, 8000.0, &outcome), UFORM_OK);
    const size_t frames = uform__signal_stft_frames(&plan, c->samples) - 1, n = frames * c->mels;
    float *expected = malloc(n * sizeof(float)), *actual = malloc(n * sizeof(float)),
          *threaded = malloc(n * sizeof(float));
    double *exact = malloc(n * sizeof(double));
    if (signal_read(name, "f32", expected, n * sizeof(float)) && signal_read(name, "f64", exact, n * sizeof(double))) {
        CHECK_STATUS(uform__signal_log_mel_f32(&plan, x, c->samples, actual, NULL, &outcome), UFORM_OK);
        /* Whisper's float32 reference is itself off its float64 twin by up to ~1e-4 on tonal audio
         * (bins 50+ dB under a frame's peak lose digits in any float FFT), so the bound is 1e-4 plus
         * that reference's own error at the same element; the error against float64 is printed too. */
        double worst = 0, worst_exact = 0, worst_reference = 0;
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
            double d = fabs((double)actual[i] - expected[i]), own = fabs((double)expected[i] - exact[i]);
            double e = fabs((double)actual[i] - exact[i]);
            if (isnan(d) || isnan(e)) d = e = INFINITY;
            if (d > worst) worst = d;
            if (e > worst_exact) worst_exact = e;
            if (own > worst_reference) worst_reference = own;
            if (!(d <= 1e-4 + own) && bad++ < 3)
                fprintf(stderr, "%s frame %zu mel %zu: got %.9g, expected %.9g (float64 %.9g)\n", name, i / c->mels,
                        i % c->mels, (double)actual[i], (double)expected[i], exact[i]);
        }
        CHECK_EQ_INT(bad, 0);
        CHECK_MSG(worst_exact <= 2e-4, "%s: max |diff| against float64 %.3g", name, worst_exact);
        printf("log-mel %-5s %6zu samples, %3zu mels, kind %d: [%zu, %zu], max |diff| %.3g vs torch, %.3g vs float64 "
               "(torch vs float64 %.3g)\n",
               name, c->samples, c->mels, c->kind, frames, c->mels, worst, worst_exact, worst_reference);
        CHECK_STATUS(uform__signal_log_mel_f32(&plan, x, c->samples, threaded, &signal_pool, &outcome), UFORM_OK);
        CHECK_MSG(memcmp(threaded, actual, n * sizeof(float)) == 0, "%s: 3 threads differ from serial", name);
    }
    free(expected), free(actual), free(threaded), free(exact);
    uform__signal_mel_plan_free(&plan);
}

static void test_errors(void) {
    uform__signal_mel_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_mel_plan_init(&plan, 16000, 400, 160, 80, 0, 9000, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "fmax 9000");
    CHECK_STATUS(uform__signal_mel_plan_init(&plan, 16000, 1, 160, 80, 0, 0, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__signal_mel_plan_init(&plan, 16000, 400, 160, 80, 0, 0, &outcome), UFORM_OK);
    float x[200] = {0}, out[2 * 201];
    CHECK_STATUS(uform__signal_log_mel_f32(&plan, x, 200, out, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "200 samples are too few");
    CHECK_STATUS(uform__signal_stft_power_f32(&plan, NULL, 300, out, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "samples is NULL");
    uform__signal_mel_plan_free(&plan);
    uform__signal_mel_plan_free(&plan);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PYTHON SCRIPT [SEED]\n", argv[0]);
        return 2;
    }
    uint64_t state = signal_seed(argc, argv, 3);
    test_errors();
    if (!signal_directory_make()) return check_finish();
    test_filters(&state);
    float *stft_inputs[STFT_CASES], *mel_inputs[MEL_CASES];
    char name[64];
    for (size_t i = 0; i < STFT_CASES; ++i) {
        stft_inputs[i] = random_audio(&state, stft_cases[i].samples, (int)(i % 3));
        snprintf(name, sizeof(name), "stft%zu", i);
        signal_write(name, "in", stft_inputs[i], stft_cases[i].samples * sizeof(float));
        signal_case("stft %s %zu %zu %zu", name, stft_cases[i].samples, stft_cases[i].n_fft, stft_cases[i].hop);
    }
    for (size_t i = 0; i < MEL_CASES; ++i) {
        mel_inputs[i] = random_audio(&state, mel_cases[i].samples, mel_cases[i].kind);
        snprintf(name, sizeof(name), "mel%zu", i);
        signal_write(name, "in", mel_inputs[i], mel_cases[i].samples * sizeof(float));
        signal_case("logmel %s %zu %zu", name, mel_cases[i].samples, mel_cases[i].mels);
    }
    if (signal_run_reference(argv[1], argv[2])) {
        compare_filters();
        for (size_t i = 0; i < STFT_CASES; ++i) {
            snprintf(name, sizeof(name), "stft%zu", i);
            compare_stft(&stft_cases[i], name, stft_inputs[i]);
        }
        for (size_t i = 0; i < MEL_CASES; ++i) {
            snprintf(name, sizeof(name), "mel%zu", i);
            compare_log_mel(&mel_cases[i], name, mel_inputs[i]);
        }
    }
    for (size_t i = 0; i < STFT_CASES; ++i) free(stft_inputs[i]);
    for (size_t i = 0; i < MEL_CASES; ++i) free(mel_inputs[i]);
    signal_directory_remove();
    return check_finish();
}
