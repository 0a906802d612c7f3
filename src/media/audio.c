/* Audio entry point: sniffs, parses WAV here and hands everything else to FFmpeg (av_audio.c). */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/media.h"

void uform__media_audio_free(uform__media_audio_t *audio) {
    if (!audio) return;
    free(audio->samples);
    memset(audio, 0, sizeof *audio);
}

uform_status_t uform__media_audio_decode(const void *bytes, size_t size, double crop_seconds,
                                         const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                         uform_outcome_t *outcome) {
    if (!audio) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "audio: NULL output");
    memset(audio, 0, sizeof *audio);
    if (!bytes && size) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "audio: NULL bytes with size %zu", size);
    if (!(crop_seconds >= 0)) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "audio: crop_seconds %g is negative or NaN", crop_seconds);
    if (size == 0) return uform__fail(outcome, UFORM_FORMAT, __func__, "not a recording: the item is empty (0 bytes)");
    uform__media_kind_t kind = uform__media_sniff(bytes, size);
    if (uform__media_kind_is_image(kind))
        return uform__fail(outcome, UFORM_FORMAT, __func__, "not a recording: the bytes look like %s %s", uform__media_kind_article(kind),
                           uform__media_kind_name(kind));
    uform_status_t status = kind == UFORM__MEDIA_WAV
                                ? uform__media_wav_decode(bytes, size, crop_seconds, limits, audio, outcome)
                                : uform__media_av_audio_decode(bytes, size, crop_seconds, limits, audio, outcome);
    if (status != UFORM_OK) uform__media_audio_free(audio);
    else uform__succeed(outcome, __func__);
    return status;
}
