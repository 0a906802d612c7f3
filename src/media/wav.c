/*
 * WAV (RIFF WAVE) parsed here, so recordings work without FFmpeg: PCM 8-bit unsigned, 16/24/32-bit
 * signed, IEEE float32/64, and WAVE_FORMAT_EXTENSIBLE with either sub-format. Integers scale by
 * 2^(bits−1) (8-bit after removing its 128 offset), as soundfile and torchaudio.load normalise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/media.h"

enum { wave_pcm = 1, wave_float = 3, wave_extensible = 0xFFFE };

static uint32_t u16le(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One sample of the container's type at `p`, as a double in [-1, 1). */
static double wav_sample(const uint8_t *p, uint32_t format, uint32_t bits) {
    if (format == wave_float) {
        if (bits == 32) {
            float value;
            memcpy(&value, p, 4); /* little-endian hosts only, like the rest of the engine */
            return value;
        }
        double value;
        memcpy(&value, p, 8);
        return value;
    }
    switch (bits) {
    case 8: return ((int)p[0] - 128) / 128.0;
    case 16: return (int16_t)u16le(p) / 32768.0;
    case 24: return (int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24) / 2147483648.0; /* as the top 3 bytes of an int32 */
    default: return (int32_t)u32le(p) / 2147483648.0;
    }
}

uform_status_t uform__media_wav_decode(const uint8_t *bytes, size_t size, double crop_seconds,
                                       const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                       uform_outcome_t *outcome) {
    uform__media_limits_t resolved;
    uform__media_limits_resolve(limits, &resolved);
    if (size < 12) return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: %zu bytes are shorter than the RIFF header", size);
    uint32_t format = 0, channels = 0, rate = 0, block = 0, bits = 0;
    int have_format = 0;
    const uint8_t *data = NULL;
    size_t data_size = 0;
    size_t position = 12;
    while (position + 8 <= size) {
        const uint8_t *chunk = bytes + position;
        uint32_t chunk_size = u32le(chunk + 4);
        size_t left = size - position - 8;
        if (memcmp(chunk, "fmt ", 4) == 0) {
            if (chunk_size < 16 || chunk_size > left)
                return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: the 'fmt ' chunk at byte %zu has %u bytes (need 16, %zu remain)",
                                   position, chunk_size, left);
            format = u16le(chunk + 8), channels = u16le(chunk + 10), rate = u32le(chunk + 12);
            block = u16le(chunk + 20), bits = u16le(chunk + 22);
            if (format == wave_extensible) {
                /* cbSize ≥ 22, then valid bits, channel mask, and the sub-format GUID whose first two
                 * bytes are the plain format tag. Samples stay left-justified in `bits`. */
                if (chunk_size < 40)
                    return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk has %u bytes (need 40)", chunk_size);
                static const uint8_t guid_tail[14] = {0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
                if (memcmp(chunk + 8 + 26, guid_tail, 14) != 0)
                    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__, "WAV: WAVE_FORMAT_EXTENSIBLE with a non-standard sub-format GUID");
                format = u16le(chunk + 8 + 24);
            }
            have_format = 1;
        } else if (memcmp(chunk, "data", 4) == 0) {
            data = chunk + 8;
            /* Streaming writers leave 0 or 0xFFFFFFFF when they could not seek back: take the rest. */
            if (chunk_size == 0 || chunk_size == 0xFFFFFFFFu) data_size = left;
            else if (chunk_size > left)
                return uform__fail(outcome, UFORM_FORMAT, __func__,
                                   "WAV: the 'data' chunk claims %u bytes but only %zu remain (truncated file)", chunk_size, left);
            else data_size = chunk_size;
            if (have_format) break;
        }
        if (chunk_size > left) break; /* a trailing chunk cut short after 'data': ignore it */
        position += 8 + (size_t)chunk_size + (chunk_size & 1); /* chunks are padded to even sizes */
    }
    if (!have_format) return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: no 'fmt ' chunk in %zu bytes", size);
    if (!data) return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: no 'data' chunk in %zu bytes", size);
    int supported = (format == wave_pcm && (bits == 8 || bits == 16 || bits == 24 || bits == 32)) ||
                    (format == wave_float && (bits == 32 || bits == 64));
    if (!supported)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__, "WAV: format tag 0x%04x with %u bits per sample is not PCM 8/16/24/32 or float 32/64",
                           format, bits);
    if (channels == 0 || channels > UFORM__MEDIA_MAX_CHANNELS)
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: %u channels (expected 1 to %u)", channels, UFORM__MEDIA_MAX_CHANNELS);
    if (rate == 0 || rate > UFORM__MEDIA_MAX_RATE)
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: sample rate %u Hz (expected 1 to %u)", rate, UFORM__MEDIA_MAX_RATE);
    if (block != channels * (bits / 8))
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: block align %u, expected %u channels x %u bytes", block, channels, bits / 8);

    size_t frames = data_size / block;
    double seconds = (double)frames / rate;
    if (crop_seconds > 0 && crop_seconds < seconds) {
        size_t wanted = (size_t)ceil(crop_seconds * rate);
        if (wanted < frames) frames = wanted, seconds = (double)frames / rate;
    }
    if (seconds > resolved.max_seconds)
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: %.1f s of audio exceed the limit of %.1f s (max_seconds)",
                           seconds, resolved.max_seconds);
    if (frames == 0) return uform__fail(outcome, UFORM_FORMAT, __func__, "WAV: the 'data' chunk holds no complete sample frame");
    float *samples = malloc(frames * sizeof(float));
    if (!samples) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "WAV: cannot allocate %zu samples", frames);
    uint32_t step = bits / 8;
    for (size_t f = 0; f < frames; ++f) {
        const uint8_t *frame = data + f * block;
        double sum = 0;
        for (uint32_t c = 0; c < channels; ++c) sum += wav_sample(frame + c * step, format, bits);
        samples[f] = (float)(sum / channels);
    }
    audio->samples = samples, audio->count = frames, audio->rate = rate;
    return UFORM_OK;
}
