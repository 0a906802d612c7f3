/* GIF, BMP, TIFF, PNM and JPEG 2000 through libavcodec: the whole file is one packet for the
 * format's image decoder (its first frame for GIF), converted to RGBA by libswscale and composited
 * over white (media.h). Without FFmpeg these formats are UFORM_UNSUPPORTED. */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/av_common.h"
#include "media/media.h"

#if UFORM_WITH_FFMPEG

static uint32_t little_u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static int32_t little_i32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Sizes the header states, checked against the pixel limit before the decoder allocates. Formats
 * not read here rely on AVCodecContext.max_pixels, which refuses the frame buffer. */
static uform_status_t check_header(uform__media_kind_t kind, const uint8_t *bytes, size_t size,
                                   const uform__media_limits_t *limits, const char *name, uform_outcome_t *outcome) {
    if (kind == UFORM__MEDIA_GIF) {
        if (size < 10) return uform__fail(outcome, UFORM_FORMAT, "uform__media_av_image_decode", "GIF: truncated header (%zu bytes)", size);
        return uform__media_check_pixels(little_u16(bytes + 6), little_u16(bytes + 8), limits, name, "uform__media_av_image_decode", outcome);
    }
    if (kind == UFORM__MEDIA_BMP) {
        if (size < 26) return uform__fail(outcome, UFORM_FORMAT, "uform__media_av_image_decode", "BMP: truncated header (%zu bytes)", size);
        int64_t width, height;
        if (little_i32(bytes + 14) == 12) width = little_u16(bytes + 18), height = little_u16(bytes + 20);
        else width = little_i32(bytes + 18), height = little_i32(bytes + 22);
        if (width < 0) width = -width;
        if (height < 0) height = -height; /* negative height: rows stored top-down */
        return uform__media_check_pixels((uint64_t)width, (uint64_t)height, limits, name, "uform__media_av_image_decode", outcome);
    }
    return UFORM_OK;
}

