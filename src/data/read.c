/*
 * uform_dataset_read: a dataset's items in stored order — every file of a folder, a manifest line's
 * media file or text (choice examples are no items), a shard sample's medium (or its text when it
 * has none). An item that cannot be read is answered in its place with its error, and the next read
 * goes on after it; a shard that breaks is one such item, and reading goes on with the next shard.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/data.h"

static uform_status_t item_failed(uform_dataset_read_t *request, uform_status_t status, size_t line, size_t shard,
                                  const char *source, const char *key, const char *message, const char *function) {
    uform__data_error_set(&request->error, status, line, shard, source, key, "%s", message);
    char place[1200];
    uform__data_error_place(&request->error, place, sizeof place);
    return uform__fail(&request->outcome, status, function, "%s: %s", place, message);
}

static void set_key(uform_dataset_t dataset, uform_dataset_item_t *item, const char *key) {
    item->key = key, item->key_length = key ? strlen(key) : 0;
    (void)dataset;
}

/* ---- lines ---- */

static int is_item(const uform__line_t *line) { return line->kind != UFORM__LINE_CHOICE; }

static uform_status_t read_line(uform_dataset_read_t *request, const char *function) {
    uform_dataset_t dataset = request->dataset;
    const uform__lines_t *lines = &dataset->items.lines;
    while (dataset->read_line < lines->count && !is_item(&lines->items[dataset->read_line])) dataset->read_line += 1;
    if (dataset->read_line >= lines->count) {
        request->done = 1;
        return uform__succeed(&request->outcome, function);
    }
    const uform__line_t *line = &lines->items[dataset->read_line++];
    uform_dataset_item_t *item = &request->item;
    item->ordinal = dataset->read_next++;
    set_key(dataset, item, line->key);
    const char *source = line->number ? line->source : line->path;
    if (line->kind == UFORM__LINE_BAD)
        return item_failed(request, UFORM_FORMAT, line->number, SIZE_MAX, source, line->key, line->message, function);
    if (line->kind == UFORM__LINE_TEXT) {
        item->modality = UFORM_MODALITY_TEXT, item->bytes = line->text, item->size = line->text_length;
        return uform__succeed(&request->outcome, function);
    }
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    uform_status_t status;
    free(dataset->read_bytes);
    dataset->read_bytes = uform__data_read_file(line->path, dataset->options.max_sample_bytes, &item->size, &status, message,
                                                sizeof message);
    if (!dataset->read_bytes) return item_failed(request, status, line->number, SIZE_MAX, source, line->key, message, function);
    item->bytes = dataset->read_bytes;
    if (line->modality >= 0) item->modality = (uform_modality_t)line->modality;
    else {
        uform_outcome_t probed = {0};
        if (uform_media_probe(item->bytes, item->size, &item->modality, &probed) != UFORM_OK)
            return item_failed(request, uform_outcome_status(&probed), line->number, SIZE_MAX, source, line->key,
                               item->size ? probed.message : "the file is empty", function);
    }
    if (item->size == 0 && item->modality != UFORM_MODALITY_TEXT)
        return item_failed(request, UFORM_FORMAT, line->number, SIZE_MAX, source, line->key, "the file is empty", function);
    if (line->kind == UFORM__LINE_PAIR) item->text = line->text, item->text_length = line->text_length;
    return uform__succeed(&request->outcome, function);
}

/* ---- shards ---- */

/* The next sample of the shards (opening the next shard as needed); 1, 0 at the end, -1 when a
 * shard could not be opened or broke (then *failed_shard and `message` say which and why). */
static int next_sample(uform_dataset_t dataset, int with_bytes, uform__shard_sample_t *sample, size_t *failed_shard,
                       uform_status_t *status, char *message, size_t capacity, const char *function) {
    for (;;) {
        if (!dataset->read_reading) {
            if (dataset->read_shard >= dataset->items.shard_count) return 0;
            size_t shard = dataset->read_shard++;
            uform_outcome_t opened = {0};
            if (uform__shard_open(&dataset->read_reader, dataset->items.shards[shard], shard, dataset->options.max_sample_bytes, &opened,
                                  function) != UFORM_OK) {
                *failed_shard = shard, *status = uform_outcome_status(&opened);
                snprintf(message, capacity, "%s", opened.message);
                return -1;
            }
            dataset->read_reading = 1;
        }
        int got = uform__shard_next(&dataset->read_reader, with_bytes, sample);
        if (got > 0) return 1;
        size_t shard = dataset->read_reader.shard;
        uform_status_t broken = dataset->read_reader.broken;
        snprintf(message, capacity, "%s", dataset->read_reader.message);
        uform__shard_close(&dataset->read_reader);
        dataset->read_reading = 0;
        if (got < 0) {
            *failed_shard = shard, *status = broken;
            return -1;
        }
    }
}

