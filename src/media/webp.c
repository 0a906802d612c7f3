/* WebP through libwebp: lossy, lossless, with or without alpha (composited over white, media.h).
 * Animated WebP needs the demux library and is answered UFORM_UNSUPPORTED. */
#include <errno.h>
#include <stdlib.h>
#include <webp/decode.h>

#include "core/outcome.h"
#include "media/media.h"

uform_status_t uform__media_webp_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                        uform__media_image_t *image, uform_outcome_t *outcome) {
    WebPBitstreamFeatures features;
    VP8StatusCode code = WebPGetFeatures(bytes, size, &features);
    if (code != VP8_STATUS_OK)
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WebP: corrupt header (%zu bytes): libwebp status %d", size, (int)code);
    if (features.has_animation)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__, "WebP: animated WebP is not supported (decode one frame and pass it as pixels)");
    uform_status_t status = uform__media_check_pixels((uint64_t)(features.width > 0 ? features.width : 0),
                                                      (uint64_t)(features.height > 0 ? features.height : 0), limits, "WebP", __func__, outcome);
    if (status != UFORM_OK) return status;
    size_t count = (size_t)features.width * (size_t)features.height;
    int channels = features.has_alpha ? 4 : 3;
    uint8_t *pixels = malloc(count * (size_t)channels);
    if (!pixels)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "WebP: cannot allocate %d x %d pixels", features.width, features.height);
    /* The advanced API, because its status tells memory exhaustion from a corrupt stream
     * (WebPDecodeRGBInto answers NULL for both); same defaults, into our buffer. */
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) {
        free(pixels);
        return uform__fail(outcome, UFORM_INTERNAL, __func__, "WebP: libwebp refuses this build's decoder ABI version");
    }
    config.output.colorspace = features.has_alpha ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = pixels;
    config.output.u.RGBA.stride = features.width * channels;
    config.output.u.RGBA.size = count * (size_t)channels;
    /* libwebp says VP8_STATUS_OUT_OF_MEMORY for some failed allocations only: others come back as
     * a bitstream error (lossless) or an aborted frame setup (lossy). malloc sets errno, so a
     * failure with ENOMEM set on the way is memory exhaustion whatever the status says. */
    errno = 0;
    code = WebPDecode(bytes, size, &config);
    int exhausted = errno == ENOMEM;
    WebPFreeDecBuffer(&config.output); /* nothing of ours: the memory is external */
    if (code != VP8_STATUS_OK) {
        free(pixels);
        const char *kind = features.format == 2 ? "lossless" : "lossy";
        if (code == VP8_STATUS_OUT_OF_MEMORY || exhausted)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "WebP: cannot allocate libwebp's decoding state for a %d x %d %s image",
                               features.width, features.height, kind);
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WebP: %d x %d %s image does not decode (%zu bytes: corrupt or truncated, libwebp status %d)",
                           features.width, features.height, kind, size, (int)code);
    }
    if (features.has_alpha) {
        uform__media_rgba_over_white(pixels, count, pixels);
        uint8_t *shrunk = realloc(pixels, count * 3);
        if (shrunk) pixels = shrunk;
    }
    image->width = (uint32_t)features.width, image->height = (uint32_t)features.height, image->pixels = pixels;
    return UFORM_OK;
}