static uform_status_t attempt(uform__media_kind_t kind, const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                              uform__media_image_t *image, uform_outcome_t *outcome) {
    static const char function[] = "uform__media_av_image_decode";
    const char *name = uform__media_kind_name(kind);
    enum AVCodecID id = AV_CODEC_ID_NONE;
    switch (kind) {
    case UFORM__MEDIA_GIF: id = AV_CODEC_ID_GIF; break;
    case UFORM__MEDIA_BMP: id = AV_CODEC_ID_BMP; break;
    case UFORM__MEDIA_TIFF: id = AV_CODEC_ID_TIFF; break;
    case UFORM__MEDIA_JPEG2000: id = AV_CODEC_ID_JPEG2000; break;
    case UFORM__MEDIA_PNM: id = bytes[1] == '4' ? AV_CODEC_ID_PBM : bytes[1] == '5' ? AV_CODEC_ID_PGM : AV_CODEC_ID_PPM; break;
    default: return uform__fail(outcome, UFORM_INTERNAL, function, "%s is not an image kind of libavcodec", name);
    }
    uform__media_limits_t resolved;
    uform__media_limits_resolve(limits, &resolved);
    uform_status_t status = check_header(kind, bytes, size, &resolved, name, outcome);
    if (status != UFORM_OK) return status;
    if (size > INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE)
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: %zu bytes are more than one FFmpeg packet holds", name, size);

    const uform__av_t *av = NULL;
    status = uform__av_require(&av, name, function, outcome);
    if (status != UFORM_OK) return status;
    uform__media_av_quiet();
    AVCodecParameters *parameters = av->avcodec_parameters_alloc();
    AVPacket *packet = av->av_packet_alloc();
    AVFrame *frame = av->av_frame_alloc();
    AVCodecContext *decoder = NULL;
    struct SwsContext *scaler = NULL;
    uint8_t *rgba = NULL;
    char message[AV_ERROR_MAX_STRING_SIZE];
    if (!parameters || !packet || !frame || av->av_new_packet(packet, (int)size) < 0) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: cannot allocate FFmpeg structures", name);
        goto done;
    }
    memcpy(packet->data, bytes, size); /* av_new_packet zeroed the padding the decoders may over-read */
    packet->flags |= AV_PKT_FLAG_KEY;
    parameters->codec_type = AVMEDIA_TYPE_VIDEO;
    parameters->codec_id = id;
    status = uform__media_av_open_decoder(parameters, (AVRational){1, 1}, resolved.max_pixels, &decoder, name, function, outcome);
    if (status != UFORM_OK) goto done;
    int error = av->avcodec_send_packet(decoder, packet);
    if (error >= 0) error = av->avcodec_send_packet(decoder, NULL); /* drain: the first frame comes out now */
    if (error >= 0 || error == AVERROR_EOF) error = av->avcodec_receive_frame(decoder, frame);
    if (uform__media_av_enomem(error)) {
        status = uform__media_av_fail_enomem(outcome, function, "%s: FFmpeg cannot allocate what decoding %zu bytes needs", name, size);
        goto done;
    }
    if (error < 0) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "%s: does not decode (%zu bytes; corrupt, truncated or over %llu pixels): %s",
                             name, size, (unsigned long long)resolved.max_pixels, uform__media_av_error(error, message));
        goto done;
    }
    status = uform__media_check_pixels((uint64_t)frame->width, (uint64_t)frame->height, &resolved, name, function, outcome);
    if (status != UFORM_OK) goto done;
    size_t count = (size_t)frame->width * (size_t)frame->height;
    rgba = malloc(count * 4 + UFORM__MEDIA_SWS_SLACK);
    if (!rgba) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: cannot allocate %d x %d pixels", name, frame->width, frame->height);
        goto done;
    }
    error = uform__media_av_frame_to_packed(frame, 4, frame->width, frame->height, rgba, &scaler);
    if (uform__media_av_enomem(error)) {
        status = uform__media_av_fail_enomem(outcome, function, "%s: FFmpeg cannot allocate a libswscale converter for %d x %d pixels", name,
                             frame->width, frame->height);
        goto done;
    }
    if (error < 0) {
        status = uform__fail(outcome, UFORM_FORMAT, function, "%s: pixel format '%s' does not convert to RGBA (%s)", name,
                             av->av_get_pix_fmt_name((enum AVPixelFormat)frame->format), uform__media_av_error(error, message));
        goto done;
    }
    uform__media_rgba_over_white(rgba, count, rgba);
    uint8_t *shrunk = realloc(rgba, count * 3);
    if (shrunk) rgba = shrunk;
    image->width = (uint32_t)frame->width, image->height = (uint32_t)frame->height, image->pixels = rgba;
    rgba = NULL;
done:
    free(rgba);
    av->sws_freeContext(scaler);
    av->avcodec_free_context(&decoder);
    av->av_frame_free(&frame);
    av->av_packet_free(&packet);
    av->avcodec_parameters_free(&parameters);
    return status;
}

uform_status_t uform__media_av_image_decode(uform__media_kind_t kind, const uint8_t *bytes, size_t size,
                                            const uform__media_limits_t *limits, uform__media_image_t *image,
                                            uform_outcome_t *outcome) {
    uform__media_av_begin();
    uform_status_t status = attempt(kind, bytes, size, limits, image, outcome);
    if (uform__media_av_retry(status)) { /* memory may be back, or the file is at fault: see av_common.h */
        uform__media_image_free(image);
        status = uform__media_av_settle(attempt(kind, bytes, size, limits, image, outcome), outcome, __func__);
    }
    return status;
}

#else

uform_status_t uform__media_av_image_decode(uform__media_kind_t kind, const uint8_t *bytes, size_t size,
                                            const uform__media_limits_t *limits, uform__media_image_t *image,
                                            uform_outcome_t *outcome) {
    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                       "%s: decoded through FFmpeg, and this build has none (configure with UFORM_WITH_FFMPEG=ON)",
                       uform__media_kind_name(kind));
}

#endif