static uform_status_t read_shard_item(uform_dataset_read_t *request, const char *function) {
    uform_dataset_t dataset = request->dataset;
    uform__shard_sample_t *sample = &dataset->read_sample;
    uform__shard_sample_free(sample);
    uform_dataset_item_t *item = &request->item;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    size_t shard = 0;
    uform_status_t status = UFORM_OK;
    int got = next_sample(dataset, 1, sample, &shard, &status, message, sizeof message, function);
    if (got == 0) {
        request->done = 1;
        return uform__succeed(&request->outcome, function);
    }
    item->ordinal = dataset->read_next++;
    free(dataset->read_key);
    dataset->read_key = NULL;
    if (got < 0) {
        dataset->read_key = strdup(dataset->items.shards[shard]);
        set_key(dataset, item, dataset->read_key);
        return item_failed(request, status, 0, shard, dataset->items.shards[shard], NULL, message, function);
    }
    const char *path = dataset->items.shards[sample->shard];
    size_t length = strlen(path) + strlen(sample->member) + 2;
    dataset->read_key = malloc(length);
    if (!dataset->read_key) return uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate an item's key");
    snprintf(dataset->read_key, length, "%s:%s", path, sample->member);
    set_key(dataset, item, dataset->read_key);
    if (sample->status != UFORM_OK)
        return item_failed(request, sample->status, 0, sample->shard, path, sample->key, sample->message, function);
    if (sample->modality > 0) {
        item->modality = (uform_modality_t)sample->modality, item->bytes = sample->bytes, item->size = sample->size;
        item->text = sample->text, item->text_length = sample->text_length;
        if (!item->size)
            return item_failed(request, UFORM_FORMAT, 0, sample->shard, path, sample->key, "the medium member is empty", function);
    } else {
        item->modality = UFORM_MODALITY_TEXT, item->bytes = sample->text, item->size = sample->text_length;
    }
    return uform__succeed(&request->outcome, function);
}

/* Passes over `count` items without reading their bytes. */
static uform_status_t skip_items(uform_dataset_read_t *request, size_t count, const char *function) {
    uform_dataset_t dataset = request->dataset;
    for (size_t k = 0; k < count; ++k) {
        if (dataset->options.source != UFORM_DATASET_SHARDS) {
            const uform__lines_t *lines = &dataset->items.lines;
            while (dataset->read_line < lines->count && !is_item(&lines->items[dataset->read_line])) dataset->read_line += 1;
            if (dataset->read_line >= lines->count) break;
            dataset->read_line += 1, dataset->read_next += 1;
            continue;
        }
        uform__shard_sample_t sample;
        char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
        size_t shard;
        uform_status_t status;
        int got = next_sample(dataset, 0, &sample, &shard, &status, message, sizeof message, function);
        uform__shard_sample_free(&sample);
        if (got == 0) break;
        if (got < 0 && status == UFORM_OUT_OF_MEMORY) return uform__fail(&request->outcome, status, function, "%s", message);
        dataset->read_next += 1;
    }
    return UFORM_OK;
}

UFORM_API uform_status_t uform_dataset_read(uform_dataset_read_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->done = 0;
    memset(&request->item, 0, sizeof request->item);
    uform__data_error_clear(&request->error);
    uform_dataset_t dataset = request->dataset;
    if (!dataset) return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "dataset is NULL");
    if (__atomic_load_n(&dataset->busy, __ATOMIC_ACQUIRE) == 1)
        return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "a loader reads this dataset");
    if (request->rewind) uform__dataset_rewind(dataset);
    if (request->skip) {
        uform_status_t status = skip_items(request, request->skip, function);
        if (status != UFORM_OK) return status;
    }
    return dataset->options.source == UFORM_DATASET_SHARDS ? read_shard_item(request, function) : read_line(request, function);
}

void uform__dataset_rewind(struct uform_dataset_s *dataset) {
    if (dataset->read_reading) uform__shard_close(&dataset->read_reader);
    dataset->read_reading = 0, dataset->read_shard = 0, dataset->read_line = 0, dataset->read_next = 0;
    uform__shard_sample_free(&dataset->read_sample);
}
