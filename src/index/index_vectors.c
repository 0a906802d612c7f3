/*
 * Indexes from vectors (uform.h, uform_index_builder_create_vectors / _add_vectors): embeddings
 * made elsewhere, with no checkpoint. The rows go through the same conversions an encode's
 * outputs_scalar applies (model/heads.c: uform__convert_rows), so an index built from a model's
 * own F32 embeddings stores the same bytes as one the model built.
 *
 * The add checks everything first (shape, tape, every value finite) and reserves the whole
 * growth once, so a failure leaves the builder unchanged; the rows are then converted a chunk at a
 * time through a small buffer (never a second copy of the whole matrix).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/outcome.h"
#include "core/tape.h"
#include "index/index.h"
#include "kernels/nn.h"
#include "model/heads.h"
#include "model/truncate.h"

/* Rows converted per chunk. */
#define CHUNK_ROWS 256

static int is_fingerprint(const char *text) {
    for (size_t i = 0; i + 1 < UFORM_FINGERPRINT_CAPACITY; ++i)
        if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f'))) return 0;
    return text[UFORM_FINGERPRINT_CAPACITY - 1] == '\0';
}

UFORM_API uform_status_t uform_index_builder_create_vectors(size_t dimensions, uform_scalar_kind_t scalar,
                                                            const char *fingerprint, uform_index_builder_t *builder,
                                                            uform_outcome_t *outcome) {
    const char *function = __func__;
    if (builder) *builder = NULL;
    if (!builder) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "builder is NULL");
    if (dimensions == 0 || dimensions > UFORM__INDEX_MAX_DIMS)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "dimensions %zu is outside 1 .. %d", dimensions,
                           UFORM__INDEX_MAX_DIMS);
    if ((unsigned)scalar > UFORM_SCALAR_B1)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "scalar %d is not a uform_scalar_kind_t", (int)scalar);
    const char *recorded = fingerprint ? fingerprint : UFORM_INDEX_NO_CHECKPOINT;
    if (strnlen(recorded, UFORM_FINGERPRINT_CAPACITY) != UFORM_FINGERPRINT_CAPACITY - 1 || !is_fingerprint(recorded))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "fingerprint \"%.40s\" is not 32 lower-case hex digits (uform_model_fingerprint's form)", recorded);
    return uform__index_builder_make(dimensions, scalar, recorded, builder, outcome, function);
}

/* One value widened to F32 (NaN and infinities kept: the caller tests them). */
static float value_at(const void *row, uform_scalar_kind_t scalar, size_t c, const uform__nn_kernels_t *nn) {
    if (scalar == UFORM_SCALAR_F32) {
        float value;
        memcpy(&value, (const unsigned char *)row + c * sizeof value, sizeof value);
        return value;
    }
    uint16_t half;
    memcpy(&half, (const unsigned char *)row + c * sizeof half, sizeof half);
    float value;
    nn->f16_to_f32(1, &half, &value);
    return value;
}

/* The first value that is NaN or infinite, as (row, column); answers 0 when all are finite. */
static int find_non_finite(const void *vectors, uform_scalar_kind_t scalar, size_t rows, size_t columns, size_t stride,
                           size_t *bad_row, size_t *bad_column, float *bad_value, const uform__nn_kernels_t *nn) {
    for (size_t r = 0; r < rows; ++r) {
        const unsigned char *row = (const unsigned char *)vectors + r * stride;
        int any = 0;
        if (scalar == UFORM_SCALAR_F32) {
            for (size_t c = 0; c < columns; ++c) {
                uint32_t bits;
                memcpy(&bits, row + 4 * c, 4);
                any |= (bits & 0x7F800000u) == 0x7F800000u;
            }
        } else {
            for (size_t c = 0; c < columns; ++c) {
                uint16_t bits;
                memcpy(&bits, row + 2 * c, 2);
                any |= (bits & 0x7C00u) == 0x7C00u;
            }
        }
        if (!any) continue;
        for (size_t c = 0; c < columns; ++c) {
            float value = value_at(row, scalar, c, nn);
            if (!isfinite(value)) {
                *bad_row = r, *bad_column = c, *bad_value = value;
                return 1;
            }
        }
    }
    return 0;
}

static size_t decimal_length(size_t value) {
    size_t length = 1;
    while (value >= 10) value /= 10, ++length;
    return length;
}

/* Row k of the chunk as F32 in `to`, normalised when asked: x / ‖x‖ with the norm summed in double. */
static void widen_row(const unsigned char *row, uform_scalar_kind_t scalar, size_t columns, int normalize, float *to,
                      const uform__nn_kernels_t *nn) {
    if (scalar == UFORM_SCALAR_F32) memcpy(to, row, columns * sizeof(float));
    else nn->f16_to_f32(columns, (const uint16_t *)row, to);
    if (normalize) uform__row_normalize(to, columns);
}

