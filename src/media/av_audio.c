/*
 * Recordings other than WAV through libavformat/libavcodec, read from memory: FLAC, Ogg Vorbis and
 * Opus, MP3, AAC (ADTS or in MP4), and whatever else the FFmpeg build demuxes. Channels are averaged
 * here with equal weights (swresample's default downmix would weight stereo by 0.707), and every
 * sample format is converted by this file's own code.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/av_common.h"
#include "media/media.h"

#if UFORM_WITH_FFMPEG

/* A growable buffer of mono samples. */
typedef struct mono_t {
    float *samples;
    size_t count, capacity;
} mono_t;

static double sample_value(const uint8_t *p, enum AVSampleFormat format) {
    switch (format) {
    case AV_SAMPLE_FMT_U8: case AV_SAMPLE_FMT_U8P: return ((int)*p - 128) / 128.0;
    case AV_SAMPLE_FMT_S16: case AV_SAMPLE_FMT_S16P: { int16_t v; memcpy(&v, p, 2); return v / 32768.0; }
    case AV_SAMPLE_FMT_S32: case AV_SAMPLE_FMT_S32P: { int32_t v; memcpy(&v, p, 4); return v / 2147483648.0; }
    case AV_SAMPLE_FMT_S64: case AV_SAMPLE_FMT_S64P: { int64_t v; memcpy(&v, p, 8); return (double)v / 9223372036854775808.0; }
    case AV_SAMPLE_FMT_FLT: case AV_SAMPLE_FMT_FLTP: { float v; memcpy(&v, p, 4); return v; }
    case AV_SAMPLE_FMT_DBL: case AV_SAMPLE_FMT_DBLP: { double v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}

/* Appends up to `limit − count` samples of `frame`, averaged over its channels. */
static uform_status_t append_frame(mono_t *mono, const AVFrame *frame, size_t limit, uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    int channels = frame->ch_layout.nb_channels;
    enum AVSampleFormat format = (enum AVSampleFormat)frame->format;
    int bytes = av->av_get_bytes_per_sample(format);
    if (channels <= 0 || channels > (int)UFORM__MEDIA_MAX_CHANNELS || bytes <= 0 || frame->nb_samples < 0)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_av_audio_decode", "recording: decoded frame with %d channels of format '%s'",
                           channels, av->av_get_sample_fmt_name(format) ? av->av_get_sample_fmt_name(format) : "?");
    size_t count = (size_t)frame->nb_samples;
    if (count > limit - mono->count) count = limit - mono->count;
    if (mono->count + count > mono->capacity) {
        size_t capacity = mono->capacity ? mono->capacity : 1 << 16;
        while (capacity < mono->count + count) capacity *= 2;
        if (capacity > limit) capacity = limit;
        float *grown = realloc(mono->samples, capacity * sizeof(float));
        if (!grown) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__media_av_audio_decode", "recording: cannot allocate %zu samples", capacity);
        mono->samples = grown, mono->capacity = capacity;
    }
    int planar = av->av_sample_fmt_is_planar(format);
    for (size_t i = 0; i < count; ++i) {
        double sum = 0;
        for (int c = 0; c < channels; ++c) {
            const uint8_t *p = planar ? frame->extended_data[c] + i * (size_t)bytes
                                      : frame->extended_data[0] + (i * (size_t)channels + (size_t)c) * (size_t)bytes;
            sum += sample_value(p, format);
        }
        mono->samples[mono->count + i] = (float)(sum / channels);
    }
    mono->count += count;
    return UFORM_OK;
}

static uform_status_t attempt(const uint8_t *bytes, size_t size, double crop_seconds, const uform__media_limits_t *limits,
                              uform__media_audio_t *audio, uform_outcome_t *outcome) {
    static const char function[] = "uform__media_av_audio_decode";
    uform__media_limits_t resolved;
    uform__media_limits_resolve(limits, &resolved);
    const uform__av_t *av = NULL;
    uform_status_t status = uform__av_require(&av, uform__media_kind_name(uform__media_sniff(bytes, size)), function, outcome);
    if (status != UFORM_OK) return status;
    uform__media_av_input_t input;
    status = uform__media_av_open(&input, bytes, size, "recording", function, outcome);
    if (status != UFORM_OK) return status;
    AVCodecContext *decoder = NULL;
    AVPacket *packet = av->av_packet_alloc();
    AVFrame *frame = av->av_frame_alloc();
    mono_t mono = {0};
    char message[AV_ERROR_MAX_STRING_SIZE];
    const char *container = input.format->iformat->name;
    if (!packet || !frame) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "recording: cannot allocate FFmpeg structures");
        goto done;
    }
    int index = av->av_find_best_stream(input.format, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0);
    if (index < 0) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "not a recording: the %s container (%u streams) has no audio stream",
                             container, input.format->nb_streams);
        goto done;
    }
    AVStream *stream = input.format->streams[index];
    for (unsigned s = 0; s < input.format->nb_streams; ++s)
        if ((int)s != index) input.format->streams[s]->discard = AVDISCARD_ALL;
    int rate = stream->codecpar->sample_rate;
    if (rate <= 0 || rate > (int)UFORM__MEDIA_MAX_RATE) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "recording: sample rate %d Hz in the %s container (expected 1 to %u)",
                             rate, container, UFORM__MEDIA_MAX_RATE);
        goto done;
    }
    /* The limit binds unless a shorter crop makes us stop early anyway. */
    int cropped_below_limit = crop_seconds > 0 && crop_seconds <= resolved.max_seconds;
    double header_seconds = stream->duration != AV_NOPTS_VALUE ? stream->duration * av_q2d(stream->time_base)
                            : input.format->duration != AV_NOPTS_VALUE ? input.format->duration / (double)AV_TIME_BASE : 0;
    if (!cropped_below_limit && header_seconds > resolved.max_seconds) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "recording: %.1f s of audio exceed the limit of %.1f s (max_seconds)",
                             header_seconds, resolved.max_seconds);
        goto done;
    }
    status = uform__media_av_open_decoder(stream->codecpar, stream->time_base, 0, &decoder, "recording", function, outcome);
    if (status != UFORM_OK) goto done;
    double limit_seconds = cropped_below_limit ? crop_seconds : resolved.max_seconds;
    size_t limit = (size_t)ceil(limit_seconds * rate) + (cropped_below_limit ? 0 : 1); /* one past the hard limit detects excess */
    int last_error = 0, draining = 0;
    while (mono.count < limit) {
        int error;
        if (!draining) {
            error = av->av_read_frame(input.format, packet);
            if (uform__media_av_enomem(error)) goto exhausted;
            if (error < 0) {
                draining = 1;
                error = av->avcodec_send_packet(decoder, NULL);
            } else {
                if (packet->stream_index == index) error = av->avcodec_send_packet(decoder, packet);
                av->av_packet_unref(packet);
                if (uform__media_av_enomem(error)) goto exhausted;
                if (error < 0 && error != AVERROR(EAGAIN)) { /* skip a corrupt packet, as players do */
                    last_error = error;
                    uform__media_av_skipped();
                }
            }
        }
        while (mono.count < limit && (error = av->avcodec_receive_frame(decoder, frame)) >= 0) {
            if (frame->sample_rate != rate) {
                status = uform__fail(outcome, UFORM_FORMAT, function, "recording: the sample rate changes from %d to %d Hz mid-stream",
                                     rate, frame->sample_rate);
                goto done;
            }
            status = append_frame(&mono, frame, limit, outcome);
            av->av_frame_unref(frame);
            if (status != UFORM_OK) goto done;
        }
        if (uform__media_av_enomem(error)) goto exhausted;
        if (error == AVERROR_EOF || (draining && error == AVERROR(EAGAIN))) break; /* drained, or a decoder stuck */
        if (error < 0 && error != AVERROR(EAGAIN)) {
            last_error = error;
            uform__media_av_skipped();
        }
    }
    if (!cropped_below_limit && mono.count > (size_t)ceil(resolved.max_seconds * rate)) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "recording: more than %.1f s of audio (the max_seconds limit)", resolved.max_seconds);
        goto done;
    }
    if (mono.count == 0) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "recording: the %s stream in the %s container decodes to no samples (%s)",
                             av->avcodec_get_name(stream->codecpar->codec_id), container,
                             last_error ? uform__media_av_error(last_error, message) : "empty");
        goto done;
    }
    audio->samples = mono.samples, audio->count = mono.count, audio->rate = (uint32_t)rate;
    mono.samples = NULL;
    goto done;
