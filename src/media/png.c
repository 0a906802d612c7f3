/* PNG through libspng: every colour type and depth decodes to RGBA8 with tRNS applied, then alpha
 * is composited over white (media.h). 16-bit samples keep their high byte, as PIL's "RGB;16B" does;
 * gamma chunks are ignored, as PIL ignores them. */
#include <spng.h>
#include <stdlib.h>

#include "core/outcome.h"
#include "media/media.h"

uform_status_t uform__media_png_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                       uform__media_image_t *image, uform_outcome_t *outcome) {
    spng_ctx *context = spng_ctx_new(0);
    if (!context) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "PNG: cannot create a libspng context");
    uform_status_t status = UFORM_OK;
    uint8_t *rgba = NULL;
    /* Ancillary chunks (text, ICC, ...) are bounded too, so a file cannot make us cache gigabytes. */
    spng_set_chunk_limits(context, 64u << 20, 64u << 20);
    int error = spng_set_png_buffer(context, bytes, size);
    struct spng_ihdr header = {0};
    if (!error) error = spng_get_ihdr(context, &header);
    if (error) {
        status = uform__fail(outcome, UFORM_FORMAT, __func__, "PNG: corrupt header (%zu bytes): %s", size, spng_strerror(error));
        goto done;
    }
    status = uform__media_check_pixels(header.width, header.height, limits, "PNG", __func__, outcome);
    if (status != UFORM_OK) goto done;
    size_t rgba_size = 0;
    error = spng_decoded_image_size(context, SPNG_FMT_RGBA8, &rgba_size);
    if (error) {
        status = uform__fail(outcome, UFORM_FORMAT, __func__, "PNG: %u x %u image: %s", header.width, header.height, spng_strerror(error));
        goto done;
    }
    rgba = malloc(rgba_size);
    if (!rgba) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "PNG: cannot allocate %u x %u pixels", header.width, header.height);
        goto done;
    }
    error = spng_decode_image(context, rgba, rgba_size, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
    if (error) {
        status = uform__fail(outcome, UFORM_FORMAT, __func__, "PNG: %u x %u image does not decode (%zu bytes): %s",
                             header.width, header.height, size, spng_strerror(error));
        goto done;
    }
    size_t count = (size_t)header.width * header.height;
    uform__media_rgba_over_white(rgba, count, rgba);
    uint8_t *shrunk = realloc(rgba, count * 3);
    if (shrunk) rgba = shrunk;
    image->width = header.width, image->height = header.height, image->pixels = rgba;
    rgba = NULL;
done:
    free(rgba);
    spng_ctx_free(context);
    return status;
}
