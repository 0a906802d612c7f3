/*
 * Building an index: items collect in memory in their final form (a row of the index's scalar per
 * item in its modality's array, the modality byte, the path appended to a byte tape), so memory
 * grows with what the file will hold and nothing else; every write lays the same arrays out as
 * index.h's tensors through the atomic safetensors writer, so a checkpoint costs one sequential
 * write of the index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "core/tape.h"
#include "index/index.h"
#include "model/model.h"

/* A growable byte array. */
typedef struct bytes_t {
    unsigned char *data;
    size_t size, capacity;
} bytes_t;

struct uform_index_builder_s {
    size_t dims, row_bytes;
    uform_scalar_kind_t scalar;
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    bytes_t rows[4];      /* per modality: [rows, row_bytes] */
    bytes_t modality;     /* [count] */
    bytes_t path_offsets; /* [count + 1] uint64 */
    bytes_t paths;
    size_t count;
};

/* Makes room for `more` bytes; answers 0 when out of memory (the array is unchanged). */
static int reserve(bytes_t *array, size_t more) {
    if (array->capacity - array->size >= more) return 1;
    if (more > SIZE_MAX / 2 - array->size) return 0;
    size_t capacity = array->capacity ? array->capacity : 4096;
    while (capacity - array->size < more) capacity *= 2;
    unsigned char *grown = realloc(array->data, capacity);
    if (!grown) return 0;
    array->data = grown, array->capacity = capacity;
    return 1;
}

static void append(bytes_t *array, const void *bytes, size_t size) {
    if (size) memcpy(array->data + array->size, bytes, size);
    array->size += size;
}

uform_status_t uform__index_builder_make(size_t dims, uform_scalar_kind_t scalar, const char *fingerprint,
                                        uform_index_builder_t *builder, uform_outcome_t *outcome, const char *function) {
    uform_index_builder_t made = calloc(1, sizeof *made);
    uint64_t zero = 0;
    if (!made || !reserve(&made->path_offsets, sizeof zero)) {
        free(made);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate an index builder");
    }
    append(&made->path_offsets, &zero, sizeof zero);
    made->dims = dims, made->scalar = scalar, made->row_bytes = uform_scalar_row_bytes(scalar, dims);
    memcpy(made->fingerprint, fingerprint, UFORM_FINGERPRINT_CAPACITY);
    *builder = made;
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_index_builder_create(uform_model_t model, size_t dimensions, uform_scalar_kind_t scalar,
                                                    uform_index_builder_t *builder, uform_outcome_t *outcome) {
    if (builder) *builder = NULL;
    if (!model || !builder)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", model ? "builder" : "model");
    size_t width = model->config.embedding;
    if (dimensions > width)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "dimensions %zu exceeds the model's embedding width %zu", dimensions, width);
    if ((unsigned)scalar > UFORM_SCALAR_B1)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "scalar %d is not a uform_scalar_kind_t", (int)scalar);
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    uform_status_t status = uform_model_fingerprint(model, fingerprint, outcome);
    if (status != UFORM_OK) return status;
    return uform__index_builder_make(dimensions ? dimensions : width, scalar, fingerprint, builder, outcome, __func__);
}

UFORM_API uform_status_t uform_index_builder_from(uform_index_t index, uform_index_builder_t *builder,
                                                  uform_outcome_t *outcome) {
    if (builder) *builder = NULL;
    if (!index || !builder)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", index ? "builder" : "index");
    uform_index_builder_t made = NULL;
    uform_status_t status = uform__index_builder_make(index->dims, index->scalar, index->fingerprint, &made, outcome, __func__);
    if (status != UFORM_OK) return status;
    size_t offsets_bytes = index->count * sizeof(uint64_t);
    int ok = reserve(&made->modality, index->count) && reserve(&made->path_offsets, offsets_bytes) &&
             reserve(&made->paths, (size_t)index->paths_bytes);
    for (int m = 0; m < 4 && ok; ++m) ok = reserve(&made->rows[m], index->parts[m].rows * made->row_bytes);
    if (!ok) {
        uform_index_builder_free(made);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate memory to copy an index of %zu items", index->count);
    }
    append(&made->modality, index->modality, index->count);
    for (size_t i = 1; i <= index->count; ++i) {
        uint64_t offset = uform__index_path_offset(index, i);
        append(&made->path_offsets, &offset, sizeof offset);
    }
    append(&made->paths, index->paths, (size_t)index->paths_bytes);
    for (int m = 0; m < 4; ++m) append(&made->rows[m], index->parts[m].data, index->parts[m].rows * made->row_bytes);
    made->count = index->count;
    *builder = made;
    return uform__succeed(outcome, __func__);
}

