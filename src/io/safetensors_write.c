/*
 * The safetensors writer: plans a deterministic layout, builds the JSON header itself (cJSON
 * would print large offsets in exponent form, which the reference reader's u64 fields refuse),
 * and replaces the target atomically: temporary file in the same directory, write, fsync,
 * rename over the target, fsync of the directory. Until the rename the target is untouched.
 */
#include "core/write_whole.h"
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outcome.h"
#include "core/path.h"
#include "io/safetensors_text.h"

/* The most bytes written between two progress reports. */
#define WRITE_CHUNK ((size_t)8 << 20)

/* A growing text buffer; `failed` records an allocation failure so appends can be chained. */
typedef struct text_t {
    char *bytes;
    size_t length, capacity;
    int failed;
} text_t;

static void text_append(text_t *text, const char *bytes, size_t length) {
    if (text->failed) return;
    if (text->capacity - text->length < length + 1) {
        size_t capacity = text->capacity ? text->capacity : 256;
        while (capacity - text->length < length + 1) {
            if (capacity > SIZE_MAX / 2) {
                text->failed = 1;
                return;
            }
            capacity *= 2;
        }
        char *grown = realloc(text->bytes, capacity);
        if (!grown) {
            text->failed = 1;
            return;
        }
        text->bytes = grown;
        text->capacity = capacity;
    }
    memcpy(text->bytes + text->length, bytes, length);
    text->length += length;
    text->bytes[text->length] = 0;
}

static void text_literal(text_t *text, const char *literal) { text_append(text, literal, strlen(literal)); }

static void text_integer(text_t *text, uint64_t value) {
    char digits[24];
    int length = snprintf(digits, sizeof digits, "%" PRIu64, value);
    text_append(text, digits, (size_t)length);
}

/* A JSON string: quote, backslash and control bytes escaped, UTF-8 copied as it is. */
static void text_string(text_t *text, const char *string) {
    static const char hex[] = "0123456789abcdef";
    text_append(text, "\"", 1);
    const char *run = string;
    for (const char *at = string;; ++at) {
        unsigned char byte = (unsigned char)*at;
        if (byte == 0 || byte == '"' || byte == '\\' || byte < 0x20) {
            text_append(text, run, (size_t)(at - run));
            if (byte == 0) break;
            if (byte == '"') text_append(text, "\\\"", 2);
            else if (byte == '\\') text_append(text, "\\\\", 2);
            else {
                char escape[6] = {'\\', 'u', '0', '0', hex[byte >> 4], hex[byte & 15]};
                text_append(text, escape, 6);
            }
            run = at + 1;
        }
    }
    text_append(text, "\"", 1);
}

/* The layout of a request: tensors in data order with their byte ranges, and the header. */
typedef struct plan_t {
    const uform__safetensors_source_t **order; /* data order: dtype size descending, then name */
    uint64_t *lengths;                          /* bytes of order[i] */
    const uform__safetensors_pair_t **pairs;    /* metadata sorted by key */
    text_t header;                              /* JSON padded with spaces to a multiple of 8 */
    uint64_t data_size, total;                  /* total = 8 + header + data */
} plan_t;

static void plan_free(plan_t *plan) {
    free(plan->order);
    free(plan->lengths);
    free(plan->pairs);
    free(plan->header.bytes);
}

static int compare_data_order(const void *left, const void *right) {
    const uform__safetensors_source_t *a = *(const uform__safetensors_source_t *const *)left;
    const uform__safetensors_source_t *b = *(const uform__safetensors_source_t *const *)right;
    size_t size_a = uform__safetensors_dtype_size(a->dtype), size_b = uform__safetensors_dtype_size(b->dtype);
    if (size_a != size_b) return size_a > size_b ? -1 : 1;
    return strcmp(a->name, b->name);
}

void uform__safetensors_data_order(const uform__safetensors_source_t *tensors, size_t count, size_t *order) {
    /* Insertion sort by the writer's own comparison: requests hold a handful of tensors. */
    for (size_t i = 0; i < count; ++i) {
        size_t at = i;
        const uform__safetensors_source_t *mine = &tensors[i];
        while (at && compare_data_order(&mine, &(const uform__safetensors_source_t *){&tensors[order[at - 1]]}) < 0)
            order[at] = order[at - 1], --at;
        order[at] = i;
    }
}

