/*
 * Every recording fixture decodes to float mono at its native rate: WAV sample by sample against the
 * double-precision sine the generator wrote (media_fixtures.h); compressed formats by length, rate,
 * frequency (zero crossings) and RMS, whose value also proves the channels were averaged with
 * equal weights: (0.6 + 0.2)/2 = 0.4 amplitude, where a 0.707 downmix would give 0.566.
 */
#include <stdint.h>

#include "common/check.h"
#include "media/media.h"
#include "media/common.h"
#include "media_fixtures.h"

static double rms(const float *x, size_t from, size_t to) {
    double sum = 0;
    for (size_t i = from; i < to; ++i) sum += (double)x[i] * x[i];
    return to > from ? sqrt(sum / (double)(to - from)) : 0;
}

#if UFORM_WITH_FFMPEG
/* Frequency from positive-going zero crossings, linearly interpolated, over samples [from, to). */
static double crossing_frequency(const float *x, size_t from, size_t to, uint32_t rate) {
    double first = -1, last = -1;
    size_t count = 0;
    for (size_t i = from + 1; i < to; ++i) {
        if (x[i - 1] < 0 && x[i] >= 0) {
            double t = (double)(i - 1) + x[i - 1] / (double)(x[i - 1] - x[i]);
            if (first < 0) first = t;
            last = t, ++count;
        }
    }
    return count > 1 ? (double)(count - 1) * rate / (last - first) : 0;
}

#endif

/* Compares a decode with torchaudio's (torchaudio_reference.py: libsox, independent of FFmpeg).
 * `tolerance` ≥ 0: lossless, sample by sample. Negative: different decoders of a lossy format, whose
 * outputs differ in encoder-delay trimming and rounding, so only the rate and the RMS over the middle
 * second are compared (within −tolerance relative); that still catches a wrong mix or scale. */
static void check_against_torchaudio(const char *name, const uform__media_audio_t *audio, double tolerance) {
    char reference_name[256];
    snprintf(reference_name, sizeof reference_name, "%s.torchaudio", name);
    size_t size = 0;
    uint8_t *reference = media_read(reference_name, &size);
    CHECK_MSG(reference != NULL, "%s: no torchaudio reference", name);
    if (!reference) return;
    unsigned rate = 0;
    size_t count = 0;
    int header = 0;
    sscanf((const char *)reference, "%u %zu\n%n", &rate, &count, &header);
    CHECK_EQ_INT(audio->rate, rate);
    if (header > 0 && size == (size_t)header + count * sizeof(float)) {
        float *samples = malloc(count * sizeof(float) + 1);
        memcpy(samples, reference + header, count * sizeof(float));
        if (tolerance >= 0) {
            CHECK_EQ_INT(audio->count, count);
            double worst = 0;
            for (size_t i = 0; i < count && i < audio->count; ++i) worst = fmax(worst, fabs(audio->samples[i] - samples[i]));
            CHECK_MSG(worst <= tolerance, "%s: differs from torchaudio by %.3g (tolerance %.3g)", name, worst, tolerance);
        } else {
            size_t from = rate / 2, to = (size_t)rate * 3 / 2;
            if (to <= count && to <= audio->count)
                CHECK_NEAR(rms(audio->samples, from, to), rms(samples, from, to), 0, -tolerance);
            else
                CHECK_MSG(0, "%s: %zu samples here, %zu in torchaudio: shorter than 1.5 s", name, audio->count, count);
        }
        free(samples);
    } else {
        CHECK_MSG(0, "%s: torchaudio reference has %zu bytes", name, size);
    }
    free(reference);
}

typedef struct wav_case_t {
    const char *name;
    uint32_t rate;
    double amplitude, tolerance;
} wav_case_t;

