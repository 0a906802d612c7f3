/*
 * Video through libavformat/libavcodec (FFmpeg builds only): F frames at the centres of F equal
 * segments of the stream's duration, rotation metadata applied, converted to RGB24 by libswscale.
 *
 * Frame choice: target f is t_f = start + (f + ½)·D/F. Frames arrive in presentation order; the
 * frame shown at t_f is the last one whose presentation time is ≤ t_f (its interval covers t_f),
 * or the first decoded frame when t_f precedes it. Targets after the last frame take the last frame.
 *
 * Seeking: decoding everything costs ≈136 ms of CPU for 10 s of 640×480 here, seeking blindly about
 * 3× more, so before each target we look up the last keyframe at or before it in the demuxer's index
 * and seek only when that keyframe lies beyond every packet read so far — the frames in between
 * would be decoded for nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/av_common.h"
#include "media/media.h"

void uform__media_video_free(uform__media_video_t *video) {
    if (!video) return;
    free(video->pixels);
    free(video->times);
    memset(video, 0, sizeof *video);
}

#if UFORM_WITH_FFMPEG

/* The decode state of one call. */
typedef struct video_state_t {
    uform__media_video_t *video;
    uform__media_av_input_t input;
    AVStream *stream;
    int index;
    AVCodecContext *decoder;
    AVPacket *packet;
    AVFrame *frame, *held;   /* the latest decoded frame, and the one before it still kept */
    int64_t held_pts;
    int held_slot;           /* output slot the held frame was already converted into, or −1 */
    int last_slot;           /* the last output slot written, or −1 */
    struct SwsContext *scaler;
    uint8_t *converted;      /* [decoded height, decoded width, 3] before rotation, + UFORM__MEDIA_SWS_SLACK */
    size_t converted_size;
    int orientation;         /* EXIF-style orientation equivalent to the rotation: 1, 3, 6 or 8 */
    int64_t start_pts;
    double time_base;
} video_state_t;

/* Clockwise rotation to apply from the display matrix, as FFmpeg's own player does:
 * av_display_rotation_get answers the counter-clockwise angle. */
static int stream_rotation(const AVStream *stream) {
    const uform__av_t *av = uform__av();
    size_t size = 0;
    const uint8_t *matrix = av->av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!matrix || size < 9 * sizeof(int32_t)) return 0;
    double angle = -av->av_display_rotation_get((const int32_t *)matrix);
    if (isnan(angle)) return 0;
    long degrees = lround(angle / 90.0) * 90 % 360;
    if (degrees < 0) degrees += 360;
    return (int)degrees;
}

/* Presentation timestamp of target f: start + (f + ½)·duration/frames, in the stream's time base,
 * computed in double and saturated so hostile timestamps cannot overflow. */
static int64_t target_pts(const video_state_t *state, uint32_t f, uint32_t frames, double duration) {
    double t = (double)state->start_pts + (f + 0.5) * duration / frames / state->time_base;
    if (!(t < 9.0e18)) return INT64_MAX;
    if (!(t > -9.0e18)) return INT64_MIN;
    return llround(t);
}

/* Seconds from the stream's start to `pts`, without integer overflow. */
static double seconds_since_start(const video_state_t *state, int64_t pts) {
    return ((double)pts - (double)state->start_pts) * state->time_base;
}