static int compare_pair_keys(const void *left, const void *right) {
    return strcmp((*(const uform__safetensors_pair_t *const *)left)->key,
                  (*(const uform__safetensors_pair_t *const *)right)->key);
}

static int compare_source_names(const void *left, const void *right) {
    return strcmp((*(const uform__safetensors_source_t *const *)left)->name,
                  (*(const uform__safetensors_source_t *const *)right)->name);
}

/* Checks one tensor of the request and answers its byte length in `*length`. */
static uform_status_t check_source(const uform__safetensors_source_t *source, size_t index, int filled, uint64_t *length,
                                   const char *function, uform_outcome_t *outcome) {
    char name[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    if (!source->name)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensors[%zu]: the name is NULL", index);
    uform__safetensors_quote(name, source->name);
    if (!uform__safetensors_utf8_valid(source->name, strlen(source->name), NULL))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: the name is not valid UTF-8", name);
    if (strcmp(source->name, "__metadata__") == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "tensor %s: the name is reserved for the metadata", name);
    size_t element_size = uform__safetensors_dtype_size(source->dtype);
    if (!element_size)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: dtype %d is not a safetensors dtype",
                           name, (int)source->dtype);
    if (source->rank > UFORM__SAFETENSORS_MAX_RANK)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: rank %u exceeds %d", name,
                           source->rank, UFORM__SAFETENSORS_MAX_RANK);
    if (source->rank && !source->shape)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: rank %u but the shape is NULL", name,
                           source->rank);
    uint64_t bytes = element_size;
    for (uint32_t axis = 0; axis < source->rank; ++axis) {
        if (source->shape[axis] >= UFORM__SAFETENSORS_MAX_INTEGER)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "tensor %s: shape[%u] is %" PRIu64 ", not below 2^53", name, axis, source->shape[axis]);
        if (__builtin_mul_overflow(bytes, source->shape[axis], &bytes) || bytes >= UFORM__SAFETENSORS_MAX_INTEGER)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: holds 2^53 bytes or more", name);
    }
    if (bytes && !source->data && !filled)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: %" PRIu64 " bytes but data is NULL",
                           name, bytes);
    *length = bytes;
    return UFORM_OK;
}

