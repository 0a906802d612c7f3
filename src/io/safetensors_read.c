/*
 * The safetensors reader: maps a file (or borrows a buffer) and validates all of its header
 * before answering, so callers may trust every tensor's range afterwards.
 *
 * What is checked, in order (each failure is UFORM_FORMAT naming the tensor or key):
 * the 8-byte length and its bounds; the header bytes themselves (starts with '{' as the
 * reference reader demands, valid UTF-8, no raw control bytes, no escaped NUL, at most three
 * levels of nesting, only whitespace after the object); the JSON (cJSON, with the explicit
 * length, so nothing past the header is read); each entry; then names unique and ranges
 * disjoint once sorted. Offsets and dimensions are read from `valuedouble` with an exactness
 * check below 2^53 (cJSON's `valueint` saturates at INT_MAX).
 */
#include "io/safetensors.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/map_file.h"
#include "core/outcome.h"
#include "io/json.h"
#include "io/open_mapped.h"
#include "io/safetensors_text.h"

typedef struct metadata_entry_t {
    const char *key, *value;
} metadata_entry_t;

struct uform__safetensors_t {
    uform__io_source_t source;      /* the whole file or borrowed buffer; first (open_mapped.h) */
    size_t data_start;              /* 8 + header length */
    uform__safetensors_tensor_t *tensors; /* `count`, sorted by name */
    size_t count;
    metadata_entry_t *metadata;     /* `metadata_count`, sorted by key */
    size_t metadata_count;
    char *strings;                  /* every name, key and value, NUL-terminated, one allocation */
};

/* The deepest a valid header nests: root object, tensor object, shape or offsets array. */
#define HEADER_MAX_DEPTH 3

static const char dtype_list[] = "BF16, F16, F32, F64, I8, U8, I32, I64, BOOL";

static int is_json_space(unsigned char byte) { return byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r'; }

/*
 * Checks the raw header bytes that cJSON would accept but a safetensors header must not hold,
 * and finds where the top-level object ends (`*object_end`, one past its closing brace) so the
 * padding after it can be checked and cJSON parses exactly the object.
 */
static uform_status_t prescan_header(const char *header, size_t length, size_t *object_end, uform_outcome_t *outcome) {
    if (header[0] != '{')
        return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                           "the JSON header must start with '{', found byte 0x%02x", (unsigned char)header[0]);
    size_t bad_at = 0;
    if (!uform__safetensors_utf8_valid(header, length, &bad_at))
        return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                           "the JSON header is not valid UTF-8 at header byte %zu (0x%02x)", bad_at,
                           (unsigned char)header[bad_at]);
    int in_string = 0;
    unsigned depth = 0;
    size_t at = 0;
    for (; at < length; ++at) {
        unsigned char byte = (unsigned char)header[at];
        if (in_string) {
            if (byte == '"') in_string = 0;
            else if (byte < 0x20)
                return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                                   "raw control byte 0x%02x inside a JSON string at header byte %zu", byte, at);
            else if (byte == '\\') {
                /* An escaped NUL would cut a C string short and make two names equal. */
                if (length - at > 5 && header[at + 1] == 'u' && memcmp(header + at + 2, "0000", 4) == 0)
                    return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                                       "a JSON string holds an escaped NUL (\\u0000) at header byte %zu", at);
                ++at; /* skip the escaped byte; cJSON checks the escape itself */
            }
            continue;
        }
        if (byte == '"') in_string = 1;
        else if (byte == '{' || byte == '[') {
            if (++depth > HEADER_MAX_DEPTH)
                return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                                   "the JSON header nests deeper than %d levels at header byte %zu", HEADER_MAX_DEPTH,
                                   at);
        } else if (byte == '}' || byte == ']') {
            if (--depth == 0) break;
        } else if (byte < 0x20 && !is_json_space(byte))
            return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                               "raw control byte 0x%02x in the JSON header at header byte %zu", byte, at);
    }
    if (at == length)
        return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                           "the %zu-byte JSON header ends before its top-level object closes", length);
    for (size_t pad = at + 1; pad < length; ++pad) {
        if (!is_json_space((unsigned char)header[pad]))
            return uform__fail(outcome, UFORM_FORMAT, "uform__safetensors_open",
                               "header byte %zu after the JSON object is 0x%02x; only whitespace may pad the header",
                               pad, (unsigned char)header[pad]);
    }
    *object_end = at + 1;
    return UFORM_OK;
}

