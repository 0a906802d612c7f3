/* Datasets: opening, describing and freeing (uform.h, "Data"), and what every part shares. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outcome.h"
#include "data/data.h"

/* ---- errors ---- */

void uform__data_error_clear(uform_data_error_t *error) {
    if (!error) return;
    memset(error, 0, sizeof *error);
    error->shard = SIZE_MAX, error->content = SIZE_MAX;
}

void uform__data_error_set(uform_data_error_t *error, uform_status_t status, size_t line, size_t shard,
                           const char *source, const char *key, const char *format, ...) {
    if (!error) return;
    uform__data_error_clear(error);
    error->status = status, error->line = line, error->shard = shard;
    if (source) snprintf(error->source, sizeof error->source, "%s", source);
    if (key) snprintf(error->key, sizeof error->key, "%s", key);
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->message, sizeof error->message, format, arguments);
    va_end(arguments);
}

void uform__data_error_place(const uform_data_error_t *error, char *buffer, size_t capacity) {
    if (error->shard != SIZE_MAX && error->key[0])
        snprintf(buffer, capacity, "shard '%s', sample '%s'", error->source, error->key);
    else if (error->shard != SIZE_MAX) snprintf(buffer, capacity, "shard '%s'", error->source);
    else if (error->line && error->key[0]) snprintf(buffer, capacity, "%s, line %zu of %s", error->key, error->line, error->source);
    else if (error->line) snprintf(buffer, capacity, "%s:%zu", error->source, error->line);
    else if (error->key[0]) snprintf(buffer, capacity, "'%s'", error->key);
    else snprintf(buffer, capacity, "'%s'", error->source);
}

/* ---- files ---- */