UFORM_API uform_status_t uform_index_builder_add(uform_index_builder_t builder, uform_modality_t modality,
                                                 const uform_matrix_t *embeddings, const uform_tape_t *paths,
                                                 uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!builder || !embeddings || !paths)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !builder ? "builder" : !embeddings ? "embeddings" : "paths");
    if ((unsigned)modality > UFORM_MODALITY_AUDIO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modality %d is not a uform_modality_t", (int)modality);
    uform_status_t status = uform__tape_check(paths, "paths", outcome, function);
    if (status != UFORM_OK) return status;
    size_t count = paths->count;
    if (embeddings->rows != count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "embeddings has %zu rows for %zu paths",
                           embeddings->rows, count);
    if (count && uform_matrix_check(embeddings) != UFORM_OK)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "embeddings is stale (its arena has been written since) or has no arena");
    if (count && (embeddings->columns != builder->dims || embeddings->scalar != builder->scalar))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "embeddings are %zu columns of %s, the index holds %zu of %s (encode with config.dimensions "
                           "and outputs_scalar set to the index's)",
                           embeddings->columns, uform__index_scalar_name(embeddings->scalar) ? uform__index_scalar_name(embeddings->scalar) : "?",
                           builder->dims, uform__index_scalar_name(builder->scalar));
    size_t path_bytes = count ? paths->offsets[count] - paths->offsets[0] : 0;
    if (!uform__index_builder_reserve(builder, modality, count, path_bytes))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate memory to grow the index past %zu items",
                           builder->count);
    uform__index_builder_append(builder, modality, embeddings->data, embeddings->stride_bytes, paths);
    return uform__succeed(outcome, function);
}

int uform__index_builder_reserve(uform_index_builder_t builder, uform_modality_t modality, size_t count, size_t path_bytes) {
    return count <= SIZE_MAX / 16 / builder->row_bytes && reserve(&builder->rows[modality], count * builder->row_bytes) &&
           reserve(&builder->modality, count) && reserve(&builder->path_offsets, count * sizeof(uint64_t)) &&
           reserve(&builder->paths, path_bytes);
}

void uform__index_builder_append(uform_index_builder_t builder, uform_modality_t modality, const void *rows_data,
                                 size_t row_stride, const uform_tape_t *paths) {
    const size_t count = paths->count;
    bytes_t *rows = &builder->rows[modality];
    uint8_t modality_byte = (uint8_t)modality;
    for (size_t k = 0; k < count; ++k) {
        append(rows, (const unsigned char *)rows_data + k * row_stride, builder->row_bytes);
        append(&builder->modality, &modality_byte, 1);
        size_t length;
        const unsigned char *path = uform__tape_item(paths, k, &length);
        append(&builder->paths, path, length);
        uint64_t end = builder->paths.size;
        append(&builder->path_offsets, &end, sizeof end);
    }
    builder->count += count;
}

/* The seven tensors of an index file (index.h's layout) in `tensors`, with the shapes in `shapes`. */
static void index_tensors(const uform__index_layout_t *layout, uint64_t shapes[7][2], uform__safetensors_source_t tensors[7]) {
    uint64_t columns = layout->scalar == UFORM_SCALAR_B1 ? layout->row_bytes : layout->dims;
    for (int m = 0; m < 4; ++m) {
        shapes[m][0] = layout->rows[m], shapes[m][1] = columns;
        tensors[m] = (uform__safetensors_source_t){uform__index_tensor_name((uform_modality_t)m),
                                                   uform__index_scalar_dtype(layout->scalar), 2, shapes[m], layout->data[m]};
    }
    shapes[4][0] = layout->count, shapes[5][0] = layout->count + 1, shapes[6][0] = layout->paths_bytes;
    tensors[UFORM__INDEX_MODALITY] = (uform__safetensors_source_t){"items.modality", UFORM__SAFETENSORS_U8, 1, shapes[4],
                                                                   layout->data[UFORM__INDEX_MODALITY]};
    tensors[UFORM__INDEX_OFFSETS] = (uform__safetensors_source_t){"items.path_offsets", UFORM__SAFETENSORS_I64, 1, shapes[5],
                                                                  layout->data[UFORM__INDEX_OFFSETS]};
    tensors[UFORM__INDEX_PATHS] = (uform__safetensors_source_t){"items.paths", UFORM__SAFETENSORS_U8, 1, shapes[6],
                                                                layout->data[UFORM__INDEX_PATHS]};
}

void uform__index_data_order(uform_scalar_kind_t scalar, size_t order[7]) {
    uform__index_layout_t layout = {.dims = 1, .row_bytes = 1, .scalar = scalar};
    uint64_t shapes[7][2];
    uform__safetensors_source_t tensors[7];
    index_tensors(&layout, shapes, tensors);
    uform__safetensors_data_order(tensors, 7, order);
}