/* Describes a value that should have been a non-negative integer: the number, or its kind. */
static const char *describe_value(char buffer[64], const cJSON *item) {
    if (!cJSON_IsNumber(item)) {
        snprintf(buffer, 64, "%s", uform__json_kind(item));
        return buffer;
    }
    /* The shortest form that reads back as the same double, as the file most likely spelled it. */
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(buffer, 64, "%.*g", digits, item->valuedouble);
        if (strtod(buffer, NULL) == item->valuedouble) break;
    }
    return buffer;
}

/* Why a JSON value is not an exact non-negative integer below 2^53, or NULL when it is one. */
static const char *integer_of(const cJSON *item, uint64_t *value) {
    if (!cJSON_IsNumber(item)) return "expected a non-negative integer";
    double number = item->valuedouble;
    if (!isfinite(number) || number >= (double)UFORM__SAFETENSORS_MAX_INTEGER)
        return "beyond 2^53, the largest integer JSON numbers hold exactly";
    if (number < 0) return "negative";
    if (number != floor(number)) return "not an integer";
    *value = (uint64_t)number;
    return NULL;
}

/* Writes "[2, 3, 4]" for a shape, cut short with "..." if it does not fit. */
static const char *describe_shape(char buffer[128], const uint64_t *shape, uint32_t rank) {
    size_t out = 0;
    buffer[out++] = '[';
    buffer[out] = 0;
    for (uint32_t axis = 0; axis < rank; ++axis) {
        int written = snprintf(buffer + out, 128 - out, "%s%" PRIu64, axis ? ", " : "", shape[axis]);
        if (written < 0 || (size_t)written >= 128 - out - 4) {
            memcpy(buffer + out, "...]", 5);
            return buffer;
        }
        out += (size_t)written;
    }
    buffer[out++] = ']';
    buffer[out] = 0;
    return buffer;
}

/* Reads one tensor entry and checks it against itself and the data section's size. */
static uform_status_t parse_tensor(const cJSON *entry, uint64_t data_size, uform__safetensors_tensor_t *tensor,
                                   uform_outcome_t *outcome) {
    static const char function[] = "uform__safetensors_open";
    char name[UFORM__SAFETENSORS_QUOTE_CAPACITY], found[64], shape_text[128];
    uform__safetensors_quote(name, entry->string);
    if (!cJSON_IsObject(entry))
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "tensor %s: the entry is %s, expected an object with dtype, shape and data_offsets", name,
                           uform__json_kind(entry));
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const cJSON *field = entry->child; field; field = field->next) {
        const cJSON **slot = NULL;
        if (strcmp(field->string, "dtype") == 0) slot = &dtype;
        else if (strcmp(field->string, "shape") == 0) slot = &shape;
        else if (strcmp(field->string, "data_offsets") == 0) slot = &offsets;
        else {
            char key[UFORM__SAFETENSORS_QUOTE_CAPACITY];
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "tensor %s: unexpected key %s (an entry holds dtype, shape and data_offsets)", name,
                               uform__safetensors_quote(key, field->string));
        }
        if (*slot)
            return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: key '%s' appears twice", name,
                               field->string);
        *slot = field;
    }
    if (!dtype) return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: has no 'dtype'", name);
    if (!shape) return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: has no 'shape'", name);
    if (!offsets) return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: has no 'data_offsets'", name);

    if (!cJSON_IsString(dtype))
        return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: dtype is %s, expected a string such as \"F32\"",
                           name, uform__json_kind(dtype));
    if (!uform__safetensors_dtype_parse(dtype->valuestring, &tensor->dtype)) {
        char spelled[UFORM__SAFETENSORS_QUOTE_CAPACITY];
        return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: dtype %s is not one of %s", name,
                           uform__safetensors_quote(spelled, dtype->valuestring), dtype_list);
    }

    if (!cJSON_IsArray(shape))
        return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: shape is %s, expected an array of integers",
                           name, uform__json_kind(shape));
    uint32_t rank = 0;
    uint64_t element_count = 1;
    for (const cJSON *dimension = shape->child; dimension; dimension = dimension->next, ++rank) {
        if (rank == UFORM__SAFETENSORS_MAX_RANK) {
            size_t total = (size_t)cJSON_GetArraySize(shape);
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "tensor %s: shape has %zu dimensions, at most %d are supported", name, total,
                               UFORM__SAFETENSORS_MAX_RANK);
        }
        const char *why = integer_of(dimension, &tensor->shape[rank]);
        if (why)
            return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: shape[%u] is %s: %s", name, rank,
                               describe_value(found, dimension), why);
        if (__builtin_mul_overflow(element_count, tensor->shape[rank], &element_count))
            return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: shape has more than 2^64 elements", name);
    }
    tensor->rank = rank;
    tensor->element_count = element_count;
    describe_shape(shape_text, tensor->shape, rank);

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "tensor %s: data_offsets is %s%s, expected an array [begin, end]", name, uform__json_kind(offsets),
                           cJSON_IsArray(offsets) ? " without exactly 2 items" : "");
    uint64_t bounds[2];
    const cJSON *bound = offsets->child;
    for (int side = 0; side < 2; ++side, bound = bound->next) {
        const char *why = integer_of(bound, &bounds[side]);
        if (why)
            return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: data_offsets[%d] is %s: %s", name, side,
                               describe_value(found, bound), why);
    }
    if (bounds[1] < bounds[0])
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin", name, bounds[0],
                           bounds[1]);
    uint64_t needed;
    size_t element_size = uform__safetensors_dtype_size(tensor->dtype);
    if (__builtin_mul_overflow(element_count, (uint64_t)element_size, &needed))
        return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: shape %s of %s needs more than 2^64 bytes",
                           name, shape_text, dtype->valuestring);
    if (needed != bounds[1] - bounds[0])
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "tensor %s: shape %s of %s needs %" PRIu64 " bytes, but data_offsets [%" PRIu64 ", %" PRIu64
                           "] span %" PRIu64,
                           name, shape_text, dtype->valuestring, needed, bounds[0], bounds[1], bounds[1] - bounds[0]);
    if (bounds[1] > data_size)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of the %" PRIu64
                           "-byte data section",
                           name, bounds[0], bounds[1], data_size);
    tensor->offset = bounds[0];
    tensor->length = needed;
    return UFORM_OK;
}