/* Converts `source` (rotated) into output slot `slot`. The first emitted frame fixes the size. */
static uform_status_t emit(video_state_t *state, const AVFrame *source, int64_t pts, uint32_t slot, uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    uform__media_video_t *video = state->video;
    char message[AV_ERROR_MAX_STRING_SIZE];
    if (!video->pixels) {
        int transposed = state->orientation == 6 || state->orientation == 8;
        /* The header's size was checked; the decoded one may differ and is checked again. */
        if ((uint64_t)video->frames * (uint64_t)source->width * (uint64_t)source->height > UFORM__MEDIA_MAX_VIDEO_PIXELS)
            return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode",
                               "video: %u frames of %d x %d exceed the limit of %llu pixels per decoded video", video->frames,
                               source->width, source->height, (unsigned long long)UFORM__MEDIA_MAX_VIDEO_PIXELS);
        video->width = (uint32_t)(transposed ? source->height : source->width);
        video->height = (uint32_t)(transposed ? source->width : source->height);
        size_t frame_bytes = (size_t)video->width * video->height * 3;
        video->pixels = malloc(frame_bytes * video->frames);
        state->converted_size = frame_bytes;
        state->converted = malloc(frame_bytes + UFORM__MEDIA_SWS_SLACK); /* libswscale writes past the end */
        if (!video->pixels || !state->converted)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__media_video_decode", "video: cannot allocate %u frames of %u x %u",
                               video->frames, video->width, video->height);
    }
    size_t frame_bytes = state->converted_size;
    int transposed = state->orientation == 6 || state->orientation == 8;
    int width = (int)(transposed ? video->height : video->width), height = (int)(transposed ? video->width : video->height);
    uint8_t *out = video->pixels + frame_bytes * slot;
    int error = uform__media_av_frame_to_packed(source, 3, width, height, state->converted, &state->scaler);
    if (uform__media_av_enomem(error))
        return uform__media_av_fail_enomem(outcome, "uform__media_video_decode", "video: FFmpeg cannot allocate a libswscale converter for %d x %d frames",
                           source->width, source->height);
    if (error < 0)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode", "video: frame at %.3f s (%s, %d x %d) does not convert to RGB (%s)",
                           seconds_since_start(state, pts),
                           av->av_get_pix_fmt_name((enum AVPixelFormat)source->format) ? av->av_get_pix_fmt_name((enum AVPixelFormat)source->format) : "?",
                           source->width, source->height, uform__media_av_error(error, message));
    if (state->orientation == 1) {
        memcpy(out, state->converted, frame_bytes);
    } else {
        uint32_t rotated_width, rotated_height;
        uint8_t *rotated = uform__media_orient(state->converted, (uint32_t)width, (uint32_t)height, state->orientation,
                                               &rotated_width, &rotated_height);
        if (!rotated) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__media_video_decode", "video: cannot allocate a rotated frame");
        memcpy(out, rotated, frame_bytes);
        free(rotated);
    }
    video->times[slot] = seconds_since_start(state, pts);
    state->last_slot = (int)slot;
    return UFORM_OK;
}

/* Copies output slot `from` into `slot`. */
static void copy_slot(video_state_t *state, uint32_t slot, int from) {
    uform__media_video_t *video = state->video;
    memcpy(video->pixels + state->converted_size * slot, video->pixels + state->converted_size * (size_t)from, state->converted_size);
    video->times[slot] = video->times[from];
    state->last_slot = (int)slot;
}

/* Emits the held frame into `slot`, copying an earlier slot when that frame was converted already. */
static uform_status_t emit_held(video_state_t *state, uint32_t slot, uform_outcome_t *outcome) {
    if (state->held_slot >= 0) {
        copy_slot(state, slot, state->held_slot);
        return UFORM_OK;
    }
    uform_status_t status = emit(state, state->held, state->held_pts, slot, outcome);
    if (status == UFORM_OK) state->held_slot = (int)slot;
    return status;
}

/* Reads packets of the stream without decoding to measure a duration the header lacks: from the
 * first presentation time to the end of the last frame. Live WebM blocks carry no durations, so a
 * frame without one lasts one frame period of the stream's rate. */
static double measure_duration(video_state_t *state, int *exhausted) {
    const uform__av_t *av = uform__av();
    AVRational rate = state->stream->avg_frame_rate.num > 0 ? state->stream->avg_frame_rate : state->stream->r_frame_rate;
    int64_t period = rate.num > 0 && rate.den > 0 ? av->av_rescale_q(1, av_inv_q(rate), state->stream->time_base) : 0;
    int64_t first = INT64_MAX, last = INT64_MIN;
    int error;
    while ((error = av->av_read_frame(state->input.format, state->packet)) >= 0) {
        if (state->packet->stream_index == state->index && state->packet->pts != AV_NOPTS_VALUE) {
            int64_t pts = state->packet->pts, length = state->packet->duration > 0 ? state->packet->duration : period;
            int64_t end = pts > INT64_MAX - length ? INT64_MAX : pts + length;
            if (pts < first) first = pts;
            if (end > last) last = end;
        }
        av->av_packet_unref(state->packet);
    }
    *exhausted = uform__media_av_enomem(error);
    return last > first ? ((double)last - (double)first) * state->time_base : 0;
}

