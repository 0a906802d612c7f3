/* WebP through libwebp: lossy, lossless, with or without alpha (composited over white, media.h).
 * Animated WebP needs the demux library and is answered UFORM_UNSUPPORTED. */
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
    size_t buffer_size = count * (size_t)channels;
    int stride = features.width * channels;
    uint8_t *decoded = features.has_alpha ? WebPDecodeRGBAInto(bytes, size, pixels, buffer_size, stride)
                                          : WebPDecodeRGBInto(bytes, size, pixels, buffer_size, stride);
    if (!decoded) {
        free(pixels);
        return uform__fail(outcome, UFORM_FORMAT, __func__, "WebP: %d x %d %s image does not decode (%zu bytes: corrupt or truncated)",
                           features.width, features.height, features.format == 2 ? "lossless" : "lossy", size);
    }
    if (features.has_alpha) {
        uform__media_rgba_over_white(pixels, count, pixels);
        uint8_t *shrunk = realloc(pixels, count * 3);
        if (shrunk) pixels = shrunk;
    }
    image->width = (uint32_t)features.width, image->height = (uint32_t)features.height, image->pixels = pixels;
    return UFORM_OK;
}
