/*
 * The cursor (docs/data.md, "The cursor"): where a loader's sampler stands after the batches it
 * handed over, as JSON text small enough for a checkpoint's metadata, restored exactly:
 *
 *   {"format": "uform.data.cursor/1", "source": "shards", "fingerprint": "…16 hex…",
 *    "seed": "0", "batch": 128, "partitions": 2, "batches": 300, "skipped": 0,
 *    "lines": {"epoch": 3, "position": 512, "swaps": [a, b, …], "bad": [i, …]}          (manifests, folders)
 *    "streams": [{"partition": 0, "epoch": 0, "rng": "…hex…", "at": 4, "reading": 1,   (shards)
 *                 "ordinal": 37, "counter": 1201, "exhausted": 0, "epoch_samples": 1201,
 *                 "buffer": [shard, ordinal, shard, ordinal, …]}, …]}
 *
 * 64-bit values that JSON numbers cannot hold exactly (seed, fingerprint, random state) are strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/outcome.h"
#include "data/data.h"
#include "io/json.h"

#define FORMAT "uform.data.cursor/1"

static const char *const source_names[3] = {"manifest", "folder", "shards"};

static int add_u64(cJSON *object, const char *name, uint64_t value, int hex) {
    char text[32];
    snprintf(text, sizeof text, hex ? "%016llx" : "%llu", (unsigned long long)value);
    return cJSON_AddStringToObject(object, name, text) ? 0 : -1;
}

static int add_size(cJSON *object, const char *name, size_t value) {
    return cJSON_AddNumberToObject(object, name, (double)value) ? 0 : -1;
}

/* An array of sizes. */
static cJSON *size_array(const size_t *values, size_t count) {
    cJSON *array = cJSON_CreateArray();
    for (size_t i = 0; array && i < count; ++i) {
        cJSON *number = cJSON_CreateNumber((double)values[i]);
        if (!number || !cJSON_AddItemToArray(array, number)) {
            cJSON_Delete(number);
            cJSON_Delete(array);
            return NULL;
        }
    }
    return array;
}

static cJSON *lines_object(const uform__lines_sampler_t *sampler) {
    cJSON *object = cJSON_CreateObject();
    size_t n = sampler->lines->count, bad_count = 0;
    size_t *bad = malloc((n + 1) * sizeof *bad);
    for (size_t i = 0; bad && i < n; ++i)
        if (sampler->bad[i]) bad[bad_count++] = i;
    cJSON *swaps = size_array(sampler->swaps, sampler->swap_count), *bads = bad ? size_array(bad, bad_count) : NULL;
    free(bad);
    int failed = !object || !swaps || !bads || add_u64(object, "epoch", sampler->epoch, 0) ||
                 add_size(object, "position", sampler->position);
    if (!failed && cJSON_AddItemToObject(object, "swaps", swaps)) swaps = NULL;
    else failed = 1;
    if (!failed && cJSON_AddItemToObject(object, "bad", bads)) bads = NULL;
    else failed = 1;
    cJSON_Delete(swaps), cJSON_Delete(bads);
    if (failed) cJSON_Delete(object);
    return failed ? NULL : object;
}

static cJSON *stream_object(const uform__stream_t *stream) {
    uform__stream_state_t state;
    uform__stream_state(stream, &state);
    cJSON *object = cJSON_CreateObject();
    size_t *entries = malloc((2 * stream->buffer_count + 1) * sizeof *entries);
    for (size_t i = 0; entries && i < stream->buffer_count; ++i)
        entries[2 * i] = stream->buffer[i].shard, entries[2 * i + 1] = stream->buffer[i].ordinal;
    cJSON *buffer = entries ? size_array(entries, 2 * stream->buffer_count) : NULL;
    free(entries);
    int failed = !object || !buffer || add_size(object, "partition", stream->partition) || add_u64(object, "epoch", state.epoch, 0) ||
                 add_u64(object, "rng", state.rng, 1) || add_size(object, "at", state.at) ||
                 add_size(object, "reading", (size_t)state.reading) || add_size(object, "ordinal", state.ordinal) ||
                 add_size(object, "counter", state.counter) || add_size(object, "exhausted", (size_t)state.exhausted) ||
                 add_size(object, "epoch_samples", state.epoch_samples);
    if (!failed && cJSON_AddItemToObject(object, "buffer", buffer)) buffer = NULL;
    else failed = 1;
    cJSON_Delete(buffer);
    if (failed) cJSON_Delete(object);
    return failed ? NULL : object;
}