static int compare_names(const void *left, const void *right) {
    return strcmp(((const uform__safetensors_tensor_t *)left)->name, ((const uform__safetensors_tensor_t *)right)->name);
}

static int compare_keys(const void *left, const void *right) {
    return strcmp(((const metadata_entry_t *)left)->key, ((const metadata_entry_t *)right)->key);
}

static int compare_offsets(const void *left, const void *right) {
    const uform__safetensors_tensor_t *a = *(const uform__safetensors_tensor_t *const *)left;
    const uform__safetensors_tensor_t *b = *(const uform__safetensors_tensor_t *const *)right;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    if (a->length != b->length) return a->length < b->length ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Copies `text` into the string block at `*cursor` and answers the copy. */
static const char *keep_string(char **cursor, const char *text) {
    size_t length = strlen(text) + 1;
    char *copy = *cursor;
    memcpy(copy, text, length);
    *cursor += length;
    return copy;
}

/* Names unique (sorted by name), metadata keys unique, and non-empty ranges pairwise disjoint. */
static uform_status_t check_sorted(uform__safetensors_t *file, uform_outcome_t *outcome) {
    static const char function[] = "uform__safetensors_open";
    char first[UFORM__SAFETENSORS_QUOTE_CAPACITY], second[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    if (file->count > 1) qsort(file->tensors, file->count, sizeof *file->tensors, compare_names);
    for (size_t index = 1; index < file->count; ++index) {
        if (strcmp(file->tensors[index - 1].name, file->tensors[index].name) == 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "tensor %s: the name appears twice in the header",
                               uform__safetensors_quote(first, file->tensors[index].name));
    }
    if (file->metadata_count > 1) qsort(file->metadata, file->metadata_count, sizeof *file->metadata, compare_keys);
    for (size_t index = 1; index < file->metadata_count; ++index) {
        if (strcmp(file->metadata[index - 1].key, file->metadata[index].key) == 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "__metadata__ key %s appears twice",
                               uform__safetensors_quote(first, file->metadata[index].key));
    }
    if (file->count < 2) return UFORM_OK;
    const uform__safetensors_tensor_t **by_offset = malloc(file->count * sizeof *by_offset);
    if (!by_offset)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the order of %zu tensors",
                           file->count);
    for (size_t index = 0; index < file->count; ++index) by_offset[index] = &file->tensors[index];
    qsort(by_offset, file->count, sizeof *by_offset, compare_offsets);
    /* An empty tensor occupies no bytes, so it overlaps nothing wherever it points. */
    const uform__safetensors_tensor_t *previous = NULL;
    uform_status_t status = UFORM_OK;
    for (size_t index = 0; index < file->count; ++index) {
        const uform__safetensors_tensor_t *tensor = by_offset[index];
        if (!tensor->length) continue;
        if (previous && tensor->offset < previous->offset + previous->length) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] overlap those of tensor %s [%" PRIu64
                                 ", %" PRIu64 "]",
                                 uform__safetensors_quote(first, tensor->name), tensor->offset,
                                 tensor->offset + tensor->length, uform__safetensors_quote(second, previous->name),
                                 previous->offset, previous->offset + previous->length);
            break;
        }
        previous = tensor;
    }
    free(by_offset);
    return status;
}