exhausted: /* a packet or frame FFmpeg could not allocate: the recording is fine, the memory is not */
    status = uform__media_av_fail_enomem(outcome, function, "recording: FFmpeg cannot allocate a packet or frame of the %s stream",
                         av->avcodec_get_name(stream->codecpar->codec_id));
done:
    free(mono.samples);
    av->avcodec_free_context(&decoder);
    av->av_frame_free(&frame);
    av->av_packet_free(&packet);
    uform__media_av_close(&input);
    return status;
}

uform_status_t uform__media_av_audio_decode(const uint8_t *bytes, size_t size, double crop_seconds,
                                            const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                            uform_outcome_t *outcome) {
    uform__media_av_begin();
    uform_status_t status = attempt(bytes, size, crop_seconds, limits, audio, outcome);
    if (uform__media_av_retry(status)) { /* memory may be back, or the file is at fault: see av_common.h */
        uform__media_audio_free(audio);
        status = uform__media_av_settle(attempt(bytes, size, crop_seconds, limits, audio, outcome), outcome, __func__);
    }
    return status;
}

#else

uform_status_t uform__media_av_audio_decode(const uint8_t *bytes, size_t size, double crop_seconds,
                                            const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                            uform_outcome_t *outcome) {
    uform__media_kind_t kind = uform__media_sniff(bytes, size);
    if (kind == UFORM__MEDIA_UNKNOWN)
        return uform__fail(outcome, UFORM_FORMAT, __func__,
                           "not a recording: the first bytes match no known format (this build without FFmpeg reads WAV only)");
    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                       "%s: only WAV is parsed without FFmpeg, and this build has none (configure with UFORM_WITH_FFMPEG=ON)",
                       uform__media_kind_name(kind));
}

#endif
