/*
 * Opening an index: map the file (io/safetensors), then check every promise the search relies on
 * (index.h's layout) once, so nothing is re-checked per query: metadata values, each tensor's
 * dtype and shape, modality values, path offsets, per-modality counts; and, given a model, that
 * the index was built by the same checkpoint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "index/index.h"
#include "model/model.h"

static const char *const scalar_names[5] = {"f32", "f16", "bf16", "i8", "b1"};
static const char *const tensor_names[4] = {"embeddings.text", "embeddings.image", "embeddings.video",
                                            "embeddings.audio"};

const char *uform__index_scalar_name(uform_scalar_kind_t scalar) {
    return (unsigned)scalar <= UFORM_SCALAR_B1 ? scalar_names[scalar] : NULL;
}

int uform__index_scalar_parse(const char *name, uform_scalar_kind_t *scalar) {
    for (int i = 0; i < 5; ++i)
        if (name && strcmp(name, scalar_names[i]) == 0) {
            *scalar = (uform_scalar_kind_t)i;
            return 1;
        }
    return 0;
}

uform__safetensors_dtype_t uform__index_scalar_dtype(uform_scalar_kind_t scalar) {
    switch (scalar) {
    case UFORM_SCALAR_F32: return UFORM__SAFETENSORS_F32;
    case UFORM_SCALAR_F16: return UFORM__SAFETENSORS_F16;
    case UFORM_SCALAR_BF16: return UFORM__SAFETENSORS_BF16;
    case UFORM_SCALAR_I8: return UFORM__SAFETENSORS_I8;
    default: return UFORM__SAFETENSORS_U8;
    }
}

const char *uform__index_tensor_name(uform_modality_t modality) {
    return (unsigned)modality < 4 ? tensor_names[modality] : "embeddings.unknown";
}

uint64_t uform__index_path_offset(const struct uform_index_s *index, size_t item) {
    uint64_t value;
    memcpy(&value, index->path_offsets + 8 * item, sizeof value); /* little-endian hosts only (x86, Arm) */
    return value;
}

/* A decimal integer of at most 16 digits, nothing else; answers 1 and sets `*value`. */
static int parse_count(const char *text, uint64_t limit, uint64_t *value) {
    if (!text || !*text || strlen(text) > 16) return 0;
    uint64_t result = 0;
    for (const char *at = text; *at; ++at) {
        if (*at < '0' || *at > '9') return 0;
        result = result * 10 + (uint64_t)(*at - '0');
    }
    if (result > limit) return 0;
    *value = result;
    return 1;
}

static const uform__safetensors_tensor_t *expect(const uform__safetensors_t *file, const char *name,
                                                 uform__safetensors_dtype_t dtype, uint32_t rank, uint64_t rows,
                                                 uint64_t columns, uform_outcome_t *outcome, const char *function,
                                                 uform_status_t *status) {
    const uform__safetensors_tensor_t *tensor = uform__safetensors_find(file, name);
    if (!tensor) {
        *status = uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: tensor %s is missing", name);
        return NULL;
    }
    int shape_ok = tensor->rank == rank && tensor->shape[0] == rows && (rank < 2 || tensor->shape[1] == columns);
    if (tensor->dtype != dtype || !shape_ok) {
        char wanted[48], found[64];
        if (rank == 1) snprintf(wanted, sizeof wanted, "[%llu]", (unsigned long long)rows);
        else snprintf(wanted, sizeof wanted, "[%llu, %llu]", (unsigned long long)rows, (unsigned long long)columns);
        if (tensor->rank == 1) snprintf(found, sizeof found, "[%llu]", (unsigned long long)tensor->shape[0]);
        else if (tensor->rank == 2)
            snprintf(found, sizeof found, "[%llu, %llu]", (unsigned long long)tensor->shape[0],
                     (unsigned long long)tensor->shape[1]);
        else snprintf(found, sizeof found, "rank %u", (unsigned)tensor->rank);
        *status = uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: tensor %s should be %s %s, found %s %s",
                              name, uform__safetensors_dtype_name(dtype), wanted,
                              uform__safetensors_dtype_name(tensor->dtype), found);
        return NULL;
    }
    return tensor;
}