uform_status_t uform__index_write(const char *path, const uform__index_layout_t *layout, const char *const *metadata,
                                  size_t metadata_count, uform__safetensors_fill_t fill, void *fill_state, uform_outcome_t *outcome,
                                  const char *function) {
    if (!path || (metadata_count && !metadata))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !path ? "path" : "metadata");
    for (size_t i = 0; i < metadata_count; ++i) {
        if (!metadata[2 * i] || !metadata[2 * i + 1])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "metadata pair %zu holds a NULL string", i);
        if (strncmp(metadata[2 * i], UFORM__INDEX_KEY_PREFIX, strlen(UFORM__INDEX_KEY_PREFIX)) == 0)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "metadata key \"%s\" is reserved (keys starting with %s belong to the format)",
                               metadata[2 * i], UFORM__INDEX_KEY_PREFIX);
    }
    uform__safetensors_pair_t *pairs = calloc(metadata_count + 5, sizeof *pairs);
    if (!pairs) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the metadata");
    char dims[24], count[24];
    snprintf(dims, sizeof dims, "%zu", layout->dims);
    snprintf(count, sizeof count, "%llu", (unsigned long long)layout->count);
    pairs[0] = (uform__safetensors_pair_t){UFORM__INDEX_KEY_FORMAT, UFORM__INDEX_FORMAT};
    pairs[1] = (uform__safetensors_pair_t){UFORM__INDEX_KEY_FINGERPRINT, layout->fingerprint};
    pairs[2] = (uform__safetensors_pair_t){UFORM__INDEX_KEY_DIMS, dims};
    pairs[3] = (uform__safetensors_pair_t){UFORM__INDEX_KEY_SCALAR, uform__index_scalar_name(layout->scalar)};
    pairs[4] = (uform__safetensors_pair_t){UFORM__INDEX_KEY_COUNT, count};
    for (size_t i = 0; i < metadata_count; ++i) pairs[5 + i] = (uform__safetensors_pair_t){metadata[2 * i], metadata[2 * i + 1]};

    uint64_t shapes[7][2];
    uform__safetensors_source_t tensors[7];
    index_tensors(layout, shapes, tensors);
    uform__safetensors_write_t request = {tensors, 7, pairs, metadata_count + 5, NULL, NULL, fill, fill_state};
    uform_status_t status = uform__safetensors_write(path, &request, outcome);
    free(pairs);
    if (status != UFORM_OK && outcome) {
        memset(outcome->function, 0, sizeof outcome->function);
        snprintf(outcome->function, sizeof outcome->function, "%s", function);
        return status;
    }
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_index_builder_write(uform_index_builder_t builder, const char *path,
                                                   const char *const *metadata, size_t metadata_count,
                                                   uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!builder || !path || (metadata_count && !metadata))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !builder ? "builder" : !path ? "path" : "metadata");
    uform__index_layout_t layout = {builder->dims, builder->row_bytes, builder->scalar, builder->fingerprint};
    for (int m = 0; m < 4; ++m) layout.rows[m] = builder->rows[m].size / builder->row_bytes, layout.data[m] = builder->rows[m].data;
    layout.count = builder->count, layout.paths_bytes = builder->paths.size;
    layout.data[UFORM__INDEX_MODALITY] = builder->modality.data, layout.data[UFORM__INDEX_OFFSETS] = builder->path_offsets.data;
    layout.data[UFORM__INDEX_PATHS] = builder->paths.data;
    return uform__index_write(path, &layout, metadata, metadata_count, NULL, NULL, outcome, function);
}

UFORM_API uform_status_t uform_index_builder_describe(uform_index_builder_t builder,
                                                      uform_index_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!builder) return UFORM_INVALID_ARGUMENT;
    description->count = builder->count;
    for (int m = 0; m < 4; ++m) description->counts[m] = builder->rows[m].size / builder->row_bytes;
    description->dimensions = builder->dims;
    description->scalar = builder->scalar;
    memcpy(description->fingerprint, builder->fingerprint, UFORM_FINGERPRINT_CAPACITY);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_builder_item(uform_index_builder_t builder, size_t item,
                                                  uform_modality_t *modality, const char **path, size_t *length) {
    if (!builder || !path || !length || item >= builder->count) {
        if (path) *path = NULL;
        if (length) *length = 0;
        return UFORM_INVALID_ARGUMENT;
    }
    uint64_t begin, end;
    memcpy(&begin, builder->path_offsets.data + item * sizeof(uint64_t), sizeof begin);
    memcpy(&end, builder->path_offsets.data + (item + 1) * sizeof(uint64_t), sizeof end);
    *path = builder->paths.data ? (const char *)builder->paths.data + begin : "";
    *length = (size_t)(end - begin);
    if (modality) *modality = (uform_modality_t)builder->modality.data[item];
    return UFORM_OK;
}

void uform__index_builder_view(uform_index_builder_t builder, uform__index_builder_view_t *view) {
    view->dims = builder->dims, view->row_bytes = builder->row_bytes, view->count = builder->count;
    view->scalar = builder->scalar, view->fingerprint = builder->fingerprint;
    for (int m = 0; m < 4; ++m) view->rows[m] = builder->rows[m].data, view->rows_bytes[m] = builder->rows[m].size;
    view->modality = builder->modality.data, view->offsets = builder->path_offsets.data;
    view->paths = builder->paths.data, view->paths_bytes = builder->paths.size;
}

UFORM_API void uform_index_builder_free(uform_index_builder_t builder) {
    if (!builder) return;
    for (int m = 0; m < 4; ++m) free(builder->rows[m].data);
    free(builder->modality.data), free(builder->path_offsets.data), free(builder->paths.data);
    free(builder);
}