static uform_status_t decode_frames(video_state_t *state, const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                    uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    uform__media_video_t *video = state->video;
    char message[AV_ERROR_MAX_STRING_SIZE];
    uform_status_t status = uform__media_av_open(&state->input, bytes, size, "video", "uform__media_video_decode", outcome);
    if (status != UFORM_OK) return status;
    AVFormatContext *format = state->input.format;
    const char *container = format->iformat->name;
    state->index = -1;
    for (unsigned s = 0; s < format->nb_streams; ++s) { /* cover art in a recording is not a video */
        const AVStream *candidate = format->streams[s];
        if (candidate->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && !(candidate->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
            state->index = av->av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
            if (state->index >= 0 && (format->streams[state->index]->disposition & AV_DISPOSITION_ATTACHED_PIC)) state->index = (int)s;
            break;
        }
    }
    if (state->index < 0)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode", "not a video: the %s container (%u streams) has no video stream",
                           container, format->nb_streams);
    state->stream = format->streams[state->index];
    for (unsigned s = 0; s < format->nb_streams; ++s)
        if ((int)s != state->index) format->streams[s]->discard = AVDISCARD_ALL;
    const AVCodecParameters *parameters = state->stream->codecpar;
    status = uform__media_check_pixels((uint64_t)(parameters->width > 0 ? parameters->width : 0),
                                       (uint64_t)(parameters->height > 0 ? parameters->height : 0), limits, "video frame",
                                       "uform__media_video_decode", outcome);
    if (status != UFORM_OK) return status;
    uint64_t total = (uint64_t)video->frames * (uint64_t)parameters->width * (uint64_t)parameters->height;
    if (total > UFORM__MEDIA_MAX_VIDEO_PIXELS)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode",
                           "video: %u frames of %d x %d exceed the limit of %llu pixels per decoded video", video->frames,
                           parameters->width, parameters->height, (unsigned long long)UFORM__MEDIA_MAX_VIDEO_PIXELS);
    state->time_base = av_q2d(state->stream->time_base);
    if (!(state->time_base > 0))
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode", "video: stream time base %d/%d",
                           state->stream->time_base.num, state->stream->time_base.den);

    double duration = state->stream->duration != AV_NOPTS_VALUE && state->stream->duration > 0
                          ? state->stream->duration * state->time_base
                          : format->duration != AV_NOPTS_VALUE && format->duration > 0 ? format->duration / (double)AV_TIME_BASE : 0;
    if (!(duration > 0)) {
        /* Live recordings (MediaRecorder WebM, for one) omit the duration: measure it, then start over. */
        int exhausted = 0;
        duration = measure_duration(state, &exhausted);
        if (exhausted)
            return uform__media_av_fail_enomem(outcome, "uform__media_video_decode",
                               "video: FFmpeg cannot allocate a packet while measuring the %s stream's duration", container);
        uform__media_av_close(&state->input);
        status = uform__media_av_open(&state->input, bytes, size, "video", "uform__media_video_decode", outcome);
        if (status != UFORM_OK) return status;
        format = state->input.format;
        if ((unsigned)state->index >= format->nb_streams)
            /* The same bytes read again must hold the same streams: FFmpeg lost one reading them for
             * lack of memory (or they are stranger than they looked); a second attempt settles it. */
            return uform__media_av_fail_enomem(outcome, "uform__media_video_decode",
                                               "video: stream %d is gone when the %zu bytes are opened again (FFmpeg could not allocate it?)",
                                               state->index, size);
        state->stream = format->streams[state->index];
        parameters = state->stream->codecpar, container = format->iformat->name; /* the old ones were freed */
        for (unsigned s = 0; s < format->nb_streams; ++s)
            if ((int)s != state->index) format->streams[s]->discard = AVDISCARD_ALL;
    }
    if (duration > limits->max_seconds)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode", "video: %.1f s exceed the limit of %.1f s (max_seconds)",
                           duration, limits->max_seconds);
    video->duration = duration;
    video->rotation = stream_rotation(state->stream);
    state->orientation = video->rotation == 90 ? 6 : video->rotation == 180 ? 3 : video->rotation == 270 ? 8 : 1;
    status = uform__media_av_open_decoder(state->stream->codecpar, state->stream->time_base, limits->max_pixels, &state->decoder,
                                          "video", "uform__media_video_decode", outcome);
    if (status != UFORM_OK) return status;

    /* Targets in the stream's time base, relative to its start (the first frame when unknown). */
    int64_t start = state->stream->start_time;
    int start_known = start != AV_NOPTS_VALUE;
    state->start_pts = start_known ? start : 0;
    uint32_t next = 0, frames = video->frames;
    /* `last_read`: the latest decoding timestamp read. The first keyframe counts as read: reading
     * from the start is what happens anyway. */
    const AVIndexEntry *first_entry = av->avformat_index_get_entries_count(state->stream) > 0 ? av->avformat_index_get_entry(state->stream, 0) : NULL;
    int64_t last_read = first_entry ? first_entry->timestamp : INT64_MIN, checked = -1, previous_pts = AV_NOPTS_VALUE;
    int draining = 0, last_error = 0, have_held = 0, exhausted = 0;
    state->held_slot = -1, state->last_slot = -1;
    while (next < frames) {
        int64_t target = target_pts(state, next, frames, duration);
        if (checked != next && !draining && start_known) {
            checked = next;
            int entry = av->av_index_search_timestamp(state->stream, target, AVSEEK_FLAG_BACKWARD);
            const AVIndexEntry *keyframe = entry >= 0 ? av->avformat_index_get_entry(state->stream, entry) : NULL;
            /* Copy the entry: seeking may grow the index and move it. */
            int64_t keyframe_time = keyframe && (keyframe->flags & AVINDEX_KEYFRAME) ? keyframe->timestamp : INT64_MIN;
            /* Index entries carry decoding timestamps, compared with those of the packets read; the
             * seek itself takes the target's presentation time and lands on the keyframe before it. */
            if (keyframe_time != INT64_MIN && keyframe_time > last_read &&
                av->av_seek_frame(format, state->index, target, AVSEEK_FLAG_BACKWARD) >= 0) {
                av->avcodec_flush_buffers(state->decoder);
                ++video->seeks;
                last_read = keyframe_time;
                /* The held frame precedes the keyframe and is no longer the nearest to anything ahead. */
                av->av_frame_unref(state->held);
                have_held = 0;
            }
        }
        int error = av->avcodec_receive_frame(state->decoder, state->frame);
        if (error == AVERROR(EAGAIN)) {
            if (draining) break;
            error = av->av_read_frame(format, state->packet);
            if (uform__media_av_enomem(error)) {
                exhausted = 1;
                break;
            }
            if (error < 0) {
                draining = 1;
                av->avcodec_send_packet(state->decoder, NULL);
                continue;
            }
            if (state->packet->stream_index == state->index) {
                int64_t stamp = state->packet->dts != AV_NOPTS_VALUE ? state->packet->dts : state->packet->pts;
                if (stamp != AV_NOPTS_VALUE && stamp > last_read) last_read = stamp;
                error = av->avcodec_send_packet(state->decoder, state->packet);
                if (uform__media_av_enomem(error)) {
                    av->av_packet_unref(state->packet);
                    exhausted = 1;
                    break;
                }
                if (error < 0 && error != AVERROR(EAGAIN)) { /* a corrupt packet: skip it, as players do */
                    last_error = error;
                    uform__media_av_skipped();
                }
            }
            av->av_packet_unref(state->packet);
            continue;
        }
        if (uform__media_av_enomem(error)) {
            exhausted = 1;
            break;
        }
        if (error == AVERROR_EOF) break;
        if (error < 0) {
            last_error = error;
            uform__media_av_skipped(); /* the frames after it are not decoded */
            break;
        }
        ++video->decoded;
        int64_t pts = state->frame->best_effort_timestamp;
        if (pts == AV_NOPTS_VALUE) /* no timestamps at all: assume a constant rate from the previous frame */
            pts = previous_pts == AV_NOPTS_VALUE ? state->start_pts
                  : previous_pts >= INT64_MAX - INT32_MAX ? previous_pts
                                                          : previous_pts + (state->frame->pkt_duration > 0 && state->frame->pkt_duration < INT32_MAX
                                                                                ? state->frame->pkt_duration : 1);
        previous_pts = pts;
        if (!start_known) state->start_pts = pts, start_known = 1;
        if (!have_held) { /* the first frame is also the nearest one for targets before it */
            av->av_frame_move_ref(state->held, state->frame);
            state->held_pts = pts, state->held_slot = -1, have_held = 1;
        }
        /* Every target before this frame's start is covered by the held frame. */
        while (next < frames && target_pts(state, next, frames, duration) < pts) {
            status = emit_held(state, next++, outcome);
            if (status != UFORM_OK) return status;
        }
        if (state->frame->buf[0]) { /* still ours unless it just became the held frame */
            av->av_frame_unref(state->held);
            av->av_frame_move_ref(state->held, state->frame);
            state->held_pts = pts, state->held_slot = -1;
        }
    }
    if (exhausted) /* a packet or frame FFmpeg could not allocate: the video is fine, the memory is not */
        return uform__media_av_fail_enomem(outcome, "uform__media_video_decode",
                           "video: FFmpeg cannot allocate a packet or frame of the %s stream", av->avcodec_get_name(parameters->codec_id));
    if (!have_held && state->last_slot >= 0) { /* nothing decoded after a seek: repeat the last frame shown */
        for (; next < frames; ++next) copy_slot(state, next, state->last_slot);
        return UFORM_OK;
    }
    if (!have_held)
        return uform__fail(outcome, UFORM_FORMAT, "uform__media_video_decode", "video: the %s stream in the %s container decodes to no frame (%s)",
                           av->avcodec_get_name(parameters->codec_id), container,
                           last_error ? uform__media_av_error(last_error, message) : "no packets");
    for (; next < frames; ++next) { /* past the last frame: repeat it */
        status = emit_held(state, next, outcome);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* One decode into `video` (zeroed on entry, freed and zeroed again on failure). */
static uform_status_t attempt(const void *bytes, size_t size, uint32_t frames, const uform__media_limits_t *resolved,
                              uform__media_video_t *video, uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    uform_status_t status;
    memset(video, 0, sizeof *video);
    video->frames = frames;
    video->times = malloc(frames * sizeof(double));
    video_state_t state = {.video = video};
    state.packet = av->av_packet_alloc();
    state.frame = av->av_frame_alloc();
    state.held = av->av_frame_alloc();
    if (!video->times || !state.packet || !state.frame || !state.held)
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__media_video_decode", "video: cannot allocate decoding state");
    else
        status = decode_frames(&state, bytes, size, resolved, outcome);
    av->sws_freeContext(state.scaler);
    free(state.converted);
    av->avcodec_free_context(&state.decoder);
    av->av_frame_free(&state.frame);
    av->av_frame_free(&state.held);
    av->av_packet_free(&state.packet);
    uform__media_av_close(&state.input);
    if (status != UFORM_OK) uform__media_video_free(video);
    return status;
}

uform_status_t uform__media_video_decode(const void *bytes, size_t size, uint32_t frames, const uform__media_limits_t *limits,
                                         uform__media_video_t *video, uform_outcome_t *outcome) {
    if (!video) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "video: NULL output");
    memset(video, 0, sizeof *video);
    uform__media_limits_t resolved;
    uform__media_limits_resolve(limits, &resolved);
    if (!bytes && size) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "video: NULL bytes with size %zu", size);
    if (frames == 0 || frames > resolved.max_frames)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "video: %u frames requested (expected 1 to %u, max_frames)", frames,
                           resolved.max_frames);
    if (size == 0) return uform__fail(outcome, UFORM_FORMAT, __func__, "not a video: the item is empty (0 bytes)");
    uform__media_kind_t kind = uform__media_sniff(bytes, size);
    if (uform__media_kind_is_image(kind) || kind == UFORM__MEDIA_WAV || kind == UFORM__MEDIA_FLAC || kind == UFORM__MEDIA_MP3 ||
        kind == UFORM__MEDIA_ADTS)
        return uform__fail(outcome, UFORM_FORMAT, __func__, "not a video: the bytes look like %s %s", uform__media_kind_article(kind),
                           uform__media_kind_name(kind));
    const uform__av_t *av = NULL;
    uform_status_t status = uform__av_require(&av, "video", __func__, outcome);
    if (status != UFORM_OK) return status;
    uform__media_av_begin();
    status = attempt(bytes, size, frames, &resolved, video, outcome);
    if (uform__media_av_retry(status)) { /* memory may be back, or the file is at fault: see av_common.h */
        uform__media_video_free(video);
        status = uform__media_av_settle(attempt(bytes, size, frames, &resolved, video, outcome), outcome, __func__);
    }
    if (status == UFORM_OK) uform__succeed(outcome, __func__);
    return status;
}

#else

uform_status_t uform__media_video_decode(const void *bytes, size_t size, uint32_t frames, const uform__media_limits_t *limits,
                                         uform__media_video_t *video, uform_outcome_t *outcome) {
    if (!video) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "video: NULL output");
    memset(video, 0, sizeof *video);
    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                       "video: decoded through FFmpeg, and this build has none (configure with UFORM_WITH_FFMPEG=ON)");
}

#endif