/* Validates `file->source.bytes[0..size)` and fills the tables. On failure the caller closes `file`. */
static uform_status_t parse_file(void *record, uform_outcome_t *outcome) {
    uform__safetensors_t *file = record;
    static const char function[] = "uform__safetensors_open";
    if (file->source.size < 8)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the file is %zu bytes, shorter than the 8-byte header length that starts it", file->source.size);
    uint64_t header_length = 0;
    for (int byte = 7; byte >= 0; --byte) header_length = header_length << 8 | file->source.bytes[byte];
    if (header_length > UFORM__SAFETENSORS_MAX_HEADER)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the header length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes (100 MiB)", header_length,
                           UFORM__SAFETENSORS_MAX_HEADER);
    if (header_length > file->source.size - 8)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the header length %" PRIu64 " runs past the end of the %zu-byte file", header_length,
                           file->source.size);
    if (header_length < 2)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the header length %" PRIu64 " is too short for a JSON object", header_length);
    const char *header = (const char *)file->source.bytes + 8;
    file->data_start = 8 + (size_t)header_length;
    uint64_t data_size = file->source.size - file->data_start;

    size_t object_end = 0;
    uform_status_t status = prescan_header(header, (size_t)header_length, &object_end, outcome);
    if (status != UFORM_OK) return status;
    const char *parse_end = NULL;
    cJSON *root = NULL;
    size_t near = 0;
    status = uform__json_parse(header, object_end, &root, &parse_end, &near);
    if (status == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, status, function, "cannot allocate the parsed JSON header (%zu bytes of text)", object_end);
    if (status != UFORM_OK)
        return uform__fail(outcome, UFORM_FORMAT, function, "the JSON header is malformed near header byte %zu", near);
    if (!cJSON_IsObject(root) || parse_end != header + object_end) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_FORMAT, function, "the JSON header is not one object");
    }

    /* First pass: count entries and string bytes, check the metadata. */
    size_t entries = 0, string_bytes = 0;
    const cJSON *metadata = NULL;
    for (const cJSON *entry = root->child; entry; entry = entry->next) {
        string_bytes += strlen(entry->string) + 1;
        if (strcmp(entry->string, "__metadata__") != 0) {
            ++entries;
            continue;
        }
        if (metadata) {
            status = uform__fail(outcome, UFORM_FORMAT, function, "the header holds two '__metadata__' entries");
            goto done;
        }
        metadata = entry;
        if (!cJSON_IsObject(entry)) {
            status = uform__fail(outcome, UFORM_FORMAT, function, "__metadata__ is %s, expected an object of strings",
                                 uform__json_kind(entry));
            goto done;
        }
        for (const cJSON *pair = entry->child; pair; pair = pair->next) {
            char key[UFORM__SAFETENSORS_QUOTE_CAPACITY];
            if (!cJSON_IsString(pair)) {
                status = uform__fail(outcome, UFORM_FORMAT, function,
                                     "__metadata__ key %s: the value is %s, expected a string",
                                     uform__safetensors_quote(key, pair->string), uform__json_kind(pair));
                goto done;
            }
            string_bytes += strlen(pair->string) + strlen(pair->valuestring) + 2;
            ++file->metadata_count;
        }
    }

    file->tensors = calloc(entries ? entries : 1, sizeof *file->tensors);
    file->metadata = calloc(file->metadata_count ? file->metadata_count : 1, sizeof *file->metadata);
    file->strings = malloc(string_bytes ? string_bytes : 1);
    if (!file->tensors || !file->metadata || !file->strings) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                             "cannot allocate the tables of %zu tensors (%zu bytes of names)", entries, string_bytes);
        goto done;
    }

    /* Second pass: each tensor, with names copied out of the cJSON tree. */
    char *cursor = file->strings;
    for (const cJSON *entry = root->child; entry; entry = entry->next) {
        if (entry == metadata) continue;
        uform__safetensors_tensor_t *tensor = &file->tensors[file->count];
        status = parse_tensor(entry, data_size, tensor, outcome);
        if (status != UFORM_OK) goto done;
        tensor->name = keep_string(&cursor, entry->string);
        tensor->data = file->source.bytes + file->data_start + tensor->offset;
        ++file->count;
    }
    if (metadata) {
        size_t index = 0;
        for (const cJSON *pair = metadata->child; pair; pair = pair->next, ++index) {
            file->metadata[index].key = keep_string(&cursor, pair->string);
            file->metadata[index].value = keep_string(&cursor, pair->valuestring);
        }
    }
    status = check_sorted(file, outcome);