/* Validates the request, orders it and builds the header. */
static uform_status_t plan_build(const uform__safetensors_write_t *request, plan_t *plan, const char *function,
                                 uform_outcome_t *outcome) {
    memset(plan, 0, sizeof *plan);
    if (!request) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`request` is NULL");
    if (request->tensor_count && !request->tensors)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%zu tensors but `tensors` is NULL",
                           request->tensor_count);
    if (request->metadata_count && !request->metadata)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%zu metadata entries but `metadata` is NULL",
                           request->metadata_count);
    size_t count = request->tensor_count, pairs = request->metadata_count;
    plan->order = malloc((count ? count : 1) * sizeof *plan->order);
    plan->lengths = malloc((count ? count : 1) * sizeof *plan->lengths);
    plan->pairs = malloc((pairs ? pairs : 1) * sizeof *plan->pairs);
    if (!plan->order || !plan->lengths || !plan->pairs)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the plan of %zu tensors", count);

    char first[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    for (size_t index = 0; index < count; ++index) {
        uint64_t length;
        uform_status_t status = check_source(&request->tensors[index], index, request->fill != NULL, &length, function,
                                             outcome);
        if (status != UFORM_OK) return status;
        plan->order[index] = &request->tensors[index];
    }
    /* Duplicate names, found by sorting by name before sorting into data order. */
    qsort(plan->order, count, sizeof *plan->order, compare_source_names);
    for (size_t index = 1; index < count; ++index) {
        if (strcmp(plan->order[index - 1]->name, plan->order[index]->name) == 0)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tensor %s: the name appears twice",
                               uform__safetensors_quote(first, plan->order[index]->name));
    }
    for (size_t index = 0; index < pairs; ++index) {
        const uform__safetensors_pair_t *pair = &request->metadata[index];
        if (!pair->key || !pair->value)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "metadata[%zu]: the %s is NULL", index,
                               pair->key ? "value" : "key");
        if (!uform__safetensors_utf8_valid(pair->key, strlen(pair->key), NULL) ||
            !uform__safetensors_utf8_valid(pair->value, strlen(pair->value), NULL))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "__metadata__ key %s: the key or value is not valid UTF-8",
                               uform__safetensors_quote(first, pair->key));
        plan->pairs[index] = pair;
    }
    qsort(plan->pairs, pairs, sizeof *plan->pairs, compare_pair_keys);
    for (size_t index = 1; index < pairs; ++index) {
        if (strcmp(plan->pairs[index - 1]->key, plan->pairs[index]->key) == 0)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "__metadata__ key %s appears twice",
                               uform__safetensors_quote(first, plan->pairs[index]->key));
    }

    /* Largest elements first keeps every tensor aligned to its element size (the reference
     * writer orders the same way), and the name breaks ties so the layout is deterministic. */
    qsort(plan->order, count, sizeof *plan->order, compare_data_order);
    text_t *header = &plan->header;
    text_literal(header, "{");
    if (pairs) {
        text_literal(header, "\"__metadata__\":{");
        for (size_t index = 0; index < pairs; ++index) {
            if (index) text_literal(header, ",");
            text_string(header, plan->pairs[index]->key);
            text_literal(header, ":");
            text_string(header, plan->pairs[index]->value);
        }
        text_literal(header, "}");
    }
    uint64_t offset = 0;
    for (size_t index = 0; index < count; ++index) {
        const uform__safetensors_source_t *source = plan->order[index];
        uint64_t length = uform__safetensors_dtype_size(source->dtype);
        for (uint32_t axis = 0; axis < source->rank; ++axis) length *= source->shape[axis]; /* checked above */
        plan->lengths[index] = length;
        if (pairs || index) text_literal(header, ",");
        text_string(header, source->name);
        text_literal(header, ":{\"dtype\":");
        text_string(header, uform__safetensors_dtype_name(source->dtype));
        text_literal(header, ",\"shape\":[");
        for (uint32_t axis = 0; axis < source->rank; ++axis) {
            if (axis) text_literal(header, ",");
            text_integer(header, source->shape[axis]);
        }
        text_literal(header, "],\"data_offsets\":[");
        text_integer(header, offset);
        text_literal(header, ",");
        if (__builtin_add_overflow(offset, length, &offset) || offset >= UFORM__SAFETENSORS_MAX_INTEGER)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "the tensors hold 2^53 bytes or more, beyond what JSON offsets express");
        text_integer(header, offset);
        text_literal(header, "]}");
    }
    text_literal(header, "}");
    while (!header->failed && header->length % 8) text_literal(header, " ");
    if (header->failed)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the JSON header");
    if (header->length > UFORM__SAFETENSORS_MAX_HEADER)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "the JSON header would take %zu bytes, over the 100 MiB readers accept", header->length);
    plan->data_size = offset;
    plan->total = 8 + (uint64_t)header->length + offset;
    return UFORM_OK;
}

static void store_length(uint8_t prefix[8], uint64_t length) {
    for (int byte = 0; byte < 8; ++byte) prefix[byte] = (uint8_t)(length >> (8 * byte));
}