UFORM_API uform_status_t uform_index_builder_add_vectors(uform_index_builder_t builder, uform_modality_t modality,
                                                         const void *vectors, uform_scalar_kind_t vectors_scalar,
                                                         size_t rows, size_t columns, size_t stride,
                                                         const uform_tape_t *paths, unsigned flags,
                                                         uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!builder) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "builder is NULL");
    if (!vectors && rows) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "vectors is NULL");
    if ((unsigned)modality > UFORM_MODALITY_AUDIO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modality %d is not a uform_modality_t", (int)modality);
    if (vectors_scalar != UFORM_SCALAR_F32 && vectors_scalar != UFORM_SCALAR_F16)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "vectors_scalar %d: vectors are read as F32 or F16 (convert other types first)", (int)vectors_scalar);
    if (flags & ~UFORM_INDEX_NORMALIZE)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "flags 0x%x has unknown bits (known: 0x%x)", flags,
                           UFORM_INDEX_NORMALIZE);
    uform_index_description_t description;
    uform_index_builder_describe(builder, &description);
    if (columns != description.dimensions)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "vectors have %zu columns, the index holds %zu",
                           columns, description.dimensions);
    const size_t element = vectors_scalar == UFORM_SCALAR_F32 ? sizeof(float) : sizeof(uint16_t);
    const size_t row_size = columns * element;
    if (stride == 0) stride = row_size;
    if (stride < row_size)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "stride %zu is shorter than a row (%zu bytes)", stride,
                           row_size);
    if (paths) {
        uform_status_t status = uform__tape_check(paths, "paths", outcome, function);
        if (status != UFORM_OK) return status;
        if (paths->count != rows)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "paths holds %zu items for %zu rows of vectors",
                               paths->count, rows);
    }
    uform_cpu_class_t cpu_class = UFORM_CPU_CLASS_SERIAL;
    uform_outcome_t ignored = {0};
    if (uform__cpu_class_resolve(UFORM_CPU_CLASS_UNKNOWN, &cpu_class, &ignored, function) != UFORM_OK)
        cpu_class = UFORM_CPU_CLASS_SERIAL;
    const uform__nn_kernels_t *nn = uform__nn_kernels(cpu_class);
    size_t bad_row, bad_column;
    float bad_value;
    if (find_non_finite(vectors, vectors_scalar, rows, columns, stride, &bad_row, &bad_column, &bad_value, nn))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "vectors row %zu column %zu is %s: every value must be finite",
                           bad_row, bad_column, isnan(bad_value) ? "NaN" : bad_value > 0 ? "+inf" : "-inf");

    /* Paths: the caller's, or the items' decimal numbers. */
    const size_t first_item = description.count;
    size_t path_bytes = 0;
    if (paths) path_bytes = rows ? paths->offsets[rows] - paths->offsets[0] : 0;
    else
        for (size_t k = 0; k < rows; ++k) path_bytes += decimal_length(first_item + k);
    const size_t row_bytes = uform_scalar_row_bytes(description.scalar, columns);
    float *widened = malloc(CHUNK_ROWS * columns * sizeof(float));
    unsigned char *converted = malloc(CHUNK_ROWS * row_bytes);
    size_t *number_offsets = malloc((CHUNK_ROWS + 1) * sizeof(size_t));
    char *numbers = malloc(CHUNK_ROWS * 21);
    if (!widened || !converted || !number_offsets || !numbers ||
        !uform__index_builder_reserve(builder, modality, rows, path_bytes)) {
        free(widened), free(converted), free(number_offsets), free(numbers);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate memory to add %zu rows of %zu columns",
                           rows, columns);
    }
    uform_matrix_t target;
    memset(&target, 0, sizeof target);
    target.data = converted, target.rows = CHUNK_ROWS, target.columns = columns, target.scalar = description.scalar;
    target.stride_bytes = row_bytes;
    const int normalize = (flags & UFORM_INDEX_NORMALIZE) != 0;
    for (size_t first = 0; first < rows; first += CHUNK_ROWS) {
        const size_t count = rows - first < CHUNK_ROWS ? rows - first : CHUNK_ROWS;
        for (size_t k = 0; k < count; ++k)
            widen_row((const unsigned char *)vectors + (first + k) * stride, vectors_scalar, columns, normalize,
                      widened + k * columns, nn);
        uform__convert_rows(nn, widened, columns, count, columns, &target, 0);
        uform_tape_t chunk_paths;
        if (paths) {
            chunk_paths = (uform_tape_t){paths->data, paths->offsets + first, count};
        } else {
            number_offsets[0] = 0;
            for (size_t k = 0; k < count; ++k)
                number_offsets[k + 1] = number_offsets[k] +
                                        (size_t)snprintf(numbers + number_offsets[k], 21, "%zu", first_item + first + k);
            chunk_paths = (uform_tape_t){numbers, number_offsets, count};
        }
        uform__index_builder_append(builder, modality, converted, row_bytes, &chunk_paths);
    }
    free(widened), free(converted), free(number_offsets), free(numbers);
    return uform__succeed(outcome, function);
}
