/*
 * Speech for `uform synth` (synth.h) through espeak-ng's C library (speak_lib.h), started once per
 * process in synchronous mode: espeak_Synth returns when the whole caption has been handed to the
 * callback, which appends the samples to one growing buffer. espeak-ng keeps global state, so the
 * calls below are for one thread at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

/* American and British English, male and female variants (espeak-ng's voice+variant names). */
const char *const synth_voice_names[SYNTH_VOICES] = {"en-us", "en-us+f3", "en+m3", "en-gb-scotland+f2"};

#if UFORM_WITH_ESPEAK
#include <espeak-ng/speak_lib.h>

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
    static int rate = -1;
    if (started) return rate;
    rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, espeakINITIALIZE_DONT_EXIT);
    if (rate <= 0) {
        snprintf(error, capacity, "espeak-ng did not start (is espeak-ng-data installed?)");
        return -1;
    }
    espeak_SetSynthCallback(on_samples);
    started = 1;
    return rate;
}

int16_t *synth_speak(const char *text, int voice, int words_per_minute, int pitch, size_t *count, char *error,
                     size_t capacity) {
    if (!started) return snprintf(error, capacity, "espeak-ng is not started"), NULL;
    const char *name = synth_voice_names[voice % SYNTH_VOICES];
    if (espeak_SetVoiceByName(name) != EE_OK) return snprintf(error, capacity, "espeak-ng has no voice '%s'", name), NULL;
    espeak_SetParameter(espeakRATE, words_per_minute, 0);
    espeak_SetParameter(espeakPITCH, pitch, 0);
    buffer.count = 0, buffer.failed = 0;
    espeak_ERROR code = espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
    if (code == EE_OK) code = espeak_Synchronize();
    if (code != EE_OK || buffer.failed || buffer.count == 0) {
        snprintf(error, capacity, "espeak-ng could not speak \"%s\" (%s)", text,
                 buffer.failed ? "out of memory" : code != EE_OK ? "synthesis failed" : "no samples");
        return NULL;
    }
    int16_t *samples = malloc(buffer.count * sizeof *samples);
    if (!samples) return snprintf(error, capacity, "out of memory speaking \"%s\"", text), NULL;
    memcpy(samples, buffer.samples, buffer.count * sizeof *samples);
    *count = buffer.count;
    return samples;
}

void synth_speech_stop(void) {
    if (started) espeak_Terminate();
    started = 0;
    free(buffer.samples);
    memset(&buffer, 0, sizeof buffer);
}

#else

int synth_speech_available(void) { return 0; }

int synth_speech_start(char *error, size_t capacity) {
    snprintf(error, capacity, "this build has no espeak-ng (install libespeak-ng-dev: scripts/install-deps.sh)");
    return -1;
}

int16_t *synth_speak(const char *text, int voice, int words_per_minute, int pitch, size_t *count, char *error,
                     size_t capacity) {
    (void)text, (void)voice, (void)words_per_minute, (void)pitch, (void)count;
    snprintf(error, capacity, "this build has no espeak-ng");
    return NULL;
}

void synth_speech_stop(void) {}

#endif