/* Reads and checks the metadata into `index`. */
static uform_status_t check_metadata(uform_index_t index, uform_outcome_t *outcome, const char *function) {
    const uform__safetensors_t *file = index->file;
    const char *format = uform__safetensors_metadata_find(file, UFORM__INDEX_KEY_FORMAT);
    if (!format)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "not a UForm index: the file's metadata has no %s (a checkpoint, or another tool's file?)",
                           UFORM__INDEX_KEY_FORMAT);
    uint64_t version = 0;
    if (strcmp(format, UFORM__INDEX_FORMAT) != 0) {
        if (parse_count(format, UINT32_MAX, &version) && version > 1)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "index format %s is newer than this build reads (%s)", format, UFORM__INDEX_FORMAT);
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: %s is \"%.40s\", expected \"%s\"",
                           UFORM__INDEX_KEY_FORMAT, format, UFORM__INDEX_FORMAT);
    }
    const char *fingerprint = uform__safetensors_metadata_find(file, UFORM__INDEX_KEY_FINGERPRINT);
    int hex = fingerprint && strlen(fingerprint) == UFORM_FINGERPRINT_CAPACITY - 1;
    for (size_t i = 0; hex && i < UFORM_FINGERPRINT_CAPACITY - 1; ++i)
        hex = (fingerprint[i] >= '0' && fingerprint[i] <= '9') || (fingerprint[i] >= 'a' && fingerprint[i] <= 'f');
    if (!hex)
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: %s should be 32 lower-case hex digits",
                           UFORM__INDEX_KEY_FINGERPRINT);
    memcpy(index->fingerprint, fingerprint, UFORM_FINGERPRINT_CAPACITY);
    uint64_t dims = 0, count = 0;
    if (!parse_count(uform__safetensors_metadata_find(file, UFORM__INDEX_KEY_DIMS), UFORM__INDEX_MAX_DIMS, &dims) ||
        dims == 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: %s should be an integer in 1..%d",
                           UFORM__INDEX_KEY_DIMS, UFORM__INDEX_MAX_DIMS);
    if (!uform__index_scalar_parse(uform__safetensors_metadata_find(file, UFORM__INDEX_KEY_SCALAR), &index->scalar))
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "not a valid index: %s should be one of f32, f16, bf16, i8, b1", UFORM__INDEX_KEY_SCALAR);
    if (!parse_count(uform__safetensors_metadata_find(file, UFORM__INDEX_KEY_COUNT), UFORM__SAFETENSORS_MAX_INTEGER, &count))
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: %s should be a non-negative integer",
                           UFORM__INDEX_KEY_COUNT);
    index->dims = (size_t)dims, index->count = (size_t)count;
    index->row_bytes = uform_scalar_row_bytes(index->scalar, index->dims);
    return UFORM_OK;
}

static uform_status_t check_tensors(uform_index_t index, uform_outcome_t *outcome, const char *function) {
    const uform__safetensors_t *file = index->file;
    uform_status_t status = UFORM_OK;
    const uform__safetensors_tensor_t *modality =
        expect(file, "items.modality", UFORM__SAFETENSORS_U8, 1, index->count, 0, outcome, function, &status);
    const uform__safetensors_tensor_t *offsets =
        modality ? expect(file, "items.path_offsets", UFORM__SAFETENSORS_I64, 1, (uint64_t)index->count + 1, 0, outcome,
                          function, &status)
                 : NULL;
    const uform__safetensors_tensor_t *paths = uform__safetensors_find(file, "items.paths");
    if (offsets && (!paths || paths->dtype != UFORM__SAFETENSORS_U8 || paths->rank != 1))
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: tensor items.paths should be U8 [bytes]");
    if (!offsets) return status;
    index->modality = modality->data;
    index->path_offsets = offsets->data;
    index->paths = paths->data;
    index->paths_bytes = paths->shape[0];
    uint64_t previous = 0;
    if (uform__index_path_offset(index, 0) != 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: items.path_offsets[0] is not 0");
    for (size_t i = 1; i <= index->count; ++i) {
        uint64_t offset = uform__index_path_offset(index, i);
        if (offset < previous || offset > index->paths_bytes)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "not a valid index: items.path_offsets[%zu] = %llu after %llu (the tape holds %llu bytes)", i,
                               (unsigned long long)offset, (unsigned long long)previous,
                               (unsigned long long)index->paths_bytes);
        previous = offset;
    }
    if (previous != index->paths_bytes)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "not a valid index: items.path_offsets ends at %llu, but items.paths holds %llu bytes",
                           (unsigned long long)previous, (unsigned long long)index->paths_bytes);
    size_t counts[4] = {0};
    for (size_t i = 0; i < index->count; ++i) {
        if (index->modality[i] > UFORM_MODALITY_AUDIO)
            return uform__fail(outcome, UFORM_FORMAT, function, "not a valid index: items.modality[%zu] = %u is not 0..3",
                               i, (unsigned)index->modality[i]);
        counts[index->modality[i]] += 1;
    }
    uint64_t columns = index->scalar == UFORM_SCALAR_B1 ? index->row_bytes : index->dims;
    for (int m = 0; m < 4; ++m) {
        const uform__safetensors_tensor_t *tensor = expect(file, tensor_names[m], uform__index_scalar_dtype(index->scalar),
                                                           2, counts[m], columns, outcome, function, &status);
        if (!tensor) return status;
        index->parts[m].data = tensor->data;
        index->parts[m].rows = counts[m];
    }
    return UFORM_OK;
}