uform_status_t uform__safetensors_encode(const uform__safetensors_write_t *request, uint8_t **bytes, size_t *size,
                                        uform_outcome_t *outcome) {
    if (!bytes || !size) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "`bytes` or `size` is NULL");
    *bytes = NULL;
    *size = 0;
    plan_t plan;
    uform_status_t status = plan_build(request, &plan, __func__, outcome);
    if (status != UFORM_OK) {
        plan_free(&plan);
        return status;
    }
    uint8_t *result = plan.total <= SIZE_MAX ? malloc((size_t)plan.total) : NULL;
    if (!result) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate %" PRIu64 " bytes", plan.total);
        plan_free(&plan);
        return status;
    }
    store_length(result, plan.header.length);
    memcpy(result + 8, plan.header.bytes, plan.header.length);
    size_t at = 8 + plan.header.length;
    for (size_t index = 0; index < request->tensor_count; ++index) {
        const uform__safetensors_source_t *source = plan.order[index];
        for (uint64_t offset = 0; offset < plan.lengths[index];) {
            size_t chunk = plan.lengths[index] - offset < WRITE_CHUNK ? (size_t)(plan.lengths[index] - offset) : WRITE_CHUNK;
            if (source->data) memcpy(result + at, (const uint8_t *)source->data + offset, chunk);
            else if (request->fill(request->fill_state, (size_t)(source - request->tensors), offset, result + at, chunk)) {
                free(result);
                plan_free(&plan);
                return uform__fail(outcome, UFORM_CANCELLED, __func__, "the fill hook stopped the encoding");
            }
            at += chunk, offset += chunk;
        }
    }
    *bytes = result;
    *size = (size_t)plan.total;
    plan_free(&plan);
    return uform__succeed(outcome, __func__);
}

/* Writes all `length` bytes, retrying after signals and short writes; answers 0 or an errno. */
/* State of one write to a temporary file, so every failure path cleans up the same way. */
typedef struct writing_t {
    const char *path;
    char *temporary;   /* "<dir>/.<name>.XXXXXX" */
    char *directory;   /* "<dir>" */
    int descriptor;    /* -1 once closed */
    char quoted[UFORM__SAFETENSORS_PATH_CAPACITY];
} writing_t;

/* Removes the temporary file and fails with `status`; the target was never touched. */
static uform_status_t abandon(writing_t *writing, uform_outcome_t *outcome, uform_status_t status, const char *format,
                              int error) {
    if (writing->descriptor >= 0) close(writing->descriptor);
    writing->descriptor = -1;
    unlink(writing->temporary);
    if (status == UFORM_CANCELLED)
        return uform__fail(outcome, status, "uform__safetensors_write", "writing %s was cancelled by its progress or fill hook",
                           writing->quoted);
    return uform__fail(outcome, status, "uform__safetensors_write", format, writing->quoted, strerror(error));
}

/* Splits `path` into the directory and the temporary file's template next to the target. */
static uform_status_t name_temporary(writing_t *writing, uform_outcome_t *outcome) {
    const char *path = writing->path;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, "uform__safetensors_write",
                           "%s does not name a file", writing->quoted);
    writing->directory = uform__path_folder(path);
    size_t directory_length = writing->directory ? strlen(writing->directory) : 0;
    writing->temporary = malloc(directory_length + strlen(base) + 10);
    if (!writing->directory || !writing->temporary)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__safetensors_write", "cannot allocate a path");
    sprintf(writing->temporary, "%s/.%s.XXXXXX", writing->directory, base);
    return UFORM_OK;
}

/* Writes the planned bytes to the open temporary file, reporting progress; `chunk_buffer` holds
 * WRITE_CHUNK bytes for tensors filled through the request's hook (NULL when there are none). */
static uform_status_t write_contents(writing_t *writing, const plan_t *plan, const uform__safetensors_write_t *request,
                                     uint8_t *chunk_buffer, uform_outcome_t *outcome) {
    uint8_t prefix[8];
    store_length(prefix, plan->header.length);
    int error = uform__write_whole(writing->descriptor, prefix, 8);
    if (!error) error = uform__write_whole(writing->descriptor, plan->header.bytes, plan->header.length);
    if (error) return abandon(writing, outcome, UFORM_IO, "cannot write %s: %s", error);
    uint64_t written = 8 + plan->header.length;
    if (request->progress && request->progress(request->progress_state, written, plan->total))
        return abandon(writing, outcome, UFORM_CANCELLED, NULL, 0);
    for (size_t index = 0; index < request->tensor_count; ++index) {
        const uint8_t *data = plan->order[index]->data;
        size_t position = (size_t)(plan->order[index] - request->tensors);
        uint64_t left = plan->lengths[index], offset = 0;
        while (left) {
            size_t chunk = left < WRITE_CHUNK ? (size_t)left : WRITE_CHUNK;
            if (!data && request->fill(request->fill_state, position, offset, chunk_buffer, chunk))
                return abandon(writing, outcome, UFORM_CANCELLED, NULL, 0);
            error = uform__write_whole(writing->descriptor, data ? data + offset : chunk_buffer, chunk);
            if (error) return abandon(writing, outcome, UFORM_IO, "cannot write %s: %s", error);
            offset += chunk;
            left -= chunk;
            written += chunk;
            if (request->progress && request->progress(request->progress_state, written, plan->total))
                return abandon(writing, outcome, UFORM_CANCELLED, NULL, 0);
        }
    }
    return UFORM_OK;
}

