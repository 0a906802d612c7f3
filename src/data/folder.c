/*
 * Folders (uform.h, "Data"): a recursive walk in byte order of names, each file an item; and, for
 * training, the samples its files make when grouped by key as a shard's members are (photos/17.jpg
 * and photos/17.txt are one sample).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "data/source.h"

static int compare_names(const void *left, const void *right) { return strcmp(*(char *const *)left, *(char *const *)right); }

static uform_status_t add_line(uform__lines_t *lines, const char *source, const char *path, const char *problem,
                               uform_outcome_t *outcome, const char *function) {
    uform__line_t *line = uform__lines_add(lines);
    if (!line) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the line of '%s'", path);
    line->kind = problem ? UFORM__LINE_BAD : UFORM__LINE_FILE;
    line->source = source;
    line->path = strdup(path), line->key = strdup(path);
    line->message = problem ? strdup(problem) : NULL;
    if (!line->path || !line->key || (problem && !line->message))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the line of '%s'", path);
    return UFORM_OK;
}

static uform_status_t walk(uform__lines_t *lines, const char *source, const char *folder, int hidden, uform_outcome_t *outcome,
                           const char *function) {
    DIR *directory = opendir(folder);
    if (!directory && errno == ENOMEM)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the listing of the folder '%s'", folder);
    if (!directory) {
        char message[600];
        snprintf(message, sizeof message, "cannot read the folder '%s': %s", folder, strerror(errno));
        return add_line(lines, source, folder, message, outcome, function);
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    uform_status_t status = UFORM_OK;
    for (struct dirent *entry; status == UFORM_OK && (entry = readdir(directory));) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (!hidden && entry->d_name[0] == '.') continue;
        if (count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            char **grown = realloc(names, capacity * sizeof *grown);
            if (!grown) {
                status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the listing of '%s'", folder);
                break;
            }
            names = grown;
        }
        if (!(names[count] = strdup(entry->d_name)))
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the listing of '%s'", folder);
        else count += 1;
    }
    closedir(directory);
    if (count) qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; ++i) {
        char *path = status == UFORM_OK ? uform__data_path_join(folder, strlen(folder), names[i]) : NULL;
        struct stat link, target;
        if (status == UFORM_OK && !path) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the listing of '%s'", folder);
        if (path && lstat(path, &link) == 0) {
            if (S_ISDIR(link.st_mode)) status = walk(lines, source, path, hidden, outcome, function);
            else if (!S_ISLNK(link.st_mode) || (stat(path, &target) == 0 && !S_ISDIR(target.st_mode)))
                status = add_line(lines, source, path, NULL, outcome, function); /* a link to a folder is not followed */
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return status;
}

/* Walks a folder (or takes a file) into FILE lines, names sorted byte-wise at each level. */
static uform_status_t add(const char *path, const uform_dataset_options_t *options, uform__data_items_t *items,
                          uform_data_error_t *error, uform_outcome_t *outcome, const char *function) {
    (void)error;
    uform__lines_t *lines = &items->lines;
    int hidden = options->hidden;
    const char *source = uform__lines_add_source(lines, path);
    if (!source) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the folder's name");
    struct stat info;
    if (stat(path, &info) == 0 && S_ISDIR(info.st_mode)) return walk(lines, source, path, hidden, outcome, function);
    return add_line(lines, source, path, NULL, outcome, function); /* a file, or a missing one: its read says why */
}

/* The caption a .txt file holds (one trailing line break dropped), or a .json file's "caption" or
 * "text"; NULL with `why` when there is none. */
static char *caption_of(const char *path, int json, size_t max_bytes, size_t *length, char *why, size_t capacity,
                        uform_status_t *status) {
    size_t size;
    unsigned char *bytes = uform__data_read_file(path, max_bytes, &size, status, why, capacity);
    if (!bytes) return NULL;
    if (!json) {
        if (size && bytes[size - 1] == '\n') bytes[--size] = 0;
        if (size && bytes[size - 1] == '\r') bytes[--size] = 0;
        *length = size;
        return (char *)bytes;
    }
    int memory = 0;
    char *text = uform__data_json_caption(bytes, size, &memory);
    if (text) *length = strlen(text);
    *status = memory ? UFORM_OUT_OF_MEMORY : UFORM_OK;
    if (!text) snprintf(why, capacity, memory ? "cannot allocate the caption of '%s'" : "'%s' has no \"caption\" or \"text\" string", path);
    free(bytes);
    return text;
}

/*
 * Groups the folders' FILE lines into training samples by key (photos/17.jpg + photos/17.txt): PAIR
 * lines in items->samples, their texts read now. A key without text or with two media is a BAD
 * sample whether or not skip_bad is set: a loader opened on it refuses it then, or lists it (skip_bad).
 */
static uform_status_t finish(const uform_dataset_options_t *options, uform__data_items_t *items,
                             uform_data_error_t *error, uform_outcome_t *outcome, const char *function) {
    (void)error;
    const uform__lines_t *files = &items->lines;
    uform__lines_t *samples = &items->samples;
    size_t max_bytes = options->max_sample_bytes;
    for (size_t first = 0; first < files->count;) {
        const uform__line_t *head = &files->items[first];
        size_t key = head->kind == UFORM__LINE_FILE ? uform__data_key_length(head->path) : 0, end = first + 1;
        while (key && end < files->count && files->items[end].kind == UFORM__LINE_FILE &&
               uform__data_key_length(files->items[end].path) == key && strncmp(files->items[end].path, head->path, key) == 0)
            ++end;
        if (!key) { /* an unreadable folder: not a sample */
            first = end;
            continue;
        }
        const uform__line_t *medium = NULL, *text_file = NULL, *json_file = NULL;
        char why[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
        for (size_t i = first; i < end; ++i) {
            const uform__line_t *file = &files->items[i];
            int modality = uform__data_modality_of_name(file->path, strlen(file->path));
            if (modality > 0 && medium && !why[0])
                snprintf(why, sizeof why, "two media, '%s' and '%s' (a sample has one)", medium->path, file->path);
            if (modality > 0 && !medium) medium = file;
            if (uform__data_has_extension(file->path, key, "txt") && !text_file) text_file = file;
            if (uform__data_has_extension(file->path, key, "json") && !json_file) json_file = file;
        }
        first = end;
        if (!medium) continue; /* notes, metadata: not a sample */
        uform__line_t *sample = uform__lines_add(samples);
        if (!sample) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a sample");
        sample->source = medium->source;
        sample->key = strndup(medium->path, key);
        sample->path = strdup(medium->path);
        if (!sample->key || !sample->path) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a sample");
        if (!why[0] && !text_file && !json_file) snprintf(why, sizeof why, "no text: no .txt or .json file with the key of '%s'", medium->path);
        if (!why[0]) {
            const uform__line_t *caption = text_file ? text_file : json_file;
            uform_status_t read = UFORM_OK;
            sample->text = caption_of(caption->path, caption == json_file, max_bytes, &sample->text_length, why, sizeof why, &read);
            if (read == UFORM_OUT_OF_MEMORY) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s", why);
        }
        if (why[0]) {
            sample->kind = UFORM__LINE_BAD;
            if (!(sample->message = strdup(why))) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a sample");
            continue;
        }
        sample->kind = UFORM__LINE_PAIR;
        sample->modality = uform__data_modality_of_name(medium->path, strlen(medium->path));
        sample->text_hash = uform__fnv1a64(sample->text, sample->text_length, UFORM__DATA_HASH_SEED);
    }
    return UFORM_OK;
}

const uform__data_source_t uform__data_source_folder = {add, finish};