/* Each modality's item numbers and each item's row. */
static uform_status_t build_maps(uform_index_t index, uform_outcome_t *outcome, const char *function) {
    index->rows_of = malloc((index->count + 1) * sizeof(uint64_t));
    for (int m = 0; m < 4; ++m) index->parts[m].items = malloc((index->parts[m].rows + 1) * sizeof(uint64_t));
    int failed = !index->rows_of;
    for (int m = 0; m < 4; ++m) failed |= !index->parts[m].items;
    if (failed)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the row maps of %zu items", index->count);
    size_t next[4] = {0};
    for (size_t i = 0; i < index->count; ++i) {
        int m = index->modality[i];
        index->parts[m].items[next[m]] = i;
        index->rows_of[i] = next[m]++;
    }
    return UFORM_OK;
}

static uform_status_t finish_open(uform_index_t index, uform_model_t model, uform_outcome_t *outcome,
                                  const char *function) {
    uform_status_t status = check_metadata(index, outcome, function);
    if (status == UFORM_OK) status = check_tensors(index, outcome, function);
    if (status == UFORM_OK) status = build_maps(index, outcome, function);
    if (status == UFORM_OK && model) {
        char fingerprint[UFORM_FINGERPRINT_CAPACITY];
        status = uform_model_fingerprint(model, fingerprint, outcome);
        if (status == UFORM_OK && strcmp(index->fingerprint, UFORM_INDEX_NO_CHECKPOINT) == 0)
            status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                                 "the index was built from vectors with no checkpoint (fingerprint %s, %zu dims, %s), "
                                 "so no model's queries belong to it: search it with query vectors, or rebuild it "
                                 "stamped with checkpoint %s",
                                 index->fingerprint, index->dims, uform__index_scalar_name(index->scalar), fingerprint);
        else if (status == UFORM_OK && !uform__model_fingerprint_matches(model, index->fingerprint))
            status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                                 "the index was built by checkpoint %s (%zu dims, %s), this model is checkpoint %s: "
                                 "encode queries with the index's checkpoint, or rebuild the index",
                                 index->fingerprint, index->dims, uform__index_scalar_name(index->scalar), fingerprint);
    }
    return status;
}

UFORM_API void uform_index_free(uform_index_t index) {
    if (!index) return;
    for (int m = 0; m < 4; ++m) free(index->parts[m].items);
    free(index->rows_of);
    uform__safetensors_close(index->file);
    free(index);
}

static uform_status_t fail_open(uform_index_t made, uform_index_t *index, uform_status_t status, uform_outcome_t *outcome,
                                const char *function) {
    uform_index_free(made);
    *index = NULL;
    if (outcome && status != UFORM_OK) {
        /* The reader names its internal function; the public one is ours. */
        memset(outcome->function, 0, sizeof outcome->function);
        snprintf(outcome->function, sizeof outcome->function, "%s", function);
    }
    return status;
}

UFORM_API uform_status_t uform_index_open(const char *path, uform_model_t model, uform_index_t *index,
                                          uform_outcome_t *outcome) {
    if (!path || !index) {
        if (index) *index = NULL;
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", path ? "index" : "path");
    }
    uform_index_t made = calloc(1, sizeof *made);
    if (!made) return fail_open(NULL, index, uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate an index"), outcome, __func__);
    uform_status_t status = uform__safetensors_open(path, &made->file, outcome);
    if (status == UFORM_OK) status = finish_open(made, model, outcome, __func__);
    if (status != UFORM_OK) return fail_open(made, index, status, outcome, __func__);
    *index = made;
    return uform__succeed(outcome, __func__);
}

uform_status_t uform__index_open_memory(const void *bytes, size_t size, uform_model_t model, uform_index_t *index,
                                        uform_outcome_t *outcome) {
    uform_index_t made = calloc(1, sizeof *made);
    if (!made) return fail_open(NULL, index, uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate an index"), outcome, __func__);
    uform_status_t status = uform__safetensors_open_memory(bytes, size, &made->file, outcome);
    if (status == UFORM_OK) status = finish_open(made, model, outcome, __func__);
    if (status != UFORM_OK) return fail_open(made, index, status, outcome, __func__);
    *index = made;
    return uform__succeed(outcome, __func__);
}

UFORM_API uform_status_t uform_index_describe(uform_index_t index, uform_index_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!index) return UFORM_INVALID_ARGUMENT;
    description->count = index->count;
    for (int m = 0; m < 4; ++m) description->counts[m] = index->parts[m].rows;
    description->dimensions = index->dims;
    description->scalar = index->scalar;
    memcpy(description->fingerprint, index->fingerprint, UFORM_FINGERPRINT_CAPACITY);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_item(uform_index_t index, size_t item, uform_modality_t *modality,
                                          const char **path, size_t *length) {
    if (!index || !path || !length || item >= index->count) {
        if (path) *path = NULL;
        if (length) *length = 0;
        return UFORM_INVALID_ARGUMENT;
    }
    uint64_t begin = uform__index_path_offset(index, item), end = uform__index_path_offset(index, item + 1);
    *path = index->paths ? index->paths + begin : "";
    *length = (size_t)(end - begin);
    if (modality) *modality = (uform_modality_t)index->modality[item];
    return UFORM_OK;
}

UFORM_API const char *uform_index_metadata(uform_index_t index, const char *key) {
    return index && key ? uform__safetensors_metadata_find(index->file, key) : NULL;
}