unsigned char *uform__data_read_file(const char *path, size_t max_bytes, size_t *size, uform_status_t *status,
                                     char *message, size_t capacity) {
    *status = UFORM_IO, *size = 0;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (descriptor < 0) {
        if (errno == ENOMEM) *status = UFORM_OUT_OF_MEMORY;
        snprintf(message, capacity, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat info;
    if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
        snprintf(message, capacity, "'%s' is not a regular file", path);
        close(descriptor);
        return NULL;
    }
    size_t length = (size_t)info.st_size;
    if (length > max_bytes) {
        snprintf(message, capacity, "'%s' holds %zu bytes, more than the %zu a sample may", path, length, max_bytes);
        *status = UFORM_FORMAT;
        close(descriptor);
        return NULL;
    }
    unsigned char *bytes = malloc(length + 1);
    if (!bytes) {
        snprintf(message, capacity, "cannot allocate %zu bytes for '%s'", length, path);
        *status = UFORM_OUT_OF_MEMORY;
        close(descriptor);
        return NULL;
    }
    size_t done = 0;
    while (done < length) {
        ssize_t got = read(descriptor, bytes + done, length - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(message, capacity, "cannot read '%s': %s", path, strerror(errno));
            free(bytes);
            close(descriptor);
            return NULL;
        }
        if (got == 0) break; /* the file shrank: what is there */
        done += (size_t)got;
    }
    close(descriptor);
    bytes[done] = 0;
    *size = done, *status = UFORM_OK;
    return bytes;
}

/* ---- lines ---- */

uform__line_t *uform__lines_add(uform__lines_t *lines) {
    if (lines->count == lines->capacity) {
        size_t capacity = lines->capacity ? 2 * lines->capacity : 256;
        uform__line_t *grown = realloc(lines->items, capacity * sizeof *grown);
        if (!grown) return NULL;
        lines->items = grown, lines->capacity = capacity;
    }
    uform__line_t *line = &lines->items[lines->count++];
    memset(line, 0, sizeof *line);
    line->modality = -1;
    return line;
}

void uform__lines_free(uform__lines_t *lines) {
    for (size_t i = 0; i < lines->count; ++i) {
        uform__line_t *line = &lines->items[i];
        free(line->text), free(line->path), free(line->choices), free(line->key), free(line->message);
    }
    for (size_t i = 0; i < lines->source_count; ++i) free(lines->sources[i]);
    free(lines->items), free(lines->sources);
    memset(lines, 0, sizeof *lines);
}

int uform__data_modality_of_name(const char *name, size_t length) {
    const char *dot = NULL;
    for (size_t i = length; i > 0; --i) {
        if (name[i - 1] == '/') break;
        if (name[i - 1] == '.') {
            dot = name + i - 1;
            break;
        }
    }
    if (!dot) return -1;
    char extension[8];
    size_t n = (size_t)(name + length - dot - 1);
    if (n == 0 || n >= sizeof extension) return -1;
    for (size_t i = 0; i < n; ++i) {
        char c = dot[1 + i];
        extension[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    extension[n] = 0;
    static const char *const images[] = {"jpg", "jpeg", "png", "webp"};
    static const char *const videos[] = {"mp4", "webm", "mkv"};
    static const char *const audios[] = {"flac", "wav", "mp3", "ogg"};
    for (size_t i = 0; i < 4; ++i)
        if (strcmp(extension, images[i]) == 0) return UFORM_MODALITY_IMAGE;
    for (size_t i = 0; i < 3; ++i)
        if (strcmp(extension, videos[i]) == 0) return UFORM_MODALITY_VIDEO;
    for (size_t i = 0; i < 4; ++i)
        if (strcmp(extension, audios[i]) == 0) return UFORM_MODALITY_AUDIO;
    return -1;
}

/* ---- the dataset ---- */

const uform__lines_t *uform__dataset_training_lines(const struct uform_dataset_s *dataset) {
    return dataset->options.source == UFORM_DATASET_FOLDER ? &dataset->samples : &dataset->lines;
}

static uint64_t fingerprint_of(const struct uform_dataset_s *dataset) {
    uint64_t hash = uform__fnv1a64(&dataset->options.source, sizeof dataset->options.source, UFORM__DATA_HASH_SEED);
    for (size_t i = 0; i < dataset->shard_count; ++i)
        hash = uform__fnv1a64(dataset->shards[i], strlen(dataset->shards[i]) + 1, hash);
    const uform__lines_t *lines = &dataset->lines;
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

static uform_status_t open_source(struct uform_dataset_s *dataset, const char *path, uform_data_error_t *error,
                                  uform_outcome_t *outcome, const char *function) {
    const uform_dataset_options_t *options = &dataset->options;
    switch (options->source) {
    case UFORM_DATASET_MANIFEST:
        return uform__manifest_read(path, options->skip_bad, &dataset->lines, error, outcome, function);
    case UFORM_DATASET_FOLDER: return uform__folder_walk(path, options->hidden, &dataset->lines, outcome, function);
    default: {
        size_t before = dataset->shard_count;
        uform_status_t status = uform__shard_list_expand(path, &dataset->shards, &dataset->shard_count, outcome, function);
        for (size_t i = before; status == UFORM_OK && i < dataset->shard_count; ++i) {
            struct stat info;
            if (stat(dataset->shards[i], &info) != 0)
                status = uform__fail(outcome, UFORM_IO, function, "shard %zu of '%s': cannot open '%s': %s", i - before, path,
                                     dataset->shards[i], strerror(errno));
        }
        return status;
    }
    }
}

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
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; status == UFORM_OK && i < count; ++i)
        status = open_source(made, options->path_count ? options->paths[i] : options->path, error, outcome, function);
    if (status == UFORM_OK && options->source == UFORM_DATASET_FOLDER)
        status = uform__folder_samples(&made->lines, options->skip_bad, made->options.max_sample_bytes, &made->samples, error,
                                       outcome, function);
    if (status == UFORM_OK) {
        const uform__lines_t *lines = uform__dataset_training_lines(made);
        for (size_t i = 0; i < lines->count; ++i) made->open_bad += lines->items[i].kind == UFORM__LINE_BAD;
        int empty = options->source == UFORM_DATASET_SHARDS ? made->shard_count == 0 : made->lines.count == 0;
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
    uform__lines_free(&dataset->lines);
    uform__lines_free(&dataset->samples);
    for (size_t i = 0; i < dataset->shard_count; ++i) free(dataset->shards[i]);
    free(dataset->shards);
    if (dataset->read_reading) uform__shard_close(&dataset->read_reader);
    uform__shard_sample_free(&dataset->read_sample);
    free(dataset->read_bytes), free(dataset->read_key), free(dataset->path_copy);
    free(dataset);
}

UFORM_API uform_status_t uform_dataset_describe(uform_dataset_t dataset, uform_dataset_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!dataset) return UFORM_INVALID_ARGUMENT;
    description->source = dataset->options.source;
    description->shards = dataset->shard_count;
    description->bad = dataset->open_bad;
    const uform__lines_t *lines = uform__dataset_training_lines(dataset);
    for (size_t i = 0; i < lines->count; ++i) {
        const uform__line_t *line = &lines->items[i];
        if (line->kind == UFORM__LINE_PAIR) description->pairs[line->modality] += 1, description->samples += 1;
        if (line->kind == UFORM__LINE_CHOICE) description->choices += 1, description->samples += 1;
    }
    for (size_t i = 0; i < dataset->lines.count; ++i) description->items += dataset->lines.items[i].kind != UFORM__LINE_CHOICE;
    snprintf(description->fingerprint, sizeof description->fingerprint, "%016llx", (unsigned long long)dataset->fingerprint);
    return UFORM_OK;
}
