/* PNG through libspng: every colour type and depth decodes to RGBA8 with tRNS applied, then alpha
 * is composited over white (media.h). 16-bit samples keep their high byte, as PIL's "RGB;16B" does;
 * gamma chunks are ignored, as PIL ignores them. */
#include <spng.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/outcome.h"
#include "media/media.h"

/* libspng's allocator, which it also hands to zlib: the same functions, remembering on this thread
 * whether one failed. libspng reports most of its own failures as SPNG_EMEM, but zlib's
 * Z_MEM_ERROR comes back as "zlib init error" or "IDAT stream error", like a corrupt stream. */
static __thread int allocation_failed;

static void *png_malloc(size_t size) {
    void *block = malloc(size);
    allocation_failed |= !block && size;
    return block;
}
static void *png_realloc(void *pointer, size_t size) {
    void *block = realloc(pointer, size);
    allocation_failed |= !block && size;
    return block;
}
static void *png_calloc(size_t count, size_t size) {
    void *block = calloc(count, size);
    allocation_failed |= !block && count && size;
    return block;
}
static void png_free(void *pointer) { free(pointer); }

/* A libspng error: UFORM_OUT_OF_MEMORY naming `what` when an allocation failed on the way, else
 * UFORM_FORMAT with `message` and libspng's reason. */
static uform_status_t png_error(uform_outcome_t *outcome, int error, const char *what, const char *message) {
    if (error == SPNG_EMEM || allocation_failed)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__media_png_decode", "PNG: cannot allocate what %s needs (%s)", what,
                           spng_strerror(error));
    return uform__fail(outcome, UFORM_FORMAT, "uform__media_png_decode", "PNG: %s: %s", message, spng_strerror(error));
}

uform_status_t uform__media_png_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                       uform__media_image_t *image, uform_outcome_t *outcome) {
    struct spng_alloc allocator = {png_malloc, png_realloc, png_calloc, png_free};
    allocation_failed = 0;
    spng_ctx *context = spng_ctx_new2(&allocator, 0);
    if (!context) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "PNG: cannot allocate a libspng context");
    uform_status_t status = UFORM_OK;
    uint8_t *rgba = NULL;
    /* Ancillary chunks (text, ICC, ...) are bounded too, so a file cannot make us cache gigabytes. */
    spng_set_chunk_limits(context, 64u << 20, 64u << 20);
    int error = spng_set_png_buffer(context, bytes, size);
    struct spng_ihdr header = {0};
    if (!error) error = spng_get_ihdr(context, &header);
    if (error) {
        char message[64];
        snprintf(message, sizeof message, "corrupt header (%zu bytes)", size);
        status = png_error(outcome, error, "the header", message);
        goto done;
    }
    status = uform__media_check_pixels(header.width, header.height, limits, "PNG", __func__, outcome);
    if (status != UFORM_OK) goto done;
    size_t rgba_size = 0;
    error = spng_decoded_image_size(context, SPNG_FMT_RGBA8, &rgba_size);
    if (error) {
        char message[64];
        snprintf(message, sizeof message, "%u x %u image", header.width, header.height);
        status = png_error(outcome, error, "the image's size", message);
        goto done;
    }
    rgba = malloc(rgba_size);
    if (!rgba) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "PNG: cannot allocate %u x %u pixels", header.width, header.height);
        goto done;
    }
    error = spng_decode_image(context, rgba, rgba_size, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
    if (error) {
        char what[64], message[96];
        snprintf(what, sizeof what, "the %u x %u image", header.width, header.height);
        snprintf(message, sizeof message, "%u x %u image does not decode (%zu bytes)", header.width, header.height, size);
        status = png_error(outcome, error, what, message);
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