static void check_wav(const wav_case_t *c) {
    size_t size = 0;
    uint8_t *bytes = media_read(c->name, &size);
    CHECK(bytes != NULL);
    if (!bytes) return;
    uform__media_audio_t audio;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__media_audio_decode(bytes, size, 0, NULL, &audio, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: %s: %s", c->name, uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_EQ_INT(audio.rate, c->rate);
        CHECK_EQ_INT(audio.count, (size_t)(MEDIA_FIXTURE_SECONDS * c->rate));
        double worst = 0;
        size_t worst_at = 0;
        for (size_t i = 0; i < audio.count; ++i) {
            double expected = c->amplitude * sin(2 * M_PI * MEDIA_FIXTURE_HZ * (double)i / c->rate);
            double difference = fabs(audio.samples[i] - expected);
            if (difference > worst) worst = difference, worst_at = i;
        }
        CHECK_MSG(worst <= c->tolerance, "%s: sample %zu differs from the sine by %.3g (tolerance %.3g)", c->name, worst_at, worst, c->tolerance);
        check_against_torchaudio(c->name, &audio, 1e-7); /* float32 output: one rounding */
    }
    uform__media_audio_free(&audio);
    /* Cropping decodes only the first half second. */
    status = uform__media_audio_decode(bytes, size, 0.5, NULL, &audio, &outcome);
    CHECK_STATUS(status, UFORM_OK);
    CHECK_EQ_INT(audio.count, c->rate / 2);
    uform__media_audio_free(&audio);
    /* A limit below the duration refuses the stream unless the crop is below the limit. */
    uform__media_limits_t limits = {.max_seconds = 1.0};
    CHECK_STATUS(uform__media_audio_decode(bytes, size, 0, &limits, &audio, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "exceed the limit of 1.0 s (max_seconds)");
    CHECK(audio.samples == NULL);
    CHECK_STATUS(uform__media_audio_decode(bytes, size, 0.75, &limits, &audio, &outcome), UFORM_OK);
    uform__media_audio_free(&audio);
    free(bytes);
}

typedef struct coded_case_t {
    const char *name;
    uint32_t rate;
    size_t length_slack; /* encoder delay and padding the container may not trim exactly */
    double rms_tolerance, sample_tolerance; /* sample_tolerance > 0: lossless, compared sample by sample */
} coded_case_t;

static void check_coded(const coded_case_t *c) {
#if UFORM_WITH_FFMPEG
    size_t size = 0;
    uint8_t *bytes = media_read(c->name, &size);
    CHECK(bytes != NULL);
    if (!bytes) return;
    uform__media_audio_t audio;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__media_audio_decode(bytes, size, 0, NULL, &audio, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: %s: %s", c->name, uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        double mono = (MEDIA_FIXTURE_LEFT + MEDIA_FIXTURE_RIGHT) / 2;
        size_t expected_count = (size_t)(MEDIA_FIXTURE_SECONDS * c->rate);
        CHECK_EQ_INT(audio.rate, c->rate);
        CHECK_MSG(audio.count + c->length_slack >= expected_count && audio.count <= expected_count + c->length_slack,
                  "%s: %zu samples, expected %zu +- %zu", c->name, audio.count, expected_count, c->length_slack);
        size_t from = c->rate / 2, to = audio.count > c->rate * 3 / 2 ? c->rate * 3 / 2 : audio.count; /* the middle second */
        CHECK_NEAR(crossing_frequency(audio.samples, from, to, audio.rate), MEDIA_FIXTURE_HZ, 0.5, 0);
        CHECK_NEAR(rms(audio.samples, from, to), mono / sqrt(2), 0, c->rms_tolerance);
        if (c->sample_tolerance > 0) {
            double worst = 0;
            for (size_t i = 0; i < audio.count; ++i)
                worst = fmax(worst, fabs(audio.samples[i] - mono * sin(2 * M_PI * MEDIA_FIXTURE_HZ * (double)i / c->rate)));
            CHECK_NEAR(worst, 0, c->sample_tolerance, 0);
        }
        check_against_torchaudio(c->name, &audio, c->sample_tolerance > 0 ? 1e-7 : -0.02);
        uform__media_audio_free(&audio);
        /* Crop: exactly the first half second. */
        CHECK_STATUS(uform__media_audio_decode(bytes, size, 0.5, NULL, &audio, &outcome), UFORM_OK);
        CHECK_EQ_INT(audio.count, c->rate / 2);
        uform__media_audio_free(&audio);
        uform__media_limits_t limits = {.max_seconds = 1.0};
        CHECK_STATUS(uform__media_audio_decode(bytes, size, 0, &limits, &audio, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "(max_seconds)");
        CHECK_STATUS(uform__media_audio_decode(bytes, size, 0.9, &limits, &audio, &outcome), UFORM_OK);
        uform__media_audio_free(&audio);
    }
    free(bytes);
#else
    /* Without FFmpeg there are no such fixtures; the format's first bytes are enough to be refused. */
    static const struct { const char *suffix, *magic; size_t size; } magics[] = {
        {".flac", "fLaC\0\0\0\x22", 8}, {".ogg", "OggS\0\x02\0\0", 8}, {".opus", "OggS\0\x02\0\0", 8},
        {".mp3", "ID3\x04\0\0\0\0", 8}, {".m4a", "\0\0\0\x20" "ftypM4A ", 12},
    };
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; ++i) {
        if (!strstr(c->name, magics[i].suffix)) continue;
        uform__media_audio_t audio;
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform__media_audio_decode(magics[i].magic, magics[i].size, 0, NULL, &audio, &outcome), UFORM_UNSUPPORTED);
        CHECK_CONTAINS(outcome.message, "only WAV is parsed without FFmpeg");
    }
#endif
}

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
    /* The generator scales integers by 2^(bits−1) − 1 and the decoder divides by 2^(bits−1), so the
     * tolerance is half a step of rounding plus one step of scale. */
    const double a = MEDIA_FIXTURE_MONO, s = (MEDIA_FIXTURE_LEFT + MEDIA_FIXTURE_RIGHT) / 2;
    const wav_case_t wavs[] = {
        {"pcm16.wav", 16000, a, 1.5 / 32768},      {"pcm8.wav", 8000, a, 1.5 / 128},
        {"list16.wav", 16000, a, 1.5 / 32768},
        {"pcm24.wav", 22050, a, 1.5 / 8388608},    {"pcm32.wav", 48000, a, 1e-7},
        {"float32.wav", 44100, a, 1e-7},           {"float64.wav", 32000, a, 1e-7},
        {"extensible24.wav", 48000, s, 1.5 / 8388608}, {"stereo16.wav", 44100, s, 1.5 / 32768},
    };
    for (size_t i = 0; i < sizeof wavs / sizeof wavs[0]; ++i) check_wav(&wavs[i]);
    const coded_case_t coded[] = {
        {"stereo.flac", 44100, 0, 0.001, 1.5 / 32768},
        {"stereo.ogg", 44100, 0, 0.03, 0},
        {"stereo.opus", 48000, 0, 0.03, 0},
        {"stereo.mp3", 44100, 1152, 0.03, 0},
        {"stereo.m4a", 44100, 1024, 0.03, 0},
    };
    for (size_t i = 0; i < sizeof coded / sizeof coded[0]; ++i) check_coded(&coded[i]);
    return check_finish();
}
