/*
 * Speech for `uform synth` (synth.h) through espeak-ng's C library (speak_lib.h), started once per
 * process in synchronous mode: espeak_Synth returns when the whole caption has been handed to the
 * callback, which appends the samples to one growing buffer. espeak-ng keeps global state, so the
 * calls below are for one thread at a time. Its breathy voice variants (+f2, +f3) draw their noise
 * from the C library's rand(), so each caption reseeds it first: a recording depends on its own
 * item alone, not on what was spoken before it in the process.
 *
 * espeak-ng speaks at 22,050 Hz; the files are written at 16 kHz, the rate speech models (and the
 * demo's model) read, so the engine's resampler has nothing to do at training time. The resampler
 * here is a polyphase windowed sinc (Hann window of ±16 input samples, cut-off at 95% of the output
 * Nyquist frequency), its bank of one filter per output phase computed once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

/* American and British English, male and female variants (espeak-ng's voice+variant names). */
const char *const synth_voice_names[SYNTH_VOICES] = {"en-us", "en-us+f3", "en+m3", "en-gb-scotland+f2"};

#if UFORM_WITH_ESPEAK
#include <espeak-ng/speak_lib.h>

#define HALF_WIDTH 16 /* input samples on each side of an output sample */

typedef struct resampler_t {
    size_t phases, step; /* output rate / g and input rate / g, g their greatest common divisor */
    float *bank;         /* [phases][2 · HALF_WIDTH] */
} resampler_t;

static resampler_t resampler;

static int resampler_init(int from, int to) {
    size_t a = (size_t)from, b = (size_t)to;
    while (b) {
        size_t r = a % b;
        a = b, b = r;
    }
    resampler.phases = (size_t)to / a, resampler.step = (size_t)from / a;
    resampler.bank = malloc(resampler.phases * 2 * HALF_WIDTH * sizeof(float));
    if (!resampler.bank) return -1;
    const double pi = 3.14159265358979323846, cutoff = 0.95 * (double)to / (double)from; /* cycles per input sample × 2 */
    for (size_t p = 0; p < resampler.phases; ++p) {
        double fraction = (double)p / (double)resampler.phases, sum = 0;
        float *taps = resampler.bank + p * 2 * HALF_WIDTH;
        for (int k = 0; k < 2 * HALF_WIDTH; ++k) {
            double t = fraction - (double)(k - HALF_WIDTH + 1); /* distance from input sample base + k − W + 1 */
            double sinc = fabs(t) < 1e-12 ? 1.0 : sin(pi * cutoff * t) / (pi * cutoff * t);
            double window = fabs(t) < HALF_WIDTH ? 0.5 + 0.5 * cos(pi * t / HALF_WIDTH) : 0.0;
            taps[k] = (float)(sinc * window), sum += sinc * window;
        }
        for (int k = 0; k < 2 * HALF_WIDTH; ++k) taps[k] = (float)(taps[k] / sum); /* unit gain at 0 Hz */
    }
    return 0;
}

/* `count` samples at the input rate to the output rate; answers malloc'ed samples and their count. */
static int16_t *resample(const int16_t *samples, size_t count, size_t *resampled) {
    size_t length = count * resampler.phases / resampler.step;
    int16_t *out = malloc((length ? length : 1) * sizeof *out);
    if (!out) return NULL;
    for (size_t n = 0; n < length; ++n) {
        size_t position = n * resampler.step, base = position / resampler.phases, phase = position % resampler.phases;
        const float *taps = resampler.bank + phase * 2 * HALF_WIDTH;
        double sum = 0;
        for (int k = 0; k < 2 * HALF_WIDTH; ++k) {
            long index = (long)base + k - HALF_WIDTH + 1;
            if (index >= 0 && index < (long)count) sum += taps[k] * samples[index];
        }
        out[n] = (int16_t)(sum > 32767 ? 32767 : sum < -32768 ? -32768 : lrint(sum));
    }
    *resampled = length;
    return out;
}

typedef struct speech_buffer_t {
    int16_t *samples;
    size_t count, capacity;
    int failed;
} speech_buffer_t;

static speech_buffer_t buffer;
static int started;

static int on_samples(short *samples, int count, espeak_EVENT *events) {
    (void)events;
    if (count <= 0 || !samples) return 0;
    if (buffer.count + (size_t)count > buffer.capacity) {
        size_t capacity = (buffer.count + (size_t)count) * 2;
        int16_t *grown = realloc(buffer.samples, capacity * sizeof *grown);
        if (!grown) {
            buffer.failed = 1;
            return 1; /* non-zero aborts the synthesis */
        }
        buffer.samples = grown, buffer.capacity = capacity;
    }
    memcpy(buffer.samples + buffer.count, samples, (size_t)count * sizeof *samples);
    buffer.count += (size_t)count;
    return 0;
}

int synth_speech_available(void) { return 1; }

int synth_speech_start(char *error, size_t capacity) {
    if (started) return SYNTH_SPEECH_RATE;
    int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, espeakINITIALIZE_DONT_EXIT);
    if (rate <= 0) {
        snprintf(error, capacity, "espeak-ng did not start (is espeak-ng-data installed?)");
        return -1;
    }
    if (resampler_init(rate, SYNTH_SPEECH_RATE)) {
        snprintf(error, capacity, "out of memory for the resampler");
        espeak_Terminate();
        return -1;
    }
    espeak_SetSynthCallback(on_samples);
    started = 1;
    return SYNTH_SPEECH_RATE;
}

int16_t *synth_speak(const char *text, int voice, int words_per_minute, int pitch, unsigned noise_seed, size_t *count,
                     char *error, size_t capacity) {
    if (!started) return snprintf(error, capacity, "espeak-ng is not started"), NULL;
    const char *name = synth_voice_names[voice % SYNTH_VOICES];
    if (espeak_SetVoiceByName(name) != EE_OK) return snprintf(error, capacity, "espeak-ng has no voice '%s'", name), NULL;
    espeak_SetParameter(espeakRATE, words_per_minute, 0);
    espeak_SetParameter(espeakPITCH, pitch, 0);
    buffer.count = 0, buffer.failed = 0;
    srand(noise_seed);
    espeak_ERROR code = espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
    if (code == EE_OK) code = espeak_Synchronize();
    if (code != EE_OK || buffer.failed || buffer.count == 0) {
        snprintf(error, capacity, "espeak-ng could not speak \"%s\" (%s)", text,
                 buffer.failed ? "out of memory" : code != EE_OK ? "synthesis failed" : "no samples");
        return NULL;
    }
    int16_t *samples = resample(buffer.samples, buffer.count, count);
    if (!samples) return snprintf(error, capacity, "out of memory speaking \"%s\"", text), NULL;
    return samples;
}

void synth_speech_stop(void) {
    if (started) espeak_Terminate();
    started = 0;
    free(buffer.samples), free(resampler.bank);
    memset(&buffer, 0, sizeof buffer);
    memset(&resampler, 0, sizeof resampler);
}

#else

int synth_speech_available(void) { return 0; }

int synth_speech_start(char *error, size_t capacity) {
    snprintf(error, capacity, "this build has no espeak-ng (install libespeak-ng-dev: scripts/install-deps.sh)");
    return -1;
}

int16_t *synth_speak(const char *text, int voice, int words_per_minute, int pitch, unsigned noise_seed, size_t *count,
                     char *error, size_t capacity) {
    (void)text, (void)voice, (void)words_per_minute, (void)pitch, (void)noise_seed, (void)count;
    snprintf(error, capacity, "this build has no espeak-ng");
    return NULL;
}

void synth_speech_stop(void) {}

#endif