/* Whether any tensor of the plan is filled through the request's hook. */
static int plan_fills(const plan_t *plan, const uform__safetensors_write_t *request) {
    for (size_t index = 0; index < request->tensor_count; ++index)
        if (!plan->order[index]->data && plan->lengths[index]) return 1;
    return 0;
}

uform_status_t uform__safetensors_write(const char *path, const uform__safetensors_write_t *request,
                                       uform_outcome_t *outcome) {
    static const char function[] = "uform__safetensors_write";
    if (!path) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`path` is NULL");
    writing_t writing = {.path = path, .descriptor = -1};
    uint8_t *chunk_buffer = NULL;
    uform__safetensors_quote_path(writing.quoted, path);
    plan_t plan;
    uform_status_t status = plan_build(request, &plan, function, outcome);
    if (status == UFORM_OK) status = name_temporary(&writing, outcome);
    if (status != UFORM_OK) goto done;

    writing.descriptor = mkostemp(writing.temporary, O_CLOEXEC);
    if (writing.descriptor < 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot create a temporary file next to %s: %s",
                             writing.quoted, strerror(errno));
        goto done;
    }
    /* mkstemp creates mode 0600; a checkpoint is as readable as any file, or as the one it replaces. */
    struct stat previous;
    mode_t mode = stat(path, &previous) == 0 && S_ISREG(previous.st_mode) ? previous.st_mode & 07777 : 0644;
    if (fchmod(writing.descriptor, mode) != 0) {
        status = abandon(&writing, outcome, UFORM_IO, "cannot set the mode of the temporary file for %s: %s", errno);
        goto done;
    }
    if (plan_fills(&plan, request) && !(chunk_buffer = malloc(WRITE_CHUNK))) {
        status = abandon(&writing, outcome, UFORM_OUT_OF_MEMORY, "cannot allocate a chunk to write %s: %s", ENOMEM);
        goto done;
    }
    status = write_contents(&writing, &plan, request, chunk_buffer, outcome);
    if (status != UFORM_OK) goto done;
    if (fsync(writing.descriptor) != 0) {
        status = abandon(&writing, outcome, UFORM_IO, "cannot flush %s to disk: %s", errno);
        goto done;
    }
    int closed = close(writing.descriptor);
    writing.descriptor = -1;
    if (closed != 0) {
        status = abandon(&writing, outcome, UFORM_IO, "cannot close the temporary file for %s: %s", errno);
        goto done;
    }
    if (rename(writing.temporary, path) != 0) {
        status = abandon(&writing, outcome, UFORM_IO, "cannot rename the temporary file over %s: %s", errno);
        goto done;
    }
    /* The rename is durable only once the directory is; file systems that cannot sync a
     * directory answer EINVAL, which leaves nothing more to do. */
    int directory = open(writing.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int error = directory < 0 ? errno : (fsync(directory) != 0 ? errno : 0);
    if (directory >= 0) close(directory);
    if (error && error != EINVAL) {
        char where[UFORM__SAFETENSORS_PATH_CAPACITY];
        status = uform__fail(outcome, UFORM_IO, function,
                             "%s is written, but flushing its directory %s failed: %s", writing.quoted,
                             uform__safetensors_quote_path(where, writing.directory), strerror(error));
        goto done;
    }
    status = uform__succeed(outcome, function);
done:
    plan_free(&plan);
    free(chunk_buffer);
    free(writing.temporary);
    free(writing.directory);
    return status;
}