char *uform__cursor_write(const uform__cursor_head_t *head, const uform__lines_sampler_t *lines,
                          const uform__stream_t *const *streams, size_t count) {
    cJSON *root = cJSON_CreateObject();
    int failed = !root || !cJSON_AddStringToObject(root, "format", FORMAT) ||
                 !cJSON_AddStringToObject(root, "source", source_names[head->source]) ||
                 add_u64(root, "fingerprint", head->fingerprint, 1) || add_u64(root, "seed", head->seed, 0) ||
                 add_size(root, "batch", head->batch) || add_size(root, "partitions", head->partitions) ||
                 add_size(root, "batches", head->batches) || add_size(root, "skipped", head->skipped);
    if (!failed && lines) {
        cJSON *object = lines_object(lines);
        if (!object || !cJSON_AddItemToObject(root, "lines", object)) failed = 1, cJSON_Delete(object);
    }
    if (!failed && streams) {
        cJSON *array = cJSON_AddArrayToObject(root, "streams");
        failed = !array;
        for (size_t i = 0; !failed && i < count; ++i) {
            cJSON *object = stream_object(streams[i]);
            if (!object || !cJSON_AddItemToArray(array, object)) failed = 1, cJSON_Delete(object);
        }
    }
    char *text = failed ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* ---- reading ---- */

typedef struct reading_t {
    uform_outcome_t *outcome;
    const char *function;
    int failed;
} reading_t;

static const cJSON *member(reading_t *reading, const cJSON *object, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!item && !reading->failed) {
        reading->failed = 1;
        uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor has no \"%s\"", name);
    }
    return item;
}

/* A whole number from 0 to 2^53 (what a double holds exactly). The range is checked before the
 * conversion: converting a double outside size_t's range (1e32 in a hostile cursor) is undefined. */
static int is_count(double value) { return value >= 0 && value <= 9007199254740992.0 && value == (double)(size_t)value; }

static size_t read_size(reading_t *reading, const cJSON *object, const char *name) {
    const cJSON *item = member(reading, object, name);
    if (!item) return 0;
    double value = item->valuedouble;
    if (!cJSON_IsNumber(item) || !is_count(value)) {
        if (!reading->failed)
            uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor's \"%s\" is not a count", name);
        reading->failed = 1;
        return 0;
    }
    return (size_t)value;
}

static uint64_t read_u64(reading_t *reading, const cJSON *object, const char *name, int hex) {
    const cJSON *item = member(reading, object, name);
    if (!item) return 0;
    char *end = NULL;
    unsigned long long value = cJSON_IsString(item) ? strtoull(item->valuestring, &end, hex ? 16 : 10) : 0;
    if (!cJSON_IsString(item) || !end || *end || !item->valuestring[0]) {
        if (!reading->failed)
            uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor's \"%s\" is not a number in a string",
                        name);
        reading->failed = 1;
        return 0;
    }
    return (uint64_t)value;
}

/* The values of an array of counts (malloc'ed), or NULL with reading->failed. */
static size_t *read_sizes(reading_t *reading, const cJSON *object, const char *name, size_t *count) {
    const cJSON *array = member(reading, object, name);
    *count = 0;
    if (!array) return NULL;
    if (!cJSON_IsArray(array)) {
        if (!reading->failed) uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor's \"%s\" is not a list", name);
        reading->failed = 1;
        return NULL;
    }
    size_t length = (size_t)cJSON_GetArraySize(array);
    size_t *values = malloc((length + 1) * sizeof *values);
    if (!values) {
        if (!reading->failed) uform__fail(reading->outcome, UFORM_OUT_OF_MEMORY, reading->function, "cannot allocate memory to read the cursor");
        reading->failed = 1;
        return NULL;
    }
    const cJSON *item;
    size_t i = 0;
    cJSON_ArrayForEach(item, array) {
        double value = item->valuedouble;
        if (!cJSON_IsNumber(item) || !is_count(value)) {
            if (!reading->failed)
                uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor's \"%s\" holds a value that is not a count", name);
            reading->failed = 1;
            free(values);
            return NULL;
        }
        values[i++] = (size_t)value;
    }
    *count = i;
    return values;
}

static uform_status_t restore_lines(reading_t *reading, const cJSON *object, uform__lines_sampler_t *sampler) {
    uint64_t epoch = read_u64(reading, object, "epoch", 0);
    size_t position = read_size(reading, object, "position"), swap_count = 0, bad_count = 0;
    size_t *swaps = read_sizes(reading, object, "swaps", &swap_count);
    size_t *bad = read_sizes(reading, object, "bad", &bad_count);
    size_t n = sampler->lines->count;
    uform_status_t status = reading->failed ? uform_outcome_status(reading->outcome) : UFORM_OK;
    if (status == UFORM_OK && (position > n || swap_count % 2))
        status = uform__fail(reading->outcome, UFORM_CONFIG_MISMATCH, reading->function,
                             "the cursor is at position %zu of %zu lines: it was made for other data", position, n);
    for (size_t i = 0; status == UFORM_OK && i < swap_count + bad_count; ++i)
        if ((i < swap_count ? swaps[i] : bad[i - swap_count]) >= n)
            status = uform__fail(reading->outcome, UFORM_CONFIG_MISMATCH, reading->function,
                                 "the cursor names line %zu of %zu: it was made for other data",
                                 i < swap_count ? swaps[i] : bad[i - swap_count], n);
    if (status == UFORM_OK) {
        /* The sampler rebuilds the epoch's order itself (the one definition, lines_sampler.c). */
        uform__lines_sampler_restore(sampler, epoch, position, swaps, swap_count, bad, bad_count);
        swaps = NULL;
    }
    free(swaps), free(bad);
    return status;
}