done:
    cJSON_Delete(root);
    return status;
}

void uform__safetensors_close(uform__safetensors_t *file) {
    if (!file) return;
    uform__unmap_file(file->source.mapping, file->source.size);
    free(file->tensors);
    free(file->metadata);
    free(file->strings);
    free(file);
}

static void close_record(void *record) { uform__safetensors_close(record); }

static const uform__io_reader_t opener = {
    .record_size = sizeof(uform__safetensors_t),
    .parse = parse_file,
    .close = close_record,
    .function = "uform__safetensors_open", /* parse_file's own name for every failure */
};

uform_status_t uform__safetensors_open_memory(const void *bytes, size_t size, uform__safetensors_t **file,
                                             uform_outcome_t *outcome) {
    void *record = NULL;
    uform_status_t status = uform__io_open_bytes(&opener, bytes, size, file ? &record : NULL, outcome, __func__);
    if (file) *file = record;
    return status;
}

uform_status_t uform__safetensors_open(const char *path, uform__safetensors_t **file, uform_outcome_t *outcome) {
    void *record = NULL;
    uform_status_t status = uform__io_open_path(&opener, path, file ? &record : NULL, outcome, __func__);
    if (file) *file = record;
    return status;
}

size_t uform__safetensors_count(const uform__safetensors_t *file) { return file ? file->count : 0; }

const uform__safetensors_tensor_t *uform__safetensors_at(const uform__safetensors_t *file, size_t index) {
    if (!file || index >= file->count) return NULL;
    return &file->tensors[index];
}

const uform__safetensors_tensor_t *uform__safetensors_find(const uform__safetensors_t *file, const char *name) {
    if (!file || !name) return NULL;
    return uform__tensors_find_sorted(file->tensors, file->count, name);
}

const uform__safetensors_tensor_t *uform__tensors_find_sorted(const uform__safetensors_tensor_t *tensors, size_t count,
                                                              const char *name) {
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        int order = strcmp(name, tensors[middle].name);
        if (order == 0) return &tensors[middle];
        if (order < 0) high = middle;
        else low = middle + 1;
    }
    return NULL;
}

size_t uform__safetensors_metadata_count(const uform__safetensors_t *file) { return file ? file->metadata_count : 0; }

int uform__safetensors_metadata_at(const uform__safetensors_t *file, size_t index, const char **key,
                                   const char **value) {
    if (!file || index >= file->metadata_count) return 0;
    if (key) *key = file->metadata[index].key;
    if (value) *value = file->metadata[index].value;
    return 1;
}

const char *uform__safetensors_metadata_find(const uform__safetensors_t *file, const char *key) {
    if (!file || !key) return NULL;
    size_t low = 0, high = file->metadata_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        int order = strcmp(key, file->metadata[middle].key);
        if (order == 0) return file->metadata[middle].value;
        if (order < 0) high = middle;
        else low = middle + 1;
    }
    return NULL;
}

const uint8_t *uform__safetensors_bytes(const uform__safetensors_t *file, size_t *size, size_t *data_start) {
    if (size) *size = file ? file->source.size : 0;
    if (data_start) *data_start = file ? file->data_start : 0;
    return file ? file->source.bytes : NULL;
}
