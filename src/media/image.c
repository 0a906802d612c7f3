/* Image decoding entry point: sniffs the format, dispatches, and holds the pixel helpers shared by
 * the decoders (alpha over white, EXIF orientation, the pixel limit). */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "media/media.h"

uform_status_t uform__media_check_pixels(uint64_t width, uint64_t height, const uform__media_limits_t *limits,
                                         const char *what, const char *function, uform_outcome_t *outcome) {
    uform__media_limits_t resolved;
    uform__media_limits_resolve(limits, &resolved);
    if (width == 0 || height == 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: the header says %llu x %llu pixels; an image needs at least 1 x 1",
                           what, (unsigned long long)width, (unsigned long long)height);
    /* Both factors fit in 32 bits in every format read here, so the product cannot overflow 64. */
    if (width > UINT32_MAX || height > UINT32_MAX || width * height > resolved.max_pixels)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "%s: %llu x %llu pixels exceed the limit of %llu pixels (max_pixels), refused before decoding",
                           what, (unsigned long long)width, (unsigned long long)height,
                           (unsigned long long)resolved.max_pixels);
    return UFORM_OK;
}

void uform__media_rgba_over_white(const uint8_t *rgba, size_t count, uint8_t *rgb) {
    for (size_t i = 0; i < count; ++i) {
        uint32_t alpha = rgba[4 * i + 3], white = 255u * (255u - alpha);
        /* (c·a + 255·(255−a)) / 255 rounded to nearest, exact in integers. */
        for (int c = 0; c < 3; ++c) rgb[3 * i + c] = (uint8_t)((rgba[4 * i + c] * alpha + white + 127u) / 255u);
    }
}

uint8_t *uform__media_orient(const uint8_t *pixels, uint32_t width, uint32_t height, int orientation,
                             uint32_t *new_width, uint32_t *new_height) {
    int transposed = orientation >= 5 && orientation <= 8;
    uint32_t out_width = transposed ? height : width, out_height = transposed ? width : height;
    uint8_t *out = malloc((size_t)width * height * 3);
    if (!out) return NULL;
    for (uint32_t y = 0; y < out_height; ++y) {
        for (uint32_t x = 0; x < out_width; ++x) {
            uint32_t sx, sy; /* the source pixel shown at output (x, y) */
            switch (orientation) {
            case 2: sx = width - 1 - x, sy = y; break;                 /* mirrored left-right */
            case 3: sx = width - 1 - x, sy = height - 1 - y; break;    /* rotated 180° */
            case 4: sx = x, sy = height - 1 - y; break;                /* mirrored top-bottom */
            case 5: sx = y, sy = x; break;                             /* transposed */
            case 6: sx = y, sy = height - 1 - x; break;                /* needs 90° clockwise */
            case 7: sx = width - 1 - y, sy = height - 1 - x; break;    /* transversed */
            case 8: sx = width - 1 - y, sy = x; break;                 /* needs 90° counter-clockwise */
            default: sx = x, sy = y; break;
            }
            memcpy(out + ((size_t)y * out_width + x) * 3, pixels + ((size_t)sy * width + sx) * 3, 3);
        }
    }
    *new_width = out_width, *new_height = out_height;
    return out;
}

void uform__media_image_free(uform__media_image_t *image) {
    if (!image) return;
    free(image->pixels);
    memset(image, 0, sizeof *image);
}

uform_status_t uform__media_image_decode(const void *bytes, size_t size, const uform__media_limits_t *limits,
                                         uform__media_image_t *image, uform_outcome_t *outcome) {
    if (!image) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "image: NULL output");
    memset(image, 0, sizeof *image);
    if (!bytes && size) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "image: NULL bytes with size %zu", size);
    if (size == 0) return uform__fail(outcome, UFORM_FORMAT, __func__, "not an image: the item is empty (0 bytes)");
    const uint8_t *data = bytes;
    uform__media_kind_t kind = uform__media_sniff(data, size);
    uform_status_t status;
    switch (kind) {
    case UFORM__MEDIA_JPEG: status = uform__media_jpeg_decode(data, size, limits, image, outcome); break;
    case UFORM__MEDIA_PNG: status = uform__media_png_decode(data, size, limits, image, outcome); break;
    case UFORM__MEDIA_WEBP: status = uform__media_webp_decode(data, size, limits, image, outcome); break;
    case UFORM__MEDIA_GIF: case UFORM__MEDIA_BMP: case UFORM__MEDIA_TIFF: case UFORM__MEDIA_PNM: case UFORM__MEDIA_JPEG2000:
        status = uform__media_av_image_decode(kind, data, size, limits, image, outcome);
        break;
    case UFORM__MEDIA_HEIF:
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                           "HEIF/AVIF image: no decoder for HEIF or AVIF stills in this build (convert to JPEG, PNG or WebP)");
    case UFORM__MEDIA_UNKNOWN: {
        char head[3 * 8];
        uform__media_head_hex(data, size, 8, head, sizeof head);
        return uform__fail(outcome, UFORM_FORMAT, __func__,
                           "not an image: the first bytes match no known format (%zu %s %s)", size,
                           size > 8 ? "bytes starting" : size == 1 ? "byte:" : "bytes:", head);
    }
    default:
        return uform__fail(outcome, UFORM_FORMAT, __func__, "not an image: the bytes look like %s %s", uform__media_kind_article(kind),
                           uform__media_kind_name(kind));
    }
    if (status != UFORM_OK) uform__media_image_free(image);
    else uform__succeed(outcome, __func__);
    return status;
}