static uform_status_t restore_stream(reading_t *reading, const cJSON *object, uform__stream_t *stream) {
    uform__stream_state_t state;
    memset(&state, 0, sizeof state);
    state.epoch = read_u64(reading, object, "epoch", 0);
    state.rng = read_u64(reading, object, "rng", 1);
    state.at = read_size(reading, object, "at");
    state.reading = read_size(reading, object, "reading") != 0;
    state.ordinal = read_size(reading, object, "ordinal");
    state.counter = read_size(reading, object, "counter");
    state.exhausted = read_size(reading, object, "exhausted") != 0;
    state.epoch_samples = read_size(reading, object, "epoch_samples");
    size_t count = 0;
    size_t *entries = read_sizes(reading, object, "buffer", &count);
    uform_status_t status = reading->failed ? uform_outcome_status(reading->outcome) : UFORM_OK;
    if (status == UFORM_OK && count % 2)
        status = uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function, "the cursor's buffer lists an odd count");
    if (status == UFORM_OK)
        status = uform__stream_restore(stream, &state, entries, count / 2, reading->outcome, reading->function);
    free(entries);
    return status;
}

uform_status_t uform__cursor_read(const char *text, const uform__cursor_head_t *expected, uform__cursor_head_t *head,
                                  uform__lines_sampler_t *lines, uform__stream_t *const *streams, size_t count,
                                  uform_outcome_t *outcome, const char *function) {
    cJSON *root = NULL;
    uform_status_t status = uform__json_parse(text, strlen(text), &root, NULL, NULL);
    if (status == UFORM_OUT_OF_MEMORY) return uform__fail(outcome, status, function, "cannot allocate memory to parse the cursor");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (status != UFORM_OK || !cJSON_IsObject(root) || !cJSON_IsString(format) || strcmp(format->valuestring, FORMAT) != 0) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the cursor is not a %s JSON object", FORMAT);
    }
    reading_t reading = {outcome, function, 0};
    memset(head, 0, sizeof *head);
    const cJSON *source = member(&reading, root, "source");
    head->source = UFORM_DATASET_SHARDS + 1;
    for (int i = 0; i < 3 && cJSON_IsString(source); ++i)
        if (strcmp(source->valuestring, source_names[i]) == 0) head->source = (uform_dataset_source_t)i;
    head->fingerprint = read_u64(&reading, root, "fingerprint", 1);
    head->seed = read_u64(&reading, root, "seed", 0);
    head->batch = read_size(&reading, root, "batch");
    head->partitions = read_size(&reading, root, "partitions");
    head->batches = read_size(&reading, root, "batches");
    head->skipped = read_size(&reading, root, "skipped");
    status = reading.failed ? uform_outcome_status(outcome) : UFORM_OK;
    if (status == UFORM_OK && head->source != expected->source)
        status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor is of a %s dataset, this one reads %s",
                             head->source <= UFORM_DATASET_SHARDS ? source_names[head->source] : "unknown",
                             source_names[expected->source]);
    if (status == UFORM_OK && head->fingerprint != expected->fingerprint)
        status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                             "the cursor is of other data (fingerprint %016llx, this dataset's %016llx)",
                             (unsigned long long)head->fingerprint, (unsigned long long)expected->fingerprint);
    if (status == UFORM_OK && head->seed != expected->seed)
        status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor's seed is %llu, this dataset's %llu",
                             (unsigned long long)head->seed, (unsigned long long)expected->seed);
    if (status == UFORM_OK && (head->batch != expected->batch || head->partitions != expected->partitions))
        status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                             "the cursor is of batch %zu over %zu partitions, this loader draws batch %zu over %zu", head->batch,
                             head->partitions, expected->batch, expected->partitions);
    if (status == UFORM_OK && lines) status = restore_lines(&reading, member(&reading, root, "lines"), lines);
    if (status == UFORM_OK && streams) {
        const cJSON *array = member(&reading, root, "streams");
        for (size_t i = 0; status == UFORM_OK && i < count; ++i) {
            const cJSON *found = NULL, *item;
            cJSON_ArrayForEach(item, array) {
                const cJSON *partition = cJSON_GetObjectItemCaseSensitive(item, "partition");
                if (cJSON_IsNumber(partition) && partition->valuedouble == (double)streams[i]->partition) found = item;
            }
            if (!found)
                status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor has no stream of partition %zu",
                                     streams[i]->partition);
            else status = restore_stream(&reading, found, streams[i]);
        }
    }
    cJSON_Delete(root);
    return status;
}
