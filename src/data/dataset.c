/*
 * Datasets: opening, describing and freeing (uform.h, "Data"). The top of the open path: the kind
 * of source picks a table (source.h), whose functions fill the dataset's items; what the sources
 * share lives below them in source.c, so no source calls back up here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/data.h"

const uform__lines_t *uform__dataset_training_lines(const struct uform_dataset_s *dataset) {
    return dataset->options.source == UFORM_DATASET_FOLDER ? &dataset->items.samples : &dataset->items.lines;
}

static uint64_t fingerprint_of(const struct uform_dataset_s *dataset) {
    uint64_t hash = uform__fnv1a64(&dataset->options.source, sizeof dataset->options.source, UFORM__DATA_HASH_SEED);
    for (size_t i = 0; i < dataset->items.shard_count; ++i)
        hash = uform__fnv1a64(dataset->items.shards[i], strlen(dataset->items.shards[i]) + 1, hash);
    const uform__lines_t *lines = &dataset->items.lines;
    for (size_t i = 0; i < lines->count; ++i) {
        const uform__line_t *line = &lines->items[i];
        unsigned header[3] = {(unsigned)line->kind, (unsigned)(line->modality + 1), line->target};
        hash = uform__fnv1a64(header, sizeof header, hash);
        if (line->text) hash = uform__fnv1a64(line->text, line->text_length + 1, hash);
        if (line->path) hash = uform__fnv1a64(line->path, strlen(line->path) + 1, hash);
        if (line->choices) hash = uform__fnv1a64(line->choices, line->choices_length + 1, hash);
    }
    return hash;
}

/* The source of each kind, indexed by uform_dataset_source_t. */
static const uform__data_source_t *const sources[] = {
    [UFORM_DATASET_MANIFEST] = &uform__data_source_manifest,
    [UFORM_DATASET_FOLDER] = &uform__data_source_folder,
    [UFORM_DATASET_SHARDS] = &uform__data_source_shards,
};

UFORM_API uform_status_t uform_dataset_open(const uform_dataset_options_t *options, uform_dataset_t *dataset,
                                            uform_data_error_t *error, uform_outcome_t *outcome) {
    const char *function = __func__;
    uform__data_error_clear(error);
    if (!dataset) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "dataset is NULL");
    *dataset = NULL;
    if (!options) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options is NULL: name a source and a path");
    if ((unsigned)options->source > UFORM_DATASET_SHARDS)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "source %d is not a uform_dataset_source_t",
                           (int)options->source);
    size_t count = options->path_count ? options->path_count : 1;
    if (options->path_count ? (!options->paths || options->path) : !options->path)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           options->path_count ? "give either path or paths, not both" : "path is NULL");
    for (size_t i = 0; i < count; ++i) {
        const char *path = options->path_count ? options->paths[i] : options->path;
        if (!path || !*path)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "paths[%zu] is %s", i, path ? "empty" : "NULL");
    }
    struct uform_dataset_s *made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a dataset");
    made->options = *options;
    made->options.path = NULL, made->options.paths = NULL, made->options.path_count = 0;
    if (!made->options.shuffle_buffer) made->options.shuffle_buffer = UFORM__DATA_DEFAULT_BUFFER;
    if (!made->options.max_sample_bytes) made->options.max_sample_bytes = UFORM__DATA_DEFAULT_MAX_BYTES;
    const uform__data_source_t *source = sources[options->source];
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; status == UFORM_OK && i < count; ++i)
        status = source->add(options->path_count ? options->paths[i] : options->path, &made->options, &made->items, error,
                             outcome, function);
    if (status == UFORM_OK && source->finish) status = source->finish(&made->options, &made->items, error, outcome, function);
    if (status == UFORM_OK) {
        const uform__lines_t *lines = uform__dataset_training_lines(made);
        for (size_t i = 0; i < lines->count; ++i) made->open_bad += lines->items[i].kind == UFORM__LINE_BAD;
        int empty = options->source == UFORM_DATASET_SHARDS ? made->items.shard_count == 0 : made->items.lines.count == 0;
        if (empty)
            status = uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s holds nothing",
                                 options->path_count ? "the paths" : options->path);
    }
    if (status != UFORM_OK) {
        uform_dataset_free(made);
        return status;
    }
    made->fingerprint = fingerprint_of(made);
    *dataset = made;
    return uform__succeed(outcome, function);
}

UFORM_API void uform_dataset_free(uform_dataset_t dataset) {
    if (!dataset) return;
    uform__lines_free(&dataset->items.lines);
    uform__lines_free(&dataset->items.samples);
    for (size_t i = 0; i < dataset->items.shard_count; ++i) free(dataset->items.shards[i]);
    free(dataset->items.shards);
    if (dataset->read_reading) uform__shard_close(&dataset->read_reader);
    uform__shard_sample_free(&dataset->read_sample);
    free(dataset->read_bytes), free(dataset->read_key);
    free(dataset);
}

UFORM_API uform_status_t uform_dataset_describe(uform_dataset_t dataset, uform_dataset_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!dataset) return UFORM_INVALID_ARGUMENT;
    description->source = dataset->options.source;
    description->shards = dataset->items.shard_count;
    description->bad = dataset->open_bad;
    const uform__lines_t *lines = uform__dataset_training_lines(dataset);
    for (size_t i = 0; i < lines->count; ++i) {
        const uform__line_t *line = &lines->items[i];
        if (line->kind == UFORM__LINE_PAIR) description->pairs[line->modality] += 1, description->samples += 1;
        if (line->kind == UFORM__LINE_CHOICE) description->choices += 1, description->samples += 1;
    }
    for (size_t i = 0; i < dataset->items.lines.count; ++i) description->items += dataset->items.lines.items[i].kind != UFORM__LINE_CHOICE;
    snprintf(description->fingerprint, sizeof description->fingerprint, "%016llx", (unsigned long long)dataset->fingerprint);
    return UFORM_OK;
}
