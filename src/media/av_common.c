/* FFmpeg plumbing shared by av_image.c, av_audio.c and av_video.c (see av_common.h). */
#include "media/av_common.h"

#if UFORM_WITH_FFMPEG
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

/* Set when this thread reported FFmpeg's ENOMEM as out of memory (see av_common.h). */
static __thread int enomem_seen;

/* Set when this thread's attempt skipped a packet or stopped at a decoding error. */
static __thread int incomplete;

void uform__media_av_skipped(void) { incomplete = 1; }
void uform__media_av_begin(void) { enomem_seen = 0, incomplete = 0; }

int uform__media_av_retry(uform_status_t status) {
    int again = status == UFORM_FORMAT || status == UFORM_OUT_OF_MEMORY || (status == UFORM_OK && incomplete);
    enomem_seen = 0, incomplete = 0;
    return again;
}

uform_status_t uform__media_av_fail_enomem(uform_outcome_t *outcome, const char *function, const char *format, ...) {
    enomem_seen = 1;
    va_list arguments;
    va_start(arguments, format);
    uform_status_t status = uform__fail_v(outcome, UFORM_OUT_OF_MEMORY, function, format, arguments);
    va_end(arguments);
    return status;
}

uform_status_t uform__media_av_settle(uform_status_t status, uform_outcome_t *outcome, const char *function) {
    if (status != UFORM_FORMAT && status != UFORM_OUT_OF_MEMORY) return status;
    /* The size of a few decoded frames, never touched (it costs no pages): if the allocator cannot
     * serve it, memory is exhausted whatever FFmpeg said. */
    void *probe = malloc((size_t)1 << 20);
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    snprintf(message, sizeof message, "%s", outcome ? outcome->message : "");
    if (!probe)
        return status == UFORM_OUT_OF_MEMORY
                   ? status
                   : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s; and memory is exhausted (a 1 MiB allocation fails), "
                                                                     "so FFmpeg's failure is taken for an allocation it could not make", message);
    free(probe);
    if (status == UFORM_OUT_OF_MEMORY && enomem_seen)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "%s, though memory is available: the file asks for sizes FFmpeg will not allocate (corrupt?)", message);
    return status;
}

static void quiet_now(void) {
    const uform__av_t *av = uform__av();
    /* AV_LOG_INFO is FFmpeg's default: a host that set anything else chose it on purpose. */
    if (av->av_log_get_level() == AV_LOG_INFO) av->av_log_set_level(AV_LOG_QUIET);
}

void uform__media_av_quiet(void) { pthread_once(&quiet_once, quiet_now); }

const char *uform__media_av_error(int error, char *buffer) {
    const uform__av_t *av = uform__av();
    if (av->av_strerror(error, buffer, AV_ERROR_MAX_STRING_SIZE) < 0) snprintf(buffer, AV_ERROR_MAX_STRING_SIZE, "error %d", error);
    return buffer;
}

static int read_memory(void *opaque, uint8_t *buffer, int capacity) {
    uform__media_av_input_t *input = opaque;
    size_t left = input->size - input->position;
    if (left == 0) return AVERROR_EOF;
    size_t count = left < (size_t)capacity ? left : (size_t)capacity;
    memcpy(buffer, input->data + input->position, count);
    input->position += count;
    return (int)count;
}

static int64_t seek_memory(void *opaque, int64_t offset, int whence) {
    uform__media_av_input_t *input = opaque;
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return (int64_t)input->size;
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)input->position
                                     : whence == SEEK_END ? (int64_t)input->size : -1;
    if (base < 0) return AVERROR(EINVAL);
    int64_t target = base + offset;
    if (target < 0 || target > (int64_t)input->size) return AVERROR(EINVAL);
    input->position = (size_t)target;
    return target;
}

/* Demuxers that follow references (HLS, DASH, concat, MOV data references) would open other
 * files or URLs: refuse them all, so decoding reads only the caller's bytes. */
static int refuse_nested_open(AVFormatContext *format, AVIOContext **io, const char *url, int flags, AVDictionary **options) {
    return AVERROR(EPERM);
}

uform_status_t uform__media_av_open(uform__media_av_input_t *input, const uint8_t *bytes, size_t size, const char *what,
                                    const char *function, uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    uform__media_av_quiet();
    memset(input, 0, sizeof *input);
    input->data = bytes, input->size = size;
    enum { buffer_size = 1 << 16 };
    uint8_t *buffer = av->av_malloc(buffer_size);
    if (buffer) input->io = av->avio_alloc_context(buffer, buffer_size, 0, input, read_memory, NULL, seek_memory);
    if (!input->io) {
        av->av_free(buffer);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: cannot allocate an FFmpeg I/O context", what);
    }
    input->format = av->avformat_alloc_context();
    if (!input->format) {
        uform__media_av_close(input);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: cannot allocate an FFmpeg format context", what);
    }
    input->format->pb = input->io;
    input->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    input->format->io_open = refuse_nested_open;
    char message[AV_ERROR_MAX_STRING_SIZE];
    int error = av->avformat_open_input(&input->format, NULL, NULL, NULL); /* frees the context on failure */
    if (uform__media_av_enomem(error)) {
        uform__media_av_close(input);
        return uform__media_av_fail_enomem(outcome, function, "%s: FFmpeg cannot allocate a demuxer for %zu bytes", what, size);
    }
    if (error < 0) {
        uform__media_av_close(input);
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: no container FFmpeg recognises in %zu bytes (%s)", what, size,
                           uform__media_av_error(error, message));
    }
    error = av->avformat_find_stream_info(input->format, NULL);
    if (error < 0) {
        const char *name = input->format->iformat ? input->format->iformat->name : "?";
        uform__media_av_close(input);
        if (uform__media_av_enomem(error))
            return uform__media_av_fail_enomem(outcome, function, "%s: FFmpeg cannot allocate what reading the %s container's streams needs",
                               what, name);
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: the %s container's streams cannot be read (%s)", what, name,
                           uform__media_av_error(error, message));
    }
    return UFORM_OK;
}

