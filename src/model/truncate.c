/*
 * uform_embedding_truncate (uform.h): a Matryoshka prefix of an embedding the library already
 * normalised, scaled back to unit length. Callers that keep the full embedding and answer several
 * prefixes from it (a server asked for "dimensions", a search of a narrower index) use this instead
 * of encoding again with config.dimensions, and every one of them gets the same bytes.
 */
#include <math.h>
#include <string.h>

#include "core/outcome.h"
#include "truncate.h"

void uform__row_normalize(float *row, size_t columns) {
    double sum = 0;
    for (size_t c = 0; c < columns; ++c) sum += (double)row[c] * row[c];
    if (sum == 0) return;
    /* Division rather than a product with the reciprocal: one rounding per value. */
    const double norm = sqrt(sum);
    for (size_t c = 0; c < columns; ++c) row[c] = (float)(row[c] / norm);
}

UFORM_API uform_status_t uform_embedding_truncate(const float *embedding, size_t width, size_t dimensions, float *prefix,
                                                  uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!embedding || !prefix) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", embedding ? "prefix" : "embedding");
    if (dimensions == 0 || dimensions > width)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "dimensions %zu: a prefix holds 1 to width (%zu) columns", dimensions, width);
    /* memmove: `prefix` may be `embedding` itself. */
    if (prefix != embedding) memmove(prefix, embedding, dimensions * sizeof(float));
    /* The whole width is already of unit length: renormalising it would only move last bits. */
    if (dimensions < width) uform__row_normalize(prefix, dimensions);
    return uform__succeed(outcome, function);
}
