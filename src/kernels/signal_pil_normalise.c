/*
 * Crop, rescale, normalise and lay out resized RGB8 bytes as the published processors do (see
 * signal_pil.h for the arithmetic of each). Every output value is a function of one byte and its
 * channel, so the arithmetic runs once per (channel, byte) into a table of 3 × 256 floats, in
 * exactly the processor's order of float32 / float64 operations; the pictures then only look
 * values up, and the table equals the processor's value for value.
 *
 * Shapes: pixels [height, width, 3] bytes (row stride in bytes); out [3, crop_height,
 * crop_width] floats (CHW) or [(crop_height/p)·(crop_width/p), 3, p, p] floats (PATCHES).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal_pil.h"

/* table[c · 256 + v] = the processor's value for byte v of channel c. */
static void table_fill(const uform__signal_pil_normalise_t *normalise, float *table) {
    for (int c = 0; c < 3; ++c) {
        const float mean = normalise->mean[c], std = normalise->std[c];
        for (int v = 0; v < 256; ++v) {
            float x, y;
            if (normalise->arithmetic == UFORM__SIGNAL_PIL_TORCHVISION) {
                /* ToTensor: uint8 → float32, div(255) in float32; Normalize: sub_, then div_. */
                x = (float)v / 255.0f;
                y = (x - mean) / std;
            } else {
                /* transformers: astype(float64) · scale, astype(float32); normalize in float32. */
                x = normalise->rescale ? (float)((double)v * normalise->rescale_factor) : (float)v;
                y = normalise->normalise ? (x - mean) / std : x;
            }
            table[c * 256 + v] = y;
        }
    }
}

uform_status_t uform__signal_pil_crop_normalise(const uint8_t *pixels, size_t height, size_t width, size_t stride,
                                                ptrdiff_t top, ptrdiff_t left, size_t crop_height,
                                                size_t crop_width, uint8_t fill,
                                                const uform__signal_pil_normalise_t *normalise,
                                                uform__signal_pil_layout_t layout, size_t patch, float *out,
                                                uform_outcome_t *outcome) {
    if (!normalise || !out)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", !normalise ? "normalise" : "out");
    if (height && width && !pixels)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "pixels is NULL for a %zux%zu picture", height,
                           width);
    if (height && width && stride < width * 3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "stride %zu bytes is shorter than a row of %zu RGB8 pixels", stride, width);
    if (crop_height == 0 || crop_width == 0 || crop_height > UFORM__SIGNAL_PIL_MAX_SIDE ||
        crop_width > UFORM__SIGNAL_PIL_MAX_SIDE)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "crop %zux%zu: sides must be 1 .. %zu",
                           crop_height, crop_width, UFORM__SIGNAL_PIL_MAX_SIDE);
    if (layout != UFORM__SIGNAL_PIL_CHW && layout != UFORM__SIGNAL_PIL_PATCHES)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "unknown layout %d", (int)layout);
    if (layout == UFORM__SIGNAL_PIL_PATCHES && (patch == 0 || crop_height % patch || crop_width % patch))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "patch %zu does not divide the crop %zux%zu",
                           patch, crop_height, crop_width);
    if (normalise->arithmetic != UFORM__SIGNAL_PIL_TRANSFORMERS && normalise->arithmetic != UFORM__SIGNAL_PIL_TORCHVISION)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "unknown arithmetic %d", (int)normalise->arithmetic);
    const int normalising = normalise->arithmetic == UFORM__SIGNAL_PIL_TORCHVISION || normalise->normalise;
    for (int c = 0; c < 3 && normalising; ++c)
        if (!(normalise->std[c] != 0.0f) || !isfinite(normalise->std[c]) || !isfinite(normalise->mean[c]))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "channel %d: mean %g and std %g must be finite, std non-zero", c,
                               (double)normalise->mean[c], (double)normalise->std[c]);
    if (normalise->arithmetic == UFORM__SIGNAL_PIL_TRANSFORMERS && normalise->rescale &&
        !isfinite(normalise->rescale_factor))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "rescale_factor %g is not finite",
                           normalise->rescale_factor);

    float table[3 * 256];
    table_fill(normalise, table);
    uint8_t *row = malloc(crop_width * 3);
    if (!row)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate a row of %zu pixels", crop_width);
    /* Columns [inside_begin, inside_end) of a crop row read the picture, the others are fill. */
    const ptrdiff_t w = (ptrdiff_t)width, cw = (ptrdiff_t)crop_width;
    ptrdiff_t inside_begin = left < 0 ? -left : 0, inside_end = w - left < cw ? w - left : cw;
    if (inside_end < inside_begin) inside_end = inside_begin;
    if (inside_begin > cw) inside_begin = inside_end = cw;
    const size_t plane = crop_height * crop_width, p = patch, across = layout == UFORM__SIGNAL_PIL_PATCHES ? crop_width / p : 0;
    for (size_t y = 0; y < crop_height; ++y) {
        const ptrdiff_t source_y = (ptrdiff_t)y + top;
        if (source_y < 0 || source_y >= (ptrdiff_t)height || inside_begin == inside_end) {
            memset(row, fill, crop_width * 3);
        } else {
            memset(row, fill, (size_t)inside_begin * 3);
            memcpy(row + inside_begin * 3, pixels + (size_t)source_y * stride + (size_t)(inside_begin + left) * 3,
                   (size_t)(inside_end - inside_begin) * 3);
            memset(row + inside_end * 3, fill, (size_t)(cw - inside_end) * 3);
        }
        if (layout == UFORM__SIGNAL_PIL_CHW) {
            for (size_t c = 0; c < 3; ++c) {
                float *target = out + c * plane + y * crop_width;
                const float *values = table + c * 256;
                for (size_t x = 0; x < crop_width; ++x) target[x] = values[row[3 * x + c]];
            }
        } else {
            /* Patch (y / p, x / p), inside it channel c's row y % p: p floats in a row. */
            float *band = out + (y / p) * across * 3 * p * p + (y % p) * p;
            for (size_t column = 0; column < across; ++column) {
                const uint8_t *bytes = row + column * p * 3;
                for (size_t c = 0; c < 3; ++c) {
                    float *target = band + (column * 3 + c) * p * p;
                    const float *values = table + c * 256;
                    for (size_t x = 0; x < p; ++x) target[x] = values[bytes[3 * x + c]];
                }
            }
        }
    }
    free(row);
    return UFORM_OK;
}