void uform__media_av_close(uform__media_av_input_t *input) {
    const uform__av_t *av = uform__av();
    if (input->format) av->avformat_close_input(&input->format); /* leaves the custom I/O context to us */
    if (input->io) {
        av->av_freep(&input->io->buffer); /* FFmpeg may have replaced the buffer we gave it */
        av->avio_context_free(&input->io);
    }
}

uform_status_t uform__media_av_open_decoder(const AVCodecParameters *parameters, AVRational time_base, uint64_t max_pixels,
                                            AVCodecContext **decoder, const char *what, const char *function,
                                            uform_outcome_t *outcome) {
    const uform__av_t *av = uform__av();
    *decoder = NULL;
    const AVCodec *codec = av->avcodec_find_decoder(parameters->codec_id);
    if (!codec)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function, "%s: this FFmpeg build has no decoder for codec '%s'", what,
                           av->avcodec_get_name(parameters->codec_id));
    AVCodecContext *context = av->avcodec_alloc_context3(codec);
    if (!context) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: cannot allocate a decoder", what);
    char message[AV_ERROR_MAX_STRING_SIZE];
    int error = av->avcodec_parameters_to_context(context, parameters);
    if (error >= 0) {
        context->thread_count = 1;
        context->pkt_timebase = time_base;
        if (max_pixels) context->max_pixels = max_pixels > INT64_MAX ? INT64_MAX : (int64_t)max_pixels;
        error = av->avcodec_open2(context, codec, NULL);
    }
    if (error < 0) {
        av->avcodec_free_context(&context);
        if (uform__media_av_enomem(error))
            return uform__media_av_fail_enomem(outcome, function, "%s: FFmpeg cannot allocate the '%s' decoder's state", what, codec->name);
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: the '%s' decoder does not open (%s)", what, codec->name,
                           uform__media_av_error(error, message));
    }
    *decoder = context;
    return UFORM_OK;
}

int uform__media_av_frame_to_packed(const AVFrame *frame, int channels, int width, int height, uint8_t *out,
                                    struct SwsContext **scaler) {
    const uform__av_t *av = uform__av();
    enum AVPixelFormat target = channels == 4 ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24;
    /* Same size in and out is a pure format conversion. Full horizontal chroma interpolation rather
     * than nearest chroma; measured here it is also the fastest path for YUV 4:2:0 to RGB24 (CPU time
     * to decode and convert a 640×480 H.264 frame: 0.77 ms, against 0.93 ms without the flag and
     * 2.7 ms with SWS_ACCURATE_RND). */
    *scaler = av->sws_getCachedContext(*scaler, frame->width, frame->height, (enum AVPixelFormat)frame->format, width, height, target,
                                   SWS_BILINEAR | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
    if (!*scaler) /* NULL for an unconvertible format, or when the context could not be allocated */
        return av->sws_isSupportedInput((enum AVPixelFormat)frame->format) && av->sws_isSupportedOutput(target) ? AVERROR(ENOMEM)
                                                                                                              : AVERROR(EINVAL);
    /* YUV matrix and range from the frame (BT.709 for HD, BT.601 when unspecified; full range for
     * JPEG-style streams), set only when they change: setting rebuilds the conversion tables. */
    int colorspace = frame->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : (int)frame->colorspace;
    const int *coefficients = av->sws_getCoefficients(colorspace);
    int full_range = frame->color_range == AVCOL_RANGE_JPEG;
    int *table, source_range, *destination_table, destination_range, brightness, contrast, saturation;
    if (av->sws_getColorspaceDetails(*scaler, &table, &source_range, &destination_table, &destination_range, &brightness, &contrast,
                                 &saturation) >= 0 &&
        (memcmp(table, coefficients, 4 * sizeof(int)) != 0 || source_range != full_range))
        av->sws_setColorspaceDetails(*scaler, coefficients, full_range, av->sws_getCoefficients(SWS_CS_DEFAULT), 1, brightness, contrast,
                                 saturation);
    uint8_t *planes[4] = {out, NULL, NULL, NULL};
    int strides[4] = {width * channels, 0, 0, 0};
    int rows = av->sws_scale(*scaler, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    if (rows < 0) return rows; /* AVERROR(ENOMEM) among others */
    return rows == height ? 0 : AVERROR(EINVAL);
}
#endif
